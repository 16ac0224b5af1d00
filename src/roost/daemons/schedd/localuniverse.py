"""Universes local (12) and scheduler (7): jobs the schedd runs itself, at once, on the submit
host (the runner both name in ``roost.universes``; runners.py says which jobs are theirs).

No negotiation and no claim: the job is a child process of the schedd in its own
session, started in Iwd with stdin/stdout/stderr wired to In/Out/Err, as its
owner, never as root (``nobody`` when the owner has no account here).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import resource
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.joblimits import job_nofile
from roost.daemons.schedd import runners
from roost.daemons.schedd.access import owner_user
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.userfiles import open_as
from roost.eventlog import ExecuteEvent, TerminatedEvent, Usage
from roost.net.addresses import INHERITED_FD_ENV

log = logging.getLogger(__name__)

KILL_GRACE = 5.0


def job_argv(get: Any) -> list[str]:
    """The command line from Cmd and Arguments (V2) or Args (V1)."""
    cmd = get("Cmd")
    argv = [cmd if isinstance(cmd, str) else ""]
    args2 = get("Arguments")
    if isinstance(args2, str) and args2:
        # lazy: roost.submit (~60 ms of imports) loads with the first local job, not at start-up
        from roost.submit.arglist import split_v2_raw

        argv += split_v2_raw(args2)
    else:
        args1 = get("Args")
        if isinstance(args1, str) and args1:
            argv += args1.split()
    return argv


def job_environment(get: Any, base: dict[str, str] | None = None) -> dict[str, str]:
    # lazy: roost.submit (~60 ms of imports) loads with the first local job, not at start-up
    from roost.submit.arglist import ad_environment

    env = dict(base or {})
    env.update(ad_environment(get))  # Environment, else Env (env = A=1;B=2)
    return env


def run_as(owner: str) -> tuple[int, int, str, str] | None:
    """(uid, gid, name, home) the job runs as; None when we are not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in (owner, "nobody"):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        if pw.pw_uid != 0:
            return pw.pw_uid, pw.pw_gid, pw.pw_name, pw.pw_dir
    return 65534, 65534, "nobody", "/"


def process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc), to tell it from a
    later process that reused its pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def kill_orphan(claim: dict[str, Any]) -> bool:
    """Kill what is left of a local job from before a schedd restart; True if it was there."""
    pid, start = claim.get("local_pid"), claim.get("local_start")
    if not isinstance(pid, int) or start is None or process_start(pid) != start:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


DROP_TO_ENV = "ROOST_DAGMAN_RUN_AS"  # uid:gid:name:home the manager becomes once loaded
JOB_ENV_ENV = "ROOST_DAGMAN_JOB_ENV"  # the job's environment (JSON), applied after that
JOB_CWD_ENV = "ROOST_DAGMAN_JOB_CWD"  # the job's Iwd, likewise


def is_own_manager(exe: str, argv: list[str]) -> bool:
    """Is this job roost's DAG manager run by this schedd's own interpreter?"""
    try:
        same = os.path.realpath(exe) == os.path.realpath(sys.executable)
    except OSError:
        return False
    return same and argv[1:3] == ["-m", "roost.dagman"]


def dagman_knobs(config: Any) -> dict[str, str]:
    """This schedd's DAGMAN_* settings as ``_ROOST_`` overrides for the manager's own
    configuration: the owner it runs as may not be able to read the pool's files."""
    out: dict[str, str] = {}
    if config is None:
        return out
    for name in config.names(defaults=False):
        if name.upper().startswith("DAGMAN_"):
            with contextlib.suppress(Exception):
                value = config.get(name)
                if value is not None:
                    out[f"_ROOST_{name.upper()}"] = value
    return out


def drop_to(uid: int, gid: int, cwd: str) -> Any:
    """A preexec_fn that switches the child to ``uid``/``gid`` with no supplementary
    groups, then enters ``cwd`` with those rights (the job's Iwd: root could enter one
    its owner cannot). Nothing of the job's runs before: its environment comes with
    the exec that follows. The soft open-file limit goes back to the pool's (the
    schedd raised its own)."""
    nofile = job_nofile()

    def drop() -> None:
        if nofile is not None:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if nofile < soft:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        os.chdir(cwd)

    return drop


class LocalJob:
    """One running local-universe job (the schedd's runner for it)."""

    def __init__(self, jobs: JobLifecycle, job: Job) -> None:
        self.jobs = jobs
        self.job = job
        self.proc: asyncio.subprocess.Process | None = None
        self.vacating = False

    def vacate(self) -> None:
        self.vacating = True
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        # remove_kill_sig on condor_rm (DAGMan's SIGUSR1: remove the nodes, write a
        # rescue DAG), hold_kill_sig on hold, else kill_sig (SIGTERM)
        get = self.job.get
        sig = None
        if self.job.status == jp.REMOVED:
            sig = jp.signal_number(get("RemoveKillSig"))
        elif self.job.status == jp.HELD:
            sig = jp.signal_number(get("HoldKillSig"))
        sig = sig or jp.signal_number(get("KillSig")) or signal.SIGTERM
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)

        async def hard_kill() -> None:
            await asyncio.sleep(KILL_GRACE)
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)

        self.jobs.host.spawn(hard_kill(), f"kill-local-{self.job.id}")

    def vacate_job(self, job: Job) -> None:
        self.vacate()

    def _serve_channel(self, sock: socket.socket, owner: str) -> None:
        server = self.jobs.host.server
        if server is None:
            sock.close()
            return

        async def serve() -> None:
            try:
                await server.serve_inherited(sock, owner)
            finally:
                sock.close()

        self.jobs.host.spawn(serve(), f"channel-{self.job.id}")

    async def run(self) -> None:
        s = self.jobs
        job = self.job
        get = job.get
        iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
        owner = job.owner
        ids = run_as(owner)

        def path(attr: str) -> str:
            p = get(attr)
            if not isinstance(p, str) or not p:
                return os.devnull
            return p if os.path.isabs(p) else os.path.join(iwd, p)

        files: list[Any] = []
        channel: tuple[socket.socket, socket.socket] | None = None
        try:
            # opened as root on the owner's behalf: as the owner could, never through a
            # link swapped in, never a device or FIFO, a new file made the owner's
            # (userfiles.py); /dev/null as such
            user = owner_user(owner)

            def std(attr: str, write: bool) -> Any:
                p = path(attr)
                if p == os.devnull:
                    return open(os.devnull, "wb" if write else "rb")
                fd = open_as(p, user, write=write, create=write, truncate=write)
                return os.fdopen(fd, "wb" if write else "rb")

            fin = std("In", False)
            files.append(fin)
            fout = std("Out", True)
            files.append(fout)
            ferr = fout if path("Err") == path("Out") else std("Err", True)
            files.append(ferr)
            env = job_environment(get, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            kwargs: dict[str, Any] = {}
            argv = job_argv(get)
            exe = argv[0] if os.path.isabs(argv[0]) else os.path.join(iwd, argv[0])
            cwd = iwd
            if ids is not None:
                env.setdefault("HOME", ids[3])
                env.setdefault("USER", ids[2])
            if ids is not None and runners.wants_channel(get("JobUniverse")) and is_own_manager(exe, argv):
                # roost's own DAG manager: started as we are, it loads its code and then
                # becomes the owner itself (an interpreter the owner cannot run still runs
                # the owner's DAG). Nothing of the user's reaches it before that: our own
                # interpreter in isolated mode (-I: no PYTHON* variables, no user site, no
                # working directory on sys.path), in /, with an environment of our making;
                # the job's environment and Iwd travel as data, applied after the drop.
                exe, argv = sys.executable, [sys.executable, "-I", *argv[1:]]
                env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                       DROP_TO_ENV: f"{ids[0]}:{ids[1]}:{ids[2]}:{ids[3]}",
                       JOB_ENV_ENV: json.dumps(env), JOB_CWD_ENV: iwd, **dagman_knobs(s.host.config)}
                cwd = "/"
            elif ids is not None:
                # Not Popen's user=/group=/extra_groups=: uvloop (the daemons' event
                # loop where installed) refuses those keywords, and every job then
                # went on hold. preexec_fn works under both loops.
                kwargs["preexec_fn"] = drop_to(ids[0], ids[1], iwd)
                cwd = "/"
            env["CONDOR_ID"] = f"{job.cluster.id}.{job.proc}"
            if runners.wants_channel(get("JobUniverse")):
                # a channel to this schedd that speaks for the job's owner (DAGMan submits
                # its nodes through it), as HTCondor hands its scheduler universe a session
                channel = socket.socketpair()
                files.extend(channel)
                env[INHERITED_FD_ENV] = str(channel[1].fileno())
                kwargs["pass_fds"] = (channel[1].fileno(),)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            self.proc = await asyncio.create_subprocess_exec(
                exe, *argv[1:], cwd=cwd, stdin=fin, stdout=fout, stderr=ferr, env=env,
                start_new_session=True, **kwargs,
            )
            if channel is not None:
                files.remove(channel[0])
                self._serve_channel(channel[0], owner)
        except (OSError, ValueError, subprocess.SubprocessError) as e:
            for f in files:
                f.close()
            who = ids[2] if ids is not None else "the schedd's user"
            if isinstance(e, subprocess.SubprocessError):  # in the preexec_fn: the switch, or the chdir
                e = PermissionError(f"cannot become {who} or enter {iwd} as {who}")
            reason = f"Failed to start local universe job (as {who}, in {iwd}): {e}"
            await s.hold(job, reason, jp.HOLD_FAILED_TO_CREATE_PROCESS, 0, vacate=False)
            return
        for f in files:
            f.close()
        started = time.time()
        job.claim = {"local_pid": self.proc.pid, "local_start": process_start(self.proc.pid)}
        await s.mark_running(job, f"local@{s.host.hostname}")
        s.write_events(job, [ExecuteEvent(job.cluster.id, job.proc, started, execute_host=f"<{s.host.address}>")])
        if self.vacating:
            self.vacate()
        rc = await self.proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        now = time.time()
        if not job.cluster.holds(job):
            return
        if job.status == jp.REMOVED:
            await s.finish_removed(job)
            return
        if job.status == jp.HELD:
            await s.clear_claim(job)
            return
        usage = {"user": max(0.0, after.ru_utime - before.ru_utime), "system": max(0.0, after.ru_stime - before.ru_stime)}
        code, sig = (rc, None) if rc >= 0 else (None, -rc)
        ad = job.classad()
        uattrs = jp.usage_attrs(ad, usage, started, now)
        for k, v in uattrs.items():
            ad[k] = v
        decision = jp.on_exit(ad, code, sig, now)
        attrs = dict(uattrs)
        attrs.update(decision.attrs or {})
        term = TerminatedEvent(
            job.cluster.id, job.proc, now,
            return_value=None if sig is not None else code, signal=sig,
            run_remote_usage=Usage(int(usage["user"]), int(usage["system"])),
            total_remote_usage=Usage(int(uattrs["CumulativeRemoteUserCpu"]), int(uattrs["CumulativeRemoteSysCpu"])),
        )
        await s.apply_exit(job, decision, attrs, term)


def start_local(jobs: JobLifecycle, job: Job) -> None:
    """Run an idle local- or scheduler-universe job now, as a child of the schedd."""
    if job.key in jobs.runners or job.status != jp.IDLE:
        return
    jobs.queue.take_idle(job)
    runner = LocalJob(jobs, job)
    jobs.runners[job.key] = runner

    async def go() -> None:
        try:
            await runner.run()
        finally:
            if jobs.runners.get(job.key) is runner:
                jobs.runners.pop(job.key, None)

    jobs.host.spawn(go(), f"local-{job.id}")
