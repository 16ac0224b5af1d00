"""TLS on roost's connections: when to use it, the contexts, and what a handshake proves.

A TCP connection starts in the clear with one frame, ``STARTTLS``; the server
answers ``ok`` and both sides run the TLS handshake on the same socket (one port
per daemon, and plain TCP to a daemon that requires TLS gets a clear
``ENCRYPTION_REQUIRED`` answer rather than garbage). After it:

- the server's certificate is the channel's identity: the IDTOKENS proofs
  (:mod:`roost.net.auth`) include a hash of it (:func:`binding_of`, RFC 5929's
  tls-server-end-point), so a man in the middle with any other certificate cannot
  relay a handshake, even when nobody checks the certificate against a CA;
- a client certificate signed by a CA in ``AUTH_SSL_SERVER_CAFILE`` can prove a
  user's identity (the SSL method), mapped by ``CERTIFICATE_MAPFILE``
  (:mod:`roost.net.certmap`).

``SEC_DEFAULT_ENCRYPTION`` / ``SEC_DEFAULT_INTEGRITY`` (REQUIRED, PREFERRED,
OPTIONAL, NEVER) decide: a client starts TLS when either is REQUIRED or
PREFERRED; a server refuses plain commands when either is REQUIRED. A Unix socket
never needs TLS (the kernel carries it), nor does loopback TCP unless
``SEC_ENCRYPT_LOOPBACK`` (only root can read loopback traffic, and root can read
the daemons' memory too): a personal pool pays nothing.
"""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from roost.net.addresses import is_loopback
from roost.net.errors import RemoteError

LEVELS = ("REQUIRED", "PREFERRED", "OPTIONAL", "NEVER")
_RANK = {name: i for i, name in enumerate(LEVELS)}


class TLSConfigError(Exception):
    """A TLS setting or file is unusable; ``knob`` names the setting."""

    def __init__(self, knob: str, message: str) -> None:
        super().__init__(message)
        self.knob = knob


def level(value: str | None, knob: str, default: str = "OPTIONAL") -> str:
    """A REQUIRED/PREFERRED/OPTIONAL/NEVER setting (any case); TLSConfigError otherwise."""
    text = (value or default).strip().upper()
    if text not in _RANK:
        raise TLSConfigError(knob, f"{knob} = {value!r}: expected one of {', '.join(LEVELS)}")
    return text


def strongest(*levels: str) -> str:
    return min(levels, key=_RANK.__getitem__)


def binding_of(der: bytes | None) -> str:
    """The channel binding of a server certificate (tls-server-end-point: SHA-256 of
    its DER bytes), ``""`` for no TLS."""
    if not der:
        return ""
    return base64.b64encode(hashlib.sha256(der).digest()).decode("ascii")


def subject_dn(peercert: dict[str, Any]) -> str:
    """A verified peer certificate's subject (``ssl`` dict form) as OpenSSL's one-line
    DN, ``/O=pool/CN=alice``: what HTCondor's SSL method maps."""
    short = {"commonName": "CN", "organizationName": "O", "organizationalUnitName": "OU",
             "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
             "domainComponent": "DC", "emailAddress": "emailAddress"}
    out = []
    for rdn in peercert.get("subject", ()):
        for key, value in rdn:
            out.append(f"/{short.get(key, key)}={escape_dn_value(value)}")
    return "".join(out)


def escape_dn_value(value: str) -> str:
    r"""A DN value with ``\``, ``/`` and line breaks escaped, so that a value holding
    ``/CN=admin`` cannot pass for another attribute, nor a newline for the end (``$``)."""
    return (value.replace("\\", "\\\\").replace("/", "\\/").replace("\n", "\\n").replace("\r", "\\r"))


def _file(knob: str, path: str) -> str:
    if not os.path.isfile(path):
        raise TLSConfigError(knob, f"{knob} = {path}: no such file")
    return path


def _wait_for_pair(cert: str, key: str, timeout: float = 2.0) -> None:
    """Another daemon of this host may be writing a self-signed pair this moment."""
    deadline = time.monotonic() + timeout
    while not (os.path.exists(cert) and os.path.exists(key)) and time.monotonic() < deadline:
        time.sleep(0.02)


@dataclass
class ServerTLS:
    """A server's TLS: its context, whether plain TCP is refused, its own channel
    binding, and the map from verified client certificates to identities."""

    context: ssl.SSLContext
    encryption: str
    encrypt_loopback: bool = False
    binding: str = ""
    #: subject DN -> identity (``user@domain``), or raises AuthError naming why not
    map_subject: Callable[[str], str] | None = None

    def required_for(self, host: str) -> bool:
        """True when a plain (non-TLS) command from ``host`` must be refused."""
        if host == "unix" or (is_loopback(host) and not self.encrypt_loopback):
            return False
        return self.encryption == "REQUIRED"


@dataclass
class ClientTLS:
    """A client's TLS: when to start it, and the context to start it with."""

    encryption: str
    encrypt_loopback: bool = False
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    check_host: bool = True
    #: SEC_DEFAULT_AUTHENTICATION_METHODS, in the order to try them
    methods: tuple[str, ...] = ("FS", "IDTOKENS", "SSL")
    #: KERBEROS: the daemons' service principal (KERBEROS_SERVER_PRINCIPAL), else
    #: ``KERBEROS_SERVER_SERVICE@<the daemon's host name>``
    kerberos_principal: str | None = None
    kerberos_service: str = "host"
    _context: ssl.SSLContext | None = field(default=None, repr=False)

    def wanted(self, host: str) -> bool:
        if host == "unix" or (is_loopback(host) and not self.encrypt_loopback):
            return False
        return self.encryption in ("REQUIRED", "PREFERRED")

    @property
    def required(self) -> bool:
        return self.encryption == "REQUIRED"

    @property
    def has_cert(self) -> bool:
        return bool(self.certfile)

    def token_only(self) -> ClientTLS:
        """These settings for a connection made with someone else's token (the web
        dashboard acting for its visitor): IDTOKENS only, with no certificate and no
        Kerberos ticket, so that a token the daemon refuses never falls through to
        this process's own identity."""
        return replace(self, certfile=None, keyfile=None, methods=("IDTOKENS",),
                       kerberos_principal=None, _context=None)

    def kerberos_target(self, host: str) -> str | None:
        """The service principal to ask a ticket for when reaching ``host`` (None: this
        client does not try KERBEROS)."""
        if "KERBEROS" not in self.methods:
            return None
        if self.kerberos_principal:
            return self.kerberos_principal
        try:
            name = socket.gethostbyaddr(host)[0]
        except OSError:
            name = host
        return f"{self.kerberos_service}@{name}"

    def context(self) -> ssl.SSLContext:
        """Built once: TLS 1.2+; the server checked against ``cafile`` when there is one
        (and its host name, unless told not to), else only bound by the IDTOKENS proofs."""
        if self._context is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            if self.cafile:
                ctx.load_verify_locations(_file("AUTH_SSL_CLIENT_CAFILE", self.cafile))
                ctx.check_hostname = self.check_host
                ctx.verify_mode = ssl.CERT_REQUIRED
            else:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if self.certfile:
                try:
                    ctx.load_cert_chain(_file("AUTH_SSL_CLIENT_CERTFILE", self.certfile),
                                        _file("AUTH_SSL_CLIENT_KEYFILE", self.keyfile or self.certfile))
                except ssl.SSLError as e:
                    raise TLSConfigError("AUTH_SSL_CLIENT_CERTFILE",
                                         f"{self.certfile}: not a usable certificate and key: {e}") from None
            self._context = ctx
        return self._context


def client_context(tls: ClientTLS) -> ssl.SSLContext:
    """``tls.context()`` with a bad file turned into the clients' AUTH_FAILED."""
    try:
        return tls.context()
    except (TLSConfigError, OSError) as e:
        raise RemoteError("AUTH_FAILED", f"SSL: {e}") from None


def server_context(certfile: str, keyfile: str, cafile: str | None, *, require_client_cert: bool = False) -> ssl.SSLContext:
    """A server context: this host's certificate, and the CAs whose client
    certificates it takes (none: the SSL method is not offered)."""
    _wait_for_pair(certfile, keyfile)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(_file("AUTH_SSL_SERVER_CERTFILE", certfile), _file("AUTH_SSL_SERVER_KEYFILE", keyfile))
    except ssl.SSLError as e:
        raise TLSConfigError("AUTH_SSL_SERVER_CERTFILE", f"{certfile}: not a usable certificate and key: {e}") from None
    if cafile:
        try:
            ctx.load_verify_locations(_file("AUTH_SSL_SERVER_CAFILE", cafile))
        except ssl.SSLError as e:
            raise TLSConfigError("AUTH_SSL_SERVER_CAFILE", f"{cafile}: not a usable CA file: {e}") from None
        ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    return ctx


def own_binding(certfile: str) -> str:
    """The channel binding of the certificate this server presents."""
    with open(certfile, "rb") as f:
        pem = f.read().decode("ascii", "replace")
    start = pem.find("-----BEGIN CERTIFICATE-----")
    end = pem.find("-----END CERTIFICATE-----", start)
    if start < 0 or end < 0:
        raise TLSConfigError("AUTH_SSL_SERVER_CERTFILE", f"{certfile}: no PEM certificate in it")
    return binding_of(ssl.PEM_cert_to_DER_cert(pem[start:end + len("-----END CERTIFICATE-----")]))


def cert_refused_hint(message: str, tls: ClientTLS | None) -> str:
    """A connection that ends right after our TLS handshake: the daemon did not take
    our certificate (TLS 1.3 tells the client only by hanging up)."""
    if "SSL:" in message or tls is None or not tls.has_cert:
        return message
    return (f"{message}: SSL: the daemon ended the connection after the TLS handshake: it did not "
            "accept our certificate (signed by a CA it does not trust: AUTH_SSL_SERVER_CAFILE?)")


def describe_ssl_error(e: BaseException) -> str:
    """One line for a failed handshake, saying what to look at."""
    reason = getattr(e, "reason", None) or ""
    text = str(e)
    if isinstance(e, ssl.SSLCertVerificationError):
        return f"SSL: the server's certificate does not verify: {e.verify_message}"
    hints = {
        "TLSV1_ALERT_UNKNOWN_CA": "the other end does not trust the CA of our certificate (unknown CA)",
        "SSLV3_ALERT_BAD_CERTIFICATE": "the other end refused our certificate",
        "TLSV13_ALERT_CERTIFICATE_REQUIRED": "the daemon requires a client certificate and we showed none",
        "CERTIFICATE_VERIFY_FAILED": "a certificate does not verify",
        "WRONG_VERSION_NUMBER": "the other end does not speak TLS",
    }
    for key, hint in hints.items():
        if key in reason or key.lower().replace("_", " ") in text.lower():
            return f"SSL: {hint}"
    return f"SSL: handshake failed: {reason or text}"
