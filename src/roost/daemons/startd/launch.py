"""Starting a job's process cheaply, as the right user, without stalling the event loop.

Why not plain ``subprocess.Popen(user=...)``: CPython uses ``vfork`` only
when no user or group change is asked for; with one it falls back to
``fork``, which copies the startd's page tables (~2 ms of startd CPU per
job with a daemon-sized heap). When we are root and util-linux's
``setpriv`` exists, the child is started with ``vfork`` as
``setpriv --reuid --regid --init-groups|--clear-groups -- job ...``, which
sets real, effective and saved ids before exec'ing the job (same pid, same
session). Without ``setpriv`` we fall back to ``Popen(user=...)``.

``setpriv`` is itself ~1.7 ms of CPU per job (it links libcap-ng and
friends), and entering the job's cgroup before the first exec needs the
``sh`` shim in front of it (~0.8 ms more). Where a C compiler exists, the
startd builds a ~40-line helper (``LAUNCHER_SOURCE``) once, on a
background thread, into a root-only directory under EXECUTE, keyed by the
source's hash: it enters the cgroup, sets groups and ids as setpriv does
and execs the job, for ~0.1 ms. Until it is built (or without a compiler)
jobs go through ``sh`` + ``setpriv`` as before.

Either way ``Popen`` waits for the child's exec; that wait runs on one
long-lived spawner thread (not a thread per job), so the event loop keeps
serving other claims meanwhile. Sandbox creation shares that thread, and
sandbox removal has a second one: on ext4 each costs ~1 ms of waiting on
the file system (not CPU) that would otherwise stall the loop.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
_SH = shutil.which("sh", path="/bin:/usr/bin")
_ENTER = '{ echo $$ > "$0"; } 2>/dev/null; exec "$@"'
_spawner: ThreadPoolExecutor | None = None
_launcher: str | None = None  # the built helper, once it is ready

# argv: helper CGROUP_PROCS|- UID GID init|clear -- PROGRAM ARGS...
# Like `sh -c 'echo $$ > cgroup.procs; exec setpriv --reuid=UID --regid=GID --init-groups|--clear-groups -- ...'`:
# a failure to enter the cgroup is ignored (the spawner moves the pid after the exec as
# well); a failure to change ids ends the child (126) before anything of the job runs.
LAUNCHER_SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "roost-launcher: %s: %s\n", what, strerror(errno));
    _exit(126);
}

int main(int argc, char **argv) {
    if (argc < 7 || strcmp(argv[5], "--") != 0) {
        fprintf(stderr, "usage: roost-launcher CGROUP_PROCS|- UID GID init|clear -- PROGRAM ARGS...\n");
        return 126;
    }
    if (strcmp(argv[1], "-") != 0) {
        int fd = open(argv[1], O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            char buf[32];
            int n = snprintf(buf, sizeof buf, "%ld", (long)getpid());
            if (write(fd, buf, (size_t)n) < 0) { /* the spawner's move is the second net */ }
            close(fd);
        }
    }
    uid_t uid = (uid_t)strtoul(argv[2], NULL, 10);
    gid_t gid = (gid_t)strtoul(argv[3], NULL, 10);
    if (strcmp(argv[4], "init") == 0) {
        struct passwd *pw = getpwuid(uid);
        if (pw == NULL) { errno = ENOENT; die("getpwuid"); }
        if (initgroups(pw->pw_name, gid) != 0) die("initgroups");
    } else if (setgroups(0, NULL) != 0) {
        die("setgroups");
    }
    if (setresgid(gid, gid, gid) != 0) die("setresgid");
    if (setresuid(uid, uid, uid) != 0) die("setresuid");
    execvp(argv[6], argv + 6);
    int e = errno;
    fprintf(stderr, "roost-launcher: failed to execute %s: %s\n", argv[6], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}
"""
_cleaner: ThreadPoolExecutor | None = None


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    executable: str
    cwd: str
    env: dict[str, str]
    stdin: int
    stdout: int
    stderr: int
    uid: int | None = None  # None: run as ourselves
    gid: int | None = None
    init_groups: bool = False  # the user's supplementary groups (a real owner), else none
    cgroup_procs: str | None = None  # the job cgroup's cgroup.procs, entered before the exec


def check_executable(path: str) -> None:
    """Raise what exec would (FileNotFoundError, PermissionError) before we fork.

    With the setpriv launcher an exec failure would otherwise look like the
    job exiting 126/127.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


def shim_enters_cgroup(launch: Launch) -> bool:
    """Whether ``spawn`` starts this job through the ``sh`` shim that enters its cgroup
    before the first exec (then no move after the exec is needed)."""
    if launch.cgroup_procs is None or launch.uid is None:
        return False
    return _launcher is not None or (_SETPRIV is not None and _SH is not None)


def build_launcher(directory: str) -> str | None:
    """Build the helper into ``directory`` (made root-only) unless it is there already;
    its path, or None without a compiler or when the build fails. Blocking (~0.1 s
    the first time): run it off the event loop. Later spawns use it."""
    global _launcher
    import hashlib
    import tempfile

    digest = hashlib.sha256(LAUNCHER_SOURCE.encode()).hexdigest()[:16]
    path = os.path.join(directory, f"roost-launcher-{digest}")
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        if not os.access(path, os.X_OK):
            cc = shutil.which("cc") or shutil.which("gcc")
            if cc is None:
                return None
            with tempfile.TemporaryDirectory(dir=directory) as tmp:
                src = os.path.join(tmp, "launcher.c")
                with open(src, "w") as f:
                    f.write(LAUNCHER_SOURCE)
                out = os.path.join(tmp, "launcher")
                subprocess.run([cc, "-O2", "-o", out, src], check=True, capture_output=True, timeout=60)
                os.chmod(out, 0o700)
                os.replace(out, path)
    except (OSError, subprocess.SubprocessError):
        return None
    _launcher = path
    return path


def _argv(launch: Launch) -> tuple[list[str], str, dict[str, object]]:
    if launch.uid is not None and _launcher is not None:
        groups = "init" if launch.init_groups else "clear"
        return ([_launcher, launch.cgroup_procs or "-", str(launch.uid), str(launch.gid), groups, "--",
                 launch.executable, *launch.argv[1:]], _launcher, {})
    if launch.uid is None:
        argv, exe = [launch.executable, *launch.argv[1:]], launch.executable
    elif _SETPRIV is not None:
        groups = "--init-groups" if launch.init_groups else "--clear-groups"
        argv = [_SETPRIV, f"--reuid={launch.uid}", f"--regid={launch.gid}", groups, "--",
                launch.executable, *launch.argv[1:]]
        exe = _SETPRIV
    else:  # no setpriv: CPython forks and switches ids itself (the cgroup move is done later)
        ids = {"user": launch.uid, "group": launch.gid, "extra_groups": []}
        return launch.argv, launch.executable, ids
    if launch.cgroup_procs is not None and _SH is not None:
        # The child enters the job's cgroup before it execs anything of the job's, so
        # not even a process it forks at once can start outside.
        return [_SH, "-c", _ENTER, launch.cgroup_procs, *argv], _SH, {}
    return (argv if launch.uid is not None else launch.argv), exe, {}


def _popen(launch: Launch) -> subprocess.Popen[bytes]:
    argv, exe, ids = _argv(launch)
    return subprocess.Popen(
        argv,
        executable=exe,
        stdin=launch.stdin,
        stdout=launch.stdout,
        stderr=launch.stderr,
        cwd=launch.cwd,
        env=launch.env,
        start_new_session=True,
        close_fds=True,
        **ids,  # type: ignore[arg-type]
    )


def _spawner_thread() -> ThreadPoolExecutor:
    global _spawner
    if _spawner is None:
        _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")
    return _spawner


async def spawn(
    launch: Launch, after: Callable[[int], object] | None = None
) -> subprocess.Popen[bytes]:
    """Start the job in its own session and process group; the Popen (not waited for).

    ``after(pid)`` runs on the spawner thread right after the exec, before the
    job has had time to fork (the starter moves it into its cgroup there).
    """
    check_executable(launch.executable)

    def run() -> subprocess.Popen[bytes]:
        proc = _popen(launch)
        if after is not None:
            after(proc.pid)
        return proc

    return await asyncio.get_running_loop().run_in_executor(_spawner_thread(), run)


async def on_spawner(fn: Callable[[], T]) -> T:
    """Run blocking file-system work (making a sandbox) on the spawner thread."""
    return await asyncio.get_running_loop().run_in_executor(_spawner_thread(), fn)


def on_cleaner(fn: Callable[[], object]) -> Future[object]:
    """Run blocking clean-up (removing a sandbox and its cgroup) on the cleaner thread;
    the caller need not wait."""
    global _cleaner
    if _cleaner is None:
        _cleaner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cleaner")
    return _cleaner.submit(fn)


def drain_cleaner() -> None:
    """Wait for every queued clean-up (the startd is stopping)."""
    if _cleaner is not None:
        _cleaner.submit(lambda: None).result(timeout=30)
