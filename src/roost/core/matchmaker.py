"""Matchmaking: slots and resource requests in, a plan of matches out.

A *request* is one autocluster of one submitter: a representative job ad and
how many jobs want a slot. For each submitter in the order given (fair
share, issue 5, decides that order and each submitter's limit), for each of
its requests in the schedd's order, every job is given the best slot that
is still free in this cycle's view:

- both Requirements hold (``symmetric match``), the slot is ``Unclaimed``
  (or ``Claimed`` and preemptable, when a :class:`PreemptionPolicy` is given);
- best means: not preempting before rank preemption before priority
  preemption; then highest ``NEGOTIATOR_PRE_JOB_RANK`` (evaluated in the
  slot against the job), then the job's ``Rank`` (in the job against the
  slot), then ``NEGOTIATOR_POST_JOB_RANK``, then (preempting only) highest
  ``PREEMPTION_RANK``; remaining ties go to the slot that came first in the
  input (the negotiator sorts by name, so cycles are reproducible).
  Non-numeric ranks count as 0, as in HTCondor. (HTCondor puts the
  preemption level after the three job ranks and relies on its default
  pre-job rank to prefer idle slots; roost has no such default, so the level
  comes first: an idle slot is never passed over for a preemption.)
- a static slot takes one job; a partitionable slot (``PartitionableSlot``)
  takes jobs while its remaining Cpus/Memory/Disk/GPUs cover the request.
  The view's copy of its ad has those attributes lowered after each match,
  so Requirements that read ``TARGET.Memory`` see what is left, as the
  startd will when it carves dynamic slots; what is left stays on offer to
  later requests of the cycle.
- ``limits`` are slot weight (``SlotWeight``, default ``Cpus``; for a
  partitionable slot the Cpus a job takes); concurrency limits
  (:class:`~roost.core.concurrency.ConcurrencyLimits`) cap the jobs that name
  a license.

Why it is fast: slots that agree on every value a request can read are one
class (:mod:`roost.core.slotclasses`), evaluated once; between calls on one
pool (the pie's spins) each request ad keeps its classes' answers and the list
of classes still worth offering, and a request whose weight limit is below its
lightest possible match is not tried at all. A job that reads its resources
only as thresholds (:mod:`roost.core.thresholds`) is evaluated once per *base*
and compares numbers for each carved slot, and when its ranks are constant per
base each base is scanned in input order instead of offering every carved
class (``offer_base`` in :meth:`SlotPool.match_request`); when its Rank is what is
left of one resource (``TARGET.Memory``), each base is read off a heap of its
members by that resource (:mod:`roost.core.rankheaps`). A request that keeps
taking jobs from one slot, or from one such base, takes them in a run
(``_same_slot_run``, ``_ranked_run``) while nothing in its heap is better, and an offer
better than the whole heap waits beside it (``ahead``): the order of pushing
and popping each, without doing so (``SlotPool.shortcuts``). Non-numeric and NaN
ranks count as 0, as in HTCondor, so sort keys are totally ordered.

Pure: ads in, :class:`Plan` out; no clock (``now`` is passed in), no I/O.
:class:`SlotPool` keeps the per-cycle view so a caller can spin the pie
several times (issue 5) without rebuilding it.

Size: one hot loop. ``match_request`` and its runs read and write the same
per-cycle state (the slot view, the heaps, the entry ahead of them) in the inner
loop of every negotiation; the parts that stand alone are their own modules
already (slot classes, thresholds, rank heaps, conjuncts, requirement steps).
"""

from __future__ import annotations

import functools
import gc
import heapq
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from roost.classad import ClassAd
from roost.classad.ast import Literal, Node
from roost.classad.evaluate import EvaluationFailed, evaluate, matches
from roost.core.concurrency import ConcurrencyLimits, concurrency_room, parse_concurrency_limits
from roost.core.matchvalues import attr_value, rank_number, truthy, value_of
from roost.core.preemption import (
    NO_PREEMPTION,
    PreemptionPolicy,
    preemption_key,
    preemption_kind,
)
from roost.core.rankheaps import RankedChecks, best
from roost.core.slotclasses import (
    LOWER_RESOURCES,
    RESOURCE_NAMES,
    RESOURCES,
    Answers,
    BaseRef,
    Partition,
    SlotClass,
    SlotClasses,
    SlotView,
    first_free,
    on_offer,
)
from roost.core.thresholds import Split, passes_all, split_of
from roost.vocabulary import SlotState

_EPS = 1e-9


def _no_checks(rem: Mapping[str, float]) -> bool:
    """The checks of a job without a :class:`Split`: none."""
    return True


@dataclass(slots=True)
class Slot:
    """A slot as the negotiator sees it: its ad, the claim id to hand out, where its startd is."""

    name: str
    ad: ClassAd
    claim_id: str | None = None
    address: str | None = None
    extra: Any = None  # the caller's own handle (e.g. the wire form of the ad)


@dataclass(slots=True)
class Request:
    """One autocluster of one submitter."""

    submitter: str
    autocluster: Any
    count: int
    ad: ClassAd
    extra: Any = None  # the caller's handle (e.g. the schedd address)


@dataclass(slots=True)
class Match:
    request: Request
    slot: Slot
    rank: tuple[float, float, float]
    resources: dict[str, float]  # what this match takes from a partitionable slot
    weight: float = 1.0  # slot weight: SlotWeight (default Cpus); a partitionable slot's Cpus taken
    preempts: bool = False  # the slot is Claimed: the running job is preempted

    @property
    def submitter(self) -> str:
        return self.request.submitter


@dataclass
class Plan:
    """The cycle's result: matches in decision order, plus what could not be served."""

    matches: list[Match] = field(default_factory=list)
    unmatched: dict[tuple[str, Any], int] = field(default_factory=dict)  # (submitter, ac) → jobs
    by_submitter: dict[str, int] = field(default_factory=dict)  # matches
    weight_by_submitter: dict[str, float] = field(default_factory=dict)  # slot weight matched
    concurrency_used: dict[str, float] = field(default_factory=dict)  # limit name → consumed
    # negotiate_fair with groups: weight each group's own submitters may hold this cycle
    # (surplus included) and hold at its end, keys lower case (``<none>``: no group)
    group_quota: dict[str, float] = field(default_factory=dict)
    group_held: dict[str, float] = field(default_factory=dict)
    evaluations: int = 0  # symmetric matches tried (one per slot class)
    now: float = 0.0


def _fixed_request(job: ClassAd) -> dict[str, float] | None:
    """What ``job`` asks of a partitionable slot when that cannot depend on the slot
    (every Request* a number or absent); None otherwise."""
    out = {}
    attrs = job._attrs
    for attr, req_attr, default in LOWER_RESOURCES:
        node = attrs.get(req_attr)
        if node is None:
            out[RESOURCE_NAMES[attr]] = float(default)
        elif type(node) is Literal and type(node.value) in (int, float):
            out[RESOURCE_NAMES[attr]] = float(node.value)
        else:
            return None
    return out


def _requested(job: ClassAd, slot_ad: ClassAd) -> dict[str, float]:
    out = {}
    for attr, req_attr, default in RESOURCES:
        node = job._attrs.get(req_attr.lower())
        if node is None:
            out[attr] = float(default)
            continue
        try:
            v = evaluate(node, job, slot_ad)
        except EvaluationFailed:
            v = None
        out[attr] = float(v) if type(v) in (int, float) else float(default)
    return out


def _may_fit(job: ClassAd, group: tuple[str, bool, bool]) -> bool:
    """False when no partitionable slot of ``group`` can take ``job``: it asks for
    Cpus (Memory) and the group has none left. Request* expressions that are not
    constants (they may read the slot) never rule a group out."""
    _, cpus_left, memory_left = group
    attrs = job._attrs
    for left, attr, default in ((cpus_left, "requestcpus", 1), (memory_left, "requestmemory", 0)):
        if left:
            continue
        node = attrs.get(attr)
        if node is None:
            amount = default
        elif type(node) is Literal and type(node.value) in (int, float):
            amount = node.value
        else:
            return True
        if amount > 0:
            return False
    return True


def _fits(view: SlotView, amounts: dict[str, float]) -> bool:
    rem = view.remaining
    for attr, amount in amounts.items():
        if amount > 0 and rem[attr] < amount:
            return False
    return amounts.get("Cpus", 1.0) > 0 or amounts.get("Memory", 0.0) > 0


class SlotPool:
    """The slots of one cycle and what has been promised of them so far."""

    # False: every offer goes through the heap and every job is one pop (the ``ahead``
    # entry and the same-slot runs of :meth:`match_request` off): the plain path the
    # differential tests compare with (tests/unit/core/test_matchmaker_shortcuts.py)
    shortcuts = True

    def __init__(
        self,
        slots: Iterable[Slot],
        *,
        pre_job_rank: Node | None = None,
        post_job_rank: Node | None = None,
        preemption: PreemptionPolicy | None = None,
    ) -> None:
        consider = preemption is not None and preemption.consider
        self.views: list[SlotView] = []
        # the lightest one-job slot: a limit below it (and below the job's Cpus on a
        # partitionable slot) can match nothing, so such a request is not evaluated
        self._light: list[tuple[float, int, SlotView]] = []
        has_claimed = has_partitionable = nan_weight = False
        free = 0
        for i, s in enumerate(slots):  # the views, and what the pool says of them
            state = attr_value(s.ad, "state")
            if state == SlotState.UNCLAIMED:
                v = SlotView(s, i, False)
            elif consider and state == SlotState.CLAIMED:
                v = SlotView(s, i, True)
                has_claimed = True
            else:
                continue
            self.views.append(v)
            if v.partitionable:
                has_partitionable = True
            else:
                self._light.append((v.weight, i, v))
                nan_weight = nan_weight or math.isnan(v.weight)
            free += on_offer(v)
        self.pre_job_rank = pre_job_rank
        self.post_job_rank = post_job_rank
        self.preemption = preemption
        self._has_claimed = has_claimed
        self._has_partitionable = has_partitionable
        heapq.heapify(self._light)  # lazily pruned of used views
        self._nan_weight = nan_weight
        self._free = free
        # Per request ad (ads must not change while the pool is in use): id(job) →
        # (job, its fixed request, its readable names, its constant sort key, the
        # least weight a partitionable slot's match of it can have, its Split)
        self._jobs: dict[int, tuple[ClassAd, dict[str, float] | None, Any, Any, float, Any]] = {}
        self._ways: dict[int, tuple[Any, ...]] = {}  # id(job) → ``_way(job)``
        # (id(job), submitter prio) → Answers: a class key holds every value the
        # evaluation can read, so a class's answer stands for the rest of the cycle
        self._results: dict[tuple[int, float | None], Answers] = {}
        self.evaluations = 0
        self.concurrency_used: dict[str, float] = {}  # consumed in this cycle, all passes
        extra: list[Node | None] = [pre_job_rank, post_job_rank]
        if consider:
            extra += [preemption.requirements, preemption.rank]  # type: ignore[union-attr]
        self.classes = SlotClasses(self.views, extra, consider)

    # -- evaluation -------------------------------------------------------------

    def _candidate(
        self,
        request: Request,
        view: SlotView,
        prio: float | None,
        fixed: dict[str, float] | None = None,
        split: Split | None = None,
        by_base: dict[int, Any] | None = None,
        part: Partition | None = None,
    ) -> tuple[tuple[Any, ...], tuple[float, float, float], dict[str, float], float, bool] | None:
        """(sort key, ranks, amounts, weight, preempts) of ``view`` for the request, or None.
        ``fixed``: the job's request when it cannot depend on the slot. ``split``, with
        the request's answers by base (``by_base``) in ``part``: see :class:`Split`."""
        job = request.ad
        if (split is not None and view.partitionable and view.numeric
                and split.reads.isdisjoint(view.absent)):
            bid = part.bid[view.index]  # type: ignore[union-attr]
            known = by_base.get(bid, False)  # type: ignore[union-attr]
            if known is None:
                return None  # the base cannot take the job, whatever is left of the slot
            rem = view.remaining
            if not split.passes(rem):
                return None
            if known is False:
                known = by_base[bid] = self._base_answer(job, view.ad, split, fixed)  # type: ignore[index,arg-type]
            if known is None or split.ranked:
                return known
            rank_of = split.rank_of
            if rank_of is None:
                ranks = self._ranks(job, view.fresh_ad() if view.stale else view.ad)
                r1, r2, r3 = ranks
            else:  # the job's Rank is what is left of a resource; the others are numbers
                r1, res, r3 = rank_of
                r2 = rem[res]
                if r2 != r2:  # a NaN resource ranks as 0 (``rank_number``)
                    r2 = 0.0
                ranks = (r1, r2, r3)
            return (NO_PREEMPTION, -r1, -r2, -r3, 0.0), ranks, known[2], known[3], False
        if fixed is not None and view.partitionable and not _fits(view, fixed):
            return None  # what the full check below would find, without evaluating
        ad = view.fresh_ad() if view.stale else view.ad
        self.evaluations += 1
        if not (matches(ad, job) and matches(job, ad)):
            return None
        amounts: dict[str, float] = {}
        weight = view.weight
        if view.partitionable:
            if fixed is not None:
                amounts = dict(fixed)  # fits: checked above
            else:
                amounts = _requested(job, ad)
                if not _fits(view, amounts):
                    return None
            weight = amounts["Cpus"]
        level, prank = NO_PREEMPTION, 0.0
        if view.claimed:
            kind = preemption_kind(self.preemption, ad, job, request.submitter, prio)
            if kind is None:
                return None
            level, prank = preemption_key(self.preemption, kind, ad, job)
        r1, r2, r3 = self._ranks(job, ad)
        return (level, -r1, -r2, -r3, prank), (r1, r2, r3), amounts, weight, view.claimed

    def _base_answer(self, job: ClassAd, ad: ClassAd, split: Split,
                     fixed: dict[str, float]) -> Any:
        """The candidate every fitting slot of ``ad``'s base is for a :class:`Split`
        job (its ranks only when they read no resource), or None. ``ad``'s resources
        may be stale: nothing evaluated here reads them."""
        self.evaluations += 1
        if split.rest is None:
            ok = matches(ad, job) and matches(job, ad)
        else:
            ok = matches(ad, job) and all(truthy(value_of(c, job, ad)) for c in split.rest)
        if not ok:
            return None
        ranks = self._ranks(job, ad) if split.ranked else (0.0, 0.0, 0.0)
        r1, r2, r3 = ranks
        return (NO_PREEMPTION, -r1, -r2, -r3, 0.0), ranks, dict(fixed), fixed["Cpus"], False

    def _ranks(self, job: ClassAd, ad: ClassAd) -> tuple[float, float, float]:
        """NEGOTIATOR_PRE_JOB_RANK, the job's Rank, NEGOTIATOR_POST_JOB_RANK of ``ad``."""
        return (rank_number(self.pre_job_rank, ad, job),
                rank_number(job._attrs.get("rank"), job, ad),
                rank_number(self.post_job_rank, ad, job))

    def _constant_key(self, job: ClassAd) -> tuple[Any, ...] | None:
        """The sort key every candidate of ``job`` has when no rank can differ between
        slots (constant ranks, nothing to preempt); None otherwise. Then the best slot
        is the first one in input order that matches, and classes are evaluated
        lazily in that order, only until the request is served."""
        if self._has_claimed:
            return None
        rank = job._attrs.get("rank")
        for node in (self.pre_job_rank, rank, self.post_job_rank):
            if node is not None and type(node) is not Literal:
                return None
        r1 = rank_number(self.pre_job_rank, job, None)
        r2 = rank_number(rank, job, None)
        r3 = rank_number(self.post_job_rank, job, None)
        return (NO_PREEMPTION, -r1, -r2, -r3, 0.0)

    def _job_info(
        self, job: ClassAd
    ) -> tuple[ClassAd, dict[str, float] | None, Any, Any, float, Split | None]:
        info = self._jobs.get(id(job))
        if info is None or info[0] is not job:
            fixed = _fixed_request(job)
            light = math.inf
            if self._has_partitionable:
                light = fixed["Cpus"] if fixed is not None else -math.inf
            names = self.classes.readable(job)
            split = None
            if names is not None and self._has_partitionable:
                split = split_of(job, fixed, self.classes, self.pre_job_rank, self.post_job_rank)
            info = self._jobs[id(job)] = (
                job, fixed, names, self._constant_key(job), light, split
            )
        return info

    def _lightest(self, job: ClassAd) -> float:
        """No match of ``job`` can weigh less (-inf: cannot tell)."""
        if self._nan_weight:
            return -math.inf
        return min(self._lightest_static(), self._job_info(job)[4])

    def _lightest_static(self) -> float:
        light = self._light
        while light and light[0][2].used:
            heapq.heappop(light)
        return light[0][0] if light else math.inf

    def _run(self, *args: Any) -> tuple[int, float]:
        """:func:`_same_slot_run` (a method, so a test's pool can count what it takes)."""
        return _same_slot_run(self, *args)

    def match_request(
        self,
        request: Request,
        limit: int | None = None,
        *,
        weight_limit: float | None = None,
        submitter_prio: float | None = None,
    ) -> list[Match]:
        """Give up to ``min(request.count, limit)`` jobs of one request their best slots,
        taking no more than ``weight_limit`` slot weight (a slot heavier than what is
        left is passed over for a lighter one). ``submitter_prio`` is the submitter's
        effective priority for priority preemption (default: the job's
        ``SubmitterUserPrio``)."""
        want = request.count if limit is None else min(request.count, limit)
        if want <= 0:
            return []
        job = request.ad
        prio = submitter_prio
        if prio is None and self.preemption is not None:
            v = attr_value(job, "submitteruserprio")
            prio = float(v) if type(v) in (int, float) else None
        budget = math.inf if weight_limit is None else weight_limit + _EPS
        _, fixed, names, const, _, split = self._job_info(job)
        if budget < math.inf and self._lightest(job) > budget:
            return []  # every candidate would be too heavy for the limit
        way = self._ways.get(id(job))
        if way is None or way[0] is not job:
            way = self._ways[id(job)] = _way(self, job, names, split)
        _, part, split, scan, scanned, ranked_by, rank_attr, cursors, rchecks = way
        # the classes of scanned bases are not offered: their members wait to be placed
        self.classes.catch_up(part, scanned)
        based: dict[int, SlotView] = {}  # views taken through a base's entry, not yet placed
        answers: Answers | None = None
        by_base: dict[int, Any] | None = None
        if part.names is None:
            results: dict[int, Any] = {}
        else:
            ck = (id(job), prio)
            answers = self._results.get(ck)
            if answers is None or answers.job is not job:
                answers = self._results[ck] = Answers(job)
            elif answers.maybe == [] and answers.seen == len(part.born) and (
                answers.dry or split is None or not split.monotone
            ):
                return []  # no class could take it last time, and no class is new
            results = answers.by_kid
            by_base = answers.by_base
        offered: dict[SlotClass, None] = {}
        of = part.of
        queued: dict[Any, int] = {}  # class or base → input index of its entry in the heap
        heap: list[tuple[Any, ...]] = []
        serial = 0
        used_weight = 0.0
        ahead: tuple[Any, ...] | None = None  # an entry better than all the heap's (see push)
        shortcuts = self.shortcuts

        def push(entry: tuple[Any, ...]) -> None:
            """Into the heap; but an entry better than all of it is kept aside as ``ahead``,
            the next one out: the same order as pushing it and popping it at once (keys
            are totally ordered, ties go by serial), without the two heap walks."""
            nonlocal ahead
            if filling:
                heap.append(entry)
            elif not shortcuts:
                heapq.heappush(heap, entry)
            elif ahead is None:
                if heap and heap[0] < entry:
                    heapq.heappush(heap, entry)
                else:
                    ahead = entry
            elif entry < ahead:
                heapq.heappush(heap, ahead)
                ahead = entry
            else:
                heapq.heappush(heap, entry)

        def offer(cls: SlotClass) -> None:
            nonlocal serial
            offered[cls] = None
            res = results.get(cls.kid, False)
            if res is None:  # this class cannot take the job: its members need not be looked at
                return
            members = cls.members  # the class's first free member (``_head``, inlined)
            while members:
                head = members[0][1]
                if not head.used and of.get(head.index) is cls:
                    break
                heapq.heappop(members)
            else:
                return
            if res is False and const is None:
                res = results[cls.kid] = self._candidate(
                    request, head, prio, fixed, split, by_base, part
                )
            if res is None:
                return
            if res is not False and used_weight + res[3] > budget:
                return
            if queued.get(cls, -1) == head.index:
                return
            queued[cls] = head.index
            serial += 1
            entry = (const if res is False else res[0], head.index, serial, cls)
            push(entry)

        checks = split.checks if split is not None else ()
        passes = split.passes if split is not None else _no_checks
        if answers is None:
            cursors = {}
        bmembers, bnext = part.bmembers, part.bnext
        skip_spent = split is not None and split.cpus
        tops: dict[int, tuple[SlotView, Any]] = {}  # base → its member on offer, as a candidate

        def offer_best(bid: int, res: Any) -> bool:
            """Offer the base's member with the most of ``rank_attr`` left that passes the
            checks; False: none does."""
            nonlocal serial
            view = best(part, bid, rchecks)  # type: ignore[arg-type]
            if view is None:
                return False
            if used_weight + res[3] > budget:
                return True
            ref = part.brefs[bid]
            if queued.get(ref, -1) == view.index:
                return True
            queued[ref] = view.index
            r1, _, r3 = split.rank_of  # type: ignore[union-attr,misc]
            left = view.remaining[rank_attr]
            ranks = (r1, left, r3)
            tops[bid] = (view, ((NO_PREEMPTION, -r1, -left, -r3, 0.0), ranks, *res[2:]))
            serial += 1
            entry = (tops[bid][1][0], view.index, serial, ref)
            push(entry)
            return True

        def offer_base(bid: int) -> bool:
            """Offer the base's first member that passes the checks; False: none does."""
            nonlocal serial
            members = bmembers[bid]
            res = by_base.get(bid, False)  # type: ignore[union-attr]
            if res is False:
                res = by_base[bid] = self._base_answer(  # type: ignore[index]
                    job, members[0].ad, split, fixed  # type: ignore[arg-type]
                )
            if res is None:
                return False
            if ranked_by:
                return offer_best(bid, res)
            pos, n = cursors.get(bid, 0), len(members)
            nxt = bnext[bid] if skip_spent else None
            while True:
                if nxt is not None:
                    while nxt[pos] != pos:  # path halving
                        nxt[pos] = nxt[nxt[pos]]
                        pos = nxt[pos]
                if pos >= n:
                    break
                rem = members[pos].remaining
                if nxt is not None and rem["Cpus"] <= 0:
                    nxt[pos] = pos + 1  # spent: every job that asks for Cpus skips it
                    continue
                if passes(rem):
                    break
                pos += 1
            cursors[bid] = pos
            if pos == n:
                return False
            if used_weight + res[3] > budget:
                return True
            index = members[pos].index
            ref = part.brefs[bid]
            if queued.get(ref, -1) == index:
                return True
            queued[ref] = index
            serial += 1
            entry = (res[0], index, serial, ref)
            push(entry)
            return True

        filling = True  # the first offers are heapified at once
        if (
            answers is not None
            and answers.maybe is not None
            and len(answers.maybe) + len(part.born) - answers.seen < len(part.classes)
        ):  # the other classes answered None (or cannot fit the job) last time
            for cls in answers.maybe:
                if cls.alive:
                    offer(cls)
            for cls in part.born[answers.seen:]:
                if cls.alive and (
                    cls.group == "s" or (cls.bid not in scanned and _may_fit(job, cls.group))
                ):
                    offer(cls)
        else:
            for group, classes in part.groups.items():
                if group == "s":
                    for cls in classes.values():
                        offer(cls)
                elif _may_fit(job, group):
                    for cls in classes.values():
                        if cls.bid not in scanned:
                            offer(cls)
        found = False
        for bid in scan:
            found = offer_base(bid) or found
        heapq.heapify(heap)
        filling = False
        out: list[Match] = []
        while len(out) < want:
            if ahead is not None:
                entry, ahead = ahead, None
            elif heap:
                entry = heapq.heappop(heap)
            else:
                break
            obj = entry[-1]
            idx = entry[-3]
            if queued.get(obj) != idx:
                continue
            del queued[obj]
            if type(obj) is BaseRef:
                bid = obj.bid
                if ranked_by:
                    view, res = tops[bid]
                else:
                    view = bmembers[bid][cursors[bid]]
                    res = by_base[bid]  # type: ignore[index]
                if view.index != idx:  # cannot happen: nothing else takes from this base
                    offer_base(bid)
                    continue
            else:
                cls: SlotClass = obj
                view = first_free(part, cls)  # type: ignore[assignment]
                if view is None:
                    continue
                if view.index != idx:
                    offer(cls)
                    continue
                res = results.get(cls.kid, False)
                if res is False:  # constant ranks: evaluated only when its turn comes
                    res = results[cls.kid] = self._candidate(
                        request, view, prio, fixed, split, by_base, part
                    )
                if res is None:
                    continue
            _, ranks, amounts, weight, preempts = res
            if used_weight + weight > budget:
                continue  # this class is too heavy for what is left; lighter ones may do
            used_weight += weight
            out.append(Match(request, view.slot, ranks, amounts, weight, preempts))
            if view.partitionable:  # never used nor claimed: ``on_offer``, inlined
                rem = view.remaining
                was = rem["Cpus"] > 0 or rem["Memory"] > 0
                view.take(amounts)
                self._free -= was - (rem["Cpus"] > 0 or rem["Memory"] > 0)
            else:
                self._free -= on_offer(view)  # it was on offer unless claimed; now it is not
                view.used = True
            self.classes.changes.append(view)
            if type(obj) is BaseRef:
                based[view.index] = view  # its class is brought up to date below
                if len(out) >= want:
                    # served: a run would take nothing, and the base's next entry would
                    # never come out (offering it again only moves its cursor, or sorts
                    # its heap, which the next call that reads it does as well)
                    break
                if not shortcuts:
                    pass
                elif ranked_by:
                    serial, used_weight = _ranked_run(
                        self, out, want, request, part, obj.bid, rchecks, res, heap, serial,
                        used_weight, budget, based,
                    )
                else:
                    serial, used_weight = self._run(
                        out, want, request, view, res, checks, skip_spent, heap, serial,
                        used_weight, budget,
                    )
                offer_base(obj.bid)
                continue
            new = self.classes.place(part, view)
            offer(cls)
            if new is not None and new is not cls:
                offer(new)
        # Every change of this call is one of its matches: those of the class path were
        # placed as they happened, and the others wait for a caller that needs their
        # classes, so ``part`` is up to date (the next ``partition`` need not place
        # every match again).
        if rchecks is not None:
            rchecks.restore()
        bid_of, deferred = part.bid, part.deferred
        for index, view in based.items():  # ``SlotClasses.defer``, inlined
            bid = bid_of[index]
            waiting = deferred.get(bid)
            if waiting is None:
                waiting = deferred[bid] = {}
            waiting[index] = view
        part.cursor = len(self.classes.changes)
        if answers is not None:
            answers.maybe = [  # dead classes are dropped when next met
                c for c in offered if results.get(c.kid, False) is not None
            ]
            answers.seen = len(part.born)
            answers.dry = not found
        return out

    def free_slots(self) -> int:
        """Unclaimed slots still on offer (partitionable ones while Cpus or Memory is left)."""
        return self._free


def _same_slot_run(
    pool: SlotPool, out: list[Match], want: int, request: Request, view: SlotView, res: Any,
    checks: tuple[Any, ...], skip_spent: bool, heap: list[tuple[Any, ...]], serial: int,
    used: float, budget: float,
) -> tuple[int, float]:
    """More jobs of ``request`` on ``view``, right after one went there, for a split job
    with constant ranks (a base entry, input order): offering the base again would
    offer ``view`` while it passes the checks, and the heap would hand it straight
    back while nothing in it is better, so it takes the next job at once. Returns
    the serial and weight used so far, as if each had been pushed and popped."""
    key, ranks, amounts, weight, preempts = res
    index, rem, slot = view.index, view.remaining, view.slot
    changes = pool.classes.changes
    top = heap[0] if heap else None
    # whether (key, index, serial) beats the top: decided by (key, index) alone unless
    # those equal the top's (None: compare in full each time)
    beats: bool | None = True
    if top is not None:
        head = (key, index)
        tail = (top[0], top[1])
        beats = True if head < tail else False if head > tail else None
    lowered = [(a, x) for a, x in amounts.items() if x != 0]  # ``view.take``, inlined
    passes = passes_all(checks)
    was = rem["Cpus"] > 0 or rem["Memory"] > 0
    taken = 0
    while len(out) < want:
        if skip_spent and rem["Cpus"] <= 0:
            break
        if passes(rem):
            # ``view`` came out as the heap's least entry and its key does not change,
            # so the top stays above it (unless another entry of this slot were queued)
            if used + weight > budget or not (
                beats if beats is not None else (key, index, serial + 1) < top  # type: ignore[operator]
            ):
                break
            serial += 1
            used += weight
            out.append(Match(request, slot, ranks, amounts, weight, preempts))
            for a, x in lowered:
                rem[a] -= x
            changes.append(view)
            taken += 1
            continue
        break
    if taken and lowered:
        view.touched.update(a for a, _ in lowered)
        view.carved = view.stale = True
    pool._free -= was - (rem["Cpus"] > 0 or rem["Memory"] > 0)  # the takes' sum
    return serial, used


def _ranked_run(
    pool: SlotPool, out: list[Match], want: int, request: Request, part: Partition, bid: int,
    rc: RankedChecks, res: Any, heap: list[tuple[Any, ...]], serial: int, used: float,
    budget: float, based: dict[int, SlotView],
) -> tuple[int, float]:
    """More jobs of ``request`` from base ``bid``, right after one went there, for a
    split job ranked by what is left of ``rc.attr``: each the base's best member
    (:func:`~roost.core.rankheaps.best`), taken at once while it beats the heap's top,
    which is what offering it and popping the heap would do. The member just taken
    from is re-keyed at once, and when the base heap's top is then current and
    passes the checks it is what ``best`` would find, without asking it."""
    _, (r1, _, r3), amounts, weight, preempts = res  # r1, r3: pre- and post-job ranks
    attr, changes = rc.attr, pool.classes.changes
    passes = rc.passes  # ``own`` and ``rest`` in one call
    append, change = out.append, changes.append
    room = want - len(out)  # jobs still to place
    freed = 0  # views that went off offer (``pool._free``)
    top = heap[0] if heap else None
    # the top's key, when its preemption level and pre-job rank are this job's: then
    # the job's Rank alone (``-left``) decides against it, unless the two are equal
    rank_top = None
    if top is not None and top[0][0] == NO_PREEMPTION and top[0][1] == -r1:
        rank_top = top[0][2]
    lowered = [(a, x) for a, x in amounts.items() if x != 0]
    names = [a for a, _ in lowered]
    bheap = rc.heaps.get(bid)
    replace = heapq.heapreplace
    while room > 0:
        view = None
        if bheap:  # ``best``'s first look, inlined
            neg, index, view = bheap[0]
            rem = view.remaining
            left = rem[attr]
            if -left != neg or not passes(rem):
                view = None
        if view is None:
            view = best(part, bid, rc)
            if view is None:
                break
            bheap = rc.heaps[bid]
            rem = view.remaining
            left = rem[attr]
            index = view.index
        if used + weight > budget:
            break
        if top is not None:
            if rank_top is not None and -left < rank_top:
                pass
            elif rank_top is not None and -left > rank_top:
                break
            elif not ((NO_PREEMPTION, -r1, -left, -r3, 0.0), index, serial + 1) < top:
                break
        serial += 1
        used += weight
        room -= 1
        append(Match(request, view.slot, (r1, left, r3), amounts, weight, preempts))
        was = rem["Cpus"] > 0 or rem["Memory"] > 0
        if lowered:  # ``view.take``, inlined
            for a, x in lowered:
                rem[a] -= x
            view.touched.update(names)
            view.carved = view.stale = True
            replace(bheap, (-rem[attr], index, view))  # it is the heap's top
        freed += was - (rem["Cpus"] > 0 or rem["Memory"] > 0)
        change(view)
        based[index] = view
    pool._free -= freed
    return serial, used


def _way(pool: SlotPool, job: ClassAd, names: Any, split: Split | None) -> tuple[Any, ...]:
    """How :meth:`match_request` reads the pool for ``job``, the same every call (a
    partition's bases are all known once it is made): (job, its partition, its
    Split, the bases it scans, those as a set, whether it is ranked by what is left
    of ``rank_attr``, rank_attr, the cursors of its checks, its RankedChecks)."""
    part = pool.classes.partition(job, names, catch_up=False)
    if part.names is None:  # no classes (maybe random()): evaluated afresh each time
        split = None
    # A split job with constant ranks and lower-bound checks takes, from each base
    # whose slots all have number resources, the first slot in input order that
    # passes its checks: the base stands in the heap for all its classes, and a
    # per-base cursor skips the slots that failed for good (carving only lowers).
    scan: list[int] = []
    # A split job ranked by what is left of one resource (``Rank = TARGET.Memory``)
    # takes, from each such base, its member with the most of it left that passes
    # the checks (ties: input order), read off the base's heap by that resource
    # (:mod:`roost.core.rankheaps`) instead of offering one class per carved slot.
    ranked_by = False
    rank_attr = ""
    if split is not None and split.monotone and (split.ranked or split.rank_of is not None):
        scan = [b for b, numeric in part.bnumeric.items()
                if numeric and split.reads.isdisjoint(part.babsent[b])]
        if not split.ranked:
            ranked_by = True
            rank_attr = split.rank_of[1]  # type: ignore[index]
            scan = [b for b in scan if part.bfinite[b]]
    checks = split.checks if split is not None else ()
    # members before a base's cursor fail these checks for good: jobs alike share it
    cursors = part.bcursors.setdefault(checks, {}) if part.names is not None else None
    rchecks = RankedChecks(rank_attr, checks) if ranked_by else None
    return (job, part, split, scan, frozenset(scan), ranked_by, rank_attr, cursors, rchecks)


def takes_nothing(pool: SlotPool, job: ClassAd, submitter_prio: float | None = None) -> bool:
    """True when ``pool.match_request`` of a request of ``job`` (for a submitter of
    ``submitter_prio``, no weight limit) would return no match without looking at a
    slot: its last call found no class that could take it, none is new, and nothing
    has changed since that its partition has not caught up with. False when that is
    not known (the call then decides)."""
    info = pool._jobs.get(id(job))
    way = pool._ways.get(id(job))
    if info is None or info[0] is not job or way is None or way[0] is not job:
        return False
    part, split, scanned = way[1], way[2], way[4]
    if part.names is None or part.cursor != len(pool.classes.changes):
        return False
    if any(bid not in scanned for bid in part.deferred):
        return False  # the call would place those members first (maybe new classes)
    prio = submitter_prio
    if prio is None and pool.preemption is not None:
        v = attr_value(job, "submitteruserprio")
        prio = float(v) if type(v) in (int, float) else None
    answers = pool._results.get((id(job), prio))
    if answers is None or answers.job is not job:
        return False
    return answers.maybe == [] and answers.seen == len(part.born) and (
        answers.dry or split is None or not split.monotone
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def gc_paused(func: _F) -> _F:
    """Run ``func`` with the cyclic garbage collector off (and back on after, if it was).

    A cycle allocates a few million short-lived tuples, dicts and matches, nearly
    all freed by reference counting; each allocation burst made the collector walk
    every object alive (the slot ads and their expression trees) again, about a
    third of a cycle's time. Nothing here makes cycles, so the pause loses nothing.
    The collector is process-wide: other threads' cyclic garbage waits for the
    cycle to end."""

    @functools.wraps(func)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return paused  # type: ignore[return-value]


@gc_paused
def negotiate(
    slots: Iterable[Slot],
    requests_by_submitter: Mapping[str, Sequence[Request]],
    submitter_order: Sequence[str],
    now: float,
    *,
    limits: Mapping[str, float] | None = None,
    pre_job_rank: Node | None = None,
    post_job_rank: Node | None = None,
    pool: SlotPool | None = None,
    concurrency: ConcurrencyLimits | None = None,
    preemption: PreemptionPolicy | None = None,
    submitter_prio: Mapping[str, float] | None = None,
) -> Plan:
    """One negotiation pass: each submitter in ``submitter_order`` gets, request by
    request, the best free slots, up to ``limits[submitter]`` slot weight (no limit
    when absent). Pass ``pool`` to continue a previous pass over the same slots (its
    own ranks and preemption policy then apply; ``slots`` is ignored).

    ``concurrency``: jobs whose ``ConcurrencyLimits`` no longer fit are not
    matched; what matches consume is in ``Plan.concurrency_used`` (and counted in
    ``pool.concurrency_used`` for later passes). ``preemption``: claimed slots are
    candidates too (see :mod:`roost.core.preemption`); ``submitter_prio`` maps a
    submitter to its effective priority (default: each job's ``SubmitterUserPrio``).
    """
    if pool is None:
        pool = SlotPool(
            slots, pre_job_rank=pre_job_rank, post_job_rank=post_job_rank, preemption=preemption
        )
    plan = Plan(now=now)
    before = pool.evaluations
    # a lower bound on the free one-job slots' weight (it only grows while we match)
    static = -math.inf if pool._nan_weight else pool._lightest_static()
    jobs = pool._jobs
    for submitter in submitter_order:
        limit = None if limits is None else limits.get(submitter)
        prio = None if submitter_prio is None else submitter_prio.get(submitter)
        got = 0
        weight = 0.0
        for request in requests_by_submitter.get(submitter, ()):
            if limit is not None:
                ad = request.ad
                info = jobs.get(id(ad))
                if info is None or info[0] is not ad:
                    info = pool._job_info(ad)
                light = info[4] if info[4] < static else static
                skip = weight >= limit + _EPS or light > (limit - weight) + _EPS
            else:
                skip = False
            if skip:  # match_request would find nothing light enough
                if request.count > 0:
                    plan.unmatched[(submitter, request.autocluster)] = request.count
                continue
            count_limit: int | None = None
            needs: dict[str, float] | None = {}
            if concurrency is not None:
                needs = parse_concurrency_limits(attr_value(request.ad, "concurrencylimits"))
                count_limit = 0 if needs is None else concurrency_room(
                    needs, concurrency, pool.concurrency_used
                )
            ms = pool.match_request(
                request,
                count_limit,
                weight_limit=None if limit is None else limit - weight,
                submitter_prio=prio,
            )
            got += len(ms)
            for m in ms:
                weight += m.weight
            plan.matches.extend(ms)
            if ms and needs:
                for name, amount in needs.items():
                    total = amount * len(ms)
                    plan.concurrency_used[name] = plan.concurrency_used.get(name, 0.0) + total
                    pool.concurrency_used[name] = pool.concurrency_used.get(name, 0.0) + total
            if len(ms) < request.count:
                plan.unmatched[(submitter, request.autocluster)] = request.count - len(ms)
        plan.by_submitter[submitter] = got
        plan.weight_by_submitter[submitter] = weight
    plan.evaluations = pool.evaluations - before
    return plan


__all__ = [
    "Match",
    "Plan",
    "PreemptionPolicy",
    "Request",
    "Slot",
    "SlotPool",
    "gc_paused",
    "negotiate",
    "takes_nothing",
]
