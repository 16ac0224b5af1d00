"""Proving who is at the other end of a connection, with no secret crossing the wire.

Unix-socket peers are known from the kernel (SO_PEERCRED, HTCondor's FS method):
:class:`roost.net.server.Peer` reads that itself. A TCP peer proves an identity
with an IDTOKENS token (:mod:`roost.net.tokens`) in a challenge and response, so
that neither the token's signature (the part that makes it worth stealing) nor
any key is ever sent, and each side proves itself to the other:

1. client → ``AUTH {method: IDTOKENS, token: <header.claims>, nonce: c}``: the
   token without its signature, and a fresh random nonce.
2. The server checks the claims (known key, issuer, expiry, revocation) and
   recomputes the signature ``s`` from its key: only the pool's key and the
   token's holder know it. It answers ``{nonce: n, proof: H(s, "server", c, n, t)}``.
3. The client checks that proof (the server holds the pool's key: no fake
   daemon collects tokens) and sends ``AUTH_PROOF {proof: H(s, "client", c, n, t)}``.
4. The server compares; the connection's peer is now the token's subject,
   limited to its scopes, for as long as the connection lasts.

``H`` is HMAC-SHA256 keyed by ``s``; both nonces and the token text are in every
proof, so a proof replayed on another connection, or for another token, fails.
Over TLS both proofs also hold the channel binding (a hash of the server's
certificate, :func:`roost.net.tls.binding_of`): a man in the middle terminating
TLS with any other certificate cannot relay the handshake.

The SSL method needs no messages of its own beyond ``AUTH {method: SSL}``: the
TLS handshake has verified the client's certificate, and the server maps its
subject (:mod:`roost.net.certmap`).

The pure halves are here (:class:`ClientHandshake`, :func:`server_challenge`,
:func:`server_finish`, and :func:`client_methods`, the client's whole sequence as
a generator of requests); the server and the clients carry the messages.
"""

from __future__ import annotations

import base64
import contextlib
import hmac
import secrets
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from hashlib import sha256
from typing import Any

from roost.net.errors import RemoteError
from roost.net.tokens import Claims, TokenError, decode_token, signature_of, verify_token

METHOD = "IDTOKENS"
_NONCE_BYTES = 32
_MAX_NONCE_TEXT = 128


class AuthError(Exception):
    """Authentication failed; the message is one line naming the method and why."""


def _proof(secret: str, side: str, client_nonce: str, server_nonce: str, signing_input: str,
           binding: str) -> str:
    msg = "\n".join(("roost-idtokens-2", side, client_nonce, server_nonce, signing_input, binding)).encode()
    return base64.b64encode(hmac.new(secret.encode("ascii"), msg, sha256).digest()).decode("ascii")


def resume_secret(secret: str, binding: str) -> str:
    """The key of a handshake a key-less daemon runs alone (the central manager out of
    reach): derived from the token's signature and the daemon's TLS channel binding, so
    it is good for this token with this daemon's certificate and nothing else. The
    central manager hands it to the daemon after a handshake it checked itself."""
    msg = ("roost-idtokens-resume\n" + binding).encode()
    return base64.b64encode(hmac.new(secret.encode("ascii"), msg, sha256).digest()).decode("ascii")


def is_tls_binding(binding: str) -> bool:
    return bool(binding) and not binding.startswith("plain;")


def plain_binding(offered: bool) -> str:
    """The binding of a connection without TLS: whether the daemon offered TLS to this
    peer, inside the proofs, so a client whose STARTTLS was refused on the path (a
    downgrade) finds out."""
    return f"plain;tls-offered={int(offered)}"


def _nonce() -> str:
    return secrets.token_urlsafe(_NONCE_BYTES)


@dataclass(frozen=True)
class Identity:
    """Who an authenticated peer is: ``user@domain``, the method that proved it, the
    levels its token allows (empty: no limit beyond the pool's policy), and the annex
    a glide-in's token is for ("" otherwise)."""

    name: str
    method: str
    scopes: tuple[str, ...] = ()
    annex: str = ""


class TokenAuthority:
    """The server's side of IDTOKENS: the pool's keys, its trust domain, what is revoked.

    ``clock`` is a parameter so that tests can move time; daemons pass ``time.time``.
    """

    def __init__(
        self,
        keys: Mapping[str, bytes],
        issuer: str,
        *,
        clock: Callable[[], float],
        revoked: Callable[[Claims], bool] | None = None,
        max_age: int | None = None,
    ) -> None:
        self.keys = dict(keys)
        self.max_age = max_age
        self.issuer = issuer
        self.clock = clock
        self.revoked = revoked

    def check(self, signing_input: str) -> tuple[Claims, str]:
        """The claims of an unsigned token (``header.claims``) and the signature this
        pool would give it; TokenError when the pool does not honour it."""
        if type(signing_input) is not str or signing_input.count(".") != 1:
            raise TokenError("malformed token: expected header.claims, without the signature")
        _, unverified = decode_token(signing_input + ".-")  # only to find the key it names
        key = self.keys.get(unverified.key_id)
        if key is None:
            raise TokenError(f"token signed with unknown key {unverified.key_id!r}")
        sig = signature_of(key, signing_input)
        claims = verify_token(
            signing_input + "." + sig, self.keys, issuer=self.issuer, now=self.clock(), revoked=self.revoked,
            max_age=self.max_age,
        )
        return claims, sig


@dataclass
class ServerState:
    """What the server remembers between the two messages of one handshake."""

    claims: Claims
    secret: str
    client_nonce: str
    server_nonce: str
    signing_input: str
    binding: str


def server_challenge(
    req: Mapping[str, Any], authority: TokenAuthority, binding: str = "plain;tls-offered=0"
) -> tuple[dict[str, Any], ServerState]:
    """Answer an ``AUTH`` request: the reply to send and the state to keep; AuthError
    (one line) when the method is unknown or the token is not honoured."""
    method = req.get("method")
    if method != METHOD:
        raise AuthError(f"authentication method {method!r} is not offered here")
    token, nonce = req.get("token"), req.get("nonce")
    if type(nonce) is not str or not 16 <= len(nonce) <= _MAX_NONCE_TEXT:
        raise AuthError(f"{METHOD}: the client's nonce is missing or malformed")
    try:
        claims, secret = authority.check(token)  # type: ignore[arg-type]
    except TokenError as e:
        raise AuthError(f"{METHOD}: {e}") from None
    server_nonce = _nonce()
    state = ServerState(claims, secret, nonce, server_nonce, token, binding)  # type: ignore[arg-type]
    proof = _proof(secret, "server", nonce, server_nonce, token, binding)  # type: ignore[arg-type]
    return {"nonce": server_nonce, "proof": proof}, state


def server_finish(req: Mapping[str, Any], state: ServerState) -> Identity:
    """Check an ``AUTH_PROOF``; the peer's identity, or AuthError."""
    want = _proof(state.secret, "client", state.client_nonce, state.server_nonce, state.signing_input,
                  state.binding)
    got = req.get("proof")
    if type(got) is not str or not hmac.compare_digest(want.encode(), got.encode("ascii", "replace")):
        raise AuthError(f"{METHOD}: the client could not prove it holds the token (jti {state.claims.jti})")
    levels = tuple(s.split("/", 1)[1] for s in state.claims.scopes if s.startswith("condor:/"))
    return Identity(state.claims.subject, METHOD, levels, state.claims.annex)


class ClientHandshake:
    """The client's side: :meth:`hello` to send, then :meth:`answer` to the reply."""

    def __init__(self, token: str, binding: str = "", refused_tls: bool = False) -> None:
        #: the TLS channel binding; "" on a connection without TLS (``refused_tls``:
        #: the daemon answered our STARTTLS with TLS_UNAVAILABLE)
        self.binding = binding
        self.refused_tls = refused_tls
        token = token.strip()
        parts = token.split(".")
        if len(parts) != 3 or not all(parts):
            raise AuthError(f"{METHOD}: the token to present is malformed (not three dot-separated parts)")
        self.signing_input = parts[0] + "." + parts[1]
        self.secret = parts[2]
        self.nonce = _nonce()

    def hello(self) -> dict[str, Any]:
        return {"cmd": "AUTH", "method": METHOD, "token": self.signing_input, "nonce": self.nonce}

    def answer(self, reply: Mapping[str, Any]) -> dict[str, Any]:
        """The ``AUTH_PROOF`` request, once the server has proved it holds the pool's key."""
        server_nonce, proof = reply.get("nonce"), reply.get("proof")
        if type(server_nonce) is not str or type(proof) is not str:
            raise AuthError(f"{METHOD}: the server's answer is malformed")
        binding = self.binding or plain_binding(reply.get("tls") is True)
        secret = self.secret
        if reply.get("resume") is True:  # a key-less daemon alone: the key made for it (TLS only)
            if not is_tls_binding(binding):
                raise AuthError(f"{METHOD}: the daemon asks to resume without TLS")
            secret = resume_secret(self.secret, binding)
        want = _proof(secret, "server", self.nonce, server_nonce, self.signing_input, binding)
        if not hmac.compare_digest(want.encode(), proof.encode("ascii", "replace")):
            raise AuthError(
                f"{METHOD}: the server's proof does not match this token: the token was not "
                "signed with this pool's key, the server does not hold it (not this pool's), "
                "or someone between us holds the TLS connection"
            )
        if self.refused_tls and reply.get("tls") is True:
            raise AuthError(f"{METHOD}: the daemon offers TLS, yet our STARTTLS was refused: someone "
                            "between us is stripping TLS")
        return {"cmd": "AUTH_PROOF", "proof": _proof(secret, "client", self.nonce, server_nonce,
                                                     self.signing_input, binding)}


#: what a client's generator yields and is sent back: a request, then its reply frame
#: (``ok`` true or false, as the server answered)
AuthSteps = Generator[dict[str, Any], dict[str, Any], "str | None"]


@dataclass(frozen=True)
class KerberosSettings:
    """A daemon's side of KERBEROS: its service key (``KERBEROS_SERVER_KEYTAB``; None:
    ``KRB5_KTNAME`` or the system's) and the map from client principals to identities
    (raises AuthError naming the principal when there is none)."""

    keytab: str | None
    map_principal: Callable[[str], str]


def kerberos_accept(req: Mapping[str, Any], settings: KerberosSettings, binding: str,
                    pending: Any = None) -> tuple[dict[str, Any], Any, Identity | None]:
    """One step of ``AUTH {method: KERBEROS, token}``: the reply, the acceptor to keep
    for a next step (None when done), and the identity once established."""
    # lazy: the GSSAPI library loads only for a daemon that takes Kerberos
    from roost.net.gss import Acceptor, GSSError

    token = req.get("token")
    if type(token) is not str or len(token) > 65536:
        raise AuthError("KERBEROS: the client's token is missing or malformed")
    try:
        raw = base64.b64decode(token, validate=True)
        acceptor = pending if pending is not None else Acceptor(binding, settings.keytab)
        out = acceptor.step(raw)
    except (ValueError, GSSError) as e:
        raise AuthError(str(e) if isinstance(e, GSSError) else "KERBEROS: the client's token is not base64") from None
    reply: dict[str, Any] = {"token": base64.b64encode(out).decode("ascii")}
    if not acceptor.done:
        return reply, acceptor, None
    assert acceptor.peer is not None
    ident = Identity(settings.map_principal(acceptor.peer), "KERBEROS")
    acceptor.close()
    reply["identity"] = ident.name
    return reply, None, ident


def _kerberos_steps(service: str, binding: str) -> AuthSteps:
    # lazy: the GSSAPI library loads only for a client that tries Kerberos
    from roost.net.gss import GSSError, Initiator

    ctx = None
    try:
        ctx = Initiator(service, binding)
        out = ctx.step(None)
        while True:
            reply = yield {"cmd": "AUTH", "method": "KERBEROS", "token": base64.b64encode(out).decode("ascii")}
            if reply.get("ok") is not True:
                raise AuthError(str(reply.get("error") or "KERBEROS: refused"))
            try:
                back = base64.b64decode(str(reply.get("token") or ""), validate=True)
            except ValueError:
                raise AuthError("KERBEROS: the daemon's token is not base64") from None
            if back or not ctx.done:
                out = ctx.step(back)  # mutual authentication: the daemon proves it holds the service key
            if reply.get("identity") is not None:
                if not ctx.done:
                    raise AuthError("KERBEROS: the daemon did not prove it holds the service's key")
                return str(reply["identity"])
    except GSSError as e:
        raise AuthError(str(e)) from None
    finally:  # done, failed, or abandoned (the generator closed): the context is released
        if ctx is not None:
            ctx.close()


#: the most tokens a client presents on one connection, one per issuer and key
MAX_TOKENS_TRIED = 8


def _token_key(t: str) -> tuple[str, str]:
    """(issuer, key id) of a token; a malformed one is its own key (presented, and
    refused with its reason)."""
    try:
        _, claims = decode_token(t.strip())
    except TokenError:
        return ("?", t)
    return (claims.issuer, claims.key_id)


def candidate_tokens(token: str | Sequence[str] | None, prefer: tuple[str, str] | None = None) -> list[str]:
    """The tokens to present, in order: one per (issuer, key id), at most
    :data:`MAX_TOKENS_TRIED`. A pool refuses another pool's token (unknown key or
    issuer) and the connection stays open, so the next one is tried on it; a second
    token of the same issuer and key would be refused for the same reason. The token
    of ``prefer`` (the issuer and key this peer accepted last) goes first, so a host
    holding several pools' tokens spends no refusal on a peer it has talked to."""
    if token is None:
        return []
    if isinstance(token, str):
        return [token]
    seen: set[tuple[str, str]] = set()
    out: list[str] = []
    for t in token:
        key = _token_key(t)
        if key in seen:
            continue
        seen.add(key)
        if key == prefer:
            out.insert(0, t)
        else:
            out.append(t)
        if len(out) == MAX_TOKENS_TRIED:
            break
    return out


#: peer address -> (issuer, key id) of the token it accepted last (bounded, oldest out)
_ACCEPTED_BY: dict[str, tuple[str, str]] = {}
_ACCEPTED_MAX = 4096


def _accepted(peer: str, tok: str) -> None:
    """Remember which token ``peer`` accepted (only when there was a choice to make)."""
    if not peer:
        return
    _ACCEPTED_BY.pop(peer, None)
    _ACCEPTED_BY[peer] = _token_key(tok)
    while len(_ACCEPTED_BY) > _ACCEPTED_MAX:
        del _ACCEPTED_BY[next(iter(_ACCEPTED_BY))]


def client_methods(token: str | Sequence[str] | None, *, tls: bool, has_cert: bool, binding: str = "",
                   methods: tuple[str, ...] = ("SSL", "IDTOKENS"),
                   kerberos_service: str | None = None, refused_tls: bool = False, peer: str = "") -> AuthSteps:
    """The client's authentication after connecting (and after STARTTLS when ``tls``):
    each method it can use, in ``methods`` order, until one succeeds. Yields requests,
    is sent each reply; returns the identity proved, or None when it had nothing to
    try (the peer stays unauthenticated). AuthError with every method's reason, on
    one line, when all it tried failed. ``peer`` (host:port) orders several tokens
    by what that peer accepted before."""
    failures: list[str] = []
    for method in methods:
        if method == "SSL" and tls and has_cert:
            reply = yield {"cmd": "AUTH", "method": "SSL"}
            if reply.get("ok") is True:
                return str(reply.get("identity"))
            failures.append(str(reply.get("error") or "SSL: refused"))
        elif method == "KERBEROS" and kerberos_service:
            try:
                return (yield from _kerberos_steps(kerberos_service, binding))
            except AuthError as e:
                failures.append(str(e))
        elif method == METHOD:
            several = token is not None and not isinstance(token, str)
            for one in candidate_tokens(token, _ACCEPTED_BY.get(peer) if several else None):
                try:
                    hs = ClientHandshake(one, binding, refused_tls)
                    reply = yield hs.hello()
                    if reply.get("ok") is True:
                        reply = yield hs.answer(reply)
                        if reply.get("ok") is True:
                            if several:
                                _accepted(peer, one)
                            return str(reply.get("identity"))
                    failures.append(str(reply.get("error") or f"{METHOD}: refused"))
                except AuthError as e:
                    failures.append(str(e))
    if failures:
        raise AuthError("; ".join(failures))
    return None


@dataclass
class DelegatedState:
    """What a key-less daemon keeps between ``AUTH`` and ``AUTH_PROOF``: the client's
    proof the central manager expects, and whom it proves."""

    expect: str
    subject: str
    scopes: tuple[str, ...]
    jti: str
    annex: str = ""


@dataclass
class _Resumable:
    """A token the central manager checked for this daemon: the key of handshakes the
    daemon may run alone with it while the central manager is out of reach."""

    secret: str
    state: DelegatedState
    expires: float


class DelegatedAuthority:
    """IDTOKENS for a host that holds no pool key (HTCondor's execute and submit hosts
    hold only a token). The central manager's collector runs the server's half of the
    handshake for it (``TOKEN_CHALLENGE``, asked as ``condor@UID_DOMAIN`` over TLS):
    it checks the token (issuer, expiry, revocation), picks the server nonce and
    returns the server's proof and the client proof it expects, both bound to this
    daemon's channel. No signature or key ever leaves the central manager, so a host
    that holds no key learns nothing it could use anywhere else.

    So that a pool keeps working while its central manager is down (running jobs
    report, claims take further jobs), the daemon sends its own certificate along, and
    the central manager returns a key derived from the token's signature and the
    daemon's certificate binding (``resume_secret``), sealed to that certificate's
    public key: only that daemon can open it, and it is good only for that token with
    that certificate. When the central manager cannot be reached (a refused or failed
    connection, not a slow answer), the daemon runs the handshake alone with it for a
    token it has seen checked (until the token expires, at most ``RESUME_FOR`` seconds
    after the check), and says so (``resume``) so the client derives the same key.
    While the central manager answers it is always asked, and a token it refuses is
    forgotten (revocations apply at once).
    """

    TIMEOUT = 5.0
    RESUME_FOR = 24 * 3600.0
    DOWN_FOR = 5.0  # after the central manager failed to answer, do not wait on it again for this long
    MAX_REMEMBERED = 10000

    def __init__(self, ask: Callable[[dict[str, Any]], Any], issuer: str,
                 close: Callable[[], Any] | None = None, clock: Callable[[], float] | None = None,
                 unseal: Callable[[str], str] | None = None) -> None:
        self.ask = ask
        self.issuer = issuer
        self.close = close
        self.unseal = unseal  # opens a resume key the central manager sealed to our certificate
        self.clock = clock or time.monotonic
        self._resumable: dict[tuple[str, str], _Resumable] = {}  # (token, binding) -> key
        self._down_until = 0.0

    async def challenge(self, req: Mapping[str, Any], binding: str) -> tuple[dict[str, Any], DelegatedState]:
        """The reply to an ``AUTH`` and the state for its ``AUTH_PROOF``; AuthError (one line)."""
        token, nonce = req.get("token"), req.get("nonce")
        if type(nonce) is not str or not 16 <= len(nonce) <= _MAX_NONCE_TEXT:
            raise AuthError(f"{METHOD}: the client's nonce is missing or malformed")
        if type(token) is not str or token.count(".") != 1 or len(token) > 16384:
            raise AuthError(f"{METHOD}: malformed token: expected header.claims, without the signature")
        import asyncio  # lazy: only a daemon's event loop gets here; auth stays importable by tools

        now = self.clock()
        try:
            if now < self._down_until:
                raise ConnectionError("it did not answer a moment ago")
            async with asyncio.timeout(self.TIMEOUT):
                got = await self.ask({"token": token, "nonce": nonce, "binding": binding})
        except RemoteError as e:
            self._resumable.pop((token, binding), None)  # refused now (revoked, expired): never alone again
            raise AuthError(e.message if e.message.startswith(f"{METHOD}:") else f"{METHOD}: {e.message}") from None
        except (ConnectionError, OSError, TimeoutError) as e:
            if now >= self._down_until and not isinstance(e, TimeoutError):
                # unreachable (not merely slow: a flood must not switch us to running alone)
                self._down_until = now + self.DOWN_FOR
            kept = self._resumable.get((token, binding))
            if kept is not None and now < kept.expires:
                return self._alone(kept, token, nonce, binding)
            raise AuthError(f"{METHOD}: the central manager, which checks this pool's tokens, cannot be "
                            f"reached: {e or 'no answer in time'}") from None
        self._down_until = 0.0
        fields = ("nonce", "proof", "expect", "subject", "jti")
        if not all(type(got.get(f)) is str for f in fields) or not isinstance(got.get("scopes"), list):
            raise AuthError(f"{METHOD}: the central manager's answer is malformed")
        annex = got.get("annex")
        state = DelegatedState(got["expect"], got["subject"], tuple(str(x) for x in got["scopes"]), got["jti"],
                               annex if type(annex) is str else "")
        sealed = got.get("resume_sealed")
        resume = None
        if type(sealed) is str and self.unseal is not None:
            with contextlib.suppress(ValueError, OSError):
                resume = self.unseal(sealed)
        if resume is not None and is_tls_binding(binding):
            left = self.RESUME_FOR
            exp = got.get("expires_in")
            if isinstance(exp, int | float) and not isinstance(exp, bool):
                left = min(left, float(exp))
            if len(self._resumable) >= self.MAX_REMEMBERED:
                self._resumable.clear()
            self._resumable[(token, binding)] = _Resumable(resume, state, now + left)
        return {"nonce": got["nonce"], "proof": got["proof"]}, state

    def _alone(self, kept: _Resumable, token: str, nonce: str, binding: str) -> tuple[dict[str, Any], DelegatedState]:
        """The handshake without the central manager, keyed by what it gave us."""
        server_nonce = _nonce()
        proof = _proof(kept.secret, "server", nonce, server_nonce, token, binding)
        expect = _proof(kept.secret, "client", nonce, server_nonce, token, binding)
        state = replace(kept.state, expect=expect)
        return {"nonce": server_nonce, "proof": proof, "resume": True}, state


def delegated_finish(req: Mapping[str, Any], state: DelegatedState) -> Identity:
    """Check an ``AUTH_PROOF`` against the proof the central manager expects."""
    got = req.get("proof")
    if type(got) is not str or not hmac.compare_digest(state.expect.encode(), got.encode("ascii", "replace")):
        raise AuthError(f"{METHOD}: the client could not prove it holds the token (jti {state.jti})")
    return Identity(state.subject, METHOD, state.scopes, state.annex)


def challenge_for(req: Mapping[str, Any], authority: TokenAuthority,
                  seal: Callable[[bytes, bytes], str] | None = None) -> dict[str, Any]:
    """The central manager's side of ``TOKEN_CHALLENGE``: the server nonce and proof for
    a key-less daemon to send, the client proof it must then expect, and whom it
    proves; AuthError when the pool does not honour the token.

    With ``cert`` (the asking daemon's own certificate, base64 DER) whose hash is the
    binding, and ``seal`` (``roost.net.certs.seal``), also the daemon's resume key for
    this token, sealed to that certificate's public key: anyone can send a daemon's
    certificate, only that daemon can open what comes back."""
    binding = req.get("binding")
    if type(binding) is not str or len(binding) > 256:
        raise AuthError(f"{METHOD}: the channel binding is missing or malformed")
    reply, state = server_challenge({**req, "method": METHOD}, authority, binding)
    expect = _proof(state.secret, "client", state.client_nonce, state.server_nonce, state.signing_input, binding)
    levels = [sc.split("/", 1)[1] for sc in state.claims.scopes if sc.startswith("condor:/")]
    out = {**reply, "expect": expect, "subject": state.claims.subject, "scopes": levels, "jti": state.claims.jti}
    if state.claims.annex:
        out["annex"] = state.claims.annex
    cert = req.get("cert")
    if seal is not None and is_tls_binding(binding) and type(cert) is str and len(cert) < 16384:
        try:
            der = base64.b64decode(cert, validate=True)
        except ValueError:
            der = b""
        # only for the certificate the binding names (the daemon's own), sealed to it
        if der and base64.b64encode(sha256(der).digest()).decode("ascii") == binding:
            try:
                out["resume_sealed"] = seal(der, resume_secret(state.secret, binding).encode("ascii"))
            except ValueError:
                pass
            if state.claims.expires_at is not None:
                out["expires_in"] = max(0, state.claims.expires_at - int(authority.clock()))
    return out
