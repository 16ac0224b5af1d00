"""What every grid job shares, whatever system it was handed to (issue 30): the
backend interface the grid manager drives (``gridslurm.py``: Slurm, ``gridsge.py``: Grid
Engine, both through ``gridbatchjob.py``; ``gridcondorc.py``: another pool's schedd),
and a job's local end: its sandbox in the schedd's spool, its
hold with the remote system's reason, its exit, its files copied with its owner's
rights."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from typing import TYPE_CHECKING, Any, Protocol

from roost.core import jobpolicy as jp
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.localuniverse import run_as
from roost.daemons.userfiles import open_as
from roost.eventlog import ExecuteEvent, TerminatedEvent, Usage
from roost.vocabulary import JobStatus

if TYPE_CHECKING:
    from roost.daemons.schedd.gridmanager import GridManager

log = logging.getLogger("roost.daemons.schedd.gridmanager")

#: what a job held or removed drops of its remote job (a release submits a new one)
REMOTE_ATTRS = ("GridJobId", "GridJobStatus", "GridJobSubmitName")
UNDEFINED = "/Expr(undefined)/"
#: polls a remote job may be missing from the remote system's answer before it counts as gone
MISSING_POLLS = 5


def text_attr(job: Job, attr: str) -> str | None:
    """A string attribute's value; None for none, or for one made undefined."""
    v = job.get(attr)
    return v if isinstance(v, str) and v and not v.startswith("/Expr(") else None


class Backend(Protocol):
    """One kind of remote system: makes each job's runner, polls them all at once."""

    def runner(self, job: Job) -> GridJob: ...

    async def poll(self, runners: list[GridJob]) -> None: ...


class GridJob:
    """One grid job's local end; a backend's subclass does its remote life (``begin``
    submits or finds the remote job, the backend's poll feeds what it saw)."""

    def __init__(self, manager: GridManager, job: Job) -> None:
        self.m = manager
        self.jobs = manager.jobs
        self.job = job
        self.sandbox = os.path.join(manager.root, f"{job.cluster.id}.{job.proc}")
        self.ids = run_as(job.owner)
        self.missing = 0
        self.cancelled = False
        self.started: float | None = None

    async def begin(self) -> None:
        raise NotImplementedError

    def vacate_job(self, job: Job) -> None:
        """Removed or held while running: the next poll passes it on to the remote side."""
        self.m.wake()

    def owes_remote(self) -> bool:
        """A remote job exists (or may: a submit in flight) that must be removed before
        this runner forgets the job; the backend says."""
        return False

    def gone(self) -> bool:
        """This job left the queue: drop it, unless it left by a remove while a remote
        job is known (``roost rm`` of a job Idle here moves it straight to history):
        then ``stopping()`` holds and the backend removes the remote job first."""
        job = self.job
        if not job.cluster.holds(job):
            if job.status == JobStatus.REMOVED and self.owes_remote():
                return False
            self.m.forget(self)
            return True
        return False

    def in_queue(self) -> bool:
        """Still this runner's job in the queue (re-checked after every await that
        precedes a change of the job: a remove or hold may have come in between)."""
        job = self.job
        return job.cluster.holds(job) and not self.stopping()

    def stopping(self) -> bool:
        """The user removed or held it (or it was taken from us): the remote job must go."""
        job = self.job
        return job.status in (JobStatus.REMOVED, JobStatus.HELD) or self.jobs.runners.get(job.key) is not self

    async def let_go(self) -> None:
        """The remote job is gone after a remove or hold: finish the local side."""
        job = self.job
        self.m.forget(self)
        await asyncio.to_thread(shutil.rmtree, self.sandbox, True)
        if job.status == JobStatus.REMOVED and job.cluster.holds(job):
            # removed while Running here (queue.running no longer has it: it is Removed)
            await self.jobs.finish_removed(job)
        elif job.status == JobStatus.HELD:  # a release submits it anew
            await self.jobs.commit(self.jobs.set_ops(job, dict.fromkeys(REMOTE_ATTRS, UNDEFINED)))
        elif job.status == JobStatus.IDLE and job.cluster.holds(job):
            # released before the remote side had ended the cancelled job: submit it anew
            await self.jobs.commit(self.jobs.set_ops(job, dict.fromkeys(REMOTE_ATTRS, UNDEFINED)))
            self.m.start(job)

    async def running(self, host: str, execute_host: str, grid_status: str) -> None:
        """The remote side started it: Running here (``host``, the queue's RemoteHost),
        with the execute event naming ``execute_host``."""
        job = self.job
        if not self.in_queue():  # removed or held while the poll awaited: the next poll stops it
            self.m.wake()
            return
        await self.jobs.mark_running(job, host, extra={"GridJobStatus": grid_status})
        self.jobs.write_events(job, [ExecuteEvent(job.cluster.id, job.proc, time.time(), execute_host=execute_host)])
        self.started = time.time()

    def copy_out(self, pairs: list[tuple[str, str]], optional: set[str]) -> str | None:
        """Each (name in the sandbox, destination here) copied, written as the owner;
        the problem, if any (a name in ``optional`` may be missing)."""
        user = owner_user(self.job.owner)
        for name, dst in pairs:
            src = os.path.join(self.sandbox, name)
            try:
                fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                if name in optional:
                    continue
                return f"{name}: the job did not write it"
            except OSError as e:
                return f"{name}: {e.strerror}"
            try:
                out = open_as(dst, user, write=True, create=True, truncate=True)
                try:
                    copy_fd(fd, out)
                finally:
                    os.close(out)
            except OSError as e:
                return f"{dst}: {e.strerror or e}"
            finally:
                os.close(fd)
        return None

    async def exited(self, code: int | None, sig: int | None, grid_status: str, host: str,
                     execute_host: str) -> None:
        job = self.job
        if not self.in_queue():  # removed or held while its output came home: never Removed -> Completed
            self.m.wake()
            return
        self.m.forget(self)
        now = time.time()
        ad = job.classad()
        uattrs = jp.usage_attrs(ad, {}, self.started or now, now)
        for k, v in uattrs.items():
            ad[k] = v
        decision = jp.on_exit(ad, code, sig, now)
        attrs = dict(uattrs)
        attrs.update(decision.attrs or {})
        attrs["GridJobStatus"] = grid_status
        term = TerminatedEvent(job.cluster.id, job.proc, now, return_value=None if sig is not None else (code or 0),
                               signal=sig, run_remote_usage=Usage(0, 0), total_remote_usage=Usage(0, 0))
        if job.status == JobStatus.IDLE:  # it ran between two polls: say it began
            await self.jobs.mark_running(job, host)
            self.jobs.write_events(job, [ExecuteEvent(job.cluster.id, job.proc, now, execute_host=execute_host)])
        await self.jobs.apply_exit(job, decision, attrs, term)

    async def hold(self, reason: str, code: int, *, grid_status: str | None = None) -> None:
        job = self.job
        if not self.in_queue():  # removed or held meanwhile: the next poll lets it go
            self.m.wake()
            return
        self.m.forget(self)
        await asyncio.to_thread(shutil.rmtree, self.sandbox, True)
        log.info("job %s: held: %s", job.id, reason)
        attrs: dict[str, Any] = {"GridJobId": UNDEFINED, "GridJobSubmitName": UNDEFINED}
        if grid_status:
            attrs["GridJobStatus"] = grid_status
        await self.jobs.commit(self.jobs.set_ops(job, attrs))
        await self.jobs.hold(job, reason[:2000], code, 0, vacate=False)


def copy_fd(src: int, dst: int) -> None:
    """All of ``src`` into ``dst`` (descriptors opened with the owner's rights)."""
    while chunk := os.read(src, 1 << 20):
        view = memoryview(chunk)
        while view:  # a short write (a full disk's last bytes, a signal) writes the rest next
            view = view[os.write(dst, view):]


__all__ = ["MISSING_POLLS", "REMOTE_ATTRS", "UNDEFINED", "Backend", "GridJob", "copy_fd", "text_attr"]
