"""``roost.api.Pool``: start, inspect and stop a personal pool (``roost up``/``down``).

The pools here run a master and a collector only (DAEMON_LIST): all the master's
life cycle needs, started in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemons.daemon_procs import make_home, pool_token, user_identity

import roost.api as roost
from roost.api.connection import pool_token as presented_token
from roost.api.negotiator import negotiator_connection
from roost.net.syncclient import SyncClient
from roost.net.tokens import decode_token


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def end_pool(home: Path) -> None:
    """Kill, by pid, whatever still runs in a pool's home (the master runs its daemons
    there): a master that would not stop, or a second one a failed check let start."""
    home_dir = os.path.realpath(home)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue  # gone already, or not ours to look at
        if cwd == home_dir:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry), signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(int(entry), 0)  # our own child (Pool.start's master): reap it


def without_outside_pool(mp: pytest.MonkeyPatch) -> None:
    """The master inherits our environment: no outside pool's settings may leak in."""
    for k in list(os.environ):
        if k.startswith("_ROOST_") or k in ("ROOST_CONFIG", "ROOST_HOME"):
            mp.delenv(k)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    without_outside_pool(monkeypatch)


@pytest.fixture
def small_pool(tmp_path: Path, clean_env: None) -> Iterator[roost.Pool]:
    """A pool (master and collector) that is not started yet; stopped at the end."""
    home = make_home(tmp_path, "DAEMON_LIST = MASTER, COLLECTOR\n")
    pool = roost.Pool(home)
    try:
        yield pool
    finally:
        try:
            pool.stop(timeout=20)
        finally:
            end_pool(pool.home)


@pytest.fixture(scope="module")
def running_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[roost.Pool]:
    """One started pool (master and collector) for the tests that only look at it or
    restart its collector; each leaves it running and ready."""
    home = make_home(tmp_path_factory.mktemp("pool"), "DAEMON_LIST = MASTER, COLLECTOR\n")
    pool = roost.Pool(home)
    try:
        with pytest.MonkeyPatch.context() as mp:
            without_outside_pool(mp)
            pool.start(timeout=30)
        yield pool
    finally:
        try:
            pool.stop(timeout=20)
        finally:
            end_pool(pool.home)


def test_start_status_and_stop(small_pool: roost.Pool) -> None:
    pool = small_pool
    assert not pool.running() and pool.master_pid() is None
    st = pool.start(timeout=30)
    assert st["ready"] is True and list(st["daemons"]) == ["COLLECTOR"]
    collector = st["daemons"]["COLLECTOR"]
    assert collector["state"] == "running" and alive(collector["pid"])
    assert pool.running() and pool.master_pid() == st["pid"] and alive(st["pid"])
    assert pool.ready() == (True, "")
    assert pool.slots() == 0  # no startd in this pool
    # the running pool's collector answers through the same home
    c = roost.Collector(pool.home)
    try:
        assert c.query_objs("Collector", projection=["MyAddress"])[0]["MyAddress"] == collector["address"]
    finally:
        c.close()

    assert pool.stop(timeout=30) is True
    assert not pool.running() and pool.master_pid() is None
    assert not alive(st["pid"]) and not alive(collector["pid"])  # `roost down` leaves nothing
    assert pool.stop() is False  # nothing left to stop
    with pytest.raises(roost.NoPoolError, match="no pool is running"):
        pool.status()


def test_a_second_start_is_refused_while_one_runs(running_pool: roost.Pool) -> None:
    pid = running_pool.master_pid()
    with pytest.raises(roost.PoolError, match=r"a pool is already running \(ROOST_HOME=.*\)"):
        running_pool.start(timeout=30)
    st = running_pool.status()  # the first one is untouched
    assert st["ready"] is True and st["pid"] == pid


def test_a_daemon_the_pool_does_not_run_is_reported_as_not_answering(running_pool: roost.Pool) -> None:
    """With the master up, a missing schedd or negotiator is not "no pool": the message
    names the daemon and where its log is."""
    home = str(running_pool.home)
    with pytest.raises(roost.NoPoolError, match=r"the schedd of the pool at ROOST_HOME=.* is not answering") as err:
        roost.Schedd(home).totals()
    assert os.path.join(home, "log") in str(err.value)
    with pytest.raises(roost.NoPoolError, match="the negotiator of the pool at .* is not answering"):
        negotiator_connection(home, 5.0).call("USERPRIO")
    with pytest.raises(roost.PoolError, match="no daemon 'SCHEDD' here") as err:
        running_pool.restart_daemon("schedd")
    assert err.value.code == "NOT_FOUND"


def test_the_master_gives_the_pools_owner_a_token_only_the_owner_may_read(running_pool: roost.Pool) -> None:
    """``roost up`` writes ``tokens.d/<user>`` (owner-only), a token for the user
    running the pool: what the API presents on TCP (roost.api.connection.pool_token)."""
    user = pwd.getpwuid(os.geteuid()).pw_name
    path = running_pool.home / "tokens.d" / user
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    token = presented_token(str(running_pool.home))
    assert token is not None and token in path.read_text()
    assert decode_token(token)[1].subject == user_identity(running_pool.home, user)


def test_slots_counts_the_slot_ads_the_collector_holds(running_pool: roost.Pool) -> None:
    address = running_pool.status()["daemons"]["COLLECTOR"]["address"]
    assert running_pool.slots() == 0
    with SyncClient(address, timeout=5, token=pool_token(running_pool.home)) as c:  # as a startd would
        for name in ("slot1@x", "slot2@x"):
            c.call("UPDATE_AD", type="Machine", ad={"Name": name, "Cpus": 1})
        try:
            assert running_pool.slots() == 2
        finally:
            for name in ("slot1@x", "slot2@x"):
                c.call("INVALIDATE_AD", type="Machine", name=name)
    assert running_pool.slots() == 0


def test_restart_daemon_gives_a_new_process_that_clients_reach_again(running_pool: roost.Pool) -> None:
    """RESTART_DAEMON (any case) replaces the collector's process; it comes back on its
    port, so a client made before the restart goes on working."""
    before = running_pool.status()["daemons"]["COLLECTOR"]
    c = roost.Collector(running_pool.home, timeout=5)
    try:
        assert c.query_objs("Collector", projection=["MyAddress"]) == [{"MyAddress": before["address"]}]
        running_pool.restart_daemon("collector")
        deadline = time.monotonic() + 15
        while True:
            now = running_pool.status()["daemons"]["COLLECTOR"]
            if now["state"] == "running" and now["pid"] != before["pid"]:
                break
            assert time.monotonic() < deadline, f"the collector did not come back: {now}"
            time.sleep(0.02)
        assert not alive(before["pid"]) and alive(now["pid"])
        assert now["address"] == before["address"]
        with contextlib.suppress(roost.PoolError):
            c.query_objs("Collector")  # the old connection's end may be seen first
        assert c.query_objs("Collector", projection=["MyAddress"]) == [{"MyAddress": before["address"]}]
    finally:
        c.close()
    assert running_pool.ready() == (True, "")


def test_a_master_that_cannot_start_is_reported_with_its_reason(tmp_path: Path, clean_env: None) -> None:
    home = make_home(tmp_path, "this line has no equals\n")
    pool = roost.Pool(home)
    with pytest.raises(roost.PoolError, match="the master exited with status 1 while starting") as err:
        pool.start(timeout=30, write_config=False)
    assert "missing '='" in str(err.value)  # the config error, from the master's log
    assert not pool.running()


def test_a_pool_that_does_not_get_ready_is_stopped_again(tmp_path: Path, clean_env: None) -> None:
    """A daemon that never publishes its address keeps the pool from being ready; once
    the timeout passes the error says what it waited for, and nothing is left running."""
    stuck = tmp_path / "stuck.sh"
    stuck.write_text('#!/bin/sh\necho $$ > "$1"\nexec sleep 60\n')
    pidfile = tmp_path / "stuck.pid"
    home = make_home(tmp_path, f"DAEMON_LIST = MASTER, STUCK\nSTUCK = /bin/sh {stuck} {pidfile}\n")
    pool = roost.Pool(home)
    try:
        with pytest.raises(roost.PoolError, match=r"did not become ready in 2 s \(waiting for STUCK \(starting\)\)") as err:
            pool.start(timeout=2.0)
        assert "it was stopped again" in str(err.value) and str(pool.log_dir) in str(err.value)
        assert not pool.running()
        assert not alive(int(pidfile.read_text()))
    finally:
        end_pool(pool.home)


def test_running_is_decided_by_the_masters_lock_not_by_stale_files(tmp_path: Path) -> None:
    pool = roost.Pool(tmp_path)
    assert not pool.running()
    run = tmp_path / "run"
    run.mkdir()
    (run / "master.pid").write_text("999999\n")  # left by a master that died
    (run / "master.lock").touch()
    assert not pool.running()
    assert pool.stop() is False
    fd = os.open(run / "master.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a live master holds for its whole life
        assert pool.running()
    finally:
        os.close(fd)
    assert not pool.running()


def fake_master(run: Path, *, ignore_term: bool) -> subprocess.Popen:
    """A process that holds run/master.lock and wrote run/master.pid but never answers
    (a master wedged while starting, before it published its address)."""
    run.mkdir(parents=True, exist_ok=True)
    code = (
        "import fcntl, os, signal, sys, time\n"
        f"if {ignore_term}: signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"fd = os.open({str(run / 'master.lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        f"open({str(run / 'master.pid')!r}, 'w').write(str(os.getpid()))\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"locked\n"
    return proc


def test_stop_signals_a_master_that_does_not_answer(tmp_path: Path) -> None:
    proc = fake_master(tmp_path / "run", ignore_term=False)
    try:
        pool = roost.Pool(tmp_path)
        assert pool.running() and pool.master_pid() == proc.pid
        assert pool.stop(timeout=10) is True  # SIGTERM, as it did not answer SHUTDOWN
        assert not pool.running() and not alive(proc.pid)  # gone, and reaped by stop()
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_stop_gives_up_on_a_master_that_will_not_exit(tmp_path: Path) -> None:
    proc = fake_master(tmp_path / "run", ignore_term=True)
    try:
        pool = roost.Pool(tmp_path)
        with pytest.raises(roost.PoolError, match=rf"the master \(pid {proc.pid}\) did not exit within 0.3 s"):
            pool.stop(timeout=0.3)
        assert pool.running() and proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
