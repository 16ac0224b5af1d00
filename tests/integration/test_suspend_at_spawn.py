"""A SUSPEND that comes before the job's process exists is applied once it does.

The owner policy suspends a claimed slot as soon as a job is on it (``SUSPEND =
True``); its first look comes while the starter is still pulling the job's input
(64 MiB), so the suspend reaches the starter before the spawn finished. It used to be
dropped there: the slot said Suspended, the job ran on, and the schedd never heard.
The job-run machine (core/jobrun.py) keeps it and applies it right after the spawn.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

from roost.vocabulary import JobStatus

CONFIG = """
POLLING_INTERVAL = 0.05
STARTD_OWNER_DEVICES =
START = True
WANT_SUSPEND = True
SUSPEND = True
CONTINUE = False
PREEMPT = False
KILL = False
"""


@pytest.fixture
def pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-susp-", dir="/tmp"))
    p = start_pool(home, extra_config=CONFIG)
    try:
        yield p
    finally:
        stop_pool(p)
        shutil.rmtree(home, ignore_errors=True)


def _frozen(pid: str) -> bool:
    """``pid`` is in a frozen cgroup (v2 ``cgroup.freeze``: it shows S, not T)."""
    try:
        rel = next(line[3:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()
                  if line.split()[2] == "cgroup2"]
    except (OSError, StopIteration):
        return False
    for top in mounts:
        with contextlib.suppress(OSError):
            if "frozen 1" in Path(top + rel, "cgroup.events").read_text():
                return True
    return False


def _job_processes(name: str) -> dict[int, bool]:
    """The job's processes (those running ``name`` whose parent does too: not its
    keeper), each with whether it is stopped: state T, SIGSTOP pending, or held by the
    cgroup freezer (a frozen process shows S)."""
    found: dict[int, tuple[int, bool]] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if name.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if ":\t" in line)
        except OSError:
            continue
        state = status["State"].split()[0]
        if state in ("Z", "X"):
            continue
        pending = int(status.get("ShdPnd", "0"), 16) | int(status.get("SigPnd", "0"), 16)
        stopped = state in ("T", "t") or bool(pending & (1 << (signal.SIGSTOP - 1))) or _frozen(pid)
        found[int(pid)] = (int(status["PPid"]), stopped)
    return {pid: stopped for pid, (ppid, stopped) in found.items() if ppid in found}


def test_a_suspend_before_the_spawn_finished_stops_the_job(pool: PoolHandle) -> None:
    d = Path(tempfile.mkdtemp(prefix="roost-suspjob-", dir="/tmp"))
    try:
        d.chmod(0o777)
        script = d / f"spin-{d.name}.sh"  # a name no other process has (it runs from the sandbox)
        script.write_text("#!/bin/sh\nwhile true; do sleep 0.1; done\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        (d / "big.bin").write_bytes(os.urandom(1 << 20) * 64)
        r = pool.submit(f"executable = {script}\nshould_transfer_files = YES\n"
                        "transfer_input_files = big.bin\noutput = out\nerror = err\nlog = job.log\nqueue\n", d)
        jid = str(r.job_ids()[0])
        # the schedd hears that the job is suspended...
        pool.wait_for(jid, lambda j: j.get("JobStatus") == JobStatus.SUSPENDED, timeout=30,
                      what="suspended at the schedd")
        # ...and its process is stopped (T), not running on
        wait_until(lambda: (s := _job_processes(script.name)) != {} and all(s.values()),
                   10, f"the job stopped ({_job_processes(script.name)})")
        pool.roost("rm", jid)
    finally:
        shutil.rmtree(d, ignore_errors=True)
