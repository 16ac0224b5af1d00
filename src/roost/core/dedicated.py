"""The dedicated scheduler's decisions (issue 16): which parallel jobs start where, which
resources to claim, reclaim from backfill or release, and what waits.

HTCondor's original algorithm (Wright, "Cheap cycles from the desktop to the dedicated
cluster"), as a function of state that returns a :class:`Plan`:

- the parallel jobs form one queue — FIFO across users, or (``order="user"``) one
  logical queue per user, users taken in order of their priority (lower is better,
  as ``roost userprio`` shows it), round-robin, each user's jobs in submission order;
- resources are sorted by when they are next available (idle now first, then running
  dedicated jobs by their expected end);
- the head job is served by claimed idle resources, else by claimed idle plus
  unclaimed ones (claimed from the negotiator first) plus those running opportunistic
  backfill jobs (vacated); once it holds what it needs it starts on the next cycle;
- if it cannot be served now but the dedicated resources would suffice, the scheduler
  stops and waits for running dedicated jobs to finish (no starvation of big jobs);
  the idle resources it will want run opportunistic jobs meanwhile (until shortly
  before its expected start, when known), and its claims are kept;
  with ``backfill="easy"`` it reserves the head job's nodes at the time they free
  (its "shadow time") and lets later jobs start now when they end before it (their
  ``estimate``) or use only nodes the head job will not need (EASY backfilling);
- a job that can never fit (more nodes than the compatible dedicated resources) is
  skipped, with the reason (``q -analyze`` shows it);
- reservations (``roost reserve``) set nodes aside for a window: nothing dedicated
  runs on them then unless it ends before the window opens, and opportunistic jobs may
  use them until ``margin`` seconds before it;
- claimed resources no job needs, idle longer than ``unused_claim_timeout``, are
  released to the opportunistic pool; idle resources no dedicated job needs now are
  offered for backfill.

Pure: no clock, no sockets; ``now`` is passed in. Which resource a job may use is the
caller's matchmaking, given as ``compatible(job, resource) -> bool`` and asked once per
job class (``ParallelJob.kind``) and resource, so a cycle over 1,000 jobs and 1,000
resources of a few classes costs milliseconds, not a million evaluations.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

INF = math.inf


@dataclass(frozen=True)
class Resource:
    """One dedicated slot under this scheduler's control."""

    name: str
    host: str = ""
    claimed: bool = False  # the dedicated scheduler holds a claim on it
    running: str | None = None  # the dedicated job it runs, if any
    busy_until: float = 0.0  # when that job is expected to end (INF: unknown); 0 when idle
    backfill: bool = False  # runs an opportunistic job (may be vacated for a dedicated one)
    idle_since: float = 0.0  # claimed and idle since (for UNUSED_CLAIM_TIMEOUT)


@dataclass(frozen=True)
class ParallelJob:
    """One queued parallel job (a cluster: ``nodes`` procs), or a generic dedicated job."""

    id: str
    user: str
    nodes: int
    submitted: float = 0.0
    estimate: float | None = None  # expected run time, seconds (EstimatedRuntime, or learned)
    kind: object = None  # jobs of one kind match the same resources (autocluster-like key)


@dataclass(frozen=True)
class Reservation:
    """``nodes`` resources held for [start, end)."""

    id: str
    nodes: int
    start: float
    end: float
    kind: object = None  # what the reserved nodes must match (as a job of this kind)


@dataclass
class Plan:
    """What the dedicated scheduler does now."""

    start: list[tuple[str, list[str]]] = field(default_factory=list)  # job, resources: run it now
    #: job, resources (claimed idle ones kept, unclaimed ones to claim, backfilled ones to
    #: vacate): it starts once it holds them all
    gather: list[tuple[str, list[str]]] = field(default_factory=list)
    claim: list[str] = field(default_factory=list)  # unclaimed resources to ask the negotiator for
    reclaim: list[str] = field(default_factory=list)  # backfill jobs to vacate from these
    release: list[str] = field(default_factory=list)  # claims to give back to the opportunistic pool
    backfill: dict[str, float] = field(default_factory=dict)  # resource -> until when it may run opportunistic jobs
    waiting: dict[str, float] = field(default_factory=dict)  # job -> when it is expected to start (INF: unknown)
    never: dict[str, str] = field(default_factory=dict)  # job -> why it can never run here
    reserved: dict[str, list[str]] = field(default_factory=dict)  # reservation -> its resources


def order_jobs(jobs: Iterable[ParallelJob], order: str = "fifo",
               priorities: dict[str, float] | None = None) -> list[ParallelJob]:
    """The dedicated queue: FIFO by submission, or per user (round-robin over users in
    order of priority, lower first; each user's jobs FIFO)."""
    fifo = sorted(jobs, key=lambda j: (j.submitted, j.id))
    if order == "fifo":
        return fifo
    if order != "user":
        raise ValueError(f"unknown dedicated queue order {order!r} (fifo or user)")
    prio = priorities or {}
    per_user: dict[str, deque[ParallelJob]] = defaultdict(deque)
    for j in fifo:
        per_user[j.user].append(j)
    users = sorted(per_user, key=lambda u: (prio.get(u, 0.5), per_user[u][0].submitted, u))
    out: list[ParallelJob] = []
    while users:
        still = []
        for u in users:
            out.append(per_user[u].popleft())
            if per_user[u]:
                still.append(u)
        users = still
    return out


class _Pool:
    """The resources of one cycle, with what this plan has already given away."""

    def __init__(self, resources: list[Resource], compatible: Callable[[ParallelJob | Reservation, Resource], bool]):
        # next available first: idle claimed, idle unclaimed, backfilled, then busy by end
        self.res = sorted(resources, key=lambda r: (r.busy_until if r.running else 0.0,
                                                   r.running is not None, r.backfill, not r.claimed, r.host, r.name))
        self.compatible = compatible
        self.taken: set[str] = set()
        self._by_kind: dict[object, list[Resource]] = {}

    def of_kind(self, job: ParallelJob | Reservation) -> list[Resource]:
        got = self._by_kind.get(job.kind)
        if got is None:
            got = self._by_kind[job.kind] = [r for r in self.res if self.compatible(job, r)]
        return got


def plan(jobs: Iterable[ParallelJob], resources: Iterable[Resource], now: float, *,
         compatible: Callable[[ParallelJob | Reservation, Resource], bool] | None = None,
         order: str = "fifo", priorities: dict[str, float] | None = None, backfill: str = "none",
         reservations: Iterable[Reservation] = (), margin: float = 300.0,
         unused_claim_timeout: float = 600.0) -> Plan:
    """The dedicated scheduler's plan for this cycle (see the module docstring).
    ``backfill``: "none" (the original: the head job waits and nothing dedicated passes
    it) or "easy"."""
    if backfill not in ("none", "easy"):
        raise ValueError(f"unknown dedicated backfill {backfill!r} (none or easy)")
    pool = _Pool(list(resources), compatible or (lambda _j, _r: True))
    out = Plan()
    held = _reserve(pool, list(reservations), now, margin, out)
    blocked = False  # a job waits for running ones: later ones start only as EASY allows
    shadow, extra = INF, 0
    head: set[str] = set()  # the resources the waiting head job may use
    for job in order_jobs(jobs, order, priorities):
        mine = pool.of_kind(job)
        if len(mine) < job.nodes:
            out.never[job.id] = f"needs {job.nodes} dedicated nodes; {len(mine)} match it"
            continue
        usable = [r for r in mine if r.name not in held or _before(job, now, held[r.name])]
        free = [r for r in usable if r.name not in pool.taken and r.running is None]
        if blocked:
            if backfill != "easy" or len(free) < job.nodes:
                out.waiting[job.id] = INF
                continue
            pick = _pick(free, job.nodes)
            if not _before(job, now, shadow):
                needed = sum(1 for r in pick if r.name in head)
                if needed > extra:
                    out.waiting[job.id] = INF
                    continue
                extra -= needed
            _give(pool, out, job, pick)
            continue
        if len(free) >= job.nodes:
            _give(pool, out, job, _pick(free, job.nodes))
            continue
        # not now: when would the dedicated resources suffice? (the running ones end)
        busy = sorted(r.busy_until for r in usable if r.name not in pool.taken and r.running is not None)
        missing = job.nodes - len(free)
        shadow = busy[missing - 1] if missing <= len(busy) else INF
        out.waiting[job.id] = shadow
        blocked = True
        head = {r.name for r in usable}
        extra = len(free) + sum(1 for t in busy if t <= shadow) - job.nodes  # nodes it will not need then
    for r in pool.res:
        if r.name in pool.taken or r.running is not None:
            continue
        until = min(held.get(r.name, INF), shadow if r.name in head else INF)
        until = until - margin if until < INF else INF
        if (r.claimed and not r.backfill and r.name not in held and r.name not in head
                and now - r.idle_since >= unused_claim_timeout):
            out.release.append(r.name)  # no dedicated job wants it: back to the opportunistic pool
        elif until > now:
            out.backfill[r.name] = until  # opportunistic jobs meanwhile, vacated when it is wanted
    return out


def _before(job: ParallelJob, now: float, t: float) -> bool:
    """The job is expected to end before ``t``."""
    return job.estimate is not None and now + job.estimate <= t


def _pick(free: list[Resource], n: int) -> list[Resource]:
    """``n`` of the free resources: claimed idle first (no negotiation, no eviction),
    then unclaimed, then backfilled ones; packed by host where it is a tie."""
    return sorted(free, key=lambda r: (r.backfill, not r.claimed, r.host, r.name))[:n]


def _claim_or_reclaim(out: Plan, r: Resource) -> None:
    if r.backfill:
        out.reclaim.append(r.name)
    elif not r.claimed:
        out.claim.append(r.name)


def _give(pool: _Pool, out: Plan, job: ParallelJob, pick: list[Resource]) -> None:
    names = [r.name for r in pick]
    pool.taken.update(names)
    if all(r.claimed and not r.backfill for r in pick):
        out.start.append((job.id, names))
        return
    out.gather.append((job.id, names))
    for r in pick:
        _claim_or_reclaim(out, r)


def _reserve(pool: _Pool, reservations: list[Reservation], now: float, margin: float,
             out: Plan) -> dict[str, float]:
    """Set each current or coming reservation's nodes aside: resource -> when its window
    opens (a dedicated job may use it only if it ends by then; opportunistic ones until
    ``margin`` before). During a window the nodes are taken outright."""
    held: dict[str, float] = {}
    for rv in sorted(reservations, key=lambda r: (r.start, r.id)):
        if rv.end <= now:
            continue
        # the ones free soonest (by the window's start)
        cands = [r for r in pool.of_kind(rv) if r.name not in held and r.name not in pool.taken]
        cands.sort(key=lambda r: (r.busy_until if r.running else 0.0) > rv.start)
        names = [r.name for r in cands[:rv.nodes]]
        out.reserved[rv.id] = names
        for name in names:
            if rv.start <= now:
                pool.taken.add(name)  # in its window: nothing else runs there
            else:
                held[name] = rv.start
    return held


__all__ = ["INF", "ParallelJob", "Plan", "Reservation", "Resource", "order_jobs", "plan"]
