"""The master-worker wire: frames, the mutual HMAC handshake, and the MAC that makes
a frame impossible to forge, replay, reorder or reflect."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from roost.mw import protocol
from roost.mw.protocol import Channel, ProtocolError

SECRET = b"0123456789abcdef" * 4


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    yield a, b
    a.close()
    b.close()


def _handshake(pair: tuple[socket.socket, socket.socket], worker_secret: bytes = SECRET) -> tuple[Any, Any]:
    """(master result or exception, worker channel or exception), run on both ends."""
    m, w = pair
    out: dict[str, Any] = {}

    def worker() -> None:
        try:
            out["w"] = protocol.worker_handshake(w, worker_secret, "3.1", "exec.example.org")
        except Exception as e:
            out["w"] = e

    t = threading.Thread(target=worker)
    t.start()
    try:
        got: Any = protocol.master_handshake(m, SECRET)
    except Exception as e:
        got = e
    t.join()
    return got, out["w"]


def test_a_worker_with_the_secret_is_admitted_and_frames_flow_both_ways(pair: Any) -> None:
    (mch, auth), wch = _handshake(pair)
    assert auth["job"] == "3.1" and auth["host"] == "exec.example.org"
    assert "secret" not in str(auth) and SECRET.decode() not in str(auth)  # only a proof crossed
    mch.send({"t": "task", "id": 1, "payload": {"x": 0.1, "big": 2**70, "nan": float("inf")}})
    got = wch.recv()
    assert got == {"t": "task", "id": 1, "payload": {"x": 0.1, "big": 2**70, "nan": float("inf")}}
    wch.send({"t": "done", "id": 1, "result": [1, "two"]})
    assert mch.recv() == {"t": "done", "id": 1, "result": [1, "two"]}


def test_a_worker_without_the_secret_is_refused(pair: Any) -> None:
    got, _ = _handshake(pair, worker_secret=b"wrong" * 8)
    assert isinstance(got, ProtocolError) and "secret" in str(got)


def test_a_master_without_the_secret_cannot_give_a_worker_anything(pair: Any) -> None:
    """The worker's first recv is the master's proof: a master that does not hold the
    secret (say, one impersonating it) derives another key, and its welcome is refused."""
    m, w = pair
    out: dict[str, Any] = {}
    t = threading.Thread(target=lambda: out.setdefault("w", protocol.worker_handshake(w, SECRET, "1.0", "h")))
    t.start()
    nm = b"n" * 32
    protocol.send_frame(m, protocol.encode({"t": "hello", "v": 1, "nonce": nm.hex()}))
    auth = protocol.decode(protocol.recv_frame(m, 4096))
    t.join()
    fake = Channel(m, protocol.session_key(b"not the secret", nm, bytes.fromhex(auth["nonce"])), b"m2w", b"w2m")
    fake.send({"t": "welcome", "source": "import os; os.system('evil')"})
    with pytest.raises(ProtocolError, match="bad MAC"):
        out["w"].recv()


def _intercept(sender: Channel, to: socket.socket, msg: dict[str, Any]) -> bytes:
    """``msg`` as ``sender`` frames it, taken off the wire before its receiver sees it."""
    sender.send(msg)
    (n,) = struct.unpack(">I", protocol.recv_exactly(to, 4))
    return protocol.recv_exactly(to, n)


def test_an_altered_frame_is_refused(pair: Any) -> None:
    (mch, _), wch = _handshake(pair)
    m, w = pair
    frame = bytearray(_intercept(mch, w, {"t": "task", "id": 1, "payload": 1}))
    frame[frame.index(b"1")] ^= 0x01  # id 1 -> id 0
    protocol.send_frame(m, bytes(frame))  # delivered as if from the master
    with pytest.raises(ProtocolError, match="bad MAC"):
        wch.recv()


def test_a_replayed_or_reflected_frame_is_refused(pair: Any) -> None:
    (mch, _), wch = _handshake(pair)
    m, w = pair
    frame = _intercept(mch, w, {"t": "task", "id": 7, "payload": 1})
    protocol.send_frame(m, frame)
    assert wch.recv()["id"] == 7
    protocol.send_frame(m, frame)  # the same frame again: the worker now expects the next one
    with pytest.raises(ProtocolError, match="bad MAC"):
        wch.recv()
    # reflected: the master's own frame sent back to it, as if from the worker
    protocol.send_frame(w, frame)
    with pytest.raises(ProtocolError, match="bad MAC"):
        mch.recv()


def test_frames_over_their_limit_and_bad_json_are_protocol_errors(pair: Any) -> None:
    m, w = pair
    w.sendall(struct.pack(">I", 1 << 30))
    with pytest.raises(ProtocolError, match="at most 4096"):
        protocol.recv_frame(m, protocol.MAX_HANDSHAKE)
    with pytest.raises(ProtocolError, match="not JSON"):
        protocol.decode(b"{nope")
    with pytest.raises(ProtocolError, match="message object"):
        protocol.decode(b"[1, 2]")


def test_a_closed_peer_is_a_connection_error(pair: Any) -> None:
    m, w = pair
    w.sendall(b"\0\0")
    w.close()
    with pytest.raises(ConnectionError):
        protocol.recv_frame(m, 100)


def test_a_value_json_cannot_carry_sends_nothing(pair: Any) -> None:
    (mch, _), wch = _handshake(pair)
    with pytest.raises(TypeError):
        mch.send({"t": "task", "payload": object()})
    mch.send({"t": "hb"})  # the sequence numbers still agree
    assert wch.recv() == {"t": "hb"}
