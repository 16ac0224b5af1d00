"""The dashboard's HTTP server against DNS rebinding, idle and trickling connections,
oversized bodies, and tokens sent in the clear from another host. The pool behind it
is absent (a view of a home with no pool, its snapshot set): these are refused or
answered before the pool is asked."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from roost.web.server import host_values, make_server
from roost.web.snapshot import PoolView, Snapshot

TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhQGIifQ.c2ln"


@contextmanager
def serving(host: str = "127.0.0.1", **kw: Any) -> Iterator[int]:
    view = PoolView("/nonexistent")
    view.snapshot = Snapshot(taken=time.time() + 3600)  # fresh for the whole test: no read of the pool
    server = make_server(view, host, 0, **kw)
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def request(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None = None,
            at: str = "127.0.0.1") -> tuple[int, bytes]:
    c = http.client.HTTPConnection(at, port, timeout=10)
    try:
        c.putrequest(method, path, skip_host=True)
        for k, v in headers.items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def test_only_this_dashboards_names_are_answered() -> None:
    with serving(allowed_hosts=["dash.example", "other.example:8443"]) as port:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}",
                     "dash.example", "dash.example:443", "other.example:8443"):
            assert request(port, "GET", "/api/summary", {"Host": host})[0] == 200, host
        # a site whose name was rebound to 127.0.0.1 (DNS rebinding) reads nothing
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1", "127.0.0.1:1", "other.example",
                     "127.0.0.1.evil.example", ""):
            status, body = request(port, "GET", "/api/summary", {"Host": host} if host else {})
            assert status == 421, (host, status)
        assert request(port, "GET", "/", {"Host": "evil.example"})[0] == 421


def test_a_rebound_page_cannot_act_with_a_matching_origin() -> None:
    with serving() as port:
        body = json.dumps({"action": "hold", "ids": ["1.0"]}).encode()
        status, answer = request(port, "POST", "/api/act", {
            "Host": "evil.example", "Origin": "http://evil.example", "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}"}, body)
        assert status == 421, answer
        status, answer = request(port, "POST", "/api/act", {
            "Host": f"127.0.0.1:{port}", "Origin": "http://evil.example", "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}"}, body)
        assert status == 403 and b"may not act here" in answer


def test_host_values() -> None:
    values, names = host_values("0.0.0.0", 9680, "192.0.2.7:9680", ["cm.example.org", "[fd00::1]", "fd00::2"])
    assert {"127.0.0.1:9680", "localhost:9680", "[::1]:9680", "192.0.2.7:9680"} <= values
    assert "0.0.0.0:9680" not in values and "192.0.2.7" not in values
    assert names == {"cm.example.org", "[fd00::1]", "[fd00::2]"}
    values, _ = host_values("fd00::9", 80)
    assert {"[fd00::9]:80", "[fd00::9]", "localhost"} <= values


def test_a_huge_body_is_refused_unread() -> None:
    with serving() as port:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(f"POST /api/act HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {10 << 20}\r\n"
                  "Content-Type: application/json\r\n\r\n".encode())
        answer = s.recv(65536)
        s.close()
        assert answer.startswith(b"HTTP/1.1 413"), answer[:100]


def test_a_body_that_never_comes_frees_its_connection() -> None:
    with serving(timeout=0.5) as port:
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(f"POST /api/act HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 1000\r\n"
                  f"Content-Type: application/json\r\nAuthorization: Bearer {TOKEN}\r\n\r\n{{".encode())
        assert s.recv(65536) == b""  # closed by the dashboard (before: held for ever)
        s.close()


def test_idle_connections_are_capped_and_closed() -> None:
    with serving(max_handlers=4, timeout=5.0) as port:
        before = threading.active_count()
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(4)]
        for s in idle:
            s.sendall(b"GET / HTTP/1.1\r\n")  # and nothing more
        deadline = time.monotonic() + 10
        while threading.active_count() < before + 4:  # each idle one holds a handler now
            assert time.monotonic() < deadline, (threading.active_count(), before)
            time.sleep(0.01)
        extra = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
        for s in extra:  # one connection too many: 503 at once, closed
            got = s.recv(65536)
            assert got.startswith(b"HTTP/1.1 503"), (extra.index(s), got, threading.active_count(), before)
            s.close()
        assert threading.active_count() <= before + 4
        for s in idle:  # the idle ones are closed after the timeout
            assert s.recv(65536) == b""
            s.close()
        deadline = time.monotonic() + 10
        while True:  # their threads are back: the dashboard answers again
            try:
                status = request(port, "GET", "/healthz", {"Host": f"127.0.0.1:{port}"})[0]
            except (ConnectionError, http.client.HTTPException):
                status = 0
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert status == 200


def _other_address() -> str | None:
    """An address of this host that is not loopback, to come from "another host"."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: only the route is looked up
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") else addr


def test_a_token_over_plain_http_from_another_host_is_refused() -> None:
    addr = _other_address()
    if addr is None:
        pytest.skip("this host has no address besides loopback")
    body = json.dumps({"action": "hold", "ids": ["1.0"]}).encode()
    headers = {"Host": addr, "Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    with serving("0.0.0.0", allowed_hosts=[addr]) as port:
        status, answer = request(port, "POST", "/api/act", headers, body, at=addr)
        assert status == 403 and b"needs TLS" in answer
        # X-Forwarded-Proto is believed only when told: anyone can send it
        status, answer = request(port, "POST", "/api/act", {**headers, "X-Forwarded-Proto": "https"}, body, at=addr)
        assert status == 403 and b"needs TLS" in answer
    with serving("0.0.0.0", allowed_hosts=[addr], trust_forwarded_proto=True) as port:
        status, answer = request(port, "POST", "/api/act", headers, body, at=addr)
        assert status == 403 and b"needs TLS" in answer
        # through the proxy: on to the schedd (absent here)
        status, answer = request(port, "POST", "/api/act", {**headers, "X-Forwarded-Proto": "https"}, body, at=addr)
        assert b"needs TLS" not in answer and status in (403, 502), answer
