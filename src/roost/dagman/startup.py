"""How the DAG manager process starts: its command line (condor_dagman's), and, under a
root schedd, loading its code and becoming the DAG's owner before it touches anything
of the user's; and inotify, which wakes it when the nodes' log grows."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
from typing import Any


def parse_args(argv: list[str]) -> argparse.Namespace:
    """condor_dagman's arguments (case-insensitive, as it takes them)."""
    p = argparse.ArgumentParser(prog="roost.dagman", add_help=False, allow_abbrev=False)
    p.add_argument("-dag", action="append", required=True)
    p.add_argument("-lockfile")
    p.add_argument("-autorescue", type=int, default=1)
    p.add_argument("-dorescuefrom", type=int, default=0)
    p.add_argument("-maxjobs", type=int)
    p.add_argument("-maxidle", type=int)
    p.add_argument("-maxpre", type=int)
    p.add_argument("-maxpost", type=int)
    p.add_argument("-alwaysrunpost", action="store_true")
    p.add_argument("-dontalwaysrunpost", action="store_true")
    p.add_argument("-dorecovery", action="store_true")
    p.add_argument("-config")
    p.add_argument("-priority", type=int)
    p.add_argument("-outfile_dir")
    p.add_argument("-load_save")
    for flag in ("-p", "-l", "-csdversion", "-debug", "-notification", "-dagman", "-batch-name"):
        p.add_argument(flag)
    for flag in ("-f", "-t", "-verbose", "-force", "-suppress_notification", "-dont_suppress_notification",
                 "-allowversionmismatch", "-dumprescue", "-import_env", "-update_submit", "-usedagdir"):
        p.add_argument(flag, action="store_true")
    return p.parse_args([a.lower() if a.startswith("-") else a for a in argv])


_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        # not ctypes.util.find_library: it runs programs found on PATH (we may be root)
        _LIBC.append(ctypes.CDLL("libc.so.6", use_errno=True))
    return _LIBC[0]


class Inotify:
    """IN_MODIFY of one file through inotify(7), for an event loop's add_reader; None
    where the kernel or libc lacks it (the caller then polls)."""

    def __init__(self, path: str) -> None:
        libc = _libc()
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if libc.inotify_add_watch(self.fd, os.fsencode(path), 0x2 | 0x8) < 0:  # IN_MODIFY | IN_CLOSE_WRITE
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), "inotify_add_watch")

    def drain(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while os.read(self.fd, 4096):
                pass

    def close(self) -> None:
        os.close(self.fd)


DROP_TO_ENV = "ROOST_DAGMAN_RUN_AS"  # set by a root schedd: uid:gid:name:home to become
JOB_ENV_ENV = "ROOST_DAGMAN_JOB_ENV"  # the job's environment (JSON) to take after that
JOB_CWD_ENV = "ROOST_DAGMAN_JOB_CWD"  # and its Iwd


def _preload() -> None:
    """Load every module the run needs while the interpreter's files are readable (a
    root schedd starts us as root; the owner may not be able to read them)."""
    # lazy: everything the manager imports later, loaded now on purpose
    import asyncio.subprocess  # noqa: F401
    import encodings.idna  # noqa: F401
    import socket
    import traceback  # noqa: F401

    # lazy: roost's own modules, likewise
    from roost.api.errors import PoolError  # noqa: F401
    from roost.api.schedd import Schedd  # noqa: F401
    from roost.api.submitting import submit_description  # noqa: F401
    from roost.config import Config  # noqa: F401
    from roost.config.macros import expand  # noqa: F401
    from roost.submit import SubmitError  # noqa: F401
    from roost.submit.macros import SUBMIT_SYNTAX  # noqa: F401
    from roost.submit.reading import parse_text
    from roost.submit.wire import wire_cluster

    desc = parse_text("executable = /bin/true\narguments = a\nlog = x.log\n+A = 1\nqueue\n", cwd="/")
    for c in desc.expand(cluster_id=1, qdate=0, owner="nobody"):
        wire_cluster(c)
    _libc()
    socket.getfqdn()


def drop_privileges() -> None:
    """Started as root by a root schedd (in /, with an environment of its making):
    load everything, become the owner, then take the job's environment and Iwd."""
    spec = os.environ.pop(DROP_TO_ENV, None)
    if not spec or os.geteuid() != 0:
        return
    uid_s, gid_s, _name, _home = spec.split(":", 3)
    job_env = json.loads(os.environ.pop(JOB_ENV_ENV, "{}"))
    cwd = os.environ.pop(JOB_CWD_ENV, "/")
    _preload()
    os.setgroups([])
    os.setgid(int(gid_s))
    os.setuid(int(uid_s))
    if os.getuid() == 0 and int(uid_s) != 0:
        raise SystemExit("roost.dagman: could not give up root")
    ours = dict(os.environ)  # the channel's fd, CONDOR_ID, the schedd's DAGMAN_* knobs
    os.environ.clear()
    os.environ.update({k: str(v) for k, v in job_env.items()})
    os.environ.update(ours)
    os.environ.pop("PATH", None)
    if "PATH" in job_env:
        os.environ["PATH"] = str(job_env["PATH"])
    os.chdir(cwd)
