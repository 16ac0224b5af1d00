"""Claim reuse: which idle job a claim takes next, with no negotiation in between.

When a job ends on a claim, the claim's shadow runs the next idle job of the same
owner and accounting name that matches its slot (HTCondor reuses claims the same
way until CLAIM_WORKLIFE runs out). Candidates are tried best first, in the order
GET_REQUESTS offers them, and only a bounded window of them, so a claim never scans
a 100,000-job queue.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.autocluster_ids import AutoClusters, not_negotiated
from roost.daemons.schedd.jobqueue import Job, JobQueue


class ClaimReuse:
    def __init__(
        self,
        queue: JobQueue,
        autoclusters: AutoClusters,
        submitter_of: Callable[[Any], str],
        claim_worklife: float | None,
    ) -> None:
        self.queue = queue
        self.autoclusters = autoclusters
        self.submitter_of = submitter_of
        #: a further say on each candidate (job, the claim's ``fits``): flocking's
        self.accept: Callable[[Job, Any], bool] | None = None
        self.claim_worklife = claim_worklife  # CLAIM_WORKLIFE; None: forever
        self._prio_cache: dict[str, tuple[int, list[int]]] = {}  # owner -> (next cluster id, clusters with JobPrio)

    def next_job(
        self, owner: str | None, submitter: str | None, claimed_at: float, fits: Callable[[Job, Any], bool]
    ) -> Job | None:
        """The next idle job of the claim's owner that fits its slot (``fits(job,
        signature)``), taken out of the idle list; None when there is none or the
        claim's work life is over."""
        if self.claim_worklife is not None and time.time() - claimed_at > self.claim_worklife:
            return None
        if owner is None:
            return None
        if not self.queue.idle.get(owner):
            return None
        signature = self.autoclusters.signature
        tried = 0
        for job in self._candidates(owner):
            if job.busy or job.status != jp.IDLE or not_negotiated(job):
                continue
            if submitter is not None and self.submitter_of(job.cluster) != submitter:
                continue  # another accounting group's job: it must be negotiated for
            if self.accept is not None and not self.accept(job, fits):
                continue  # a claim in another pool takes only jobs that may flock (flocking.py)
            tried += 1
            if fits(job, signature(job)):
                self.queue.take_idle(job)
                return job
            if tried > 16:
                break
        return None

    def _candidates(self, owner: str) -> list[Job]:
        """The idle jobs a reused claim tries, best first: by ``JobPrio`` (higher first),
        then submit order, as GET_REQUESTS orders them. Without priorities, the first
        64 in submit order (of a block of plain procs, only those 64 made into Jobs);
        with them, also the first idle procs of every cluster that sets ``JobPrio``, so
        a later, more urgent job is not left behind."""
        window = list(itertools.islice(self.queue.idle_jobs(owner), 64))
        prio_clusters = self._prio_clusters(owner)
        if not prio_clusters:
            return window
        seen = {j.key for j in window}
        for cid in prio_clusters:
            cluster = self.queue.clusters.get(cid)
            if cluster is None or not cluster.counts.get(jp.IDLE):
                continue
            for job in itertools.islice((j for j in cluster.procs.values() if self.queue.is_idle(j)), 64):
                if job.key not in seen:
                    seen.add(job.key)
                    window.append(job)

        def order(j: Job) -> tuple[float, Any, int, int]:
            p = j.get("JobPrio")
            return (-p if type(p) in (int, float) else 0, j.cluster.ad.get("QDate") or 0, j.cluster.id, j.proc)

        window.sort(key=order)
        return window

    def forget_priorities(self) -> None:
        """A user changed ``JobPrio`` (condor_prio, condor_qedit): look again."""
        self._prio_cache.clear()

    def _prio_clusters(self, owner: str) -> list[int]:
        """The owner's clusters whose cluster ad or procs set a non-zero ``JobPrio``;
        recomputed only once a new cluster has been submitted or a priority edited."""
        version = self.queue.next_cluster
        cached = self._prio_cache.get(owner)
        if cached is not None and cached[0] == version:
            return cached[1]
        found = [c.id for c in self.queue.clusters.values() if c.owner == owner and (
            c.ad.get("JobPrio") or any("JobPrio" in j.own_names() and j.get("JobPrio") for j in c.procs.values()))]
        self._prio_cache[owner] = (version, found)
        return found


__all__ = ["ClaimReuse"]
