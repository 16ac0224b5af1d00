"""The master on its own, with stand-in daemons: start order, restarts, back-off, shutdown.

These need none of the real daemons, so they pin the master's behaviour down
even while the others change.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roost.api.pool import Pool

FAKE = Path(__file__).with_name("fake_daemon.py")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def _wait(pred, timeout: float = 10.0, what: str = "condition"):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.02)
    raise AssertionError(f"{what} not reached in {timeout} s")


def _home(extra: str = "", worker_args: str = "") -> Path:
    home = Path(tempfile.mkdtemp(prefix="roost-master-", dir="/tmp"))
    py = sys.executable
    (home / "roost_config").write_text(
        f"LOCAL_DIR = {home}\n"
        "DAEMON_LIST = MASTER, COLLECTOR, WORKER\n"
        f"COLLECTOR = {py} {FAKE} collector\n"
        f"WORKER = {py} {FAKE} worker {worker_args}\n"
        "MASTER_BACKOFF_CONSTANT = 0.5\nMASTER_BACKOFF_FACTOR = 2\nMASTER_BACKOFF_CEILING = 60\n"
        "MASTER_RECOVER_FACTOR = 60\nSHUTDOWN_GRACEFUL_TIMEOUT = 5\n" + extra
    )
    return home


@pytest.fixture
def master_pool() -> Iterator[Pool]:
    pool = Pool(_home())
    pool.start(timeout=30, write_config=False)
    pid = pool.master_pid()
    try:
        yield pool
    finally:
        try:
            pool.stop(timeout=20)
        finally:
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def _starts(pool: Pool, name: str) -> list[tuple[int, str]]:
    path = pool.home / f"{name}.starts"
    if not path.exists():
        return []
    return [(int(a), b) for a, b in (ln.split() for ln in path.read_text().splitlines())]


def test_collector_first_then_others_with_its_address(master_pool: Pool) -> None:
    st = master_pool.status()
    assert st["ready"] is True
    assert set(st["daemons"]) == {"COLLECTOR", "WORKER"}
    collector_addr = st["daemons"]["COLLECTOR"]["address"]
    assert collector_addr and (master_pool.run_dir / "collector.address").read_text().strip() == collector_addr
    # The worker was started after the collector published its address, and was given it.
    assert _starts(master_pool, "worker")[0][1] == collector_addr
    assert int((master_pool.run_dir / "master.pid").read_text()) == st["pid"]


def test_killed_daemon_is_back_within_two_seconds(master_pool: Pool) -> None:
    old = master_pool.status()["daemons"]["WORKER"]["pid"]
    t0 = time.monotonic()
    os.kill(old, signal.SIGKILL)
    st = _wait(lambda: (s := master_pool.status())["daemons"]["WORKER"]["state"] == "running"
               and s["daemons"]["WORKER"]["pid"] != old and s, what="worker restarted")
    assert time.monotonic() - t0 < 2.0
    assert st["daemons"]["WORKER"]["restarts"] == 1
    assert "SIGKILL" in st["daemons"]["WORKER"]["last_exit"]


def test_restarted_collector_keeps_its_address(master_pool: Pool) -> None:
    st = master_pool.status()
    old_pid, addr = st["daemons"]["COLLECTOR"]["pid"], st["daemons"]["COLLECTOR"]["address"]
    os.kill(old_pid, signal.SIGKILL)
    st = _wait(lambda: (s := master_pool.status())["daemons"]["COLLECTOR"]["state"] == "running"
               and s["daemons"]["COLLECTOR"]["pid"] != old_pid and s, what="collector restarted")
    assert st["daemons"]["COLLECTOR"]["address"] == addr
    # the restarted collector was told to bind the address it had
    assert _starts(master_pool, "collector")[-1][1] == addr


def test_restart_daemon_command(master_pool: Pool) -> None:
    old = master_pool.status()["daemons"]["WORKER"]["pid"]
    master_pool.restart_daemon("worker")
    st = _wait(lambda: (s := master_pool.status())["daemons"]["WORKER"]["pid"] not in (None, old)
               and s["daemons"]["WORKER"]["state"] == "running" and s, what="worker restarted")
    assert not _alive(old)
    assert st["daemons"]["WORKER"]["restarts"] == 1
    from roost.api.connection import RefusedError

    with pytest.raises(RefusedError) as e:
        master_pool.restart_daemon("nosuch")
    assert e.value.code == "NOT_FOUND"


def test_off_keeps_a_daemon_stopped_until_on_and_the_cli_says_so(master_pool: Pool) -> None:
    import subprocess

    old = master_pool.status()["daemons"]["WORKER"]["pid"]
    env = dict(os.environ, ROOST_HOME=str(master_pool.home))
    roost = [sys.executable, "-m", "roost.cli.main"]
    off = subprocess.run([*roost, "off", "-daemon", "worker"], env=env, capture_output=True, text=True, timeout=30)
    assert off.returncode == 0 and off.stdout.strip() == "worker on this host: turned off", off
    st = _wait(lambda: (s := master_pool.status())["daemons"]["WORKER"]["state"] == "off" and s, what="worker off")
    assert st["daemons"]["WORKER"]["pid"] is None and not _alive(old)
    time.sleep(1.0)  # time is the point: twice the back-off (0.5 s), and no restart brings it back
    assert master_pool.status()["daemons"]["WORKER"]["state"] == "off"
    on = subprocess.run([*roost, "on", "-daemon", "worker"], env=env, capture_output=True, text=True, timeout=30)
    assert on.returncode == 0, on
    _wait(lambda: master_pool.status()["daemons"]["WORKER"]["state"] == "running", what="worker on again")
    re = subprocess.run([*roost, "restart"], env=env, capture_output=True, text=True, timeout=30)
    assert re.returncode == 0 and sorted(re.stdout.split()) == ["collector:", "restarting", "restarting", "worker:"], re
    bad = subprocess.run([*roost, "off", "-daemon", "nosuch"], env=env, capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "no daemon 'NOSUCH' here" in bad.stderr, bad


def test_shutdown_stops_every_daemon(master_pool: Pool) -> None:
    pids = [d["pid"] for d in master_pool.status()["daemons"].values()]
    master_pid = master_pool.master_pid()
    assert master_pool.stop(timeout=20) is True
    assert master_pid and not _alive(master_pid)
    for pid in pids:
        _wait(lambda pid=pid: not _alive(pid), timeout=5, what=f"daemon {pid} gone")
    assert not master_pool.running()
    assert not (master_pool.run_dir / "master.address").exists()
    assert master_pool.stop() is False  # nothing left to stop


def test_back_off_slows_a_crashing_daemon() -> None:
    pool = Pool(_home(worker_args="--crash-after 0.05"))
    # The worker dies at once, so the pool never becomes ready; start the master directly.
    import subprocess

    env = dict(os.environ, ROOST_HOME=str(pool.home))
    proc = subprocess.Popen([sys.executable, "-m", "roost.daemons.master"], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: (pool.run_dir / "master.address").exists(), what="master address")
        # time is the point: delays 0.5, 1, 2 (+ start-up times): three or four starts in 3.2 s, not dozens
        time.sleep(3.2)
        starts = len(_starts(pool, "worker"))
        assert 2 <= starts <= 4, starts
        assert pool.status()["daemons"]["WORKER"]["state"] in ("waiting", "starting")
    finally:
        pool.stop(timeout=20)
        proc.wait(timeout=10)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_daemons_die_with_a_killed_master(master_pool: Pool) -> None:
    pids = [d["pid"] for d in master_pool.status()["daemons"].values()]
    os.kill(master_pool.master_pid() or 0, signal.SIGKILL)
    for pid in pids:
        _wait(lambda pid=pid: not _alive(pid), timeout=5, what=f"daemon {pid} gone after the master")
    _wait(lambda: not master_pool.running(), timeout=5, what="lock released")


def test_up_twice_and_down_without_pool(tmp_path: Path) -> None:
    import subprocess

    home = _home()
    env = dict(os.environ, ROOST_HOME=str(home))
    cmd = [sys.executable, "-m", "roost.cli.main"]
    try:
        up = subprocess.run([*cmd, "up"], env=env, capture_output=True, text=True, timeout=60)
        assert up.returncode == 0, up.stderr
        assert "pool is up" in up.stdout
        again = subprocess.run([*cmd, "up"], env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 0 and "already running" in again.stdout
        down = subprocess.run([*cmd, "down"], env=env, capture_output=True, text=True, timeout=60)
        assert down.returncode == 0 and "stopped" in down.stdout
        down = subprocess.run([*cmd, "down"], env=env, capture_output=True, text=True, timeout=60)
        assert down.returncode == 0 and "no pool is running" in down.stdout
        q = subprocess.run([*cmd, "q"], env=env, capture_output=True, text=True, timeout=60)
        assert q.returncode == 1
        assert q.stderr.strip() == (f"roost q: no pool is running (ROOST_HOME={home}): "
                                    "start one with `roost up`")
    finally:
        pid = Pool(home).master_pid()
        subprocess.run([*cmd, "down"], env=env, capture_output=True, timeout=60)
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
