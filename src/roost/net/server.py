"""The asyncio side of a daemon: accept connections, read frames, dispatch ``cmd``.

One task per connection reads a request, awaits its handler and writes the
response before reading the next request, so responses come back in order.
A handler's ``RequestError`` becomes ``{"ok": false, "code", "error"}``; any
other exception is logged with its traceback and answered ``INTERNAL``: a
daemon never dies of a request. A framing error is answered, then the
connection is closed (the byte stream can no longer be trusted).

Handlers that stream bulk bytes after their JSON answer (file transfer) send
the answer themselves with ``await peer.respond(obj)``, then use
``peer.reader``/``peer.writer``; the server then writes nothing more for that
request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
import os
import re
import socket
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from roost.net import framing
from roost.net.admission import Admission
from roost.net.auth import (
    AuthError,
    DelegatedAuthority,
    DelegatedState,
    Identity,
    KerberosSettings,
    ServerState,
    TokenAuthority,
    delegated_finish,
    kerberos_accept,
    plain_binding,
    server_challenge,
    server_finish,
)
from roost.net.errors import ProtocolError, RequestError
from roost.net.protocol import SCHEMAS, Schema, validate
from roost.net.tls import ServerTLS, describe_ssl_error, subject_dn

log = logging.getLogger(__name__)

_PEERCRED = struct.Struct("3i")
_user_names: dict[int, str] = {}


_CARET = re.compile(r"^\s*\^+\s*$")
_POSITION = re.compile(r"(^|\D)\d+:\d+\b|\bline \d+|\bcolumn \d+")


def one_line(message: str) -> str:
    """An error message as the one line docs/protocol.md promises.

    Parser errors (ClassAd syntax and the like) carry a source excerpt with a
    caret under the fault on the lines after the first; the first line names
    the position (``line:column: what``). Keep that line; where it names no
    position but a caret shows one, add the column; drop the excerpt.
    """
    if "\n" not in message and "\r" not in message:
        return message
    lines = [ln for ln in message.splitlines() if ln.strip()]
    if not lines:
        return ""
    first = lines[0].strip()
    if not _POSITION.search(first):
        for ln in lines[1:]:
            if _CARET.match(ln):
                first += f" (at column {ln.index('^') + 1})"
                break
    return first


def _error(code: str, message: str) -> bytes:
    return framing.encode(framing.error_response(code, one_line(message)))


def _buffered(reader: asyncio.StreamReader) -> bool:
    """Whether ``reader`` holds bytes not yet read (asyncio keeps them in ``_buffer``)."""
    return bool(getattr(reader, "_buffer", b""))


def _user_name(uid: int) -> str:
    name = _user_names.get(uid)
    if name is None:
        try:
            # lazy: pwd is Unix-only; a peer's uid is only named on a Unix socket
            import pwd

            name = pwd.getpwuid(uid).pw_name
        except (KeyError, ImportError):
            name = str(uid)
        _user_names[uid] = name
    return name


class Peer:
    """The other end of one connection, as handlers see it.

    ``uid``/``user`` are set only for Unix-socket peers (SO_PEERCRED: the
    kernel's word, HTCondor's FS authentication); ``address`` is
    ``host:port`` for TCP peers and ``unix:`` + our socket path otherwise;
    ``host`` the peer's IP (``unix`` for a local socket). ``identity`` is who the
    peer has proved to be (:mod:`roost.net.auth`), None while it has not.
    ``tls`` is True once the connection runs TLS (``STARTTLS``); ``subject`` is then
    the DN of the client certificate it verified, if the client showed one.
    """

    __slots__ = ("address", "host", "uid", "user", "pid", "identity", "reader", "writer", "responded",
                 "state", "tls", "subject", "binding", "_on_close", "_handshake", "_counted", "_heard",
                 "_local")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.uid: int | None = None
        self.user: str | None = None
        self.pid: int | None = None
        self.identity: Identity | None = None
        self._handshake: Any = None  # a handshake's state between its messages
        self.host = "unix"
        self.tls = False
        self.subject: str | None = None
        self.binding = ""  # the channel binding of the certificate this connection's TLS showed
        self.responded = False
        self._counted = False  # among the server's unauthenticated connections (Admission)
        self._heard = False  # has sent a whole frame header
        self._local = False  # among its local user's Unix-socket connections (Server.local)
        self.state: dict[str, Any] = {}  # per-connection state a handler may keep
        self._on_close: list[Callable[[], None]] = []
        sock = writer.get_extra_info("socket")
        peername = writer.get_extra_info("peername")
        if sock is not None and sock.family == socket.AF_UNIX:
            self.address = "unix:" + str(writer.get_extra_info("sockname") or "")
            with contextlib.suppress(OSError):
                pid, uid, _gid = _PEERCRED.unpack(
                    sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
                )
                self.pid, self.uid, self.user = pid, uid, _user_name(uid)
        elif isinstance(peername, tuple):
            host, port = peername[0], peername[1]
            self.host = host
            self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        else:
            self.address = str(peername)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once when this connection ends (closed by the peer,
        a framing error, or the server shutting down): for per-connection state
        that must not outlive it, such as the schedd's NEW_CLUSTER reservations."""
        self._on_close.append(callback)

    def _closed(self) -> None:
        callbacks, self._on_close = self._on_close, []
        for cb in callbacks:
            try:
                cb()
            except Exception:
                log.exception("close callback for %s failed", self.address)

    async def respond(self, obj: dict[str, Any]) -> None:
        """Send this request's response now (before streaming bytes after it)."""
        out = {"ok": True}
        out.update(obj)
        self.writer.write(framing.encode(out))
        self.responded = True
        await self.writer.drain()

    async def send_bytes(self, data: bytes | bytearray | memoryview) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_exactly(self, n: int) -> bytes:
        return await self.reader.readexactly(n)

    def __repr__(self) -> str:
        who = f" user={self.user}" if self.user else ""
        return f"<Peer {self.address}{who}>"


#: the largest frame a peer that has not authenticated may send (AUTH, STARTTLS, READ
#: queries): a stranger cannot make a daemon hold more than this per connection
UNAUTHENTICATED_FRAME = 1 << 20
#: seconds a frame's body may go without a byte (per 1 MiB piece) once its header has come
FRAME_TIMEOUT = 60.0
#: seconds a connection that has not authenticated may sit without sending a whole
#: frame header (idle, or stopped mid-header) before it is closed: hundreds of them
#: cost a daemon little, and none stays for ever (UNAUTHENTICATED_IDLE_TIMEOUT)
IDLE_TIMEOUT = 300.0
#: seconds a connection that has not authenticated may take to send its first frame
#: header (UNAUTHENTICATED_FIRST_FRAME_TIMEOUT): a tool sends one at once, a socket
#: opened only to hold a file descriptor sends none
FIRST_FRAME_TIMEOUT = 20.0
#: the kernel's queue of connections not yet accepted (SOCKET_LISTEN_BACKLOG): deep
#: enough that a daemon's or a tool's connection is not dropped (and retried a second
#: later) while a flood of others waits to be accepted and closed
LISTEN_BACKLOG = 1024
#: closes of unauthenticated connections after which the freed memory goes back to the
#: system (gc, then malloc_trim): a burst of 20,000 otherwise left the collector at 134 MB
_TRIM_AFTER = 256
#: the least seconds between two such trims
TRIM_INTERVAL = 60.0
#: a local user's Unix-socket connections at once (MAX_CONNECTIONS_PER_LOCAL_USER)
MAX_PER_LOCAL_USER = 256
_OWN_UID = os.geteuid()
_BODY_CHUNK = 1 << 20

Handler = Callable[[dict[str, Any], Peer], Awaitable[dict[str, Any] | None]]
#: (peer, command, request) -> None to let the command run, else why it may not
Authorize = Callable[[Peer, str, dict[str, Any]], str | None]


class Server:
    """A running server: one handler table, one or two listening sockets."""

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        schemas: Mapping[str, Schema],
        *,
        authority: TokenAuthority | DelegatedAuthority | None = None,
        authorize: Authorize | None = None,
        uid_domain: str | None = None,
        tls: ServerTLS | None = None,
        kerberos: KerberosSettings | None = None,
        max_frame: int = framing.MAX_FRAME,
        idle_timeout: float = IDLE_TIMEOUT,
        first_frame_timeout: float = FIRST_FRAME_TIMEOUT,
        admission: Admission | None = None,
        backlog: int = LISTEN_BACKLOG,
        max_per_local_user: int = MAX_PER_LOCAL_USER,
    ) -> None:
        self.handlers = dict(handlers)
        self.max_frame = max_frame
        self.frame_timeout = FRAME_TIMEOUT
        self.idle_timeout = idle_timeout
        self.first_frame_timeout = first_frame_timeout
        #: the TCP connections that have not authenticated, idlest first (bounded)
        self.admission = admission if admission is not None else Admission()
        #: each local user's Unix-socket connections, idlest first: the socket is open to
        #: every account (FS), so one of them must not hold the daemon's descriptors
        #: (root and the daemon's own account are not counted)
        self.local = Admission(0, max_per_local_user)
        self._last_trim = -TRIM_INTERVAL
        self.backlog = backlog
        self._evicted = 0  # idle unauthenticated connections closed since the last log line
        self._evict_logged = 0.0
        self._closed_unauth = 0  # ... closed since the last trim
        self._trim_pending = False
        self.tls = tls
        self.kerberos = kerberos
        self.authority = authority
        self.authorize = authorize
        self.uid_domain = uid_domain
        self.schemas = dict(SCHEMAS)
        self.schemas.update(schemas)
        self.tcp_address: str | None = None
        self.unix_path: str | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._conns: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        """The address others should use: ``host:port`` if listening on TCP, else ``unix:path``."""
        if self.tcp_address:
            return self.tcp_address
        if self.unix_path:
            return "unix:" + self.unix_path
        raise RuntimeError("server is not listening")

    async def _start(self, host: str | None, port: int, unix_path: str | None) -> None:
        if host is not None:
            srv = await asyncio.start_server(self._connection, host, port, reuse_address=True,
                                             backlog=self.backlog)
            self._servers.append(srv)
            h, p = srv.sockets[0].getsockname()[:2]
            self.tcp_address = f"[{h}]:{p}" if ":" in h else f"{h}:{p}"
        if unix_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(unix_path)  # a stale socket from a daemon that died
            srv = await asyncio.start_unix_server(self._connection, unix_path, backlog=self.backlog)
            # Open to every local account, as HTCondor's FS-authenticated sockets: the
            # kernel names each peer's uid (SO_PEERCRED) and authorization decides by that
            # identity, so the mode grants nothing a peer could not ask for over TCP.
            os.chmod(unix_path, 0o666)
            self._servers.append(srv)
            self.unix_path = unix_path

    async def close(self) -> None:
        """Stop listening, end open connections, remove the Unix socket file."""
        for srv in self._servers:
            srv.close()
        for task in list(self._conns):
            task.cancel()
        for srv in self._servers:
            with contextlib.suppress(Exception):
                await srv.wait_closed()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)
        if self.unix_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.unix_path)
        self._servers.clear()

    async def serve_inherited(self, sock: socket.socket, user: str) -> None:
        """Serve one end of a socketpair whose other end a child of ours inherits (a
        scheduler-universe job: DAGMan), as ``user`` (``user@UID_DOMAIN``, FS), whoever
        the kernel says made the pair. Returns when the child closes it."""
        reader, writer = await asyncio.open_connection(sock=sock)
        await self._connection(reader, writer, as_user=user)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          as_user: str | None = None) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        peer: Peer | None = None
        try:
            peer = Peer(reader, writer)
            if as_user is not None:
                peer.uid = peer.pid = None  # not the peer's own credentials: no SUBMIT_TEXT
                peer.user = None
                peer.identity = Identity(f"{as_user}@{self.uid_domain}" if self.uid_domain else as_user, "FS")
            elif peer.user is not None:
                name = f"{peer.user}@{self.uid_domain}" if self.uid_domain else peer.user
                peer.identity = Identity(name, "FS")
                if peer.uid not in (0, _OWN_UID):
                    self._admit_local(peer)
            elif peer.host != "unix":
                self._admit(peer)
            await self._serve_connection(peer)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("connection handler failed")
        finally:
            self._conns.discard(task)
            if peer is not None:
                if peer._counted:
                    self._unadmit(peer, closed=True)
                if peer._local:
                    self.local.forget(peer)
                peer._closed()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_connection(self, peer: Peer) -> None:
        reader, writer = peer.reader, peer.writer
        readexactly = reader.readexactly
        while True:
            try:
                if peer.identity is None:
                    wait = self.idle_timeout
                    if not peer._heard and self.first_frame_timeout > 0:  # never spoke: no longer than one that did
                        wait = min(wait, self.first_frame_timeout) if wait > 0 else self.first_frame_timeout
                    if wait > 0:
                        async with asyncio.timeout(wait):
                            header = await readexactly(framing.HEADER_SIZE)
                    else:
                        header = await readexactly(framing.HEADER_SIZE)
                    peer._heard = True
                    if peer._counted:
                        self.admission.touch(peer)
                else:  # daemons and tools that proved who they are keep their connections
                    header = await readexactly(framing.HEADER_SIZE)
                    if peer._local:
                        self.local.touch(peer)
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    log.info("peer %s closed mid-header", peer.address)
                return
            except TimeoutError:
                log.debug("peer %s sent no frame in time before authenticating; closing", peer.address)
                return
            try:
                if peer.identity is not None:
                    n = framing.body_length(header, self.max_frame, "this daemon's frame limit")
                else:
                    n = framing.body_length(header, min(self.max_frame, UNAUTHENTICATED_FRAME),
                                            "the frame limit before authentication")
                try:  # a body that stops arriving ends the connection (its buffer with it)
                    body = await self._read_body(reader, n)
                except TimeoutError:
                    log.info("peer %s sent part of a frame, then nothing for %g s; closing",
                             peer.address, self.frame_timeout)
                    return
                req = framing.decode_body(body)
                del body
            except ProtocolError as e:
                log.warning("bad frame from %s: %s", peer.address, e)
                writer.write(_error(e.code, str(e)))
                await writer.drain()
                return
            cmd = req.get("cmd")
            if cmd == "STARTTLS":
                if await self._start_tls(peer):
                    continue
                return
            if not peer.tls and self.tls is not None and self.tls.required_for(peer.host):
                writer.write(_error("ENCRYPTION_REQUIRED", f"{cmd}: this daemon takes only TLS connections "
                                    "from other hosts (SEC_DEFAULT_ENCRYPTION = REQUIRED): send STARTTLS first"))
                await writer.drain()
                return
            peer.responded = False
            resp, ok = await self._dispatch(req, peer)
            if peer._counted and peer.identity is not None:
                self._unadmit(peer)  # authenticated: no longer a stranger's connection
            if not peer.responded:
                writer.write(resp)
                await writer.drain()
            elif not ok:
                # The handler answered, then failed mid-stream: the byte stream is
                # out of step, so the only safe thing is to hang up.
                log.warning("%s from %s failed after its response; closing", req.get("cmd"), peer.address)
                return

    def _admit(self, peer: Peer) -> None:
        """Count a new unauthenticated TCP connection; close the idlest ones over the bounds."""
        peer._counted = True
        evicted = self.admission.admit(peer, peer.host)
        if not evicted:
            return
        for old in evicted:
            old._counted = False
            self._closed_unauth += 1
            _abort(old)
        self._evicted += len(evicted)
        now = asyncio.get_running_loop().time()
        if now - self._evict_logged >= 60.0:
            log.warning("closed %d idle unauthenticated connection(s), the latest from %s: at most %d "
                        "(MAX_UNAUTHENTICATED_CONNECTIONS), %d from one host (..._PER_HOST); %d now",
                        self._evicted, peer.host, self.admission.max_total, self.admission.max_per_host,
                        len(self.admission))
            self._evicted, self._evict_logged = 0, now
        self._schedule_trim()

    def _admit_local(self, peer: Peer) -> None:
        """Count a local user's new Unix-socket connection; close that user's idlest ones
        over MAX_CONNECTIONS_PER_LOCAL_USER (never another user's)."""
        peer._local = True
        for old in self.local.admit(peer, str(peer.uid)):
            old._local = False
            log.warning("closed an idle connection of uid %s on %s: at most %d per local user "
                        "(MAX_CONNECTIONS_PER_LOCAL_USER)", peer.uid, self.unix_path, self.local.max_per_host)
            _abort(old)

    def _unadmit(self, peer: Peer, closed: bool = False) -> None:
        peer._counted = False
        self.admission.forget(peer)
        if closed:
            self._closed_unauth += 1
            self._schedule_trim()

    def _schedule_trim(self) -> None:
        if self._closed_unauth >= _TRIM_AFTER and not self._trim_pending:
            self._trim_pending = True
            # a full collection and a trim cost the loop milliseconds on a big heap: once
            # a second after a burst, at most once every TRIM_INTERVAL
            loop = asyncio.get_running_loop()
            loop.call_later(max(1.0, self._last_trim + TRIM_INTERVAL - loop.time()), self._trim)

    def _trim(self) -> None:
        """A second after a burst of closes: give the freed memory back to the system."""
        self._trim_pending = False
        self._closed_unauth = 0
        self._last_trim = asyncio.get_running_loop().time()
        release_memory()

    async def _dispatch(self, req: dict[str, Any], peer: Peer) -> tuple[bytes, bool]:
        """The encoded response to one request (handler errors turned into error
        responses) and whether the handler succeeded."""
        cmd = req.get("cmd")
        try:
            if type(cmd) is not str:
                raise RequestError("BAD_REQUEST", "request has no 'cmd' string")
            if cmd == "AUTH" or cmd == "AUTH_PROOF":
                return framing.encode(await self._authenticate(cmd, req, peer)), True
            handler = self.handlers.get(cmd)
            if handler is None:
                raise RequestError("BAD_REQUEST", f"unknown command {cmd!r}")
            if self.authorize is not None:
                denied = self.authorize(peer, cmd, req)
                if denied is not None:
                    raise RequestError("PERMISSION_DENIED", denied)
            schema = self.schemas.get(cmd)
            if schema:
                validate(cmd, req, schema)
            result = await handler(req, peer)
            out: dict[str, Any] = {"ok": True}
            if result:
                out.update(result)
            return framing.encode(out), True
        except RequestError as e:
            return _error(e.code, e.message), False
        except asyncio.CancelledError:
            raise
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            if peer.responded:
                raise  # our own peer went away mid-stream
            # a daemon this handler depends on could not be reached
            log.warning("%s from %s: %s", cmd, peer.address, e)
            return _error("UNAVAILABLE", f"{cmd}: {e}"), False
        except RecursionError:
            # input nested past the interpreter's stack (a ClassAd or JSON a parser let
            # through): the request's fault, not the daemon's
            log.warning("%s from %s: nested too deeply to handle (RecursionError)", cmd, peer.address)
            return _error("BAD_REQUEST", f"{cmd}: request nested too deeply to handle"), False
        except Exception as e:
            log.exception("%s from %s failed", cmd, peer.address)
            message = f"{cmd}: internal error: {type(e).__name__}: {e}"
            return _error("INTERNAL", message), False


    async def _read_body(self, reader: asyncio.StreamReader, n: int) -> bytes:
        """``n`` bytes; TimeoutError when none arrive for ``frame_timeout`` seconds (a
        stall, not a slow link: a 64 MiB SUBMIT may take its time)."""
        if n <= _BODY_CHUNK:
            async with asyncio.timeout(self.frame_timeout):
                return await reader.readexactly(n)
        parts = []
        left = n
        while left:
            async with asyncio.timeout(self.frame_timeout):
                part = await reader.readexactly(min(left, _BODY_CHUNK))
            parts.append(part)
            left -= len(part)
        return b"".join(parts)

    async def _start_tls(self, peer: Peer) -> bool:
        """Answer ``STARTTLS`` and run the server's side of the handshake; False when
        the connection must end (the handshake failed)."""
        tls = self.tls
        if tls is None or peer.tls or peer.host == "unix" or tls.encryption == "NEVER":
            why = "already TLS" if peer.tls else "this daemon offers no TLS here"
            peer.writer.write(_error("TLS_UNAVAILABLE", f"STARTTLS: {why}"))
            await peer.writer.drain()
            return True
        if _buffered(peer.reader):
            # bytes sent in the clear after STARTTLS would be read as if they came over
            # TLS (a command injected on the path): the client must wait for our ok
            log.warning("%s sent data after STARTTLS before the TLS handshake; closing", peer.address)
            return False
        peer.writer.write(framing.encode({"ok": True}))
        try:
            await peer.writer.start_tls(tls.context, ssl_handshake_timeout=10.0)
        except (OSError, TimeoutError) as e:  # ssl.SSLError is an OSError
            log.info("TLS handshake with %s failed: %s", peer.address, describe_ssl_error(e))
            return False
        peer.tls, peer.binding = True, tls.binding
        sslobj = peer.writer.get_extra_info("ssl_object")
        cert = sslobj.getpeercert() if sslobj is not None else None
        peer.subject = subject_dn(cert) if cert else None
        return True

    def _offers_tls(self, peer: Peer) -> bool:
        """Whether this daemon would run TLS with ``peer`` if asked (STARTTLS)."""
        return self.tls is not None and self.tls.encryption != "NEVER" and peer.host != "unix"

    async def _authenticate(self, cmd: str, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """One step of the handshake of :mod:`roost.net.auth`; RequestError(AUTH_FAILED)
        with the one-line reason when it fails (the connection stays usable)."""
        try:
            pending, peer._handshake = peer._handshake, None
            if cmd == "AUTH" and req.get("method") == "KERBEROS":
                if self.kerberos is None:
                    raise AuthError("KERBEROS: this daemon takes no Kerberos (no KERBEROS_SERVER_KEYTAB, "
                                    "or KERBEROS is not in its SEC_DEFAULT_AUTHENTICATION_METHODS)")
                acceptor = pending if hasattr(pending, "step") else None
                reply, peer._handshake, ident = kerberos_accept(req, self.kerberos, peer.binding, acceptor)
                if peer._handshake is not None and peer._handshake is not acceptor:
                    peer.on_close(peer._handshake.close)  # a context left half-made goes with the connection
                if ident is not None:
                    peer.identity = ident
                return {"ok": True, **reply}
            if hasattr(pending, "close"):
                pending.close()  # a Kerberos context another method replaces
            if cmd == "AUTH" and req.get("method") == "SSL":
                peer.identity = self._ssl_identity(peer)
                return {"ok": True, "identity": peer.identity.name}
            if self.authority is None:
                raise AuthError("IDTOKENS: this server takes no tokens (it authenticates local peers only)")
            if cmd == "AUTH":
                offered = self._offers_tls(peer)
                binding = peer.binding if peer.tls else plain_binding(offered)
                if isinstance(self.authority, DelegatedAuthority):  # a host without the pool key
                    reply, peer._handshake = await self.authority.challenge(req, binding)
                else:
                    reply, peer._handshake = server_challenge(req, self.authority, binding)
                if not peer.tls:
                    reply["tls"] = offered  # inside the proofs: a client whose STARTTLS was stripped sees it
                return {"ok": True, **reply}
            if isinstance(pending, DelegatedState):
                peer.identity = delegated_finish(req, pending)
            elif isinstance(pending, ServerState):
                peer.identity = server_finish(req, pending)
            else:
                raise AuthError("AUTH_PROOF without an AUTH before it on this connection")
            return {"ok": True, "identity": peer.identity.name}
        except AuthError as e:
            log.info("authentication of %s failed: %s", peer.address, e)
            raise RequestError("AUTH_FAILED", str(e)) from None

    def _ssl_identity(self, peer: Peer) -> Identity:
        if not peer.tls:
            raise AuthError("SSL: this connection is not TLS (send STARTTLS first)")
        if peer.subject is None:
            raise AuthError("SSL: no client certificate was verified on this connection "
                            "(none shown, or this daemon trusts no CA for clients: AUTH_SSL_SERVER_CAFILE)")
        mapper = self.tls.map_subject if self.tls is not None else None
        if mapper is None:
            raise AuthError(f"SSL: no CERTIFICATE_MAPFILE here to map {peer.subject!r}")
        return Identity(mapper(peer.subject), "SSL")


_libc: Any = None


def _abort(peer: Peer) -> None:
    """Close a connection over a bound at once: the fd is free now, not after a close
    handshake; its task sees EOF."""
    transport = peer.writer.transport
    if transport is not None:
        transport.abort()


def release_memory() -> None:
    """Collect cycles, then hand the C heap's free pages back to the kernel (glibc's
    ``malloc_trim(0)``; elsewhere only the collection). Without it a process that once
    held thousands of connections keeps their memory in its heap for good."""
    global _libc
    gc.collect()
    if _libc is None:
        name = ctypes.util.find_library("c")
        try:
            lib = ctypes.CDLL(name) if name else None
            _libc = lib if lib is not None and hasattr(lib, "malloc_trim") else False
        except OSError:
            _libc = False
    if _libc:
        _libc.malloc_trim(0)


async def serve(
    handlers: Mapping[str, Handler],
    *,
    host: str | None = None,
    port: int = 0,
    unix_path: str | None = None,
    schemas: Mapping[str, Schema] | None = None,
    authority: TokenAuthority | DelegatedAuthority | None = None,
    authorize: Authorize | None = None,
    uid_domain: str | None = None,
    tls: ServerTLS | None = None,
    kerberos: KerberosSettings | None = None,
    max_frame: int = framing.MAX_FRAME,
    idle_timeout: float = IDLE_TIMEOUT,
    first_frame_timeout: float = FIRST_FRAME_TIMEOUT,
    admission: Admission | None = None,
    backlog: int = LISTEN_BACKLOG,
    max_per_local_user: int = MAX_PER_LOCAL_USER,
) -> Server:
    """Start serving ``handlers`` (cmd → async handler(req, peer) → result dict).

    Listens on TCP ``host:port`` (port 0: the kernel picks; see ``server.address``)
    and/or the Unix socket ``unix_path``. ``schemas`` adds or overrides argument
    schemas (see ``roost.net.protocol``). ``max_frame``: the largest request frame
    an authenticated peer may send (a peer that has not: UNAUTHENTICATED_FRAME).
    ``admission`` bounds the TCP connections that have not authenticated (closing the
    idlest); ``backlog`` is the listen queue's depth; ``max_per_local_user`` bounds each
    local user's Unix-socket connections.
    """
    if host is None and unix_path is None:
        host = "127.0.0.1"
    server = Server(handlers, schemas or {}, authority=authority, authorize=authorize, uid_domain=uid_domain,
                    tls=tls, kerberos=kerberos, max_frame=max_frame, idle_timeout=idle_timeout,
                    first_frame_timeout=first_frame_timeout, admission=admission, backlog=backlog,
                    max_per_local_user=max_per_local_user)
    await server._start(host, port, unix_path)
    return server
