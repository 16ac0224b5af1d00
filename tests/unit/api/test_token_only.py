"""A client given someone else's token (the web dashboard acting for its visitor)
authenticates with that token only: never with this process's certificate or Kerberos
ticket after the token fails, and never as anyone but the token's subject."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from roost.api.connection import PoolError, client_credentials
from roost.net import framing
from roost.net.auth import TokenAuthority, server_challenge, server_finish
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient
from roost.net.tokens import create_token

KEY = b"k" * 32
ISSUER = "test.pool"


def token(subject: str) -> str:
    return create_token(KEY, "POOL", ISSUER, subject, now=time.time(), lifetime=3600)


def home_with_certificate(tmp_path: Path) -> Path:
    """A pool whose tools have a certificate and may use SSL and KERBEROS: the settings
    a dashboard on a central manager may well have."""
    (tmp_path / "ssl").mkdir()
    for name in ("host.crt", "client.crt", "client.key"):
        (tmp_path / "ssl" / name).write_text("")
    (tmp_path / "roost_config").write_text(
        f"AUTH_SSL_CLIENT_CERTFILE = {tmp_path}/ssl/client.crt\n"
        f"AUTH_SSL_CLIENT_KEYFILE = {tmp_path}/ssl/client.key\n"
        "SEC_DEFAULT_AUTHENTICATION_METHODS = FS, IDTOKENS, SSL, KERBEROS\n"
        "KERBEROS_SERVER_PRINCIPAL = host/cm.example@EXAMPLE\n")
    return tmp_path


def test_a_given_token_is_presented_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOST_CONFIG", raising=False)
    home = str(home_with_certificate(tmp_path))
    own = client_credentials(home, "10.0.0.1:9618")
    assert own["tls"].certfile and "SSL" in own["tls"].methods  # the process's own identity: as configured
    visitor = token("alice@test.pool")
    creds = client_credentials(home, "10.0.0.1:9618", visitor)
    tls = creds["tls"]
    assert creds["token"] == visitor
    assert tls.methods == ("IDTOKENS",)
    assert not tls.has_cert and tls.keyfile is None
    assert tls.kerberos_target("10.0.0.1") is None
    assert creds["expect_identity"] == "alice@test.pool"
    assert tls.cafile == own["tls"].cafile and tls.encryption == own["tls"].encryption  # the server is still checked


def test_a_malformed_token_is_refused_before_connecting(tmp_path: Path) -> None:
    with pytest.raises(PoolError, match="malformed"):
        client_credentials(str(tmp_path), "127.0.0.1:1", "a.b.c")


class FakeDaemon:
    """A daemon that checks tokens properly, then says it authenticated ``says``:
    a daemon mapping the token to someone else, or one the client must not trust."""

    def __init__(self, says: str | None) -> None:
        self.says = says
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        conn, _ = self.listener.accept()
        authority = TokenAuthority({"POOL": KEY}, ISSUER, clock=time.time)
        state = None
        with conn, conn.makefile("rb") as f:
            while True:
                header = f.read(framing.HEADER_SIZE)
                if len(header) < framing.HEADER_SIZE:
                    return
                req = framing.decode_body(f.read(framing.body_length(header)))
                if req.get("cmd") == "AUTH":
                    reply, state = server_challenge(req, authority)
                    conn.sendall(framing.encode({"ok": True, **reply}))
                elif req.get("cmd") == "AUTH_PROOF":
                    assert state is not None
                    ident = server_finish(req, state)
                    conn.sendall(framing.encode({"ok": True, "identity": self.says or ident.name}))
                else:
                    conn.sendall(framing.encode({"ok": True}))


def test_the_daemon_must_report_the_tokens_subject(tmp_path: Path) -> None:
    visitor = token("alice@test.pool")
    honest = FakeDaemon(None)
    client = SyncClient(honest.address, token=visitor, **{
        k: v for k, v in client_credentials(str(tmp_path), honest.address, visitor).items() if k != "token"})
    client.connect()
    assert client.identity == "alice@test.pool"
    client.close()

    lying = FakeDaemon("condor@test.pool")
    client = SyncClient(lying.address, **client_credentials(str(tmp_path), lying.address, visitor))
    with pytest.raises(RemoteError, match="not as the token's 'alice@test.pool'"):
        client.connect()
