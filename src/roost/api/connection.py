"""One blocking connection to a pool daemon, with errors turned into the API's own."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from roost.api.errors import NoPoolError, PoolError
from roost.api.home import no_daemon
from roost.net.addresses import is_loopback
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

if TYPE_CHECKING:
    from collections.abc import Callable

    from roost.net.tls import ClientTLS

_tls_cache: dict[str, ClientTLS | None] = {}


def pool_tokens(home: str) -> list[str]:
    """Every token in the pool's token directory (``$(LOCAL_DIR)/tokens.d``, the default
    ``SEC_TOKEN_DIRECTORY``) that this user may read, in file-name order as HTCondor
    searches them: what a tool presents on a TCP connection, each in turn until a daemon
    honours one (a host in several pools, or flocking between them, holds a token of
    each; a pool refuses another's). The schedd's Unix socket needs none. Read without
    the configuration (``roost q`` must start fast)."""
    directory = os.path.join(home, "tokens.d")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    found: list[str] = []
    for name in names:
        if name.startswith("."):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                found += [line for line in (raw.strip() for raw in f)
                          if line and not line.startswith("#") and line.count(".") == 2]
        except (OSError, UnicodeDecodeError):
            continue
    return found


def pool_token(home: str) -> str | None:
    """The first of :func:`pool_tokens` (what the dashboard's tests hand a browser)."""
    found = pool_tokens(home)
    return found[0] if found else None


def _address_host(address: str) -> str:
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


def client_credentials(home: str, address: str, token: str | None = None) -> dict[str, Any]:
    """What a tool presents on a connection to ``address``: nothing on a Unix socket
    (the kernel says who we are); on TCP ``token`` or the pool token, and to another host TLS and
    the certificate the configuration names (the configuration is read only then:
    ``roost q`` on a personal pool never pays for it)."""
    if address.startswith(("unix:", "fd:")):
        return {}
    creds: dict[str, Any] = {"token": token if token is not None else (pool_tokens(home) or None)}
    # TLS settings (ssl, the configuration) load only for a tool that talks to another
    # host, or to a pool whose daemons have a certificate (SEC_ENCRYPT_LOOPBACK may ask
    # for TLS on loopback too): a personal pool's tools never pay for them
    if not is_loopback(_address_host(address)) or os.path.exists(os.path.join(home, "ssl", "host.crt")):
        creds["tls"] = tool_tls(home)
    if token is not None:
        # someone else's token (the web dashboard acting for its visitor): that token
        # alone, never this process's certificate or Kerberos ticket after it fails, and
        # the daemon must say it authenticated the token's subject
        if creds.get("tls") is not None:
            creds["tls"] = creds["tls"].token_only()
        creds["expect_identity"] = token_subject(token)
    return creds


def token_subject(token: str) -> str:
    """The subject a token names (unverified: the daemon verifies it); PoolError when it
    is not a token."""
    # lazy: token decoding loads only for a client given a token to present
    from roost.net.tokens import TokenError, decode_token

    try:
        return decode_token(token)[1].subject
    except (TokenError, ValueError) as e:
        raise RefusedError("AUTH_FAILED", f"IDTOKENS: the token to present is malformed: {e}") from None


def tool_tls(home: str) -> ClientTLS | None:
    """The tools' TLS settings from the configuration of the pool at ``home`` (cached)."""
    if home not in _tls_cache:
        # lazy: the configuration and ssl load only for a tool that needs TLS
        from roost.config import Config, ConfigError
        from roost.net.tls import TLSConfigError
        from roost.net.tls_settings import client_tls

        try:
            cfg = Config.load(env={**os.environ, "ROOST_HOME": home}, subsys="TOOL")
            _tls_cache[home] = client_tls(cfg)
        except (ConfigError, TLSConfigError) as e:
            raise PoolError(f"TLS settings: {e}") from None
    return _tls_cache[home]


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
        #: set for a daemon found through a collector (``-name``/``-pool``): a failure to
        #: connect then names its address, not this home's pool
        self.remote = False
        #: a token to present in place of the pool's (the web dashboard acting for its user)
        self.token: str | None = None
        self._client: SyncClient | None = None

    def _open(self) -> SyncClient:
        if self._client is not None:
            return self._client
        addresses = self.addresses()
        for address in addresses:
            client = SyncClient(address, timeout=self.timeout, connect_timeout=5.0,
                                **client_credentials(self.home, address, self.token))
            try:
                client.connect()
            except ConnectionError:
                continue  # a stale socket file or address: try the next way in
            except RemoteError as e:  # the daemon did not accept our token
                raise RefusedError(e.code, e.message) from None
            self._client = client
            return client
        if self.remote and addresses:
            raise NoPoolError(f"the {self.daemon} at {', '.join(addresses)} is not answering")
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
