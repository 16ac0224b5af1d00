"""Every daemon answers garbage with a clear error and stays up, before and after a
peer authenticates; a command above READ from an unauthenticated peer is refused
(PERMISSION_DENIED, one line) before its arguments are even looked at."""

from __future__ import annotations

import struct

import pytest
from poolkit import PoolHandle
from rawwire import connect as _connect
from rawwire import exchange as _exchange
from rawwire import frame as _frame

from roost.api.connection import pool_token
from roost.api.home import read_address

DAEMONS = ["master", "collector", "negotiator", "schedd", "startd"]


BAD = [
    (struct.pack(">I", 5) + b"{nope", "BAD_FRAME"),
    (struct.pack(">I", 3) + b"\xff\xfe\xfd", "BAD_FRAME"),
    (_frame([1, 2, 3]), "BAD_FRAME"),
    (struct.pack(">I", 2**31), "BAD_FRAME"),
    (_frame({"no": "cmd"}), "BAD_REQUEST"),
    (_frame({"cmd": "NO_SUCH_COMMAND"}), "BAD_REQUEST"),
    # a handshake that cannot succeed: a forged token, a proof with no challenge, no method
    (_frame({"cmd": "AUTH", "method": "IDTOKENS", "token": "eyJ.eyJ", "nonce": "n"}), "AUTH_FAILED"),
    (_frame({"cmd": "AUTH_PROOF", "proof": "x"}), "AUTH_FAILED"),
    (_frame({"cmd": "AUTH", "method": "NOPE"}), "AUTH_FAILED"),
]
MISTYPED = {
    "master": {"cmd": "RESTART_DAEMON", "name": 7},
    "collector": {"cmd": "QUERY", "type": "Machine", "constraint": "((("},
    "negotiator": {"cmd": "RESCHEDULE", "extra": object.__name__},
    "schedd": {"cmd": "SUBMIT", "cluster": "x", "cluster_ad": {}, "procs": []},
    "startd": {"cmd": "ACTIVATE_CLAIM", "claim_id": 5, "job_ad": {}},
}
#: a well-formed command each daemon serves to anyone (READ), and one above READ
READ_CMD = {"master": {"cmd": "STATUS"}, "collector": {"cmd": "QUERY", "type": "Machine"},
            "negotiator": {"cmd": "CYCLE_STATS"}, "schedd": {"cmd": "QUERY_JOBS", "totals": True},
            "startd": None}
DAEMON_CMD = {"startd": {"cmd": "KEEPALIVE", "claim_id": "no-such-claim"},
              "negotiator": {"cmd": "SET_FACTOR", "name": "x@y", "factor": "big"}}


def _check_garbage(address: str, token: str | None) -> None:
    for payload, code in BAD:
        resp = _exchange(address, payload, token)
        assert resp is not None and resp["ok"] is False and resp["code"] == code, (payload, resp)
        assert resp["error"] and "\n" not in resp["error"]
    # a truncated frame, then a hang-up mid-body
    with _connect(address, token, timeout=5) as s:
        s.sendall(struct.pack(">I", 100) + b"{")


@pytest.mark.parametrize("daemon", DAEMONS)
def test_garbage_gets_an_error_and_the_daemon_stays_up(pool: PoolHandle, daemon: str) -> None:
    address = read_address(pool.home / "run" / f"{daemon}.address")
    assert address, f"{daemon} has no address"
    owner = pool_token(str(pool.home))  # `roost up` gave the pool's owner (ADMINISTRATOR, DAEMON) a token
    assert owner is not None, "roost up wrote no token to tokens.d"
    restarts_before = pool.master_status()["daemons"].get(daemon.upper(), {}).get("restarts", 0)

    # before authentication
    _check_garbage(address, None)
    bad = MISTYPED[daemon]
    resp = _exchange(address, _frame(bad))
    assert resp is not None and resp["ok"] is False, resp
    if daemon == "collector":  # QUERY is READ: its arguments are checked
        assert resp["code"] == "BAD_REQUEST", resp
    else:  # refused on its level, whatever its arguments
        assert resp["code"] == "PERMISSION_DENIED", resp
        assert resp["error"].startswith(f"{bad['cmd']} refused to an unauthenticated peer: ")
        assert "\n" not in resp["error"]

    # after authentication: the same garbage, and now the arguments are checked
    _check_garbage(address, owner)
    resp = _exchange(address, _frame(bad), owner)
    assert resp is not None
    if daemon == "negotiator":  # RESCHEDULE ignores extra arguments, as the protocol allows
        assert resp["ok"] is True, resp
    else:
        assert resp["ok"] is False and resp["code"] == "BAD_REQUEST", resp

    # still alive and answering, and not restarted behind our back
    if READ_CMD[daemon] is not None:
        for token in (None, owner):
            resp = _exchange(address, _frame(READ_CMD[daemon]), token)
            assert resp is not None and resp["ok"] is True, resp
    if daemon in DAEMON_CMD:
        resp = _exchange(address, _frame(DAEMON_CMD[daemon]))
        assert resp is not None and resp["code"] == "PERMISSION_DENIED", resp
        resp = _exchange(address, _frame(DAEMON_CMD[daemon]), owner)
        assert resp is not None and resp["ok"] is False
        assert resp["code"] == ("NOT_FOUND" if daemon == "startd" else "BAD_REQUEST"), resp
    if daemon != "master":
        assert pool.master_status()["daemons"][daemon.upper()]["restarts"] == restarts_before
