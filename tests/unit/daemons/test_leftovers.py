"""What a startd leaves behind, read back by the next one: records of jobs that run
under their keepers (adopted), or of jobs gone (killed, removed)."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from roost.daemons.startd import launch, procstat
from roost.daemons.startd.leftovers import JOBS_DIR, read_records, remove_sandboxes, remove_strays


@pytest.fixture
def launcher(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the launcher is used as root")
    saved = launch._launcher
    if launch.build_launcher(str(tmp_path / ".launcher")) is None:
        pytest.skip("no C compiler")
    yield
    launch._launcher = saved


def _ticks(pid):
    """A process's start time as the starter records it: 0 when it has already gone (a job
    that exits at once may be reaped, with its keeper, before /proc is read)."""
    got = procstat.read(pid)
    return got.start_ticks if got is not None else 0


def _start(tmp_path, argv, name):
    """A job under its keeper, as the starter starts it, and its record."""
    jobs = tmp_path / JOBS_DIR
    jobs.mkdir(exist_ok=True)
    exit_fd = os.open(jobs / f"{name}.exit", os.O_RDWR | os.O_CREAT, 0o600)
    req = launch.Launch(argv=argv, executable=argv[0], cwd="/", env={"PATH": "/bin:/usr/bin"},
                        stdin=0, stdout=1, stderr=2, uid=65534, gid=65534, exit_fd=exit_fd)
    proc = asyncio.run(launch.spawn(req))
    os.close(exit_fd)
    assert isinstance(proc, launch.Kept)
    record = {"job": "1.0", "claim_id": "c", "slot": {"name": "slot1"}, "claim": {}, "job_ad": {},
              "pid": proc.pid, "ticks": _ticks(proc.pid), "started": time.time(),
              "keeper": proc.keeper_pid, "keeper_ticks": _ticks(proc.keeper_pid)}
    (jobs / name).write_text(json.dumps(record))
    return proc


def test_running_and_ended_jobs_are_adoptable_the_rest_is_killed(tmp_path, launcher):
    running = _start(tmp_path, ["/bin/sleep", "30"], "dir_1_1")
    ended = _start(tmp_path, ["/bin/sh", "-c", "exit 7"], "dir_1_2")
    ended.keeper.wait()
    (tmp_path / JOBS_DIR / "dir_1_3").write_text("not json and not a line")
    (tmp_path / JOBS_DIR / "dir_1_4.exit").write_text("")  # its record is gone
    (tmp_path / JOBS_DIR / "dir_1_1.new").write_text("{")  # a rewrite cut short
    (tmp_path / JOBS_DIR / ".port").write_text("1234\n")
    for d in ("dir_1_1", "dir_1_2", "dir_1_3"):
        (tmp_path / d).mkdir()
    try:
        recs = {r.name: r for r in read_records(str(tmp_path))}
        assert sorted(recs) == ["dir_1_1", "dir_1_2", "dir_1_3"]
        assert recs["dir_1_1"].alive() and not recs["dir_1_1"].ended() and recs["dir_1_1"].adoptable()
        assert not recs["dir_1_2"].alive() and recs["dir_1_2"].ended() and recs["dir_1_2"].adoptable()
        status, usage = launch.read_exit(os.open(recs["dir_1_2"].exit_path, os.O_RDONLY))
        assert os.waitstatus_to_exitcode(status) == 7 and usage.ru_maxrss > 0
        assert not recs["dir_1_3"].adoptable()
        # reading changes nothing (a running startd's exit file may precede its record)
        assert (tmp_path / JOBS_DIR / "dir_1_4.exit").exists() and (tmp_path / JOBS_DIR / "dir_1_1.new").exists()
        remove_strays(str(tmp_path))
        assert not (tmp_path / JOBS_DIR / "dir_1_4.exit").exists()
        assert not (tmp_path / JOBS_DIR / "dir_1_1.new").exists()
        assert (tmp_path / JOBS_DIR / "dir_1_1").exists() and (tmp_path / JOBS_DIR / "dir_1_2.exit").exists()
        assert (tmp_path / JOBS_DIR / ".port").exists()
        # a record whose keeper is someone else now (start time differs) is not alive
        recs["dir_1_1"].keeper_ticks += 1
        assert not recs["dir_1_1"].alive()
        recs["dir_1_1"].keeper_ticks -= 1
        recs["dir_1_3"].kill()
        assert remove_sandboxes(str(tmp_path), {"dir_1_1", "dir_1_2"}) == ["removed sandbox dir_1_3"]
        killed = recs["dir_1_1"].kill()
        assert any(str(running.pid) in line for line in killed)
        running.keeper.wait()
        assert launch.read_exit(os.open(tmp_path / JOBS_DIR / "dir_1_2.exit", os.O_RDONLY)) is not None
        assert not (tmp_path / JOBS_DIR / "dir_1_1").exists()
        assert sorted(r.name for r in read_records(str(tmp_path))) == ["dir_1_2"]
    finally:
        if running.keeper.poll() is None:
            os.killpg(running.pid, 9)
            running.keeper.wait()


def test_tree_usage_walks_proc_once_for_many_jobs(monkeypatch) -> None:
    """2,000 jobs reporting their usage at about the same time share one walk of /proc;
    a group started since the last walk is still found (a fresh walk)."""
    import subprocess
    import sys

    walks = []
    real = procstat._walk
    monkeypatch.setattr(procstat, "_walk", lambda: (walks.append(1), real())[1])
    monkeypatch.setattr(procstat, "_snapshot", None)
    first = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        for _ in range(200):
            got = procstat.tree_usage(first.pid)
            assert got is not None and got.rss_kib > 0
        assert procstat.tree_usage(first.pid, session=True) is not None
        assert len(walks) == 1
        busy = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()\n"
                                 "while time.process_time() - t < 0.3: pass\ntime.sleep(30)"],
                                start_new_session=True)
        try:
            deadline = time.monotonic() + 20
            while (u := procstat.tree_usage(busy.pid)) is None or u.user_cpu + u.sys_cpu < 0.25:
                assert time.monotonic() < deadline, u
                time.sleep(0.2)
            assert len(walks) >= 2
        finally:
            busy.kill()
            busy.wait()
    finally:
        first.kill()
        first.wait()
    assert procstat.tree_usage(-12345) is None
