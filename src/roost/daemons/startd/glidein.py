"""The glide-in's end of life, applied (``roost.core.annex.next_step`` decides).

Active where the configuration gives the startd an end (``GLIDEIN_ToDie``, what
``roost annex`` writes into a glide-in's configuration) or an idle limit
(``STARTD_NOCLAIM_SHUTDOWN``, HTCondor's knob, which any startd may set). Every
``ANNEX_POLL_INTERVAL`` seconds the step is worked out and applied through the owner
policy's drain (what ``roost drain`` does): *retire* is a graceful drain (START false,
running jobs finish within their ``MaxJobRetirementTime``), *vacate* a quick one (the
jobs are evicted, a checkpointing one checkpoints, and go back to the queue), and
*shutdown* the startd's own clean stop: its ads are withdrawn from the collector and
the process exits, which ends the Slurm job holding it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from roost.config import Config
from roost.core.annex import Action, GlideinPolicy, GlideinView, next_step

log = logging.getLogger(__name__)


class Glidein:
    """One startd's glide-in life. ``startd`` is the :class:`Startd` (its slots, owner
    policy and ``request_stop``)."""

    def __init__(self, startd: Any, config: Config) -> None:
        self.startd = startd
        self.end_time = config.get_float("GLIDEIN_ToDie")
        idle = config.get_float("STARTD_NOCLAIM_SHUTDOWN")
        self.active = self.end_time is not None or (idle is not None and idle > 0)
        retire = config.get_float("ANNEX_RETIRE_LEAD", 300.0) or 0.0
        vacate = config.get_float("ANNEX_VACATE_LEAD", 60.0) or 0.0
        if retire < vacate:
            log.warning("ANNEX_RETIRE_LEAD %g is less than ANNEX_VACATE_LEAD %g: using %g for both",
                        retire, vacate, vacate)
            retire = vacate
        self.policy = GlideinPolicy(idle if idle is not None else 0.0, max(retire, 0.0), max(vacate, 0.0))
        self.interval = max(0.2, config.get_float("ANNEX_POLL_INTERVAL", 5.0) or 5.0)
        self.idle_since: float | None = time.time()
        self.applied = Action.ACCEPT

    def claims(self) -> int:
        return sum(1 for s in self.startd.slots.values() if s.claim is not None)

    async def poll(self) -> None:
        """One step: measured, decided, applied (an action is applied once; steps only
        move forward)."""
        now = time.time()
        claims = self.claims()
        if claims:
            self.idle_since = None
        elif self.idle_since is None:
            self.idle_since = now
        view = GlideinView(now, self.end_time if self.end_time is not None else float("inf"), self.idle_since, claims)
        step = next_step(view, self.policy)
        if step.action == self.applied or step.action == Action.ACCEPT:
            return
        owner = self.startd.owner_policy
        if step.action == Action.SHUTDOWN:
            self.applied = step.action
            log.info("glide-in shutting down: %s", step.reason)
            self.startd.request_stop()
        elif step.action == Action.RETIRE and self.applied == Action.ACCEPT:
            self.applied = step.action
            await owner.h_drain({"how": "graceful", "reason": f"glide-in ending: {step.reason}"}, None)
        elif step.action == Action.VACATE and self.applied in (Action.ACCEPT, Action.RETIRE):
            self.applied = step.action
            await owner.h_drain({"how": "quick", "reason": f"glide-in ending: {step.reason}"}, None)
