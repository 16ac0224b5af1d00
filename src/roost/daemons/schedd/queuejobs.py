"""A job queue's jobs: ``Job`` (one proc: status, its differences from the cluster
ad, its claim) and ``Cluster`` (the cluster ad parsed once, its procs, made from
plain ranges when touched). jobqueue.py's ``JobQueue`` holds them, keeps their
counters and writes their rows; queueload.py makes them at start-up.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, repeat
from operator import attrgetter, itemgetter
from typing import Any

from roost.classad import ClassAd
from roost.core.jobpolicy import HELD, IDLE
from roost.daemons.schedd.adcopies import copy_ad, set_values, small_ad
from roost.daemons.schedd.plainprocs import Plain
from roost.daemons.schedd.procshape import ABSENT, Shape, own_of, shaped_value
from roost.net.adwire import obj_to_ad

#: a sparse cluster's procs row for a proc that has left the queue (moved to history)
GONE = -1


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
