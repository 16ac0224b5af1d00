"""Whether a claimed slot may be preempted for an idle job, and in what order.

HTCondor's negotiator knows two reasons to take a slot away from the job
running there (the manual, "Priorities and Preemption" and the negotiator's
configuration):

- *rank preemption*: the machine prefers the new job. The slot's ``Rank``
  evaluated against the idle job (MY = slot, TARGET = job) is greater than
  the slot's ``CurrentRank`` (its Rank of the running job).
- *priority preemption*: ``PREEMPTION_REQUIREMENTS`` (MY = slot, TARGET =
  job; the negotiator puts ``RemoteUserPrio``, the running user's effective
  priority, into the slot's view and ``SubmitterUserPrio`` into the job's)
  is true, and the idle job's submitter has a better (numerically lower)
  effective priority than ``RemoteUserPrio``. As in HTCondor the machine
  must not prefer the running job: its Rank of the idle job is at least
  ``CurrentRank``.

A submitter never preempts itself (the slot's ``RemoteUser`` is the
submitter), for either reason. ``NEGOTIATOR_CONSIDER_PREEMPTION = False``
(``consider``) turns both off.

Among preemptable slots ``PREEMPTION_RANK`` (MY = slot, TARGET = job,
higher is better) picks which one goes first.

Defaults, as HTCondor ships them: ``PREEMPTION_REQUIREMENTS`` unset is
**False** (no priority preemption at all; rank preemption still happens),
``PREEMPTION_RANK`` unset is ``(RemoteUserPrio * 1000000) -
ifThenElse(isUndefined(TotalJobRunTime), 0, TotalJobRunTime)``: take from
the worst-priority user first, and among its jobs the one that has run
the shortest time. Pure code: ads in, decisions out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roost.classad.ast import Node
from roost.classad.evaluate import EvaluationFailed, eval_attr, evaluate
from roost.classad.parser import parse_expr
from roost.vocabulary import SlotState

# preemption levels, in the order the matchmaker prefers them
NO_PREEMPTION = 0
RANK_PREEMPTION = 1
PRIORITY_PREEMPTION = 2

DEFAULT_PREEMPTION_RANK = (
    "(RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRunTime), 0, TotalJobRunTime)"
)


@dataclass(frozen=True)
class PreemptionPolicy:
    """The negotiator's preemption knobs as expression trees.

    ``requirements`` is PREEMPTION_REQUIREMENTS; None means HTCondor's default,
    False: no priority preemption. ``rank`` is PREEMPTION_RANK; None ranks every
    candidate 0 (use :meth:`from_config` for HTCondor's default expression).
    ``consider`` is NEGOTIATOR_CONSIDER_PREEMPTION.
    """

    requirements: Node | None = None
    rank: Node | None = None
    consider: bool = True

    @classmethod
    def from_config(
        cls,
        requirements: str | None = None,
        rank: str | None = None,
        consider: bool = True,
    ) -> PreemptionPolicy:
        """From the configuration text; a knob left unset (None or blank) takes
        HTCondor's default (PREEMPTION_REQUIREMENTS False, PREEMPTION_RANK
        :data:`DEFAULT_PREEMPTION_RANK`)."""
        req = parse_expr(requirements) if requirements and requirements.strip() else None
        rk = parse_expr(rank if rank and rank.strip() else DEFAULT_PREEMPTION_RANK)
        return cls(req, rk, consider)


def _number(v: Any) -> float | None:
    t = type(v)
    if t is int or t is float:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    return None


def _eval_number(node: Node | None, cur: Any, tgt: Any) -> float | None:
    if node is None:
        return None
    try:
        return _number(evaluate(node, cur, tgt))
    except EvaluationFailed:
        return None


def is_claimed(slot_ad: Any) -> bool:
    """The slot's State is Claimed (a running job could be preempted)."""
    return eval_attr(slot_ad, "State") == SlotState.CLAIMED


def slot_rank(slot_ad: Any, job: Any) -> float:
    """The slot's Rank of ``job`` (non-numeric: 0, as HTCondor)."""
    node = slot_ad._attrs.get("rank")
    v = _eval_number(node, slot_ad, job)
    return 0.0 if v is None else v


def preemption_kind(
    policy: PreemptionPolicy | None,
    slot_ad: Any,
    job: Any,
    submitter: str,
    submitter_prio: float | None,
) -> int | None:
    """How ``job`` (of ``submitter``, whose effective priority is ``submitter_prio``)
    may preempt the job on the claimed ``slot_ad``: :data:`RANK_PREEMPTION`,
    :data:`PRIORITY_PREEMPTION`, or None (it may not). Does not check the
    symmetric match; the matchmaker does."""
    if policy is None or not policy.consider:
        return None
    remote_user = eval_attr(slot_ad, "RemoteUser")
    if type(remote_user) is str and remote_user == submitter:
        return None  # never preempt yourself
    current = _number(eval_attr(slot_ad, "CurrentRank"))
    current = 0.0 if current is None else current
    mine = slot_rank(slot_ad, job)
    if mine > current:
        return RANK_PREEMPTION
    if mine < current or policy.requirements is None or submitter_prio is None:
        return None
    try:
        ok = evaluate(policy.requirements, slot_ad, job)
    except EvaluationFailed:
        return None
    if not (ok is True or (type(ok) in (int, float) and ok != 0)):
        return None
    remote_prio = _number(eval_attr(slot_ad, "RemoteUserPrio"))
    if remote_prio is None or not submitter_prio < remote_prio:
        return None
    return PRIORITY_PREEMPTION


def preemption_rank(policy: PreemptionPolicy | None, slot_ad: Any, job: Any) -> float:
    """PREEMPTION_RANK of the claimed slot for ``job`` (higher goes first; non-numeric: 0)."""
    if policy is None:
        return 0.0
    v = _eval_number(policy.rank, slot_ad, job)
    return 0.0 if v is None or v != v else v  # NaN sorts as 0, as in the matchmaker


def preemption_key(
    policy: PreemptionPolicy | None, kind: int, slot_ad: Any, job: Any
) -> tuple[int, float]:
    """Sort key among candidates (smaller first): no preemption, then rank
    preemption, then priority preemption; within a level, higher PREEMPTION_RANK."""
    if kind == NO_PREEMPTION:
        return (NO_PREEMPTION, 0.0)
    return (kind, -preemption_rank(policy, slot_ad, job))


__all__ = [
    "DEFAULT_PREEMPTION_RANK",
    "NO_PREEMPTION",
    "PRIORITY_PREEMPTION",
    "RANK_PREEMPTION",
    "PreemptionPolicy",
    "is_claimed",
    "preemption_key",
    "preemption_kind",
    "preemption_rank",
    "slot_rank",
]
