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
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from roost.core.jobpolicy import IDLE, RUNNING, SUSPENDED
from roost.daemons.schedd.plainprocs import runs
from roost.daemons.schedd.procshape import own_of
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


def finish_many(q: JobQueue, changes: Iterable[tuple[Job, dict[str, Any]]], status: int, completion: int,
                keep_ads: bool = True) -> list[Op]:
    """``set`` then ``to_history`` for many jobs (condor_rm of a big queue): each
    job's ``attrs`` and the final ``status`` set, its row deleted and its history row
    written, all as three statements however many jobs there are, and no row update
    for a row about to go. Jobs no longer in the queue are passed over. What is the
    same for a cluster's procs (its history_clusters row, its tombstones' list, the
    counters, whether it is left empty) is looked at once per cluster, not per job.

    ``keep_ads`` False: no one reads what ``attrs`` set on the jobs once they are gone
    (no pool event log to write their ads to), so a proc with nothing of its own but its
    cluster's templates
    keeps its compact form (its ``attrs`` are in its history row only), and its
    history text is made from the templates without a dict (~1 us a job less)."""
    first: list[Op] = []
    deletes: list[tuple[int, int]] = []
    leaving_sparse: dict[int, list[int]] = {}  # sparse clusters' procs leaving, per cluster
    rows: list[tuple[Any, ...]] = []
    # the counters' part of _count, per cluster and status
    leaving: dict[int, tuple[Cluster, dict[int, int]]] = {}
    idle = q._idle
    running = q.running
    last: Cluster | None = None
    gone: list[int] | None = None
    counts: dict[int, int] = {}
    cid = 0
    owner = ""
    idle_of: dict[Any, Any] | None = None  # the cluster's owner's idle list
    shape = None
    last_attrs: dict[str, Any] | None = None
    mine: dict[str, Any] = {}  # attrs less what a procs row keeps
    frag = ""  # mine's part of a history text
    taken: frozenset[str] = frozenset()  # the keys a proc's own must not have for the text's parts
    mine_gid = False
    tail = f',"JobStatus":{int(status)}}}'
    gid = ""  # the cluster's GlobalJobId template as JSON text around the ProcId
    gend = ""
    # the cluster's templates as JSON text around the ProcId (None: it has none, or a
    # value of each proc's own), and whether its procs' texts can be made of them
    templated: list[tuple[str, str]] | None = None
    plain_text = False
    for job, attrs in changes:
        cluster = job.cluster
        proc = job.proc
        if cluster._procs.get(proc) is not job:  # (Cluster.holds, inline)
            continue
        if cluster is not last:
            last = cluster
            cid, owner, shape = cluster.id, cluster.owner, cluster.shape
            if cid not in leaving:
                leaving[cid] = (cluster, {})
                if cid not in q._history_cluster:
                    first += q._history_cluster_ops(cluster)
            counts = leaving[cid][1]
            gone = leaving_sparse.setdefault(cid, []) if cluster.sparse else None
            g = cluster.gjid
            gid, gend = (f',"GlobalJobId":"{_inside(g[0])}', f'{_inside(g[1])}"') if g is not None else ("", "")
            idle_of = idle.get(owner) if idle is not None else None
            templated = _templates(shape) if not keep_ads else None
            last_attrs = None  # (plain_text is the cluster's and the attrs')
        if attrs is not last_attrs:
            last_attrs = attrs
            mine = {k: v for k, v in attrs.items() if k not in _NOT_IN_DIFF}
            frag = "," + dumps(mine)[1:-1] if mine else ""
            taken = frozenset(mine).union(_NOT_IN_DIFF)
            mine_gid = "GlobalJobId" in mine
            plain_text = templated is not None and taken.isdisjoint(cluster.shape_names)
        own = job._diff  # (Job.own, inline)
        made = False  # the text made here already
        if keep_ads or (own is not None and not (plain_text and own == ())):
            if type(own) is tuple:
                own = own_of(shape, proc, own)  # type: ignore[arg-type]
            d = {**own, **mine} if own else dict(mine)
            job._diff = d
        elif own is not None:  # a templates-only proc, its compact form kept: its text from them
            no_gid = mine_gid or not gid or "GlobalJobId" in cluster.shape_names
            own_text = ",".join([f"{a}{proc}{b}" for a, b in templated])  # type: ignore[union-attr]
            text = f'{{"ProcId":{proc},{own_text}{frag}{"" if no_gid else f"{gid}{proc}{gend}"}{tail}'
            made = True
        # (else: nothing of its own, its _diff stays None; the text below needs no dict)
        was = job.status
        counts[was] = counts.get(was, 0) + 1
        if was == IDLE:
            if idle_of is not None:
                idle_of.pop(job, None)
        elif was == RUNNING or was == SUSPENDED:
            running.pop((cid, proc), None)
        job.status = status
        del cluster._procs[proc]  # (Cluster.drop, inline)
        cluster.finished += 1
        if gone is not None:
            gone.append(proc)
        else:
            deletes.append((cid, proc))
        # own_obj's dict as text: ProcId, the differences, GlobalJobId from the template,
        # JobStatus; made of parts (mine's once per attrs) where no key is in two of them
        if made:
            pass
        elif not own:
            text = f'{{"ProcId":{proc}{frag}{"" if mine_gid or not gid else f"{gid}{proc}{gend}"}{tail}'
        elif taken.isdisjoint(own):
            no_gid = mine_gid or not gid or "GlobalJobId" in own
            text = f'{{"ProcId":{proc},{dumps(own)[1:-1]}{frag}{"" if no_gid else f"{gid}{proc}{gend}"}{tail}'
        else:
            obj = {"ProcId": proc, **d}
            g = cluster.gjid
            if g is not None and "GlobalJobId" not in obj:
                obj["GlobalJobId"] = f"{g[0]}{proc}{g[1]}"
            obj["JobStatus"] = status
            text = dumps(obj)
        rows.append((cid, proc, owner, completion, status, text))
    left: list[Op] = []
    for cluster, _n in leaving.values():
        if not cluster.size():
            leaving_sparse.pop(cluster.id, None)  # its rows all go with it
            left += q._cluster_left(cluster)
    for cluster, by_status in leaving.values():
        for was, n in by_status.items():
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


def _templates(shape: Any) -> list[tuple[str, str]] | None:
    """A shape's attributes as JSON text before and after the ProcId (``"Args":"-n `` and
    ``"``), when every one is a template; None otherwise."""
    if not shape or any(t is None for _k, t in shape):
        return None
    return [(f'"{_inside(k)}":"{_inside(t[0])}', f'{_inside(t[1])}"') for k, t in shape]


def _inside(text: str) -> str:
    """``text`` as it reads inside a JSON string (what ``dumps`` writes between the quotes)."""
    return encode_basestring(text)[1:-1]


__all__ = ["finish_many"]
