"""Finding the pool: ROOST_HOME, the address files under its ``run/``, and the error a
user gets when nothing is running there."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from daemons.daemon_procs import make_home, start_daemon, stop_daemon

import roost.api as roost
from roost import poolhome
from roost.api.home import pool_home, read_address, run_path
from roost.api.negotiator import negotiator_connection
from roost.net.addresses import write_address


def test_an_explicit_home_wins_over_roost_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROOST_HOME", str(tmp_path / "env"))
    assert pool_home(tmp_path / "given") == str(tmp_path / "given")
    assert pool_home(str(tmp_path / "given")) == str(tmp_path / "given")
    assert pool_home() == str(tmp_path / "env")


def test_home_falls_back_to_the_users_data_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ROOST_HOME", raising=False)
    monkeypatch.setattr(poolhome, "SYSTEM_HOME", str(tmp_path / "no-system-pool"))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert pool_home() == str(tmp_path / ".local" / "share" / "roost")
    assert roost.Schedd().home == tmp_path / ".local" / "share" / "roost"


def test_tilde_is_expanded_in_roost_home_and_in_an_explicit_home(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ROOST_HOME", "~/pool")
    assert pool_home() == str(tmp_path / "pool")
    assert pool_home("~/other") == str(tmp_path / "other")
    assert roost.Schedd("~/other").home == tmp_path / "other"


def test_address_files_live_under_run(tmp_path: Path) -> None:
    assert run_path(str(tmp_path), "schedd.address") == str(tmp_path / "run" / "schedd.address")
    assert read_address(run_path(str(tmp_path), "schedd.address")) is None  # no run/ at all
    write_address(tmp_path / "run" / "schedd.address", "127.0.0.1:9618")
    assert read_address(run_path(str(tmp_path), "schedd.address")) == "127.0.0.1:9618"
    (tmp_path / "run" / "empty.address").write_text("\n")
    assert read_address(tmp_path / "run" / "empty.address") is None  # being written: not yet


def test_roost_home_leads_the_api_to_the_running_schedd(monkeypatch: pytest.MonkeyPatch,
                                                       schedd_daemon) -> None:
    monkeypatch.setenv("ROOST_HOME", str(schedd_daemon.home))
    with roost.Schedd() as schedd:
        assert schedd.home == schedd_daemon.home
        assert schedd.totals()["Total"] >= 0


def test_roost_home_leads_the_api_to_the_running_collector(monkeypatch: pytest.MonkeyPatch,
                                                          collector_daemon) -> None:
    monkeypatch.setenv("ROOST_HOME", str(collector_daemon.home))
    c = roost.Collector()
    try:
        [own] = c.query_objs("Collector", projection=["MyAddress"])
    finally:
        c.close()
    assert own["MyAddress"] == collector_daemon.address


NO_POOL = r"no pool is running \(ROOST_HOME=.*\): start one with `roost up`"


def test_no_pool_is_a_clear_error_for_every_client(tmp_path: Path) -> None:
    home = str(tmp_path)
    with pytest.raises(roost.NoPoolError, match=NO_POOL) as err:
        roost.Schedd(home).totals()
    assert f"ROOST_HOME={home})" in str(err.value)
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        roost.Schedd(home).connect()
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        roost.Collector(home).query("Machine")
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        roost.Pool(home).status()
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        negotiator_connection(home, 5.0).call("USERPRIO")
    assert issubclass(roost.NoPoolError, roost.PoolError)


def test_constructing_a_client_does_not_need_a_pool(tmp_path: Path) -> None:
    """A script may build its clients before `roost up`; only a call needs the pool."""
    schedd = roost.Schedd(tmp_path)
    collector = roost.Collector(tmp_path)
    schedd.close()
    collector.close()
    assert not (tmp_path / "run").exists()  # nothing was created on the way


def test_a_client_built_before_the_schedd_starts_reaches_it_once_it_runs(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    schedd = roost.Schedd(home)
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        schedd.totals()
    proc, _ = start_daemon("schedd", home)
    try:
        assert schedd.totals()["Total"] == 0
    finally:
        schedd.close()
        stop_daemon(proc)


def test_a_stale_socket_and_address_left_by_a_dead_schedd_mean_no_pool(tmp_path: Path) -> None:
    """A killed schedd leaves run/schedd.sock and run/schedd.address behind; the API
    tries both ways in and still reports the pool as not running."""
    run = tmp_path / "run"
    run.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(run / "schedd.sock"))
    dead.close()  # the file stays; nobody listens on it
    spare = socket.socket()
    spare.bind(("127.0.0.1", 0))
    write_address(run / "schedd.address", f"127.0.0.1:{spare.getsockname()[1]}")
    spare.close()  # a port nobody listens on
    assert os.path.exists(run / "schedd.sock")
    with pytest.raises(roost.NoPoolError, match=NO_POOL):
        roost.Schedd(tmp_path).totals()


def test_a_stale_socket_file_is_skipped_for_the_tcp_address(tmp_path: Path, schedd_daemon) -> None:
    """Queries still reach a live schedd through its TCP address when the Unix socket
    file in run/ is dead."""
    run = tmp_path / "run"
    run.mkdir()
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(run / "schedd.sock"))
    dead.close()
    write_address(run / "schedd.address", schedd_daemon.address)
    with roost.Schedd(tmp_path) as schedd, roost.Schedd(schedd_daemon.home) as direct:
        assert schedd.totals() == direct.totals()


# -- which pool a user's commands find (docs/pool.md, "Which pool a command talks to") --

def _system(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, running: bool) -> Path:
    """A system pool's home as contrib/systemd makes it (configured by ROOST_CONFIG, so
    no roost_config in it): ``run/`` once its master has started."""
    system = tmp_path / "var-lib-roost"
    system.mkdir()
    if running:
        (system / "run").mkdir()
    monkeypatch.setattr(poolhome, "SYSTEM_HOME", str(system))
    monkeypatch.delenv("ROOST_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return system


def test_a_user_without_a_pool_of_their_own_finds_the_system_pool(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    system = _system(tmp_path, monkeypatch, running=True)
    assert pool_home() == str(system)
    assert roost.Schedd().home == system
    from roost.config.loader import default_home

    assert default_home(os.environ) == system  # $(ROOST_HOME) in the configuration agrees


def test_the_users_own_pool_wins_over_the_system_pool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _system(tmp_path, monkeypatch, running=True)
    own = tmp_path / "user" / ".local" / "share" / "roost"
    own.mkdir(parents=True)
    assert pool_home() == str(tmp_path / "var-lib-roost")  # an empty directory is no pool
    (own / "roost_config").write_text("use ROLE : Personal\n")
    assert pool_home() == str(own)


def test_roost_home_wins_over_both(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _system(tmp_path, monkeypatch, running=True)
    monkeypatch.setenv("ROOST_HOME", str(tmp_path / "elsewhere"))
    assert pool_home() == str(tmp_path / "elsewhere")


def test_no_pool_anywhere_means_the_personal_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _system(tmp_path, monkeypatch, running=False)  # the directory alone, never started: no pool
    assert pool_home() == str(tmp_path / "user" / ".local" / "share" / "roost")

