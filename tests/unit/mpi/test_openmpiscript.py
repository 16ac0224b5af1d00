"""openmpiscript's channel between node 0's rsh agent and a node's launch agent: both
sides must prove the run's secret, and a frame changed on the way is refused."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import secrets
import socket
import threading
from typing import Any

import pytest

from roost.mpi import OPENMPI_SCRIPT


def _script() -> Any:
    loader = importlib.machinery.SourceFileLoader("openmpiscript", OPENMPI_SCRIPT)
    spec = importlib.util.spec_from_loader("openmpiscript", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


oms = _script()


def _pair(server_secret: str, client_secret: str) -> tuple[Any, Any, list[BaseException]]:
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    got: dict[str, Any] = {}
    errors: list[BaseException] = []

    def server() -> None:
        try:
            got["server"] = oms.Channel(a, server_secret, server=True)
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=server)
    t.start()
    try:
        client = oms.Channel(b, client_secret, server=False)
    except BaseException as e:
        client = None
        errors.append(e)
    t.join(5)
    return got.get("server"), client, errors


def test_both_sides_holding_the_secret_talk_in_both_directions() -> None:
    key = secrets.token_hex(32)
    server, client, errors = _pair(key, key)
    assert not errors and server is not None and client is not None
    client.send(0, b'{"command": "orted"}')
    assert server.recv() == (0, b'{"command": "orted"}')
    server.send(oms.STDOUT, b"hello")
    server.send(oms.EXIT, b"0")
    assert client.recv() == (oms.STDOUT, b"hello")
    assert client.recv() == (oms.EXIT, b"0")


def test_a_peer_without_the_secret_is_refused_both_ways() -> None:
    server, client, errors = _pair(secrets.token_hex(32), secrets.token_hex(32))
    assert server is None and client is None
    assert any(isinstance(e, PermissionError) for e in errors), errors


def test_a_frame_changed_on_the_way_is_refused() -> None:
    key = secrets.token_hex(32)
    a, b = socket.socketpair()
    mid_a, mid_b = socket.socketpair()  # client <-> relay (which flips a byte) <-> server
    for s in (a, b, mid_a, mid_b):
        s.settimeout(5)
    flip = {"on": False}

    def relay(src: socket.socket, dst: socket.socket, tamper: bool) -> None:
        try:
            while data := src.recv(65536):
                if tamper and flip["on"]:
                    data = data[:-1] + bytes([data[-1] ^ 1])
                dst.sendall(data)
        except OSError:
            pass

    threading.Thread(target=relay, args=(b, mid_a, True), daemon=True).start()
    threading.Thread(target=relay, args=(mid_a, b, False), daemon=True).start()
    holder: dict[str, Any] = {}
    t = threading.Thread(target=lambda: holder.setdefault("s", oms.Channel(mid_b, key, server=True)))
    t.start()
    client = oms.Channel(a, key, server=False)
    t.join(5)
    server = holder["s"]
    client.send(0, b"fine")
    assert server.recv() == (0, b"fine")
    flip["on"] = True
    client.send(0, b"rm -rf ~")
    with pytest.raises(ConnectionError, match="failed its check"):
        server.recv()
