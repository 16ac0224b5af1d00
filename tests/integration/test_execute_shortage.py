"""The execute side short of descriptors (issue 27): at 8,000 running jobs a startd
reached its open-file limit and 4,021 jobs were held with "Too many open files". A
shortage on the execute side is the machine's, never the job's: the job goes back to
Idle and runs again; only the job's own faults hold it. And the daemons raise their
limit as far as the system allows, while jobs keep the one the pool was started with."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool

SLOTS = 24
CONFIG = f"""
NUM_CPUS = {SLOTS}
MEMORY = {SLOTS * 128}
use FEATURE : StaticSlots
SCHEDD_REQUEUE_BACKOFF = 0.5
SCHEDD_REQUEUE_BACKOFF_MAX = 2
"""


@pytest.fixture(scope="module")
def pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-fd-", dir="/tmp"))
    p = start_pool(home, CONFIG)
    try:
        yield p
    finally:
        stop_pool(p)


def _limits(pid: int) -> tuple[int, int]:
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError("no open-file limit in /proc/limits")


def _nr_open() -> int:
    with open("/proc/sys/fs/nr_open") as f:
        return int(f.read())


def _may_raise_hard_limit() -> bool:
    """Whether a process of ours may raise its hard limit (root with CAP_SYS_RESOURCE;
    a container's root may lack it), tried in a child so ours stays as it is."""
    probe = ("import resource as r; s, h = r.getrlimit(r.RLIMIT_NOFILE); "
             "r.setrlimit(r.RLIMIT_NOFILE, (h + 1, h + 1))")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def test_daemons_raise_their_limit_and_jobs_keep_the_pools(pool: PoolHandle, jobdir: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    startd = pool.daemon_pid("startd")
    got_soft, got_hard = _limits(startd)
    if _may_raise_hard_limit():  # root raises the hard limit too, up to fs.nr_open (at most 2^20)
        assert got_hard >= min(_nr_open(), 1 << 20)
    else:
        assert got_hard == hard
    assert got_soft == got_hard
    # the job's soft limit is the one `roost up` was started with, not the daemons'
    pool.submit("executable = /bin/sh\narguments = \"-c 'ulimit -n'\"\noutput = limit.out\nlog = limit.log\nqueue\n",
                jobdir)
    deadline = time.monotonic() + 60
    out = jobdir / "limit.out"
    while not (out.exists() and out.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert out.read_text().strip() == str(soft)


def _held_events(log: Path) -> int:
    return log.read_text().count("012 (") if log.exists() else 0


def test_a_startd_out_of_descriptors_requeues_jobs_never_holds_them(pool: PoolHandle, jobdir: Path) -> None:
    startd = pool.daemon_pid("startd")
    # a limit a few jobs' worth above what the idle startd holds: most starts run out
    room = len(os.listdir(f"/proc/{startd}/fd")) + 16
    resource.prlimit(startd, resource.RLIMIT_NOFILE, (room, room))
    jobs = 40
    result = pool.submit(f"executable = /bin/sleep\narguments = 1\nlog = short.log\nqueue {jobs}\n", jobdir)
    cluster = result.cluster
    log = jobdir / "short.log"
    s = pool.schedd()
    try:
        deadline = time.monotonic() + 240
        while True:
            totals = s.totals(f"ClusterId == {cluster}")
            assert totals.get("Held", 0) == 0, f"jobs held: {s.query_objs(f'ClusterId == {cluster}')}"
            if log.exists() and log.read_text().count("005 (") >= jobs:
                break
            assert time.monotonic() < deadline, f"not all {jobs} jobs completed: {totals}"
            time.sleep(0.25)
        history = s.history(f"ClusterId == {cluster}", ["ProcId", "JobStatus", "ExitCode", "NumShadowExceptions"])
    finally:
        s.close()
    assert _held_events(log) == 0
    assert len(history) == jobs
    assert all(h.get("JobStatus") == 4 and h.get("ExitCode") == 0 for h in history)
    # the shortage was real: some starts failed for it and their jobs ran again
    startlog = (pool.home / "log" / "StartLog").read_text()
    assert "Too many open files" in startlog
    assert any((h.get("NumShadowExceptions") or 0) > 0 for h in history)
