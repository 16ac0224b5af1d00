"""Events 022/023/024 around a startd the schedd cannot reach: frozen (SIGSTOP) for less
than the job's lease, the log says disconnected then reconnected and the job runs once;
frozen past the lease, it says reconnect failed and the job runs again elsewhere.
(The pool's JOB_LEASE_DURATION is 6 s and ALIVE_INTERVAL 1 s: poolkit.FAST_CONFIG.)
Both share the module's pool: the startd is thawed before a test ends, and each test
waits for its own job."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from poolkit import PoolHandle, wait_until

from roost.eventlog import read_events

htcondor2 = pytest.importorskip("htcondor2")


def _has(log: Path, number: int) -> bool:
    return log.exists() and f"\n{number:03d} (" in "\n" + log.read_text()


def _frozen_startd(pool: PoolHandle, log: Path, until: int) -> None:
    pid = pool.daemon_pid("startd")
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: _has(log, until), 20, f"event {until:03d}")
    finally:
        os.kill(pid, signal.SIGCONT)


def test_short_cut_logs_disconnected_then_reconnected(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 10\nlog = r.log\nqueue\n", tmp_path)
    jid = r.job_ids()[0]
    pool.wait_for(jid, lambda ad: ad.get("JobStatus") == 2, timeout=30, what="running")
    log = tmp_path / "r.log"
    _frozen_startd(pool, log, 22)
    wait_until(lambda: _has(log, 23), 20, "event 023")
    assert pool.wait([jid], timeout=60)["done"] == 1
    events = list(read_events(log))
    kinds = [int(e.type) for e in events]
    assert kinds.count(1) == 1 and kinds.count(5) == 1 and 24 not in kinds, kinds
    assert kinds.index(22) < kinds.index(23) < kinds.index(5), kinds
    dis = events[kinds.index(22)]
    assert dis["StartdName"] and dis["StartdAddr"].startswith("<"), dis.attrs()
    theirs = list(htcondor2.JobEventLog(str(log)).events(stop_after=0))
    assert [int(e.type) for e in theirs] == kinds
    rec = theirs[kinds.index(23)]
    assert rec["StartdName"] == dis["StartdName"] and rec["StartdAddr"] == dis["StartdAddr"]


def test_cut_past_the_lease_logs_reconnect_failed_and_reruns(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 4\nlog = f.log\nqueue\n", tmp_path)
    jid = r.job_ids()[0]
    pool.wait_for(jid, lambda ad: ad.get("JobStatus") == 2, timeout=30, what="running")
    log = tmp_path / "f.log"
    _frozen_startd(pool, log, 24)
    assert pool.wait([jid], timeout=90)["done"] == 1
    events = list(read_events(log))
    kinds = [int(e.type) for e in events]
    assert kinds.index(22) < kinds.index(24) < len(kinds) - 1 and kinds[-1] == 5, kinds
    assert kinds.count(1) == 2, kinds  # it ran again
    failed = events[kinds.index(24)]
    assert "JobLeaseDuration" in failed["Reason"] and failed["StartdName"], failed.attrs()
    assert [int(e.type) for e in htcondor2.JobEventLog(str(log)).events(stop_after=0)] == kinds
