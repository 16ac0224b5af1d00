"""The job state table: every move, every refusal, and the user actions against
HTCondor's rules (condor_rm of anything not yet gone, condor_hold of idle and running
jobs, condor_release of held ones, suspend/continue/vacate of jobs on a slot)."""

from __future__ import annotations

import itertools

import pytest

from roost.core import jobstates as js
from roost.vocabulary import JobStatus as S

STATUSES = sorted(S.WORDS)
EVENTS = sorted(js.JOB_MOVES)

#: the whole table written out once more, by hand, as HTCondor's manual describes it
EXPECTED = {
    (S.IDLE, js.START): S.RUNNING,
    (S.IDLE, js.HOLD): S.HELD,
    (S.IDLE, js.REMOVE): S.REMOVED,
    (S.RUNNING, js.EXIT): S.COMPLETED,
    (S.RUNNING, js.REQUEUE): S.IDLE,
    (S.RUNNING, js.HOLD): S.HELD,
    (S.RUNNING, js.REMOVE): S.REMOVED,
    (S.RUNNING, js.SUSPEND): S.SUSPENDED,
    (S.SUSPENDED, js.CONTINUE): S.RUNNING,
    (S.SUSPENDED, js.EXIT): S.COMPLETED,
    (S.SUSPENDED, js.REQUEUE): S.IDLE,
    (S.SUSPENDED, js.HOLD): S.HELD,
    (S.SUSPENDED, js.REMOVE): S.REMOVED,
    (S.TRANSFERRING_OUTPUT, js.EXIT): S.COMPLETED,
    (S.TRANSFERRING_OUTPUT, js.REQUEUE): S.IDLE,
    (S.TRANSFERRING_OUTPUT, js.HOLD): S.HELD,
    (S.TRANSFERRING_OUTPUT, js.REMOVE): S.REMOVED,
    (S.HELD, js.RELEASE): S.IDLE,
    (S.HELD, js.REMOVE): S.REMOVED,
}


@pytest.mark.parametrize(("status", "event"), list(itertools.product(STATUSES, EVENTS)))
def test_every_status_and_event(status: int, event: str) -> None:
    want = EXPECTED.get((status, event))
    assert js.applies(status, event) is (want is not None)
    if want is None:
        with pytest.raises(js.IllegalMove, match=event):
            js.after(status, event)
    else:
        assert js.after(status, event) == want
        assert js.event_between(status, want) == event


def test_a_job_gone_from_the_queue_never_moves_again() -> None:
    for status, event in itertools.product((S.REMOVED, S.COMPLETED), EVENTS):
        assert not js.applies(status, event)


def test_each_pair_of_statuses_has_at_most_one_event() -> None:
    """``event_between`` names the event behind a status change: it must be unique."""
    pairs = [(old, new) for moves in js.JOB_MOVES.values() for old, new in moves.items()]
    assert len(pairs) == len(set(pairs))
    assert js.event_between(S.IDLE, S.COMPLETED) is None
    assert js.event_between(S.HELD, S.HELD) is None


def test_user_actions_are_htcondors() -> None:
    def allowed(action: str) -> set[int]:
        return {s for s in STATUSES if js.allows(action, s)}

    on_a_slot = {S.RUNNING, S.TRANSFERRING_OUTPUT, S.SUSPENDED}
    assert allowed("remove") == set(STATUSES) - {S.REMOVED, S.COMPLETED}
    assert allowed("hold") == {S.IDLE} | on_a_slot
    assert allowed("release") == {S.HELD}
    assert allowed("suspend") == {S.RUNNING}
    assert allowed("continue") == {S.SUSPENDED}
    assert allowed("vacate") == allowed("vacate_fast") == {S.RUNNING, S.SUSPENDED}
    assert allowed("no such action") == set()


def test_is_move_is_the_table() -> None:
    for old, new in itertools.product(STATUSES, STATUSES):
        assert js.is_move(old, new) is (js.event_between(old, new) is not None)
