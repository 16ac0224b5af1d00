"""Every daemon answers garbage with a clear error and stays up."""

from __future__ import annotations

import json
import socket
import struct

import pytest
from poolkit import PoolHandle

from roost.api.home import read_address

DAEMONS = ["master", "collector", "negotiator", "schedd", "startd"]


def _exchange(address: str, payload: bytes) -> dict | None:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(payload)
        header = b""
        while len(header) < 4:
            chunk = s.recv(4 - len(header))
            if not chunk:
                return None
            header += chunk
        (n,) = struct.unpack(">I", header)
        body = b""
        while len(body) < n:
            chunk = s.recv(n - len(body))
            if not chunk:
                break
            body += chunk
        return json.loads(body)


def _frame(obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


BAD = [
    (struct.pack(">I", 5) + b"{nope", "BAD_FRAME"),
    (struct.pack(">I", 3) + b"\xff\xfe\xfd", "BAD_FRAME"),
    (_frame([1, 2, 3]), "BAD_FRAME"),
    (struct.pack(">I", 2**31), "BAD_FRAME"),
    (_frame({"no": "cmd"}), "BAD_REQUEST"),
    (_frame({"cmd": "NO_SUCH_COMMAND"}), "BAD_REQUEST"),
]
MISTYPED = {
    "master": {"cmd": "RESTART_DAEMON", "name": 7},
    "collector": {"cmd": "QUERY", "type": "Machine", "constraint": "((("},
    "negotiator": {"cmd": "RESCHEDULE", "extra": object.__name__},
    "schedd": {"cmd": "SUBMIT", "cluster": "x", "cluster_ad": {}, "procs": []},
    "startd": {"cmd": "ACTIVATE_CLAIM", "claim_id": 5, "job_ad": {}},
}


@pytest.mark.parametrize("daemon", DAEMONS)
def test_garbage_gets_an_error_and_the_daemon_stays_up(pool: PoolHandle, daemon: str) -> None:
    address = read_address(pool.home / "run" / f"{daemon}.address")
    assert address, f"{daemon} has no address"
    restarts_before = pool.master_status()["daemons"].get(daemon.upper(), {}).get("restarts", 0)
    for payload, code in BAD:
        resp = _exchange(address, payload)
        assert resp is not None and resp["ok"] is False and resp["code"] == code, (payload, resp)
        assert resp["error"] and "\n" not in resp["error"]
    bad = MISTYPED[daemon]
    resp = _exchange(address, _frame(bad))
    if daemon != "negotiator":  # RESCHEDULE ignores extra arguments, as the protocol allows
        assert resp is not None and resp["ok"] is False and resp["code"] == "BAD_REQUEST", resp
    # a truncated frame, then a hang-up mid-body
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(struct.pack(">I", 100) + b"{")
    # still alive and answering, and not restarted behind our back
    ok_cmd = {"master": {"cmd": "STATUS"}, "collector": {"cmd": "QUERY", "type": "Machine"},
              "negotiator": {"cmd": "CYCLE_STATS"}, "schedd": {"cmd": "QUERY_JOBS", "totals": True},
              "startd": {"cmd": "KEEPALIVE", "claim_id": "no-such-claim"}}[daemon]
    resp = _exchange(address, _frame(ok_cmd))
    assert resp is not None
    if daemon == "startd":
        assert resp["ok"] is False and resp["code"] == "NOT_FOUND"
    else:
        assert resp["ok"] is True, resp
    if daemon != "master":
        assert pool.master_status()["daemons"][daemon.upper()]["restarts"] == restarts_before
