"""The KERBEROS method against a real MIT KDC started by the test (``kdc.py``): a user
with a ticket is known by the map file, over TLS and not; no ticket, an unknown
service, a daemon without the service's key and a relayed context each fail in one
line naming why; the client goes on to its next method."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roost.net.auth import AuthError, KerberosSettings
from roost.net.certmap import map_principal, parse
from roost.net.errors import RemoteError
from roost.net.gss import Acceptor, GSSError, Initiator
from roost.net.syncclient import SyncClient
from roost.net.tls import ClientTLS, ServerTLS, own_binding, server_context

from .helpers import ThreadedServer
from .kdc import KDC, REALM, unavailable
from .test_auth import authority, token, whoami

RULES = parse(f"KERBEROS /^([a-z]+)@{REALM.replace('.', '[.]')}$/ \\1@example\n")


def _map(principal: str) -> str:
    name = map_principal(RULES, "KERBEROS", principal)
    if name is None:
        raise AuthError(f"KERBEROS: no mapping for principal {principal!r}")
    return name


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    k = KDC().start()
    d = tmp_path_factory.mktemp("krb")
    old = {v: os.environ.get(v) for v in ("KRB5_CONFIG", "KRB5CCNAME", "KRB5_KTNAME")}
    os.environ.update(k.env)
    try:
        k.add_user("alice", "alice-pw")
        k.add_user("Mallory", "m-pw")
        svc = k.add_service("condor/pool", d / "daemons.keytab")
        k.add_service("condor/other", d / "other.keytab")
        k.kinit("alice", "alice-pw", d / "alice.cc")
        k.kinit("Mallory", "m-pw", d / "mallory.cc")
        yield {"svc": svc, "dir": d}
    finally:
        k.stop()
        for var, value in old.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    from roost.net.certs import ensure_self_signed

    d = tmp_path_factory.mktemp("pki")
    ensure_self_signed(str(d / "h.crt"), str(d / "h.key"), ["127.0.0.1"])
    return str(d / "h.crt"), str(d / "h.key")


def _server(kdc, pki, keytab: str = "daemons.keytab", tls: bool = True) -> ThreadedServer:
    st = ServerTLS(server_context(*pki, None), "REQUIRED", True, own_binding(pki[0])) if tls else None
    return ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority(), tls=st,
                          kerberos=KerberosSettings(str(kdc["dir"] / keytab), _map))


def _client(address: str, kdc, ccache: str, *, tls: bool = True, service: str | None = None,
            methods=("KERBEROS",), tok: str | None = None) -> SyncClient:
    os.environ["KRB5CCNAME"] = f"FILE:{kdc['dir'] / ccache}"
    ct = ClientTLS("REQUIRED" if tls else "NEVER", encrypt_loopback=True, methods=tuple(methods),
                   kerberos_principal=service or kdc["svc"])
    return SyncClient(address, token=tok, tls=ct)


@pytest.mark.parametrize("tls", [True, False])
def test_a_ticket_proves_the_user_mapped_by_the_map_file(kdc, pki, tls) -> None:
    with _server(kdc, pki, tls=tls) as srv, _client(srv.server.address, kdc, "alice.cc", tls=tls) as c:
        assert c.call("WHOAMI") == {"name": "alice@example", "method": "KERBEROS", "scopes": []}
        assert c.call("WHOAMI")["name"] == "alice@example"  # the connection stays authenticated


def test_failures_are_one_line_naming_why(kdc, pki) -> None:
    with _server(kdc, pki) as srv:
        addr = srv.server.address
        cases = [
            ("nobody.cc", None, "No Kerberos credentials available"),
            ("alice.cc", f"condor/nosuch@{REALM}", "not found in Kerberos database"),
            ("mallory.cc", None, "no mapping for principal 'Mallory@ROOST.TEST'"),
        ]
        for ccache, service, why in cases:
            with pytest.raises(RemoteError) as e, _client(addr, kdc, ccache, service=service) as c:
                c.call("WHOAMI")
            assert e.value.code == "AUTH_FAILED" and e.value.message.startswith("KERBEROS: ") and why in e.value.message, e.value.message
            assert "\n" not in e.value.message
    # the daemon holds another service's key: it cannot read a ticket for condor/pool
    with _server(kdc, pki, keytab="other.keytab") as srv:
        with pytest.raises(RemoteError) as e, _client(srv.server.address, kdc, "alice.cc") as c:
            c.call("WHOAMI")
        assert "KERBEROS" in e.value.message and "not accepted" in e.value.message


def test_the_client_goes_on_to_its_next_method(kdc, pki) -> None:
    with _server(kdc, pki) as srv, _client(srv.server.address, kdc, "nobody.cc", methods=("KERBEROS", "IDTOKENS"),
                                           tok=token("carol@example")) as c:
        assert c.call("WHOAMI")["name"] == "carol@example"


def test_a_context_made_through_another_tls_connection_is_refused(kdc) -> None:
    """The TLS channel binding is in the GSS channel bindings: a ticket presented over a
    connection whose certificate the client did not see fails at the daemon."""
    os.environ["KRB5CCNAME"] = f"FILE:{kdc['dir'] / 'alice.cc'}"
    client = Initiator(kdc["svc"], binding="the certificate the client saw")
    daemon = Acceptor(binding="the daemon's own certificate", keytab=str(kdc["dir"] / "daemons.keytab"))
    with pytest.raises(GSSError, match="channel bindings"):
        daemon.step(client.step(None))
    client.close()
    daemon.close()


def test_a_daemon_without_kerberos_says_so(kdc, pki) -> None:
    with ThreadedServer({"WHOAMI": whoami}, host="127.0.0.1", authority=authority()) as srv:
        with pytest.raises(RemoteError) as e, _client(srv.server.address, kdc, "alice.cc", tls=False) as c:
            c.call("WHOAMI")
        assert "this daemon takes no Kerberos" in e.value.message
    assert Path(kdc["dir"]).exists()
