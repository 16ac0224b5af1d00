"""Autoclusters: the schedd's idle jobs grouped as the negotiator sees them.

Jobs the matchmaker cannot tell apart (roost.core.autocluster's key) share one
autocluster id, so the negotiator gets one resource request with a count instead of
one per job. The ids are cached per *signature* (a cluster plus the proc's
significant differences: most jobs differ only in Args/Out, so key = cluster id).
An autocluster whose claim or activation was refused is kept out of GET_REQUESTS
for a while (no claim -> refuse -> release -> rematch storm).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from roost.core.autocluster import autocluster_key, significant_attributes
from roost.core.jobpolicy import IDLE
from roost.daemons.schedd import runners
from roost.daemons.schedd.idleblocks import IdleBlock, covered, made_covered, plain_idle
from roost.daemons.schedd.jobqueue import Cluster, Job, JobQueue
from roost.daemons.schedd.store import dumps

log = logging.getLogger("roost.schedd")

def not_negotiated(job: Any) -> bool:
    """A job the negotiator never sees: run on the submit host, or by the dedicated
    scheduler (which asks for its resources itself), as its universe says (runners.py)."""
    return not runners.negotiated(job.get("JobUniverse")) or job.get("WantDedicated") is True
#: an autocluster whose claim or activation was refused is left out of GET_REQUESTS for
#: this long, doubling with each further refusal up to REFUSED_BACKOFF_MAX (reset when
#: one of its jobs starts): no claim -> refuse -> release -> rematch storm
REFUSED_BACKOFF_MIN = 1.0
REFUSED_BACKOFF_MAX = 60.0


class AutoClusters:
    """Signatures, autocluster ids, the members offered in the last GET_REQUESTS, refusals."""

    def __init__(self, queue: JobQueue, submitter_of: Callable[[Any], str], reschedule: Callable[[], None]) -> None:
        self.queue = queue
        self.submitter_of = submitter_of
        self._reschedule = reschedule
        self._ac_ids: dict[Any, int] = {}  # job signature -> autocluster id
        self._ac_by_key: dict[Any, int] = {}  # roost.core.autocluster key -> autocluster id
        self._cluster_sig: dict[int, frozenset[str]] = {}
        self._members: dict[int, deque[Job]] = {}
        # refused autoclusters: id -> (not offered before this monotonic time, current delay)
        self._refused: dict[int, tuple[float, float]] = {}

    def signature(self, job: Job) -> Any:
        """A cheap key for the job's autocluster: its cluster plus those of its own
        differences that are significant (roost.core.autocluster's choice of attributes,
        computed once per cluster). Most jobs differ only in Args/Out: key = cluster id."""
        cid = job.cluster.id
        names = job.own_names()
        sig = self._cluster_sig.get(cid)
        if sig is None:
            if len(self._cluster_sig) > 10000:
                self._cluster_sig.clear()
            try:
                names = significant_attributes(job.cluster.classad())
            except Exception:
                names = ()
            sig = self._cluster_sig[cid] = frozenset(n.lower() for n in names)
        if "procid" in sig or ("globaljobid" in sig and job.cluster.gjid is not None):
            return (cid, job.proc)  # (a GlobalJobId made from the template varies as ProcId does)
        if not names or not any(k.lower() in sig for k in names):
            return cid
        items = [(k, v) for k, v in (job.own() or {}).items() if k.lower() in sig]
        return (cid, dumps(sorted(items))) if items else cid

    def note_refused(self, job: Job, why: str) -> None:
        """A claim or activation for ``job`` was refused (or its startd was unreachable):
        keep its autocluster out of GET_REQUESTS for a while, doubling per refusal, and
        ask for a cycle once that is over. Logged when the back-off starts, not per refusal."""
        if not_negotiated(job):
            return  # never negotiated: no autocluster of its own to hold back
        try:
            ac = self.autocluster_of(job, self.signature(job))
        except Exception:
            return
        now = time.monotonic()
        prev = self._refused.get(ac)
        delay = REFUSED_BACKOFF_MIN if prev is None else min(REFUSED_BACKOFF_MAX, prev[1] * 2)
        self._refused[ac] = (now + delay, delay)
        if prev is None:
            log.info("job %s: %s; autocluster %d not offered for %g s (doubling while refused, up to %g s)",
                     job.id, why, ac, delay, REFUSED_BACKOFF_MAX)
        else:
            log.debug("job %s: %s; autocluster %d not offered for %g s", job.id, why, ac, delay)
        with contextlib.suppress(RuntimeError):  # no loop: nothing to wake
            asyncio.get_running_loop().call_later(delay + 0.01, self._reschedule)

    def note_started(self, job: Job) -> None:
        """``job`` was activated: its autocluster's refusals are forgiven."""
        if self._refused:
            ac = self._ac_ids.get(self.signature(job))
            if ac is not None and self._refused.pop(ac, None) is not None:
                log.info("job %s: activated; autocluster %d offered again", job.id, ac)

    def _backing_off(self, now: float) -> set[int]:
        """Autoclusters still in their back-off; entries long over are forgotten."""
        out = set()
        for ac, (until, _delay) in list(self._refused.items()):
            if until > now:
                out.add(ac)
            elif now - until > 2 * REFUSED_BACKOFF_MAX:
                del self._refused[ac]  # no refusal for long: start again from the minimum
        return out

    def autocluster_of(self, job: Job, sig: Any) -> int:
        """The autocluster id for a signature: jobs of different clusters that the
        matchmaker cannot tell apart share one (roost.core.autocluster's key)."""
        ac = self._ac_ids.get(sig)
        if ac is None:
            try:
                ad = job.classad()
                # Per submitter name: a match is for one accounting group's jobs.
                key: Any = (self.submitter_of(job.cluster), autocluster_key(ad, significant_attributes(ad)))
            except Exception:
                key = ("signature", sig)
            ac = self._ac_by_key.get(key)
            if ac is None:
                ac = self._ac_by_key[key] = len(self._ac_by_key) + 1
            self._ac_ids[sig] = ac
        return ac

    def requests(self, owner: str, submitter: Any) -> list[dict[str, Any]]:
        """GET_REQUESTS: the owner's idle jobs by autocluster, best first: jobs in
        ``JobPrio`` order (higher first), then submit order (QDate, cluster, proc);
        autoclusters in the order of their best job. With ``submitter`` (the Submitter
        ad's Name), only the jobs of that accounting name. The members are kept for
        :meth:`take` when the matches come: a cluster's block of plain procs
        (idleblocks.py) as one lazy run, made into Jobs only as they are taken."""
        if len(self._ac_ids) > 50000:
            self._ac_ids.clear()  # signatures of long-gone clusters; ids stay stable via _ac_by_key
        queue = self.queue
        listed = queue.idle.get(owner, {})
        entries: list[Any] = list(listed)
        if isinstance(submitter, str):
            names: dict[int, bool] = {}
            keep = []
            for e in entries:
                ok = names.get(e.cluster.id)
                if ok is None:
                    ok = names[e.cluster.id] = self.submitter_of(e.cluster) == submitter
                if ok:
                    keep.append(e)
            entries = keep
        apart: set[Job] = set()  # a block's procs made with a JobPrio of their own: listed apart
        joins: dict[IdleBlock, list[Job]] = {}  # jobs listed on their own that go in a block's place
        if _any_prio(entries, listed):  # a priority orders the jobs
            entries, apart, joins = _by_priority(entries, listed)
        groups: dict[int, deque[Any]] = {}
        counts: dict[int, int] = {}
        samples: dict[int, Job] = {}
        # a run of procs of one cluster without differences shares one signature: a
        # million idle jobs of a `queue N` cost an append each, not a signature each
        run_cluster: Cluster | None = None
        run_ac = 0

        def one(job: Job) -> None:
            nonlocal run_cluster, run_ac
            if job.busy:
                return
            if not job.own_names() and job.cluster is run_cluster:
                groups[run_ac].append(job)
                counts[run_ac] += 1
                return
            sig = self.signature(job)
            ac = self._ac_ids.get(sig)
            if ac is None:
                if not_negotiated(job):
                    return  # run here, or by the dedicated scheduler
                ac = self.autocluster_of(job, sig)
            self._member(groups, counts, samples, ac, job, 1)
            if not job.own_names() and type(sig) is int:  # the cluster's own signature
                run_cluster, run_ac = job.cluster, ac
            else:
                run_cluster = None

        for e in entries:
            if type(e) is IdleBlock:
                run_cluster = None
                if queue.clusters.get(e.cluster.id) is e.cluster:
                    self._block(e, listed, groups, counts, samples, one, apart, joins.get(e, ()))
            else:
                one(e)
        for ac in [a for a, m in self._members.items() if m and m[0].owner == owner and a not in groups
                   and (not isinstance(submitter, str) or self.submitter_of(m[0].cluster) == submitter)]:
            del self._members[ac]
        self._members.update(groups)
        held_back = self._backing_off(time.monotonic()) if self._refused else ()
        requests = []
        for ac in groups:
            if ac in held_back:
                continue  # its last claim or activation was refused: not yet
            ad = samples[ac].merged()
            ad.pop("Scheduler", None)  # the dedicated scheduler's alone (a slot's RANK prefers it)
            ad["AutoClusterId"] = ac
            requests.append({"autocluster": ac, "count": counts[ac], "ad": ad})
        return requests

    @staticmethod
    def _member(groups: dict[int, deque[Any]], counts: dict[int, int], samples: dict[int, Job], ac: int,
                member: Any, n: int, sample: Job | None = None) -> None:
        members = groups.get(ac)
        if members is None:
            groups[ac] = deque([member])
            counts[ac] = n
            samples[ac] = sample if sample is not None else member
        else:
            members.append(member)
            counts[ac] += n

    def _block(self, block: IdleBlock, listed: dict[Any, Any], groups: dict[int, deque[Any]],
               counts: dict[int, int], samples: dict[int, Job], one: Callable[[Job], None],
               apart: set[Job], joins: Sequence[Job] = ()) -> None:
        """A cluster's block of idle procs into the autoclusters: where its plain procs
        all have the cluster's signature (none differs in what the matchmaker sees),
        they are counted, not made, and join as one lazy run with the procs made from
        them since that still have that signature; otherwise each proc on its own.
        ``apart``: procs of the block listed on their own (by their priority), left out;
        ``joins``: jobs of the cluster listed on their own at the block's priority (a
        released proc), taken among the block's procs in proc order. A proc of an
        autocluster of its own counts where its proc comes (autoclusters go in the
        order of their best job)."""
        cluster = block.cluster
        run = self.plain_run(block)
        if run is None:
            for job in heapq.merge((j for j in covered(block, listed) if j not in apart), joins, key=_proc_of):
                one(job)
            return
        first, sig, ac = run
        signature = self.signature

        def alike(job: Job) -> bool:
            return not job.own_names() or (job not in apart and signature(job) == sig)

        n = plain_idle(cluster)
        own = []  # procs of their own autoclusters: each counts where its proc comes
        lead = first.proc  # the run's best proc
        for job in made_covered(block, listed):
            if job in apart:
                continue
            if alike(job):
                n += 1
                lead = min(lead, job.proc)
            else:
                own.append(job)  # a proc made and changed since (qedit): its own signature
        merged = []
        for job in joins:
            if not job.busy and signature(job) == sig:
                merged.append(job)
                n += 1
                lead = min(lead, job.proc)
            else:
                own.append(job)
        own.sort(key=_proc_of)
        later = [j for j in own if j.proc > lead]
        for job in own:
            if job.proc < lead:
                one(job)  # autoclusters in the order of their best job: this one's comes first
        jobs: Iterator[Job] = (j for j in covered(block, listed) if alike(j))
        if merged:
            jobs = heapq.merge(jobs, merged, key=_proc_of)
        self._member(groups, counts, samples, ac, _Run(cluster, jobs), n, first)
        for job in later:
            one(job)

    def plain_run(self, block: IdleBlock, reads: frozenset[str] = frozenset()) -> tuple[Job, Any, int] | None:
        """(sample, signature, autocluster) of a block's plain idle procs when they all
        have the cluster's signature and none may own an attribute ``reads`` names
        (lower case): then one proc, made into its Job, stands for them all and the rest
        are counted, not made (``plain_idle``). None: each proc must be looked at."""
        cluster = block.cluster
        plain = cluster._plain
        p0 = plain.first_proc() if plain is not None and plain.status == IDLE else None
        first = cluster.job(p0) if p0 is not None else None  # the sample: a plain proc, made
        sig = self.signature(first) if first is not None else None
        if first is None or plain is None or type(sig) is not int or not_negotiated(first):
            return None
        if plain.may_own(cluster.shape_names, self._cluster_sig.get(cluster.id, frozenset()) | _NEGOTIATED_BY | reads):
            return None
        ac = self._ac_ids.get(sig)
        if ac is None:
            ac = self.autocluster_of(first, sig)
        return first, sig, ac

    def take(self, ac: Any, accept: Callable[[Job], bool] | None = None) -> Job | None:
        """The next member of autocluster ``ac`` (as offered) still idle and in the queue
        (and, with ``accept``, one it accepts: a foreign pool's match takes only jobs
        that may flock; the others stay for the next match)."""
        members = self._members.get(ac) if isinstance(ac, int) else None
        skipped: list[Job] = []
        found = None
        while members:
            head = members[0]
            if type(head) is _Run:
                cand = next(head.jobs, None)
                if cand is None:
                    members.popleft()
                    continue
            else:
                cand = members.popleft()
            if not_negotiated(cand):
                continue  # (qedit made it dedicated since it was offered)
            if not cand.busy and cand.status == IDLE and cand.cluster.holds(cand):
                if accept is not None and not accept(cand):
                    skipped.append(cand)
                    continue
                found = cand
                break
        if skipped and members is not None:
            members.extendleft(reversed(skipped))
        return found


class _Run:
    """An autocluster's members from one cluster's block, made into Jobs as taken."""

    __slots__ = ("cluster", "jobs")

    def __init__(self, cluster: Cluster, jobs: Iterator[Job]) -> None:
        self.cluster = cluster
        self.jobs = jobs

    @property
    def owner(self) -> str:
        return self.cluster.owner


#: what decides whether the negotiator sees a job at all (``not_negotiated``), lower case
_NEGOTIATED_BY = frozenset(("jobuniverse", "wantdedicated"))


def _prio_key(job: Job) -> tuple[Any, ...]:
    """Where a job comes among its owner's: higher ``JobPrio`` first, then older."""
    p = job.get("JobPrio")
    return (-p if type(p) in (int, float) else 0, job.cluster.ad.get("QDate") or 0, job.cluster.id, job.proc)


def _by_priority(entries: list[Any], listed: dict[Any, Any]
                 ) -> tuple[list[Any], set[Job], dict[IdleBlock, list[Job]]]:
    """The owner's idle list in priority order, and the procs of blocks taken out to be
    listed on their own. A block whose plain procs share the cluster's priority stays one
    entry, where its first proc would be (its procs are alike in priority, QDate and
    cluster: nothing of another cluster comes between them), and only its procs made
    with a JobPrio of their own (condor_prio on one job) are taken out: a raised job of
    a million-job cluster no longer makes the million into Jobs. The cluster's jobs
    listed on their own at the block's priority (released, given back) go with the
    block, taken among its procs by proc number (``joins``). A block whose plain procs
    may each have their own priority is made, every proc on its own."""
    keyed: list[tuple[tuple[Any, ...], int, Any]] = []
    apart: set[Job] = set()
    blocks = {e.cluster.id: e for e in entries if type(e) is IdleBlock
              and not (e.cluster._plain is not None and e.cluster._plain.may_own(e.cluster.shape_names, _PRIO))}
    joins: dict[IdleBlock, list[Job]] = {}
    for e in entries:
        if type(e) is not IdleBlock:
            key = _prio_key(e)
            b = blocks.get(e.cluster.id)
            if b is not None and key[:3] == _block_key(b)[:3]:
                joins.setdefault(b, []).append(e)  # in the block's place, by its proc
            else:
                keyed.append((key, len(keyed), e))
            continue
        c = e.cluster
        plain = c._plain
        if plain is not None and plain.may_own(c.shape_names, _PRIO):
            keyed += [(_prio_key(j), len(keyed) + i, j) for i, j in enumerate(covered(e, listed))]
            continue
        for j in made_covered(e, listed):
            if "JobPrio" in j.own_names():
                apart.add(j)
                keyed.append((_prio_key(j), len(keyed), j))
        keyed.append((_block_key(e), len(keyed), e))
    keyed.sort(key=lambda k: (k[0], k[1]))
    for js in joins.values():
        js.sort(key=_proc_of)
    return [e for _k, _i, e in keyed], apart, joins


def _block_key(block: IdleBlock) -> tuple[Any, ...]:
    """A block's place among its owner's jobs: its cluster's priority and QDate (its
    plain procs have no priority of their own), at its first proc."""
    c = block.cluster
    p = c.ad.get("JobPrio")
    return (-p if type(p) in (int, float) else 0, c.ad.get("QDate") or 0, c.id, block.start)


def _proc_of(job: Job) -> int:
    return job.proc


def _any_prio(entries: list[Any], listed: dict[Any, Any]) -> bool:
    """Whether any job's ``JobPrio`` is set (non-zero), each cluster's ad looked at once
    (a block's procs: those made into Jobs, and whether its plain ones may have one)."""
    clusters: dict[int, Any] = {}
    for e in entries:
        c = e.cluster
        if c.id not in clusters:
            clusters[c.id] = p = c.ad.get("JobPrio")
            if p:
                return True
        if type(e) is IdleBlock:
            plain = c._plain
            if plain is not None and plain.may_own(c.shape_names, _PRIO):
                return True
            if any("JobPrio" in j.own_names() and j.get("JobPrio") for j in made_covered(e, listed)):
                return True
        elif "JobPrio" in e.own_names() and e.get("JobPrio"):
            return True
    return False


_PRIO = frozenset(("jobprio",))


__all__ = ["AutoClusters", "not_negotiated"]
