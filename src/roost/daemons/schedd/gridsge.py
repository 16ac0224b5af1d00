"""The grid manager's Grid Engine backend (``grid_resource = batch sge``, issue 30).

As the Slurm backend does: each idle grid job gets a sandbox in the schedd's spool
(``grid/<cluster>.<proc>``, its owner's) with its executable and input files copied
in with the owner's rights, and a job script, submitted with ``qsub`` run as its
owner (``nobody`` for root's jobs) under a name saying which job and attempt it is.
One ``qstat -u '*' -xml`` per poll mirrors every job (``GridJobStatus`` is Grid
Engine's state letters; running is Running with the execute event); a job in an error
state (``Eqw``) is deleted and held with ``qstat -j``'s error reason. Grid Engine
forgets a job once it ends, so its end is the exit file the job script writes in the
sandbox (staged back, completes the job) or, where there is none, its ``qacct``
record (a hold with Grid Engine's ``failed`` words). ``roost rm``/``hold`` run
``qdel`` (as the owner); ``release`` submits it again.

Restartable at any time: the name is committed (``GridJobSubmitName``) before qsub
runs and ``GridJobId`` after; a schedd killed in between finds the job by its name in
qstat, or in qacct when it has already ended, instead of submitting a second one.

Settings: ``SGE_ROOT``, ``SGE_CELL``, ``SGE_QMASTER_PORT``, ``SGE_EXECD_PORT`` (passed
to Grid Engine's commands where set), ``SGE_PARALLEL_ENVIRONMENT`` (for request_cpus
above 1), ``SGE_MEMORY_RESOURCE`` (the ``-l`` resource request_memory becomes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import time
from typing import TYPE_CHECKING, Any

from roost.core import jobpolicy as jp
from roost.core.gridbatch import HOLD_GRID_SUBMIT_FAILED, HOLD_REMOTE_ENDED
from roost.core.gridsge import (
    QstatJob,
    SgeOptionError,
    ended_without_exit,
    error_reason,
    exit_from_file,
    mirror_state,
    parse_qacct,
    parse_qstat_xml,
    parse_qsub,
    qsub_args,
)
from roost.daemons.schedd.gridbatchjob import SCRIPT, BatchJob, requests, run_command
from roost.daemons.schedd.gridjob import GridJob
from roost.daemons.schedd.jobqueue import Job
from roost.eventlog import GridResourceDownEvent, GridResourceUpEvent
from roost.vocabulary import JobStatus

if TYPE_CHECKING:
    from roost.daemons.schedd.gridmanager import GridManager

log = logging.getLogger("roost.daemons.schedd.gridmanager")

_EXIT = "_roost_exit"  # the job script's exit status (Grid Engine forgets a finished job at once)
RESOURCE = "batch sge"
ENV_KNOBS = ("SGE_ROOT", "SGE_CELL", "SGE_QMASTER_PORT", "SGE_EXECD_PORT")
#: seconds a job gone from qstat with no exit file waits for its qacct record (the
#: accounting's flush_time, 15 s by default) before it counts as lost
ACCOUNTING_WAIT = 120.0


class SgeBackend:
    """Grid Engine on this host: ``qsub``/``qstat``/``qacct``/``qdel``."""

    def __init__(self, manager: GridManager, config: Any) -> None:
        self.m = manager
        self.env = dict(os.environ)
        for knob in ENV_KNOBS:
            v = (config.get(knob) or "").strip()
            if v:
                self.env[knob] = v
        self.pe = (config.get("SGE_PARALLEL_ENVIRONMENT") or "").strip()
        self.memory_resource = (config.get("SGE_MEMORY_RESOURCE") or "").strip()
        self.down = False

    def runner(self, job: Job) -> GridJob:
        return SgeJob(self.m, self, job)

    async def poll(self, runners: list[GridJob]) -> None:
        ids = {g.remote_id: g for g in runners if isinstance(g, SgeJob) and g.remote_id}
        if not ids:
            return
        jobs = await self.qstat()
        if jobs is None:
            return
        for sge_id, g in ids.items():
            await g.observe(jobs.get(sge_id))

    async def qstat(self) -> dict[str, QstatJob] | None:
        """Every job Grid Engine lists, by id; None (with event 026 once) when it does not answer."""
        rc, out, err = await self.run(["qstat", "-u", "*", "-xml"])
        jobs: dict[str, QstatJob] | None = None
        if rc == 0:
            with contextlib.suppress(ValueError):
                jobs = {j.id: j for j in parse_qstat_xml(out)}
        active = [g for g in self.m.active.values() if isinstance(g, SgeJob)]
        if jobs is None:
            if not self.down:
                self.down = True
                log.warning("grid manager: Grid Engine does not answer: %s", (err or out).strip()[:300])
                for g in active:
                    self.m.jobs.write_events(g.job, [GridResourceDownEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                           grid_resource=RESOURCE)])
            return None
        if self.down:
            self.down = False
            for g in active:
                self.m.jobs.write_events(g.job, [GridResourceUpEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                     grid_resource=RESOURCE)])
        return jobs

    async def qacct(self, what: str) -> dict[str, str] | None:
        """The last accounting record of a job id or name, None when there is none (yet)."""
        rc, out, _ = await self.run(["qacct", "-j", what])
        records = parse_qacct(out) if rc == 0 else []
        return records[-1] if records else None

    async def run(self, argv: list[str], ids: tuple[int, int, str, str] | None = None,
                  cwd: str = "/") -> tuple[int, str, str]:
        """A Grid Engine command (as ``ids``' user when given): exit status, stdout, stderr."""
        return await run_command(argv, self.env, ids, cwd)


class SgeJob(BatchJob):
    """One grid job's Grid Engine life: its sandbox, its job id, when it left qstat."""

    SYSTEM, RESOURCE, FIRST_STATUS, SUBMIT = "Grid Engine", RESOURCE, "qw", "qsub"
    OPTION_ERRORS = (SgeOptionError,)

    def __init__(self, manager: GridManager, backend: SgeBackend, job: Job) -> None:
        super().__init__(manager, backend, job)
        self.left_qstat: float | None = None

    async def find(self, name: str) -> str | None:
        """The job submitted under ``name``: still listed, or already in the accounting."""
        jobs = await self.b.qstat()
        if jobs is None:
            return None
        for j in jobs.values():
            if j.name == name:
                return j.id
        record = await self.b.qacct(name)
        return record.get("jobnumber") if record else None

    def submit_args(self, name: str) -> list[str]:
        return qsub_args(requests(self.job), name=name, sandbox=self.sandbox,
                         script=os.path.join(self.sandbox, SCRIPT), pe=self.b.pe,
                         memory_resource=self.b.memory_resource)

    def parse_submit(self, out: str) -> str | None:
        return parse_qsub(out)

    def prepare(self) -> None:
        uid, gid, command = self.stage_in()
        # Grid Engine runs a copy of this script from its spool: the sandbox by name;
        # the exit file is how the end is known (qstat forgets the job at once)
        self.write_script(f"#!/bin/sh\n# roost job {self.job.id}\ncd {shlex.quote(self.sandbox)} || exit 1\n"
                          f"{command}\necho $? > {_EXIT}.new && mv {_EXIT}.new {_EXIT}\n", uid, gid)

    # -- remote state ------------------------------------------------------------------------

    async def observe(self, record: QstatJob | None) -> None:
        job = self.job
        if self.gone():
            return
        if self.stopping() or self.cancelled:  # cancelled: released again before qdel took effect
            await self._stop(record)
            return
        if record is None:
            await self._left_qstat()
            return
        self.left_qstat = None
        m = mirror_state(record.state)
        if m.done:  # an error state: Grid Engine keeps it for ever unless deleted
            _, said, _ = await self.b.run(["qstat", "-j", record.id])
            reason = error_reason(said) or m.hold_reason
            await self.b.run(["qdel", record.id], self.ids)
            await self.hold(f"Grid Engine could not run the job ({record.state}): {reason}", HOLD_REMOTE_ENDED,
                            grid_status=record.state)
            return
        if m.grid_status != job.get("GridJobStatus"):
            await self.jobs.commit(self.jobs.set_ops(job, {"GridJobStatus": m.grid_status}))
        if m.status in (JobStatus.RUNNING, JobStatus.SUSPENDED) and job.status == JobStatus.IDLE:
            host = record.queue.partition("@")[2] or record.queue or "sge"
            await self.running(f"sge/{host}", f"<sge:{host}>", m.grid_status)

    async def _left_qstat(self) -> None:
        """Gone from qstat: ended. The exit file says how; without one, qacct says why."""
        text = await asyncio.to_thread(self._read_exit)
        m = exit_from_file(text) if text is not None else None
        if m is not None:
            problem = await asyncio.to_thread(self._stage_out)
            if problem:
                await self.hold(f"Failed to transfer output files from Grid Engine's sandbox: {problem}",
                                jp.HOLD_TRANSFER_OUTPUT_ERROR)
                return
            await self.exited(m.exit_code, m.exit_signal, m.grid_status, "sge", "<sge>")
            return
        record = await self.b.qacct(self.remote_id or "")
        if record is not None:
            end = ended_without_exit(record)
            await self.hold(end.hold_reason or "Grid Engine ended the job", end.hold_code, grid_status=end.grid_status)
            return
        now = time.monotonic()
        if self.left_qstat is None:
            self.left_qstat = now
        elif now - self.left_qstat > ACCOUNTING_WAIT:
            await self.hold(f"Grid Engine no longer knows job {self.remote_id} (not in qstat, no accounting record)",
                            HOLD_GRID_SUBMIT_FAILED)

    def _read_exit(self) -> str | None:
        try:
            fd = os.open(os.path.join(self.sandbox, _EXIT), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            return os.read(fd, 64).decode(errors="replace")
        finally:
            os.close(fd)

    async def _stop(self, record: QstatJob | None) -> None:
        """Removed or held by the user: qdel the job, then let it go once qstat drops it."""
        if self.remote_id and not self.cancelled:
            self.cancelled = True
            await self.b.run(["qdel", self.remote_id], self.ids)
        if record is None:
            await self.let_go()

    def _stage_out(self) -> str | None:
        return self.stage_out((_EXIT,))


__all__ = ["SgeBackend", "SgeJob"]
