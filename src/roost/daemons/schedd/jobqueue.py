"""The schedd's job queue in memory: clusters, compact procs, counters, idle lists.

A job is not a ClassAd: it is a ``Job`` (status, a small dict of the attributes in
which it differs from its cluster ad, and the claim it runs on), so 1,000,000 idle
jobs of one cluster cost one cluster ad and 1,000,000 small objects (~250 bytes
each with their index entries). ``JobStatus`` lives in ``Job.status`` only, and
``GlobalJobId`` (``<schedd>#<cluster>.<proc>#<qdate>``) is made from the cluster's
template when a job's ad is shown, so a proc that differs in nothing has no dict.
Full ads are built on demand (``merged``/``classad``) for policy evaluation and shadows.

Durably (``Store``), a cluster submitted by this version is *sparse*: its row holds
the ad, the procs' differences as submitted and the proc ids (ranges); the procs
table holds a row only for a proc changed since (status, attributes, claim) or gone
to history (status ``GONE``, until the whole cluster goes); procs gone together (a
bulk removal: queuefinish.py) are ranges in ``gone_ranges`` instead. Submitting a million
jobs writes one row; loading them reads one row and builds the procs from it.
Clusters written by older versions (no layout) keep a procs row per proc.

Loaded, a sparse cluster's procs without a row stay ranges (plainprocs.py) until
touched: ``Cluster.job`` makes one proc's Job, ``Cluster.procs`` all of them, and the
idle lists are made at their first ask, so a restart with a million idle jobs makes
no Job at all before it answers.

Every change goes through a method here that updates memory, keeps the counters
(totals per status and per owner) exact, and returns the SQL operations that make
it durable; the daemon commits them (group commit) before reporting the change.
Loading at start-up is queueload.py's.

Size: one storage layout. Job, Cluster and JobQueue each read and write the same
rows (the sparse layout, GONE marks, plain ranges), and a change to one is a change
to all three; split further, every change would touch several modules at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any

from roost.core.jobpolicy import COMPLETED, IDLE, REMOVED, RUNNING, STATUS_NAMES, SUSPENDED
from roost.daemons.schedd.bulkgc import no_gc
from roost.daemons.schedd.idleblocks import IdleBlock, block_of, covered
from roost.daemons.schedd.plainprocs import Plain
from roost.daemons.schedd.procshape import shape_of
from roost.daemons.schedd.queuefinish import (
    _DELETE_PROC,
    _INSERT_HISTORY,
    _NOT_IN_DIFF,
    _UPSERT_PROC,
    finish_many,
)
from roost.daemons.schedd.queuejobs import (
    _PLAIN_STATUSES,
    _PROCID_OF,
    GONE,
    Cluster,
    Job,
    _add_plain,
    spellings,
)
from roost.daemons.schedd.queueload import load_into
from roost.daemons.schedd.store import Op, Store, dumps


class JobQueue:
    """Clusters and procs in memory, mirrored durably by ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clusters: dict[int, Cluster] = {}
        self.totals: dict[int, int] = {}
        self.owner_totals: dict[str, dict[int, int]] = {}
        # Idle jobs not yet handed to a claim, per owner, in submit order (dicts as ordered
        # sets, keyed by the Job itself: hashed by identity, no key tuple per job to make),
        # a cluster with plain procs as one IdleBlock (idleblocks.py: its procs are made
        # into Jobs only as they are handed out); None until first asked for after a load
        self._idle: dict[str, dict[Any, Any]] | None = {}
        self._blocks: dict[int, IdleBlock] = {}  # cluster id -> its block in the idle lists
        self.running: dict[tuple[int, int], Job] = {}
        self.next_cluster = 1
        self.reserved: set[int] = set()
        # Sizes of clusters whose last proc left the queue (newest 10,000), so WAIT_JOBS
        # can answer without reading history (whose rows may still be committing).
        self.gone: dict[int, int] = {}
        # Clusters whose ad is in history_clusters (written with their first finished proc)
        self._history_cluster: set[int] = set()
        self._shape_from: dict[int, int] = {}  # (while loading) the first shaped proc of each cluster

    @property
    def idle(self) -> dict[str, dict[Any, Any]]:
        """Idle jobs not handed to a claim, per owner: Jobs and IdleBlocks (made at the
        first ask after a load, in cluster order: a cluster with plain procs as its block,
        another's idle jobs in proc order). ``idle_jobs`` gives the Jobs."""
        if self._idle is None:
            idle: dict[str, dict[Any, Any]] = {}
            with no_gc():
                for cluster in self.clusters.values():
                    if cluster.counts.get(IDLE):
                        per = idle.setdefault(cluster.owner, {})
                        block = block_of(cluster)
                        if block is not None:
                            per[block] = block
                            self._blocks[cluster.id] = block
                            continue
                        for job in cluster.procs.values():
                            if job.status == IDLE and not job.busy:
                                per[job] = job
            self._idle = idle
        return self._idle

    def idle_jobs(self, owner: str) -> Iterator[Job]:
        """The owner's idle jobs not handed to a claim, in the idle list's order (a
        block's plain procs made into Jobs as they are reached: take what you need)."""
        listed = self.idle.get(owner)
        if not listed:
            return
        for entry in list(listed):
            if type(entry) is IdleBlock:
                if self.clusters.get(entry.cluster.id) is entry.cluster:
                    yield from covered(entry, listed)
            elif entry.status == IDLE and not entry.busy and entry in listed:
                yield entry

    def is_idle(self, job: Job) -> bool:
        """Whether ``job`` is in the idle lists (on its own or in its cluster's block)."""
        if job.status != IDLE or job.busy or not job.cluster.holds(job):
            return False
        listed = self.idle.get(job.cluster.owner)
        if listed is not None and job in listed:
            return True
        block = self._blocks.get(job.cluster.id)
        return block is not None and listed is not None and block in listed and block.covers(job.proc)

    def _drop_block(self, cluster: Cluster) -> None:
        block = self._blocks.pop(cluster.id, None)
        if block is not None and self._idle is not None:
            per = self._idle.get(cluster.owner)
            if per is not None:
                per.pop(block, None)

    def has_idle(self) -> bool:
        """Whether any job waits for a claim (asked without making the idle lists)."""
        if self._idle is None:
            return bool(self.totals.get(IDLE))
        return any(self._idle.values())

    # -- loading -------------------------------------------------------------------------
    def load(self) -> None:
        """Read the whole queue from the store (at start-up; queueload.py)."""
        with no_gc():
            load_into(self)

    def _index(self, cluster: Cluster, status: int | None = None) -> None:
        """Count a cluster's procs (all at once: what ``_count`` does job by job);
        ``status``: the one status all of them are known to have. Plain procs are
        counted, not made into Jobs (none runs; the idle lists are made later)."""
        counts: dict[int, int] = {}
        procs = cluster._procs
        if status is not None:
            counts[status] = cluster.size()
        else:
            for job in procs.values():
                counts[job.status] = counts.get(job.status, 0) + 1
            plain = cluster._plain
            if plain is not None and plain.n:
                counts[plain.status] = counts.get(plain.status, 0) + plain.n
        owner = cluster.owner
        per = self.owner_totals.setdefault(owner, {})
        cc = cluster.counts
        for st, n in counts.items():
            self.totals[st] = self.totals.get(st, 0) + n
            per[st] = per.get(st, 0) + n
            cc[st] = cc.get(st, 0) + n
        cid = cluster.id
        if counts.get(IDLE) and self._idle is not None:
            idle = self.idle.setdefault(owner, {})
            block = block_of(cluster)
            if block is not None:  # plain procs: listed as one entry (idleblocks.py)
                idle[block] = block
                self._blocks[cid] = block
            elif counts[IDLE] == cluster.size():  # (new jobs: none is busy yet)
                procs = cluster.procs
                idle.update(zip(procs.values(), procs.values()))
            else:
                for job in cluster.procs.values():
                    if job.status == IDLE and not job.busy:
                        idle[job] = job
        if counts.get(RUNNING) or counts.get(SUSPENDED):
            running = self.running
            for p, job in procs.items():
                if job.status == RUNNING or job.status == SUSPENDED:
                    running[(cid, p)] = job

    def _count(self, job: Job, status: int, delta: int) -> None:
        self.totals[status] = self.totals.get(status, 0) + delta
        per = self.owner_totals.get(job.cluster.owner)
        if per is None:
            per = self.owner_totals[job.cluster.owner] = {}
        per[status] = per.get(status, 0) + delta
        cc = job.cluster.counts
        cc[status] = cc.get(status, 0) + delta
        if status == IDLE and self._idle is not None:  # (else made later, from each job's status)
            if delta > 0 and not job.busy:
                self._idle.setdefault(job.cluster.owner, {})[job] = job
            elif delta < 0:
                idle = self._idle.get(job.cluster.owner)
                if idle is not None:
                    idle.pop(job, None)
        elif status == RUNNING or status == SUSPENDED:  # a suspended job still holds its claim
            if delta > 0:
                self.running[job.key] = job
            else:
                self.running.pop(job.key, None)

    def _count_many(self, cluster: Cluster, status: int, delta: int) -> None:
        """The counters of ``_count`` for ``delta`` procs of ``cluster`` at once (the
        idle and running lists are the caller's)."""
        self.totals[status] = self.totals.get(status, 0) + delta
        per = self.owner_totals.setdefault(cluster.owner, {})
        per[status] = per.get(status, 0) + delta
        cc = cluster.counts
        cc[status] = cc.get(status, 0) + delta

    # -- lookups ---------------------------------------------------------------------------
    def job(self, cid: int, proc: int) -> Job | None:
        cluster = self.clusters.get(cid)
        return cluster.job(proc) if cluster is not None else None

    def parse_id(self, text: str) -> tuple[int, int | None]:
        """``"C"`` or ``"C.P"`` as numbers; ValueError otherwise."""
        c, dot, p = text.strip().partition(".")
        return int(c), (int(p) if dot else None)

    def select(self, ids: list[str] | None = None, owner: str | None = None) -> Iterator[Job]:
        """Jobs named by ``ids`` (``"C"`` or ``"C.P"``) and/or owned by ``owner``."""
        if ids is not None:
            seen: set[tuple[int, int]] = set()
            for text in ids:
                cid, proc = self.parse_id(text)
                cluster = self.clusters.get(cid)
                if cluster is None or (owner is not None and cluster.owner != owner):
                    continue
                one = cluster.job(proc) if proc is not None else None
                jobs = cluster.procs.values() if proc is None else [one] if one is not None else []
                for job in list(jobs):
                    if job.key not in seen:
                        seen.add(job.key)
                        yield job
            return
        for cluster in list(self.clusters.values()):
            if owner is not None and cluster.owner != owner:
                continue
            yield from list(cluster.procs.values())

    def totals_named(self, owner: str | None = None) -> dict[str, int]:
        counts = self.totals if owner is None else self.owner_totals.get(owner, {})
        out = {name: counts.get(code, 0) for code, name in STATUS_NAMES.items()}
        out["Total"] = sum(out.values())
        return out

    def take_idle(self, job: Job) -> None:
        """Mark an idle job as handed to a claim (no longer offered)."""
        job.busy = True
        idle = self._idle.get(job.cluster.owner) if self._idle is not None else None
        if idle is not None:
            idle.pop(job, None)

    def give_back_idle(self, job: Job) -> None:
        """A claim could not take the job after all: offer it again."""
        job.busy = False
        if job.status == IDLE and job.cluster.holds(job) and self._idle is not None:
            self._idle.setdefault(job.cluster.owner, {})[job] = job

    # -- changes (memory now, SQL operations returned) ------------------------------------
    def new_cluster_id(self) -> int:
        cid = self.next_cluster
        self.next_cluster += 1
        self.reserved.add(cid)
        return cid

    def add_cluster(
        self, cid: int, owner: str, cluster_ad: dict[str, Any], diffs: list[dict[str, Any]],
        gjid: tuple[str, str] | None = None,
    ) -> list[Op]:
        """Insert a cluster and its procs (already validated); ``gjid``: the template of
        the procs' GlobalJobId (prefix, suffix around the ProcId)."""
        with no_gc():
            return self._add_cluster(cid, owner, cluster_ad, diffs, gjid)

    def _add_cluster(
        self, cid: int, owner: str, cluster_ad: dict[str, Any], diffs: list[dict[str, Any]],
        gjid: tuple[str, str] | None = None,
    ) -> list[Op]:
        status = cluster_ad.get("JobStatus", IDLE)
        if type(status) is not int:
            status = IDLE
        cluster_ad["JobStatus"] = status
        if gjid is not None:
            cluster_ad.pop("GlobalJobId", None)  # the procs' own, made from the template
        cluster = Cluster(cid, owner, cluster_ad, gjid, sparse=True)
        rows = []  # procs submitted in another status than the cluster's
        submitted: dict[str, Any] = {}  # the procs' differences as submitted, stored as one blob
        procs = cluster.procs
        ranges: list[list[int]] = []
        lo = hi = -2
        n = len(diffs)
        ids = None
        if n:
            with contextlib.suppress(KeyError, TypeError):
                ids = list(map(_PROCID_OF, diffs))
        values: list[tuple[Any, ...]] | None = None
        shape_from = 0
        if ids is not None and type(ids[0]) is int and ids == list(range(ids[0], ids[0] + n)):
            # proc 0 of `arguments = $(Process)` differs in nothing: its values are the cluster ad's
            skip = 1 if n > 1 and len(diffs[0]) == 1 else 0
            found = None if sum(map(len, diffs)) == n else shape_of(diffs[skip:], ids[0] + skip)
            # the procs stay ranges as after a load, Jobs when touched (in the idle lists
            # as one block: idleblocks.py)
            lazy = status in _PLAIN_STATUSES
            if found is not None:  # a million procs that differ alike
                cluster.shape, values = found
                if lazy:
                    cluster._plain = Plain([(ids[0], ids[0] + n)], status, shaped=True, owns=values,
                                           first=ids[0] + skip)
                else:
                    if skip:
                        procs[ids[0]] = Job(cluster, ids[0], status, None)
                    _add_plain(cluster, ids[0] + skip, ids[0] + n, status,
                               repeat((), n - skip) if values is None else values)
                ranges.append([ids[0], ids[0] + n])
                shape_from = ids[0] + skip
                diffs = []
            elif sum(map(len, diffs)) == n:  # every proc a lone ProcId: the million of a `queue N`
                if lazy:
                    cluster._plain = Plain([(ids[0], ids[0] + n)], status)
                else:
                    _add_plain(cluster, ids[0], ids[0] + n, status)
                ranges.append([ids[0], ids[0] + n])
                diffs = []
        for i, d in enumerate(diffs):
            if len(d) == 1 and "ProcId" in d:  # the usual proc: nothing of its own
                proc = d["ProcId"]
                if proc == hi:
                    # the int made here, not the request's: the request's objects are freed
                    # whole then, and the memory they held goes back to the system
                    procs[hi] = Job(cluster, hi, status, None)
                    hi += 1
                    continue
                procs[proc] = Job(cluster, proc, status, None)
            else:
                proc = d.get("ProcId", i)
                pst = status
                if "JobStatus" in d:
                    pst = d["JobStatus"]
                    if type(pst) is not int:
                        pst = status
                diff = d.copy()
                diff.pop("ProcId", None)
                diff.pop("JobStatus", None)
                if not diff:
                    diff = None
                else:
                    submitted[str(proc)] = diff
                procs[proc] = Job(cluster, proc, pst, diff)
                if pst != status:
                    rows.append((cid, proc, pst))
            if proc == hi:
                hi += 1
            else:
                if hi >= 0:
                    ranges.append([lo, hi])
                lo, hi = proc, proc + 1
        if hi >= 0:
            ranges.append([lo, hi])
        self.clusters[cid] = cluster
        self.reserved.discard(cid)
        self._index(cluster, None if rows else status)
        layout: dict[str, Any] = {"ranges": ranges}
        if gjid is not None:
            layout["gjid"] = list(gjid)
        if cluster.shape is not None:  # the procs column holds their own values then: {"values": [...]}
            layout["shape"] = [[k, list(t) if t else None] for k, t in cluster.shape]
            layout["shape_from"] = shape_from
        ops: list[Op] = [
            (
                "INSERT OR REPLACE INTO clusters (cluster, owner, ad, procs, layout) VALUES (?, ?, ?, ?, ?)",
                (cid, owner, dumps(cluster_ad), dumps({"values": values} if values is not None else submitted), dumps(layout)),
            ),
            ("DELETE FROM procs WHERE cluster = ?", (cid,)),  # (none: a cluster id is never reused)
            ("DELETE FROM gone_ranges WHERE cluster = ?", (cid,)),
        ]
        if rows:
            ops.append(("INSERT OR REPLACE INTO procs (cluster, proc, status) VALUES (?, ?, ?)", rows, True))
        ops.append((
            "INSERT INTO meta (key, value) VALUES ('next_cluster', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), excluded.value)",
            (str(self.next_cluster),),
        ))
        return ops

    def forget_cluster(self, cid: int) -> None:
        """Undo ``add_cluster`` in memory (its commit failed: nothing was accepted)."""
        cluster = self.clusters.pop(cid, None)
        if cluster is None:
            return
        per = self.owner_totals.get(cluster.owner, {})
        for st, n in cluster.counts.items():
            self.totals[st] = self.totals.get(st, 0) - n
            per[st] = per.get(st, 0) - n
        idle = self._idle.get(cluster.owner) if self._idle is not None else None
        if idle:
            for job in cluster.touched():
                idle.pop(job, None)
        self._drop_block(cluster)

    def set(self, job: Job, attrs: dict[str, Any], status: int | None = None) -> list[Op]:
        """Set attributes (and maybe the status) on a job in the queue."""
        if attrs:
            d = job.diff
            if d is None:
                d = job.diff = {}
            for k, v in attrs.items():
                if k in _NOT_IN_DIFF:
                    continue
                d[k] = v
        if status is not None and status != job.status:
            self._count(job, job.status, -1)
            job.status = status
            self._count(job, status, +1)
        return [self._row_op(job)]

    def set_claim(self, job: Job, claim: dict[str, Any] | None) -> None:
        job.claim = claim

    def _row_op(self, job: Job) -> Op:
        d = job._diff
        # never NULL once changed (NULL means "as submitted"), unless a shaped proc's are as submitted
        diff = None if type(d) is tuple else dumps(d) if d else "{}"
        claim = dumps(job.claim) if job.claim else None
        cluster = job.cluster
        if not cluster.sparse:
            return ("UPDATE procs SET status = ?, diff = ?, claim = ? WHERE cluster = ? AND proc = ?",
                    (job.status, diff, claim, cluster.id, job.proc))
        if not cluster.holds(job):  # gone already: its row must stay GONE
            return ("SELECT 1", ())
        return (_UPSERT_PROC, (cluster.id, job.proc, job.status, diff, claim))

    def to_history(self, job: Job, completion: int) -> list[Op]:
        """Move a finished job (Completed or Removed) out of the queue into history."""
        cluster = job.cluster
        if not cluster.holds(job):
            return []
        ops: list[Op] = self._history_cluster_ops(cluster)
        self._count(job, job.status, -1)
        cluster.drop(job)
        cluster.finished += 1
        ops.append(self._gone_op(cluster, job.proc))
        ops.append((_INSERT_HISTORY, (cluster.id, job.proc, cluster.owner, completion, job.status, dumps(job.own_obj()))))
        if not cluster.size():
            ops += self._cluster_left(cluster)
        return ops

    def finish_many(self, changes: Iterable[tuple[Job, dict[str, Any]]], status: int, completion: int,
                    keep_ads: bool = True) -> list[Op]:
        """``set`` then ``to_history`` for many jobs (condor_rm of a big queue), as three
        statements however many jobs there are (queuefinish.py)."""
        return finish_many(self, changes, status, completion, keep_ads)

    @staticmethod
    def _gone_op(cluster: Cluster, proc: int) -> Op:
        """A proc left the queue: its row goes; a sparse cluster's becomes a GONE
        tombstone (without a row the proc would read back "as submitted")."""
        if cluster.sparse:
            return (_UPSERT_PROC, (cluster.id, proc, GONE, None, None))
        return (_DELETE_PROC, (cluster.id, proc))

    def _history_cluster_ops(self, cluster: Cluster) -> list[Op]:
        """The cluster ad into history_clusters, once: history rows hold only what is the
        proc's own, so 100,000 finished jobs of a cluster write its ad once, not 100,000
        times (``Store.history_rows`` merges them back)."""
        if cluster.id in self._history_cluster:
            return []
        self._history_cluster.add(cluster.id)
        return [("INSERT OR IGNORE INTO history_clusters (cluster, ad) VALUES (?, ?)", (cluster.id, dumps(cluster.ad)))]

    def _cluster_left(self, cluster: Cluster) -> list[Op]:
        """The last proc of ``cluster`` left the queue: the cluster goes too (its size
        kept a while for WAIT_JOBS); the operations that delete its rows."""
        del self.clusters[cluster.id]
        self._drop_block(cluster)
        self._history_cluster.discard(cluster.id)
        self.gone[cluster.id] = cluster.finished
        if len(self.gone) > 10000:
            del self.gone[next(iter(self.gone))]
        ops: list[Op] = [("DELETE FROM clusters WHERE cluster = ?", (cluster.id,))]
        if cluster.sparse:
            ops.append(("DELETE FROM procs WHERE cluster = ?", (cluster.id,)))
            ops.append(("DELETE FROM gone_ranges WHERE cluster = ?", (cluster.id,)))
        return ops

    def finished(self, job: Job) -> bool:
        return job.status in (REMOVED, COMPLETED)


__all__ = ["GONE", "Cluster", "Job", "JobQueue", "spellings"]
