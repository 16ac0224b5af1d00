"""The schedd's side of a negotiation cycle: GET_REQUESTS and MATCHES from the negotiator.

The negotiator asks for each submitter's resource requests (one per autocluster,
with a count) and sends back matches (slot, claim id); each match starts a shadow
that claims the slot and runs one of the autocluster's jobs, then reuses the claim.
"""

from __future__ import annotations

import logging
from typing import Any

from roost.daemons.schedd.autocluster_ids import AutoClusters
from roost.daemons.schedd.dedicated import OWNER as DEDICATED
from roost.daemons.schedd.dedicated import DedicatedScheduler
from roost.daemons.schedd.flocking import Flocking
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.shadow import Shadows
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")


class NegotiatorCalls:
    """Handlers of the negotiator's commands."""

    def __init__(self, jobs: JobLifecycle, autoclusters: AutoClusters, shadows: Shadows, max_running: int,
                 dedicated: DedicatedScheduler | None = None) -> None:
        self.jobs = jobs
        self.dedicated = dedicated  # its requests are the submitter DedicatedScheduler@<schedd>'s
        self.autoclusters = autoclusters
        self.shadows = shadows
        self.max_running = max_running  # MAX_JOBS_RUNNING
        self.flocking: Flocking | None = None  # set where FLOCK_TO/FLOCK_AGREEMENTS send jobs away

    async def h_get_requests(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """The owner's idle jobs by autocluster, best first (AutoClusters.requests)."""
        owner = req["owner"]
        submitter = req.get("submitter")
        log.debug("GET_REQUESTS for %s (%s)", owner, submitter)
        if "@" in owner:
            owner = owner.split("@", 1)[0]
        pool = self.flocking.foreign_pool(peer) if self.flocking is not None else None
        if pool is not None:  # another pool's negotiator: only what may flock there now
            assert self.flocking is not None
            if not pool or owner == DEDICATED:
                return {"requests": []}
            return {"requests": self.flocking.requests_for(pool, self.autoclusters.requests(owner, submitter))}
        if owner == DEDICATED and self.dedicated is not None:
            return {"requests": self.dedicated.requests()}
        return {"requests": self.autoclusters.requests(owner, submitter)}

    async def h_matches(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        log.debug("MATCHES: %d", len(req["matches"]))
        started = 0
        runners = self.jobs.runners
        flocking = self.flocking
        pool = flocking.foreign_pool(peer) if flocking is not None else None
        if pool == "":
            return {"accepted": 0}
        accept = flocking.accepts if pool is not None and flocking is not None else None
        for m in req["matches"]:
            claim_id = m.get("claim_id")
            address = m.get("startd_address")
            if not isinstance(claim_id, str) or not isinstance(address, str):
                continue
            if accept is None and self.dedicated is not None and self.dedicated.matched(m):
                continue
            if pool and flocking is not None and not flocking.planned(pool, m.get("autocluster")):
                continue  # another pool may match only what our plan offered it
            job = self.autoclusters.take(m.get("autocluster"), accept)
            if job is None:
                continue
            if len(runners) >= self.max_running:
                log.info("MAX_JOBS_RUNNING (%d) reached: match for %s dropped", self.max_running, job.id)
                break
            self.jobs.queue.take_idle(job)
            slot_ad = m.get("slot_ad") if isinstance(m.get("slot_ad"), dict) else None
            name = m.get("slot_name") if isinstance(m.get("slot_name"), str) else ""
            self.shadows.run_match(job, address, claim_id, name, slot_ad, m.get("preempt") is True)
            if pool and flocking is not None:
                flocking.matched(pool, job, runners.get(job.key))
                log.info("job %s: matched by pool %s's negotiator to %s", job.id, pool, name)
            elif flocking is not None:
                flocking.where.pop(job.key, None)  # at home this time (an earlier run's pool is stale)
            started += 1
        return {"accepted": started}


__all__ = ["NegotiatorCalls"]
