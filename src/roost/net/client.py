"""The asyncio client: one persistent connection per peer, shared by concurrent callers.

``await client.call(cmd, **args)`` sends one request and returns the result
(``ok`` removed). Calls are serialised by a lock so concurrent tasks never
interleave frames; a connection the peer closed while idle is noticed and
replaced before the next call. A request that fails in flight is not retried
(it may have been executed); the caller sees ``ConnectionError`` and the next
call reconnects.

For bulk bytes, ``async with client.stream() as conn`` holds the connection
for a request, its response and the raw bytes around them.

Because calls on one client are serialised, a call that may block for long
(``WAIT_JOBS``) belongs on a client of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

from roost.net import framing
from roost.net.addresses import parse_address
from roost.net.auth import AuthError, client_methods
from roost.net.errors import (
    CallTimeout,
    ConnectTimeout,
    NotConnected,
    ProtocolError,
    RemoteError,
    transport_failure,
)
from roost.net.tls import (
    ClientTLS,
    binding_of,
    cert_refused_hint,
    client_context,
    describe_ssl_error,
)


def _raise_remote(resp: dict[str, Any]) -> None:
    raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "request refused"))


class Connection:
    """One open connection (held exclusively inside ``AsyncClient.stream()``)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str) -> None:
        self.reader = reader
        self.writer = writer
        self.address = address

    def usable(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())

    async def send(self, obj: dict[str, Any]) -> None:
        """Send one frame."""
        self.writer.write(framing.encode(obj))
        await self.writer.drain()

    async def recv(self) -> dict[str, Any]:
        """Read one frame; ConnectionError if the peer closed."""
        try:
            header = await self.reader.readexactly(framing.HEADER_SIZE)
            n = framing.body_length(header)
            return framing.decode_body(await self.reader.readexactly(n))
        except asyncio.IncompleteReadError:
            raise ConnectionError(f"{self.address} closed the connection") from None
        except ProtocolError as e:
            raise ConnectionError(f"{self.address} sent a bad frame: {e}") from None

    async def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Send a request and return its result; RemoteError if refused."""
        req = {"cmd": cmd}
        req.update(args)
        await self.send(req)
        resp = await self.recv()
        if resp.get("ok") is not True:
            _raise_remote(resp)
        resp.pop("ok", None)
        return resp

    async def send_bytes(self, data: bytes | bytearray | memoryview) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_exactly(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except asyncio.IncompleteReadError:
            raise ConnectionError(f"{self.address} closed the connection mid-transfer") from None

    def close(self) -> None:
        self.writer.close()


async def open_connection(
    address: str, timeout: float = 5.0, token: str | Sequence[str] | None = None, tls: ClientTLS | None = None
) -> Connection:
    """Connect to ``host:port`` or ``unix:/path``; ConnectionError on failure.

    A TCP connection then starts TLS where ``tls`` wants it (:mod:`roost.net.tls`) and
    proves an identity with what it holds (a certificate, ``token``:
    :mod:`roost.net.auth`); RemoteError(AUTH_FAILED) naming each method's failure
    when the daemon accepts none."""
    try:
        kind, where = parse_address(address)
    except ValueError as e:
        raise ConnectionError(str(e)) from None
    try:
        async with asyncio.timeout(timeout):
            if kind == "unix":
                assert isinstance(where, str)
                reader, writer = await asyncio.open_unix_connection(where)
            else:
                assert isinstance(where, tuple)
                reader, writer = await asyncio.open_connection(where[0], where[1])
    except TimeoutError:
        raise ConnectTimeout(f"connecting to {address} timed out after {timeout:g} s") from None
    except OSError as e:
        err = NotConnected(f"cannot connect to {address}: {e.strerror or e}")
        err.errno = e.errno  # EMFILE and the like: a shortage here, not a peer's fault
        raise err from None
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = Connection(reader, writer, address)
    if kind != "unix" and (token is not None or tls is not None):
        assert isinstance(where, tuple)
        try:
            async with asyncio.timeout(timeout):
                await _secure(conn, where[0], token, tls)
        except TimeoutError:
            conn.close()
            raise CallTimeout(f"securing the connection to {address} timed out after {timeout:g} s") from None
        except BaseException:
            conn.close()
            raise
    return conn


async def _secure(conn: Connection, host: str, token: str | Sequence[str] | None, tls: ClientTLS | None) -> None:
    """STARTTLS where wanted, then each authentication method this client can use."""
    binding, on_tls, refused = "", False, False
    if tls is not None and tls.wanted(host):
        await conn.send({"cmd": "STARTTLS"})
        reply = await conn.recv()
        if reply.get("ok") is True and getattr(conn.reader, "_buffer", b""):
            # more in the clear after the ok would be read as if it came over TLS
            raise RemoteError("AUTH_FAILED", f"SSL: {conn.address} sent data in the clear after agreeing to "
                              "start TLS (someone on the path?)")
        if reply.get("ok") is True:
            ctx = client_context(tls)
            try:
                await conn.writer.start_tls(ctx, server_hostname=host if ctx.check_hostname else None,
                                            ssl_handshake_timeout=10.0)
            except (OSError, TimeoutError) as e:
                if transport_failure(e):
                    raise  # the daemon went away mid-handshake (killed, restarted): try again later
                raise RemoteError("AUTH_FAILED", f"{conn.address}: {describe_ssl_error(e)}") from None
            sslobj = conn.writer.get_extra_info("ssl_object")
            binding, on_tls = binding_of(sslobj.getpeercert(binary_form=True) if sslobj else None), True
        elif tls.required:
            raise RemoteError("AUTH_FAILED", f"SSL: {conn.address} does not start TLS ({reply.get('error')}) "
                              "and SEC_DEFAULT_ENCRYPTION = REQUIRED here")
        else:
            refused = True
    ktarget = None
    if tls is not None and "KERBEROS" in tls.methods:  # a reverse lookup may block: not in the loop
        ktarget = tls.kerberos_principal or await asyncio.to_thread(tls.kerberos_target, host)
    steps = client_methods(token, tls=on_tls, has_cert=bool(tls and tls.has_cert), binding=binding,
                           methods=tls.methods if tls is not None else ("IDTOKENS",),
                           kerberos_service=ktarget, refused_tls=refused, peer=conn.address)
    try:
        req = next(steps)
        while True:
            await conn.send(req)
            try:
                reply = await conn.recv()
            except OSError as e:
                if on_tls:  # a refused client certificate shows up as the first read failing
                    raise RemoteError("AUTH_FAILED", cert_refused_hint(f"{conn.address}: {_ssl_cause(e)}", tls)) from None
                raise
            req = steps.send(reply)
    except StopIteration:
        return
    except AuthError as e:
        raise RemoteError("AUTH_FAILED", str(e)) from None


def _ssl_cause(e: BaseException) -> str:
    """What ended a TLS connection during authentication, in one line."""
    if not isinstance(e, ConnectionError) or "SSL" in type(e).__name__:
        return describe_ssl_error(e)
    cause = e.__cause__ or e.__context__
    return describe_ssl_error(cause) if cause is not None else str(e)


class AsyncClient:
    """A persistent, reconnecting connection to one daemon."""

    def __init__(
        self, address: str, *, timeout: float = 30.0, connect_timeout: float = 5.0, token: str | Sequence[str] | None = None,
        tls: ClientTLS | None = None,
    ) -> None:
        self.address = address
        self.token = token
        self.tls = tls
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._conn: Connection | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> Connection:
        conn = self._conn
        if conn is not None and conn.usable():
            return conn
        if conn is not None:
            conn.close()
        self._conn = None
        conn = await open_connection(self.address, self.connect_timeout, self.token, self.tls)
        self._conn = conn
        return conn

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def busy(self) -> bool:
        """True while a call or a stream holds the connection."""
        return self._lock.locked()

    def dropped(self) -> bool:
        """True if the peer closed our idle connection (e.g. it restarted)."""
        return self._conn is not None and not self._conn.usable()

    async def call(self, cmd: str, *, _timeout: float | None = None, **args: Any) -> dict[str, Any]:
        """Send ``{"cmd": cmd, **args}`` and return the result without ``ok``.

        Raises RemoteError when refused, ConnectionError (CallTimeout on timeout)
        when the daemon cannot be reached or does not answer.
        """
        timeout = self.timeout if _timeout is None else _timeout
        async with self._lock:
            conn = await self._connection()
            try:
                async with asyncio.timeout(timeout):
                    return await conn.request(cmd, **args)
            except RemoteError:
                raise
            except TimeoutError:
                self._drop()
                raise CallTimeout(f"{cmd} to {self.address}: no answer in {timeout:g} s") from None
            except (OSError, ConnectionError) as e:
                self._drop()
                if isinstance(e, ConnectionError) and str(e).startswith(self.address):
                    raise
                raise ConnectionError(f"{cmd} to {self.address} failed: {e}") from None
            except BaseException:
                self._drop()  # cancelled mid-call: the stream position is unknown
                raise

    @contextlib.asynccontextmanager
    async def stream(self) -> AsyncIterator[Connection]:
        """Hold the connection exclusively (for requests followed or preceded by raw bytes).

        Any exception inside drops the connection, since a half-done transfer
        leaves the stream unusable.
        """
        async with self._lock:
            conn = await self._connection()
            try:
                yield conn
            except RemoteError:
                raise
            except BaseException:
                self._drop()
                raise

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await conn.writer.wait_closed()

    def __repr__(self) -> str:
        return f"<AsyncClient {self.address}>"
