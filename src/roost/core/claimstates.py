"""The claim's life on a slot as one table: which event moves a slot from which
(``SlotState``, ``Activity``) to which, and what the startd must do on that move
(HTCondor's startd state machine, roost's subset of it).

``Claims`` (daemons/startd/claims.py) looks every claim event up here (``after``)
and refuses one that is no move of the table (``IllegalMove``); the owner policy's
steps (``roost.core.ownerpolicy``) are moves of it too (``event_between`` names the
one a step makes). The states and activities, and which state may follow which,
are ``roost.vocabulary``'s (``SLOT_MOVES``, ``SLOT_ACTIVITIES``): every move here
is one of those.

Events that reach the startd for a claim that is gone (a job's exit reported after
its claim was released, an ACTIVATE_CLAIM for a claim the schedd released while it
waited) meet a slot with no claim, Unclaimed or under another claim id: no claim
event applies to an Unclaimed slot but REQUEST_CLAIM, MATCH, ADOPT and the owner's,
so the table refuses them and the startd ignores the late report.

Surprising but deliberate:

- the schedd's DEACTIVATE_CLAIM, condor_suspend and condor_continue leave the slot's
  state as it is: the starter vacates or stops the job and the job's exit (or the
  starter's report) moves the slot, as with HTCondor's claim that stays Claimed;
- condor_continue does not resume a job the owner policy suspended (Claimed/Suspended):
  only the policy's CONTINUE does;
- a job owner-suspended is never put in retirement by the owner's SUSPEND again, and an
  owner SUSPEND does not apply to a retiring job (HTCondor: Retiring goes on to
  Preempting, never to Suspended);
- ending a claim with a preempting claim waiting (``HAND_OVER``) keeps the slot
  Claimed, now under the preempting claim's id: its held ACTIVATE_CLAIM goes on.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from roost.vocabulary import SLOT_ACTIVITIES, Activity, SlotState

UNCLAIMED, MATCHED, CLAIMED, PREEMPTING, OWNER, DRAINED = (
    SlotState.UNCLAIMED, SlotState.MATCHED, SlotState.CLAIMED, SlotState.PREEMPTING, SlotState.OWNER,
    SlotState.DRAINED)
IDLE, BUSY, SUSPENDED, RETIRING, VACATING, KILLING = (
    Activity.IDLE, Activity.BUSY, Activity.SUSPENDED, Activity.RETIRING, Activity.VACATING, Activity.KILLING)

#: a slot's (state, activity)
Where = tuple[str, str]

# -- the events of a claim's life -------------------------------------------------------
# the schedd's commands (docs/protocol.md) and what the startd learns of its claims
MATCH: Final = "match"  # the negotiator told the startd of a match (HTCondor's MATCH_INFO; roost's negotiator does not)
REQUEST_CLAIM: Final = "request_claim"  # REQUEST_CLAIM granted (a retried one renews the claim)
ACTIVATE: Final = "activate"  # ACTIVATE_CLAIM: a job starts on the claim
JOB_EXIT: Final = "job_exit"  # the claim's job left (exited, vacated, killed)
DEACTIVATE: Final = "deactivate"  # DEACTIVATE_CLAIM: the schedd has the job vacated, keeps the claim
SCHEDD_SUSPEND: Final = "schedd_suspend"  # SUSPEND_CLAIM (condor_suspend)
SCHEDD_CONTINUE: Final = "schedd_continue"  # CONTINUE_CLAIM (condor_continue)
RELEASE_CLAIM: Final = "release_claim"  # RELEASE_CLAIM: the schedd ends the claim
LEASE_EXPIRED: Final = "lease_expired"  # no keep-alive for the claim's lease
POLICY_RELEASE: Final = "policy_release"  # the owner policy gives the idle claim up
HAND_OVER: Final = "hand_over"  # the claim ended and a preempting claim takes the slot
PREEMPT: Final = "preempt"  # a preempting claim (rank or priority preemption) granted on the slot
ADOPT: Final = "adopt"  # a restarted startd takes back a claim whose job still runs
# the owner policy's steps and the owner's commands (roost.core.ownerpolicy)
OWNER_BUSY: Final = "owner_busy"  # IS_OWNER, START false, roost off: nothing offered
OWNER_FREE: Final = "owner_free"  # offered to the pool again
OWNER_SUSPEND: Final = "owner_suspend"  # WANT_SUSPEND and SUSPEND: SIGSTOP
OWNER_CONTINUE: Final = "owner_continue"  # CONTINUE
RETIRE: Final = "retire"  # eviction decided, MaxJobRetirementTime not over
UNRETIRE: Final = "unretire"  # the preempting claim or the drain went away
RETIREMENT_OVER: Final = "retirement_over"  # the retirement time ran out: vacate
VACATE: Final = "vacate"  # PREEMPT, roost vacate, a quick drain: soft kill
KILL: Final = "kill"  # KILL, vacate time over, WANT_VACATE false, roost vacate -fast: hard kill
DRAIN: Final = "drain"  # roost drain, nothing left running under the slot
DRAIN_WAIT: Final = "drain_wait"  # roost drain, a partitionable slot whose carved slots still run
DRAIN_DONE: Final = "drain_done"  # the last carved slot of a draining partitionable slot ended
CANCEL_DRAIN: Final = "cancel_drain"  # roost drain -cancel (or the policy offers the slot again)

# -- what the startd does on a move -----------------------------------------------------
ADVERTISE: Final = "advertise"  # the slot's ad goes to the collector
RESCHEDULE: Final = "reschedule"  # a slot is free: ask the negotiator for a cycle
EVALUATE: Final = "evaluate"  # one owner policy step for the slot, once this event is handled
RENEW_LEASE: Final = "renew_lease"  # the claim's lease starts again
START_STARTER: Final = "start_starter"  # a starter runs (or takes back) the job
STOP_JOB: Final = "stop_job"  # SIGSTOP and freeze
RESUME_JOB: Final = "resume_job"  # SIGCONT and thaw
VACATE_JOB: Final = "vacate_job"  # the starter's soft kill (SIGTERM, SIGKILL after the vacate time)
KILL_JOB: Final = "kill_job"  # the starter's hard kill
ABANDON_JOB: Final = "abandon_job"  # the job killed unreported (its claim is gone)
FORGET_CLAIM: Final = "forget_claim"  # the claim's book-keeping dropped, the slot returned (a static
#                                       slot gets a claim id the old holder does not know; a dynamic
#                                       slot's resources go back to its partitionable slot)
WAKE_PREEMPTOR: Final = "wake_preemptor"  # the preempting claim's held ACTIVATE_CLAIM goes on


class Move(NamedTuple):
    """Where an event takes a slot, and what follows."""

    state: str
    activity: str
    actions: tuple[str, ...] = ()


_CLAIMED_JOB: Final = ((CLAIMED, BUSY), (CLAIMED, SUSPENDED), (CLAIMED, RETIRING))
_CLAIMED_ALL: Final = ((CLAIMED, IDLE), *_CLAIMED_JOB)
_PREEMPTING_ALL: Final = ((PREEMPTING, VACATING), (PREEMPTING, KILLING))
_HELD: Final = (*_CLAIMED_ALL, *_PREEMPTING_ALL)  # a claim holds the slot
_ENDING: Final = (ABANDON_JOB, FORGET_CLAIM, ADVERTISE, RESCHEDULE, EVALUATE)


def _to(froms: tuple[Where, ...], state: str, activity: str, *actions: str) -> dict[Where, Move]:
    return {w: Move(state, activity, actions) for w in froms}


def _stay(froms: tuple[Where, ...], *actions: str) -> dict[Where, Move]:
    return {w: Move(w[0], w[1], actions) for w in froms}


#: event -> {(state, activity) from: the move}; a (state, activity) not listed: the
#: event does not apply there
CLAIM_MOVES: Final[dict[str, dict[Where, Move]]] = {
    MATCH: _to(((UNCLAIMED, IDLE),), MATCHED, IDLE, ADVERTISE),
    REQUEST_CLAIM: {**_to(((UNCLAIMED, IDLE), (MATCHED, IDLE)), CLAIMED, IDLE, ADVERTISE),
                    # a retried request of the schedd that holds the idle claim
                    **_stay(((CLAIMED, IDLE),), RENEW_LEASE)},
    ACTIVATE: _to(((CLAIMED, IDLE),), CLAIMED, BUSY, RENEW_LEASE, START_STARTER, ADVERTISE, EVALUATE),
    JOB_EXIT: {**_to(_CLAIMED_ALL, CLAIMED, IDLE, ADVERTISE, EVALUATE),
               # Preempting stays so until the claim ends (the policy then releases it)
               **_stay(_PREEMPTING_ALL, ADVERTISE, EVALUATE)},
    DEACTIVATE: {**_stay(_CLAIMED_JOB, VACATE_JOB), **_stay(_PREEMPTING_ALL, VACATE_JOB),
                 **_stay(((CLAIMED, IDLE),))},  # no job: nothing to vacate
    SCHEDD_SUSPEND: _stay(_CLAIMED_JOB, STOP_JOB),
    # a job the owner policy suspended is not the schedd's to resume
    SCHEDD_CONTINUE: _stay(((CLAIMED, BUSY), (CLAIMED, RETIRING)), RESUME_JOB),
    RELEASE_CLAIM: _to(_HELD, UNCLAIMED, IDLE, *_ENDING),
    LEASE_EXPIRED: _to(_HELD, UNCLAIMED, IDLE, *_ENDING),
    POLICY_RELEASE: _to(_HELD, UNCLAIMED, IDLE, *_ENDING),
    HAND_OVER: _to(_HELD, CLAIMED, IDLE, ABANDON_JOB, FORGET_CLAIM, WAKE_PREEMPTOR, RENEW_LEASE, ADVERTISE),
    PREEMPT: _stay(_HELD, ADVERTISE, EVALUATE),
    ADOPT: _to(((UNCLAIMED, IDLE),), CLAIMED, BUSY, START_STARTER, ADVERTISE, EVALUATE),
    OWNER_BUSY: _to(((UNCLAIMED, IDLE), (MATCHED, IDLE), (DRAINED, IDLE), (DRAINED, RETIRING)),
                    OWNER, IDLE, ADVERTISE),
    OWNER_FREE: _to(((OWNER, IDLE),), UNCLAIMED, IDLE, ADVERTISE, RESCHEDULE),
    OWNER_SUSPEND: _to(((CLAIMED, BUSY),), CLAIMED, SUSPENDED, STOP_JOB, ADVERTISE),
    OWNER_CONTINUE: _to(((CLAIMED, SUSPENDED),), CLAIMED, BUSY, RESUME_JOB, ADVERTISE),
    RETIRE: {(CLAIMED, BUSY): Move(CLAIMED, RETIRING, (ADVERTISE,)),
             (CLAIMED, SUSPENDED): Move(CLAIMED, RETIRING, (RESUME_JOB, ADVERTISE))},
    UNRETIRE: _to(((CLAIMED, RETIRING),), CLAIMED, BUSY, ADVERTISE),
    RETIREMENT_OVER: _to(((CLAIMED, RETIRING),), PREEMPTING, VACATING, VACATE_JOB, ADVERTISE),
    VACATE: {(CLAIMED, BUSY): Move(PREEMPTING, VACATING, (VACATE_JOB, ADVERTISE)),
             (CLAIMED, SUSPENDED): Move(PREEMPTING, VACATING, (RESUME_JOB, VACATE_JOB, ADVERTISE)),
             (CLAIMED, RETIRING): Move(PREEMPTING, VACATING, (VACATE_JOB, ADVERTISE))},
    KILL: {(CLAIMED, BUSY): Move(PREEMPTING, KILLING, (KILL_JOB, ADVERTISE)),
           (CLAIMED, SUSPENDED): Move(PREEMPTING, KILLING, (RESUME_JOB, KILL_JOB, ADVERTISE)),
           (CLAIMED, RETIRING): Move(PREEMPTING, KILLING, (KILL_JOB, ADVERTISE)),
           (PREEMPTING, VACATING): Move(PREEMPTING, KILLING, (KILL_JOB, ADVERTISE))},
    DRAIN: _to(((UNCLAIMED, IDLE), (OWNER, IDLE)), DRAINED, IDLE, ADVERTISE),
    DRAIN_WAIT: _to(((UNCLAIMED, IDLE), (OWNER, IDLE)), DRAINED, RETIRING, ADVERTISE),
    DRAIN_DONE: _to(((DRAINED, RETIRING),), DRAINED, IDLE, ADVERTISE),
    CANCEL_DRAIN: _to(((DRAINED, IDLE), (DRAINED, RETIRING)), UNCLAIMED, IDLE, ADVERTISE, RESCHEDULE),
}

#: the events that end a claim (the slot goes back unclaimed, or to a preempting claim)
ENDINGS: Final = frozenset({RELEASE_CLAIM, LEASE_EXPIRED, POLICY_RELEASE, HAND_OVER})


class IllegalMove(ValueError):
    """An event that does not apply to the slot's state and activity (a late report
    for a claim that is gone, a race the caller lost, or a bug)."""


def after(state: str, activity: str, event: str) -> Move:
    """Where ``event`` takes a slot in (state, activity); IllegalMove where it does not apply."""
    try:
        return CLAIM_MOVES[event][(state, activity)]
    except KeyError:
        if event not in CLAIM_MOVES:
            raise IllegalMove(f"{event!r} is no claim event") from None
        raise IllegalMove(f"{event!r} does not apply to a slot {state}/{activity}") from None


def applies(state: str, activity: str, event: str) -> bool:
    """Whether ``event`` moves a slot in (state, activity) (``after`` would not refuse)."""
    return (state, activity) in CLAIM_MOVES.get(event, ())


def events_from(state: str, activity: str) -> list[str]:
    """The events that apply to a slot in (state, activity), in table order."""
    return [e for e, moves in CLAIM_MOVES.items() if (state, activity) in moves]


def event_between(old: Where, new: Where) -> str | None:
    """The first event (in table order) that moves a slot from ``old`` to ``new``; None
    when none does. A slot left where it is is no move at all (None)."""
    if old == new:
        return None
    for event, moves in CLAIM_MOVES.items():
        m = moves.get(old)
        if m is not None and (m.state, m.activity) == new:
            return event
    return None


def is_move(old: Where, new: Where) -> bool:
    """Whether some event moves a slot from ``old`` to ``new`` (staying put always is)."""
    return old == new or event_between(old, new) is not None


#: every (state, activity) a slot may be in
ALL_PLACES: Final[tuple[Where, ...]] = tuple(
    (s, a) for s, acts in SLOT_ACTIVITIES.items() for a in sorted(acts))
