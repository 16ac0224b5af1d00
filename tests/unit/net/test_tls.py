"""TLS on roost's connections (roost.net.tls, certs, certmap), over real sockets with
real certificates: STARTTLS, plain TCP refused, the SSL method mapped by a map file,
a certificate of another CA refused, and a man in the middle with his own certificate
unable to relay an IDTOKENS handshake (the channel binding)."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import stat
import threading
import time

import pytest

from roost.net import framing
from roost.net.auth import (
    AuthError,
    ClientHandshake,
    client_methods,
    server_challenge,
    server_finish,
)
from roost.net.certmap import MapFileError, map_principal, parse
from roost.net.certs import CertError, create_ca, ensure_self_signed, issue, subject_of_file
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient
from roost.net.tls import (
    ClientTLS,
    ServerTLS,
    TLSConfigError,
    binding_of,
    is_loopback,
    level,
    own_binding,
    server_context,
    strongest,
)

from .helpers import ThreadedServer
from .test_auth import KEY, POOL, authority, token, whoami


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = create_ca(str(d / "ca"), "test CA")
    host = issue(str(d / "ca"), str(d / "host"), "localhost", names=["localhost", "127.0.0.1"])
    alice = issue(str(d / "ca"), str(d / "alice"), "alice", organization="example")
    nomap = issue(str(d / "ca"), str(d / "nomap"), "nomap", organization="example")
    create_ca(str(d / "other"), "other CA")
    fake = issue(str(d / "other"), str(d / "fake"), "alice", organization="example")
    assert ensure_self_signed(str(d / "self.crt"), str(d / "self.key"), ["127.0.0.1"])
    return {"dir": d, "ca": ca.cert_path, "host": host, "alice": alice, "nomap": nomap, "fake": fake,
            "self": (str(d / "self.crt"), str(d / "self.key"))}


def _mapper(subject: str) -> str:
    name = map_principal(parse('SSL "/O=example/CN=alice" alice@example\n'), "SSL", subject)
    if name is None:
        raise AuthError(f"SSL: no mapping for certificate subject {subject!r}")
    return name


def tls_server(pki, *, cert=None, encryption="REQUIRED", cafile=True) -> ThreadedServer:
    crt, key = cert or (pki["host"].cert_path, pki["host"].key_path)
    ctx = server_context(crt, key, pki["ca"] if cafile else None)
    # encrypt_loopback: these tests run on 127.0.0.1, which is otherwise left plain
    tls = ServerTLS(ctx, encryption, True, own_binding(crt), _mapper)
    return ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(), tls=tls)


def client_tls(pki=None, who=None, **kw) -> ClientTLS:
    kw.setdefault("encrypt_loopback", True)
    if who is not None:
        kw["certfile"], kw["keyfile"] = pki[who].cert_path, pki[who].key_path
    return ClientTLS(kw.pop("encryption", "REQUIRED"), **kw)


# -- pure parts ----------------------------------------------------------------------

def test_levels_and_loopback() -> None:
    assert level("required", "K") == "REQUIRED" and level(None, "K", "NEVER") == "NEVER"
    with pytest.raises(TLSConfigError, match="K = 'sometimes'"):
        level("sometimes", "K")
    assert strongest("OPTIONAL", "REQUIRED") == "REQUIRED" and strongest("NEVER", "OPTIONAL") == "OPTIONAL"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("unix")
    assert not is_loopback("10.1.2.3") and not is_loopback("example.org")
    assert binding_of(None) == "" and binding_of(b"x") != binding_of(b"y")


def test_map_file_literal_quoted_regex_groups_and_first_match() -> None:
    rules = parse(
        "# comment\n"
        "SSL \"/CN=exact\" alice@a\n"
        'SSL "/O=Big Org/CN=bob" bob@a\n'
        "SSL /^\\/O=pool\\/CN=([a-z]+)$/ \\1@pool\n"
        "SSL /^\\/cn=ROOT/i root@pool\n"
        "KERBEROS /^(.*)@REALM$/ \\1@pool\n"
        "SSL /.*/ nobody@pool\n", "m.map")
    assert map_principal(rules, "SSL", "/CN=exact") == "alice@a"
    assert map_principal(rules, "SSL", "/O=Big Org/CN=bob") == "bob@a"
    assert map_principal(rules, "SSL", "/O=pool/CN=carol") == "carol@pool"
    assert map_principal(rules, "SSL", "/CN=root/x") == "root@pool"
    assert map_principal(rules, "KERBEROS", "dave@REALM") == "dave@pool"
    assert map_principal(rules, "SSL", "/O=pool/CN=Carol9") == "nobody@pool"  # the last rule catches it
    assert map_principal(rules[:-1], "SSL", "/CN=other") is None
    assert map_principal(rules, "IDTOKENS", "/CN=exact") is None  # rules are per method


@pytest.mark.parametrize("text,why", [
    ("SSL onlytwo", "m.map:1: expected METHOD PRINCIPAL CANONICAL, found 2"),
    ("# x\nSSL /unterminated x", "m.map:2: unterminated /"),
    ("SSL /(/ x", "m.map:1: bad regular expression"),
    ("SSL /a/q x", "m.map:1: unknown regex flag"),
    ('SSL "open x', "m.map:1: unterminated \""),
])
def test_map_file_errors_name_file_and_line(text, why) -> None:
    with pytest.raises(MapFileError) as e:
        parse(text, "m.map")
    assert str(e.value).startswith(why)


def test_certificates_keys_owner_only_and_no_second_ca(pki) -> None:
    d = pki["dir"]
    for key in (d / "ca" / "ca.key", d / "alice.key", d / "self.key"):
        assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert subject_of_file(pki["alice"].cert_path) == "/O=example/CN=alice"
    with pytest.raises(CertError, match="already holds a CA"):
        create_ca(str(d / "ca"), "again")
    with pytest.raises(CertError, match="no CA in"):
        issue(str(d / "nowhere"), str(d / "x"), "x")
    assert not ensure_self_signed(*pki["self"], ["127.0.0.1"])  # made once, then kept
    # the issued host certificate verifies against the CA, for its IP
    ctx = ssl.create_default_context(cafile=pki["ca"])
    srv = server_context(pki["host"].cert_path, pki["host"].key_path, None)
    a, b = socket.socketpair()
    with a, b:
        t = threading.Thread(target=lambda: srv.wrap_socket(b, server_side=True).close(), daemon=True)
        t.start()
        ctx.wrap_socket(a, server_hostname="127.0.0.1").close()
        t.join(5)


def test_the_client_tries_each_method_and_collects_every_reason() -> None:
    steps = client_methods("a.b.c", tls=True, has_cert=True, methods=("SSL", "IDTOKENS"))
    first = next(steps)
    assert first == {"cmd": "AUTH", "method": "SSL"}
    hello = steps.send({"ok": False, "error": "SSL: no mapping for x"})
    assert hello["method"] == "IDTOKENS"
    with pytest.raises(AuthError) as e:
        steps.send({"ok": False, "error": "IDTOKENS: token expired"})
    assert str(e.value) == "SSL: no mapping for x; IDTOKENS: token expired"
    nothing = client_methods(None, tls=False, has_cert=True)
    with pytest.raises(StopIteration) as stop:
        next(nothing)
    assert stop.value.value is None  # nothing to try: unauthenticated, not a failure


def test_proofs_bind_the_tls_certificate() -> None:
    tok = token("alice@example")
    auth = authority()
    hs = ClientHandshake(tok, binding="seen-by-client")
    reply, state = server_challenge(hs.hello(), auth, binding="the-servers-own")
    with pytest.raises(AuthError, match="someone between us"):
        hs.answer(reply)  # the client sees another certificate than the server's
    hs = ClientHandshake(tok, binding="same")
    reply, state = server_challenge(hs.hello(), auth, binding="same")
    assert server_finish(hs.answer(reply), state).name == "alice@example"


# -- over sockets ----------------------------------------------------------------------

def test_starttls_then_tokens_for_both_clients_and_calls_stay_on_tls(pki) -> None:
    with tls_server(pki) as srv:
        c = SyncClient(srv.server.address, token=token("alice@example"), tls=client_tls(cafile=pki["ca"]))
        with c:
            for _ in range(3):
                assert c.call("WHOAMI") == {"name": "alice@example", "method": "IDTOKENS", "scopes": []}
            assert isinstance(c._sock, ssl.SSLSocket)

        async def go():
            a = AsyncClient(srv.server.address, token=token("bob@example"), tls=client_tls())
            try:
                return await a.call("WHOAMI"), a._conn.writer.get_extra_info("ssl_object") is not None
            finally:
                await a.close()

        got, on_tls = asyncio.run(go())
        assert got["name"] == "bob@example" and on_tls


def test_plain_tcp_to_a_tls_daemon_is_refused_in_one_line(pki) -> None:
    with tls_server(pki) as srv:
        host, port = srv.server.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(framing.encode({"cmd": "WHOAMI"}))
            f = s.makefile("rb")
            resp = framing.decode_body(f.read(framing.body_length(f.read(4))))
            assert resp["code"] == "ENCRYPTION_REQUIRED" and "STARTTLS" in resp["error"]
            assert f.read(1) == b""  # and it hangs up
        # a client that will not start TLS is told the same
        with SyncClient(srv.server.address, token=token()) as c, pytest.raises(RemoteError) as e:
            c.call("WHOAMI")
        assert "only TLS" in e.value.message
        # garbage where a TLS handshake should be: the daemon ends that connection, and answers others
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(framing.encode({"cmd": "STARTTLS"}))
            f = s.makefile("rb")
            assert framing.decode_body(f.read(framing.body_length(f.read(4))))["ok"] is True
            s.sendall(b"\x00" * 64 + framing.encode({"cmd": "WHOAMI"}))
            assert f.read(1) == b""
        with SyncClient(srv.server.address, token=token(), tls=client_tls()) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"


def test_ssl_method_maps_the_subject_and_refuses_another_ca_or_no_mapping(pki) -> None:
    with tls_server(pki) as srv:
        addr = srv.server.address
        with SyncClient(addr, tls=client_tls(pki, "alice", methods=("SSL",))) as c:
            assert c.call("WHOAMI") == {"name": "alice@example", "method": "SSL", "scopes": []}
        with pytest.raises(RemoteError) as e, SyncClient(addr, tls=client_tls(pki, "nomap", methods=("SSL",))) as c:
            c.call("WHOAMI")
        assert e.value.code == "AUTH_FAILED" and "no mapping for certificate subject '/O=example/CN=nomap'" in e.value.message
        with pytest.raises(RemoteError) as e, SyncClient(addr, tls=client_tls(pki, "fake", methods=("SSL",))) as c:
            c.call("WHOAMI")
        assert e.value.code == "AUTH_FAILED" and "did not accept our certificate" in e.value.message
        # a certificate that does not map, then a token: the token wins, after the SSL failure
        tls = client_tls(pki, "nomap", methods=("SSL", "IDTOKENS"))
        with SyncClient(addr, token=token("carol@example"), tls=tls) as c:
            assert c.call("WHOAMI")["name"] == "carol@example"


def test_the_client_checks_the_daemons_certificate_against_its_ca(pki) -> None:
    with tls_server(pki, cert=pki["self"]) as srv:  # self-signed: nobody's CA signed it
        with pytest.raises(RemoteError) as e, SyncClient(srv.server.address, token=token(),
                                                         tls=client_tls(cafile=pki["ca"])) as c:
            c.call("WHOAMI")
        assert "does not verify" in e.value.message
        # with no CA to check against, the token's proofs bind to this certificate
        with SyncClient(srv.server.address, token=token(), tls=client_tls()) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"


def test_a_daemon_without_tls_is_refused_by_a_client_that_requires_it(pki) -> None:
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority()) as srv:
        with pytest.raises(RemoteError) as e, SyncClient(srv.server.address, token=token(), tls=client_tls()) as c:
            c.call("WHOAMI")
        assert "does not start TLS" in e.value.message and "REQUIRED" in e.value.message
        with SyncClient(srv.server.address, token=token(), tls=client_tls(encryption="PREFERRED")) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"  # PREFERRED goes on in the clear


def test_a_man_in_the_middle_with_his_own_certificate_cannot_relay_the_handshake(pki) -> None:
    """The proxy ends the client's TLS with a certificate of its own, opens its own TLS
    to the daemon and relays every frame: the token's proofs carry the certificate each
    side saw, so the client refuses the daemon's proof and sends no proof of its own."""
    with tls_server(pki) as srv:
        host, port = srv.server.address.rsplit(":", 1)
        mitm_ctx = server_context(*pki["self"], None)
        up_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        up_ctx.check_hostname, up_ctx.verify_mode = False, ssl.CERT_NONE
        lst = socket.create_server(("127.0.0.1", 0))
        relayed: list[dict] = []

        def frame(f) -> dict:
            return framing.decode_body(f.read(framing.body_length(f.read(4))))

        def mitm() -> None:
            down, _ = lst.accept()
            df = down.makefile("rb")
            assert frame(df)["cmd"] == "STARTTLS"
            down.sendall(framing.encode({"ok": True}))
            down = mitm_ctx.wrap_socket(down, server_side=True)
            df = down.makefile("rb")
            up = socket.create_connection((host, int(port)))
            uf = up.makefile("rb")
            up.sendall(framing.encode({"cmd": "STARTTLS"}))
            assert frame(uf)["ok"]
            up = up_ctx.wrap_socket(up)
            uf = up.makefile("rb")
            try:
                while True:
                    req = frame(df)
                    relayed.append(req)
                    up.sendall(framing.encode(req))
                    down.sendall(framing.encode(frame(uf)))
            except (OSError, ValueError, Exception):
                pass

        t = threading.Thread(target=mitm, daemon=True)
        t.start()
        with pytest.raises(RemoteError) as e, SyncClient(f"127.0.0.1:{lst.getsockname()[1]}",
                                                         token=token(), tls=client_tls()) as c:
            c.call("WHOAMI")
        assert "someone between us" in e.value.message
        assert [r["cmd"] for r in relayed] == ["AUTH"]  # no AUTH_PROOF, no command got through
        lst.close()
        t.join(5)


def test_many_tls_connections_do_not_leak_or_stop_the_daemon(pki) -> None:
    with tls_server(pki) as srv:
        t0 = time.monotonic()
        for _ in range(30):
            with SyncClient(srv.server.address, token=token(), tls=client_tls()) as c:
                c.call("WHOAMI")
        assert time.monotonic() - t0 < 60
        assert len(srv.server._conns) <= 1


def test_a_missing_ca_file_is_a_clear_error(pki, tmp_path) -> None:
    with tls_server(pki) as srv:
        tls = client_tls(cafile=str(tmp_path / "none.crt"))
        with pytest.raises(RemoteError) as e, SyncClient(srv.server.address, token=token(), tls=tls) as c:
            c.call("WHOAMI")
        assert "AUTH_SSL_CLIENT_CAFILE" in e.value.message and "no such file" in e.value.message
    with pytest.raises(TLSConfigError, match="AUTH_SSL_SERVER_CAFILE"):
        server_context(pki["host"].cert_path, pki["host"].key_path, str(tmp_path / "none.crt"))
    assert KEY and POOL  # the shared test key and trust domain of test_auth


def test_bytes_sent_in_the_clear_after_starttls_end_the_connection(pki) -> None:
    """A command appended on the path after a client's STARTTLS would otherwise be read
    as if it came over the client's TLS (and as the client's certificate's identity)."""
    with tls_server(pki) as srv:
        host, port = srv.server.address.rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(framing.encode({"cmd": "STARTTLS"}) + framing.encode({"cmd": "WHOAMI"}))
            assert s.makefile("rb").read(1) == b""  # no ok: closed
        with SyncClient(srv.server.address, token=token(), tls=client_tls()) as c:
            assert c.call("WHOAMI")["name"] == "alice@example"


def test_a_client_that_prefers_tls_sees_starttls_stripped(pki) -> None:
    """The proxy answers STARTTLS itself (TLS_UNAVAILABLE) and relays the rest in the
    clear to a daemon that offers TLS: the daemon's proof says it offers TLS, so the
    client refuses to go on in the clear."""
    with tls_server(pki, encryption="PREFERRED") as srv:
        host, port = srv.server.address.rsplit(":", 1)
        lst = socket.create_server(("127.0.0.1", 0))

        def frame(f) -> dict:
            return framing.decode_body(f.read(framing.body_length(f.read(4))))

        def strip() -> None:
            down, _ = lst.accept()
            df = down.makefile("rb")
            assert frame(df)["cmd"] == "STARTTLS"
            down.sendall(framing.encode({"ok": False, "code": "TLS_UNAVAILABLE", "error": "no TLS here"}))
            up = socket.create_connection((host, int(port)))
            uf = up.makefile("rb")
            try:
                while True:
                    up.sendall(framing.encode(frame(df)))
                    down.sendall(framing.encode(frame(uf)))
            except Exception:
                pass

        t = threading.Thread(target=strip, daemon=True)
        t.start()
        tls = client_tls(encryption="PREFERRED")
        with pytest.raises(RemoteError) as e, SyncClient(f"127.0.0.1:{lst.getsockname()[1]}", token=token(),
                                                         tls=tls) as c:
            c.call("WHOAMI")
        assert "stripping TLS" in e.value.message
        lst.close()
        t.join(5)
        # without the proxy, a PREFERRED client runs TLS with that daemon
        with SyncClient(srv.server.address, token=token(), tls=tls) as c:
            assert c.call("WHOAMI")["name"] == "alice@example" and isinstance(c._sock, ssl.SSLSocket)


def test_the_central_manager_runs_a_keyless_hosts_handshake_without_giving_out_secrets() -> None:
    from roost.net.auth import DelegatedState, challenge_for, delegated_finish

    tok = token("bob@example", scopes=["READ"])
    hs = ClientHandshake(tok, binding="the key-less daemon's certificate")
    hello = {k: v for k, v in hs.hello().items() if k in ("token", "nonce")}  # TOKEN_CHALLENGE's arguments
    got = challenge_for({**hello, "binding": "the key-less daemon's certificate"}, authority())
    assert set(got) == {"nonce", "proof", "expect", "subject", "scopes", "jti"}
    assert tok.rsplit(".", 1)[1] not in str(got)  # never the signature
    state = DelegatedState(got["expect"], got["subject"], tuple(got["scopes"]), got["jti"])
    ident = delegated_finish(hs.answer(got), state)
    assert (ident.name, ident.scopes) == ("bob@example", ("READ",))
    with pytest.raises(AuthError, match="could not prove"):
        delegated_finish({"proof": "forged"}, state)
    # a token the pool did not sign still gets a challenge, but its holder cannot answer it
    forged = token("root@example", key=b"z" * 32)
    hs = ClientHandshake(forged, binding="b")
    got = challenge_for({**hs.hello(), "binding": "b"}, authority())
    with pytest.raises(AuthError, match="proof does not match"):
        hs.answer(got)


def test_a_keyless_daemon_runs_handshakes_alone_while_the_central_manager_is_down(tmp_path) -> None:
    """Only for a token the central manager checked for it, only with the certificate it
    was checked on (the key comes sealed to that certificate: nobody else can open
    it), only until the token expires; and never while the manager answers."""
    import base64 as b64

    from roost.net.auth import DelegatedAuthority, challenge_for, delegated_finish
    from roost.net.certs import seal, unseal

    cert, key = str(tmp_path / "host.crt"), str(tmp_path / "host.key")
    ensure_self_signed(cert, key, ["exec1"])
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    binding = binding_of(der)
    up = [True]
    now = [1000.0]
    asked = []

    async def ask(args):
        asked.append(args)
        if not up[0]:
            raise ConnectionError("cannot connect to the central manager")
        return challenge_for({**args, "cert": b64.b64encode(der).decode()}, authority(), seal)

    keyless = DelegatedAuthority(ask, POOL, clock=lambda: now[0], unseal=lambda s: unseal(key, s).decode())

    def handshake(tok, bind=binding):
        hs = ClientHandshake(tok, binding=bind)
        reply, state = asyncio.run(keyless.challenge(hs.hello(), bind))
        return reply, delegated_finish(hs.answer(reply), state)

    tok = token("bob@example", scopes=["READ"], lifetime=3600)
    reply, ident = handshake(tok)  # the manager checks it: nothing resumed
    assert "resume" not in reply and ident.name == "bob@example"
    # what the manager sent: a sealed key, never the key itself; another host that sends
    # this daemon's (public) certificate gets the same box and cannot open it
    box = challenge_for({**ClientHandshake(tok, binding=binding).hello(), "binding": binding,
                         "cert": b64.b64encode(der).decode()}, authority(), seal)
    assert "resume" not in box and "resume_sealed" in box
    other_cert, other_key = str(tmp_path / "other.crt"), str(tmp_path / "other.key")
    ensure_self_signed(other_cert, other_key, ["thief"])
    with pytest.raises(ValueError):
        unseal(other_key, box["resume_sealed"])
    # a certificate that is not the binding's gets nothing
    other_der = ssl.PEM_cert_to_DER_cert(open(other_cert).read())
    assert "resume_sealed" not in challenge_for(
        {**ClientHandshake(tok, binding=binding).hello(), "binding": binding,
         "cert": b64.b64encode(other_der).decode()}, authority(), seal)
    up[0] = False
    reply, ident = handshake(tok)  # down: the daemon runs it alone, the client follows
    assert reply["resume"] is True and (ident.name, ident.scopes) == ("bob@example", ("READ",))
    with pytest.raises(AuthError, match="cannot be reached"):
        handshake(token("carol@example"))  # never checked here: refused
    with pytest.raises(AuthError, match="cannot be reached"):
        handshake(tok, bind="another certificate")
    # a man in the middle with his own certificate: the client's key depends on the
    # certificate it sees, so the proofs do not match
    hs = ClientHandshake(tok, binding="the middle's certificate")
    reply, _ = asyncio.run(keyless.challenge({**hs.hello()}, binding))
    with pytest.raises(AuthError, match="proof does not match"):
        hs.answer(reply)
    now[0] += 3601  # past the token's expiry
    with pytest.raises(AuthError, match="cannot be reached"):
        handshake(tok)


def test_a_daemon_killed_mid_handshake_is_a_lost_connection_not_an_auth_failure(pki) -> None:
    """A schedd killed while a starter's TLS handshake runs resets the connection: the
    caller sees a ConnectionError and retries, as for any lost connection. As
    AUTH_FAILED, a starter once took it for the schedd refusing the job's output and held
    the job (the chaos test: 4 of 1,000 held)."""
    listener = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{listener.getsockname()[1]}"

    def agree_then_die() -> None:
        for _ in range(2):  # the blocking client, then the asyncio one
            conn, _ = listener.accept()
            conn.recv(65536)  # STARTTLS
            conn.sendall(framing.encode({"ok": True}))
            conn.recv(65536)  # the ClientHello
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
            conn.close()  # an RST, as from a process killed with the socket open

    t = threading.Thread(target=agree_then_die, daemon=True)
    t.start()
    try:
        with pytest.raises(ConnectionError), SyncClient(address, token=token(), tls=client_tls(pki)) as c:
            c.call("WHOAMI")

        async def run() -> None:
            client = AsyncClient(address, token=token(), tls=client_tls(pki))
            try:
                await client.call("WHOAMI")
            finally:
                await client.close()

        with pytest.raises(ConnectionError):
            asyncio.run(run())
    finally:
        t.join(10)
        listener.close()
