"""The local end every batch system's grid job shares (``batch slurm``, ``batch sge``):
a sandbox in the schedd's spool that the owner's rights filled (the executable, the
input files, stdin), the command line a ``/bin/sh`` script there runs, the output
copied back to Iwd as the owner, the requests the submit options are made of, and
the restartable submission: the attempt's name committed (``GridJobSubmitName``)
before the submit command runs and ``GridJobId`` after, so a schedd killed in between
finds the job by its name instead of submitting a second one. Each backend writes its
own script and speaks its own commands (gridslurm.py, gridsge.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import stat
import time
from typing import TYPE_CHECKING, Any, ClassVar

from roost.core import jobpolicy as jp
from roost.core.gridbatch import HOLD_GRID_SUBMIT_FAILED, slurm_job_name
from roost.core.spooling import file_items, under_iwd
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.gridjob import GridJob, copy_fd, text_attr
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.localuniverse import drop_to, job_argv
from roost.daemons.userfiles import open_as
from roost.eventlog import GridSubmitEvent

if TYPE_CHECKING:
    from roost.daemons.schedd.gridmanager import GridManager

log = logging.getLogger("roost.daemons.schedd.gridmanager")

STDOUT, STDERR, STDIN, SCRIPT = "_roost_stdout", "_roost_stderr", "_roost_stdin", "_roost_job.sh"


class BatchJob(GridJob):
    """A grid job handed to a batch system through a script in its sandbox. A backend
    names its system, resource and submit command and fills in :meth:`submit_args`,
    :meth:`parse_submit`, :meth:`find` and :meth:`prepare`."""

    SYSTEM: ClassVar[str]  # in messages: "Slurm", "Grid Engine"
    RESOURCE: ClassVar[str]  # GridJobId's first words: "batch slurm"
    FIRST_STATUS: ClassVar[str]  # GridJobStatus once submitted: "PENDING", "qw"
    SUBMIT: ClassVar[str]  # the submit command: "sbatch", "qsub"
    OPTION_ERRORS: ClassVar[tuple[type[Exception], ...]] = ()  # requests the system cannot take

    def __init__(self, manager: GridManager, backend: Any, job: Job) -> None:
        super().__init__(manager, job)
        self.b = backend
        gid = text_attr(job, "GridJobId")
        #: the batch system's id of the job, once submitted
        self.remote_id: str | None = gid.split()[-1] if gid and gid.startswith(self.RESOURCE + " ") else None

    # -- submit ----------------------------------------------------------------------------

    async def begin(self) -> None:
        if self.remote_id is None:
            name = text_attr(self.job, "GridJobSubmitName")
            if name:
                self.remote_id = await self.find(name)  # a predecessor submitted, then died
            if self.remote_id is None:
                await self.submit()
                return
            await self._record_id(name or "")
        self.m.wake()

    async def find(self, name: str) -> str | None:
        """The batch system's id of the job submitted under ``name``, if it has one."""
        raise NotImplementedError

    def submit_args(self, name: str) -> list[str]:
        """The submit command's arguments (one of OPTION_ERRORS when a request cannot be said)."""
        raise NotImplementedError

    def parse_submit(self, out: str) -> str | None:
        """The id the submit command printed, None if none."""
        raise NotImplementedError

    def prepare(self) -> None:
        """The sandbox (``stage_in``) and the script the batch system runs (blocking)."""
        raise NotImplementedError

    async def submit(self) -> None:
        """A new attempt: its name committed first, the sandbox made, the job submitted
        as its owner; a refusal is a hold with the system's words."""
        job = self.job
        starts = job.get("NumGridSubmits")
        attempt = (starts if isinstance(starts, int) else 0) + 1
        name = slurm_job_name(self.m.schedd_name, job.cluster.id, job.proc, attempt)
        await self.jobs.commit(self.jobs.set_ops(job, {"GridJobSubmitName": name, "NumGridSubmits": attempt}))
        try:
            args = self.submit_args(name)
        except self.OPTION_ERRORS as e:
            await self.hold(f"Cannot submit the job to {self.SYSTEM}: {e}", HOLD_GRID_SUBMIT_FAILED)
            return
        try:
            await asyncio.to_thread(self.prepare)
        except OSError as e:
            await self.hold(f"Cannot stage the job's input for {self.SYSTEM}: {e}", jp.HOLD_TRANSFER_INPUT_ERROR)
            return
        rc, out, err = await self.b.run([self.SUBMIT, *args], self.ids, self.sandbox)
        remote_id = self.parse_submit(out) if rc == 0 else None
        if remote_id is None:
            said = " ".join(line.strip() for line in (err or out).splitlines() if line.strip())[:1500]
            await self.hold(f"{self.SYSTEM} refused the job: {said or f'{self.SUBMIT} exited {rc}'}",
                            HOLD_GRID_SUBMIT_FAILED)
            return
        self.remote_id = remote_id
        await self._record_id(name)
        self.m.wake()

    async def _record_id(self, name: str) -> None:
        job = self.job
        gid = f"{self.RESOURCE} {self.remote_id}"
        await self.jobs.report(job, self.jobs.set_ops(job, {"GridJobId": gid, "GridJobStatus": self.FIRST_STATUS}),
                               [GridSubmitEvent(job.cluster.id, job.proc, time.time(), grid_resource=self.RESOURCE,
                                                grid_job_id=gid)])
        log.info("job %s: %s job %s (%s)", job.id, self.SYSTEM, self.remote_id, name)

    def owes_remote(self) -> bool:
        return self.remote_id is not None  # a pending job left by roost rm: cancel it

    # -- the sandbox -------------------------------------------------------------------------

    def stage_in(self) -> tuple[int, int, str]:
        """Make the sandbox, the owner's, with the executable, the input files and stdin
        copied in with the owner's rights (blocking: on a thread). Returns the owner's
        uid and gid and the job's command line, stdin redirected, for the script."""
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
            copies.append((under_iwd(iwd, stdin), STDIN, 0o600))
        for src, name, mode in copies:
            fd = open_as(src, user)
            try:
                dst = os.open(os.path.join(self.sandbox, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                              mode)
                try:
                    copy_fd(fd, dst)
                    os.fchown(dst, uid, gid)
                finally:
                    os.close(dst)
            finally:
                os.close(fd)
        exe = "./" + os.path.basename(argv[0]) if get("TransferExecutable") is not False else argv[0]
        command = " ".join(shlex.quote(a) for a in [exe, *argv[1:]])
        redirect = f" < {STDIN}" if any(n == STDIN for _, n, _ in copies) else " < /dev/null"
        return uid, gid, command + redirect

    def write_script(self, text: str, uid: int, gid: int) -> str:
        """The job's script in its sandbox, the owner's and executable; its path."""
        script = os.path.join(self.sandbox, SCRIPT)
        with open(script, "x") as f:
            f.write(text)
        os.chmod(script, 0o700)
        os.chown(script, uid, gid)
        return script

    def stage_out(self, own_files: tuple[str, ...] = ()) -> str | None:
        """Stdout, stderr and the output files back to Iwd, written as the owner (every
        new top-level file when TransferOutput names none, as HTCondor's file transfer
        does; ``own_files``: the backend's own, never output); the problem, if any."""
        get = self.job.get
        iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
        pairs: list[tuple[str, str]] = []
        for attr, name in (("Out", STDOUT), ("Err", STDERR)):
            dst = get(attr)
            if isinstance(dst, str) and dst and dst != os.devnull:
                pairs.append((name, under_iwd(iwd, dst)))
        wanted = file_items(get("TransferOutput"))
        if not wanted:
            skip = {STDOUT, STDERR, SCRIPT, STDIN, *own_files, os.path.basename(job_argv(get)[0]),
                    *(os.path.basename(i.rstrip("/")) for i in file_items(get("TransferInput")))}
            wanted = sorted(n for n in os.listdir(self.sandbox) if n not in skip
                            and stat.S_ISREG(os.lstat(os.path.join(self.sandbox, n)).st_mode))
        pairs += [(w, under_iwd(iwd, os.path.basename(w))) for w in wanted]
        problem = self.copy_out(pairs, {STDOUT, STDERR})
        if problem is None:
            shutil.rmtree(self.sandbox, ignore_errors=True)
        return problem


async def run_command(argv: list[str], env: dict[str, str] | None, ids: tuple[int, int, str, str] | None = None,
                      cwd: str = "/") -> tuple[int, str, str]:
    """A batch system's command (as ``ids``' user when given, entering ``cwd`` as that
    user), at most 60 s: exit status, stdout, stderr (127 and why when it cannot run)."""
    kwargs: dict[str, Any] = {}
    if ids is not None:
        kwargs["preexec_fn"] = drop_to(ids[0], ids[1], cwd)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
            cwd="/", start_new_session=True, **kwargs)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    except (OSError, TimeoutError) as e:
        return 127, "", f"{argv[0]}: {e}"
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


def requests(job: Job) -> dict[str, Any]:
    """The requests a batch system's submit options are made of, evaluated
    (RequestMemory is an expression in most submit files)."""
    ad = job.classad()
    out: dict[str, Any] = {}
    for attr in ("RequestCpus", "RequestMemory", "BatchRuntime", "BatchQueue", "BatchProject"):
        if attr in ad:
            with contextlib.suppress(Exception):
                v = ad.eval(attr)
                out[attr] = v if isinstance(v, (int, float, str)) else None
    return out


__all__ = ["BatchJob", "STDERR", "STDIN", "STDOUT", "SCRIPT", "requests", "run_command"]
