"""The grid manager's Slurm backend (``grid_resource = batch slurm``, issue 30).

Each idle grid job gets a sandbox in the schedd's spool (``grid/<cluster>.<proc>``,
its owner's), its executable and input files copied in with the owner's rights, and is
submitted with ``sbatch`` run as its owner (``nobody`` for root's jobs, as every job
here), under a name that says which job and which attempt it is. One poll asks Slurm
(``scontrol show job -o``) for every grid job at once and hands each record to
:func:`roost.core.gridbatch.mirror`: ``GridJobStatus`` follows Slurm's word, running
is Running (with the execute event), an exit is staged back (stdout, stderr,
``transfer_output_files`` or every new top-level file) and completes the job; what
Slurm ended without the job's doing is a hold with Slurm's reason, except a node lost
under it, which is submitted again (core.gridbatch decides), as HTCondor reruns a job
whose machine vanished; a job Slurm puts back to pending (a ``scontrol requeue``) is
Idle again. ``roost rm`` and ``hold`` cancel the Slurm job (``scancel``); ``release``
submits it again.

Restartable at any time: the name is committed (``GridJobSubmitName``) before
``sbatch`` runs and ``GridJobId`` after, so a schedd killed in between finds the job
Slurm has by its name instead of submitting a second one; a job with a ``GridJobId``
is polled again, never resubmitted.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
import time
from typing import TYPE_CHECKING, Any

from roost.core import jobpolicy as jp
from roost.core.gridbatch import (
    HOLD_GRID_SUBMIT_FAILED,
    SlurmOptionError,
    mirror,
    parse_sbatch,
    parse_scontrol,
    sbatch_args,
    slurm_reason,
)
from roost.daemons.schedd.gridbatchjob import SCRIPT, BatchJob, requests, run_command
from roost.daemons.schedd.gridjob import (
    MISSING_POLLS,
    REMOTE_ATTRS,
    UNDEFINED,
    GridJob,
)
from roost.daemons.schedd.jobqueue import Job
from roost.eventlog import EvictedEvent, GridResourceDownEvent, GridResourceUpEvent
from roost.vocabulary import JobStatus

if TYPE_CHECKING:
    from roost.daemons.schedd.gridmanager import GridManager

log = logging.getLogger("roost.daemons.schedd.gridmanager")

RESOURCE = "batch slurm"


class SlurmBackend:
    """Slurm on this host: ``sbatch``/``scontrol``/``scancel`` (``SLURM_CONF``)."""

    def __init__(self, manager: GridManager, config: Any) -> None:
        self.m = manager
        self.env = dict(os.environ)
        conf = (config.get("SLURM_CONF") or "").strip()
        if conf:
            self.env["SLURM_CONF"] = conf
        self.down = False

    def runner(self, job: Job) -> GridJob:
        return SlurmJob(self.m, self, job)

    async def poll(self, runners: list[GridJob]) -> None:
        ids = {g.remote_id: g for g in runners if isinstance(g, SlurmJob) and g.remote_id}
        if not ids:
            return
        rc, out, err = await self.run(["scontrol", "show", "job", "-o"])
        if rc != 0 and "Invalid job id" not in err:
            if not self.down:
                self.down = True
                log.warning("grid manager: Slurm does not answer: %s", err.strip()[:300])
                for g in ids.values():
                    self.m.jobs.write_events(g.job, [GridResourceDownEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                           grid_resource=RESOURCE)])
            return
        if self.down:
            self.down = False
            for g in ids.values():
                self.m.jobs.write_events(g.job, [GridResourceUpEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                     grid_resource=RESOURCE)])
        records = {r.get("JobId"): r for r in parse_scontrol(out)}
        for slurm_id, g in ids.items():
            await g.observe(records.get(slurm_id))

    async def run(self, argv: list[str], ids: tuple[int, int, str, str] | None = None,
                  cwd: str = "/") -> tuple[int, str, str]:
        """A Slurm command (as ``ids``' user when given): exit status, stdout, stderr."""
        return await run_command(argv, self.env, ids, cwd)


class SlurmJob(BatchJob):
    """One grid job's Slurm life: its sandbox, its Slurm id, what was last seen."""

    SYSTEM, RESOURCE, FIRST_STATUS, SUBMIT = "Slurm", RESOURCE, "PENDING", "sbatch"
    OPTION_ERRORS = (SlurmOptionError,)

    async def find(self, name: str) -> str | None:
        rc, out, _ = await self.b.run(["scontrol", "show", "job", "-o"])
        if rc != 0:
            return None
        for r in parse_scontrol(out):
            if r.get("JobName") == name:
                return r.get("JobId")
        return None

    def submit_args(self, name: str) -> list[str]:
        return sbatch_args(requests(self.job), name=name, sandbox=self.sandbox,
                           script=os.path.join(self.sandbox, SCRIPT))

    def parse_submit(self, out: str) -> str | None:
        return parse_sbatch(out)

    def prepare(self) -> None:
        uid, gid, command = self.stage_in()
        # Slurm runs a copy of this script from its own spool: the sandbox by name
        self.write_script(f"#!/bin/sh\n# roost job {self.job.id}\ncd {shlex.quote(self.sandbox)} && exec {command}\n",
                          uid, gid)

    # -- remote state ------------------------------------------------------------------------

    async def observe(self, record: dict[str, str] | None) -> None:
        job = self.job
        if self.gone():
            return
        if self.stopping():
            await self._stop(record)
            return
        if record is None:
            self.missing += 1
            if self.missing >= MISSING_POLLS:
                await self.hold(f"Slurm no longer knows job {self.remote_id}", HOLD_GRID_SUBMIT_FAILED)
            return
        self.missing = 0
        submits = job.get("NumGridSubmits")
        m = mirror(record, submits if isinstance(submits, int) else 1)
        if m.resubmit:
            await self._resubmit(m.why)
            return
        if not m.done:
            said = {"GridJobStatus": m.grid_status, "GridJobStatusReason": slurm_reason(record)}
            changed = {k: v for k, v in said.items() if job.get(k, "") != v}
            if changed:
                await self.jobs.commit(self.jobs.set_ops(job, changed))
        if m.status == JobStatus.IDLE and job.status in (JobStatus.RUNNING, JobStatus.SUSPENDED):
            await self._back_to_idle(f"Slurm put job {self.remote_id} back: {m.grid_status}")
            return
        if m.status in (JobStatus.RUNNING, JobStatus.SUSPENDED) and job.status == JobStatus.IDLE:
            node = record.get("NodeList") or "slurm"
            await self.running(f"slurm/{node}", f"<slurm:{node}>", m.grid_status)
        if not m.done:
            return
        if m.status == JobStatus.COMPLETED:
            problem = await asyncio.to_thread(self._stage_out)
            if problem:
                await self.hold(f"Failed to transfer output files from Slurm's sandbox: {problem}",
                                jp.HOLD_TRANSFER_OUTPUT_ERROR)
                return
            await self.exited(m.exit_code, m.exit_signal, m.grid_status, "slurm", "<slurm>")
        else:
            await self.hold(m.hold_reason or f"Slurm ended the job: {m.grid_status}", m.hold_code,
                            grid_status=m.grid_status)

    async def _back_to_idle(self, why: str) -> None:
        """Running here, but no longer in Slurm: Idle again with the evicted event (004),
        as a job that left its machine; still this runner's (the next run is Slurm's)."""
        job = self.job
        log.info("job %s: back to idle: %s", job.id, why)
        ops = self.jobs.set_ops(job, {"LastRemoteHost": job.get("RemoteHost"), "LastVacateReason": why},
                                JobStatus.IDLE)
        await self.jobs.report(job, ops, [EvictedEvent(job.cluster.id, job.proc, time.time())])

    async def _resubmit(self, why: str) -> None:
        """Slurm lost the job's node: submit it again as a new attempt (a new name, so a
        restart in between finds the new Slurm job, never the failed one)."""
        job = self.job
        if job.status in (JobStatus.RUNNING, JobStatus.SUSPENDED):
            await self._back_to_idle(why)
        else:
            log.info("job %s: %s", job.id, why)
        await self.jobs.commit(self.jobs.set_ops(job, dict.fromkeys((*REMOTE_ATTRS, "GridJobStatusReason"),
                                                                    UNDEFINED)))
        self.remote_id = None
        await self.submit()

    async def _stop(self, record: dict[str, str] | None) -> None:
        """Removed or held by the user: cancel the Slurm job, then let it go."""
        if self.remote_id and not self.cancelled:
            self.cancelled = True
            await self.b.run(["scancel", self.remote_id])
        if record is None or mirror(record).done:
            await self.let_go()

    def _stage_out(self) -> str | None:
        return self.stage_out()


__all__ = ["SlurmBackend", "SlurmJob"]
