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
to history (status ``GONE``, until the whole cluster goes). Submitting a million
jobs writes one row; loading them reads one row and builds the procs from it.
Clusters written by older versions (no layout) keep a procs row per proc.

Loaded, a sparse cluster's procs without a row stay ranges (plainprocs.py) until
touched: ``Cluster.job`` makes one proc's Job, ``Cluster.procs`` all of them, and the
idle lists are made at their first ask, so a restart with a million idle jobs makes
no Job at all before it answers.

Every change goes through a method here that updates memory, keeps the counters
(totals per status and per owner) exact, and returns the SQL operations that make
it durable; the daemon commits them (group commit) before reporting the change.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from itertools import compress, repeat
from operator import attrgetter, itemgetter
from typing import Any

from roost.classad import ClassAd
from roost.core.jobpolicy import COMPLETED, HELD, IDLE, REMOVED, RUNNING, STATUS_NAMES, SUSPENDED
from roost.daemons.schedd.adcopies import copy_ad, set_values, small_ad
from roost.daemons.schedd.bulkgc import no_gc
from roost.daemons.schedd.plainprocs import Plain
from roost.daemons.schedd.procshape import ABSENT, Shape, own_of, shape_of, shaped_value
from roost.daemons.schedd.store import Op, Store, dumps
from roost.net.adwire import obj_to_ad

# Attributes a job keeps in its procs row columns rather than in the diff.
_NOT_IN_DIFF = ("ProcId", "JobStatus")
_DELETE_PROC = "DELETE FROM procs WHERE cluster = ? AND proc = ?"
_INSERT_HISTORY = "INSERT OR REPLACE INTO history (cluster, proc, owner, completion, status, ad) VALUES (?, ?, ?, ?, ?, ?)"
#: a sparse cluster's procs row for a proc that has left the queue (moved to history)
GONE = -1
_UPSERT_PROC = ("INSERT INTO procs (cluster, proc, status, diff, claim) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(cluster, proc) DO UPDATE SET status = excluded.status, diff = excluded.diff, "
                "claim = excluded.claim")


class Job:
    """One proc: status, differences from the cluster ad, and its claim while running.

    ``_diff`` is None (no differences), a dict, or a tuple: the proc's values in its
    cluster's ``shape`` (procshape.py), ~60 bytes a proc instead of a dict's
    ~250. ``diff`` gives the dict (made from the tuple and kept: a caller may change it);
    ``own()`` gives it without keeping it, for passes over every job."""

    __slots__ = ("cluster", "proc", "status", "_diff", "claim", "busy")

    def __init__(self, cluster: Cluster, proc: int, status: int,
                 diff: dict[str, Any] | tuple[Any, ...] | None) -> None:
        self.cluster = cluster
        self.proc = proc
        self.status = status
        self._diff: dict[str, Any] | tuple[Any, ...] | None = diff
        self.claim: dict[str, Any] | None = None  # {"claim_id", "startd_address", "slot_name"}
        self.busy = False  # matched to a claim or being started; not offered again

    @property
    def diff(self) -> dict[str, Any] | None:
        """The proc's own attributes (a dict its owner may change in place)."""
        d = self._diff
        if type(d) is tuple:
            d = self._diff = own_of(self.cluster.shape, self.proc, d)
        return d  # type: ignore[return-value]

    @diff.setter
    def diff(self, value: dict[str, Any] | None) -> None:
        self._diff = value

    def own_names(self) -> Any:
        """The names of the proc's own attributes (``own()``'s keys, none made)."""
        d = self._diff
        if d is None:
            return ()
        if type(d) is tuple:
            return self.cluster.shape_names
        return d

    def own(self) -> dict[str, Any] | None:
        """``diff`` to read only: a compact proc's dict is made for the caller, not kept."""
        d = self._diff
        if type(d) is tuple:
            return own_of(self.cluster.shape, self.proc, d)
        return d  # type: ignore[return-value]

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
        d = self._diff
        if d is not None:
            if type(d) is tuple:
                shaped = shaped_value(self.cluster.shape, self.proc, d, attr)
                if shaped is not ABSENT:
                    return shaped
            elif attr in d:
                return d[attr]
        if attr == "GlobalJobId" and self.cluster.gjid is not None:
            return self.global_job_id()
        return self.cluster.ad.get(attr, default)

    def global_job_id(self) -> str | None:
        """``GlobalJobId``: the proc's own, else made from its cluster's template."""
        d = self.own()
        if d is not None and "GlobalJobId" in d:
            return d["GlobalJobId"]
        g = self.cluster.gjid
        if g is None:
            v = self.cluster.ad.get("GlobalJobId")
            return v if isinstance(v, str) else None
        return f"{g[0]}{self.proc}{g[1]}"

    def spelled(self, attrs: dict[str, Any], cluster_names: dict[str, str] | None = None) -> dict[str, Any]:
        """``attrs`` (a user's or a job's own edit) under the names this job's ad already
        spells them: ClassAd names ignore case, and a second key differing only in case
        would leave two values, whichever a reader met last winning (the schedd reads
        exact keys, ClassAds the last one). ``cluster_names``: ``spellings`` of the
        cluster's ad, made once for many of its procs (qedit of 100,000 jobs)."""
        cluster_names = spellings(self.cluster.ad) if cluster_names is None else cluster_names
        own: dict[str, str] | None = None
        out: dict[str, Any] = {}
        for k, v in attrs.items():
            lk = k.lower()
            name = cluster_names.get(lk)
            if name is None:
                if own is None:
                    own = spellings(self.own() or {})
                name = own.get(lk, k)
            out[name] = v
        return out

    def diff_obj(self) -> dict[str, Any]:
        """The per-proc part as the wire shows it (ProcId, JobStatus and the diff)."""
        out: dict[str, Any] = {"ProcId": self.proc}
        d = self.own()
        if d:
            out.update(d)
        g = self.cluster.gjid
        if g is not None and "GlobalJobId" not in out:  # where a submitted proc had it: after its own
            out["GlobalJobId"] = f"{g[0]}{self.proc}{g[1]}"
        if self.status != self.cluster.ad.get("JobStatus"):
            out["JobStatus"] = self.status
        return out

    def merged(self) -> dict[str, Any]:
        """The job's full ad in wire form."""
        return {**self.cluster.ad, **self.own_obj()}

    def own_obj(self) -> dict[str, Any]:
        """What is the proc's own over its cluster ad, in the order ``merged`` adds it:
        ProcId, its differences, GlobalJobId from the template, JobStatus (what a
        history row holds)."""
        out: dict[str, Any] = {"ProcId": self.proc}
        d = self.own()
        if d:
            out.update(d)
        g = self.cluster.gjid
        if g is not None and "GlobalJobId" not in out:
            out["GlobalJobId"] = f"{g[0]}{self.proc}{g[1]}"
        out["JobStatus"] = self.status
        return out

    def classad_for(self, names: frozenset[str]) -> ClassAd | None:
        """An ad with only the attributes in ``names`` (lower case), enough to evaluate an
        expression whose reach (``Cluster.reach``) they are, ~10x cheaper than
        ``classad()``; None when one of the proc's own values among them is an
        expression (it may read beyond them)."""
        extra: dict[str, Any] = {"ProcId": self.proc, "JobStatus": self.status}
        if "globaljobid" in names and self.cluster.gjid is not None:
            extra["GlobalJobId"] = self.global_job_id()
        d = self.own()
        if d:
            for k, v in d.items():
                if k.lower() in names:
                    if type(v) is str and v.startswith("/Expr("):
                        return None
                    extra[k] = v
        return small_ad(self.cluster.classad(), names, extra)

    def classad(self) -> ClassAd:
        """The job's full ad as a ClassAd: a copy of the cluster's (parsed once) with the
        proc's differences set on it, ~20x cheaper than parsing the merged ad."""
        ad = copy_ad(self.cluster.classad())
        extra: dict[str, Any] = {"ProcId": self.proc, "JobStatus": self.status}
        d = self.own()
        if d:
            extra.update(d)
        g = self.cluster.gjid
        if g is not None and "GlobalJobId" not in extra:
            extra["GlobalJobId"] = f"{g[0]}{self.proc}{g[1]}"
        set_values(ad, extra)
        return ad


_PROC_OF = attrgetter("proc")
_DIFF_OF = attrgetter("_diff")
_PROCID_OF = itemgetter("ProcId")
#: the statuses a cluster's plain procs may be kept in at load (none runs: see _index)
_PLAIN_STATUSES = (IDLE, HELD)  # (HELD: ``hold = true`` at submit)
def spellings(ad: dict[str, Any]) -> dict[str, str]:
    """Lower-cased name -> the name as ``ad`` spells it (the first, if it has several)."""
    have: dict[str, str] = {}
    for k in ad:
        have.setdefault(k.lower(), k)
    return have


def _add_plain(cluster: Cluster, lo: int, hi: int, status: int, owns: Iterable[Any] | None = None,
               into: dict[int, Job] | None = None) -> None:
    """Procs ``lo`` to ``hi - 1`` of one status and no differences (or ``owns``: their
    shaped values), looped over in C (a million in ~0.3 s); each ProcId is one int,
    shared by the Job and the dict's key. ``into``: the dict (else the cluster's procs)."""
    n = hi - lo
    jobs = list(map(Job, repeat(cluster, n), range(lo, hi), repeat(status, n),
                    repeat(None, n) if owns is None else owns))
    (cluster._procs if into is None else into).update(zip(map(_PROC_OF, jobs), jobs))


class Cluster:
    """One submitted cluster: its shared ad and its procs still in the queue."""

    __slots__ = ("id", "owner", "ad", "_procs", "_plain", "_classad", "finished", "counts", "gjid", "sparse",
                 "_shape", "shape_names")

    def __init__(self, cid: int, owner: str, ad: dict[str, Any], gjid: tuple[str, str] | None = None,
                 sparse: bool = False, shape: Shape | None = None) -> None:
        self.id = cid
        #: the attributes every proc submitted differs in (``Job._diff`` a tuple: see own_of)
        self.shape = shape
        #: GlobalJobId of proc P is gjid[0] + P + gjid[1] (None: each proc's diff holds its own)
        self.gjid = gjid
        #: procs rows exist only for procs changed since submit (see the module's docstring)
        self.sparse = sparse
        self.owner = owner
        self.ad = ad
        #: the procs made into a ``Job`` (all of them, unless ``_plain`` holds the rest)
        self._procs: dict[int, Job] = {}
        #: procs untouched since submit, not made into Jobs yet (plainprocs.py); None: none
        self._plain: Plain | None = None
        self._classad: ClassAd | None = None
        self.finished = 0  # procs already moved to history (WAIT_JOBS counts them)
        self.counts: dict[int, int] = {}  # procs in the queue per status

    @property
    def shape(self) -> Shape | None:
        return self._shape

    @shape.setter
    def shape(self, shape: Shape | None) -> None:
        self._shape = shape
        self.shape_names: tuple[str, ...] = tuple(k for k, _t in shape or ())

    @property
    def procs(self) -> dict[int, Job]:
        """Every proc in the queue by ProcId, in proc order: the plain ones are made into
        Jobs first (once). Looking up one proc is ``job``; counting them, ``size``."""
        if self._plain is not None:
            self._make_all()
        return self._procs

    def _make_all(self) -> None:
        plain = self._plain
        assert plain is not None
        self._plain = None
        made: dict[int, Job] = {}
        status = plain.status
        common = plain.common()
        for lo, hi, owns in plain.runs():
            _add_plain(self, lo, hi, status, repeat(common, hi - lo) if owns is None else owns, into=made)
        if self._procs:  # those made one by one before: in proc order among the rest
            made.update(self._procs)
            made = dict(sorted(made.items()))
        self._procs = made

    def job(self, proc: int) -> Job | None:
        """Proc ``proc`` if it is in the queue (a plain one made into its Job now)."""
        j = self._procs.get(proc)
        if j is None:
            plain = self._plain
            if plain is not None and plain.has(proc):
                j = self._procs[proc] = Job(self, proc, plain.status, plain.own(proc))
                plain.take(proc)
        return j

    def holds(self, job: Job) -> bool:
        """Whether ``job`` is (still) this cluster's proc in the queue: a Job once made
        stays the proc's until it leaves, so this looks at the made ones only."""
        return self._procs.get(job.proc) is job

    def size(self) -> int:
        """How many procs are in the queue (none made into Jobs for it)."""
        plain = self._plain
        return len(self._procs) + (plain.n if plain is not None else 0)

    def touched(self) -> Iterable[Job]:
        """The procs made into Jobs (all, unless some are still plain: those have the
        cluster's status and ad and their submitted values, and no claim)."""
        return self._procs.values()

    def with_own(self, names: frozenset[str] | set[str] | None = None) -> Iterable[Job]:
        """The procs that may have attributes of their own (among ``names``, lower case,
        if given): a plain proc of a cluster without a shape or submitted differences
        naming one has none, and is not made into a Job for it."""
        plain = self._plain
        if plain is not None and plain.may_own(self.shape_names, names):
            return self.procs.values()
        return self._procs.values()

    def first_proc(self) -> int:
        """The lowest ProcId in the queue (the cluster has procs)."""
        plain = self._plain
        lows = [p for p in (min(self._procs, default=None), plain.first_proc() if plain else None) if p is not None]
        return min(lows)

    def last_proc(self) -> int:
        plain = self._plain
        highs = [p for p in (max(self._procs, default=None), plain.last_proc() if plain else None) if p is not None]
        return max(highs)

    def drop(self, job: Job) -> None:
        """``job`` leaves the queue (to history)."""
        del self._procs[job.proc]

    def any_own(self) -> bool:
        """Whether any proc may have attributes of its own (asked in C, not per proc)."""
        plain = self._plain
        return (bool(self.shape_names) or (plain is not None and bool(plain.sub))
                or any(map(_DIFF_OF, self._procs.values())))

    def procs_naming(self, *attrs: str) -> Iterable[Job]:
        """The procs whose own attributes may name one of ``attrs`` (every other proc has
        its cluster's values there; callers check each one found), picked out in C:
        a million procs without a difference cost ~20 ms, not a call each. Plain procs
        are made into Jobs only when their submitted values may name one."""
        if any(a in self.shape_names for a in attrs) or (self._plain is not None and self._plain.subs_name(attrs)):
            return self.procs.values()
        procs = self._procs.values()
        return [j for j in compress(procs, map(_DIFF_OF, procs))
                if type(j._diff) is dict and any(a in j._diff for a in attrs)]  # type: ignore[operator]

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


class JobQueue:
    """Clusters and procs in memory, mirrored durably by ``Store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.clusters: dict[int, Cluster] = {}
        self.totals: dict[int, int] = {}
        self.owner_totals: dict[str, dict[int, int]] = {}
        # Idle jobs not yet handed to a claim, per owner, in submit order (dicts as ordered
        # sets, keyed by the Job itself: hashed by identity, no key tuple per job to make);
        # None until first asked for after a load (``idle``): a restart with a million idle
        # jobs makes none of them into Jobs until a negotiation (or a query) wants them
        self._idle: dict[str, dict[Job, Job]] | None = {}
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
    def idle(self) -> dict[str, dict[Job, Job]]:
        """Idle jobs not handed to a claim, per owner (made at the first ask after a
        load: every cluster's procs in cluster and proc order, as a load used to)."""
        if self._idle is None:
            idle: dict[str, dict[Job, Job]] = {}
            with no_gc():
                for cluster in self.clusters.values():
                    if cluster.counts.get(IDLE):
                        per = idle.setdefault(cluster.owner, {})
                        for job in cluster.procs.values():
                            if job.status == IDLE and not job.busy:
                                per[job] = job
            self._idle = idle
        return self._idle

    def has_idle(self) -> bool:
        """Whether any job waits for a claim (asked without making the idle lists)."""
        if self._idle is None:
            return bool(self.totals.get(IDLE))
        return any(self._idle.values())

    # -- loading -------------------------------------------------------------------------
    def load(self) -> None:
        """Read the whole queue from the store (at start-up)."""
        with no_gc():
            self._load()

    def _load(self) -> None:
        self._idle = None  # made when first asked for (``idle``)
        self.next_cluster = int(self.store.meta("next_cluster", "1") or 1)
        submitted: dict[int, Any] = {}  # {ProcId: diff}, or a shaped cluster's {"values": [...]}
        layouts: dict[int, list[list[int]]] = {}
        loads = json.loads
        for cid, owner, ad_text, procs_text, layout_text in self.store.load_clusters():
            layout = loads(layout_text) if layout_text else None
            gjid = layout.get("gjid") if layout else None
            shape = layout.get("shape") if layout else None
            cluster = Cluster(cid, owner, loads(ad_text), tuple(gjid) if gjid else None, layout is not None,
                              tuple((k, tuple(t) if t else None) for k, t in shape) if shape else None)
            self.clusters[cid] = cluster
            if layout is not None:
                layouts[cid] = layout.get("ranges") or []
                if "shape_from" in layout:
                    self._shape_from[cid] = int(layout["shape_from"])
            if procs_text and procs_text != "{}":
                submitted[cid] = loads(procs_text)
            self.next_cluster = max(self.next_cluster, cid + 1)
        for cid, n in self.store.history_counts():
            cluster = self.clusters.get(cid)
            if cluster is not None:
                cluster.finished = n
        changed: dict[int, dict[int, tuple[int, str | None, str | None]]] = {}
        for cid, proc, status, diff_text, claim_text in self.store.load_procs():
            cluster = self.clusters.get(cid)
            if cluster is None:
                continue
            if cluster.sparse:
                changed.setdefault(cid, {})[proc] = (status, diff_text, claim_text)
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
        uniform: dict[int, int] = {}  # clusters whose procs all have the cluster's status
        for cid, ranges in layouts.items():
            cluster = self.clusters[cid]
            if Plain.fits(ranges) and cluster.ad.get("JobStatus", IDLE) in _PLAIN_STATUSES:
                self._keep_plain(cluster, ranges, submitted.get(cid) or {}, changed.get(cid) or {})
                continue
            self._build_sparse(cluster, ranges, submitted.get(cid) or {}, changed.get(cid) or {})
            if cid not in changed:
                uniform[cid] = cluster.ad.get("JobStatus", IDLE)
        for cluster in self.clusters.values():
            self._index(cluster, uniform.get(cluster.id))

    def _keep_plain(self, cluster: Cluster, ranges: list[list[int]], sub: Any,
                    changed: dict[int, tuple[int, str | None, str | None]]) -> None:
        """A sparse cluster's procs as ranges (plainprocs.py): only those with a procs row
        (changed since submit, or gone) are looked at now, the rest when touched."""
        status = cluster.ad.get("JobStatus", IDLE)
        shaped = cluster.shape is not None
        first = self._shape_from.pop(cluster.id, ranges[0][0] if ranges else 0)
        plain = Plain([(lo, hi) for lo, hi in ranges], status, shaped=shaped,
                      owns=sub.get("values") if shaped and sub else None, sub=None if shaped else sub, first=first)
        loads = json.loads
        procs = cluster._procs
        for proc, (st, diff_text, claim_text) in changed.items():
            if not plain.covers(proc):
                continue  # (a row of a proc never submitted: as a full build, left out)
            own = plain.own(proc)
            plain.take(proc)
            if st == GONE:
                continue
            job = procs[proc] = Job(cluster, proc, st, (loads(diff_text) or None) if diff_text is not None else own)
            if claim_text:
                job.claim = loads(claim_text)
        cluster._plain = plain

    def _build_sparse(self, cluster: Cluster, ranges: list[list[int]], sub: Any,
                      changed: dict[int, tuple[int, str | None, str | None]]) -> None:
        """A sparse cluster's procs: its submitted ids, less those gone, with their changes."""
        if cluster.shape is not None:
            first = self._shape_from.pop(cluster.id, ranges[0][0] if ranges else 0)
            self._build_shaped(cluster, ranges, sub.get("values") if sub else None, changed, first)
            return
        procs = cluster.procs
        status = cluster.ad.get("JobStatus", IDLE)
        loads = json.loads
        for lo, hi in ranges:
            if not sub and not changed:  # the usual million: one status, no differences
                _add_plain(cluster, lo, hi, status)
                continue
            for proc in range(lo, hi):
                row = changed.get(proc)
                if row is None:
                    procs[proc] = Job(cluster, proc, status, sub.get(str(proc)) if sub else None)
                    continue
                st, diff_text, claim_text = row
                if st == GONE:
                    continue
                diff = (loads(diff_text) or None) if diff_text is not None else sub.get(str(proc))
                job = procs[proc] = Job(cluster, proc, st, diff)
                if claim_text:
                    job.claim = loads(claim_text)

    def _build_shaped(self, cluster: Cluster, ranges: list[list[int]], values: list[list[Any]] | None,
                      changed: dict[int, tuple[int, str | None, str | None]], first: int) -> None:
        """``_build_sparse`` of a shaped cluster: procs from ``first`` on have the shape
        (those before it, proc 0 whose values are the cluster ad's, none), ``values``
        (None: all templates) their own values in the order of ``ranges``."""
        owns: list[tuple[Any, ...]] | None = list(map(tuple, values)) if values is not None else None
        status = cluster.ad.get("JobStatus", IDLE)
        procs = cluster.procs
        loads = json.loads
        at = 0
        for lo, hi in ranges:
            if not changed:
                if lo < first:
                    _add_plain(cluster, lo, min(first, hi), status)
                start = max(lo, first)
                if start < hi:
                    _add_plain(cluster, start, hi, status,
                               repeat((), hi - start) if owns is None else owns[at:at + hi - start])
                    at += hi - start
                continue
            for proc in range(lo, hi):
                own: tuple[Any, ...] | None = None
                if proc >= first:
                    own = () if owns is None else owns[at]
                    at += 1
                row = changed.get(proc)
                if row is None:
                    procs[proc] = Job(cluster, proc, status, own)
                    continue
                st, diff_text, claim_text = row
                if st == GONE:
                    continue
                job = procs[proc] = Job(cluster, proc, st, (loads(diff_text) or None) if diff_text is not None else own)
                if claim_text:
                    job.claim = loads(claim_text)

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
            if counts[IDLE] == cluster.size():  # (new jobs: none is busy yet)
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
            # while the idle lists are not made (a schedd that has not negotiated since it
            # started), the procs stay ranges as after a load: Jobs when touched
            lazy = self._idle is None and status in _PLAIN_STATUSES
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

    def finish_many(self, changes: Iterable[tuple[Job, dict[str, Any]]], status: int, completion: int) -> list[Op]:
        """``set`` then ``to_history`` for many jobs (condor_rm of a big queue): each
        job's ``attrs`` and the final ``status`` set, its row deleted and its history row
        written, all as three statements however many jobs there are, and no row update
        for a row about to go. Jobs no longer in the queue are passed over."""
        first: list[Op] = []
        deletes: list[tuple[int, int]] = []
        tombstones: dict[int, list[tuple[Any, ...]]] = {}  # sparse clusters' GONE rows, per cluster
        rows: list[tuple[Any, ...]] = []
        left: list[Op] = []
        for job, attrs in changes:
            cluster = job.cluster
            if not cluster.holds(job):
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
            cluster.drop(job)
            cluster.finished += 1
            if cluster.sparse:
                tombstones.setdefault(cluster.id, []).append((cluster.id, job.proc, GONE, None, None))
            else:
                deletes.append((cluster.id, job.proc))
            rows.append((cluster.id, job.proc, cluster.owner, completion, status, dumps(job.own_obj())))
            if not cluster.size():
                tombstones.pop(cluster.id, None)  # its procs rows all go with it
                left += self._cluster_left(cluster)
        if not rows:
            return []
        ops = first
        if deletes:
            ops.append((_DELETE_PROC, deletes, True))
        gone = [row for part in tombstones.values() for row in part]
        if gone:
            ops.append((_UPSERT_PROC, gone, True))
        return [*ops, (_INSERT_HISTORY, rows, True), *left]

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
        self._history_cluster.discard(cluster.id)
        self.gone[cluster.id] = cluster.finished
        if len(self.gone) > 10000:
            del self.gone[next(iter(self.gone))]
        ops: list[Op] = [("DELETE FROM clusters WHERE cluster = ?", (cluster.id,))]
        if cluster.sparse:
            ops.append(("DELETE FROM procs WHERE cluster = ?", (cluster.id,)))
        return ops

    def finished(self, job: Job) -> bool:
        return job.status in (REMOVED, COMPLETED)
