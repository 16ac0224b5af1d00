"""A pool survives its daemons being killed: nothing submitted is lost, running jobs
reconnect or rerun, and new jobs still run."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from poolkit import PoolHandle, wait_until


def _sleepers(pool: PoolHandle, tmp_path: Path, n: int, secs: float, log: str) -> list[str]:
    r = pool.submit(f"executable = /bin/sleep\narguments = {secs}\nlog = {log}\nqueue {n}\n", tmp_path)
    return r.job_ids()


def _all_running(pool: PoolHandle, ids: list[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ads = pool.schedd().query_objs(ids=ids, projection=["JobStatus"])
        if len(ads) == len(ids) and all(a["JobStatus"] == 2 for a in ads):
            return
        time.sleep(0.05)
    raise AssertionError(f"jobs {ids} not all running within {timeout} s")


def test_schedd_killed_mid_run_loses_nothing(long_lease_pool: PoolHandle, tmp_path: Path) -> None:
    pool = long_lease_pool
    running = _sleepers(pool, tmp_path, 2, 4, "s.log")
    _all_running(pool, running)
    idle = pool.submit("executable = /bin/true\nlog = t.log\nqueue 3\n", tmp_path).job_ids()
    old = pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    pool.wait_daemon_back("schedd", old)
    got = pool.wait(running + idle, timeout=60)
    assert got["done"] == 5
    for jid in running:
        ad = pool.job(jid)
        assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0
        # reconnected, not rerun: it started once, with a second shadow
        assert ad.get("NumJobStarts", 1) == 1 and ad.get("NumShadowStarts") == 2, ad


def _launcher_ready(pool: PoolHandle, timeout: float = 30) -> None:
    """Jobs outlive their startd once the startd's helper is built (a fresh pool builds
    it in the background in its first second); before, they run again."""
    pool.wait_log(r"job launcher ready", timeout=timeout)


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie its keeper has not reaped yet counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


_CARRY_ON = """#!/bin/sh
sleep $1
tr a-z A-Z < in.txt > out.txt
"""


def _carry_on_jobs(pool: PoolHandle, tmp_path: Path, n: int, secs: float, log: str) -> list[str]:
    (tmp_path / "job.sh").write_text(_CARRY_ON)
    (tmp_path / "in.txt").write_text("carry on\n")
    text = (f"executable = job.sh\narguments = {secs}\ntransfer_input_files = in.txt\n"
            f"output = o.$(Process)\nlog = {log}\nshould_transfer_files = YES\n"
            f"transfer_output_remaps = \"out.txt = out.$(Process)\"\nqueue {n}\n")
    return pool.submit(text, tmp_path).job_ids()


def _ran_once(pool: PoolHandle, tmp_path: Path, ids: list[str], log: str) -> None:
    events = (tmp_path / log).read_text()
    for i, jid in enumerate(ids):
        ad = pool.job(jid)
        assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0, ad
        assert ad.get("NumJobStarts", 1) == 1, ad  # carried on, not rerun
        assert (tmp_path / f"out.{i}").read_text() == "CARRY ON\n"
        assert ad["TransferOutputSizeMB"] == 1 and ad["BytesRecvd"] >= len("CARRY ON\n"), ad
        cluster, proc = jid.split(".")
        tag = f"({int(cluster):03d}.{int(proc):03d}.000)"
        starts = [ln for ln in events.splitlines() if ln.startswith("001 " + tag)]
        ends = [ln for ln in events.splitlines() if ln.startswith("005 " + tag)]
        assert len(starts) == 1 and len(ends) == 1, events


def test_startd_killed_jobs_carry_on(long_lease_pool: PoolHandle, tmp_path: Path) -> None:
    """kill -9 of the startd: its jobs keep running under their keepers, the restarted
    startd adopts them (same claims, same port), and each finishes once."""
    pool = long_lease_pool
    _launcher_ready(pool)
    mark = pool.log_mark()
    ids = _carry_on_jobs(pool, tmp_path, 2, 3, "k.log")
    for jid in ids:
        pool.job_pid(jid, after=mark)  # it runs and has its record: the next startd adopts it
    old = pool.daemon_pid("startd")
    os.kill(old, signal.SIGKILL)
    pool.wait_daemon_back("startd", old)
    assert pool.wait(ids, timeout=90)["done"] == 2
    _ran_once(pool, tmp_path, ids, "k.log")
    # the slots are free again for new jobs
    new = pool.submit("executable = /bin/true\nlog = n.log\nqueue 2\n", tmp_path).job_ids()
    assert pool.wait(new, timeout=60)["done"] == 2


def test_master_killed_jobs_carry_on(long_lease_pool: PoolHandle, tmp_path: Path) -> None:
    """kill -9 of the master takes every daemon down with it (PR_SET_PDEATHSIG); the
    startd leaves its jobs to the next one, and a job that ended while no startd ran is
    reported by it."""
    pool = long_lease_pool
    _launcher_ready(pool)
    mark = pool.log_mark()
    ids = _carry_on_jobs(pool, tmp_path, 2, 1.5, "m.log")
    pids = [pool.job_pid(jid, after=mark) for jid in ids]
    os.kill(pool.master_pid, signal.SIGKILL)
    wait_until(lambda: all(_gone(p) for p in pids), 30, "the jobs end while nothing of the pool runs")
    up = pool.roost("up", "-timeout", "60", timeout=90)
    assert up.returncode == 0, up.stdout + up.stderr
    pool.master_pid = int((pool.home / "run" / "master.pid").read_text())
    assert pool.wait(ids, timeout=90)["done"] == 2
    _ran_once(pool, tmp_path, ids, "m.log")


def test_collector_and_negotiator_restarts_do_not_disturb_jobs(pool: PoolHandle, tmp_path: Path) -> None:
    ids = _sleepers(pool, tmp_path, 1, 3, "c.log")
    _all_running(pool, ids)
    for name in ("collector", "negotiator"):
        old = pool.daemon_pid(name)
        os.kill(old, signal.SIGKILL)
        pool.wait_daemon_back(name, old)
    # the running job finishes untouched ...
    assert pool.wait(ids, timeout=60)["done"] == 1
    ad = pool.job(ids[0])
    assert ad is not None and ad["NumJobStarts"] == 1 and ad["ExitCode"] == 0
    # ... and new jobs still get matched and run
    new = pool.submit("executable = /bin/true\nlog = n.log\nqueue 2\n", tmp_path).job_ids()
    assert pool.wait(new, timeout=60)["done"] == 2
    # the slots are back in the restarted collector
    assert pool.collector().query_objs("Machine", projection=["Name"])


def test_queue_survives_down_and_up(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    pool = fresh_pool
    running = _sleepers(pool, tmp_path, 1, 2, "d.log")
    _all_running(pool, running)
    held = pool.submit("executable = /bin/true\nhold = true\nqueue\n", tmp_path).job_ids()
    pool.roost("down", check=True)
    assert pool.roost("q").returncode == 1  # no pool now
    up = pool.roost("up", check=True)
    assert "pool is up" in up.stdout
    pool.master_pid = int((pool.home / "run" / "master.pid").read_text())
    # the held job is still held, the interrupted one runs again and finishes
    assert pool.job(held[0])["JobStatus"] == 5  # type: ignore[index]
    assert pool.wait(running, timeout=60)["done"] == 1
    ad = pool.job(running[0])
    assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0


BIG = 256 << 20  # an input that takes a moment to send (768 MiB took 40 s of the suite, twice sent)


def test_schedd_killed_during_input_transfer_reruns_the_job_not_holds_it(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    """kill -9 of the schedd while a job's input streams to the starter: a fault of the
    infrastructure, so the job goes back to Idle and runs again (once), never Held."""
    pool = fresh_pool
    big = tmp_path / "big.in"
    with open(big, "wb") as f:  # large enough that the transfer takes a moment
        f.truncate(BIG)
    r = pool.submit("executable = /bin/sh\narguments = \"-c 'wc -c < big.in > n.out'\"\n"
                    "transfer_executable = false\nshould_transfer_files = YES\n"
                    "when_to_transfer_output = ON_EXIT\ntransfer_input_files = big.in\n"
                    "log = x.log\nqueue\n", tmp_path)
    jid = r.job_ids()[0]
    execute = pool.home / "execute"
    deadline = time.monotonic() + 30
    partial = None
    while partial is None:  # the input file appears in a sandbox and grows
        assert time.monotonic() < deadline, "the input transfer never began"
        for f in execute.glob("dir_*/big.in"):
            try:
                if 0 < f.stat().st_size < BIG:
                    partial = f
            except FileNotFoundError:
                pass
        time.sleep(0.002)
    old = pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    pool.wait_daemon_back("schedd", old)
    got = pool.wait([jid], timeout=120)
    assert got["done"] == 1
    ad = pool.job(jid)
    assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0, ad
    assert (tmp_path / "n.out").read_text().strip() == str(BIG)
    events = (tmp_path / "x.log").read_text()
    assert "Job was held" not in events and events.count("Job terminated") == 1, events
