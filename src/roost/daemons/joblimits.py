"""The open-file limit jobs get: the one the pool was started with.

Every daemon raises its soft RLIMIT_NOFILE to the hard limit (its connections are its
file descriptors), and a child inherits it: a job that closes every descriptor up to
its limit, sizes a table by it or uses select() would pay for the daemons' limit. The
master notes the limit it was started with in the environment before it raises its
own, its daemons inherit that note, and whatever starts a job (the startd's launcher,
the schedd's local universe) gives the job that soft limit back.
"""

from __future__ import annotations

import os

JOB_NOFILE_ENV = "_ROOST_JOB_NOFILE"


def remember(soft: int) -> None:
    """Note ``soft`` as the jobs' limit unless an earlier process (the master) did."""
    os.environ.setdefault(JOB_NOFILE_ENV, str(soft))


def job_nofile() -> int | None:
    """The soft open-file limit jobs get; None when unknown (no lowering)."""
    try:
        n = int(os.environ.get(JOB_NOFILE_ENV, ""))
    except ValueError:
        return None
    return n if n > 0 else None
