"""The claim state table: every (state, activity) against every event, the table
against the vocabulary's state diagram and the owner policy's steps, and the races
the startd meets (a release while an activation waits, a lease running out during a
preemption, a job's exit reported after its claim ended, an activation on a claim
being vacated, the owner's SUSPEND during a retirement)."""

from __future__ import annotations

import itertools

import pytest

from roost.classad import ClassAd
from roost.core import claimstates as cs
from roost.core import ownerpolicy as op
from roost.vocabulary import SLOT_ACTIVITIES, SLOT_MOVES, Activity, SlotState

A, S = Activity, SlotState
PLACES = [(s, a) for s, acts in SLOT_ACTIVITIES.items() for a in sorted(acts)]
EVENTS = list(cs.CLAIM_MOVES)
CLAIMED_ALL = [(S.CLAIMED, a) for a in (A.IDLE, A.BUSY, A.SUSPENDED, A.RETIRING)]
PREEMPTING_ALL = [(S.PREEMPTING, A.VACATING), (S.PREEMPTING, A.KILLING)]
HELD = CLAIMED_ALL + PREEMPTING_ALL

#: the whole table's (from, event) -> to, written out once more by hand (HTCondor's
#: startd state diagram, roost's subset); actions are checked separately
EXPECTED: dict[tuple[tuple[str, str], str], tuple[str, str]] = {
    ((S.UNCLAIMED, A.IDLE), cs.MATCH): (S.MATCHED, A.IDLE),
    ((S.UNCLAIMED, A.IDLE), cs.REQUEST_CLAIM): (S.CLAIMED, A.IDLE),
    ((S.MATCHED, A.IDLE), cs.REQUEST_CLAIM): (S.CLAIMED, A.IDLE),
    ((S.CLAIMED, A.IDLE), cs.REQUEST_CLAIM): (S.CLAIMED, A.IDLE),
    ((S.CLAIMED, A.IDLE), cs.ACTIVATE): (S.CLAIMED, A.BUSY),
    ((S.UNCLAIMED, A.IDLE), cs.ADOPT): (S.CLAIMED, A.BUSY),
    **{(w, cs.JOB_EXIT): (S.CLAIMED, A.IDLE) for w in CLAIMED_ALL},
    **{(w, cs.JOB_EXIT): w for w in PREEMPTING_ALL},
    **{(w, cs.DEACTIVATE): w for w in HELD},
    **{(w, cs.SCHEDD_SUSPEND): w for w in CLAIMED_ALL[1:]},
    ((S.CLAIMED, A.BUSY), cs.SCHEDD_CONTINUE): (S.CLAIMED, A.BUSY),
    ((S.CLAIMED, A.RETIRING), cs.SCHEDD_CONTINUE): (S.CLAIMED, A.RETIRING),
    **{(w, e): (S.UNCLAIMED, A.IDLE) for w in HELD
       for e in (cs.RELEASE_CLAIM, cs.LEASE_EXPIRED, cs.POLICY_RELEASE)},
    **{(w, cs.HAND_OVER): (S.CLAIMED, A.IDLE) for w in HELD},
    **{(w, cs.PREEMPT): w for w in HELD},
    ((S.UNCLAIMED, A.IDLE), cs.OWNER_BUSY): (S.OWNER, A.IDLE),
    ((S.MATCHED, A.IDLE), cs.OWNER_BUSY): (S.OWNER, A.IDLE),
    ((S.DRAINED, A.IDLE), cs.OWNER_BUSY): (S.OWNER, A.IDLE),
    ((S.DRAINED, A.RETIRING), cs.OWNER_BUSY): (S.OWNER, A.IDLE),
    ((S.OWNER, A.IDLE), cs.OWNER_FREE): (S.UNCLAIMED, A.IDLE),
    ((S.CLAIMED, A.BUSY), cs.OWNER_SUSPEND): (S.CLAIMED, A.SUSPENDED),
    ((S.CLAIMED, A.SUSPENDED), cs.OWNER_CONTINUE): (S.CLAIMED, A.BUSY),
    ((S.CLAIMED, A.BUSY), cs.RETIRE): (S.CLAIMED, A.RETIRING),
    ((S.CLAIMED, A.SUSPENDED), cs.RETIRE): (S.CLAIMED, A.RETIRING),
    ((S.CLAIMED, A.RETIRING), cs.UNRETIRE): (S.CLAIMED, A.BUSY),
    ((S.CLAIMED, A.RETIRING), cs.RETIREMENT_OVER): (S.PREEMPTING, A.VACATING),
    **{(w, cs.VACATE): (S.PREEMPTING, A.VACATING) for w in CLAIMED_ALL[1:]},
    **{(w, cs.KILL): (S.PREEMPTING, A.KILLING) for w in [*CLAIMED_ALL[1:], (S.PREEMPTING, A.VACATING)]},
    ((S.UNCLAIMED, A.IDLE), cs.DRAIN): (S.DRAINED, A.IDLE),
    ((S.OWNER, A.IDLE), cs.DRAIN): (S.DRAINED, A.IDLE),
    ((S.UNCLAIMED, A.IDLE), cs.DRAIN_WAIT): (S.DRAINED, A.RETIRING),
    ((S.OWNER, A.IDLE), cs.DRAIN_WAIT): (S.DRAINED, A.RETIRING),
    ((S.DRAINED, A.RETIRING), cs.DRAIN_DONE): (S.DRAINED, A.IDLE),
    ((S.DRAINED, A.IDLE), cs.CANCEL_DRAIN): (S.UNCLAIMED, A.IDLE),
    ((S.DRAINED, A.RETIRING), cs.CANCEL_DRAIN): (S.UNCLAIMED, A.IDLE),
}


@pytest.mark.parametrize(("where", "event"), list(itertools.product(PLACES, EVENTS)))
def test_every_state_and_event(where: tuple[str, str], event: str) -> None:
    want = EXPECTED.get((where, event))
    assert cs.applies(*where, event) is (want is not None)
    if want is None:
        with pytest.raises(cs.IllegalMove, match=event):
            cs.after(*where, event)
        assert event not in cs.events_from(*where)
    else:
        got = cs.after(*where, event)
        assert (got.state, got.activity) == want
        assert event in cs.events_from(*where)


def test_the_table_lists_no_place_a_slot_cannot_be() -> None:
    assert cs.ALL_PLACES == tuple(PLACES)
    for moves in cs.CLAIM_MOVES.values():
        assert set(moves) <= set(PLACES)


def test_every_move_is_one_of_the_state_diagram() -> None:
    """roost.vocabulary's SLOT_MOVES and SLOT_ACTIVITIES stay the one vocabulary."""
    for event, moves in cs.CLAIM_MOVES.items():
        for (state, _), m in moves.items():
            assert m.activity in SLOT_ACTIVITIES[m.state], (event, m)
            if m.state != state:
                assert m.state in SLOT_MOVES[state], (event, state, m)


def test_an_unknown_event_is_refused_by_name() -> None:
    with pytest.raises(cs.IllegalMove, match="no claim event"):
        cs.after(S.CLAIMED, A.IDLE, "teleport")
    assert not cs.applies(S.CLAIMED, A.IDLE, "teleport")


def test_actions_that_follow() -> None:
    ending = cs.after(S.CLAIMED, A.BUSY, cs.RELEASE_CLAIM).actions
    assert {cs.ABANDON_JOB, cs.FORGET_CLAIM, cs.RESCHEDULE, cs.ADVERTISE} <= set(ending)
    handed = cs.after(S.PREEMPTING, A.VACATING, cs.HAND_OVER).actions
    assert cs.WAKE_PREEMPTOR in handed and cs.RESCHEDULE not in handed
    assert cs.START_STARTER in cs.after(S.CLAIMED, A.IDLE, cs.ACTIVATE).actions
    assert cs.after(S.CLAIMED, A.BUSY, cs.OWNER_SUSPEND).actions[0] == cs.STOP_JOB
    # a suspended job is resumed before it is vacated or killed (a stopped process ignores SIGTERM)
    for event in (cs.VACATE, cs.KILL, cs.RETIRE):
        acts = cs.after(S.CLAIMED, A.SUSPENDED, event).actions
        assert acts[0] == cs.RESUME_JOB
    assert cs.after(S.CLAIMED, A.BUSY, cs.DEACTIVATE).actions == (cs.VACATE_JOB,)
    assert cs.after(S.CLAIMED, A.IDLE, cs.DEACTIVATE).actions == ()
    assert cs.ENDINGS == {cs.RELEASE_CLAIM, cs.LEASE_EXPIRED, cs.POLICY_RELEASE, cs.HAND_OVER}


def test_event_between_names_the_move() -> None:
    assert cs.event_between((S.CLAIMED, A.IDLE), (S.CLAIMED, A.BUSY)) == cs.ACTIVATE
    assert cs.event_between((S.CLAIMED, A.BUSY), (S.CLAIMED, A.SUSPENDED)) == cs.OWNER_SUSPEND
    assert cs.event_between((S.CLAIMED, A.RETIRING), (S.PREEMPTING, A.VACATING)) == cs.RETIREMENT_OVER
    assert cs.event_between((S.CLAIMED, A.BUSY), (S.CLAIMED, A.BUSY)) is None
    assert cs.event_between((S.OWNER, A.IDLE), (S.CLAIMED, A.BUSY)) is None
    assert cs.is_move((S.OWNER, A.IDLE), (S.OWNER, A.IDLE))
    assert not cs.is_move((S.PREEMPTING, A.KILLING), (S.PREEMPTING, A.VACATING))


def _run(where: tuple[str, str], *events: str) -> tuple[str, str]:
    for event in events:
        m = cs.after(*where, event)
        where = (m.state, m.activity)
    return where


# -- races ----------------------------------------------------------------------------


def test_release_during_activate() -> None:
    """A preempting claim's ACTIVATE_CLAIM waits for the slot; its schedd releases it
    meanwhile. The old claim's slot is still the old claim's (PREEMPT left it where it
    was); when that claim ends no one waits, so the slot goes back unclaimed, and the
    released claim's activation, arriving there, is refused."""
    where = _run((S.CLAIMED, A.BUSY), cs.PREEMPT, cs.RETIRE)
    assert where == (S.CLAIMED, A.RETIRING)
    where = _run(where, cs.UNRETIRE, cs.JOB_EXIT, cs.RELEASE_CLAIM)  # nobody waits any more
    assert where == (S.UNCLAIMED, A.IDLE)
    with pytest.raises(cs.IllegalMove):
        cs.after(*where, cs.ACTIVATE)
    # on a static slot claimed once more in between, an activation is the new claim's
    assert _run(where, cs.REQUEST_CLAIM, cs.ACTIVATE) == (S.CLAIMED, A.BUSY)


def test_lease_expiry_during_preemption_hands_the_slot_over() -> None:
    """The preempted claim's lease runs out while its job vacates: the claim ends as if
    released, and the waiting claim takes the slot Claimed/Idle, its activation going on."""
    where = _run((S.CLAIMED, A.BUSY), cs.PREEMPT, cs.VACATE)
    assert where == (S.PREEMPTING, A.VACATING)
    lapse = cs.after(*where, cs.LEASE_EXPIRED)
    assert (lapse.state, lapse.activity) == (S.UNCLAIMED, A.IDLE)  # with no one waiting
    handed = cs.after(*where, cs.HAND_OVER)  # with the preempting claim waiting
    assert (handed.state, handed.activity) == (S.CLAIMED, A.IDLE)
    assert cs.WAKE_PREEMPTOR in handed.actions and cs.ABANDON_JOB in handed.actions
    assert _run((handed.state, handed.activity), cs.ACTIVATE) == (S.CLAIMED, A.BUSY)
    # and a lease that runs out on the Killing job too
    assert _run((S.PREEMPTING, A.KILLING), cs.HAND_OVER) == (S.CLAIMED, A.IDLE)


def test_job_exit_after_the_claim_was_released() -> None:
    """The starter's end arrives after RELEASE_CLAIM ended the claim: the slot is
    Unclaimed (or Owner, Drained...), where no job exit applies; the startd drops it."""
    for release in (cs.RELEASE_CLAIM, cs.LEASE_EXPIRED, cs.POLICY_RELEASE):
        where = _run((S.CLAIMED, A.BUSY), release)
        for late in (cs.JOB_EXIT, cs.DEACTIVATE, cs.SCHEDD_SUSPEND, cs.ACTIVATE, cs.LEASE_EXPIRED):
            assert not cs.applies(*where, late)
        for later in (cs.OWNER_BUSY, cs.DRAIN):
            assert not cs.applies(*_run(where, later), cs.JOB_EXIT)


def test_activate_on_a_claim_being_vacated_is_refused() -> None:
    for where in [*PREEMPTING_ALL, (S.CLAIMED, A.BUSY), (S.CLAIMED, A.RETIRING), (S.CLAIMED, A.SUSPENDED)]:
        with pytest.raises(cs.IllegalMove, match="activate"):
            cs.after(*where, cs.ACTIVATE)
    # once the vacated job is gone and the claim kept (DEACTIVATE_CLAIM), it may run another
    assert _run((S.CLAIMED, A.BUSY), cs.DEACTIVATE, cs.JOB_EXIT, cs.ACTIVATE) == (S.CLAIMED, A.BUSY)


def test_owner_suspend_during_retirement_is_refused() -> None:
    """HTCondor: a retiring job goes on to Preempting, never to Suspended."""
    assert not cs.applies(S.CLAIMED, A.RETIRING, cs.OWNER_SUSPEND)
    with pytest.raises(cs.IllegalMove, match="Retiring"):
        cs.after(S.CLAIMED, A.RETIRING, cs.OWNER_SUSPEND)
    # a suspended job put in retirement is resumed first
    assert cs.after(S.CLAIMED, A.SUSPENDED, cs.RETIRE).actions[0] == cs.RESUME_JOB


def test_condor_continue_does_not_resume_an_owner_suspended_job() -> None:
    assert not cs.applies(S.CLAIMED, A.SUSPENDED, cs.SCHEDD_CONTINUE)
    assert cs.applies(S.CLAIMED, A.SUSPENDED, cs.OWNER_CONTINUE)


def test_a_claim_ends_once() -> None:
    """Two endings racing (a lease and a RELEASE_CLAIM): the second meets an Unclaimed slot."""
    where = _run((S.CLAIMED, A.BUSY), cs.LEASE_EXPIRED)
    for ending in cs.ENDINGS:
        assert not cs.applies(*where, ending)


# -- the owner policy's steps are moves of the table -----------------------------------

#: the table's actions on a job -> the owner policy's
_JOB_ACTIONS = {cs.STOP_JOB: op.SUSPEND, cs.RESUME_JOB: op.CONTINUE, cs.VACATE_JOB: op.VACATE, cs.KILL_JOB: op.KILL}

_POLICIES = {
    "defaults": op.PolicyExprs(),
    "suspend": op.PolicyExprs(want_suspend="True", suspend="True", continue_="False"),
    "continue": op.PolicyExprs(want_suspend="True", suspend="False", continue_="True"),
    "preempt, retire": op.PolicyExprs(preempt="True", max_job_retirement_time="1000"),
    "preempt, no vacate": op.PolicyExprs(preempt="True", want_vacate="False"),
    "kill": op.PolicyExprs(kill="True"),
    "owner": op.PolicyExprs(is_owner="True"),
    "no start": op.PolicyExprs(start="False"),
}


def _views() -> list[op.SlotView]:
    """Every view a slot can be in (a job runs only on a claim, and only when its
    activity is not Idle: ACTIVATE_CLAIM moves the slot Busy as it starts the starter;
    a drained partitionable slot is Drained/Idle only once its carved slots are gone)."""
    out = []
    for (state, activity), job, drain, off, preempt, vacate, children, was in itertools.product(
            PLACES, (False, True), (None, "graceful", "quick", "fast"), (False, True), (False, True),
            (None, "graceful", "fast"), (0, 2), (False, True)):
        claimed = state in (S.CLAIMED, S.PREEMPTING)
        if job and (not claimed or activity == A.IDLE):
            continue
        if state == S.MATCHED or activity == A.BENCHMARKING or (not claimed and (preempt or vacate or was)):
            continue  # no MATCH_INFO nor benchmarks in roost; no claim: no preemption
        if (state, activity, children) == (S.DRAINED, A.IDLE, 2):
            continue  # drained with nothing left, and no claim is taken while draining
        out.append(op.SlotView(state=state, activity=activity, entered_state=0.0, entered_activity=0.0,
                               claimed=claimed, job=job, job_start=0.0, drain=drain, off=off, preempt=preempt,
                               vacate=vacate, children=children, preempt_was_true=was))
    return out


@pytest.mark.parametrize("policy", list(_POLICIES))
def test_the_owner_policys_steps_are_moves_of_the_table(policy: str) -> None:
    exprs = _POLICIES[policy]
    for now in (1.0, 1e6):  # inside and past the retirement and vacate times
        for v in _views():
            st = op.step(v, ClassAd({"Cpus": 1}), ClassAd({"JobUniverse": 5}) if v.job else None, exprs, now)
            old, new = (v.state, v.activity), (st.state, st.activity)
            assert cs.is_move(old, new), (policy, v, st)
            event = cs.event_between(old, new)
            if event is not None:  # the step does to the job what the table's move says
                said = {_JOB_ACTIONS[a] for a in cs.after(*old, event).actions if a in _JOB_ACTIONS}
                assert said == set(st.actions) & set(_JOB_ACTIONS.values()), (policy, v, st, event)
