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
"""

from __future__ import annotations

import heapq
from typing import Any

from roost.core.slotclasses import Partition, SlotView

# the checks a heap is kept for: a member that fails one is dropped for good; not
# Disk, which seldom runs out first (a member that fails it is only set aside)
_KEYED = frozenset(("Cpus", "GPUs", "Memory"))

Check = tuple[str, Any, float]  # (resource, comparison, number), as in ``Split.checks``


class RankedChecks:
    """A job's checks as :func:`best` reads them for a heap by ``attr``."""

    __slots__ = ("attr", "own", "keyed", "other")

    def __init__(self, attr: str, checks: tuple[Check, ...]) -> None:
        self.attr = attr
        # on ``attr`` itself: failing at the top of the heap, they fail for every member
        self.own = tuple((cmp, number) for a, cmp, number in checks if a == attr)
        self.keyed = tuple(c for c in checks if c[0] != attr and c[0] in _KEYED)
        self.other = tuple(c for c in checks if c[0] != attr and c[0] not in _KEYED)


def by_remaining(part: Partition, bid: int, attr: str,
                 keyed: tuple[Check, ...]) -> list[tuple[float, int, SlotView]]:
    """The heap of the base's members by (-remaining ``attr``, input index) for jobs
    whose dropping checks are ``keyed`` (jobs alike in those share it), made on first
    use, for a base whose resources are all finite (``Partition.bfinite``)."""
    key = (bid, attr, keyed)
    heap = part.bheaps.get(key)
    if heap is None:
        heap = part.bheaps[key] = [
            (-view.remaining[attr], view.index, view) for view in part.bmembers[bid]
        ]  # those that fail the checks are dropped when they come to the top
        heapq.heapify(heap)
    return heap


def best(part: Partition, bid: int, rc: RankedChecks) -> SlotView | None:
    """The base's member with the most of ``rc.attr`` left that passes the checks
    (ties: input order), None when no member does (nor will: the checks are lower bounds)."""
    attr, own, keyed, other = rc.attr, rc.own, rc.keyed, rc.other
    heap = part.bheaps.get((bid, attr, keyed)) or by_remaining(part, bid, attr, keyed)
    aside = []
    found = None
    while heap:
        neg, index, top = heap[0]
        rem = top.remaining
        left = rem[attr]
        if -left != neg:  # carved since it was keyed: only ever lower
            heapq.heapreplace(heap, (-left, index, top))
            continue
        short = False
        for cmp, number in own:
            if not cmp(left, number):
                short = True
                break
        if short:
            break  # the most left of it is not enough: nobody's is
        for a, cmp, number in keyed:
            if not cmp(rem[a], number):
                heapq.heappop(heap)  # fails it for good, and so for every job alike
                break
        else:
            for a, cmp, number in other:
                if not cmp(rem[a], number):
                    aside.append(heapq.heappop(heap))  # fails it for this job only
                    break
            else:
                found = top
                break
    for e in aside:
        heapq.heappush(heap, e)
    return found


__all__ = ["RankedChecks", "best", "by_remaining"]
