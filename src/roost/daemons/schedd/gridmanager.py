"""The schedd's grid manager (issue 30): grid-universe jobs handed to Slurm
(``grid_resource = batch slurm``) and mirrored in the user's queue.

Each idle grid job gets a sandbox in the schedd's spool (``grid/<cluster>.<proc>``,
its owner's), its executable and input files copied in with the owner's rights, and is
submitted with ``sbatch`` run as its owner (``nobody`` for root's jobs, as every job
here), under a name that says which job and which attempt it is. One poll loop asks
Slurm (``scontrol show job -o``) for every grid job at once every
``GRIDMANAGER_JOB_PROBE_INTERVAL`` seconds and hands each record to
:func:`roost.core.gridbatch.mirror`: ``GridJobStatus`` follows Slurm's word, running
is Running (with the execute event), an exit is staged back (stdout, stderr,
``transfer_output_files`` or every new top-level file) and completes the job; what
Slurm ended without the job's doing is a hold with Slurm's reason. ``roost rm`` and
``hold`` cancel the Slurm job (``scancel``); ``release`` submits it again.

Restartable at any time: the name is committed (``GridJobSubmitName``) before
``sbatch`` runs and ``GridJobId`` after, so a schedd killed in between finds the job
Slurm has by its name instead of submitting a second one; a job with a ``GridJobId``
is polled again, never resubmitted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import stat
import time
from typing import Any

from roost.core import jobpolicy as jp
from roost.core.gridbatch import (
    HOLD_GRID_SUBMIT_FAILED,
    SlurmOptionError,
    mirror,
    parse_sbatch,
    parse_scontrol,
    sbatch_args,
    slurm_job_name,
)
from roost.core.spooling import file_items, under_iwd
from roost.daemons.schedd import runners
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.localuniverse import drop_to, job_argv, run_as
from roost.daemons.userfiles import open_as
from roost.eventlog import (
    ExecuteEvent,
    GridResourceDownEvent,
    GridResourceUpEvent,
    GridSubmitEvent,
    TerminatedEvent,
    Usage,
)
from roost.universes.grid import UNIVERSE, GridResourceError, parse_grid_resource
from roost.vocabulary import JobStatus

log = logging.getLogger(__name__)

GRID_UNIVERSE = UNIVERSE.number
#: polls a Slurm job may be missing from scontrol's answer before it counts as gone
_MISSING_POLLS = 5
_STDOUT, _STDERR, _SCRIPT = "_roost_stdout", "_roost_stderr", "_roost_job.sh"
#: what a job held or removed drops of its remote job (a release submits a new one)
_REMOTE_ATTRS = ("GridJobId", "GridJobStatus", "GridJobSubmitName")
_UNDEFINED = "/Expr(undefined)/"


def _text(job: Job, attr: str) -> str | None:
    """A string attribute's value; None for none, or for one made undefined."""
    v = job.get(attr)
    return v if isinstance(v, str) and v and not v.startswith("/Expr(") else None


def is_grid(job: Job) -> bool:
    return runners.grid_managed(job.get("JobUniverse"))


class GridManager:
    """Every grid job of this schedd, and the one loop that polls their remote state."""

    def __init__(self, jobs: JobLifecycle, config: Any, schedd_name: str, spool: str) -> None:
        self.jobs = jobs
        self.schedd_name = schedd_name
        self.interval = float(config.get_float("GRIDMANAGER_JOB_PROBE_INTERVAL", 10.0) or 10.0)
        self.root = os.path.join(spool, "grid")
        self.env = dict(os.environ)
        conf = (config.get("SLURM_CONF") or "").strip()
        if conf:
            self.env["SLURM_CONF"] = conf
        self.active: dict[tuple[int, int], GridJob] = {}
        self.down = False
        self._wake = asyncio.Event()

    # -- the schedd's hooks ----------------------------------------------------------------

    def start(self, job: Job) -> None:
        """An idle grid job (submitted, released, or found at start): submit it, or poll
        the remote job it already has."""
        if job.key in self.active or job.status not in (JobStatus.IDLE, JobStatus.RUNNING):
            return
        runner = GridJob(self, job)
        self.active[job.key] = runner
        self.jobs.runners[job.key] = runner
        if job.status == JobStatus.IDLE:
            self.jobs.queue.take_idle(job)
        self.jobs.host.spawn(runner.begin(), f"grid-{job.id}")

    async def loop(self) -> None:
        """Poll Slurm for every active job, for ever (the schedd's task)."""
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.interval):
                    await self._wake.wait()
            self._wake.clear()
            if self.active:
                try:
                    await self.poll()
                except Exception:  # noqa: BLE001 - one bad poll never ends the loop
                    log.exception("grid manager: poll failed")

    def wake(self) -> None:
        self._wake.set()

    async def poll(self) -> None:
        ids = {g.slurm_id: g for g in list(self.active.values()) if g.slurm_id}
        if not ids:
            return
        rc, out, err = await self.run(["scontrol", "show", "job", "-o"])
        if rc != 0 and "Invalid job id" not in err:
            if not self.down:
                self.down = True
                log.warning("grid manager: Slurm does not answer: %s", err.strip()[:300])
                for g in ids.values():
                    self.jobs.write_events(g.job, [GridResourceDownEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                         grid_resource="batch slurm")])
            return
        if self.down:
            self.down = False
            for g in ids.values():
                self.jobs.write_events(g.job, [GridResourceUpEvent(g.job.cluster.id, g.job.proc, time.time(),
                                                                   grid_resource="batch slurm")])
        records = {r.get("JobId"): r for r in parse_scontrol(out)}
        for slurm_id, g in ids.items():
            await g.observe(records.get(slurm_id))

    async def run(self, argv: list[str], ids: tuple[int, int, str, str] | None = None,
                  cwd: str = "/") -> tuple[int, str, str]:
        """A Slurm command (as ``ids``' user when given): exit status, stdout, stderr."""
        kwargs: dict[str, Any] = {}
        if ids is not None:
            kwargs["preexec_fn"] = drop_to(ids[0], ids[1], cwd)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=self.env,
                cwd="/", start_new_session=True, **kwargs)
            out, err = await asyncio.wait_for(proc.communicate(), 60)
        except (OSError, TimeoutError) as e:
            return 127, "", f"{argv[0]}: {e}"
        return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")

    def forget(self, g: GridJob) -> None:
        if self.active.get(g.job.key) is g:
            del self.active[g.job.key]
        if self.jobs.runners.get(g.job.key) is g:
            self.jobs.runners.pop(g.job.key, None)


class GridJob:
    """One grid job's remote life: its sandbox, its Slurm id, what was last seen."""

    def __init__(self, manager: GridManager, job: Job) -> None:
        self.m = manager
        self.jobs = manager.jobs
        self.job = job
        gid = _text(job, "GridJobId")
        self.slurm_id: str | None = gid.split()[-1] if gid and gid.startswith("batch slurm ") else None
        self.sandbox = os.path.join(manager.root, f"{job.cluster.id}.{job.proc}")
        self.ids = run_as(job.owner)
        self.missing = 0
        self.cancelled = False

    # -- submit ----------------------------------------------------------------------------

    async def begin(self) -> None:
        job = self.job
        try:
            parse_grid_resource(job.get("GridResource"))
        except GridResourceError as e:
            await self._hold(str(e), HOLD_GRID_SUBMIT_FAILED)
            return
        if self.slurm_id is None:
            name = _text(job, "GridJobSubmitName")
            if name:
                self.slurm_id = await self._find(name)  # a predecessor submitted, then died
            if self.slurm_id is None:
                await self._submit()
                return
            await self._record_id(name or "")
        self.m.wake()

    async def _find(self, name: str) -> str | None:
        rc, out, _ = await self.m.run(["scontrol", "show", "job", "-o"])
        if rc != 0:
            return None
        for r in parse_scontrol(out):
            if r.get("JobName") == name:
                return r.get("JobId")
        return None

    async def _submit(self) -> None:
        job = self.job
        starts = job.get("NumGridSubmits")
        attempt = (starts if isinstance(starts, int) else 0) + 1
        name = slurm_job_name(self.m.schedd_name, job.cluster.id, job.proc, attempt)
        await self.jobs.commit(self.jobs.set_ops(job, {"GridJobSubmitName": name, "NumGridSubmits": attempt}))
        try:
            await asyncio.to_thread(self._prepare)
            args = sbatch_args(_numbers(job), name=name, sandbox=self.sandbox,
                               script=os.path.join(self.sandbox, _SCRIPT))
        except (OSError, SlurmOptionError) as e:
            await self._hold(f"Cannot stage the job's input for Slurm: {e}", jp.HOLD_TRANSFER_INPUT_ERROR)
            return
        rc, out, err = await self.m.run(["sbatch", *args], self.ids, self.sandbox)
        slurm_id = parse_sbatch(out) if rc == 0 else None
        if slurm_id is None:
            said = " ".join(line.strip() for line in (err or out).splitlines() if line.strip())[:1500]
            await self._hold(f"Slurm refused the job: {said or f'sbatch exited {rc}'}", HOLD_GRID_SUBMIT_FAILED)
            return
        self.slurm_id = slurm_id
        await self._record_id(name)
        self.m.wake()

    async def _record_id(self, name: str) -> None:
        job = self.job
        gid = f"batch slurm {self.slurm_id}"
        await self.jobs.report(job, self.jobs.set_ops(job, {"GridJobId": gid, "GridJobStatus": "PENDING"}),
                               [GridSubmitEvent(job.cluster.id, job.proc, time.time(), grid_resource="batch slurm",
                                                grid_job_id=gid)])
        log.info("job %s: Slurm job %s (%s)", job.id, self.slurm_id, name)

    def _prepare(self) -> None:
        """The sandbox, its owner's, with the executable, the input files and the script."""
        job, get = self.job, self.job.get
        iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
        user = owner_user(job.owner)
        uid, gid = (self.ids[0], self.ids[1]) if self.ids is not None else (os.getuid(), os.getgid())
        shutil.rmtree(self.sandbox, ignore_errors=True)
        os.makedirs(self.m.root, mode=0o755, exist_ok=True)
        os.mkdir(self.sandbox, 0o700)
        os.chown(self.sandbox, uid, gid)
        argv = job_argv(get)
        copies: list[tuple[str, str, int]] = []
        if get("TransferExecutable") is not False and argv[0]:
            copies.append((under_iwd(iwd, argv[0]), os.path.basename(argv[0]), 0o700))
        for item in file_items(get("TransferInput")):
            copies.append((under_iwd(iwd, item), os.path.basename(item.rstrip("/")), 0o600))
        stdin = get("In")
        if isinstance(stdin, str) and stdin and stdin != os.devnull:
            copies.append((under_iwd(iwd, stdin), "_roost_stdin", 0o600))
        for src, name, mode in copies:
            fd = open_as(src, user)
            try:
                dst = os.open(os.path.join(self.sandbox, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                              mode)
                try:
                    _copy(fd, dst)
                    os.fchown(dst, uid, gid)
                finally:
                    os.close(dst)
            finally:
                os.close(fd)
        exe = "./" + os.path.basename(argv[0]) if get("TransferExecutable") is not False else argv[0]
        command = " ".join(shlex.quote(a) for a in [exe, *argv[1:]])
        redirect = " < _roost_stdin" if any(n == "_roost_stdin" for _, n, _ in copies) else " < /dev/null"
        script = os.path.join(self.sandbox, _SCRIPT)
        with open(script, "x") as f:
            # Slurm runs a copy of this script from its own spool: the sandbox by name
            f.write(f"#!/bin/sh\n# roost job {job.id}\ncd {shlex.quote(self.sandbox)} && exec {command}{redirect}\n")
        os.chmod(script, 0o700)
        os.chown(script, uid, gid)

    # -- remote state ------------------------------------------------------------------------

    async def observe(self, record: dict[str, str] | None) -> None:
        job = self.job
        if not job.cluster.holds(job):
            self.m.forget(self)
            return
        if job.status in (JobStatus.REMOVED, JobStatus.HELD) or self.jobs.runners.get(job.key) is not self:
            await self._stop(record)
            return
        if record is None:
            self.missing += 1
            if self.missing >= _MISSING_POLLS:
                await self._hold(f"Slurm no longer knows job {self.slurm_id}", HOLD_GRID_SUBMIT_FAILED)
            return
        self.missing = 0
        m = mirror(record)
        if m.grid_status != job.get("GridJobStatus") and not m.done:
            await self.jobs.commit(self.jobs.set_ops(job, {"GridJobStatus": m.grid_status}))
        if m.status in (JobStatus.RUNNING, JobStatus.SUSPENDED) and job.status == JobStatus.IDLE:
            node = record.get("NodeList") or "slurm"
            await self.jobs.mark_running(job, f"slurm/{node}", extra={"GridJobStatus": m.grid_status})
            self.jobs.write_events(job, [ExecuteEvent(job.cluster.id, job.proc, time.time(),
                                                      execute_host=f"<slurm:{node}>")])
            self.started = time.time()
        if not m.done:
            return
        if m.status == JobStatus.COMPLETED:
            problem = await asyncio.to_thread(self._stage_out)
            if problem:
                await self._hold(f"Failed to transfer output files from Slurm's sandbox: {problem}",
                                 jp.HOLD_TRANSFER_OUTPUT_ERROR)
                return
            await self._exited(m.exit_code, m.exit_signal, m.grid_status)
        else:
            await self._hold(m.hold_reason or f"Slurm ended the job: {m.grid_status}", m.hold_code,
                             grid_status=m.grid_status)

    async def _stop(self, record: dict[str, str] | None) -> None:
        """Removed or held by the user: cancel the Slurm job, then let it go."""
        job = self.job
        if self.slurm_id and not self.cancelled:
            self.cancelled = True
            await self.m.run(["scancel", self.slurm_id])
        finished = record is None or mirror(record).done
        if not finished:
            return
        self.m.forget(self)
        await asyncio.to_thread(shutil.rmtree, self.sandbox, True)
        if job.status == JobStatus.REMOVED and job.key in self.jobs.queue.running:
            await self.jobs.finish_removed(job)
        elif job.status == JobStatus.HELD:  # a release submits it anew
            await self.jobs.commit(self.jobs.set_ops(job, dict.fromkeys(_REMOTE_ATTRS, _UNDEFINED)))
        elif job.status == JobStatus.IDLE and job.cluster.holds(job):
            # released before Slurm had ended the cancelled job: now submit it anew
            await self.jobs.commit(self.jobs.set_ops(job, dict.fromkeys(_REMOTE_ATTRS, _UNDEFINED)))
            self.m.start(job)

    def vacate_job(self, job: Job) -> None:
        """Removed or held while running: the next poll cancels it."""
        self.m.wake()

    def _stage_out(self) -> str | None:
        """Stdout, stderr and the output files back to Iwd, written as the owner; the
        problem, if any."""
        get = self.job.get
        iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
        user = owner_user(self.job.owner)
        pairs: list[tuple[str, str]] = []
        for attr, name in (("Out", _STDOUT), ("Err", _STDERR)):
            dst = get(attr)
            if isinstance(dst, str) and dst and dst != os.devnull:
                pairs.append((name, under_iwd(iwd, dst)))
        wanted = file_items(get("TransferOutput"))
        if not wanted:  # every new top-level file, as HTCondor's file transfer does
            skip = {_STDOUT, _STDERR, _SCRIPT, "_roost_stdin", os.path.basename(job_argv(get)[0]),
                    *(os.path.basename(i.rstrip("/")) for i in file_items(get("TransferInput")))}
            wanted = sorted(n for n in os.listdir(self.sandbox) if n not in skip
                            and stat.S_ISREG(os.lstat(os.path.join(self.sandbox, n)).st_mode))
        pairs += [(w, under_iwd(iwd, os.path.basename(w))) for w in wanted]
        for name, dst in pairs:
            src = os.path.join(self.sandbox, name)
            try:
                fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError:
                if name in (_STDOUT, _STDERR):
                    continue
                return f"{name}: the job did not write it"
            except OSError as e:
                return f"{name}: {e.strerror}"
            try:
                out = open_as(dst, user, write=True, create=True, truncate=True)
                try:
                    _copy(fd, out)
                finally:
                    os.close(out)
            except OSError as e:
                return f"{dst}: {e.strerror or e}"
            finally:
                os.close(fd)
        shutil.rmtree(self.sandbox, ignore_errors=True)
        return None

    async def _exited(self, code: int | None, sig: int | None, grid_status: str) -> None:
        job = self.job
        self.m.forget(self)
        now = time.time()
        ad = job.classad()
        uattrs = jp.usage_attrs(ad, {}, getattr(self, "started", now), now)
        for k, v in uattrs.items():
            ad[k] = v
        decision = jp.on_exit(ad, code, sig, now)
        attrs = dict(uattrs)
        attrs.update(decision.attrs or {})
        attrs["GridJobStatus"] = grid_status
        term = TerminatedEvent(job.cluster.id, job.proc, now, return_value=None if sig is not None else (code or 0),
                               signal=sig, run_remote_usage=Usage(0, 0), total_remote_usage=Usage(0, 0))
        if job.status == JobStatus.IDLE:  # it ran between two polls: say it began
            await self.jobs.mark_running(job, "slurm")
            self.jobs.write_events(job, [ExecuteEvent(job.cluster.id, job.proc, now, execute_host="<slurm>")])
        await self.jobs.apply_exit(job, decision, attrs, term)

    async def _hold(self, reason: str, code: int, *, grid_status: str | None = None) -> None:
        job = self.job
        self.m.forget(self)
        await asyncio.to_thread(shutil.rmtree, self.sandbox, True)
        log.info("job %s: held: %s", job.id, reason)
        attrs: dict[str, Any] = {"GridJobId": _UNDEFINED, "GridJobSubmitName": _UNDEFINED}
        if grid_status:
            attrs["GridJobStatus"] = grid_status
        await self.jobs.commit(self.jobs.set_ops(job, attrs))
        await self.jobs.hold(job, reason[:2000], code, 0, vacate=False)


def _copy(src: int, dst: int) -> None:
    """All of ``src`` into ``dst`` (descriptors opened with the owner's rights)."""
    while chunk := os.read(src, 1 << 20):
        os.write(dst, chunk)


def _numbers(job: Job) -> dict[str, Any]:
    """The requests sbatch's options are made of, evaluated (RequestMemory is an
    expression in most submit files)."""
    ad = job.classad()
    out: dict[str, Any] = {}
    for attr in ("RequestCpus", "RequestMemory", "BatchRuntime", "BatchQueue", "BatchProject"):
        if attr in ad:
            with contextlib.suppress(Exception):
                v = ad.eval(attr)
                out[attr] = v if isinstance(v, (int, float, str)) else None
    return out


__all__ = ["GRID_UNIVERSE", "GridJob", "GridManager", "is_grid"]
