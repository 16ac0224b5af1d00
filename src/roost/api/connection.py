"""One blocking connection to a pool daemon, with errors turned into the API's own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roost.api.errors import PoolError
from roost.api.home import no_daemon
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

if TYPE_CHECKING:
    from collections.abc import Callable


class RefusedError(PoolError):
    """The daemon refused the request (``ok: false``); ``code`` says why (BAD_REQUEST ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class DaemonConnection:
    """A lazily opened connection to ``daemon`` of the pool at ``home``."""

    def __init__(
        self, home: str, daemon: str, addresses: Callable[[], list[str]], timeout: float | None
    ) -> None:
        self.home = home
        self.daemon = daemon
        # looked up at each (re)connection, not once: a client made before `roost up`
        # (or kept across a daemon's restart on a new port) finds the daemon once it runs
        self.addresses = addresses
        self.timeout = timeout
        self._client: SyncClient | None = None

    def _open(self) -> SyncClient:
        if self._client is not None:
            return self._client
        for address in self.addresses():
            client = SyncClient(address, timeout=self.timeout, connect_timeout=5.0)
            try:
                client.connect()
            except ConnectionError:
                continue  # a stale socket file or address: try the next way in
            self._client = client
            return client
        raise no_daemon(self.home, self.daemon)

    def call(self, cmd: str, **args: Any) -> dict[str, Any]:
        client = self._open()
        try:
            return client.call(cmd, **args)
        except RemoteError as e:
            raise RefusedError(e.code, e.message) from None
        except ConnectionError as e:
            self.close()
            raise PoolError(f"lost the connection to the {self.daemon}: {e}") from None

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
