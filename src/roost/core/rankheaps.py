"""Per-base heaps of partitionable slots by what is left of one resource.

For a job whose Rank is what is left of a resource (``Rank = TARGET.Memory``) the best
slot of a base (:mod:`roost.core.slotclasses`) is its member with the most of it left
that passes the job's thresholds (:class:`roost.core.thresholds.Split`), ties to the
first in input order. Carving makes each carved slot its own class, so offering
classes would cost one offer per carved slot per call; a heap per base costs a few
heap steps per match.

Its own module because it is an index kept beside the classes, read lazily: carving
only lowers what is left, so an entry's key can only be too good, and a member that
fails a lower bound fails it for good. Whoever reads the top re-keys it, or drops it,
until the top is current and passes, so the heap stays right without hearing of each
``take``.

Jobs share a base's heap by that resource when they need the same resources to be
left at all (``RankedChecks.floor``: ``Cpus >= 2`` and ``Cpus >= 4`` both need some
Cpus), whatever their numbers: a member with none left of one of those fails every
job of the heap, and is dropped for good; one that has some, but too little for this
job's number, is set aside until the job's call is over (``RankedChecks.restore``:
carving only lowers, so it fails this job for the rest of the call) and then put back. Every carve leaves a stale
entry in each heap of its base, re-keyed when it comes to the top, so fewer heaps
(two per base here, by Memory and by Cpus, instead of one per set of numbers) is
fewer re-keys.
"""

from __future__ import annotations

import heapq
import operator
from typing import Any

from roost.core.slotclasses import Partition, SlotView
from roost.core.thresholds import Check, passes_all

# the resources whose running out (nothing left) drops a member from a heap for good;
# not Disk, which seldom runs out first (a member that fails it is only set aside)
_KEYED = frozenset(("Cpus", "GPUs", "Memory"))


def _needs_some(cmp: Any, number: float) -> bool:
    """``left cmp number`` fails whenever nothing (0 or less) is left."""
    return (cmp is operator.ge and number > 0) or (cmp is operator.gt and number >= 0)


class RankedChecks:
    """A job's checks as :func:`best` reads them for a heap by ``attr``."""

    __slots__ = ("attr", "own", "floor", "rest", "never", "aside", "heaps", "own_ok", "rest_ok",
                 "passes")

    def __init__(self, attr: str, checks: tuple[Check, ...]) -> None:
        self.attr = attr
        # on ``attr`` itself: failing at the top of the heap, they fail for every member
        self.own = tuple((cmp, number) for a, cmp, number in checks if a == attr)
        # the other resources this job needs some of: its heap's, shared with every job
        # that needs some of the same (a member with none of one left is dropped)
        self.floor = tuple(sorted({a for a, cmp, number in checks
                                   if a != attr and a in _KEYED and _needs_some(cmp, number)}))
        # the rest, checked against each member the heap hands out (failing: set aside)
        self.rest = tuple(c for c in checks if c[0] != attr)
        # the same as one call each (:func:`~roost.core.thresholds.passes_all`) of what
        # is left: ``own``, ``rest``, and both
        own_checks = tuple(c for c in checks if c[0] == attr)
        self.own_ok = passes_all(own_checks)
        self.rest_ok = passes_all(self.rest)
        self.passes = passes_all(own_checks + self.rest)
        # a check no slot passes (``thresholds._never``: the job takes nothing)
        self.never = any(cmp not in (operator.ge, operator.gt) for _, cmp, _ in checks)
        # (heap, its entries that fail these checks), out of the heap until ``restore``
        self.aside: dict[int, tuple[list[Any], list[Any]]] = {}
        self.heaps: dict[int, list[Any]] = {}  # base → the heap these checks read

    def restore(self) -> None:
        """Put back what :func:`best` set aside (call it before another job reads the heaps)."""
        for heap, entries in self.aside.values():
            for e in entries:
                heapq.heappush(heap, e)
        self.aside.clear()


def by_remaining(part: Partition, bid: int, attr: str,
                 floor: tuple[str, ...]) -> list[tuple[float, int, SlotView]]:
    """The heap of the base's members by (-remaining ``attr``, input index) for jobs
    that need some of each resource in ``floor`` (jobs alike in that share it), made on
    first use, for a base whose resources are all finite (``Partition.bfinite``)."""
    key = (bid, attr, floor)
    heap = part.bheaps.get(key)
    if heap is None:
        heap = part.bheaps[key] = [
            (-view.remaining[attr], view.index, view) for view in part.bmembers[bid]
        ]  # those that fail the checks are dropped when they come to the top
        heapq.heapify(heap)
    return heap


def best(part: Partition, bid: int, rc: RankedChecks) -> SlotView | None:
    """The base's member with the most of ``rc.attr`` left that passes the checks
    (ties: input order), None when no member does (nor will: the checks are lower bounds).
    Members that pass the heap's floor but not these checks are kept out of the heap
    until ``rc.restore()``."""
    if rc.never:
        return None
    attr, own_ok, floor, rest_ok = rc.attr, rc.own_ok, rc.floor, rc.rest_ok
    heap = rc.heaps.get(bid)
    if heap is None:
        heap = rc.heaps[bid] = by_remaining(part, bid, attr, floor)
    aside = None
    found = None
    replace, pop = heapq.heapreplace, heapq.heappop
    while heap:
        entry = heap[0]
        top = entry[2]
        rem = top.remaining
        left = rem[attr]
        if -left != entry[0]:  # carved since it was keyed: only ever lower
            replace(heap, (-left, entry[1], top))
            continue
        if not own_ok(rem):
            break  # the most left of it is not enough: nobody's is
        for a in floor:
            if rem[a] <= 0:
                pop(heap)  # none left: fails it for good, for every job of this heap
                break
        else:
            if rest_ok(rem):
                found = top
                break
            if aside is None:
                hit = rc.aside.get(id(heap))
                if hit is None:
                    hit = rc.aside[id(heap)] = (heap, [])
                aside = hit[1]
            aside.append(pop(heap))  # fails it for this job only
    return found


__all__ = ["RankedChecks", "best", "by_remaining"]
