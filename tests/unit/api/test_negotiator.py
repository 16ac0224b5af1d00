"""Reaching the negotiator (``roost userprio``, ``q -analyze``): its address file under
``run/``, else the address its Negotiator ad gives the collector."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemons.daemon_procs import make_home, start_daemon, stop_daemon

import roost.api as roost
from roost.api.negotiator import negotiator_connection
from roost.net.addresses import write_address

from .owner import owner_token


@pytest.fixture(scope="module")
def central_manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """A real collector and negotiator: (their home, collector address, negotiator address).
    The test's user holds a token of the pool there, as after ``roost up``: an
    administrator's (``$(USERNAME)@UID_DOMAIN``)."""
    home = make_home(tmp_path_factory.mktemp("cm"), "NEGOTIATOR_INTERVAL = 300\n")
    owner_token(home)
    procs = []
    try:
        collector, caddr = start_daemon("collector", home)
        procs.append(collector)
        negotiator, naddr = start_daemon("negotiator", home)
        procs.append(negotiator)
        yield home, caddr, naddr
    finally:
        for p in reversed(procs):
            stop_daemon(p)


def factor_of(conn, name: str) -> float | None:
    users = conn.call("USERPRIO")["users"]
    return next((u["factor"] for u in users if u["name"] == name), None)


def test_the_address_file_under_run_leads_to_the_negotiator(central_manager, tmp_path: Path) -> None:
    """run/negotiator.address alone is enough: no collector needs asking. A home with
    no token may read priorities there, not change them."""
    home, _, naddr = central_manager
    write_address(tmp_path / "run" / "negotiator.address", naddr)
    direct = negotiator_connection(str(home), 5.0)
    by_file = negotiator_connection(str(tmp_path), 5.0)
    try:
        direct.call("SET_FACTOR", name="alice@here", factor=7.0)
        assert factor_of(by_file, "alice@here") == 7.0  # it is the pool's negotiator
        with pytest.raises(roost.PoolError) as err:
            by_file.call("SET_FACTOR", name="alice@here", factor=1.0)
        assert err.value.code == "PERMISSION_DENIED"
        assert str(err.value).startswith("SET_FACTOR refused to an unauthenticated peer: ")
        assert "\n" not in str(err.value)
        assert factor_of(direct, "alice@here") == 7.0
    finally:
        direct.close()
        by_file.close()


def test_without_an_address_file_the_collectors_negotiator_ad_is_used(central_manager,
                                                                     tmp_path: Path) -> None:
    """A submit host whose run/ holds only the collector's address (the central manager
    is elsewhere) reaches the same negotiator through its Negotiator ad."""
    home, caddr, _ = central_manager
    write_address(tmp_path / "run" / "collector.address", caddr)
    collector = roost.Collector(tmp_path)
    try:
        deadline = time.monotonic() + 10
        while not collector.query_objs("Negotiator"):  # advertised once it has started
            assert time.monotonic() < deadline, "the negotiator never advertised itself"
            time.sleep(0.02)
    finally:
        collector.close()
    direct = negotiator_connection(str(home), 5.0)
    remote = negotiator_connection(str(tmp_path), 5.0)
    try:
        direct.call("SET_FACTOR", name="bob@here", factor=3.0)
        assert factor_of(remote, "bob@here") == 3.0  # the very negotiator the file names
    finally:
        direct.close()
        remote.close()


def test_a_collector_without_a_negotiator_ad_is_no_way_in(collector_daemon, tmp_path: Path) -> None:
    """The pool's collector answers but no negotiator advertised: the call says the pool
    cannot be reached rather than failing on an empty address."""
    write_address(tmp_path / "run" / "collector.address", collector_daemon.address)
    conn = negotiator_connection(str(tmp_path), 5.0)
    with pytest.raises(roost.NoPoolError, match="no pool is running"):
        conn.call("USERPRIO")


def test_priorities_are_set_and_read_back_and_a_bad_value_is_refused(central_manager) -> None:
    """What `roost userprio` does through the API: set a user's priority and factor,
    read them back; a value the negotiator refuses is a PoolError with its code, and
    the connection goes on working."""
    home, _, _ = central_manager
    conn = negotiator_connection(str(home), 5.0)
    try:
        assert conn.call("SET_PRIORITY", name="carol@here", priority=42.0)["priority"] == 42.0
        conn.call("SET_FACTOR", name="carol@here", factor=2.0)
        [carol] = [u for u in conn.call("USERPRIO")["users"] if u["name"] == "carol@here"]
        assert carol["factor"] == 2.0
        assert carol["priority"] == pytest.approx(42.0, rel=1e-3)  # decaying since it was set
        with pytest.raises(roost.PoolError, match="factor must be a number >= 1") as err:
            conn.call("SET_FACTOR", name="carol@here", factor=0.5)
        assert err.value.code == "BAD_REQUEST" and not isinstance(err.value, roost.NoPoolError)
        assert factor_of(conn, "carol@here") == 2.0  # unchanged, and still answering
    finally:
        conn.close()
