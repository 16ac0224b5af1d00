"""One cgroup v2 per job, where the host lets us make them: every process a job
starts can then be killed at once (``cgroup.kill``), even one that left the
job's process group with setsid. Where cgroup v2 is missing or not writable
(containers, unprivileged runs) the startd falls back to process groups alone;
``STARTD_USE_CGROUPS = False`` turns them off.

Layout: ``<our cgroup>/roost-startd-<hash of EXECUTE>/<sandbox name>``, so
startds with different execute directories on one host never touch each
other's jobs, and a restarted one finds its predecessor's. The job enters its
cgroup before it runs anything: the launcher helper (see ``launch``) or,
without it, a one-line ``sh`` shim (~0.8 ms of child CPU per job) writes its
own pid into the cgroup and execs the job (or setpriv). Without either (not
root) the spawner thread moves the pid after the exec (then a job that forks
at once may start a process outside). Limits are beside it: memlimit (memory) and
cpushare (CPU), in v2 where delegated, else in the host's v1 hierarchies.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

PARENT = "roost-startd"


def startd_dir(root: str, execute_dir: str) -> str:
    """This startd's directory under a cgroup ``root``: named after its execute
    directory, so startds of one host never touch each other's jobs and a restarted
    one finds its predecessor's."""
    tag = hashlib.sha1(os.path.realpath(execute_dir).encode()).hexdigest()[:12]
    return os.path.join(root, f"{PARENT}-{tag}")


def make_writable_dir(base: str) -> None:
    """Make ``base`` and prove we may make cgroups in it; OSError when we may not."""
    os.makedirs(base, exist_ok=True)
    probe = os.path.join(base, f"probe-{os.getpid()}")
    os.mkdir(probe)
    os.rmdir(probe)


def child_dirs(base: str) -> list[str]:
    """The names of the cgroups directly under ``base`` ([] when it cannot be read)."""
    try:
        return [e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def own_v1_path(controller: str) -> str | None:
    """This process's cgroup in the v1 hierarchy of ``controller`` (``memory``, ``cpu``)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if controller in controllers.split(","):
                    return path
    except (OSError, ValueError):
        return None
    return None


def _cgroup2_root() -> str | None:
    """Where this process's cgroup v2 directory is, if there is a cgroup2 mount."""
    try:
        with open("/proc/self/mounts") as f:
            mounts = [line.split() for line in f]
        with open("/proc/self/cgroup") as f:
            own = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
    except OSError:
        return None
    if own is None:
        return None
    for m in mounts:
        if len(m) > 2 and m[2] == "cgroup2":
            path = os.path.join(m[1], own.lstrip("/"))
            if os.path.isdir(path):
                return path
    return None



def kill_procs(path: str) -> None:
    """SIGKILL each process a cgroup directory's ``cgroup.procs`` lists (v1 has no
    cgroup.kill); a directory gone or unreadable holds nothing to kill."""
    with contextlib.suppress(OSError):
        with open(os.path.join(path, "cgroup.procs")) as f:
            for pid in f.read().split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)


def remove_dir(path: str, kill: Callable[[], None] | None = None, wait: float = 2.0) -> None:
    """Remove a cgroup directory (blocking: call it off the event loop). While processes
    keep it busy, ``kill`` them (by default ``kill_procs``; each round) and try again,
    waiting a little longer each time, for up to ``wait`` seconds; then log and leave
    it. Gone already: done. (The job cgroups, the memory and cpu v1 directories.)"""
    deadline = time.monotonic() + wait
    delay = 0.001
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if e.errno != errno.EBUSY or time.monotonic() > deadline:
                log.warning("cannot remove cgroup %s: %s", path, e.strerror)
                return
        kill() if kill is not None else kill_procs(path)
        time.sleep(delay)  # killed processes take a moment to leave
        delay = min(delay * 2, 0.05)

class JobCgroups:
    """Makes, fills, kills and removes the per-job cgroups (or does nothing when off)."""

    def __init__(self, base: str | None) -> None:
        self.base = base

    @classmethod
    def detect(cls, execute_dir: str, enabled: bool = True) -> JobCgroups:
        if not enabled:
            return cls(None)
        root = _cgroup2_root()
        if root is None:
            log.info("no cgroup v2 here: jobs are tracked by process group only")
            return cls(None)
        base = startd_dir(root, execute_dir)
        try:
            make_writable_dir(base)
        except OSError as e:
            log.info("cgroup v2 at %s is not writable (%s): jobs are tracked by process group only",
                     root, e.strerror)
            return cls(None)
        for entry in os.scandir(root):  # empty parents of startds long gone
            if entry.name.startswith(PARENT + "-") and entry.path != base:
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)
        log.info("jobs run in cgroups under %s", base)
        return cls(base)

    @property
    def enabled(self) -> bool:
        return self.base is not None

    def path(self, name: str) -> str | None:
        return None if self.base is None else os.path.join(self.base, name)

    def procs_file(self, name: str) -> str | None:
        path = self.path(name)
        return None if path is None else os.path.join(path, "cgroup.procs")

    def create(self, name: str) -> None:
        """Make the job's cgroup (and our parent again, should a sweep have taken it);
        a failure only costs the job its cgroup."""
        path = self.path(name)
        if path is not None:
            try:
                os.makedirs(path, exist_ok=True)
            except OSError as e:
                log.warning("cannot make cgroup %s: %s", path, e.strerror)

    def enter(self, name: str, pid: int) -> bool:
        """Move ``pid`` into the job's cgroup; False if it could not be done."""
        path = self.path(name)
        if path is None:
            return False
        try:
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, str(pid).encode())
            finally:
                os.close(fd)
        except OSError as e:
            if e.errno != errno.ESRCH:
                log.warning("cannot move pid %d into cgroup %s: %s", pid, path, e.strerror)
            return False
        return True

    def _write(self, name: str, control: str, data: bytes) -> OSError | None:
        """Write ``data`` to one control file of the job's cgroup: None when done, else
        why not (no cgroup, or the kernel lacks or refused the file)."""
        path = self.path(name)
        if path is None:
            return OSError(errno.ENOENT, "no cgroup")
        try:
            fd = os.open(os.path.join(path, control), os.O_WRONLY)
        except OSError as e:
            return e
        try:
            os.write(fd, data)
        except OSError as e:
            return e
        finally:
            os.close(fd)
        return None

    def kill(self, name: str) -> None:
        """SIGKILL everything in the job's cgroup (cgroup.kill, Linux 5.14+)."""
        self._write(name, "cgroup.kill", b"1")

    def count(self, name: str) -> int:
        """How many processes the job's cgroup holds (0 when it has none or none is here)."""
        procs = self.procs_file(name)
        if procs is None:
            return 0
        try:
            with open(procs, "rb") as f:
                return sum(1 for line in f if line.strip())
        except OSError:
            return 0

    def freeze(self, name: str, frozen: bool) -> bool:
        """Freeze (or thaw) everything in the job's cgroup (``cgroup.freeze``, Linux
        5.2+): what a job started in a session of its own stops too, which SIGSTOP
        to the job's process group would miss. False when it could not be done."""
        err = self._write(name, "cgroup.freeze", b"1" if frozen else b"0")
        if err is not None and err.errno != errno.ENOENT:  # ENOENT: no cgroup, or no freezer here
            log.warning("cannot %s cgroup %s: %s", "freeze" if frozen else "thaw", self.path(name), err.strerror)
        return err is None

    def remove(self, name: str, wait: float = 2.0) -> None:
        """Kill what is left and remove the cgroup (blocking: call it off the event loop)."""
        path = self.path(name)
        if path is None:
            return
        # Usually the job's processes are gone (and killed already): an empty cgroup is
        # removed at once, without writing cgroup.kill first.
        remove_dir(path, lambda: self.kill(name), wait)

    def leftovers(self) -> list[str]:
        """Job cgroups a previous startd left behind (their processes are killed by remove)."""
        return child_dirs(self.base) if self.base is not None else []

    def close(self) -> None:
        """Remove our parent cgroup when the startd stops (only if no job cgroup is left)."""
        if self.base is not None:
            with contextlib.suppress(OSError):
                os.rmdir(self.base)
