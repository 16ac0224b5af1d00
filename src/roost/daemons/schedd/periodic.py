"""The schedd's periodic job policy (PERIODIC_EXPR_INTERVAL): periodic_hold,
periodic_release and periodic_remove of each job, the system's SYSTEM_PERIODIC_*,
LeaveJobInQueue asked again, and history trimmed to its maximum.

A part of ``JobLifecycle`` kept in its own module: what to do with a job is
``roost.core.jobpolicy``'s (pure); the changes go through the lifecycle's one-job
actions (commit, then log, then wake waiters), so this module owns no state.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from roost.core import jobpolicy as jp
from roost.daemons.schedd.jobqueue import Job

if TYPE_CHECKING:
    from roost.daemons.schedd.lifecycle import JobLifecycle

log = logging.getLogger("roost.schedd")
#: what ``jp.has_periodic`` looks for in a proc's own attributes (lower case)
_PERIODIC_NAMES = frozenset({"periodichold", "periodicrelease", "periodicremove"})


class PeriodicPolicy:
    """One round of the periodic policy over the whole queue."""

    def __init__(self, life: JobLifecycle) -> None:
        self.life = life

    async def run(self, system: jp.SystemPolicy, max_history: int) -> None:
        """PERIODIC_EXPR_INTERVAL's work: periodic_hold/release/remove, history trimming."""
        life = self.life
        trim = life.store.trim_history_ops(max_history)
        if trim:
            await life.commit(trim)
        decided: list[tuple[Job, jp.Decision]] = []
        completed: list[Job] = []
        seen = 0
        for cluster in list(life.queue.clusters.values()):
            cluster_has = jp.has_periodic(cluster.ad)
            # a plain proc (plainprocs.py) is idle or held with its cluster's ad: looked at
            # only where a policy may apply to it, else left a range
            for job in list(cluster.procs.values() if system.empty is False or cluster_has
                            else cluster.with_own(_PERIODIC_NAMES)):
                if job.status == jp.COMPLETED and job.key not in life.spool_busy:
                    completed.append(job)  # kept by its LeaveJobInQueue: asked again, as HTCondor does
                    continue
                if not (system.empty is False or cluster_has or (job.own_names() and jp.has_periodic(job.own() or {}))):
                    continue
                if job.status in (jp.REMOVED, jp.COMPLETED):
                    continue
                seen += 1
                if seen % 500 == 0:
                    await asyncio.sleep(0)  # keep answering while 100,000 jobs are looked at
                try:
                    decision = jp.periodic(job.classad(), job.status, system)
                except Exception:
                    log.exception("job %s: periodic policy", job.id)
                    continue
                if decision is not None:
                    decided.append((job, decision))
        for job in completed:
            ops = life.finish_ops(job)  # LeaveJobInQueue false now (its time() passed): to the history
            if ops:
                log.info("job %s: its LeaveJobInQueue is false now; it leaves the queue", job.id)
                await life.report(job, ops, [])
        # Applied concurrently, a thousand at a time: they share commits (group commit).
        for i in range(0, len(decided), 1000):
            await asyncio.gather(*(self._apply(job, d) for job, d in decided[i : i + 1000]))

    async def _apply(self, job: Job, decision: jp.Decision) -> None:
        life = self.life
        if decision.action == "remove":
            await life.remove(job, decision.reason)
        elif decision.action == "hold":
            await life.hold(job, decision.reason, decision.code, decision.subcode)
        elif decision.action == "release":
            await life.release(job, decision.reason)


__all__ = ["PeriodicPolicy"]
