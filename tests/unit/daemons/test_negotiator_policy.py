"""The negotiator's fair-share side: the accountant's persistence and the USERPRIO /
SET_FACTOR / RESET_USAGE / SET_FLOOR / SET_CEILING commands, on a real collector and
negotiator in a temporary home; usage charged from claimed slot ads."""

import json
import time

import pytest

from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import make_home, start_daemon, stop_daemon

pytest.importorskip("roost.core.accountant")

CONFIG = "NEGOTIATOR_INTERVAL = 300\nNEGOTIATOR_MIN_INTERVAL = 0.01\n"


@pytest.fixture
def home(tmp_path):
    return make_home(tmp_path, CONFIG)


@pytest.fixture
def collector(home):
    proc, addr = start_daemon("collector", home)
    try:
        yield addr
    finally:
        stop_daemon(proc)


def users(neg):
    return {u["name"]: u for u in neg.call("USERPRIO")["users"]}


def test_factor_persists_across_restarts(home, collector):
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = SyncClient(addr)
        neg.call("SET_FACTOR", name="alice@h", factor=5000)
        neg.call("SET_CEILING", name="alice@h", ceiling=3)
        got = users(neg)["alice@h"]
        assert got["factor"] == 5000
        assert got["ceiling"] == 3
        assert got["effective"] == pytest.approx(got["priority"] * 5000)
        neg.close()
    finally:
        assert stop_daemon(proc) == 0
    state = json.loads((home / "spool" / "accountant.json").read_text())
    assert "alice@h" in json.dumps(state)
    assert not list((home / "spool").glob(".accountant.json.*.tmp"))
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = SyncClient(addr)
        got = users(neg)["alice@h"]
        assert got["factor"] == 5000 and got["ceiling"] == 3
        neg.call("SET_CEILING", name="alice@h", ceiling=None)
        assert users(neg)["alice@h"]["ceiling"] is None
        neg.close()
    finally:
        stop_daemon(proc)


def test_corrupt_state_is_set_aside(home, collector):
    spool = home / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "accountant.json").write_text("{not json")
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = SyncClient(addr)
        assert users(neg) == {}
        neg.call("SET_FACTOR", name="bob@h", factor=2000)
        assert users(neg)["bob@h"]["factor"] == 2000
        neg.close()
    finally:
        stop_daemon(proc)
    aside = list(spool.glob("accountant.json.corrupt.*"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    assert "bob@h" in (spool / "accountant.json").read_text()
    log = (home / "log" / "NegotiatorLog").read_text()
    assert "corrupt" in log


def test_bad_arguments_are_refused(home, collector):
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = SyncClient(addr)
        for cmd, args in [("SET_FACTOR", {"name": "a@h", "factor": 0.5}),
                          ("SET_FACTOR", {"name": "a@h", "factor": "big"}),
                          ("SET_FLOOR", {"name": "a@h", "floor": -1}),
                          ("RESET_USAGE", {})]:
            with pytest.raises(RemoteError) as e:
                neg.call(cmd, **args)
            assert e.value.code == "BAD_REQUEST"
        neg.close()
    finally:
        stop_daemon(proc)


def claimed_slot(name, user, cpus):
    return {"Name": name, "MyType": "Machine", "Cpus": cpus, "Memory": 1024, "State": "Claimed",
            "Activity": "Busy", "RemoteUser": user, "RemoteOwner": user.split("@")[0],
            "SlotWeight": "/Expr(Cpus)/", "MyAddress": "127.0.0.1:9"}


def test_usage_comes_from_claimed_slots_and_resets(home, collector):
    col = SyncClient(collector)
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot1@h", "carol@h", 2))
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot2@h", "carol@h", 1))
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot3@h", "dave@h", 1))
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = SyncClient(addr)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "dave@h" not in users(neg):
            neg.call("RESCHEDULE")
            time.sleep(0.05)
        time.sleep(0.3)
        got = users(neg)
        assert got["carol@h"]["resources_used"] == 3
        assert got["dave@h"]["resources_used"] == 1
        assert got["carol@h"]["usage"] > 0
        assert got["carol@h"]["priority"] > got["dave@h"]["priority"]
        assert neg.call("RESET_USAGE", name="*")["count"] >= 2
        got = users(neg)
        assert got["carol@h"]["usage"] < 3 * 0.2
        neg.close()
    finally:
        stop_daemon(proc)
        col.close()
