"""The wire protocol between a master and its workers: framed JSON, a mutual HMAC
handshake, and a MAC on every frame after it.

Standard library only and no roost import: this file is shipped into each worker
job's sandbox beside ``worker.py`` and run there by the execute host's
``/usr/bin/python3`` (a job runs as an unprivileged user, who cannot read roost's
virtual environment). Kept to Python 3.8 syntax for the same reason.

A frame is a 4-byte big-endian length and that many bytes. The handshake:

1. master -> worker: ``{"t": "hello", "v": 1, "nonce": NM}``
2. worker -> master: ``{"t": "auth", "v": 1, "nonce": NW, "job": ..., "host": ...,
   "mac": HMAC(secret, "roost-mw/1 worker" NM NW job host)}``: the worker proves it
   holds the secret without sending it; the master's fresh nonce stops a replay.
3. Both derive ``key = HMAC(secret, "roost-mw/1 session" NM NW)``. From here every
   frame is JSON followed by ``HMAC(key, direction, sequence number, JSON)`` (32
   bytes): a frame cannot be forged, replayed, reordered or reflected back. The
   master's first session frame (its welcome, carrying the task code) is therefore
   also its proof to the worker: a worker runs no code from a master that does not
   hold the secret.

Nothing is encrypted (the standard library has no cipher): payloads and results
cross the network in the clear. See docs/mw.md.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import struct
import threading
from typing import Any

VERSION = 1
TAG = 32  # bytes of HMAC-SHA256
MAX_HANDSHAKE = 4096  # an unauthenticated peer may not make us buffer more than this
MAX_FRAME = 256 << 20  # a task's payload or result, with its code: generous, but bounded
_LEN = struct.Struct(">I")
_TO_WORKER, _TO_MASTER = b"m2w", b"w2m"


class ProtocolError(Exception):
    """The peer broke the protocol: a bad frame, a bad MAC, the wrong secret."""


def encode(obj: Any) -> bytes:
    """JSON, compact; floats round-trip exactly (``repr``), NaN and infinities allowed."""
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def decode(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"a frame that is not JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("t"), str):
        raise ProtocolError("a frame that is not a message object")
    return obj


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes; ConnectionError when the peer closes first."""
    parts = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise ConnectionError("the peer closed the connection")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(_LEN.pack(len(data)) + data)


def recv_frame(sock: socket.socket, limit: int) -> bytes:
    (n,) = _LEN.unpack(recv_exactly(sock, 4))
    if n > limit:
        raise ProtocolError(f"a frame of {n} bytes (at most {limit} here)")
    return recv_exactly(sock, n)


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"".join(parts), hashlib.sha256).digest()


def worker_proof(secret: bytes, nm: bytes, nw: bytes, job: str, host: str) -> bytes:
    return _mac(secret, b"roost-mw/1 worker\n", nm, nw, job.encode("utf-8"), b"\n", host.encode("utf-8"))


def session_key(secret: bytes, nm: bytes, nw: bytes) -> bytes:
    return _mac(secret, b"roost-mw/1 session\n", nm, nw)


class Channel:
    """An authenticated connection. ``send`` may be called from several threads (the
    heartbeat and the dispatcher share a worker's channel); ``recv`` from one."""

    def __init__(self, sock: socket.socket, key: bytes, outgoing: bytes, incoming: bytes) -> None:
        self.sock = sock
        self._key = key
        self._out, self._in = outgoing, incoming
        self._sent = 0
        self._received = 0
        self._send_lock = threading.Lock()

    def send(self, obj: Any) -> None:
        data = encode(obj)  # before the lock: a value JSON cannot carry fails here, sending nothing
        with self._send_lock:
            tag = _mac(self._key, self._out, struct.pack(">Q", self._sent), data)
            send_frame(self.sock, data + tag)
            self._sent += 1

    def recv(self) -> dict[str, Any]:
        frame = recv_frame(self.sock, MAX_FRAME + TAG)
        if len(frame) < TAG:
            raise ProtocolError("a frame shorter than its MAC")
        data, tag = frame[:-TAG], frame[-TAG:]
        want = _mac(self._key, self._in, struct.pack(">Q", self._received), data)
        if not hmac.compare_digest(tag, want):
            raise ProtocolError("a frame with a bad MAC (wrong secret, or altered on the way)")
        self._received += 1
        return decode(data)

    def abort(self) -> None:
        """Wake whoever is blocked on this connection (recv returns end of file); the
        thread that owns the socket closes it."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def master_handshake(sock: socket.socket, secret: bytes) -> tuple[Channel, dict[str, Any]]:
    """The master's side: the channel and the worker's ``auth`` message (job, host).
    ProtocolError if the peer does not prove the secret."""
    nm = os.urandom(32)
    send_frame(sock, encode({"t": "hello", "v": VERSION, "nonce": nm.hex()}))
    auth = decode(recv_frame(sock, MAX_HANDSHAKE))
    if auth.get("t") != "auth" or auth.get("v") != VERSION:
        raise ProtocolError(f"expected auth version {VERSION}, got {auth.get('t')!r} version {auth.get('v')!r}")
    try:
        nw = bytes.fromhex(str(auth["nonce"]))
        mac = bytes.fromhex(str(auth["mac"]))
        job, host = str(auth["job"]), str(auth["host"])
    except (KeyError, ValueError):
        raise ProtocolError("a malformed auth message") from None
    if len(nw) < 16 or not hmac.compare_digest(mac, worker_proof(secret, nm, nw, job, host)):
        raise ProtocolError("the worker does not hold this master's secret")
    return Channel(sock, session_key(secret, nm, nw), _TO_WORKER, _TO_MASTER), auth


def worker_handshake(sock: socket.socket, secret: bytes, job: str, host: str) -> Channel:
    """The worker's side. The master is proven by the first frame ``recv`` accepts."""
    hello = decode(recv_frame(sock, MAX_HANDSHAKE))
    if hello.get("t") != "hello" or hello.get("v") != VERSION:
        raise ProtocolError(f"not a roost master of protocol version {VERSION}: {hello.get('t')!r}")
    try:
        nm = bytes.fromhex(str(hello["nonce"]))
    except (KeyError, ValueError):
        raise ProtocolError("a malformed hello") from None
    if len(nm) < 16:
        raise ProtocolError("a hello with a short nonce")
    nw = os.urandom(32)
    mac = worker_proof(secret, nm, nw, job, host)
    send_frame(sock, encode({"t": "auth", "v": VERSION, "nonce": nw.hex(), "job": job, "host": host, "mac": mac.hex()}))
    return Channel(sock, session_key(secret, nm, nw), _TO_MASTER, _TO_WORKER)
