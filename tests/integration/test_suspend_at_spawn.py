"""A SUSPEND that comes before the job's process exists is applied once it does.

The owner policy suspends a claimed slot as soon as a job is on it (``SUSPEND =
True``); its first look comes while the starter is still pulling the job's input
(64 MiB), so the suspend reaches the starter before the spawn finished. It used to be
dropped there: the slot said Suspended, the job ran on, and the schedd never heard.
The job-run machine (core/jobrun.py) keeps it and applies it right after the spawn.
"""

from __future__ import annotations

import os
import shutil
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


def _states(script: str) -> list[str]:
    """The process states (R, S, T...) of every process running ``script``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if script.encode() not in cmd:
                continue
            text = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        out.append(text.rsplit(")", 1)[1].split()[0])
    return out


def test_a_suspend_before_the_spawn_finished_stops_the_job(pool: PoolHandle) -> None:
    d = Path(tempfile.mkdtemp(prefix="roost-suspjob-", dir="/tmp"))
    try:
        d.chmod(0o777)
        script = d / "spin.sh"
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
        wait_until(lambda: (s := _states(str(script))) != [] and all(x in ("T", "t") for x in s),
                   10, f"the job stopped (states {_states(str(script))})")
        pool.roost("rm", jid)
    finally:
        shutil.rmtree(d, ignore_errors=True)
