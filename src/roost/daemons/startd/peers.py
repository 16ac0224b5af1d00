"""Connections from the startd's starters to schedds, by address, shared by every job.

A separate piece because it is the daemon's, not one job's: the startd makes one
``Peers`` and hands it to each ``Starter`` for its file transfers and reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from roost.net.client import Connection, open_connection
from roost.net.errors import RemoteError

log = logging.getLogger(__name__)

CALL_TIMEOUT = 60.0  # seconds for one request (a transfer gets ten times that)
#: idle connections kept per schedd: a burst of starts opens one per concurrent exchange
#: (hundreds), and keeping them all held a descriptor per job long after it (issue 27);
#: as many as may be busy at once (MAX_BUSY): fewer closed connections a burst had just
#: opened, and across hosts each new one is a TLS handshake: at 10,000 jobs on 4 hosts
#: the schedd, busy, let thousands of them time out and the starts stalled
MAX_IDLE = 64
#: exchanges at once with one schedd; more wait their turn. Unbounded, a burst of 3,000
#: starts opened 3,000 connections at once, past the schedd's 200 unauthenticated ones
#: per host (MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST): it closed them and the starts
#: stalled (issue 27, at 10,000 jobs). A checkpoint upload, which may wait long for the
#: schedd's admission, is not counted (``bounded=False``).
MAX_BUSY = 64


def _reported(update: dict[str, Any]) -> None:
    """One StartLog line per step of a job's life its schedd took (its start, a suspension,
    its end; not the periodic usage reports): what an operator reads, and what a test
    waits on instead of sleeping (tests/daemon_logs.py). A starter reports the start
    only once the job runs and its record is written, so the line says both."""
    if "usage_now" in update:
        return
    state, job = update.get("state"), update.get("job")
    if state == "running":
        log.info("job %s: started, pid %s, record written; reported", job, update.get("pid"))
    else:
        log.info("job %s: %s; reported", job, state)


class Peers:
    """Idle connections to schedds, by address, reused by every starter.

    A connection is held by one starter for one exchange (a request and the
    bytes around it), so a large transfer never delays another job's report.
    """

    def __init__(self, connect_timeout: float = 5.0,
                 credentials: Callable[[], dict[str, Any]] = dict) -> None:
        self._idle: dict[str, list[Connection]] = {}
        self._busy: dict[str, asyncio.Semaphore] = {}
        self.connect_timeout = connect_timeout
        # the startd's token and TLS, used for every new TCP connection (read at each, so
        # RECONFIG's new ones apply)
        self.credentials = credentials

    @contextlib.asynccontextmanager
    async def connection(self, address: str, bounded: bool = True) -> AsyncIterator[Connection]:
        """A connection to ``address`` for one exchange; ``bounded``: one of at most
        MAX_BUSY at once (waits for its turn)."""
        if not bounded:
            async with self._exchange(address) as conn:
                yield conn
            return
        turn = self._busy.get(address)
        if turn is None:
            turn = self._busy[address] = asyncio.Semaphore(MAX_BUSY)
        async with turn, self._exchange(address) as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def _exchange(self, address: str) -> AsyncIterator[Connection]:
        idle = self._idle.get(address)
        conn = None
        while idle:
            c = idle.pop()
            if c.usable():
                conn = c
                break
            c.close()
        if conn is None:
            conn = await open_connection(address, self.connect_timeout, **self.credentials())
        try:
            yield conn
        except RemoteError:
            self._keep(address, conn)
            raise
        except BaseException:
            conn.close()
            raise
        else:
            self._keep(address, conn)

    def _keep(self, address: str, conn: Connection) -> None:
        """Back to the idle ones, unless MAX_IDLE are there already."""
        idle = self._idle.setdefault(address, [])
        if len(idle) < MAX_IDLE:
            idle.append(conn)
        else:
            conn.close()

    async def call(self, address: str, cmd: str, **args: Any) -> dict[str, Any]:
        """One request; a stale idle connection is retried once on a fresh one."""
        for attempt in (0, 1):
            try:
                async with self.connection(address) as conn, asyncio.timeout(CALL_TIMEOUT):
                    got = await conn.request(cmd, **args)
                if cmd == "JOB_UPDATE":
                    _reported(args)
                return got
            except (ConnectionError, OSError):
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        for conns in self._idle.values():
            for c in conns:
                c.close()
        self._idle.clear()
