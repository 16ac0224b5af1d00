"""The blocking client for command-line tools: plain sockets, no asyncio, no ClassAds.

Importing this module costs only ``socket``, ``json`` and ``struct`` (the
``roost q`` latency budget is a few tens of milliseconds, and asyncio alone
costs more than that to import).
"""

from __future__ import annotations

import io
import select
import socket
from typing import Any

from roost.net import framing
from roost.net.addresses import parse_address
from roost.net.errors import CallTimeout, ProtocolError, RemoteError

__all__ = ["SyncClient", "RemoteError", "CallTimeout"]


class SyncClient:
    """A persistent blocking connection to one daemon (``host:port`` or ``unix:/path``).

    Not thread-safe: one client per thread. With ``token``, every new TCP
    connection first proves the token's identity (:mod:`roost.net.auth`); a Unix
    socket needs none (the kernel tells the daemon who we are).
    """

    def __init__(
        self, address: str, timeout: float | None = 30.0, connect_timeout: float = 5.0,
        token: str | None = None,
    ) -> None:
        self.address = address
        self.token = token
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._rfile: io.BufferedReader | None = None

    # -- connection --------------------------------------------------------
    def connect(self) -> None:
        if self._sock is not None and not self._stale():
            return
        self.close()
        try:
            kind, where = parse_address(self.address)
        except ValueError as e:
            raise ConnectionError(str(e)) from None
        if kind == "unix":
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            assert isinstance(where, tuple)
            family = socket.AF_INET6 if ":" in where[0] else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(where)
        except TimeoutError:
            sock.close()
            raise CallTimeout(f"connecting to {self.address} timed out") from None
        except OSError as e:
            sock.close()
            raise ConnectionError(f"cannot connect to {self.address}: {e.strerror or e}") from None
        sock.settimeout(self.timeout)
        self._sock = sock
        self._rfile = sock.makefile("rb")
        if self.token is not None and kind != "unix":
            self._authenticate(self.token)

    def _authenticate(self, token: str) -> None:
        """The IDTOKENS handshake on a fresh connection; RemoteError(AUTH_FAILED) if refused."""
        # lazy: hashing and the handshake load only for a client that presents a token
        from roost.net.auth import AuthError, ClientHandshake

        assert self._sock is not None
        try:
            hs = ClientHandshake(token)
            self._auth_step(hs.answer(self._auth_step(hs.hello())))
        except AuthError as e:
            self.close()
            raise RemoteError("AUTH_FAILED", str(e)) from None
        except BaseException:
            self.close()
            raise

    def _auth_step(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self._sock is not None
        self._sock.sendall(framing.encode(req))
        reply = self.recv()
        if reply.get("ok") is not True:
            raise RemoteError(str(reply.get("code") or "AUTH_FAILED"), str(reply.get("error") or "refused"))
        return reply

    def _stale(self) -> bool:
        """True if the peer closed an idle connection (readable with nothing pending
        means EOF or reset; no response can be owed between calls)."""
        assert self._sock is not None
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        if self._rfile is not None:
            try:
                self._rfile.close()
            except OSError:
                pass
            self._rfile = None
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- frames ------------------------------------------------------------
    def send(self, obj: dict[str, Any]) -> None:
        """Send one frame (connecting first if needed)."""
        self.connect()
        assert self._sock is not None
        try:
            self._sock.sendall(framing.encode(obj))
        except TimeoutError:
            self.close()
            raise CallTimeout(f"sending to {self.address} timed out") from None
        except OSError as e:
            self.close()
            raise ConnectionError(f"sending to {self.address} failed: {e.strerror or e}") from None

    def recv(self) -> dict[str, Any]:
        """Read one frame."""
        header = self.read_exactly(framing.HEADER_SIZE)
        try:
            n = framing.body_length(header)
            return framing.decode_body(self.read_exactly(n))
        except ProtocolError as e:
            self.close()
            raise ConnectionError(f"{self.address} sent a bad frame: {e}") from None

    def read_exactly(self, n: int) -> bytes:
        """Read exactly n raw bytes (a frame part or bulk bytes after a response)."""
        if self._rfile is None:
            raise ConnectionError(f"not connected to {self.address}")
        try:
            data = self._rfile.read(n)
        except TimeoutError:
            self.close()
            raise CallTimeout(f"{self.address}: no answer in {self.timeout:g} s") from None
        except OSError as e:
            self.close()
            raise ConnectionError(f"reading from {self.address} failed: {e.strerror or e}") from None
        if len(data) != n:
            self.close()
            raise ConnectionError(f"{self.address} closed the connection")
        return data

    def send_bytes(self, data: bytes | bytearray | memoryview) -> None:
        """Send raw bulk bytes (after a request that announced them)."""
        if self._sock is None:
            raise ConnectionError(f"not connected to {self.address}")
        try:
            self._sock.sendall(data)
        except OSError as e:
            self.close()
            raise ConnectionError(f"sending to {self.address} failed: {e.strerror or e}") from None

    # -- calls -------------------------------------------------------------
    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send ``{"cmd": cmd, **args}`` and return the result without ``ok``.

        RemoteError when refused; ConnectionError (CallTimeout on timeout) when
        the daemon cannot be reached or does not answer.
        """
        req = {"cmd": cmd}
        req.update(args)
        self.send(req)
        resp = self.recv()
        if resp.get("ok") is not True:
            raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "request refused"))
        resp.pop("ok", None)
        return resp

    def __repr__(self) -> str:
        return f"<SyncClient {self.address}>"
