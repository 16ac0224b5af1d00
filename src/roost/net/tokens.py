"""IDTOKENS: HTCondor's signed identity tokens (JWT, HS256), made and checked.

A token says "the holder is ``sub``, as vouched for by the pool ``iss``", signed
with a key the pool keeps (``kid`` names it, ``POOL`` by default). The shape
follows HTCondor's: header ``{"alg":"HS256","kid":...}`` (HTCondor writes no
``typ``; one is accepted), claims ``iss``, ``sub``, ``iat``, ``jti`` (a random
id, what revocation names), optional ``exp`` and ``scope`` (a space-separated
string, ``condor:/READ condor:/WRITE``, limiting the authorization levels).

The HMAC key is not the key file's bytes but derived from them (HKDF-SHA256,
as HTCondor derives its JWT key from the pool key), so the same key file can
later key other things without one secret serving two purposes. roost's key
files are raw bytes, not HTCondor's scrambled password files, so keys are not
shared with an HTCondor pool.

Pure: the clock is a parameter, nothing is read from disk (see
``signing_key`` and ``token_store``). Only the standard library, so a
command-line tool presenting a token pays for no parser.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: HTCondor's authorization levels, the names ``-authz`` takes
AUTHZ_LEVELS = (
    "READ", "WRITE", "ADMINISTRATOR", "CONFIG", "OWNER", "DAEMON", "NEGOTIATOR",
    "ADVERTISE_MASTER", "ADVERTISE_STARTD", "ADVERTISE_SCHEDD", "ALLOW",
)
SCOPE_PREFIX = "condor:/"
DEFAULT_KEY = "POOL"
#: a token longer than this is refused unread (it arrives from the network)
MAX_TOKEN_BYTES = 16384

#: a time claim (``iat``, ``exp``) is a signed 64-bit number of seconds, as HTCondor's
_MAX_TIME = 2**63

_HKDF_SALT = b"roost"
_HKDF_INFO = b"idtokens jwt"


class TokenError(Exception):
    """A token (or key) that cannot be used; the message is one line saying why."""


@dataclass(frozen=True)
class Claims:
    """What a token says. ``payload`` holds every claim as decoded (what
    ``SEC_TOKEN_REVOCATION_EXPR`` is evaluated over)."""

    issuer: str
    subject: str
    issued_at: int
    jti: str
    key_id: str
    expires_at: int | None = None
    scopes: tuple[str, ...] = ()
    payload: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def annex(self) -> str:
        """The annex a glide-in's token is for ("" for any other token)."""
        value = self.payload.get(ANNEX_CLAIM)
        return value if isinstance(value, str) else ""

    @property
    def authz(self) -> tuple[str, ...]:
        """The authorization levels the token is limited to (``condor:/X`` scopes);
        empty means no limit beyond what the identity is allowed."""
        return tuple(s[len(SCOPE_PREFIX):] for s in self.scopes if s.startswith(SCOPE_PREFIX))


#: roost's claim naming a glide-in token's annex (create_token's ``annex``)
ANNEX_CLAIM = "roost_annex"


def utc(t: float) -> str:
    """A time as users read it in messages: ``2024-05-01 12:00:00 UTC``."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def scope_string(levels: Iterable[str]) -> str:
    """``["READ", "WRITE"]`` -> ``"condor:/READ condor:/WRITE"`` (a full scope such as
    ``condor:/READ`` or ``other:x`` is kept as written)."""
    return " ".join(s if ":" in s else SCOPE_PREFIX + s for s in levels)


def normalize_authz(levels: Iterable[str]) -> list[str]:
    """``-authz`` values upper-cased and checked against HTCondor's levels, so a
    typo fails when the token is made, not when it is silently useless."""
    out: list[str] = []
    for level in levels:
        for part in level.replace(",", " ").split():
            name = part.upper()
            if name not in AUTHZ_LEVELS:
                raise TokenError(f"unknown authorization level {part!r} "
                                 f"(one of {', '.join(AUTHZ_LEVELS)})")
            if name not in out:
                out.append(name)
    return out


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """RFC 5869's HKDF with SHA-256 (the standard library has none)."""
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block = b"", b""
    for i in range(1, -(-length // 32) + 1):
        block = hmac.new(prk, block + info + bytes([i]), hashlib.sha256).digest()
        out += block
    return out[:length]


@functools.lru_cache(maxsize=64)
def jwt_key(key: bytes) -> bytes:
    """The HMAC key derived from a signing key file's bytes. Cached: a daemon derives
    it for every token it checks, from the same few keys."""
    return hkdf_sha256(key, _HKDF_SALT, _HKDF_INFO)


def signature_of(key: bytes, signing_input: str) -> str:
    """The base64url signature this key gives ``header.claims`` (what the handshake of
    :mod:`roost.net.auth` proves knowledge of, without sending it)."""
    return _b64(hmac.new(jwt_key(key), signing_input.encode("ascii"), hashlib.sha256).digest())


def _json(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=False).encode()


def check_issuer(issuer: str) -> str:
    """HTCondor's rule: an issuer (``TRUST_DOMAIN``) is one word, no spaces or commas."""
    if not issuer or any(c in issuer for c in ", \t\n"):
        raise TokenError(f"trust domain {issuer!r} must be one word without spaces or commas")
    return issuer


def create_token(key: bytes, kid: str, issuer: str, subject: str, *, now: float,
                 lifetime: int | None = None, scopes: Iterable[str] | None = None,
                 jti: str | None = None, annex: str | None = None) -> str:
    """A signed token for ``subject`` (``user@domain``), issued by ``issuer`` at ``now``.

    ``lifetime`` seconds sets ``exp``; ``scopes`` are levels (``READ``) or full
    scopes. ``jti`` is random (128 bits, hex, as HTCondor's) unless given. ``annex``
    names the annex whose glide-ins the token is for (``roost_annex``, roost's own
    claim): the collector holds such a token to that annex's ads.
    """
    check_issuer(issuer)
    if not kid or "/" in kid or kid.startswith("."):
        raise TokenError(f"key name {kid!r} is not a plain file name")
    claims: dict[str, Any] = {"iat": int(now), "iss": issuer, "jti": jti or secrets.token_hex(16),
                              "sub": subject}
    if lifetime is not None:
        claims["exp"] = int(now) + int(lifetime)
    scope = scope_string(scopes or ())
    if scope:
        claims["scope"] = scope
    if annex:
        claims[ANNEX_CLAIM] = annex
    signing_input = _b64(_json({"alg": "HS256", "kid": kid})) + "." + _b64(_json(claims))
    return signing_input + "." + signature_of(key, signing_input)


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any], str, str]:
    """(header, payload, signing input, signature) of a well-formed token; TokenError
    ("malformed: ...") otherwise. Nothing is verified."""
    token = token.strip()
    if len(token) > MAX_TOKEN_BYTES:
        raise TokenError(f"malformed token: longer than {MAX_TOKEN_BYTES} bytes")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        raise TokenError("malformed token: not three dot-separated base64url parts")
    try:
        header = json.loads(_unb64(parts[0]))
        payload = json.loads(_unb64(parts[1]))
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: "[[[[..." from a peer
        raise TokenError("malformed token: header or claims are not base64url JSON") from None
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise TokenError("malformed token: header or claims are not JSON objects")
    return header, payload, parts[0] + "." + parts[1], parts[2]


def _claims(header: Mapping[str, Any], payload: Mapping[str, Any]) -> Claims:
    def want(name: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
        value = payload.get(name)
        if value is None and not required:
            return None
        if (not isinstance(value, kind) or isinstance(value, bool) or value == ""
                or (kind is not str and not -_MAX_TIME < value < _MAX_TIME)):  # NaN, Infinity, 1e400
            raise TokenError(f"malformed token: claim {name!r} is missing or not "
                             f"{'a non-empty string' if kind is str else 'a number'}")
        return value

    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise TokenError("malformed token: header names no key (kid)")
    exp = want("exp", (int, float), required=False)
    scope = want("scope", str, required=False) or ""
    return Claims(
        issuer=want("iss", str), subject=want("sub", str), issued_at=int(want("iat", (int, float))),
        jti=want("jti", str), key_id=kid, expires_at=None if exp is None else int(exp),
        scopes=tuple(scope.split()), payload=dict(payload),
    )


def decode_token(token: str) -> tuple[dict[str, Any], Claims]:
    """Header and claims, UNVERIFIED: for listing one's own tokens and for a client
    choosing which token to present, never for deciding who a peer is."""
    header, payload, _, _ = _split(token)
    return header, _claims(header, payload)


def verify_token(token: str, keys: Mapping[str, bytes], *, issuer: str, now: float,
                 revoked: Callable[[Claims], bool] | None = None,
                 max_age: int | None = None) -> Claims:
    """The claims of a token this pool signed and still honours; TokenError otherwise.

    Checked in this order, so that nothing but the structure is believed before
    the signature is: well-formed, known key, signature, issuer, expiry,
    ``max_age`` (``SEC_TOKEN_MAX_AGE``, seconds since ``iat``), revocation.
    """
    header, payload, signing_input, signature = _split(token)
    if header.get("alg") != "HS256":
        raise TokenError(f"malformed token: algorithm {header.get('alg')!r} is not HS256")
    claims = _claims(header, payload)
    key = keys.get(claims.key_id)
    if key is None:
        raise TokenError(f"token signed with unknown key {claims.key_id!r}")
    if not hmac.compare_digest(signature_of(key, signing_input).encode(), signature.encode("ascii", "replace")):
        raise TokenError(f"token signature does not match key {claims.key_id!r}")
    if claims.issuer != issuer:
        raise TokenError(f"token issuer {claims.issuer!r} is not this pool's {issuer!r}")
    if claims.expires_at is not None and now > claims.expires_at:
        raise TokenError(f"token expired at {utc(claims.expires_at)} (jti {claims.jti})")
    if max_age is not None and now - claims.issued_at > max_age:
        raise TokenError(f"token issued at {utc(claims.issued_at)} is older than "
                         f"SEC_TOKEN_MAX_AGE ({max_age} s) (jti {claims.jti})")
    if revoked is not None and revoked(claims):
        raise TokenError(f"token revoked (jti {claims.jti})")
    return claims
