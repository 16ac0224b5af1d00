"""Frames built to exhaust a parser (issue 25): a 100,000-digit integer, JSON nested
100,000 deep, and ClassAd constraints of 100,000 selections or subscripts. Each gets
a one-line ``BAD_FRAME`` (the frame cannot be read) or ``BAD_REQUEST`` (the frame
reads, its ClassAd does not), never a dropped connection or ``INTERNAL``, and the
daemon answers the next request on a fresh connection, as the same process."""

from __future__ import annotations

import socket

import pytest
from poolkit import PoolHandle
from rawwire import connect, exchange
from rawwire import frame as _frame
from rawwire import frame_bytes as _frame_bytes
from rawwire import read_frame as _read

from roost.api.connection import pool_token
from roost.api.home import read_address

DAEMONS = ["master", "collector", "negotiator", "schedd", "startd"]
N = 100_000

#: a request each daemon answers ok to an authenticated owner (the startd: NOT_FOUND)
PROBE = {"master": ({"cmd": "STATUS"}, True), "collector": ({"cmd": "QUERY", "type": "Machine"}, True),
         "negotiator": ({"cmd": "CYCLE_STATS"}, True), "schedd": ({"cmd": "QUERY_JOBS", "totals": True}, True),
         "startd": ({"cmd": "KEEPALIVE", "claim_id": "no-such-claim"}, False)}


def _exchange(address: str, payload: bytes, token: str | None) -> dict | None:
    return exchange(address, payload, token, timeout=30)


def _refused(resp: dict | None, code: str, *words: str) -> None:
    assert resp is not None, "the daemon hung up without an answer"
    assert resp["ok"] is False and resp["code"] == code, resp
    message = resp["error"]
    assert "\n" not in message and len(message) < 1000, message
    for w in words:
        assert w in message, message


def _still_answers(pool: PoolHandle, daemon: str, address: str, owner: str, pid: int) -> None:
    req, ok = PROBE[daemon]
    resp = _exchange(address, _frame(req), owner)
    assert resp is not None and resp["ok"] is ok, resp
    if daemon != "master":
        assert pool.daemon_pid(daemon) == pid, f"{daemon} was restarted"


#: a frame whose JSON names a 100,000-digit integer (Python refuses to convert more
#: than 4,300 digits: ValueError) and one nested 100,000 deep (RecursionError)
HUGE_INT = _frame_bytes(b'{"cmd": "STATUS", "n": ' + b"7" * N + b"}")
DEEP_JSON = _frame_bytes(b'{"cmd": "STATUS", "n": ' + b"[" * N + b"]" * N + b"}")


@pytest.mark.parametrize("daemon", DAEMONS)
def test_unreadable_numbers_and_nesting_are_bad_frames(pool: PoolHandle, daemon: str) -> None:
    address = read_address(pool.home / "run" / f"{daemon}.address")
    assert address
    owner = pool_token(str(pool.home))
    assert owner is not None
    pid = pool.daemon_pid(daemon) if daemon != "master" else 0
    for token in (None, owner):
        _refused(_exchange(address, HUGE_INT, token), "BAD_FRAME", "digits")
        _refused(_exchange(address, DEEP_JSON, token), "BAD_FRAME", "nested")
        _still_answers(pool, daemon, address, owner, pid)


def test_schedd_unix_socket_refuses_a_huge_integer(pool: PoolHandle) -> None:
    """The same shared server path serves the schedd's Unix socket (FS)."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    try:
        s.connect(str(pool.home / "run" / "schedd.sock"))
        s.sendall(HUGE_INT)
        _refused(_read(s), "BAD_FRAME", "digits")
    finally:
        s.close()


#: constraints of 100,000 postfix operators: each adds a level to the tree the parser
#: builds in a loop, so only the compiler's recursion met them (RecursionError)
DEEP_CONSTRAINTS = ["a" + ".b" * N, "a" + "[0]" * N]


@pytest.mark.parametrize("constraint", DEEP_CONSTRAINTS, ids=["selections", "subscripts"])
def test_deeply_nested_constraints_are_bad_requests(pool: PoolHandle, constraint: str) -> None:
    owner = pool_token(str(pool.home))
    assert owner is not None
    collector = read_address(pool.home / "run" / "collector.address")
    schedd = read_address(pool.home / "run" / "schedd.address")
    assert collector and schedd
    pids = {d: pool.daemon_pid(d) for d in ("collector", "schedd")}
    for token in (None, owner):
        resp = _exchange(collector, _frame({"cmd": "QUERY", "type": "Machine", "constraint": constraint}), token)
        _refused(resp, "BAD_REQUEST", "nested")
        resp = _exchange(schedd, _frame({"cmd": "QUERY_JOBS", "constraint": constraint}), token)
        _refused(resp, "BAD_REQUEST", "nested")
    # the schedd's other ClassAd inputs: ACT and EDIT constraints, EDIT values, a submitted ad
    for req in ({"cmd": "ACT", "action": "hold", "constraint": constraint},
                {"cmd": "EDIT", "constraint": constraint, "attrs": {"Foo": "1"}},
                {"cmd": "EDIT", "ids": ["1"], "attrs": {"Foo": constraint}}):
        resp = _exchange(schedd, _frame(req), owner)
        assert resp is not None and resp["ok"] is False, resp
        assert resp["code"] in ("BAD_REQUEST", "NOT_FOUND"), resp
        assert "\n" not in resp["error"] and len(resp["error"]) < 1000, resp
    with connect(schedd, owner, timeout=30) as s:
        s.sendall(_frame({"cmd": "NEW_CLUSTER"}))
        got = _read(s)
        assert got is not None and got["ok"] is True, got
        s.sendall(_frame({"cmd": "SUBMIT", "cluster": got["cluster"],
                          "cluster_ad": {"Cmd": "/bin/true", "Requirements": f"/Expr({constraint})/"},
                          "procs": [{}]}))
        _refused(_read(s), "BAD_REQUEST")
    _still_answers(pool, "collector", collector, owner, pids["collector"])
    _still_answers(pool, "schedd", schedd, owner, pids["schedd"])
