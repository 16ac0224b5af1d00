"""Matchmaking: slots and resource requests in, a plan of matches out.

A *request* is one autocluster of one submitter: a representative job ad and
how many jobs want a slot. For each submitter in the order given (fair
share, issue 5, decides that order and each submitter's limit), for each of
its requests in the schedd's order, every job is given the best slot that
is still free in this cycle's view:

- both Requirements hold (``symmetric match``), the slot is ``Unclaimed``;
- best means highest ``NEGOTIATOR_PRE_JOB_RANK`` (evaluated in the slot
  against the job), then the job's ``Rank`` (in the job against the slot),
  then ``NEGOTIATOR_POST_JOB_RANK``; remaining ties go to the slot that
  came first in the input (the negotiator sorts by name, so cycles are
  reproducible). Non-numeric ranks count as 0, as in HTCondor.
- a static slot takes one job; a partitionable slot (``PartitionableSlot``)
  takes jobs while its remaining Cpus/Memory/Disk/GPUs cover the request.
  The view's copy of its ad has those attributes lowered after each match,
  so Requirements that read ``TARGET.Memory`` see what is left, as the
  startd will when it carves dynamic slots.

Pure: ads in, :class:`Plan` out; no clock (``now`` is passed in), no I/O.
:class:`SlotPool` keeps the per-cycle view so a caller can spin the pie
several times (issue 5) without rebuilding it.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import Node
from roost.classad.evaluate import EvaluationFailed, evaluate, matches

# (slot attribute, job attribute, default request when the job does not say)
RESOURCES: tuple[tuple[str, str, float], ...] = (
    ("Cpus", "RequestCpus", 1),
    ("Memory", "RequestMemory", 0),
    ("Disk", "RequestDisk", 0),
    ("GPUs", "RequestGPUs", 0),
)


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

    @property
    def submitter(self) -> str:
        return self.request.submitter


@dataclass
class Plan:
    """The cycle's result: matches in decision order, plus what could not be served."""

    matches: list[Match] = field(default_factory=list)
    unmatched: dict[tuple[str, Any], int] = field(default_factory=dict)  # (submitter, ac) → jobs
    by_submitter: dict[str, int] = field(default_factory=dict)
    evaluations: int = 0  # symmetric matches tried
    now: float = 0.0


def _number(v: Any) -> float:
    t = type(v)
    if t is int or t is float:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    return 0.0


def _eval(node: Node | None, cur: ClassAd, tgt: ClassAd) -> float:
    if node is None:
        return 0.0
    try:
        return _number(evaluate(node, cur, tgt))
    except EvaluationFailed:
        return 0.0


def _is_true(ad: ClassAd, attr: str) -> bool:
    v = ad._lits.get(attr)
    if v is None and attr in ad._attrs:
        try:
            v = evaluate(ad._attrs[attr], ad, None)
        except EvaluationFailed:
            return False
    return v is True or (type(v) in (int, float) and v != 0)


def _state(ad: ClassAd) -> Any:
    v = ad._lits.get("state")
    if v is None and "state" in ad._attrs:
        try:
            v = evaluate(ad._attrs["state"], ad, None)
        except EvaluationFailed:
            return None
    return v


class _View:
    """One slot's state within a cycle."""

    __slots__ = ("slot", "ad", "index", "partitionable", "remaining", "used", "copied")

    def __init__(self, slot: Slot, index: int) -> None:
        self.slot = slot
        self.ad = slot.ad
        self.index = index
        self.partitionable = _is_true(slot.ad, "partitionableslot")
        self.remaining: dict[str, float] = {}
        if self.partitionable:
            for attr, _, _ in RESOURCES:
                self.remaining[attr] = _eval(slot.ad._attrs.get(attr.lower()), slot.ad, None)  # type: ignore[arg-type]
        self.used = False
        self.copied = False

    def take(self, amounts: dict[str, float]) -> None:
        if not self.copied:
            self.ad = ClassAd(self.ad)  # shares the expression trees; only our copy changes
            self.copied = True
        for attr, amount in amounts.items():
            left = self.remaining[attr] - amount
            self.remaining[attr] = left
            self.ad[attr] = int(left) if float(left).is_integer() else left


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


def _fits(view: _View, amounts: dict[str, float]) -> bool:
    rem = view.remaining
    for attr, amount in amounts.items():
        if amount > 0 and rem.get(attr, 0.0) < amount:
            return False
    return amounts.get("Cpus", 1.0) > 0 or amounts.get("Memory", 0.0) > 0


class SlotPool:
    """The slots of one cycle and what has been promised of them so far."""

    def __init__(
        self,
        slots: Iterable[Slot],
        *,
        pre_job_rank: Node | None = None,
        post_job_rank: Node | None = None,
    ) -> None:
        self.views = [_View(s, i) for i, s in enumerate(slots) if _state(s.ad) == "Unclaimed"]
        self.pre_job_rank = pre_job_rank
        self.post_job_rank = post_job_rank
        self.evaluations = 0

    def _candidate(self, job: ClassAd, view: _View) -> tuple[tuple[float, float, float], dict[str, float]] | None:
        ad = view.ad
        self.evaluations += 1
        if not (matches(ad, job) and matches(job, ad)):
            return None
        amounts: dict[str, float] = {}
        if view.partitionable:
            amounts = _requested(job, ad)
            if not _fits(view, amounts):
                return None
        rank = (
            _eval(self.pre_job_rank, ad, job),
            _eval(job._attrs.get("rank"), job, ad),
            _eval(self.post_job_rank, ad, job),
        )
        return rank, amounts

    def match_request(self, request: Request, limit: int | None = None) -> list[Match]:
        """Give up to ``min(request.count, limit)`` jobs of one request their best slots."""
        want = request.count if limit is None else min(request.count, limit)
        if want <= 0:
            return []
        job = request.ad
        heap: list[tuple[float, float, float, int, _View, dict[str, float]]] = []
        for view in self.views:
            if view.used:
                continue
            c = self._candidate(job, view)
            if c is not None:
                (r1, r2, r3), amounts = c
                heap.append((-r1, -r2, -r3, view.index, view, amounts))
        heapq.heapify(heap)
        out: list[Match] = []
        while heap and len(out) < want:
            n1, n2, n3, _, view, amounts = heapq.heappop(heap)
            out.append(Match(request, view.slot, (-n1, -n2, -n3), amounts))
            if view.partitionable:
                view.take(amounts)
                again = self._candidate(job, view)
                if again is not None:
                    (r1, r2, r3), amounts2 = again
                    heapq.heappush(heap, (-r1, -r2, -r3, view.index, view, amounts2))
                    continue
            view.used = True
        if out:
            self.views = [v for v in self.views if not v.used]
        return out

    def free_slots(self) -> int:
        return sum(1 for v in self.views if not v.used)


def negotiate(
    slots: Iterable[Slot],
    requests_by_submitter: Mapping[str, Sequence[Request]],
    submitter_order: Sequence[str],
    now: float,
    *,
    limits: Mapping[str, int] | None = None,
    pre_job_rank: Node | None = None,
    post_job_rank: Node | None = None,
    pool: SlotPool | None = None,
) -> Plan:
    """One negotiation pass: each submitter in ``submitter_order`` gets, request by
    request, the best free slots, up to ``limits[submitter]`` matches (no limit when
    absent). Pass ``pool`` to continue a previous pass over the same slots."""
    if pool is None:
        pool = SlotPool(slots, pre_job_rank=pre_job_rank, post_job_rank=post_job_rank)
    plan = Plan(now=now)
    before = pool.evaluations
    for submitter in submitter_order:
        left = None if limits is None else limits.get(submitter)
        got = 0
        for request in requests_by_submitter.get(submitter, ()):
            if left is not None and got >= left:
                plan.unmatched[(submitter, request.autocluster)] = request.count
                continue
            ms = pool.match_request(request, None if left is None else left - got)
            got += len(ms)
            plan.matches.extend(ms)
            if len(ms) < request.count:
                plan.unmatched[(submitter, request.autocluster)] = request.count - len(ms)
        plan.by_submitter[submitter] = got
    plan.evaluations = pool.evaluations - before
    return plan
