"""The startd's state machine: the machine owner's policy turned into actions.

Pure: ``step`` takes what the startd knows about one slot (a ``SlotView``),
the slot's ad (MY), the running job's ad (TARGET, or None), the policy
expressions as ClassAd text and the time, and returns where the slot goes
next and what the startd must do to the job. It never touches a process.

HTCondor's states and activities, as the startd manual describes them:

- *Owner*: the machine's owner is using it (``IS_OWNER`` true, or ``START``
  is plainly False with no job to judge), or ``roost off``; nothing is offered.
- *Unclaimed*/Idle: offered to the pool. *Matched* is kept as is.
- *Claimed*: Idle (no job), Busy, Suspended (``WANT_SUSPEND`` and
  ``SUSPEND``: SIGSTOP; ``CONTINUE`` resumes), Retiring (eviction decided but
  the job may still run until ``MaxJobRetirementTime`` after its start).
- *Preempting*: Vacating (soft kill, SIGTERM; Killing once the vacate time
  is over or ``KILL`` is true), Killing (SIGKILL).
- *Drained*: ``roost drain`` finished; Retiring while the partitionable
  slot's carved children still run.

Eviction starts when ``PREEMPT`` is true, when a preempting claim waits for
the slot, when a graceful drain retires the job, or on ``roost vacate``.
``WANT_VACATE`` false skips the soft kill. A retiring job goes back to Busy
when its preempting claim is released or the drain is cancelled, unless
``PREEMPT`` was true on the claim (HTCondor's irreversible retirement: ``step``
returns the ``PREEMPTED`` note and the startd passes ``preempt_was_true``).

Surprising but HTCondor's: ``MaxJobRetirementTime`` counts from the job's
start, not from the moment eviction was decided; the job's own
``MaxJobRetirementTime`` can only shorten the machine's. ClassAd ``time()``
reads the real clock; the timers this module keeps itself (retirement,
vacate time) use ``now``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from roost.classad import ClassAd, ExprTree, Value
from roost.classad.ast import BinaryOp, Conditional, Literal, Node, Paren, UnaryOp
from roost.vocabulary import Activity, SlotState

# actions the startd carries out
SUSPEND = "suspend"  # SIGSTOP to the job's process group
CONTINUE = "continue"  # SIGCONT
VACATE = "vacate"  # graceful: SIGTERM, SIGKILL after the vacate time
KILL = "kill"  # fast: SIGKILL now
OWNER_ACTION = "owner"  # stop offering the slot
RELEASE = "release"  # end the (idle) claim
PREEMPTED = "preempted"  # note: PREEMPT was true, this claim's retirement cannot be undone


@dataclass(frozen=True, slots=True)
class PolicyExprs:
    """The owner's expressions as ClassAd text (config knobs of the same names)."""

    start: str = "True"
    is_owner: str = "False"
    suspend: str = "False"
    continue_: str = "True"
    preempt: str = "False"
    kill: str = "False"
    want_suspend: str = "False"
    want_vacate: str = "True"
    rank: str = "0"
    max_job_retirement_time: str = "0"
    machine_max_vacate_time: str = "600"  # MachineMaxVacateTime (knob MaxVacateTime)
    default_job_vacate_time: float = 10.0  # when the job has no JobMaxVacateTime

    def text(self, name: str) -> str:
        return getattr(self, name)


@dataclass(frozen=True, slots=True)
class SlotView:
    """What the startd knows about one slot besides its ad."""

    state: str
    activity: str
    entered_state: float = 0.0
    entered_activity: float = 0.0
    claimed: bool = False  # a claim is held on the slot
    job: bool = False  # a job's processes exist on the claim
    job_start: float = 0.0
    drain: str | None = None  # "graceful" / "quick" / "fast" while draining
    off: bool = False  # roost off
    preempt: bool = False  # a preempting claim waits for this slot
    vacate: str | None = None  # "graceful" / "fast": roost vacate asked for it
    children: int = 0  # a partitionable slot's carved (dynamic) slots still alive
    preempt_was_true: bool = False  # PREEMPT was true on this claim (the startd keeps the PREEMPTED note)


class Step(NamedTuple):
    state: str
    activity: str
    actions: tuple[str, ...] = ()


@dataclass
class _Eval:
    exprs: PolicyExprs
    my: ClassAd
    target: ClassAd | None
    cache: dict[str, Any] = field(default_factory=dict)

    def __call__(self, name: str) -> Any:
        if name not in self.cache:
            self.cache[name] = evaluate(self.exprs.text(name), self.my, self.target)
        return self.cache[name]

    def true(self, name: str) -> bool:
        return self(name) is True

    def false(self, name: str) -> bool:
        return self(name) is False


_EXPRS: dict[str, ExprTree] = {}
_BAD: set[str] = set()  # texts that do not parse


def evaluate(text: str, my: ClassAd, target: ClassAd | None) -> Any:
    """``text`` with MY = ``my`` and TARGET = ``target``; Error for text that does not parse."""
    tree = _EXPRS.get(text)
    if tree is None:
        if text in _BAD:
            return Value.Error
        try:
            tree = ExprTree(text if text.strip() else "UNDEFINED")
        except Exception:
            if len(_BAD) > 100:
                _BAD.clear()
            _BAD.add(text)  # parsed once, not on every poll
            return Value.Error
        if len(_EXPRS) > 500:
            _EXPRS.clear()
        _EXPRS[text] = tree
    try:
        return tree.eval(my, target) if target is not None else tree.eval(my)
    except Exception:
        return Value.Error


def _number(v: Any) -> float | None:
    if type(v) is not int and type(v) is not float:  # bool, and UNDEFINED/ERROR (an int enum)
        return None
    if v != v:
        return None
    return float(v)


def retirement_time(my: ClassAd, job: ClassAd | None, exprs: PolicyExprs) -> float:
    """Seconds after its start a job is protected from eviction (0: none).

    The machine's MAXJOBRETIREMENTTIME (MY = slot, TARGET = job); the job's
    own MaxJobRetirementTime counts only when it is shorter.
    """
    machine = _number(evaluate(exprs.max_job_retirement_time, my, job)) or 0.0
    if job is not None and "MaxJobRetirementTime" in job:
        mine = _number(evaluate("MaxJobRetirementTime", job, my))
        if mine is not None:
            machine = min(machine, mine)
    return max(machine, 0.0)


def vacate_time(my: ClassAd, job: ClassAd | None, exprs: PolicyExprs) -> float:
    """Seconds a vacating job gets between SIGTERM and SIGKILL: the job's
    JobMaxVacateTime, never more than the machine's MachineMaxVacateTime."""
    machine = _number(evaluate(exprs.machine_max_vacate_time, my, job))
    wanted = None
    if job is not None and "JobMaxVacateTime" in job:
        wanted = _number(evaluate("JobMaxVacateTime", job, my))
    t = exprs.default_job_vacate_time if wanted is None else wanted
    if machine is not None:
        t = min(t, machine)
    return max(t, 0.0)


def step(
    view: SlotView, slot_ad: ClassAd, job_ad: ClassAd | None, exprs: PolicyExprs, now: float
) -> Step:
    """The slot's next (state, activity) and the actions that take it there."""
    slot_ad = policy_ad(slot_ad, exprs)
    ev = _Eval(exprs, slot_ad, job_ad)
    s, a = view.state, view.activity
    if not view.claimed:
        return _unclaimed(view, ev)
    if not view.job:
        if s == SlotState.PREEMPTING:
            return Step(s, a, (RELEASE,))  # the job is gone: end the claim
        if view.drain or view.off or view.preempt or view.vacate:
            return Step(s, a, (RELEASE,))
        if ev.true("is_owner") or ev.false("start"):
            return Step(s, a, (RELEASE,))  # HTCondor: a claimed idle slot is given up
        return Step(SlotState.CLAIMED, Activity.IDLE)
    # a job runs on the claim
    resume = (CONTINUE,) if a == Activity.SUSPENDED else ()
    if s == SlotState.PREEMPTING:
        if a == Activity.VACATING and (
                ev.true("kill") or now - view.entered_activity >= vacate_time(slot_ad, job_ad, exprs)):
            return Step(SlotState.PREEMPTING, Activity.KILLING, (KILL,))
        return Step(s, a)
    if view.vacate == "fast" or view.drain == "fast" or ev.true("kill"):
        return Step(SlotState.PREEMPTING, Activity.KILLING, (*resume, KILL))
    if view.vacate or view.drain == "quick":
        return _evict(ev, resume)
    retire_for = view.preempt or view.drain == "graceful"
    if a == Activity.RETIRING:
        preempt = not view.preempt_was_true and ev.true("preempt")
        if not (retire_for or preempt or view.preempt_was_true):
            # HTCondor's unretire: the preempting claim went away or the drain was
            # cancelled; a retirement PREEMPT started is irreversible.
            return Step(SlotState.CLAIMED, Activity.BUSY)
        if now >= view.job_start + retirement_time(slot_ad, job_ad, exprs):
            return _evict(ev, ())
        return Step(SlotState.CLAIMED, Activity.RETIRING, (PREEMPTED,) if preempt else ())
    if a == Activity.SUSPENDED:
        preempt = ev.true("preempt")
        if retire_for or preempt:
            return _retire_or_evict(view, ev, slot_ad, job_ad, exprs, now, resume, preempt)
        if ev.true("continue_"):
            return Step(SlotState.CLAIMED, Activity.BUSY, (CONTINUE,))
        return Step(SlotState.CLAIMED, Activity.SUSPENDED)
    # Busy (or Idle with a job just starting)
    preempt = ev.true("preempt")
    if retire_for or preempt:
        return _retire_or_evict(view, ev, slot_ad, job_ad, exprs, now, (), preempt)
    if ev.true("want_suspend") and ev.true("suspend"):
        return Step(SlotState.CLAIMED, Activity.SUSPENDED, (SUSPEND,))
    return Step(SlotState.CLAIMED, Activity.BUSY)


def _unclaimed(view: SlotView, ev: _Eval) -> Step:
    if view.drain:
        activity = Activity.RETIRING if view.children else Activity.IDLE
        return Step(SlotState.DRAINED, activity, () if view.state == SlotState.DRAINED else (OWNER_ACTION,))
    if view.off or ev.true("is_owner") or ev.false("start"):
        return Step(SlotState.OWNER, Activity.IDLE, () if view.state == SlotState.OWNER else (OWNER_ACTION,))
    if view.state == SlotState.MATCHED:
        return Step(SlotState.MATCHED, Activity.IDLE)
    return Step(SlotState.UNCLAIMED, Activity.IDLE)


def _retire_or_evict(
    view: SlotView, ev: _Eval, my: ClassAd, job: ClassAd | None, exprs: PolicyExprs, now: float,
    resume: tuple[str, ...], preempt: bool,
) -> Step:
    if now < view.job_start + retirement_time(my, job, exprs):
        note = (PREEMPTED,) if preempt and not view.preempt_was_true else ()
        return Step(SlotState.CLAIMED, Activity.RETIRING, (*resume, *note))
    return _evict(ev, resume)


def _evict(ev: _Eval, resume: tuple[str, ...]) -> Step:
    if ev.false("want_vacate"):
        return Step(SlotState.PREEMPTING, Activity.KILLING, (*resume, KILL))
    return Step(SlotState.PREEMPTING, Activity.VACATING, (*resume, VACATE))


# ad attribute -> PolicyExprs field: policies refer to each other by these names
# (the Desktop policy's PREEMPT reads SUSPEND and WANT_SUSPEND).
AD_NAMES = {
    "IS_OWNER": "is_owner", "SUSPEND": "suspend", "CONTINUE": "continue_", "PREEMPT": "preempt",
    "KILL": "kill", "WANT_SUSPEND": "want_suspend", "WANT_VACATE": "want_vacate",
}


def policy_ad(slot_ad: ClassAd, exprs: PolicyExprs) -> ClassAd:
    """``slot_ad`` with the policy expressions the ad lacks, so one may name another
    (a copy; the startd adds them to the ads it builds, so usually nothing is missing)."""
    if all(name in slot_ad for name in AD_NAMES):
        return slot_ad
    ad = slot_ad.__copy__()
    add_policy_exprs(ad, exprs)
    return ad


def is_constant(exprs: PolicyExprs) -> bool:
    """Whether every expression is a literal (``START = True`` and HTCondor's other
    defaults): then ``step`` reads nothing of the slot ad, and the startd need not
    rebuild the ad to ask it after every job event."""
    for f in fields(exprs):
        if f.type in ("str", str):
            tree = _tree(getattr(exprs, f.name))
            if tree is None or not _closed(tree.node):
                return False
    return True


def _closed(node: Node) -> bool:
    """Literals and operators only (``10 * 60``): no attribute, no function (time())."""
    if isinstance(node, Literal):
        return True
    if isinstance(node, (UnaryOp, BinaryOp, Conditional, Paren)):
        return all(_closed(getattr(node, f)) for f in node._fields if isinstance(getattr(node, f), Node))
    return False


def add_policy_exprs(ad: ClassAd, exprs: PolicyExprs) -> None:
    """Put the policy expressions ``ad`` lacks into it (IS_OWNER, SUSPEND, ...)."""
    for name, field_name in AD_NAMES.items():
        if name not in ad:
            tree = _tree(exprs.text(field_name))
            if tree is not None:
                ad[name] = tree


@functools.lru_cache(maxsize=256)
def _tree(text: str) -> ExprTree | None:
    try:
        return ExprTree(text)
    except Exception:
        return None  # a bad knob: evaluate() reports it, once


def exprs_from_config(get: Any) -> PolicyExprs:
    """PolicyExprs from a config lookup ``get(name) -> str | None`` (unset: HTCondor's default)."""
    d = PolicyExprs()

    def pick(name: str, default: str) -> str:
        v = get(name)
        return v if isinstance(v, str) and v.strip() else default

    return PolicyExprs(
        start=pick("START", d.start),
        is_owner=pick("IS_OWNER", d.is_owner),
        suspend=pick("SUSPEND", d.suspend),
        continue_=pick("CONTINUE", d.continue_),
        preempt=pick("PREEMPT", d.preempt),
        kill=pick("KILL", d.kill),
        want_suspend=pick("WANT_SUSPEND", d.want_suspend),
        want_vacate=pick("WANT_VACATE", d.want_vacate),
        rank=pick("RANK", d.rank),
        max_job_retirement_time=pick("MAXJOBRETIREMENTTIME", d.max_job_retirement_time),
        machine_max_vacate_time=pick("MachineMaxVacateTime", pick("MaxVacateTime", d.machine_max_vacate_time)),
    )


__all__ = [
    "CONTINUE", "KILL", "OWNER_ACTION", "PREEMPTED", "RELEASE", "SUSPEND", "VACATE",
    "PolicyExprs", "SlotView", "Step", "evaluate", "exprs_from_config", "policy_ad",
    "retirement_time", "step", "vacate_time",
]
