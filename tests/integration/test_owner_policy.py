"""The machine owner in control: a real personal pool with a Desktop-like policy.

The owner's presence is faked through the startd's activity hook
(STARTD_ACTIVITY_FILE): touching the file counts as keyboard activity.
Terminal devices are not watched (STARTD_OWNER_DEVICES empty), so whoever
types on this machine does not disturb the test.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import htcondor2
import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

COMMON = """
POLLING_INTERVAL = 0.2
STARTD_OWNER_DEVICES =
STARTD_ACTIVITY_UPDATE_DELAY = 0.1
"""

DESKTOP = COMMON + """
use POLICY : Desktop
StartIdleTime = 2
ContinueIdleTime = 2
MaxSuspendTime = 2
KeyboardBusy = (KeyboardIdle < 1)
BackgroundLoad = 1000
HighLoad = 2000
"""


def _pool(extra: str) -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-own-", dir="/tmp"))
    p = start_pool(home, extra_config=extra)
    try:
        yield p
    finally:
        stop_pool(p)
        for d in [home, *_JOB_DIRS]:
            shutil.rmtree(d, ignore_errors=True)
        _JOB_DIRS.clear()


@pytest.fixture
def desktop_pool() -> Iterator[PoolHandle]:
    yield from _pool(DESKTOP)


@pytest.fixture
def plain_pool() -> Iterator[PoolHandle]:
    yield from _pool(COMMON + "MAXJOBRETIREMENTTIME = 3600\n")


_JOB_DIRS: list[Path] = []


def _job_dir() -> Path:
    d = Path(tempfile.mkdtemp(prefix="roost-ownjob-", dir="/tmp"))
    d.chmod(0o777)
    _JOB_DIRS.append(d)
    return d


def _submit_sleeper(pool: PoolHandle, d: Path, seconds: int) -> str:
    script = d / "job.sh"
    script.write_text("#!/bin/sh\n" + f"for i in $(seq {seconds}); do sleep 1; done\necho done\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    r = pool.submit(f"executable = {script}\noutput = out\nerror = err\nlog = job.log\nqueue\n", d)
    return str(r.job_ids()[0])


def _slots(pool: PoolHandle) -> list[dict[str, Any]]:
    c = pool.collector()
    try:
        return c.query_objs("Machine")
    finally:
        c.close()


def _wait_slots(pool: PoolHandle, pred: Any, what: str, timeout: float = 15) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    ads: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        ads = _slots(pool)
        if pred(ads):
            return ads
        time.sleep(0.1)
    raise AssertionError(f"slots never {what}: {[(a.get('Name'), a.get('State'), a.get('Activity')) for a in ads]}")


def _events(log: Path) -> list[htcondor2.JobEventType]:
    return [e.type for e in htcondor2.JobEventLog(str(log)).events(stop_after=0)]


class _Owner:
    """Someone at the keyboard: touches the activity file until told to leave."""

    def __init__(self, home: Path) -> None:
        self.path = home / "activity"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.path.touch()
            os.utime(self.path)
            self._stop.wait(0.2)

    def __enter__(self) -> _Owner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_owner_activity_suspends_then_evicts_and_the_job_runs_again_later(desktop_pool: PoolHandle) -> None:
    pool = desktop_pool
    d = _job_dir()
    jid = _submit_sleeper(pool, d, 5)
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=20, what="running")
    with _Owner(pool.home):
        ads = _wait_slots(pool, lambda ads: any(a.get("Activity") == "Suspended" for a in ads), "suspended job")
        busy = [a for a in ads if a.get("Activity") == "Suspended"][0]
        assert busy["State"] == "Claimed"
        assert busy["KeyboardIdle"] <= 1
        # the schedd sees it too: JobStatus 7, a 010 event, the count and the time
        sus = pool.wait_for(jid, lambda j: j.get("JobStatus") == 7, timeout=10, what="suspended at the schedd")
        assert sus["TotalSuspensions"] == 1 and sus["LastSuspensionTime"] >= sus["JobCurrentStartDate"]
        # the owner stays: the suspended job is evicted and goes back to Idle
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 1, timeout=15, what="back to idle")
        _wait_slots(pool, lambda ads: any(a.get("State") == "Owner" for a in ads), "in the Owner state")
        pool.wait_cycle(after=pool.log_mark("negotiator"))
        assert pool.job(jid)["JobStatus"] == 1  # the owner is still here: a cycle ran, nothing runs
    assert htcondor2.JobEventType.JOB_EVICTED in _events(d / "job.log")
    assert htcondor2.JobEventType.JOB_SUSPENDED in _events(d / "job.log")
    # the owner leaves: after StartIdleTime the job starts again and completes
    done = pool.wait([jid], timeout=40)
    assert done["done"] == 1
    assert (d / "out").read_text() == "done\n"
    kinds = _events(d / "job.log")
    assert kinds.count(htcondor2.JobEventType.EXECUTE) == 2
    assert kinds[-1] == htcondor2.JobEventType.JOB_TERMINATED


# Counts to 30; on the vacate signal it writes where it is and exits with its
# checkpoint code (a self-checkpointing program).
_CHECKPOINTER = """#!/bin/sh
i=0
if [ -f ckpt ]; then i=$(cat ckpt); echo "resumed at $i"; fi
trap 'echo $i > ckpt; exit 85' TERM
while [ $i -lt 30 ]; do i=$((i+1)); echo $i > ticks; sleep 0.2; done
echo "done $i"
"""


def _ticked(pool: PoolHandle) -> bool:
    """Whether the checkpointer has counted (its ``ticks`` in its sandbox)."""
    for f in (pool.home / "execute").glob("dir_*/ticks"):
        try:
            if f.read_text().strip() not in ("", "0"):
                return True
        except FileNotFoundError:
            pass
    return False


def test_the_owner_returns_and_the_job_checkpoints_then_resumes_from_it(desktop_pool: PoolHandle) -> None:
    """The original design's owner-return flow under `use POLICY : Desktop`: suspend,
    wait, vacate with the job's kill signal (it checkpoints), and when the owner has
    left, start again from that checkpoint."""
    pool = desktop_pool
    d = _job_dir()
    script = d / "count.sh"
    script.write_text(_CHECKPOINTER)
    script.chmod(0o755)
    r = pool.submit("executable = count.sh\noutput = out\nlog = job.log\nshould_transfer_files = YES\n"
                    "checkpoint_exit_code = 85\ntransfer_checkpoint_files = ckpt\nqueue\n", d)
    jid = str(r.job_ids()[0])
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=20, what="running")
    wait_until(lambda: _ticked(pool), 20, "some work done")
    with _Owner(pool.home):
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 7, timeout=10, what="suspended")
        ad = pool.wait_for(jid, lambda j: j.get("JobStatus") == 1, timeout=15, what="vacated")
        assert ad["NumCkpts"] == 1, ad  # written on the vacate signal, kept by the schedd
    assert pool.wait([jid], timeout=60)["done"] == 1
    out = (d / "out").read_text().splitlines()
    assert out[0].startswith("resumed at ") and int(out[0].split()[-1]) > 0 and out[-1] == "done 30", out
    kinds = _events(d / "job.log")
    assert htcondor2.JobEventType.JOB_SUSPENDED in kinds and htcondor2.JobEventType.JOB_EVICTED in kinds


def test_graceful_drain_lets_the_job_finish_then_takes_no_more(plain_pool: PoolHandle) -> None:
    pool = plain_pool
    d = _job_dir()
    jid = _submit_sleeper(pool, d, 3)
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=20, what="running")
    got = pool.roost("drain", "-reason", "maintenance")
    assert got.returncode == 0, got.stderr
    assert "drain" in got.stdout
    assert pool.wait([jid], timeout=30)["done"] == 1
    assert htcondor2.JobEventType.JOB_EVICTED not in _events(d / "job.log")
    ads = _wait_slots(pool, lambda ads: ads and all(a.get("State") == "Drained" for a in ads), "drained")
    assert ads[0].get("DrainReason") == "maintenance"
    d2 = _job_dir()
    mark = pool.log_mark("negotiator")
    jid2 = _submit_sleeper(pool, d2, 0)
    pool.wait_cycle(after=mark)
    assert pool.job(jid2)["JobStatus"] == 1  # a drained machine takes no new job: a cycle left it idle
    got = pool.roost("drain", "-cancel")
    assert got.returncode == 0, got.stderr
    assert pool.wait([jid2], timeout=30)["done"] == 1


def test_off_and_on_and_vacate(plain_pool: PoolHandle) -> None:
    pool = plain_pool
    got = pool.roost("off")
    assert got.returncode == 0, got.stderr
    _wait_slots(pool, lambda ads: ads and all(a.get("State") == "Owner" for a in ads), "in the Owner state")
    d = _job_dir()
    mark = pool.log_mark("negotiator")
    jid = _submit_sleeper(pool, d, 30)
    pool.wait_cycle(after=mark)
    assert pool.job(jid)["JobStatus"] == 1  # off: a cycle ran and the job stays idle
    got = pool.roost("on")
    assert got.returncode == 0, got.stderr
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=20, what="running")
    # roost vacate: the job goes back to Idle with an evicted event (and is matched again)
    got = pool.roost("vacate", "-fast")
    assert got.returncode == 0, got.stderr
    deadline = time.monotonic() + 15
    while htcondor2.JobEventType.JOB_EVICTED not in _events(d / "job.log"):
        assert time.monotonic() < deadline, "no evicted event after roost vacate"
        time.sleep(0.1)
    pool.roost("rm", jid)


def test_commands_fail_clearly_without_a_pool(tmp_path: Path) -> None:
    pool = PoolHandle(tmp_path)
    for cmd in (["drain"], ["vacate"], ["off"], ["on"]):
        got = pool.roost(*cmd)
        assert got.returncode == 1
        assert got.stderr.startswith(f"roost {cmd[0]}: no pool is running")
        assert len(got.stderr.strip().splitlines()) == 1
