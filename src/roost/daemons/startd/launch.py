"""Starting a job's process cheaply, as the right user, without stalling the event loop,
and without letting anything of the job's reach a process that runs as root.

Where a C compiler exists, the startd builds a small helper (``LAUNCHER_SOURCE``)
once, on a background thread, into a root-only directory under EXECUTE, keyed by the
source's hash: it clones the job straight into its cgroup (``CLONE_INTO_CGROUP``;
writing ``cgroup.procs`` instead waits for an RCU grace period, 7-15 ms of every
job's latency), sets groups and ids and execs it, for ~0.1 ms. The helper then stays
as the job's parent, its *keeper*: it waits for the job and writes its end to a file
the startd reads, so a startd that dies leaves its jobs running and the next one
adopts them (``leftovers.py``).

The helper runs as root and is dynamically linked, so the loader reads its
environment: it is started with ``HELPER_ENV`` in ``/``, and the job's environment,
directory and core limit travel as data that the helper applies to the job's own exec
only, after the switch (issue 25: ``LD_PRELOAD`` in a job's environment used to run
as root here). A spawn waits while the helper is built (~0.2 s after the startd
starts, longer on a busy host; a job started before it once ran outside its cgroup,
its shim's wait for the move outlasted). Without a compiler, jobs go through
``Popen(user=...)``: CPython's child switches ids before it execs anything, then a
shell running as the job's user enters the job's directory and execs the job. That
path costs ~2 ms more (CPython forks rather than vforks when ids change, and the
shell, which also waits until the spawner has moved it into the job's cgroup before
it execs the job), and its jobs do not outlive their startd.

Either way ``Popen`` waits for the child's exec; that wait runs on one
long-lived spawner thread (not a thread per job), so the event loop keeps
serving other claims meanwhile. Sandbox creation has a thread of its own (it
shared the spawner's once: a burst of thousands of activations queued every new
sandbox ahead of the spawns of jobs whose input had arrived, and processes
trailed the Running count by half a minute at 4,000 jobs, issue 27), and sandbox
removal a third: on ext4 each costs ~1 ms of waiting on the file system (not
CPU) that would otherwise stall the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import pwd
import resource
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from roost.daemons.joblimits import job_nofile
from roost.daemons.startd.sandboxfiles import write_all

T = TypeVar("T")

_SH = shutil.which("sh", path="/bin:/usr/bin")
# without the helper: the first thing the job's user runs enters the job's directory,
# then, with builtins only (nothing forked yet), waits until the spawner has moved its
# pid into the job's cgroup ($1, its cgroup.procs; "-": none), so the job's program
# starts inside it, sets the job's soft open-file limit ($2) and execs the job. Bounded:
# a move that failed costs ~0.1 s, not the job. Unlike the helper's, this window is not
# closed to the job's environment: a library the job preloads runs in the shell (as
# the job's user) and could fork before the move.
_ENTER_DIR = ('cd -- "$0" || exit 126; if [ "$1" != - ]; then n=0; in=; '
              'while [ -z "$in" ] && [ $n -lt 100000 ]; do n=$((n + 1)); '
              'while read -r p; do [ "$p" = $$ ] && in=1; done < "$1"; done; fi; '
              '[ "$2" = - ] || ulimit -S -n "$2" 2>/dev/null; shift 2; exec "$@"')
#: what the helper itself runs with (as root): nothing of the job's
HELPER_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
_spawner: ThreadPoolExecutor | None = None
_launcher: str | None = None  # the built helper, once it is ready
_building: asyncio.Future[str | None] | None = None  # its build, while it runs
BUILD_WAIT = 60.0  # seconds a spawn waits for the helper's build (cc's own limit)

# argv: helper CGROUP_DIR|- UID|- GID|- init|clear PID_FD EXIT_FD ENV_FD CORE|- NOFILE|- CWD -- PROGRAM ARGS...
# Starts PROGRAM in its own session, in the job's cgroup, with the job's ids, writes its
# pid ("PID\n") to PID_FD, then stays as the job's parent (the "keeper"): it waits for
# the job and writes "STATUS UTIME STIME MAXRSS\n" (wait status, CPU seconds, KiB) to
# EXIT_FD, a file under EXECUTE/.jobs, before it exits. So the job does not depend on
# the startd: a startd that dies (kill -9, a crash, its master gone) leaves the job
# running under its keeper, and the next startd learns its end from that file. The
# keeper ignores the signals a terminal or a session could send it; only SIGKILL ends it.
# Nothing of the job's reaches the helper while it is root (issue 25: LD_PRELOAD in a
# job's environment ran as uid 0 in the helper): the startd starts it with an
# environment, working directory and limits of its own making. The job's environment
# comes as data on ENV_FD ("NAME=VALUE\0" each), its core size limit as CORE (bytes,
# "inf"), its soft open-file limit as NOFILE (the one the pool was started with: the
# daemons raise theirs), its working directory as CWD; the child applies them only for
# the job's own exec: the limits just before the switch (a user may not raise a hard
# limit afterwards; nothing runs between), the directory after it (entered with the
# job user's rights), the environment with the exec itself (execve, no PATH search;
# a file the kernel cannot exec, a script without #!, runs under /bin/sh as execvp
# would run it).
# Where the kernel has clone3(CLONE_INTO_CGROUP) (5.7+, cgroup v2) the job is cloned
# straight into its cgroup: moving a running process by writing cgroup.procs waits for
# an RCU grace period, 7-15 ms per job on an idle pool, while a clone into the cgroup
# costs nothing extra. Elsewhere the child writes its own pid into cgroup.procs before
# it execs the job (a failure to enter is ignored: the spawner moves the pid after the
# exec as well). A failure to change ids or to enter CWD ends the job (126) before
# anything of it runs; a failed exec is 127 (not found) or 126, and its errno comes
# back through a close-on-exec pipe: the keeper then reports "?ERRNO" instead of the
# pid, so the startd holds the job for its executable (HTCondor's "Failed to execute")
# rather than reporting an exit of 126 or 127.
LAUNCHER_SOURCE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROGRAM 12

static char **job_env;  /* the job's environment, read from ENV_FD while we are still ourselves */
static int report_fd = -1;  /* PID_FD while no job exists: a failure goes there as "!ERRNO WHAT" */
static int exec_fd = -1;  /* the job's side of a close-on-exec pipe: a failed exec sends its errno */

static void die(const char *what) {
    int e = errno;
    if (report_fd >= 0) {  /* the machine's failure (fork, memory), not the job's: the startd says so */
        char buf[160];
        int n = snprintf(buf, sizeof buf, "!%d %s\n", e, what);
        if (n > 0 && write(report_fd, buf, (size_t)n) < 0) { /* then it sees 126 */ }
    }
    fprintf(stderr, "roost-launcher: %s: %s\n", what, strerror(e));
    _exit(126);
}

static void report(int fd, pid_t pid) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%ld\n", (long)pid);
    if (write(fd, buf, (size_t)n) < 0) { /* the startd then takes the helper's own pid */ }
    close(fd);
}

/* "NAME=VALUE\0" entries, as the startd wrote them (a memfd: its size is the data's) */
static char **read_env(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) die("environment");
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (buf == NULL) die("environment");
    while (got < n) {
        ssize_t r = pread(fd, buf + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) die("environment");
        if (r == 0) break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    close(fd);
    size_t count = 1;
    for (size_t i = 0; i < got; i++) count += buf[i] == '\0';
    char **env = calloc(count + 1, sizeof *env);
    if (env == NULL) die("environment");
    size_t k = 0;
    for (char *p = buf; p < buf + got; p += strlen(p) + 1)
        if (*p != '\0') env[k++] = p;
    env[k] = NULL;
    return env;
}

static void become_job(char **argv) {
    if (setsid() < 0) die("setsid");
    if (strcmp(argv[8], "-") != 0) {
        struct rlimit old, rl;
        rlim_t v = strcmp(argv[8], "inf") == 0 ? RLIM_INFINITY : (rlim_t)strtoull(argv[8], NULL, 10);
        rl.rlim_cur = rl.rlim_max = v;
        if (getrlimit(RLIMIT_CORE, &old) == 0 && setrlimit(RLIMIT_CORE, &rl) != 0) {
            /* raising the hard limit needs CAP_SYS_RESOURCE, which a container's root may lack */
            rl.rlim_max = old.rlim_max;
            rl.rlim_cur = v < old.rlim_max ? v : old.rlim_max;
            if (setrlimit(RLIMIT_CORE, &rl) != 0) { /* the job keeps ours */ }
        }
    }
    if (strcmp(argv[9], "-") != 0) {
        struct rlimit rl;
        rlim_t v = (rlim_t)strtoull(argv[9], NULL, 10);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && v < rl.rlim_cur) {
            rl.rlim_cur = v;  /* the soft limit only: lowering needs no privilege */
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0) { /* the job keeps ours */ }
        }
    }
    if (strcmp(argv[2], "-") != 0) {
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
    }
    if (chdir(argv[10]) != 0) {
        int e = errno;
        fprintf(stderr, "roost-launcher: cannot enter the job's directory %s: %s\n", argv[10], strerror(e));
        _exit(126);
    }
    execve(argv[PROGRAM], argv + PROGRAM, job_env);
    int e = errno;
    if (e == ENOEXEC) {  /* as execvp does: a script without #! is the shell's */
        argv[PROGRAM - 1] = "/bin/sh";  /* the "--" before PROGRAM becomes sh's argv[0] */
        execve("/bin/sh", argv + PROGRAM - 1, job_env);
        e = ENOEXEC;
    }
    if (exec_fd >= 0 && write(exec_fd, &e, sizeof e) < 0) { /* the keeper then reports the pid */ }
    fprintf(stderr, "roost-launcher: failed to execute %s: %s\n", argv[PROGRAM], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

static void enter_slowly(const char *dir) {
    char procs[4096];
    int n = snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    int fd = n < (int)sizeof procs ? open(procs, O_WRONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        char buf[32];
        int m = snprintf(buf, sizeof buf, "%ld", (long)getpid());
        if (write(fd, buf, (size_t)m) < 0) { /* the spawner's move is the second net */ }
        close(fd);
    }
}

static void keep(pid_t pid, int out) {
    int status;
    struct rusage ru;
    pid_t got;
    do {
        got = wait4(pid, &status, 0, &ru);
    } while (got < 0 && errno == EINTR);
    if (got == pid) {
        char buf[128];
        int n = snprintf(buf, sizeof buf, "%d %ld.%06ld %ld.%06ld %ld\n", status,
                         (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
                         (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, (long)ru.ru_maxrss);
        /* over the blanks the startd wrote (its blocks are taken: a full disk cannot stop this) */
        if (n > 0 && pwrite(out, buf, (size_t)n, 0) < 0) { /* the startd then reruns the job */ }
        /* no fsync: the file must outlive the startd, not the machine (~ms per job) */
    }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc <= PROGRAM || strcmp(argv[PROGRAM - 1], "--") != 0) {
        fprintf(stderr, "usage: roost-launcher CGROUP_DIR|- UID|- GID|- init|clear PID_FD EXIT_FD ENV_FD CORE|- NOFILE|- CWD"
                        " -- PROGRAM ARGS...\n");
        return 126;
    }
    int out = atoi(argv[5]);
    int exit_fd = atoi(argv[6]);
    fcntl(out, F_SETFD, FD_CLOEXEC);
    fcntl(exit_fd, F_SETFD, FD_CLOEXEC);
    report_fd = out;
    job_env = read_env(atoi(argv[7]));
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    long pid = -1;
    int cgroup = strcmp(argv[1], "-") != 0;
    /* the job's exec closes the write end; a failed exec writes its errno first */
    int ep[2] = {-1, -1};
    if (pipe2(ep, O_CLOEXEC) == 0) exec_fd = ep[1];
#ifdef CLONE_INTO_CGROUP
    if (cgroup) {
        int cg = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cg >= 0) {
            struct clone_args args;
            memset(&args, 0, sizeof args);
            args.flags = CLONE_INTO_CGROUP;
            args.exit_signal = SIGCHLD;
            args.cgroup = (uint64_t)cg;
            pid = syscall(SYS_clone3, &args, sizeof args);
            if (pid == 0) {
                close(out);
                report_fd = -1;
                signal(SIGHUP, SIG_DFL); signal(SIGINT, SIG_DFL); signal(SIGQUIT, SIG_DFL);
                signal(SIGTERM, SIG_DFL); signal(SIGPIPE, SIG_DFL);
                become_job(argv);
            }
            close(cg);  /* pid < 0: an old kernel or cgroup v1: enter the slow way */
            if (pid > 0) cgroup = 0;
        }
    }
#endif
    if (pid < 0) {
        pid = fork();
        if (pid < 0) die("fork");
        if (pid == 0) {
            close(out);
            report_fd = -1;
            signal(SIGHUP, SIG_DFL); signal(SIGINT, SIG_DFL); signal(SIGQUIT, SIG_DFL);
            signal(SIGTERM, SIG_DFL); signal(SIGPIPE, SIG_DFL);
            if (cgroup) enter_slowly(argv[1]);
            become_job(argv);
        }
    }
    if (ep[1] >= 0) close(ep[1]);
    int failed = 0;
    if (ep[0] >= 0) {
        ssize_t n;
        do n = read(ep[0], &failed, sizeof failed); while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof failed) failed = 0;
        close(ep[0]);
    }
    if (failed != 0) {  /* the job's own fault (its executable): "?ERRNO", then its 126/127 as usual */
        char buf[32];
        int n = snprintf(buf, sizeof buf, "?%d\n", failed);
        if (write(out, buf, (size_t)n) < 0) { /* the startd then sees 126/127 */ }
        close(out);
    } else {
        report(out, (pid_t)pid);
    }
    keep((pid_t)pid, exit_fd);
    return 0;
}
"""
_cleaner: ThreadPoolExecutor | None = None
_sandboxer: ThreadPoolExecutor | None = None
#: the exit file's size, written blank before the job starts (the keeper's line fits)
EXIT_RECORD_SIZE = 96


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
    exit_fd: int = -1  # where the keeper writes the job's end (read/write); -1: a memfd of our own
    core_size: int | None = None  # coresize: the job's RLIMIT_CORE (bytes, -1 none); None: ours


#: what exec says of a job's executable (its own fault: held, HTCondor's code 6)
EXEC_ERRNOS = frozenset({errno.ENOENT, errno.EACCES, errno.ENOEXEC, errno.EISDIR, errno.ETXTBSY,
                         errno.ELOOP, errno.ENAMETOOLONG, errno.ENOTDIR, errno.EPERM})


class ExecError(OSError):
    """The job's program could not be executed (missing, not executable, not a program):
    the job's fault, with HTCondor's words for it (``Failed to execute '/path' with
    arguments a b: (errno=13: 'Permission denied')``); errno is exec's."""

    def __init__(self, n: int, executable: str, argv: list[str]) -> None:
        args = " ".join(argv[1:])
        self.text = (f"Failed to execute '{executable}'{f' with arguments {args}' if args else ''}: "
                     f"(errno={n}: '{os.strerror(n)}')")
        super().__init__(n, self.text)

    def __str__(self) -> str:
        return self.text


def check_executable(path: str) -> None:
    """Raise what exec would (FileNotFoundError, PermissionError) before we fork.

    With the setpriv launcher an exec failure would otherwise look like the
    job exiting 126/127.
    """
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)


def _uses_launcher(launch: Launch) -> bool:
    return _launcher is not None and (launch.uid is not None or launch.cgroup_procs is not None)


def shim_enters_cgroup(launch: Launch) -> bool:
    """Whether ``spawn`` starts this job through the helper, which puts it into its
    cgroup before its first exec (then no move after the exec is needed)."""
    return launch.cgroup_procs is not None and _uses_launcher(launch)


def build_launcher(directory: str) -> str | None:
    """Build the helper into ``directory`` (made root-only) unless it is there already;
    its path, or None without a compiler or when the build fails. Blocking (~0.1 s
    the first time): run it off the event loop. Later spawns use it."""
    global _launcher
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


def building(build: asyncio.Future[str | None]) -> None:
    """The helper's build, started by the startd: spawns wait for it (see ``spawn``)."""
    global _building
    _building = build


def _env_data(env: dict[str, str]) -> bytes:
    """The job's environment as the helper reads it: ``NAME=VALUE\\0`` each (what Popen
    would refuse, it refuses too)."""
    out = bytearray()
    for k, v in env.items():
        if not k or "=" in k or "\0" in k or "\0" in v:
            raise ValueError(f"bad environment entry {k!r}")
        out += f"{k}={v}".encode("utf-8", "surrogateescape") + b"\0"
    return bytes(out)


def _core_arg(size: int | None) -> str:
    return "-" if size is None else "inf" if size < 0 else str(size)


def _groups(launch: Launch) -> list[int]:
    """The supplementary groups the job gets: its owner's (a real owner), else none."""
    if not launch.init_groups or launch.uid is None or launch.gid is None:
        return []
    try:
        return sorted(set(os.getgrouplist(pwd.getpwuid(launch.uid).pw_name, launch.gid)))
    except (KeyError, OSError):
        return [launch.gid]


def _argv(launch: Launch, pid_fd: int = -1, exit_fd: int = -1,
          env_fd: int = -1) -> tuple[list[str], str, dict[str, Any]]:
    """What to exec for ``launch``: argv, program, and Popen's environment, directory
    and id arguments. ``pid_fd`` is where the helper reports the job's pid, ``exit_fd``
    where it writes its end, ``env_fd`` where it reads the job's environment (used
    only when the helper is).

    Whatever runs as root gets an environment and directory of ours: the helper
    applies the job's after its switch. Without the helper, CPython's child switches
    ids before it execs anything, and the job's directory is entered by a shell
    already running as the job's user (``cd`` as root would enter what the user may
    not)."""
    if _uses_launcher(launch):
        assert _launcher is not None
        cgroup = os.path.dirname(launch.cgroup_procs) if launch.cgroup_procs else "-"
        ids = ["-", "-"] if launch.uid is None else [str(launch.uid), str(launch.gid)]
        groups = "init" if launch.init_groups else "clear"
        return ([_launcher, cgroup, *ids, groups, str(pid_fd), str(exit_fd), str(env_fd),
                 _core_arg(launch.core_size), str(job_nofile() or "-"), launch.cwd, "--", launch.executable,
                 *launch.argv[1:]],
                _launcher, {"env": HELPER_ENV, "cwd": "/"})
    if launch.uid is None:
        return launch.argv, launch.executable, {"env": launch.env, "cwd": launch.cwd}
    ids = {"user": launch.uid, "group": launch.gid, "extra_groups": _groups(launch), "env": launch.env}
    if _SH is None:
        return launch.argv, launch.executable, {**ids, "cwd": launch.cwd}
    return ([_SH, "-c", _ENTER_DIR, launch.cwd, launch.cgroup_procs or "-", str(job_nofile() or "-"),
             launch.executable, *launch.argv[1:]], _SH, {**ids, "cwd": "/"})


class Usage(NamedTuple):
    """The part of ``resource.struct_rusage`` a job's end carries (from its keeper)."""

    ru_utime: float
    ru_stime: float
    ru_maxrss: int


def read_exit(fd: int) -> tuple[int, Usage] | None:
    """What a keeper wrote to its exit file: (wait status, usage); None while the job
    has not ended (or its keeper died before it could say)."""
    try:
        text = os.pread(fd, 256, 0).decode("ascii", "replace")
        status, utime, stime, maxrss = text.split()[:4]
        return int(status), Usage(float(utime), float(stime), int(maxrss))
    except (OSError, ValueError):
        return None


class Kept:
    """A job started under its keeper (the helper, our child, which waits for it and
    writes its end to ``exit_fd``): the part of ``Popen`` the starter uses. ``pid`` is
    the job (its process group and cgroup), ``keeper_pid`` the process to wait for."""

    def __init__(self, pid: int, keeper: subprocess.Popen[bytes], exit_fd: int, own_fd: bool) -> None:
        self.pid = pid
        self.keeper = keeper
        self.keeper_pid = keeper.pid
        self.exit_fd = exit_fd
        self.own_fd = own_fd  # a memfd of ours: closed with this object
        self.returncode: int | None = None

    def exit_status(self) -> tuple[int, Usage] | None:
        return read_exit(self.exit_fd)

    def wait(self) -> int:
        """Block until the job has ended (tests; the starter waits on a pidfd instead)."""
        if self.returncode is None:
            self.keeper.wait()
            got = self.exit_status()
            self.returncode = os.waitstatus_to_exitcode(got[0]) if got else 126
            if self.own_fd:
                os.close(self.exit_fd)
        return self.returncode


def _popen(launch: Launch, pid_fd: int = -1, exit_fd: int = -1, env_fd: int = -1) -> subprocess.Popen[bytes]:
    argv, exe, kwargs = _argv(launch, pid_fd, exit_fd, env_fd)
    return subprocess.Popen(
        argv,
        executable=exe,
        stdin=launch.stdin,
        stdout=launch.stdout,
        stderr=launch.stderr,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(fd for fd in (pid_fd, exit_fd, env_fd) if fd >= 0),
        **kwargs,
    )


def _start(launch: Launch) -> subprocess.Popen[bytes] | Kept:
    """Start the job (blocking until the helper has reported it, or it has exec'ed).

    A job's core size limit (``coresize``) is inherited from us: the spawner thread,
    the only one that starts processes, sets the startd's own around the start (a
    limit set on the job afterwards would come too late for a job that forks or
    crashes at once). The helper sets it in the job's own process instead."""
    if launch.core_size is None or _uses_launcher(launch):
        return _start_now(launch)
    old = resource.getrlimit(resource.RLIMIT_CORE)
    size = resource.RLIM_INFINITY if launch.core_size < 0 else launch.core_size
    hard = old[1]
    if hard != resource.RLIM_INFINITY and (size == resource.RLIM_INFINITY or size > hard):
        size = hard
    try:  # the soft limit only: raising a hard limit back may need a capability we lack
        resource.setrlimit(resource.RLIMIT_CORE, (size, hard))
    except (OSError, ValueError):
        return _start_now(launch)
    try:
        return _start_now(launch)
    finally:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_CORE, old)


def _start_now(launch: Launch) -> subprocess.Popen[bytes] | Kept:
    if not _uses_launcher(launch):
        return _popen(launch)
    own = launch.exit_fd < 0
    env_fd = os.memfd_create("roost-env")
    try:
        write_all(env_fd, _env_data(launch.env))
        exit_fd = os.memfd_create("roost-exit") if own else launch.exit_fd
    except BaseException:
        os.close(env_fd)
        raise
    try:
        r, w = os.pipe()
    except BaseException:
        os.close(env_fd)
        if own:
            os.close(exit_fd)
        raise
    try:
        try:
            helper = _popen(launch, w, exit_fd, env_fd)
        except BaseException:
            if own:
                os.close(exit_fd)
            raise
        finally:
            os.close(w)
            os.close(env_fd)
        got = b""
        while not got.endswith(b"\n"):
            chunk = os.read(r, 64)
            if not chunk:
                break  # the helper died before it reported: it failed (126), nothing started
            got += chunk
    finally:
        os.close(r)
    if got.startswith(b"!"):  # the helper could not start the job: fork, memory (the machine's)
        helper.wait()
        if own:
            os.close(exit_fd)
        raise _helper_failure(got)
    if got.startswith(b"?"):  # the job's exec failed (as its user): the job's fault
        helper.wait()  # the keeper ends at once with the job that never ran
        if own:
            os.close(exit_fd)
        try:
            n = int(got[1:])
        except ValueError:
            n = errno.ENOEXEC
        raise ExecError(n, launch.executable, launch.argv)
    try:
        pid = int(got)
    except ValueError:
        pid = helper.pid
    if pid == helper.pid:
        if own:
            os.close(exit_fd)
        return helper
    return Kept(pid, helper, exit_fd, own)


def _helper_failure(said: bytes) -> OSError:
    """The OSError the helper's ``!ERRNO WHAT`` report stands for."""
    code, _, what = said[1:].decode("ascii", "replace").strip().partition(" ")
    try:
        n = int(code)
    except ValueError:
        n = errno.EIO
    return OSError(n, f"{os.strerror(n)} (the launcher's {what or 'start'})")


def _spawner_thread() -> ThreadPoolExecutor:
    global _spawner
    if _spawner is None:
        _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")
    return _spawner


async def spawn(
    launch: Launch, after: Callable[[subprocess.Popen[bytes] | Kept], object] | None = None
) -> subprocess.Popen[bytes] | Kept:
    """Start the job in its own session and process group; the Popen of our child that
    is the job, or the Kept job under our child that keeps it; not waited for.

    ``after(proc)`` runs on the spawner thread right after the exec, before the
    job has had time to fork (the starter moves it into its cgroup there).
    """
    try:
        check_executable(launch.executable)
    except OSError as e:
        if e.errno not in EXEC_ERRNOS:
            raise
        raise ExecError(e.errno, launch.executable, launch.argv) from None

    if _building is not None and not _building.done():
        # A job started before the helper is built would enter its cgroup through the sh
        # shim, whose wait for the spawner thread's move a loaded machine outlasted: the
        # job then ran outside its cgroup, and what it left behind outlived it.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(_building), BUILD_WAIT)

    def run() -> subprocess.Popen[bytes] | Kept:
        try:
            proc = _start(launch)
        except ExecError:
            raise
        except OSError as e:  # Popen's own child (no helper) failed to exec the program
            if e.errno in EXEC_ERRNOS and e.filename == launch.executable:
                raise ExecError(e.errno, launch.executable, launch.argv) from None
            raise
        if after is not None:
            after(proc)
        return proc

    return await asyncio.get_running_loop().run_in_executor(_spawner_thread(), run)


async def on_spawner(fn: Callable[[], T]) -> T:
    """Run ``fn`` on the spawner thread (between two spawns)."""
    return await asyncio.get_running_loop().run_in_executor(_spawner_thread(), fn)


async def on_sandboxer(fn: Callable[[], T]) -> T:
    """Run blocking file-system work (making a sandbox, its cgroups) on the sandbox
    thread, so spawns never queue behind it."""
    global _sandboxer
    if _sandboxer is None:
        _sandboxer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandboxer")
    return await asyncio.get_running_loop().run_in_executor(_sandboxer, fn)


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
