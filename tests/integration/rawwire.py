"""The daemons' wire protocol spoken by hand (a 4-byte big-endian length, then JSON), for
tests that send what roost's own client never would: garbage, hostile frames, floods.
With a token, a connection first runs the IDTOKENS handshake (roost.net.auth)."""

from __future__ import annotations

import json
import socket
import struct

from roost.net.auth import ClientHandshake


def frame_bytes(body: bytes) -> bytes:
    """``body`` behind its length header, whatever it holds."""
    return struct.pack(">I", len(body)) + body


def frame(obj: object) -> bytes:
    return frame_bytes(json.dumps(obj).encode())


def read_frame(s: socket.socket) -> dict | None:
    """The next answer; None when the daemon closed before a whole header."""
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


def connect(address: str, token: str | None, timeout: float = 10) -> socket.socket:
    """A raw connection; with ``token``, after the IDTOKENS handshake."""
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=timeout)
    if token is not None:
        hs = ClientHandshake(token)
        s.sendall(frame(hs.hello()))
        challenge = read_frame(s)
        assert challenge is not None and challenge["ok"] is True, challenge
        s.sendall(frame(hs.answer(challenge)))
        done = read_frame(s)
        assert done is not None and done["ok"] is True and done["identity"], done
    return s


def exchange(address: str, payload: bytes, token: str | None = None, timeout: float = 10) -> dict | None:
    """Send ``payload`` (whole frames or not) on a new connection; the first answer."""
    with connect(address, token, timeout) as s:
        s.sendall(payload)
        return read_frame(s)
