"""Values as matchmaking reads them: a failed evaluation is a number 0 or None, never
an exception.

Its own module because the slot views (:mod:`roost.core.slotclasses`: resources,
SlotWeight, PartitionableSlot) and the matchmaker (ranks, State, ConcurrencyLimits)
read ads the same lenient way. Non-numeric ranks count as 0, as in HTCondor.
"""

from __future__ import annotations

from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import Node
from roost.classad.evaluate import EvaluationFailed, evaluate


def number(v: Any) -> float:
    """``v`` as a number: a number itself, a boolean 1 or 0, anything else 0."""
    t = type(v)
    if t is int or t is float:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    return 0.0


def eval_number(node: Node | None, cur: ClassAd, tgt: ClassAd | None) -> float:
    """``node`` evaluated in ``cur`` against ``tgt``, as a :func:`number` (0 when absent)."""
    if node is None:
        return 0.0
    try:
        return number(evaluate(node, cur, tgt))
    except EvaluationFailed:
        return 0.0


def rank_number(node: Node | None, cur: ClassAd, tgt: ClassAd | None) -> float:
    """A rank as matchmaking sorts by it: :func:`eval_number`, with NaN counted as 0 like
    any other non-number. A NaN key is unordered: the best slot would then depend on
    how a heap happened to be laid out, not on the ranks."""
    v = eval_number(node, cur, tgt)
    return v if v == v else 0.0


def value_of(node: Node, cur: ClassAd, tgt: ClassAd | None) -> Any:
    """``node``'s value, None when the evaluation fails."""
    try:
        return evaluate(node, cur, tgt)
    except EvaluationFailed:
        return None


def attr_value(ad: ClassAd, attr: str) -> Any:
    """The value of ``ad``'s lower-case ``attr`` on its own, None when the evaluation fails."""
    v = ad._lits.get(attr)
    if v is None and attr in ad._attrs:
        try:
            v = evaluate(ad._attrs[attr], ad, None)
        except EvaluationFailed:
            return None
    return v


def truthy(v: Any) -> bool:
    """What ``&&`` counts as true: true or a non-zero number."""
    return v is True or (type(v) in (int, float) and v != 0)


def is_true(ad: ClassAd, attr: str) -> bool:
    """``ad``'s lower-case ``attr`` is :func:`truthy`."""
    v = attr_value(ad, attr)
    return v is True or (type(v) in (int, float) and v != 0)


__all__ = [
    "attr_value", "eval_number", "is_true", "number", "rank_number", "truthy", "value_of",
]
