"""The IDTOKENS handshake of roost.net.auth, over real sockets: a real server, the
blocking and the asyncio client, and a recording proxy between them."""

from __future__ import annotations

import asyncio
import os
import pwd
import socket
import threading
import time

import pytest

from roost.net.auth import (
    AuthError,
    ClientHandshake,
    TokenAuthority,
    server_challenge,
    server_finish,
)
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient
from roost.net.tokens import create_token

from .helpers import ThreadedServer

KEY = b"k" * 32
OTHER = b"o" * 32
POOL = "pool.example"


async def whoami(req, peer):
    ident = peer.identity
    return {"name": ident.name if ident else None, "method": ident.method if ident else None,
            "scopes": list(ident.scopes) if ident else []}


def token(subject: str = "alice@example", key: bytes = KEY, **kw) -> str:
    kw.setdefault("now", time.time())
    return create_token(key, "POOL", POOL, subject, **kw)


def authority(keys=None, **kw) -> TokenAuthority:
    return TokenAuthority(keys or {"POOL": KEY}, POOL, clock=time.time, **kw)


def authenticated_only(peer, cmd, req):
    return None if peer.identity is not None else f"{cmd} needs an authenticated peer"


@pytest.fixture
def server():
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(),
                        authorize=authenticated_only, uid_domain="example") as s:
        yield s


def test_a_token_proves_its_subject_over_tcp_for_both_clients(server) -> None:
    tok = token(scopes=["READ", "WRITE"])
    with SyncClient(server.server.address, token=tok) as c:
        assert c.call("WHOAMI") == {"name": "alice@example", "method": "IDTOKENS", "scopes": ["READ", "WRITE"]}
        assert c.call("WHOAMI")["name"] == "alice@example"  # once per connection

    async def run():
        client = AsyncClient(server.server.address, token=token("bob@example"))
        try:
            return await client.call("WHOAMI")
        finally:
            await client.close()

    assert asyncio.run(run())["name"] == "bob@example"


def test_without_a_token_the_policy_refuses_and_says_why(server) -> None:
    with SyncClient(server.server.address) as c, pytest.raises(RemoteError) as err:
        c.call("WHOAMI")
    assert err.value.code == "PERMISSION_DENIED" and "WHOAMI needs an authenticated peer" in str(err.value)


@pytest.mark.parametrize("make, why", [
    (lambda: token(key=OTHER), "not signed with this pool's key"),
    (lambda: token(lifetime=1, now=time.time() - 100), "token expired at"),
    (lambda: create_token(KEY, "POOL", "elsewhere", "alice@example", now=time.time()), "not this pool's"),
    (lambda: create_token(KEY, "NOPE", POOL, "alice@example", now=time.time()), "unknown key 'NOPE'"),
])
def test_a_bad_token_fails_with_one_line_naming_the_method_and_why(server, make, why) -> None:
    with SyncClient(server.server.address, token=make()) as c, pytest.raises(RemoteError) as err:
        c.call("WHOAMI")
    assert err.value.code == "AUTH_FAILED"
    assert "IDTOKENS" in str(err.value) and why in str(err.value) and "\n" not in str(err.value)


def test_a_revoked_token_is_refused() -> None:
    tok = token()
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1",
                        authority=authority(revoked=lambda claims: claims.subject == "alice@example")) as s:
        with SyncClient(s.server.address, token=tok) as c, pytest.raises(RemoteError, match="revoked"):
            c.call("WHOAMI")


def test_a_server_without_the_pools_key_gets_no_proof_from_the_client() -> None:
    """A fake daemon cannot collect what a token proves: the client stops at its reply."""
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1",
                        authority=TokenAuthority({"POOL": OTHER}, POOL, clock=time.time)) as s:
        # the fake server believes the token's claims (same kid and issuer) but holds another key
        with SyncClient(s.server.address, token=token()) as c, pytest.raises(RemoteError) as err:
            c.call("WHOAMI")
        assert err.value.code == "AUTH_FAILED" and "the server does not hold it" in str(err.value)


def test_a_proof_replayed_on_another_connection_fails() -> None:
    tok = token()
    auth = authority()
    hs = ClientHandshake(tok)
    reply, state = server_challenge(hs.hello(), auth)
    proof = hs.answer(reply)
    assert server_finish(proof, state).name == "alice@example"
    _, other = server_challenge(ClientHandshake(tok).hello(), auth)  # a new connection's nonces
    with pytest.raises(AuthError, match="could not prove"):
        server_finish(proof, other)


def test_proof_without_hello_and_unknown_methods_are_refused_and_the_connection_lives(server) -> None:
    with SyncClient(server.server.address) as c:
        with pytest.raises(RemoteError, match="AUTH_PROOF without an AUTH"):
            c.call("AUTH_PROOF", proof="x")
        with pytest.raises(RemoteError, match="'GSI' is not offered"):
            c.call("AUTH", method="GSI", token="a.b", nonce="n" * 20)
        with pytest.raises(RemoteError, match="takes no Kerberos"):
            c.call("AUTH", method="KERBEROS", token="a.b")
        with pytest.raises(RemoteError, match="malformed"):
            c.call("AUTH", method="IDTOKENS", token=["x"], nonce="n" * 20)
        with pytest.raises(RemoteError, match="PERMISSION_DENIED|needs an authenticated"):
            c.call("WHOAMI")


def test_a_server_that_takes_no_tokens_says_so() -> None:
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1") as s:
        with SyncClient(s.server.address, token=token()) as c, pytest.raises(RemoteError, match="takes no tokens"):
            c.call("WHOAMI")


def test_unix_socket_peers_are_known_by_the_kernel_as_user_at_uid_domain(tmp_path) -> None:
    path = str(tmp_path / "s.sock")
    with ThreadedServer({"WHOAMI": whoami}, unix_path=path, uid_domain="example") as s:
        del s
        with SyncClient("unix:" + path) as c:
            got = c.call("WHOAMI")
    assert got == {"name": f"{pwd.getpwuid(os.getuid()).pw_name}@example", "method": "FS", "scopes": []}


def test_the_signature_never_crosses_the_wire(server) -> None:
    """A proxy records every byte both ways; the token's signature is in none of them."""
    tok = token()
    signature = tok.rsplit(".", 1)[1]
    target = server.server.address.rsplit(":", 1)
    seen = bytearray()
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]

    def pump(a: socket.socket, b: socket.socket) -> None:
        while data := a.recv(65536):
            seen.extend(data)
            b.sendall(data)
        b.shutdown(socket.SHUT_WR)

    def proxy() -> None:
        conn, _ = lsock.accept()
        up = socket.create_connection((target[0], int(target[1])))
        t = threading.Thread(target=pump, args=(up, conn), daemon=True)
        t.start()
        pump(conn, up)
        t.join(5)

    th = threading.Thread(target=proxy, daemon=True)
    th.start()
    with SyncClient(f"127.0.0.1:{port}", token=tok) as c:
        assert c.call("WHOAMI")["name"] == "alice@example"
    th.join(5)
    lsock.close()
    assert b"WHOAMI" in seen and b"AUTH_PROOF" in seen
    assert signature.encode() not in seen and KEY not in seen


def test_a_deeply_nested_token_header_is_malformed_not_an_internal_error(server) -> None:
    import base64

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    with SyncClient(server.server.address) as c, pytest.raises(RemoteError) as err:
        c.call("AUTH", method="IDTOKENS", nonce="n" * 20, token=b64(b"[" * 12000) + "." + b64(b"{}"))
    assert err.value.code == "AUTH_FAILED" and "malformed token" in str(err.value)


def test_frame_limits_come_before_the_body_and_a_stalled_body_ends_the_connection() -> None:
    """A stranger may announce at most UNAUTHENTICATED_FRAME; an authenticated peer the
    daemon's own limit; nothing of an over-long body is read. A body that stops
    arriving closes the connection after the frame timeout (its buffer goes with it)."""
    import struct

    from roost.net import framing
    from roost.net.server import UNAUTHENTICATED_FRAME

    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(), max_frame=4 << 20) as srv:
        host, port = srv.server.address.rsplit(":", 1)

        def raw(payload: bytes, tok: str | None = None) -> bytes:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                if tok is not None:
                    hs = ClientHandshake(tok)
                    f = s.makefile("rb")
                    s.sendall(framing.encode(hs.hello()))
                    reply = framing.decode_body(f.read(framing.body_length(f.read(4))))
                    s.sendall(framing.encode(hs.answer(reply)))
                    framing.decode_body(f.read(framing.body_length(f.read(4))))
                s.sendall(payload)
                s.shutdown(socket.SHUT_WR)  # then every answer, to the daemon's hang-up
                return s.makefile("rb").read()

        got = raw(struct.pack(">I", UNAUTHENTICATED_FRAME + 1))
        assert b"BAD_FRAME" in got and b"before authentication" in got
        got = raw(struct.pack(">I", 2 << 30))  # 2 GB announced: refused at once
        assert b"BAD_FRAME" in got
        big = framing.encode({"cmd": "WHOAMI", "pad": "x" * (2 << 20)})
        assert b'"name":"alice@example"' in raw(big, token())  # 2 MiB: fine once authenticated
        got = raw(struct.pack(">I", (4 << 20) + 1), token())
        assert b"this daemon's frame limit" in got

        srv.server.frame_timeout = 0.3
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(struct.pack(">I", 1000) + b'{"cmd"')  # then silence
            t0 = time.monotonic()
            assert s.makefile("rb").read() == b""  # closed, no answer
            assert time.monotonic() - t0 < 5


def test_a_host_of_two_pools_presents_each_token_until_the_pool_honours_one() -> None:
    """A host that holds tokens of several pools (flocking, issue 29) presents them in
    turn on one connection: the other pool's is refused (its issuer is not this pool's),
    the next one proves the subject; a second token of a refused issuer and key is not
    tried; with none of this pool's, the refusal names each token's reason."""
    theirs = create_token(OTHER, "POOL", "other.example", "alice@other.example", now=time.time())
    also_theirs = create_token(OTHER, "POOL", "other.example", "bob@other.example", now=time.time())
    ours = token("alice@example")
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(),
                        authorize=authenticated_only, uid_domain="example") as s:
        with SyncClient(s.server.address, token=[theirs, also_theirs, ours]) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"

        async def run():
            client = AsyncClient(s.server.address, token=[theirs, ours])
            try:
                return await client.call("WHOAMI")
            finally:
                await client.close()

        assert asyncio.run(run())["name"] == "alice@example"
        with SyncClient(s.server.address, token=[theirs, also_theirs]) as c, pytest.raises(RemoteError) as err:
            c.call("WHOAMI")
        assert err.value.code == "AUTH_FAILED" and str(err.value).count("not this pool's") == 1


def test_a_peer_that_accepted_a_token_is_offered_it_first_next_time() -> None:
    """A host of two pools talks to each pool's daemons again and again: once a peer
    accepted one of its tokens, the next connection to that peer presents that one
    first (no refusal and round trip spent on the other pool's), for both clients."""
    from roost.net.auth import client_methods

    theirs = create_token(OTHER, "POOL", "other.example", "alice@other.example", now=time.time())
    ours = token("alice@example")

    def first_presented(peer: str) -> str:
        hello = next(client_methods([theirs, ours], tls=False, has_cert=False, peer=peer))
        return str(hello["token"])

    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(),
                        authorize=authenticated_only, uid_domain="example") as s:
        addr = s.server.address
        assert theirs.startswith(first_presented(addr))  # never talked to it: the given order
        with SyncClient(addr, token=[theirs, ours]) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"
        assert ours.startswith(first_presented(addr))
        assert theirs.startswith(first_presented("127.0.0.1:1"))  # another peer: still the given order
        with SyncClient(addr, token=[theirs, ours]) as c:  # and it still works, with one hello
            assert c.call("WHOAMI")["name"] == "alice@example"


def test_candidate_tokens_one_per_issuer_and_key_in_order() -> None:
    from roost.net.auth import MAX_TOKENS_TRIED, candidate_tokens

    a1, a2 = token("a@example"), token("b@example")
    b = create_token(OTHER, "POOL", "other.example", "a@other.example", now=time.time())
    assert candidate_tokens(None) == [] and candidate_tokens(a1) == [a1]
    assert candidate_tokens([b, a1, a2]) == [b, a1]
    many = [create_token(KEY, "POOL", f"pool{i}.example", "a@x", now=time.time()) for i in range(20)]
    assert candidate_tokens(many) == many[:MAX_TOKENS_TRIED]


def test_a_glidein_token_proves_its_annex_directly_and_through_the_central_manager() -> None:
    """roost annex's token names its annex (``roost_annex``): the identity it proves
    carries it, whether the daemon holds the pool key or asks the central manager."""
    from roost.net.auth import DelegatedState, challenge_for, delegated_finish

    async def whose(req, peer):
        return {"scopes": list(peer.identity.scopes), "annex": peer.identity.annex}

    tok = token("condor@example", scopes=["ADVERTISE_STARTD", "READ"], annex="a1")
    with ThreadedServer({"WHOAMI": whose}, host="127.0.0.1", authority=authority(),
                        authorize=authenticated_only, uid_domain="example") as s:
        with SyncClient(s.server.address, token=tok) as c:
            got = c.call("WHOAMI")
        with SyncClient(s.server.address, token=token()) as c:
            plain = c.call("WHOAMI")
    assert (got["annex"], got["scopes"]) == ("a1", ["ADVERTISE_STARTD", "READ"])
    assert plain["annex"] == ""
    hs = ClientHandshake(tok, binding="b")
    reply = challenge_for({**hs.hello(), "binding": "b"}, authority())
    assert reply["annex"] == "a1"
    state = DelegatedState(reply["expect"], reply["subject"], tuple(reply["scopes"]), reply["jti"], reply["annex"])
    assert delegated_finish(hs.answer(reply), state).annex == "a1"
