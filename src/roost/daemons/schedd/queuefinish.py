"""condor_rm of a big queue in memory: ``JobQueue.finish_many`` (issue 27), in a module
of its own beside jobqueue.py, with the procs and history statements it writes.

A sparse cluster's procs that leave together are written as ranges (``gone_ranges``:
cluster, lo, hi), not as a GONE row per proc: removing 100,000 procs of one cluster
writes ~50 rows there, not 100,000 procs rows (~0.15 s of SQLite). A proc in such a
range is gone whatever its procs row says (the load and salvage read it so), and the
rows of procs changed before they left are deleted by range in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from roost.core.jobpolicy import IDLE, RUNNING, SUSPENDED
from roost.daemons.schedd.plainprocs import runs
from roost.daemons.schedd.queuejobs import Cluster, Job
from roost.daemons.schedd.store import Op, dumps

if TYPE_CHECKING:
    from roost.daemons.schedd.jobqueue import JobQueue

# Attributes a job keeps in its procs row columns rather than in the diff.
_NOT_IN_DIFF = ("ProcId", "JobStatus")
_DELETE_PROC = "DELETE FROM procs WHERE cluster = ? AND proc = ?"
_INSERT_HISTORY = "INSERT OR REPLACE INTO history (cluster, proc, owner, completion, status, ad) VALUES (?, ?, ?, ?, ?, ?)"
_INSERT_GONE = "INSERT OR REPLACE INTO gone_ranges (cluster, lo, hi) VALUES (?, ?, ?)"
_DELETE_PROCS_IN = "DELETE FROM procs WHERE cluster = ? AND proc >= ? AND proc < ?"
_UPSERT_PROC = ("INSERT INTO procs (cluster, proc, status, diff, claim) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(cluster, proc) DO UPDATE SET status = excluded.status, diff = excluded.diff, "
                "claim = excluded.claim")


def finish_many(q: JobQueue, changes: Iterable[tuple[Job, dict[str, Any]]], status: int, completion: int) -> list[Op]:
    """``set`` then ``to_history`` for many jobs (condor_rm of a big queue): each
    job's ``attrs`` and the final ``status`` set, its row deleted and its history row
    written, all as three statements however many jobs there are, and no row update
    for a row about to go. Jobs no longer in the queue are passed over. What is the
    same for a cluster's procs (its history_clusters row, its tombstones' list, the
    counters, whether it is left empty) is looked at once per cluster, not per job."""
    first: list[Op] = []
    deletes: list[tuple[int, int]] = []
    leaving_sparse: dict[int, list[int]] = {}  # sparse clusters' procs leaving, per cluster
    rows: list[tuple[Any, ...]] = []
    leaving: dict[tuple[Cluster, int], int] = {}  # the counters' part of _count, per cluster and status
    touched: dict[int, Cluster] = {}
    idle = q._idle
    running = q.running
    last: Cluster | None = None
    gone: list[int] | None = None
    clean: dict[int, dict[str, Any]] = {}  # id(attrs) -> attrs less what a procs row keeps
    for job, attrs in changes:
        cluster = job.cluster
        proc = job.proc
        if cluster._procs.get(proc) is not job:  # (Cluster.holds, inline)
            continue
        if cluster is not last:
            last = cluster
            if cluster.id not in touched:
                touched[cluster.id] = cluster
                if cluster.id not in q._history_cluster:
                    first += q._history_cluster_ops(cluster)
            gone = leaving_sparse.setdefault(cluster.id, []) if cluster.sparse else None
        mine = clean.get(id(attrs))
        if mine is None:
            mine = clean[id(attrs)] = {k: v for k, v in attrs.items() if k not in _NOT_IN_DIFF}
        own = job.own()
        d = {**own, **mine} if own else dict(mine)
        job._diff = d
        was = job.status
        key = (cluster, was)
        leaving[key] = leaving.get(key, 0) + 1
        if was == IDLE:
            if idle is not None:
                per = idle.get(cluster.owner)
                if per is not None:
                    per.pop(job, None)
        elif was == RUNNING or was == SUSPENDED:
            running.pop(job.key, None)
        job.status = status
        del cluster._procs[proc]  # (Cluster.drop, inline)
        cluster.finished += 1
        if gone is not None:
            gone.append(proc)
        else:
            deletes.append((cluster.id, proc))
        # own_obj's dict: ProcId, the differences, GlobalJobId from the template, JobStatus
        obj = {"ProcId": proc, **d}
        g = cluster.gjid
        if g is not None and "GlobalJobId" not in obj:
            obj["GlobalJobId"] = f"{g[0]}{proc}{g[1]}"
        obj["JobStatus"] = status
        rows.append((cluster.id, proc, cluster.owner, completion, status, dumps(obj)))
    left: list[Op] = []
    for cluster in touched.values():
        if not cluster.size():
            leaving_sparse.pop(cluster.id, None)  # its rows all go with it
            left += q._cluster_left(cluster)
    for (cluster, was), n in leaving.items():
        q._count_many(cluster, was, -n)
    if not rows:
        return []
    ops = first
    if deletes:
        ops.append((_DELETE_PROC, deletes, True))
    ranges = [(cid, lo, hi) for cid, procs in leaving_sparse.items() for lo, hi in runs(procs)]
    if ranges:
        ops.append((_INSERT_GONE, ranges, True))
        ops.append((_DELETE_PROCS_IN, ranges, True))  # rows of procs changed before they left
    return [*ops, (_INSERT_HISTORY, rows, True), *left]


__all__ = ["finish_many"]
