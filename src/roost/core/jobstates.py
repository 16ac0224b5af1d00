"""The job's life in the schedd as one table: which event moves a job from which
``JobStatus`` to which (HTCondor's job states), and which user actions apply where.

``JobLifecycle`` (daemons/schedd/lifecycle.py) refuses a status change that is not a
move of this table (``is_move``), so the table is the whole story of what can happen
to a job. The user's actions (condor_rm,
condor_hold, ...) are checked with ``allows``: some move the job at once (hold, release,
remove), others are requests the execute side carries out and reports (suspend,
continue, vacate), after which the report's event moves it.
"""

from __future__ import annotations

from typing import Final

from roost.vocabulary import JobStatus

IDLE, RUNNING, REMOVED, COMPLETED, HELD = (
    JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED, JobStatus.COMPLETED, JobStatus.HELD)
TRANSFERRING_OUTPUT, SUSPENDED = JobStatus.TRANSFERRING_OUTPUT, JobStatus.SUSPENDED
_ON_A_SLOT = (RUNNING, TRANSFERRING_OUTPUT, SUSPENDED)

# the events of a job's life (what the schedd learns or is told)
START: Final = "start"  # a shadow (or a local runner) started it: 001
EXIT: Final = "exit"  # it ended and its policy says it is done: 005
REQUEUE: Final = "requeue"  # it left its slot and runs again: evicted, vacated, shadow lost (004, 007)
HOLD: Final = "hold"  # a user, its own policy or the system's: 012
RELEASE: Final = "release"  # 013
REMOVE: Final = "remove"  # condor_rm or a policy: 009
SUSPEND: Final = "suspend"  # the startd stopped it (its owner's SUSPEND, condor_suspend): 010
CONTINUE: Final = "continue"  # 011

#: event -> {from status: to status}; a status not listed: the event does not apply there
JOB_MOVES: Final[dict[str, dict[int, int]]] = {
    START: {IDLE: RUNNING},
    EXIT: {s: COMPLETED for s in _ON_A_SLOT},
    REQUEUE: {s: IDLE for s in _ON_A_SLOT},
    HOLD: {IDLE: HELD, **{s: HELD for s in _ON_A_SLOT}},
    RELEASE: {HELD: IDLE},
    REMOVE: {IDLE: REMOVED, HELD: REMOVED, **{s: REMOVED for s in _ON_A_SLOT}},
    SUSPEND: {RUNNING: SUSPENDED},
    CONTINUE: {SUSPENDED: RUNNING},
}

#: the user actions of ACT (condor_rm, condor_hold, condor_release, condor_suspend,
#: condor_continue, condor_vacate_job, condor_vacate_job -fast) -> the statuses each
#: applies to (HTCondor's rules); the first three are moves, the rest requests
USER_ACTIONS: Final[dict[str, frozenset[int]]] = {
    "remove": frozenset(JOB_MOVES[REMOVE]),
    "hold": frozenset(JOB_MOVES[HOLD]),
    "release": frozenset(JOB_MOVES[RELEASE]),
    "suspend": frozenset(JOB_MOVES[SUSPEND]),
    "continue": frozenset(JOB_MOVES[CONTINUE]),
    "vacate": frozenset({RUNNING, SUSPENDED}),
    "vacate_fast": frozenset({RUNNING, SUSPENDED}),
}


class IllegalMove(ValueError):
    """An event that does not apply to the job's status (a bug in the caller, or a
    race the caller must have settled first)."""


def after(status: int, event: str) -> int:
    """The status ``event`` moves a job in ``status`` to; IllegalMove where it does not apply."""
    try:
        return JOB_MOVES[event][status]
    except KeyError:
        raise IllegalMove(f"{event!r} does not apply to a job in status "
                          f"{JobStatus.word(status, str(status))}") from None


def applies(status: int, event: str) -> bool:
    """Whether ``event`` moves a job in ``status`` (``after`` would not refuse)."""
    return status in JOB_MOVES.get(event, ())


def allows(action: str, status: int) -> bool:
    """Whether a user action (ACT's ``action``) applies to a job in ``status``."""
    return status in USER_ACTIONS.get(action, ())


#: (from, to) of every move: what a status change may be
_MOVES: Final[frozenset[tuple[int, int]]] = frozenset(
    (old, new) for moves in JOB_MOVES.values() for old, new in moves.items())


def is_move(old: int, new: int) -> bool:
    """Whether some event moves a job from ``old`` to ``new``."""
    return (old, new) in _MOVES


def event_between(old: int, new: int) -> str | None:
    """The event that moves a job from ``old`` to ``new``, None when no event does (a
    status set to what it is already is no move at all)."""
    for event, moves in JOB_MOVES.items():
        if moves.get(old) == new:
            return event
    return None
