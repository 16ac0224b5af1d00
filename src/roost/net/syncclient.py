"""The blocking client for command-line tools: plain sockets, no asyncio, no ClassAds.

Importing this module costs only ``socket``, ``json`` and ``struct`` (the
``roost q`` latency budget is a few tens of milliseconds, and asyncio alone
costs more than that to import).
"""

from __future__ import annotations

import io
import os
import select
import socket
from typing import TYPE_CHECKING, Any

from roost.net import framing
from roost.net.addresses import parse_address
from roost.net.errors import CallTimeout, ProtocolError, RemoteError, transport_failure

if TYPE_CHECKING:
    from collections.abc import Sequence

    from roost.net.tls import ClientTLS

__all__ = ["SyncClient", "RemoteError", "CallTimeout"]


class SyncClient:
    """A persistent blocking connection to one daemon (``host:port`` or ``unix:/path``).

    Not thread-safe: one client per thread. Every new TCP connection starts TLS
    where ``tls`` wants it (:mod:`roost.net.tls`), then proves an identity with what
    it holds (a certificate, ``token``: :mod:`roost.net.auth`); a Unix socket needs
    none of that (the kernel tells the daemon who we are).
    """

    def __init__(
        self, address: str, timeout: float | None = 30.0, connect_timeout: float = 5.0,
        token: str | Sequence[str] | None = None, tls: ClientTLS | None = None, expect_identity: str | None = None,
    ) -> None:
        self.address = address
        self.token = token
        self.tls = tls
        #: the identity the daemon must say it authenticated (``token``'s subject when
        #: acting for its holder): any other is refused, whatever method proved it
        self.expect_identity = expect_identity
        #: who the daemon says we are, after the handshake (None: not authenticated)
        self.identity: str | None = None
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._sock: socket.socket | None = None
        self._rfile: io.BufferedReader | None = None

    # -- connection --------------------------------------------------------
    def connect(self) -> None:
        if self._sock is not None and not self._stale():
            return
        self.close()
        if self.address.startswith("fd:"):
            self._inherit(self.address[3:])
            return
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
        if kind != "unix" and (self.token is not None or self.tls is not None):
            assert isinstance(where, tuple)
            try:
                self._secure(where[0])
            except BaseException:
                self.close()
                raise

    def _inherit(self, fd: str) -> None:
        """``fd:N``: a connection our parent made for us (a scheduler-universe job's
        channel to its schedd, already speaking for the job's owner)."""
        try:
            sock = socket.socket(fileno=os.dup(int(fd)))
        except (ValueError, OSError) as e:
            raise ConnectionError(f"no inherited connection on fd {fd}: {e}") from None
        sock.settimeout(self.timeout)
        self._sock = sock
        self._rfile = sock.makefile("rb")

    def _secure(self, host: str) -> None:
        """STARTTLS where wanted, then each authentication method this client can use;
        RemoteError(AUTH_FAILED) naming why each failed."""
        # lazy: TLS, hashing and the handshake load only for a client that goes beyond a Unix socket
        from roost.net.auth import AuthError, client_methods
        from roost.net.tls import binding_of, cert_refused_hint, client_context, describe_ssl_error

        assert self._sock is not None
        binding, on_tls, refused, tls = "", False, False, self.tls
        if tls is not None and tls.wanted(host):
            self._sock.sendall(framing.encode({"cmd": "STARTTLS"}))
            reply = self.recv()
            if reply.get("ok") is True:
                ctx = client_context(tls)
                try:
                    sock = ctx.wrap_socket(self._sock, server_hostname=host if ctx.check_hostname else None)
                except OSError as e:
                    if transport_failure(e):
                        raise  # the daemon went away mid-handshake: the caller's retry, not AUTH_FAILED
                    raise RemoteError("AUTH_FAILED", f"{self.address}: {describe_ssl_error(e)}") from None
                if self._rfile is not None:
                    self._rfile.close()
                self._sock, self._rfile = sock, sock.makefile("rb")
                binding, on_tls = binding_of(sock.getpeercert(binary_form=True)), True
            elif tls.required:
                raise RemoteError("AUTH_FAILED", f"SSL: {self.address} does not start TLS "
                                  f"({reply.get('error')}) and SEC_DEFAULT_ENCRYPTION = REQUIRED here")
            else:
                refused = True
        steps = client_methods(self.token, tls=on_tls, has_cert=bool(tls and tls.has_cert), binding=binding,
                           methods=tls.methods if tls is not None else ("IDTOKENS",),
                           kerberos_service=tls.kerberos_target(host) if tls is not None else None,
                           refused_tls=refused, peer=self.address)
        try:
            req = next(steps)
            while True:
                self._sock.sendall(framing.encode(req))
                try:
                    reply = self.recv()
                except ConnectionError as e:
                    if on_tls:  # a refused client certificate shows up as the first read failing
                        raise RemoteError("AUTH_FAILED", cert_refused_hint(str(e), tls)) from None
                    raise
                req = steps.send(reply)
        except StopIteration as done:
            self.identity = done.value
            if self.expect_identity is not None and self.identity != self.expect_identity:
                raise RemoteError("AUTH_FAILED", f"{self.address} authenticated us as {self.identity!r}, "
                                  f"not as the token's {self.expect_identity!r}") from None
            return
        except AuthError as e:
            raise RemoteError("AUTH_FAILED", str(e)) from None

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
            if type(e).__name__.startswith("SSL"):
                # lazy: only a TLS connection gets here, and it has loaded ssl already
                from roost.net.tls import describe_ssl_error

                raise ConnectionError(f"{self.address}: {describe_ssl_error(e)}") from None
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

    def raw_socket(self) -> socket.socket:
        """The connected socket itself, for a connection that a response has switched to
        raw bytes both ways (``roost ssh_to_job``'s relay, :mod:`roost.net.relay`). Only
        once the peer has sent nothing after that response (it waits for our first
        packet), so the frame reader holds no bytes the socket would not show."""
        if self._sock is None:
            raise ConnectionError(f"not connected to {self.address}")
        return self._sock

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
