"""The one Chirp port every job of a startd shares (issue 27: a listening socket per
running job was a descriptor each): a connection's first line, ``cookie C``, names the
job whose server (``chirp.ChirpServer``) takes it over."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import weakref

from roost.daemons.startd.chirp import (
    LINE_MAX,
    ChirpServer,
    identify,
)

log = logging.getLogger(__name__)

#: connections to the shared port that have not presented a job's cookie yet, at once
MAX_UNIDENTIFIED = 256


class SharedListener:
    """One listening socket for every job's Chirp server in a startd: a connection's
    first line, ``cookie C``, names the job whose server takes it over. Jobs are found
    by a digest of their cookie (the lookup reveals nothing of a cookie by its timing);
    a wrong cookie is answered after a second, three end the connection, as a job's
    own server does."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.AbstractServer | None = None
        self._jobs: dict[bytes, ChirpServer] = {}
        self._lock = asyncio.Lock()
        self._unidentified = 0

    @staticmethod
    def _key(cookie: bytes) -> bytes:
        return hashlib.sha256(cookie).digest()

    async def join(self, server: ChirpServer, port: int = 0) -> int:
        """Serve ``server``'s job here; the shared port, or 0 when it cannot be (``port``
        names another one: a job a previous startd started, whose own port stays)."""
        async with self._lock:
            if self._server is None:
                try:
                    self._server = await asyncio.start_server(self._client, "127.0.0.1", port, limit=LINE_MAX + 2)
                except OSError:
                    if port:
                        return 0  # its old port is taken: it gets one of its own
                    raise
                self.port = self._server.sockets[0].getsockname()[1]
        if port and port != self.port:
            return 0
        self._jobs[self._key(server.cookie.encode())] = server
        return self.port

    def leave(self, server: ChirpServer) -> None:
        key = self._key(server.cookie.encode())
        if self._jobs.get(key) is server:
            del self._jobs[key]

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._unidentified >= MAX_UNIDENTIFIED:
            writer.close()
            return
        self._unidentified += 1
        counted = True
        try:
            job = await identify(reader, writer, lambda c: self._jobs.get(self._key(c)), log,
                                 "a chirp client presented a cookie no job has")
            if job is not None:
                self._unidentified -= 1
                counted = False
                await job.serve_identified(reader, writer)
        except (ConnectionError, OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("a chirp connection failed")
        finally:
            if counted:
                self._unidentified -= 1
            writer.close()


#: each event loop's shared listener (a startd has one loop; tests run many)
_LISTENERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SharedListener] = weakref.WeakKeyDictionary()


def shared_listener() -> SharedListener:
    """This event loop's shared Chirp listener (made on first use)."""
    loop = asyncio.get_running_loop()
    got = _LISTENERS.get(loop)
    if got is None:
        got = _LISTENERS[loop] = SharedListener()
    return got
