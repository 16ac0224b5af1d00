"""A flood of idle connections that never authenticate (issue 25): the daemon keeps at
most MAX_UNAUTHENTICATED_CONNECTIONS of them (and _PER_HOST from one address), closing
the idlest first; daemons and tools that authenticated (a token on TCP, FS on the
schedd's Unix socket) are answered throughout and never closed; and once the flood
ends the daemon's open file descriptors are back where they were.

Bounded: 1,300 loopback connections per case, from 127.0.0.2 and 127.0.0.3 (every
127/8 address is loopback on Linux, so two "hosts" exercise both bounds)."""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until
from rawwire import connect
from rawwire import frame as _frame
from rawwire import read_frame as _read

from roost.api.connection import pool_token
from roost.api.home import read_address

TOTAL, PER_HOST = 250, 150
CONFIG = f"""
MAX_UNAUTHENTICATED_CONNECTIONS = {TOTAL}
MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST = {PER_HOST}
UNAUTHENTICATED_FIRST_FRAME_TIMEOUT = 120
"""
PROBE = {"collector": {"cmd": "QUERY", "type": "Machine", "projection": ["Name"]},
         "schedd": {"cmd": "QUERY_JOBS", "totals": True}}


@pytest.fixture(scope="module")
def flood_pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-cf-", dir="/tmp"))
    p = start_pool(home, CONFIG)
    try:
        yield p
    finally:
        stop_pool(p)


def _ask(s: socket.socket, req: dict) -> dict:
    s.sendall(_frame(req))
    resp = _read(s)
    assert resp is not None, "the daemon closed an authenticated connection"
    return resp


def _authenticated(address: str, token: str) -> socket.socket:
    return connect(address, token, timeout=30)


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _alive(s: socket.socket) -> bool:
    """Whether the daemon still holds ``s`` open (it never sends on it unasked)."""
    try:
        return s.recv(1, socket.MSG_DONTWAIT | socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def _flood(address: str, source: str, n: int) -> list[socket.socket]:
    host, port = address.rsplit(":", 1)
    socks = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.connect((host, int(port)))
        s.setblocking(False)  # for _alive's peek
        socks.append(s)
    return socks


def _settled(socks: list[socket.socket], want: int, what: str) -> None:
    wait_until(lambda: sum(map(_alive, socks)) == want, 30, f"{what}: {want} connections left open")


@pytest.mark.parametrize("daemon", ["collector", "schedd"])
def test_idle_unauthenticated_flood_is_bounded(flood_pool: PoolHandle, daemon: str) -> None:
    address = read_address(flood_pool.home / "run" / f"{daemon}.address")
    assert address
    owner = pool_token(str(flood_pool.home))
    assert owner is not None
    pid = flood_pool.daemon_pid(daemon)
    req = PROBE[daemon]
    held = _authenticated(address, owner)  # opened before the flood, idle through it
    assert _ask(held, req)["ok"] is True
    baseline = _open_fds(pid)
    first: list[socket.socket] = []
    second: list[socket.socket] = []
    try:
        # one host: only its PER_HOST newest stay, the oldest are closed first
        first = _flood(address, "127.0.0.2", 800)
        _settled(first, PER_HOST, "one host")
        assert not any(map(_alive, first[:-PER_HOST])) and all(map(_alive, first[-PER_HOST:]))

        # an authenticated tool and an FS peer are answered during the flood
        with _authenticated(address, owner) as fresh:
            assert _ask(fresh, req)["ok"] is True
        if daemon == "schedd":
            with socket.socket(socket.AF_UNIX) as fs:
                fs.settimeout(30)
                fs.connect(str(flood_pool.home / "run" / "schedd.sock"))
                assert _ask(fs, req)["ok"] is True

        # a second host: TOTAL in all, so the idlest of the first host make room
        second = _flood(address, "127.0.0.3", 500)
        _settled(second, PER_HOST, "second host")
        assert all(map(_alive, second[-PER_HOST:]))
        _settled(first, TOTAL - PER_HOST, "first host after the second")
        assert all(map(_alive, first[-(TOTAL - PER_HOST):]))
        assert _open_fds(pid) <= baseline + TOTAL + 5

        # the connection that authenticated before the flood was never closed
        assert _ask(held, req)["ok"] is True
    finally:
        for s in first + second:
            s.close()
    wait_until(lambda: _open_fds(pid) <= baseline, 30, f"{daemon}'s fds back to {baseline}")
    assert _ask(held, req)["ok"] is True
    held.close()
    assert flood_pool.daemon_pid(daemon) == pid
