"""The job queue's file under faults: a damaged file found at start (moved aside, the
readable jobs kept) and a full disk (new submits refused, nothing accepted lost)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
from poolkit import PoolHandle, log_tails, start_pool, stop_pool

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small file system (root)")

_HELD = 'executable = /bin/true\nhold = true\n+Padding = "{pad}"\nlog = q.log\nqueue {n}\n'


def _held(pool: PoolHandle, cwd: Path, n: int, pad: int = 2000) -> list[str]:
    return pool.submit(_HELD.format(pad="p" * pad, n=n), cwd).job_ids()


def _queued(pool: PoolHandle) -> set[str]:
    s = pool.schedd()
    try:
        return {f"{a['ClusterId']}.{a['ProcId']}" for a in s.query_objs(projection=["ClusterId", "ProcId"])}
    finally:
        s.close()


@pytest.fixture
def small_disk():
    """A 3 MiB tmpfs, unmounted afterwards."""
    where = Path(tempfile.mkdtemp(prefix="roost-disk-", dir="/tmp"))
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


def test_full_disk_refuses_new_jobs_and_keeps_the_rest(small_disk: Path, tmp_path: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="roost-fd-", dir="/tmp"))
    pool = start_pool(home, f"SPOOL = {small_disk}/spool\n")
    try:
        first = _held(pool, tmp_path, 5)
        filler = small_disk / "filler"
        with open(filler, "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        with pytest.raises(Exception) as refused:
            _held(pool, tmp_path, 50)
        text = str(refused.value)
        assert "cannot store new jobs" in text and "job_queue.db" in text, text
        assert _queued(pool) == set(first)  # nothing of the refused cluster, all of the first
        # a schedd killed now loses nothing that was acknowledged
        old = pool.daemon_pid("schedd")
        os.kill(old, signal.SIGKILL)
        filler.unlink()
        pool.wait_daemon_back("schedd", old)
        assert _queued(pool) == set(first)
        later = _held(pool, tmp_path, 3)
        assert _queued(pool) == set(first) | set(later)
    except BaseException:
        print(log_tails(home))
        raise
    finally:
        stop_pool(pool)
        shutil.rmtree(home, ignore_errors=True)


def test_damaged_queue_file_is_moved_aside_and_readable_jobs_kept(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    pool = fresh_pool
    ids = []
    for _ in range(40):  # one cluster each: rows all over the file
        ids += _held(pool, tmp_path, 3)
    pool.roost("down", "-timeout", "30", timeout=60, check=True)
    db = pool.home / "spool" / "job_queue.db"
    assert not Path(str(db) + "-wal").exists() or os.path.getsize(str(db) + "-wal") == 0
    with open(db, "r+b") as f:
        f.truncate(os.path.getsize(db) * 6 // 10)
    up = pool.roost("up", "-timeout", "60", timeout=90)
    assert up.returncode == 0, up.stdout + up.stderr
    pool.master_pid = int((pool.home / "run" / "master.pid").read_text())
    log = (pool.home / "log" / "SchedLog").read_text()
    line = next((ln for ln in log.splitlines() if "is damaged" in ln), "")
    assert str(db) in line and "moved to" in line and "kept what could be read" in line, log[-3000:]
    aside = [p for p in os.listdir(db.parent) if p.startswith("job_queue.db.damaged-")]
    assert aside
    kept = _queued(pool)
    assert kept and kept < set(ids), (len(kept), line)
    assert f"{len(kept)} jobs in the queue" in line
    # the pool goes on: new clusters get new numbers, and jobs run
    new = pool.submit("executable = /bin/true\nlog = n.log\nqueue 1\n", tmp_path).job_ids()
    assert int(new[0].split(".")[0]) > 40
    assert pool.wait(new, timeout=60)["done"] == 1
