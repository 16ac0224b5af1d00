"""The jobs a constraint selects (QUERY_JOBS, ACT, EDIT): per job, or per cluster
where that answers the same (issue 27).

A constraint that reads neither ProcId nor GlobalJobId, directly or through the
cluster ad's expressions (``rm -all`` sends ``ClusterId >= 0``), holds alike for every proc of a cluster in one status whose own
attributes it does not read, directly or through the cluster ad's expressions (its
reach, ``Cluster.reach``): it is evaluated once per (cluster, status), and each job
only looks its verdict up. For 100,000 procs that differ in nothing it reads, even that
look-up per job was a generator step and a few calls each (~0.1 s of rm -all);
``matching_clusters`` takes such a cluster whole (its procs without a dict of their
own, its shape naming nothing the constraint reads) and keeps the procs of the
statuses that hold, in C.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Any

from roost.daemons.schedd.queuejobs import Cluster, Job

_DIFF_OF = attrgetter("_diff")
_STATUS_OF = attrgetter("status")


def per_proc(refs: set[str] | None) -> bool:
    """Whether a constraint reading ``refs`` (None: unknown) may differ between procs
    that have nothing of their own it reads."""
    return refs is None or not _PER_PROC.isdisjoint(refs)


_PER_PROC = frozenset(("procid", "globaljobid"))


def matching(jobs: Iterable[Job], expr: Any, refs: set[str] | None, tick: int = 0) -> Iterator[Job | None]:
    """The ``jobs`` ``expr`` (reading ``refs``) holds for; with ``tick``, a None after
    each ``tick`` jobs looked at (a moment for the caller to let others in)."""
    looked = 0
    cache: dict[Any, bool] = {}
    lowered: dict[str, str] = {}
    reach: dict[int, frozenset[str]] = {}  # per cluster: the names the constraint can read
    procwise: dict[int, bool] = {}  # per cluster: whether its ad makes it read ProcId
    every = per_proc(refs)
    last: Cluster | None = None
    procs_differ = every
    for job in jobs:
        looked += 1
        if tick and looked % tick == 0:
            yield None
        if job.cluster is not last:  # (the jobs come cluster by cluster: asked once each)
            last = job.cluster
            procs_differ = every or _reads_proc(last, expr, procwise)
        d = job.own_names()
        varying = procs_differ
        if not varying and d:
            names = _reach(job.cluster, expr, refs, reach)  # (what it reads through the cluster ad too)
            for k in d:
                lk = lowered.get(k)
                if lk is None:
                    lk = lowered[k] = k.lower()
                if lk in names:
                    varying = True
                    break
        key = None if varying else (job.cluster.id, job.status)
        if key is not None and key in cache:
            ok = cache[key]
        else:
            ok = holds(job, expr, refs, reach)
            if key is not None:
                cache[key] = ok
        if ok:
            yield job


def holds(job: Job, expr: Any, refs: set[str] | None, reach: dict[int, frozenset[str]]) -> bool:
    """Whether ``expr`` is true of ``job`` (an error is false); only the attributes it can
    reach are made into the ad, where that is known (``reach``: per cluster, kept)."""
    try:
        ad = None
        if refs is not None:
            ad = job.classad_for(_reach(job.cluster, expr, refs, reach))
        return expr.eval(ad if ad is not None else job.classad()) is True
    except Exception:
        return False


def _reads_proc(cluster: Cluster, expr: Any, known: dict[int, bool]) -> bool:
    """Whether ``expr`` reads ProcId or GlobalJobId through ``cluster``'s ad (an
    attribute there whose expression does), asked once per cluster."""
    got = known.get(cluster.id)
    if got is None:
        try:
            ad = cluster.classad()
            got = any(r.lower().split(".")[-1] in _PER_PROC for r in ad.internalRefs(expr) + ad.externalRefs(expr)
                      if r)
        except Exception:
            got = True
        known[cluster.id] = got
    return got


def _reach(cluster: Cluster, expr: Any, refs: set[str], reach: dict[int, frozenset[str]]) -> frozenset[str]:
    names = reach.get(cluster.id)
    if names is None:
        names = reach[cluster.id] = cluster.reach(expr, refs)
    return names


def matching_clusters(clusters: Iterable[Cluster], expr: Any, refs: set[str] | None,
                      tick: int = 0) -> Iterator[list[Job] | None]:
    """``matching`` of every proc of ``clusters`` (in order), a list of jobs at a time,
    a cluster whole where it can be (see the module's docstring); a None after each
    ``tick`` jobs or so looked at."""
    looked = 0
    for cluster in clusters:
        jobs = list(cluster.procs.values())
        looked += len(jobs)
        if (per_proc(refs) or _reads_proc(cluster, expr, {})
                or _own_read(cluster, jobs, cluster.reach(expr, refs))):  # type: ignore[arg-type]
            part: list[Job] = []
            for job in matching(jobs, expr, refs, tick):
                if job is None:
                    yield part
                    part = []
                    yield None
                else:
                    part.append(job)
            yield part
        else:
            yield _alike(jobs, expr, refs)
        if tick and looked >= tick:
            looked = 0
            yield None


def _own_read(cluster: Cluster, jobs: list[Job], names: frozenset[str]) -> bool:
    """Whether a proc of ``cluster`` may have something of its own the constraint reads
    (``names``: its reach): one with a dict of its own (looked at per job), or its shape
    names one."""
    return dict in set(map(type, map(_DIFF_OF, jobs))) or any(k.lower() in names for k in cluster.shape_names)


def _alike(jobs: list[Job], expr: Any, refs: set[str] | None) -> list[Job]:
    """Procs of one cluster whose ads differ in nothing ``expr`` reads but their status:
    its verdict for each status taken from the first proc in it (as ``matching``'s
    cache would), the procs kept by status."""
    verdict: dict[int, bool] = {}
    reach: dict[int, frozenset[str]] = {}
    statuses = len(set(map(_STATUS_OF, jobs)))
    for job in jobs:
        if job.status not in verdict:
            verdict[job.status] = holds(job, expr, refs, reach)
            if len(verdict) == statuses:
                break
    if all(verdict.values()):
        return jobs
    return [j for j in jobs if verdict[j.status]]


__all__ = ["holds", "matching", "matching_clusters", "per_proc"]
