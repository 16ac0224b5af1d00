"""The schedd's bulk actions (bulk.py, issue 27): condor_rm, condor_hold, condor_release
and condor_qedit of thousands of jobs, chunk by chunk, with each job's event written
once and its history row once, even when the schedd is killed in the middle."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from poolkit import ROOST, PoolHandle, wait_until

from roost.vocabulary import JobEventType, JobStatus

_EVENT = re.compile(r"^(\d{3}) \((\d+)\.(\d+)\.\d+\) ", re.M)


def _events(log: Path, number: int) -> Counter[tuple[int, int]]:
    """How many events ``number`` the log holds for each job."""
    return Counter((int(c), int(p)) for n, c, p in _EVENT.findall(log.read_text()) if int(n) == number)


def _idle_jobs(pool: PoolHandle, tmp_path: Path, n: int) -> int:
    """A cluster of ``n`` jobs no slot matches (they stay idle), logging to t.log; its id."""
    r = pool.submit(f"executable = /bin/true\narguments = $(Process)\nrequirements = false\nlog = t.log\nqueue {n}\n",
                    tmp_path)
    return int(r.cluster)


def _queue_total(pool: PoolHandle) -> int:
    with pool.schedd() as s:
        return s.totals()["Total"]


def test_schedd_killed_mid_bulk_removal_removes_each_job_once(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    pool = fresh_pool
    n = 20000
    cid = _idle_jobs(pool, tmp_path, n)
    assert _queue_total(pool) == n
    old = pool.daemon_pid("schedd")
    rm = subprocess.Popen([*ROOST, "rm", "-all"], env=pool.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # kill -9 as soon as a first chunk is durable (its 009 events are written only
        # then), long before the last
        deadline = time.monotonic() + 60
        log = tmp_path / "t.log"
        size = log.stat().st_size if log.exists() else 0  # the submit's events
        # the log's size, not its events: parsing thousands of them each poll took longer
        # than the whole removal does now (20,000 in about 0.1 s)
        while time.monotonic() < deadline and (log.stat().st_size if log.exists() else 0) <= size:
            time.sleep(0.001)
        os.kill(old, signal.SIGKILL)
    finally:
        rm.wait(timeout=60)
    logged = len(_events(log, JobEventType.JOB_ABORTED))
    assert 0 < logged < n, f"the removal was not caught half-way ({logged} of {n} logged)"
    pool.wait_daemon_back("schedd", old)
    # what committed before the kill is removed (and logged); the rest is idle, as it was
    with pool.schedd() as s:
        kept = s.totals()
    assert kept["Total"] < n and kept["Idle"] == kept["Total"], kept
    pool.roost("rm", "-all", check=True)
    wait_until(lambda: _queue_total(pool) == 0, 60, "an empty queue")
    aborted = _events(tmp_path / "t.log", JobEventType.JOB_ABORTED)
    assert len(aborted) == n and set(aborted.values()) == {1}, Counter(aborted.values())
    assert {c for c, _ in aborted} == {cid}
    with pool.schedd() as s:
        rows = s.history(projection=["ClusterId", "ProcId", "JobStatus"])
    keys = Counter((int(r["ClusterId"]), int(r["ProcId"])) for r in rows)
    assert len(keys) == n and set(keys.values()) == {1}, Counter(keys.values())
    assert {r["JobStatus"] for r in rows} == {JobStatus.REMOVED}


def test_bulk_hold_release_edit_and_remove_log_and_record_each_job(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    pool = fresh_pool
    n = 5000  # more than a chunk (bulk.CHUNK)
    cid = _idle_jobs(pool, tmp_path, n)
    log = tmp_path / "t.log"
    user = pool.roost("hold", "-all", check=True)
    assert f"{n}" in user.stdout or "held" in user.stdout.lower(), user.stdout
    with pool.schedd() as s:
        ads = s.query_objs(projection=["ProcId", "JobStatus", "HoldReasonCode", "NumHolds", "HoldReason"])
    assert len(ads) == n
    assert {a["JobStatus"] for a in ads} == {JobStatus.HELD}
    assert {a["HoldReasonCode"] for a in ads} == {1} and {a["NumHolds"] for a in ads} == {1}
    assert all(a["HoldReason"].startswith("via condor_hold (by user ") for a in ads)
    held = _events(log, JobEventType.JOB_HELD)
    assert len(held) == n and set(held.values()) == {1}
    assert "via condor_hold (by user " in log.read_text()

    pool.roost("release", "-all", check=True)
    with pool.schedd() as s:
        ads = s.query_objs(projection=["ProcId", "JobStatus", "HoldReason", "LastHoldReason", "ReleaseReason"])
    assert {a["JobStatus"] for a in ads} == {JobStatus.IDLE}
    assert not any("HoldReason" in a for a in ads)
    assert all(a["LastHoldReason"].startswith("via condor_hold") for a in ads)
    assert all(a["ReleaseReason"].startswith("via condor_release (by user ") for a in ads)
    released = _events(log, JobEventType.JOB_RELEASED)
    assert len(released) == n and set(released.values()) == {1}

    # a constraint read per proc, and an edit of every job
    half = n // 2
    done = pool.roost("hold", "-constraint", f"ProcId < {half}", check=True)
    assert done.returncode == 0
    with pool.schedd() as s:
        assert s.totals()["Held"] == half
        got = s.edit(constraint="true", attrs={"BulkMark": 7})
        assert got["count"] == n
        marks = s.query_objs(projection=["ProcId", "BulkMark", "NumHolds"])
    assert {a["BulkMark"] for a in marks} == {7}
    assert sorted(a["NumHolds"] for a in marks) == [1] * (n - half) + [2] * half

    pool.roost("rm", str(cid), check=True)
    assert _queue_total(pool) == 0
    aborted = _events(log, JobEventType.JOB_ABORTED)
    assert len(aborted) == n and set(aborted.values()) == {1}
    with pool.schedd() as s:
        rows = s.history(projection=["ProcId", "JobStatus", "NumHolds", "BulkMark"])
    assert len(rows) == n and len({r["ProcId"] for r in rows}) == n
    assert {r["JobStatus"] for r in rows} == {JobStatus.REMOVED} and {r["BulkMark"] for r in rows} == {7}
    # each job's events in order: submitted, held, released, (held again), aborted
    order: dict[int, list[int]] = {}
    for num, c, p in _EVENT.findall(log.read_text()):
        if int(c) == cid and int(p) in (0, n - 1):
            order.setdefault(int(p), []).append(int(num))
    assert order[0] == [JobEventType.SUBMIT, JobEventType.JOB_HELD, JobEventType.JOB_RELEASED,
                        JobEventType.JOB_HELD, JobEventType.JOB_ABORTED]
    assert order[n - 1] == [JobEventType.SUBMIT, JobEventType.JOB_HELD, JobEventType.JOB_RELEASED,
                            JobEventType.JOB_ABORTED]
