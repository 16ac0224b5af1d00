"""The schedd's job queue in memory: clusters, compact procs, counters, idle lists.

A job is not a ClassAd: it is a ``Job`` (status, a small dict of the attributes in
which it differs from its cluster ad, and the claim it runs on), so 100,000 idle
jobs of one cluster cost one cluster ad and 100,000 small objects. ``JobStatus``
lives in ``Job.status`` only and is added when a job's ad is shown. Full ads are
built on demand (``merged``/``classad``) for policy evaluation and shadows.

Every change goes through a method here that updates memory, keeps the counters
(totals per status and per owner) exact, and returns the SQL operations that make
it durable; the daemon commits them (group commit) before reporting the change.
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Iterable, Iterator
from typing import Any

from roost.classad import ClassAd
from roost.core.jobpolicy import COMPLETED, HELD, IDLE, REMOVED, RUNNING, STATUS_NAMES, SUSPENDED
from roost.daemons.schedd.store import Op, Store, dumps
from roost.net.adwire import obj_to_ad

# Attributes a job keeps in its procs row columns rather than in the diff.
_NOT_IN_DIFF = ("ProcId", "JobStatus")
_DELETE_PROC = "DELETE FROM procs WHERE cluster = ? AND proc = ?"
_INSERT_HISTORY = "INSERT OR REPLACE INTO history (cluster, proc, owner, completion, status, ad) VALUES (?, ?, ?, ?, ?, ?)"


class Job:
    """One proc: status, differences from the cluster ad, and its claim while running."""

    __slots__ = ("cluster", "proc", "status", "diff", "claim", "busy")

    def __init__(self, cluster: Cluster, proc: int, status: int, diff: dict[str, Any] | None) -> None:
        self.cluster = cluster
        self.proc = proc
        self.status = status
        self.diff = diff
        self.claim: dict[str, Any] | None = None  # {"claim_id", "startd_address", "slot_name"}
        self.busy = False  # matched to a claim or being started; not offered again

    @property
    def id(self) -> str:
        return f"{self.cluster.id}.{self.proc}"

    @property
    def key(self) -> tuple[int, int]:
        return (self.cluster.id, self.proc)

    @property
    def owner(self) -> str:
        return self.cluster.owner

    def get(self, attr: str, default: Any = None) -> Any:
        """An attribute's wire value (diff first, then cluster ad)."""
        if attr == "JobStatus":
            return self.status
        d = self.diff
        if d is not None and attr in d:
            return d[attr]
        return self.cluster.ad.get(attr, default)

    def spelled(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """``attrs`` (a user's or a job's own edit) under the names this job's ad already
        spells them: ClassAd names ignore case, and a second key differing only in case
        would leave two values, whichever a reader met last winning (the schedd reads
        exact keys, ClassAds the last one)."""
        have: dict[str, str] = {}
        for src in (self.cluster.ad, self.diff or {}):
            for k in src:
                have.setdefault(k.lower(), k)
        return {have.get(k.lower(), k): v for k, v in attrs.items()}

    def diff_obj(self) -> dict[str, Any]:
        """The per-proc part as the wire shows it (ProcId, JobStatus and the diff)."""
        out: dict[str, Any] = {"ProcId": self.proc}
        if self.diff:
            out.update(self.diff)
        if self.status != self.cluster.ad.get("JobStatus"):
            out["JobStatus"] = self.status
        return out

    def merged(self) -> dict[str, Any]:
        """The job's full ad in wire form."""
        out = dict(self.cluster.ad)
        out["ProcId"] = self.proc
        if self.diff:
            out.update(self.diff)
        out["JobStatus"] = self.status
        return out

    def classad_for(self, names: frozenset[str]) -> ClassAd | None:
        """An ad with only the attributes in ``names`` (lower case), enough to evaluate an
        expression whose reach (``Cluster.reach``) they are, ~10x cheaper than
        ``classad()``; None when one of the proc's own values among them is an
        expression (it may read beyond them)."""
        extra: dict[str, Any] = {"ProcId": self.proc, "JobStatus": self.status}
        d = self.diff
        if d:
            for k, v in d.items():
                if k.lower() in names:
                    if type(v) is str and v.startswith("/Expr("):
                        return None
                    extra[k] = v
        return _small_ad(self.cluster.classad(), names, extra)

    def classad(self) -> ClassAd:
        """The job's full ad as a ClassAd: a copy of the cluster's (parsed once) with the
        proc's differences set on it, ~20x cheaper than parsing the merged ad."""
        ad = _copy_ad(self.cluster.classad())
        extra: dict[str, Any] = {"ProcId": self.proc, "JobStatus": self.status}
        if self.diff:
            extra.update(self.diff)
        for k, v in extra.items():
            t = type(v)
            if t is int or t is float or t is bool or (t is str and not v.startswith("/Expr(")):
                ad[k] = v
            else:
                ad.update(obj_to_ad({k: v}))
        return ad


def _small_ad(base: ClassAd, names: frozenset[str], extra: dict[str, Any]) -> ClassAd:
    """A ClassAd of ``base``'s attributes named in ``names`` (lower case; their trees are
    shared, immutable) with ``extra`` set over them."""
    ad = ClassAd.__new__(ClassAd)
    attrs, spelled, lits = base._attrs, base._names, base._lits  # type: ignore[attr-defined]
    ad._attrs = {k: attrs[k] for k in names if k in attrs}  # type: ignore[attr-defined]
    ad._names = {k: spelled[k] for k in ad._attrs}  # type: ignore[attr-defined]
    ad._lits = {k: lits[k] for k in ad._attrs if k in lits}  # type: ignore[attr-defined]
    ad.parent = None
    ad._plain = base._plain  # type: ignore[attr-defined]
    for k, v in extra.items():
        t = type(v)
        if t is int or t is float or t is bool or (t is str and not v.startswith("/Expr(")):
            ad[k] = v
        else:
            ad.update(obj_to_ad({k: v}))
    return ad


class Cluster:
    """One submitted cluster: its shared ad and its procs still in the queue."""

    __slots__ = ("id", "owner", "ad", "procs", "_classad", "finished", "counts")

    def __init__(self, cid: int, owner: str, ad: dict[str, Any]) -> None:
        self.id = cid
        self.owner = owner
        self.ad = ad
        self.procs: dict[int, Job] = {}
        self._classad: ClassAd | None = None
        self.finished = 0  # procs already moved to history (WAIT_JOBS counts them)
        self.counts: dict[int, int] = {}  # procs in the queue per status

    def classad(self) -> ClassAd:
        """The cluster ad parsed once (the cluster ad never changes after submit)."""
        if self._classad is None:
            self._classad = obj_to_ad(self.ad)
        return self._classad

    def reach(self, expr: Any, refs: set[str]) -> frozenset[str]:
        """Every attribute name (lower case) evaluating ``expr`` (which reads ``refs``)
        can come to in a job of this cluster: ``refs`` and what the cluster ad's
        attributes among them read in turn, transitively."""
        ad = self.classad()
        names = set(refs) | {"procid", "jobstatus"}
        for r in ad.internalRefs(expr) + ad.externalRefs(expr):
            if r:
                names.add(r.lower().split(".")[-1])
        return frozenset(names)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """Bulk creation of long-lived objects (100,000 procs) without the cyclic collector
    rescanning the growing heap meanwhile (3-7x faster); afterwards the survivors are
    frozen out of future collections. Jobs and clusters form no reference cycles
    (a proc leaves ``Cluster.procs`` before its cluster is dropped), so reference
    counting still frees them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was:
            gc.enable()


def _copy_ad(base: ClassAd) -> ClassAd:
    """A shallow copy of a ClassAd. Copies roost.classad's three attribute tables
    directly (expression trees are immutable and shared); falls back to the public
    copy if that representation ever changes."""
    try:
        ad = ClassAd.__new__(ClassAd)
        ad._attrs = base._attrs.copy()  # type: ignore[attr-defined]
        ad._names = base._names.copy()  # type: ignore[attr-defined]
        ad._lits = base._lits.copy()  # type: ignore[attr-defined]
        ad.parent = None
        ad._plain = base._plain  # type: ignore[attr-defined]
        return ad
    except AttributeError:
        return ClassAd(base)


def _own_json(job: Job) -> str:
    """A finished job's history row: what is its own over its cluster ad, in the order
    ``Job.merged`` adds it (ProcId, the diff, JobStatus)."""
    own: dict[str, Any] = {"ProcId": job.proc}
    if job.diff:
        own.update(job.diff)
    own["JobStatus"] = job.status
    return dumps(own)


class JobQueue:
    """Clusters and procs in memory, mirrored durably by ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clusters: dict[int, Cluster] = {}
        self.totals: dict[int, int] = {}
        self.owner_totals: dict[str, dict[int, int]] = {}
        # Idle jobs not yet handed to a claim, per owner, in submit order (dicts as ordered sets).
        self.idle: dict[str, dict[tuple[int, int], Job]] = {}
        self.running: dict[tuple[int, int], Job] = {}
        self.next_cluster = 1
        self.reserved: set[int] = set()
        # Sizes of clusters whose last proc left the queue (newest 10,000), so WAIT_JOBS
        # can answer without reading history (whose rows may still be committing).
        self.gone: dict[int, int] = {}
        # Clusters whose ad is in history_clusters (written with their first finished proc)
        self._history_cluster: set[int] = set()

    # -- loading -------------------------------------------------------------------------
    def load(self) -> None:
        """Read the whole queue from the store (at start-up)."""
        with _no_gc():
            self._load()

    def _load(self) -> None:
        self.next_cluster = int(self.store.meta("next_cluster", "1") or 1)
        submitted: dict[int, dict[str, Any]] = {}
        for cid, owner, ad_text, procs_text in self.store.load_clusters():
            self.clusters[cid] = Cluster(cid, owner, json.loads(ad_text))
            if procs_text and procs_text != "{}":
                submitted[cid] = json.loads(procs_text)
            self.next_cluster = max(self.next_cluster, cid + 1)
        for cid, n in self.store.history_counts():
            cluster = self.clusters.get(cid)
            if cluster is not None:
                cluster.finished = n
        loads = json.loads
        for cid, proc, status, diff_text, claim_text in self.store.load_procs():
            cluster = self.clusters.get(cid)
            if cluster is None:
                continue
            if diff_text is not None:  # changed since submit: the row holds the whole diff
                diff = loads(diff_text) or None
            else:
                sub = submitted.get(cid)
                diff = sub.get(str(proc)) if sub else None
            job = Job(cluster, proc, status, diff)
            if claim_text:
                job.claim = loads(claim_text)
            cluster.procs[proc] = job
            self._count(job, status, +1)

    def _count(self, job: Job, status: int, delta: int) -> None:
        self.totals[status] = self.totals.get(status, 0) + delta
        per = self.owner_totals.get(job.cluster.owner)
        if per is None:
            per = self.owner_totals[job.cluster.owner] = {}
        per[status] = per.get(status, 0) + delta
        cc = job.cluster.counts
        cc[status] = cc.get(status, 0) + delta
        if status == IDLE:
            if delta > 0 and not job.busy:
                self.idle.setdefault(job.cluster.owner, {})[job.key] = job
            elif delta < 0:
                idle = self.idle.get(job.cluster.owner)
                if idle is not None:
                    idle.pop(job.key, None)
        elif status == RUNNING or status == SUSPENDED:  # a suspended job still holds its claim
            if delta > 0:
                self.running[job.key] = job
            else:
                self.running.pop(job.key, None)

    # -- lookups ---------------------------------------------------------------------------
    def job(self, cid: int, proc: int) -> Job | None:
        cluster = self.clusters.get(cid)
        return cluster.procs.get(proc) if cluster is not None else None

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
                jobs = cluster.procs.values() if proc is None else [cluster.procs[proc]] if proc in cluster.procs else []
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
        idle = self.idle.get(job.cluster.owner)
        if idle is not None:
            idle.pop(job.key, None)

    def give_back_idle(self, job: Job) -> None:
        """A claim could not take the job after all: offer it again."""
        job.busy = False
        if job.status == IDLE and job.cluster.procs.get(job.proc) is job:
            self.idle.setdefault(job.cluster.owner, {})[job.key] = job

    # -- changes (memory now, SQL operations returned) ------------------------------------
    def new_cluster_id(self) -> int:
        cid = self.next_cluster
        self.next_cluster += 1
        self.reserved.add(cid)
        return cid

    def add_cluster(
        self, cid: int, owner: str, cluster_ad: dict[str, Any], diffs: list[dict[str, Any]]
    ) -> list[Op]:
        """Insert a cluster and its procs (already validated)."""
        with _no_gc():
            return self._add_cluster(cid, owner, cluster_ad, diffs)

    def _add_cluster(
        self, cid: int, owner: str, cluster_ad: dict[str, Any], diffs: list[dict[str, Any]]
    ) -> list[Op]:
        status = cluster_ad.get("JobStatus", IDLE)
        if type(status) is not int:
            status = IDLE
        cluster_ad["JobStatus"] = status
        cluster = Cluster(cid, owner, cluster_ad)
        rows = []
        submitted: dict[str, Any] = {}  # the procs' differences as submitted, stored as one blob
        procs = cluster.procs
        counts: dict[int, int] = {}
        for i, d in enumerate(diffs):
            proc = d.get("ProcId", i)
            if "JobStatus" in d:
                pst = d["JobStatus"]
                if type(pst) is not int:
                    pst = status
            else:
                pst = status
            if len(d) == 1 and "ProcId" in d:
                diff = None
            else:
                diff = d.copy()
                diff.pop("ProcId", None)
                diff.pop("JobStatus", None)
                if not diff:
                    diff = None
                else:
                    submitted[str(proc)] = diff
            procs[proc] = Job(cluster, proc, pst, diff)
            rows.append((cid, proc, pst))
            counts[pst] = counts.get(pst, 0) + 1
        self.clusters[cid] = cluster
        self.reserved.discard(cid)
        # Counters in bulk (what _count does one job at a time).
        per = self.owner_totals.setdefault(owner, {})
        for st, n in counts.items():
            self.totals[st] = self.totals.get(st, 0) + n
            per[st] = per.get(st, 0) + n
            cluster.counts[st] = n
        if counts.get(IDLE):
            idle = self.idle.setdefault(owner, {})
            for job in procs.values():
                if job.status == IDLE:
                    idle[(cid, job.proc)] = job
        return [
            (
                "INSERT OR REPLACE INTO clusters (cluster, owner, ad, procs) VALUES (?, ?, ?, ?)",
                (cid, owner, dumps(cluster_ad), dumps(submitted)),
            ),
            ("INSERT OR REPLACE INTO procs (cluster, proc, status) VALUES (?, ?, ?)", rows, True),
            (
                "INSERT INTO meta (key, value) VALUES ('next_cluster', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), excluded.value)",
                (str(self.next_cluster),),
            ),
        ]

    def forget_cluster(self, cid: int) -> None:
        """Undo ``add_cluster`` in memory (its commit failed: nothing was accepted)."""
        cluster = self.clusters.pop(cid, None)
        if cluster is None:
            return
        per = self.owner_totals.get(cluster.owner, {})
        for st, n in cluster.counts.items():
            self.totals[st] = self.totals.get(st, 0) - n
            per[st] = per.get(st, 0) - n
        idle = self.idle.get(cluster.owner)
        if idle:
            for proc in cluster.procs:
                idle.pop((cid, proc), None)

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
        return (
            "UPDATE procs SET status = ?, diff = ?, claim = ? WHERE cluster = ? AND proc = ?",
            (
                job.status,
                dumps(job.diff) if job.diff else "{}",  # never NULL once changed: NULL means "as submitted"
                dumps(job.claim) if job.claim else None,
                job.cluster.id,
                job.proc,
            ),
        )

    def to_history(self, job: Job, completion: int) -> list[Op]:
        """Move a finished job (Completed or Removed) out of the queue into history."""
        cluster = job.cluster
        if cluster.procs.get(job.proc) is not job:
            return []
        ops: list[Op] = self._history_cluster_ops(cluster)
        self._count(job, job.status, -1)
        del cluster.procs[job.proc]
        cluster.finished += 1
        ops.append((_DELETE_PROC, (cluster.id, job.proc)))
        ops.append((_INSERT_HISTORY, (cluster.id, job.proc, cluster.owner, completion, job.status, _own_json(job))))
        if not cluster.procs:
            ops.append(self._cluster_left(cluster))
        return ops

    def finish_many(self, changes: Iterable[tuple[Job, dict[str, Any]]], status: int, completion: int) -> list[Op]:
        """``set`` then ``to_history`` for many jobs (condor_rm of a big queue): each
        job's ``attrs`` and the final ``status`` set, its row deleted and its history row
        written, all as three statements however many jobs there are, and no row update
        for a row about to go. Jobs no longer in the queue are passed over."""
        first: list[Op] = []
        deletes: list[tuple[int, int]] = []
        rows: list[tuple[Any, ...]] = []
        left: list[Op] = []
        for job, attrs in changes:
            cluster = job.cluster
            if cluster.procs.get(job.proc) is not job:
                continue
            if cluster.id not in self._history_cluster:
                first += self._history_cluster_ops(cluster)
            d = job.diff
            if d is None:
                d = job.diff = {}
            for k, v in attrs.items():
                if k not in _NOT_IN_DIFF:
                    d[k] = v
            self._count(job, job.status, -1)
            job.status = status
            del cluster.procs[job.proc]
            cluster.finished += 1
            deletes.append((cluster.id, job.proc))
            rows.append((cluster.id, job.proc, cluster.owner, completion, status, _own_json(job)))
            if not cluster.procs:
                left.append(self._cluster_left(cluster))
        if not deletes:
            return []
        return [*first, (_DELETE_PROC, deletes, True), (_INSERT_HISTORY, rows, True), *left]

    def _history_cluster_ops(self, cluster: Cluster) -> list[Op]:
        """The cluster ad into history_clusters, once: history rows hold only what is the
        proc's own, so 100,000 finished jobs of a cluster write its ad once, not 100,000
        times (``Store.history_rows`` merges them back)."""
        if cluster.id in self._history_cluster:
            return []
        self._history_cluster.add(cluster.id)
        return [("INSERT OR IGNORE INTO history_clusters (cluster, ad) VALUES (?, ?)", (cluster.id, dumps(cluster.ad)))]

    def _cluster_left(self, cluster: Cluster) -> Op:
        """The last proc of ``cluster`` left the queue: the cluster goes too (its size
        kept a while for WAIT_JOBS); the operation that deletes its row."""
        del self.clusters[cluster.id]
        self._history_cluster.discard(cluster.id)
        self.gone[cluster.id] = cluster.finished
        if len(self.gone) > 10000:
            del self.gone[next(iter(self.gone))]
        return ("DELETE FROM clusters WHERE cluster = ?", (cluster.id,))

    def finished(self, job: Job) -> bool:
        return job.status in (REMOVED, COMPLETED)


#: ACT's actions: condor_rm, condor_hold, condor_release, condor_suspend, condor_continue,
#: condor_vacate_job and condor_vacate_job -fast
ACT_ACTIONS = ("remove", "hold", "release", "suspend", "continue", "vacate", "vacate_fast")


def status_allows(action: str, status: int) -> bool:
    """Whether a user action applies to a job in ``status`` (HTCondor's rules)."""
    if action == "remove":
        return status != REMOVED and status != COMPLETED
    if action == "hold":
        return status in (IDLE, RUNNING, 6, 7)
    if action == "release":
        return status == HELD
    if action == "suspend":
        return status == RUNNING
    if action == "continue":
        return status == 7
    if action in ("vacate", "vacate_fast"):
        return status in (RUNNING, 7)
    return False
