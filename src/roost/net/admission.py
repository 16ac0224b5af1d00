"""Which connections that have not authenticated a daemon keeps (issue 25).

A stranger's connection costs a daemon a file descriptor, a task and a few buffers
before it has said who it is. One local user once held 20,000 of them open to the
collector: 14,424 fds, 134 MB, and `roost status` took 6 s. So the connections whose
peer has no identity yet (TCP before ``AUTH`` succeeds; Unix-socket peers are known by
SO_PEERCRED at once) are bounded, in total and per peer host, and when a new one
would go over a bound the *idlest* is closed: the one whose last frame (or accept)
is oldest. The newcomer always gets in, so an honest tool that connects and then
authenticates within a round trip is not locked out by a flood of idle sockets, and
a connection that has authenticated is never counted or closed here.

Pure bookkeeping, O(1) per event: two insertion-ordered dicts (Python's ``dict``
keeps insertion order, and delete + re-insert moves a key to the end), no clock.
The caller closes what :meth:`Admission.admit` hands back.
"""

from __future__ import annotations

from collections.abc import Hashable

#: HTCondor has no such knobs; roost's names follow its MAX_* style
DEFAULT_MAX_TOTAL = 1000
DEFAULT_MAX_PER_HOST = 200


class Admission:
    """The unauthenticated connections of one server, idlest first."""

    __slots__ = ("max_total", "max_per_host", "_all", "_by_host")

    def __init__(self, max_total: int = DEFAULT_MAX_TOTAL, max_per_host: int = DEFAULT_MAX_PER_HOST) -> None:
        self.max_total = max_total  # 0 or less: no bound
        self.max_per_host = max_per_host
        self._all: dict[Hashable, str] = {}  # connection -> its host, idlest first
        self._by_host: dict[str, dict[Hashable, None]] = {}  # host -> its connections, idlest first

    def __len__(self) -> int:
        return len(self._all)

    def __contains__(self, conn: Hashable) -> bool:
        return conn in self._all

    def count(self, host: str) -> int:
        """Unauthenticated connections from ``host`` now."""
        return len(self._by_host.get(host, ()))

    def admit(self, conn: Hashable, host: str) -> list[Hashable]:
        """Count a new connection from ``host``; the connections to close to stay within
        the bounds (the idlest of that host first, then the idlest of all), never
        ``conn`` itself."""
        self._all[conn] = host
        mine = self._by_host.get(host)
        if mine is None:
            mine = self._by_host[host] = {}
        mine[conn] = None
        evicted: list[Hashable] = []
        if 0 < self.max_per_host < len(mine):
            while len(mine) > self.max_per_host:
                old = next(iter(mine))
                self.forget(old)
                evicted.append(old)
        if 0 < self.max_total < len(self._all):
            while len(self._all) > self.max_total:
                old = next(iter(self._all))
                self.forget(old)
                evicted.append(old)
        return evicted

    def touch(self, conn: Hashable) -> None:
        """``conn`` sent a frame: it is now the least idle."""
        host = self._all.pop(conn, None)
        if host is None:
            return
        self._all[conn] = host
        mine = self._by_host[host]
        del mine[conn]
        mine[conn] = None

    def forget(self, conn: Hashable) -> None:
        """``conn`` authenticated or closed: no longer counted."""
        host = self._all.pop(conn, None)
        if host is None:
            return
        mine = self._by_host[host]
        del mine[conn]
        if not mine:
            del self._by_host[host]
