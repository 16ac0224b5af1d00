"""A client's TLS and authentication settings from a configuration: what every daemon's
clients and every tool reaching another host need (:class:`roost.net.tls.ClientTLS`).

Here, not in the daemons, because tools read it too: a tool loads the configuration
only when it speaks TCP to another host (``roost q`` on a personal pool never does).
"""

from __future__ import annotations

from roost.config import Config
from roost.net.tls import ClientTLS, TLSConfigError, level, strongest


def auth_methods(config: Config) -> tuple[str, ...]:
    """SEC_DEFAULT_AUTHENTICATION_METHODS, upper case, in order."""
    known = ("FS", "IDTOKENS", "TOKEN", "SSL", "KERBEROS")
    out = []
    for m in config.get_list("SEC_DEFAULT_AUTHENTICATION_METHODS", ["FS", "IDTOKENS", "SSL"]) or []:
        m = m.strip().upper()
        if m not in known:
            raise TLSConfigError("SEC_DEFAULT_AUTHENTICATION_METHODS",
                                 f"SEC_DEFAULT_AUTHENTICATION_METHODS: unknown method {m!r} "
                                 f"(known: {', '.join(known)})")
        out.append("IDTOKENS" if m == "TOKEN" else m)
    return tuple(out)


def client_tls(config: Config) -> ClientTLS:
    """What a client (a daemon's, or a tool's) needs to start TLS and show a certificate."""
    enc = strongest(level(config.get("SEC_DEFAULT_ENCRYPTION"), "SEC_DEFAULT_ENCRYPTION", "REQUIRED"),
                    level(config.get("SEC_DEFAULT_INTEGRITY"), "SEC_DEFAULT_INTEGRITY", "REQUIRED"))
    return ClientTLS(
        encryption=enc,
        encrypt_loopback=bool(config.get_bool("SEC_ENCRYPT_LOOPBACK", False)),
        cafile=(config.get("AUTH_SSL_CLIENT_CAFILE") or "").strip() or None,
        certfile=(config.get("AUTH_SSL_CLIENT_CERTFILE") or "").strip() or None,
        keyfile=(config.get("AUTH_SSL_CLIENT_KEYFILE") or "").strip() or None,
        check_host=not config.get_bool("SSL_SKIP_HOST_CHECK", False),
        methods=auth_methods(config),
        kerberos_principal=(config.get("KERBEROS_SERVER_PRINCIPAL") or "").strip() or None,
        kerberos_service=(config.get("KERBEROS_SERVER_SERVICE") or "host").strip() or "host",
    )
