"""The schedd's grid manager (issue 30): grid-universe jobs handed to another system
and mirrored in the user's queue. Each ``grid_resource`` type has a backend
(``gridjob.Backend``): ``batch slurm`` -> ``gridslurm.py``, ``batch sge`` ->
``gridsge.py`` (Grid Engine), ``condor <schedd> <pool>``
(another pool's schedd, HTCondor's Condor-C) -> ``gridcondorc.py``. The manager is the
thin shell around them: it starts a runner per idle grid job (or one found at start
with a remote job already), and one loop asks each backend to poll all its jobs:
``GRIDMANAGER_JOB_PROBE_MIN_INTERVAL`` seconds (1) after a poll that saw a change or a
wake (a job submitted), the wait doubling while nothing changes, up to
``GRIDMANAGER_JOB_PROBE_INTERVAL`` (10) for a quiet queue (core.gridbatch.next_probe_delay).

Every backend is restartable at any time: a tag naming the job and the attempt is
committed before the remote submit and the remote id after, so a schedd killed in
between finds the remote job by its tag instead of submitting a second one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import Any

from roost.core.gridbatch import HOLD_GRID_SUBMIT_FAILED, next_probe_delay
from roost.daemons.schedd import runners
from roost.daemons.schedd.gridcondorc import CondorCBackend
from roost.daemons.schedd.gridjob import Backend, GridJob
from roost.daemons.schedd.gridsge import SgeBackend
from roost.daemons.schedd.gridslurm import SlurmBackend
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.universes.grid import UNIVERSE, GridResourceError, parse_grid_resource
from roost.vocabulary import JobStatus

log = logging.getLogger(__name__)

GRID_UNIVERSE = UNIVERSE.number


def is_grid(job: Job) -> bool:
    return runners.grid_managed(job.get("JobUniverse"))


class _Refused(GridJob):
    """A job whose GridResource no backend takes (edited after submit): held saying so."""

    def __init__(self, manager: GridManager, job: Job, why: str) -> None:
        super().__init__(manager, job)
        self.why = why

    async def begin(self) -> None:
        await self.hold(self.why, HOLD_GRID_SUBMIT_FAILED)


class GridManager:
    """Every grid job of this schedd, and the one loop that polls their remote state."""

    def __init__(self, jobs: JobLifecycle, config: Any, schedd_name: str, spool: str) -> None:
        self.jobs = jobs
        self.schedd_name = schedd_name
        self.interval = float(config.get_float("GRIDMANAGER_JOB_PROBE_INTERVAL", 10.0) or 10.0)
        self.min_interval = float(config.get_float("GRIDMANAGER_JOB_PROBE_MIN_INTERVAL", 1.0) or 1.0)
        self.root = os.path.join(spool, "grid")
        self.backends: dict[str, Backend] = {"batch slurm": SlurmBackend(self, config),
                                             "batch sge": SgeBackend(self, config),
                                             "condor": CondorCBackend(self, config)}
        self.active: dict[tuple[int, int], GridJob] = {}
        self._wake = asyncio.Event()

    # -- the schedd's hooks ----------------------------------------------------------------

    def start(self, job: Job) -> None:
        """An idle grid job (submitted, released, or found at start): submit it, or poll
        the remote job it already has."""
        if job.key in self.active or job.status not in (JobStatus.IDLE, JobStatus.RUNNING):
            return
        try:
            parsed = parse_grid_resource(job.get("GridResource"))
            kind = f"batch {parsed.system}" if parsed.kind == "batch" else parsed.kind
            runner = self.backends[kind].runner(job)
        except (GridResourceError, KeyError) as e:
            runner = _Refused(self, job, str(e))
        self.active[job.key] = runner
        self.jobs.runners[job.key] = runner
        if job.status == JobStatus.IDLE:
            self.jobs.queue.take_idle(job)
        self.jobs.host.spawn(runner.begin(), f"grid-{job.id}")

    async def loop(self) -> None:
        """Poll every backend's active jobs, for ever (the schedd's task): soon after a
        change, seldom while nothing changes."""
        delay = self.interval
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wake.wait()
            woken = self._wake.is_set()
            self._wake.clear()
            if not self.active:
                delay = self.interval
                continue
            before = self._seen()
            await self.poll()
            delay = next_probe_delay(delay, woken or self._seen() != before, self.min_interval, self.interval)

    def _seen(self) -> set[tuple[Any, ...]]:
        """What a poll may change: which jobs are active, their status, their remote state."""
        return {(key, g.job.status, g.job.get("GridJobStatus"), g.job.get("GridJobId"))
                for key, g in self.active.items()}

    def wake(self) -> None:
        self._wake.set()

    async def poll(self) -> None:
        """Every backend at once: a slow one (sbatch/squeue that hang, a remote schedd
        that stalls) delays no other's jobs."""
        current = list(self.active.values())
        await asyncio.gather(*(self._poll_backend(b, current) for b in self.backends.values()))

    @staticmethod
    async def _poll_backend(backend: Backend, current: list[GridJob]) -> None:
        try:
            await backend.poll(current)
        except Exception:  # noqa: BLE001 - one bad poll never ends the loop
            log.exception("grid manager: poll failed")

    def forget(self, g: GridJob) -> None:
        if self.active.get(g.job.key) is g:
            del self.active[g.job.key]
        if self.jobs.runners.get(g.job.key) is g:
            self.jobs.runners.pop(g.job.key, None)


__all__ = ["GRID_UNIVERSE", "GridManager", "is_grid"]
