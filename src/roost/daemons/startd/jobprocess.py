"""A starter's process: the job started (as its user, in its session, process group and
cgroups, under its keeper: launch.py), its record written right after the exec, and
its end waited for on a pidfd (``wait4`` gives the rusage; the keeper's exit file the
job's own status), or by one SIGCHLD handler on kernels without pidfds. ``Process`` is
one of the parts of ``Starter`` (starter.py); when to spawn is the job-run machine's
(core/jobrun.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from roost.core.jobpolicy import HOLD_IWD_ERROR
from roost.core.jobrun import Ev, JobRun
from roost.daemons import userfiles
from roost.daemons.startd import container, jobcommand, jobusage, launch, procstat, startfault
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobspec import Identity, JobSpec, executable_path, job_file
from roost.daemons.startd.leftovers import Record
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.sandboxfiles import devnull, disk_kib
from roost.daemons.userfiles import User

#: a container runtime's client runs as root with this, not the job's environment (passed in)
RUNTIME_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


class StartError(Exception):
    """The job cannot be started (its message goes to the schedd as is; ``hold_code``,
    when given, is the HTCondor hold code the schedd holds it with). ``machine``: the
    machine's fault, not the job's (startfault.py): the job is requeued, never held."""

    def __init__(self, message: str, hold_code: int | None = None, *, machine: bool = False) -> None:
        super().__init__(message)
        self.hold_code = hold_code
        self.machine = machine


def _proc_start_ticks(pid: int) -> int | None:
    """Start time of a process (clock ticks since boot): tells a reused pid apart."""
    got = procstat.read(pid)
    return got.start_ticks if got is not None else None


def _open_std(path: str, user: User, top: str, what: str, write: bool = False, truncate: bool = False) -> int:
    try:
        return userfiles.open_as(path, user, write=write, create=write, truncate=truncate, append=write,
                                 start=top)
    except OSError as e:
        raise StartError(f"cannot open the job's {what} file {path}: {e.strerror}",
                         machine=startfault.is_shortage(e)) from None


class Process:
    """The starter's job process (a part of ``Starter``)."""

    spec: JobSpec
    machine: JobRun
    name: str
    sandbox: str
    identity: Identity
    env: dict[str, str]
    universes: Any
    cgroups: JobCgroups
    memory: MemoryLimits
    cpu: CpuShares
    memory_limit: int | None
    cpus: int
    claim_id: str
    started: float
    run_started: float
    pid: int | None
    container: str | None
    _container_gone: bool
    _container_pid: int | None
    _exit_fd: int | None
    _record: dict[str, Any]
    _proc: Any
    _exited: asyncio.Future[Any] | None
    _adopted: Record | None
    _poller: asyncio.Task[None] | None
    _loop: asyncio.AbstractEventLoop
    _reaped: bool
    _reaped_and_killed: bool
    _move_after_exec: bool
    _feed: Callable[..., None]
    _close_exit: Callable[[], None]
    _read_exit: Callable[[], Any]
    save_record: Callable[..., None]

    async def _spawn(self, restart: bool = False) -> None:
        """Start the job (``restart``: again, after a checkpoint: its stdout and stderr
        go on where they were)."""
        spec, box = self.spec, self.sandbox
        exe = executable_path(spec, box)
        if spec.transfer and os.path.isabs(spec.cmd) and not os.path.exists(exe):
            exe = spec.cmd  # not sent by the schedd: a program already on this machine
        stdin = job_file(spec, spec.stdin, box)
        opened = []
        # Opened as root in places the job's user controls (its sandbox, which it had to
        # itself before a restart; its Iwd): never through a link, only its own files
        # (userfiles.py). The sandbox is the walk's trusted start; an Iwd is walked from /.
        user, top = self.job_user(), box if spec.transfer else "/"
        if not spec.transfer:  # the job enters its Iwd as its user (launch.py): say so if it cannot
            try:
                os.close(userfiles.open_dir(spec.iwd, user))
            except OSError as e:
                raise StartError(f"cannot enter the job's Iwd {spec.iwd} as uid {user.uid}: "
                                 f"{e.strerror or e}", HOLD_IWD_ERROR, machine=startfault.is_shortage(e)) from None
        try:
            if stdin:
                opened.append(_open_std(stdin, user, top, "input (In)"))
            std = []
            for name, what in ((spec.stdout, "output (Out)"), (spec.stderr, "error (Err)")):
                path = job_file(spec, name, box)
                if path is None:
                    std.append(devnull(os.O_WRONLY))
                    continue
                fd = _open_std(path, user, top, what, write=True, truncate=not restart)
                opened.append(fd)
                std.append(fd)
            ident = self.identity
            try:  # the program itself, the JVM, or a container runtime (jobcommand.py)
                cmd = jobcommand.command(
                    spec, self.universes, exe=exe, sandbox=box, sandbox_name=self.name, identity=ident,
                    user=user, env=self.env, memory_mib=(self.memory_limit >> 20) if self.memory_limit else None,
                    cpus=self.cpus, stdin=bool(stdin))
            except jobcommand.CommandError as e:
                raise StartError(str(e)) from None
            self.container, self._container_gone, self._container_pid = cmd.container, False, None
            as_user = ident.switch and cmd.as_job_user
            request = launch.Launch(
                argv=cmd.argv,
                executable=cmd.executable,
                # a container runtime runs as root: its own environment and directory,
                # the job's reach the container only (as its arguments)
                cwd=(box if spec.transfer else spec.iwd) if cmd.as_job_user else "/",
                env=self.env if cmd.as_job_user else RUNTIME_ENV,
                stdin=opened[0] if stdin else devnull(os.O_RDONLY),
                stdout=std[0],
                stderr=std[1],
                uid=ident.uid if as_user else None,
                gid=ident.gid if as_user else None,
                init_groups=ident.real_owner,
                cgroup_procs=self.cgroups.procs_file(self.name),
                exit_fd=self._exit_fd if self._exit_fd is not None else -1,
                core_size=spec.core_size,
            )
            # With the launcher or sh shim the job is in its cgroup before its first exec;
            # the move after the exec is then only needed where neither is used.
            self._move_after_exec = not launch.shim_enters_cgroup(request)
            pending = asyncio.ensure_future(launch.spawn(request, self._after_spawn))
            try:
                proc = await asyncio.shield(pending)
            except asyncio.CancelledError:
                # vacated while the spawner thread was starting it: what it started is
                # the machine's to kill (unless the startd leaves its jobs to the next)
                with contextlib.suppress(Exception):
                    self._started(await pending)
                    self._feed(Ev.SPAWNED)
                raise
        finally:
            for fd in opened:
                os.close(fd)
            self._close_exit()  # the keeper has its own (or nothing started)
        self._started(proc)

    def _after_spawn(self, proc: subprocess.Popen[bytes] | launch.Kept) -> None:
        """On the spawner thread, right after the exec: the cgroup move where the job did
        not enter it itself, and the job's record, by which a restarted startd adopts
        it or kills it (its /proc reads and file write kept off the event loop)."""
        pid = proc.pid
        if self._move_after_exec:
            self.cgroups.enter(self.name, pid)
        loop = self._loop
        procs = self.cgroups.procs_file(self.name)

        def job_pids() -> list[int]:  # every process of the job, from its own (v2) cgroup
            try:
                with open(procs) as f:  # type: ignore[arg-type]
                    return [int(x) for x in f.read().split()]
            except (OSError, TypeError, ValueError):
                return []

        def later(delay: float, fn: Callable[[], Any]) -> None:  # the event loop's timer: no thread per job
            loop.call_soon_threadsafe(loop.call_later, delay, fn)

        self.memory.enter(self.name, pid, lambda: not self._reaped, later=later, pids=job_pids)
        self.cpu.enter(self.name, pid, lambda: not self._reaped, later, job_pids)
        keeper = proc.keeper_pid if isinstance(proc, launch.Kept) else None
        self._record.update(
            job=self.spec.job_id, sandbox=self.name, claim_id=self.claim_id, started=self.started,
            pid=pid, ticks=_proc_start_ticks(pid) or 0,
            keeper=keeper, keeper_ticks=(_proc_start_ticks(keeper) or 0) if keeper else 0,
            oom_base=self.memory.oom_base(self.name),
        )
        self.save_record()

    def job_user(self) -> User:
        """Whose rights the startd's opens on the job's behalf have (its std files, roost
        tail's reads): the job's user, with its groups."""
        ident = self.identity
        if not ident.switch:
            return User(os.geteuid(), os.getegid(), frozenset(os.getgroups()) | {os.getegid()})
        groups = {ident.gid}
        if ident.real_owner and ident.name:
            with contextlib.suppress(OSError, KeyError):
                groups.update(os.getgrouplist(ident.name, ident.gid))
        return User(ident.uid, ident.gid, frozenset(groups))

    def _started(self, proc: subprocess.Popen[bytes] | launch.Kept) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.run_started = time.time()
        self._reaped_and_killed = False  # a new process group: it may be signalled
        self._watch(proc.keeper_pid if isinstance(proc, launch.Kept) else proc.pid)

    def _watch(self, pid: int, adopted: bool = False) -> None:
        """Resolve ``_exited`` when the job ends: pidfd of ``pid`` (the job's keeper, else
        the job) readable → wait4 (rusage included), and the job's wait status from the
        keeper's exit file. ``adopted``: ``pid`` is no child of ours (a previous startd
        started it): its end is only in the exit file.

        Kernels before 5.3 have no pidfd: then one SIGCHLD handler reaps for
        every starter (``_SigchldReaper``), and adopted jobs are polled.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[int | None, Any]] = loop.create_future()
        self._exited = fut
        kept = isinstance(self._proc, launch.Kept) or adopted

        def reaped(status: int | None, usage: Any) -> None:
            self._reaped = True  # its pid may be anyone's from now on
            if kept:  # the keeper's own status says nothing: the job's is in the file
                got = self._read_exit()
                status = got[0] if got is not None else None  # None: the keeper died first
                if got is not None and usage is None:
                    usage = got[1]
            if self._proc is not None and status is not None:
                self._proc.returncode = os.waitstatus_to_exitcode(status)
            if status is not None and os.WIFEXITED(status) and self.container is not None:
                self._container_gone = True  # its client ended by itself: run --rm removed it
            if not fut.done():
                fut.set_result((status, usage))

        if adopted and self._adopted is not None and not self._adopted.alive():
            reaped(None, None)  # ended while no startd watched: its file says how
            return
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            reaped(None, None)
            return
        except (OSError, AttributeError):
            if adopted:
                self._poll(pid, reaped)
            else:
                _SigchldReaper.watch(loop, pid, reaped)
            return
        if adopted and self._adopted is not None and not self._adopted.alive():
            os.close(pidfd)  # its pid was reused between the two looks
            reaped(None, None)
            return

        def ready() -> None:
            try:
                got, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (adopted), or reaped elsewhere
                got, status, usage = pid, (None if kept else 255 << 8), None
            if got == 0:
                return
            loop.remove_reader(pidfd)
            os.close(pidfd)
            reaped(status, usage)

        loop.add_reader(pidfd, ready)

    def _poll(self, pid: int, reaped: Callable[[int | None, Any], None]) -> None:
        """An adopted keeper on a kernel without pidfds: look twice a second."""
        async def poll() -> None:
            while self._adopted is not None and self._adopted.alive():
                await asyncio.sleep(0.5)
            reaped(None, None)

        self._poller = asyncio.get_running_loop().create_task(poll())

    async def _wait(self) -> tuple[int | None, Any]:
        assert self._exited is not None
        return await asyncio.shield(self._exited)

    def _exit_update(self, status: int | None, usage: Any, wall: float) -> dict[str, Any]:
        if status is None:  # the keeper died before the job: its end is unknown, the job dies
            return {"state": "failed", "retry": True, "usage": {},
                    "error": "the job's keeper process ended before the job (killed?): the job runs again"}
        return jobusage.exit_update(status, usage, wall, self.memory.state(self.name),
                                    self.memory_limit if self.memory.enforced else None)

    def live_usage(self) -> dict[str, Any]:
        """What the job uses now (for the periodic report): memory and CPU, and its
        sandbox's size (DiskUsage, KiB). Blocking: on a thread."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None:
            # what runs inside is not in the job's cgroup nor the client's process group
            if self._container_pid is None:
                self._container_pid = container.main_pid(rt, self.container)
            tree = procstat.tree_usage(self._container_pid, session=True) if self._container_pid else None
            out = jobusage.live(None, tree)
            out["DiskUsage"] = disk_kib(self.sandbox)
            return out
        tree = procstat.tree_usage(self.pid) if self.pid is not None else None
        out = jobusage.live(self.memory.state(self.name), tree)
        out["DiskUsage"] = disk_kib(self.sandbox)
        return out


class _SigchldReaper:
    """The fallback without pidfds: on SIGCHLD, ``wait4`` each watched pid (WNOHANG)."""

    _watched: dict[int, Callable[[int, Any], None]] = {}
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def watch(cls, loop: asyncio.AbstractEventLoop, pid: int, done: Callable[[int, Any], None]) -> None:
        cls._watched[pid] = done
        if cls._loop is not loop:
            loop.add_signal_handler(signal.SIGCHLD, cls._reap)
            cls._loop = loop
        cls._reap()  # it may have exited before the handler was there

    @classmethod
    def _reap(cls) -> None:
        for pid in list(cls._watched):
            try:
                got, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                got, status, usage = pid, 255 << 8, None
            if got:
                cls._watched.pop(pid)(status, usage)
