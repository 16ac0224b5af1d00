"""The local end every batch system's grid job shares (``batch slurm``, ``batch sge``):
a sandbox in the schedd's spool that the owner's rights filled (the executable, the
input files, stdin), the command line a ``/bin/sh`` script there runs, the output
copied back to Iwd as the owner, and the requests the submit options are made of.
Each backend writes its own script and speaks its own commands (gridslurm.py,
gridsge.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import stat
from typing import Any

from roost.core.spooling import file_items, under_iwd
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.gridjob import GridJob, copy_fd
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.localuniverse import drop_to, job_argv
from roost.daemons.userfiles import open_as

STDOUT, STDERR, STDIN, SCRIPT = "_roost_stdout", "_roost_stderr", "_roost_stdin", "_roost_job.sh"


class BatchJob(GridJob):
    """A grid job handed to a batch system through a script in its sandbox."""

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
