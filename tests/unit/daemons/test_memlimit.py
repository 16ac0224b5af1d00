"""Memory cgroups of roost.daemons.startd.memlimit on this host's real cgroup v1 memory
hierarchy (skipped where there is none): a hog is killed at its limit, a static slot's
cgroup is kept for the next job with its peak and OOM count starting afresh, and a
process already over its limit when it would enter is killed at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from roost.daemons.startd.memlimit import MemoryLimits, MemoryState

HOG = "import sys, time; x = bytearray(int(sys.argv[1]) << 20); time.sleep(float(sys.argv[2]))"


@pytest.fixture
def limits(tmp_path):
    m = MemoryLimits.detect(str(tmp_path), None, "hard", move_delay=0.0)
    if m.version != 1:
        pytest.skip(f"no writable cgroup v1 memory hierarchy here: {m.mechanism}")
    yield m
    m.sweep()
    os.rmdir(m.base)


def _run(limits: MemoryLimits, name: str, slot: str, mb: int, secs: float, limit_mb: int):
    limits.create(name, limit_mb << 20, slot)
    proc = subprocess.Popen([sys.executable, "-c", HOG, str(mb), str(secs)], start_new_session=True)
    limits.enter(name, proc.pid, lambda: proc.poll() is None)
    proc.wait(timeout=30)
    return proc.returncode, limits.state(name)


def _moved(limits: MemoryLimits, name: str, timeout: float = 10) -> MemoryState:
    """Wait until the job has entered its cgroup (its move runs on a timer thread);
    what the cgroup measures then."""
    deadline = time.monotonic() + timeout
    while (state := limits.state(name)) is None:
        assert time.monotonic() < deadline, f"{name} never entered its cgroup"
        time.sleep(0.01)
    return state


def _holds(pid: int, size: int, timeout: float = 30) -> None:
    """Wait until process ``pid``'s resident memory reaches ``size`` bytes."""
    deadline = time.monotonic() + timeout
    while True:
        with open(f"/proc/{pid}/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        if rss >= size:
            return
        assert time.monotonic() < deadline, f"pid {pid} holds {rss} bytes, not {size}"
        time.sleep(0.02)


def test_a_hog_dies_at_its_limit_and_the_slots_cgroup_serves_the_next_job(limits: MemoryLimits) -> None:
    code, state = _run(limits, "job1", "slot1", 20, 0.5, 64)  # within its limit
    assert code == 0 and state is not None and not state.oom_killed
    path = limits.path("job1")
    limits.remove("job1")
    assert os.path.isdir(path)  # a static slot's cgroup stays for the next job
    code, state = _run(limits, "job2", "slot1", 20, 2.0, 64)
    assert code == 0
    # a process that grows past the limit inside its cgroup: the kernel kills it
    limits.create("job3", 64 << 20, "slot1")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3); x = bytearray(300 << 20)"],
                            start_new_session=True)
    limits.enter("job3", proc.pid, lambda: proc.poll() is None)
    proc.wait(timeout=30)
    state = limits.state("job3")
    assert proc.returncode == -signal.SIGKILL and state is not None and state.oom_killed
    limits.remove("job3")
    # the next job in that cgroup does not inherit the kill
    limits.create("job4", 64 << 20, "slot1")
    assert limits.state("job4") is None  # not in its cgroup yet: nothing measured there
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        limits.enter("job4", proc.pid, lambda: proc.poll() is None)
        state = _moved(limits, "job4")
        assert not state.oom_killed  # the kill before it is not its own
    finally:
        proc.kill()
        proc.wait(timeout=10)
    limits.remove("job4")


def test_a_job_that_ends_before_its_move_costs_no_cgroup_file(limits: MemoryLimits) -> None:
    """Most short jobs: never moved in, so its slot's directory is not emptied for the
    next one, nothing is read at its end (its rusage says it all) or killed after it."""
    limits.create("quick", 64 << 20, "slot3")
    proc = subprocess.Popen(["/bin/true"], start_new_session=True)
    proc.wait(timeout=10)
    limits.enter("quick", proc.pid, lambda: False)  # gone: its move never happens
    time.sleep(limits.move_delay + 0.1)  # time is the point: past its move's delay, no move came
    assert limits.state("quick") is None
    limits.remove("quick")
    assert "slot3" not in limits._dirty
    limits.create("next", 64 << 20, "slot3")  # no force_empty: the directory held nobody
    assert limits.oom_base("next") == limits.oom_base("quick") == 0
    limits.remove("next")


def test_already_over_its_limit_when_it_would_enter_it_is_killed(limits: MemoryLimits) -> None:
    limits.create("big", 64 << 20, "slot2_1")
    proc = subprocess.Popen([sys.executable, "-c", HOG, "200", "5"], start_new_session=True)
    _holds(proc.pid, 200 << 20)  # it holds 200 MiB before it is moved
    limits.enter("big", proc.pid, lambda: proc.poll() is None)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert limits.state("big").oom_killed
    path = limits.path("big")
    limits.remove("big")
    assert not os.path.exists(path)  # a dynamic slot's cgroup goes with its job


def test_a_jobs_late_clean_up_spares_the_next_job_on_its_slot(limits: MemoryLimits) -> None:
    limits.create("jobA", 64 << 20, "slot3")
    limits.create("jobB", 64 << 20, "slot3")  # the claim's next job, before A's clean-up ran
    proc = subprocess.Popen([sys.executable, "-c", HOG, "5", "2"], start_new_session=True)
    limits.enter("jobB", proc.pid, lambda: proc.poll() is None)
    _moved(limits, "jobB")
    limits.remove("jobA")  # late: it must not kill B's process
    assert proc.wait(timeout=30) == 0
    limits.remove("jobB")
