"""A daemon's security, read from its configuration: who may send it what, and how it
proves itself to other daemons.

Three parts, built once per (re)configuration:

- the token authority (:class:`roost.net.auth.TokenAuthority`): the pool's signing
  keys, the trust domain and what is revoked, so TCP peers can prove a token's
  identity. A host with no readable key takes no tokens (local peers only).
- the policy (:class:`roost.core.authz.Policy`) and the ``authorize`` hook the
  server calls before every handler: the one place a command is allowed or not.
- the daemon's own token (``condor@UID_DOMAIN``), presented by every client the
  daemon opens to another daemon: minted from the pool key where this host has it
  (a personal pool, the central manager), else read from
  ``SEC_TOKEN_SYSTEM_DIRECTORY``; after it, one token of each other issuer found
  there (other pools', for flocking: docs/flocking.md), which the handshake presents
  in turn until the daemon spoken to honours one.
- flocking's entries in the ALLOW_* lists (``roost.core.flock.flock_allow_entries``:
  the connected pools' daemon identities at the levels their part needs here).
- TLS (:mod:`roost.net.tls`): the server's certificate (a self-signed one made at
  first start when ``AUTH_SSL_SERVER_CERTFILE`` is missing), the CAs it trusts for
  client certificates, the map from their subjects to identities, and what clients
  of this daemon need to start TLS and show a certificate.

A personal pool needs no set-up: the first daemon to start makes the pool key
(``SEC_TOKEN_POOL_SIGNING_KEY_FILE``, owner-only), the others read it.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import pwd
import ssl
import time
from dataclasses import replace
from typing import Any

from roost.config import Config, ConfigError
from roost.core.authz import Policy
from roost.core.authz_patterns import AuthzConfigError
from roost.core.flock import (
    FlockConfigError,
    flock_allow_entries,
    parse_agreements,
    with_flock_entries,
)
from roost.net.addresses import collector_address
from roost.net.auth import AuthError, DelegatedAuthority, KerberosSettings, TokenAuthority
from roost.net.certmap import MapFileError, Rule, map_principal
from roost.net.certmap import load as load_map
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import Peer, Server
from roost.net.signing_key import ensure_key_file
from roost.net.tls import ServerTLS, TLSConfigError, is_loopback, own_binding, server_context
from roost.net.tls_settings import auth_methods, client_tls
from roost.net.token_store import TokenSettings, find_tokens, write_token_file
from roost.net.tokens import DEFAULT_KEY, TokenError, create_token, verify_token

log = logging.getLogger(__name__)

DAEMON_USER = "condor"
_LOCAL = "127.0.0.1"


def uid_domain(config: Config) -> str:
    return (config.get("UID_DOMAIN") or config.get("FULL_HOSTNAME") or "localdomain").strip()


class Security:
    """What :func:`roost.net.server.serve` and a daemon's clients need, from one config."""

    def __init__(self, config: Config, daemon: str, *, make_key: bool) -> None:
        self.daemon = daemon.upper()
        self.uid_domain = uid_domain(config)
        self.identity = f"{DAEMON_USER}@{self.uid_domain}"
        settings = self.settings = TokenSettings.from_config(config)
        self.trust_domain = settings.trust_domain
        if make_key:
            ensure_key_file(settings.pool_key_file)
        keys = self.keys = settings.keys(warn=log.warning)
        self.authority = (
            TokenAuthority(keys, self.trust_domain, clock=time.time, revoked=settings.revocation(),
                           max_age=settings.max_age)
            if keys else None
        )
        try:
            get = with_flock_entries(config.get, _flock_entries(config))
            self.policy = Policy.from_config(get, local_ips=_local_ips(config), daemons=(self.daemon,))
        except (AuthzConfigError, FlockConfigError) as e:
            where = config.source(e.knob) or ("<configuration>", 0)
            raise ConfigError(where[0], where[1], str(e)) from None
        self.token = self._daemon_token(keys, settings)
        #: what this daemon's clients present: its own token, then other pools' (flocking)
        self.tokens = self._other_pools_tokens(settings)
        self._config = config
        try:
            self.methods = auth_methods(config)
            self.client_tls = client_tls(config)
            self._map = self._load_map(config)
        except TLSConfigError as e:
            raise config_error(config, e) from None
        if self.authority is None and self.token is not None:
            self.authority = self._delegated(config)
        if "IDTOKENS" not in self.methods:
            self.authority = None
        self._server_tls: ServerTLS | None = None

    def _delegated(self, config: Config) -> DelegatedAuthority | None:
        """A host with a daemon token but no pool key: the central manager's collector
        runs its side of each token handshake (:class:`roost.net.auth.DelegatedAuthority`),
        always over TLS."""
        address = collector_address(config.get("COLLECTOR_HOST") or "", config.get_int("COLLECTOR_PORT", 9618) or 9618)
        if not address or address.startswith("unix:"):
            return None
        # TLS even where the pool's own setting would allow plain TCP (proofs travel here)
        tls = replace(self.client_tls, encryption="REQUIRED")
        # a few connections, so that one slow handshake does not hold up the others
        clients = [AsyncClient(address, timeout=DelegatedAuthority.TIMEOUT, connect_timeout=DelegatedAuthority.TIMEOUT,
                               token=self.token, tls=tls) for _ in range(4)]
        turn = iter(range(1 << 62))

        cert_file = config.get("AUTH_SSL_SERVER_CERTFILE") or ""
        key_file = config.get("AUTH_SSL_SERVER_KEYFILE") or ""

        async def ask(args: dict[str, Any]) -> dict[str, Any]:
            idle = [c for c in clients if not c.busy()]
            client = idle[0] if idle else clients[next(turn) % len(clients)]
            with contextlib.suppress(OSError, ValueError):  # our certificate: the key to resume comes sealed to it
                with open(cert_file) as f:
                    args = {**args, "cert": base64.b64encode(ssl.PEM_cert_to_DER_cert(f.read())).decode("ascii")}
            return await client.call("TOKEN_CHALLENGE", **args)

        def unseal(sealed: str) -> str:
            # lazy: cryptography loads only on a key-less host, at its first checked token
            from roost.net.certs import unseal as open_sealed

            return open_sealed(key_file, sealed).decode("ascii")

        async def close() -> None:
            for c in clients:
                await c.close()

        log.info("no pool signing key here: the collector at %s checks the tokens shown to this daemon", address)
        return DelegatedAuthority(ask, self.trust_domain, close=close, unseal=unseal)

    async def close(self) -> None:
        """Close what this security holds open (a key-less host's collector connections)."""
        authority = self.authority
        if isinstance(authority, DelegatedAuthority) and authority.close is not None:
            await authority.close()

    def _load_map(self, config: Config) -> list[Rule] | None:
        path = (config.get("CERTIFICATE_MAPFILE") or "").strip()
        if not path:
            return None
        try:
            return load_map(path)
        except MapFileError as e:
            raise ConfigError(e.path, e.line, e.what) from None

    def map_subject(self, subject: str) -> str:
        """A verified client certificate's identity, by CERTIFICATE_MAPFILE."""
        name = map_principal(self._map or [], "SSL", subject)
        if name is None:
            raise AuthError(f"SSL: no mapping for certificate subject {subject!r} in CERTIFICATE_MAPFILE")
        return name

    def map_kerberos(self, principal: str) -> str:
        """A Kerberos client's identity: CERTIFICATE_MAPFILE's KERBEROS rules, else the
        principal itself (``alice@EXAMPLE.ORG``: the realm is the domain, as HTCondor)."""
        return map_principal(self._map or [], "KERBEROS", principal) or principal

    def kerberos(self) -> KerberosSettings | None:
        """The daemons' side of KERBEROS, where it is one of the methods."""
        if "KERBEROS" not in self.methods:
            return None
        keytab = (self._config.get("KERBEROS_SERVER_KEYTAB") or "").strip() or None
        return KerberosSettings(keytab, self.map_kerberos)

    def server_tls(self, host: str | None) -> ServerTLS | None:
        """The server's TLS for a listener on ``host``, built (and its self-signed
        certificate made, if it has none) on first need; None where no peer will
        start TLS (loopback only, or encryption NEVER)."""
        tls = self.client_tls
        if tls.encryption == "NEVER" or (host is not None and is_loopback(host) and not tls.encrypt_loopback):
            return None
        if self._server_tls is None:
            config = self._config
            cert = config.get("AUTH_SSL_SERVER_CERTFILE") or ""
            key = config.get("AUTH_SSL_SERVER_KEYFILE") or ""
            try:
                if not os.path.exists(cert) and not os.path.exists(key):
                    # lazy: cryptography loads only for the one start that makes a certificate
                    from roost.net.certs import ensure_self_signed

                    names = [n for n in (config.get("FULL_HOSTNAME"), config.get("IP_ADDRESS")) if n]
                    if ensure_self_signed(cert, key, names):
                        log.warning("no TLS certificate given (AUTH_SSL_SERVER_CERTFILE): made a self-signed "
                                    "one at %s; it encrypts, and IDTOKENS binds to it", cert)
                ctx = server_context(cert, key, (config.get("AUTH_SSL_SERVER_CAFILE") or "").strip() or None,
                                     require_client_cert=bool(config.get_bool("AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE", False)))
                binding = own_binding(cert)
            except TLSConfigError as e:
                raise config_error(config, e) from None
            self._server_tls = ServerTLS(ctx, tls.encryption, tls.encrypt_loopback, binding,
                                         self.map_subject if "SSL" in self.methods else None)
        return self._server_tls

    def _daemon_token(self, keys: dict[str, bytes], settings: TokenSettings) -> str | None:
        key = keys.get(DEFAULT_KEY)
        if key is not None:
            return create_token(key, DEFAULT_KEY, self.trust_domain, self.identity, now=time.time())
        for found in find_tokens(settings.system_token_dir, warn=log.warning):
            if found.claims.issuer == self.trust_domain:
                return found.token
        log.warning("no pool signing key and no token for %s in %s: other daemons will see this "
                    "daemon as unauthenticated", self.trust_domain, settings.system_token_dir)
        return None

    def _other_pools_tokens(self, settings: TokenSettings) -> list[str]:
        """The own token first, then the first token of each other issuer in
        ``SEC_TOKEN_SYSTEM_DIRECTORY``: a host of a flocking pool holds a token another
        pool minted for its ``condor@UID_DOMAIN`` and shows it to that pool's daemons."""
        out = [self.token] if self.token else []
        issuers = {self.trust_domain}
        for found in find_tokens(settings.system_token_dir, warn=log.debug):
            if found.claims.issuer not in issuers:
                issuers.add(found.claims.issuer)
                out.append(found.token)
        return out

    def ensure_owner_token(self) -> str | None:
        """Give the account running this central manager a token of the pool, unless one
        is in ``SEC_TOKEN_DIRECTORY`` already: so the owner's tools can speak TCP to every
        daemon with no set-up (``roost up``). Owner-only file. Its path, or None."""
        key = self.keys.get(DEFAULT_KEY)
        if key is None:
            return None
        for found in find_tokens(self.settings.token_dir, warn=log.warning):
            try:  # one this pool still honours (not one of a key since replaced, say)
                verify_token(found.token, self.keys, issuer=self.trust_domain, now=time.time())
                return None
            except TokenError:
                continue
        user = pwd.getpwuid(os.geteuid()).pw_name
        path = os.path.join(self.settings.token_dir, user)
        write_token_file(path, create_token(key, DEFAULT_KEY, self.trust_domain, f"{user}@{self.uid_domain}",
                                            now=time.time()))
        log.info("wrote a token for %s@%s to %s", user, self.uid_domain, path)
        return path

    def authorize(self, peer: Peer, cmd: str, req: dict[str, Any]) -> str | None:
        """The server's hook: None to run ``cmd``, else the one-line reason it may not."""
        ident = peer.identity
        decision = self.policy.decide(
            ident.name if ident else None,
            _LOCAL if peer.host == "unix" else peer.host,
            cmd,
            self.daemon,
            req,
            scopes=ident.scopes if ident else (),
        )
        if decision.allowed:
            return None
        who = ident.name if ident else "an unauthenticated peer"
        log.info("refused %s from %s (%s): %s", cmd, who, peer.address, decision.reason)
        return f"{cmd} refused to {who}: {decision.reason}"

    def install(self, server: Server, host: str | None) -> None:
        """Make a running server check peers with this (RECONFIG's new) security."""
        server.authority, server.authorize = self.authority, self.authorize
        server.tls = self.server_tls(host)
        server.kerberos = self.kerberos()

    def client_args(self) -> dict[str, Any]:
        """Keyword arguments for the clients this daemon opens: its token and TLS."""
        tokens = self.tokens
        return {"token": tokens if len(tokens) > 1 else self.token, "tls": self.client_tls}

    def serve_args(self, host: str | None) -> dict[str, Any]:
        """Keyword arguments for :func:`roost.net.server.serve` on a listener at ``host``."""
        return {"authority": self.authority, "authorize": self.authorize, "uid_domain": self.uid_domain,
                "tls": self.server_tls(host), "kerberos": self.kerberos()}


def reread(path: str | None, subsys: str, local_name: str | None = None) -> tuple[Config, Security]:
    """RECONFIG's reading: the configuration (``path``, or the start's own lookup when
    None) and the security built from it; RequestError(BAD_CONFIG) naming file and line
    when either does not read, so the caller keeps running on the old one."""
    try:
        config = Config.load(path, subsys=subsys, localname=local_name)
        security = Security(config, subsys, make_key=False)
        security.server_tls(config.get("BIND_ADDRESS") or "127.0.0.1")  # a bad certificate: refused here
        return config, security
    except (ConfigError, TokenError) as e:
        raise RequestError("BAD_CONFIG", f"RECONFIG: {e} (still running on the old configuration)") from None


def config_error(config: Config, e: TLSConfigError) -> ConfigError:
    where = config.source(e.knob) or ("<configuration>", 0)
    return ConfigError(where[0], where[1], str(e))


def _flock_entries(config: Config) -> dict[tuple[str, str], list[str]]:
    """Flocking's additions to the ALLOW_* lists (none unless FLOCK_* is set)."""
    if not any((config.get(k) or "").strip() for k in ("FLOCK_TO", "FLOCK_FROM", "FLOCK_AGREEMENTS",
                                                        "FLOCK_NEGOTIATOR_HOSTS")):
        return {}
    hosts = (config.get("FLOCK_NEGOTIATOR_HOSTS") or "").replace(",", " ").split()
    return flock_allow_entries(parse_agreements(config.get), negotiator_hosts=hosts)


def _local_ips(config: Config) -> list[str]:
    ips = [_LOCAL, "::1"]
    ip = config.get("IP_ADDRESS")
    if ip:
        ips.append(ip.strip())
    return ips


def peer_user(peer: Peer, domain: str) -> str | None:
    """The local account an authenticated peer speaks for: the user part of its identity
    when the domain is this pool's ``UID_DOMAIN``; None for anyone else."""
    ident = peer.identity
    if ident is None:
        return None
    user, _, dom = ident.name.partition("@")
    return user if dom == domain and user else None


def is_daemon(peer: Peer, domain: str) -> bool:
    ident = peer.identity
    return ident is not None and ident.name == f"{DAEMON_USER}@{domain}"


__all__ = ["Security", "is_daemon", "peer_user", "uid_domain"]
