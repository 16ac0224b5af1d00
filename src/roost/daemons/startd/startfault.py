"""Whose fault a job's failed start is: the job's (it is held) or the machine's (it
goes back to Idle and runs elsewhere or later).

HTCondor holds a job only for what the job itself got wrong: an executable that is
missing or cannot be executed, an Iwd it cannot enter, an input it named that is not
there. A machine that is short of something (descriptors, processes, memory, disk,
a cgroup) fails every job alike, and holding them turns a passing shortage on one
machine into work for the user (issue 27: 4,021 of 8,000 jobs held with "Too many
open files"). Pure: an exception and where it happened in, a verdict out.
"""

from __future__ import annotations

import errno

#: the machine ran short of something: it says nothing about the job
SHORTAGE_ERRNOS = frozenset({
    errno.EMFILE,   # this process's descriptor limit
    errno.ENFILE,   # the system's file table
    errno.EAGAIN,   # fork/clone: RLIMIT_NPROC, pid_max, a cgroup's pids.max
    errno.ENOMEM,
    errno.ENOSPC,   # the sandbox's file system (or a cgroup's descendants)
    errno.EDQUOT,
    errno.ENOBUFS,
    errno.EINTR,
    errno.EBUSY,
    errno.ETIMEDOUT,
    errno.EIO,
})
#: what exec, open and chdir say about the job's own files and names
JOB_ERRNOS = frozenset({
    errno.ENOENT,
    errno.EACCES,
    errno.EPERM,
    errno.ENOEXEC,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.ELOOP,
    errno.ENAMETOOLONG,
    errno.E2BIG,
    errno.ETXTBSY,
})
#: the steps of a start that use only the machine's own things (its execute directory,
#: cgroups, the record, the launcher): any failure there is the machine's
MACHINE_STEPS = frozenset({"sandbox", "launcher"})


def is_shortage(e: BaseException) -> bool:
    """Whether ``e`` says the machine is short of a resource (descriptors, processes,
    memory, disk)."""
    return isinstance(e, OSError) and e.errno in SHORTAGE_ERRNOS


def machine_fault(e: BaseException, step: str = "") -> bool:
    """Whether a start that failed with ``e`` during ``step`` is the machine's fault:
    the job is requeued, never held. A shortage is, wherever it happened; so is any
    failure while the startd prepared its own things (``MACHINE_STEPS``); an OSError
    that names none of the job's own faults (``JOB_ERRNOS``) is too. What remains, a
    missing or unrunnable executable, an Iwd or input it cannot reach, a bad
    environment (ValueError), is the job's."""
    if is_shortage(e):
        return True
    if step in MACHINE_STEPS:
        return isinstance(e, OSError | ValueError)
    return isinstance(e, OSError) and e.errno not in JOB_ERRNOS
