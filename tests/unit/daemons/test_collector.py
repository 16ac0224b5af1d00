"""A real collector process, real blocking clients."""

import socket
import struct
import time

import pytest

from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import make_home, pool_token, start_daemon, stop_daemon, user_identity


@pytest.fixture(scope="module")
def collector(tmp_path_factory):
    home = make_home(tmp_path_factory.mktemp("collector"))
    proc, address = start_daemon("collector", home)
    try:
        yield home, proc, address
    finally:
        stop_daemon(proc)


def as_daemon(collector) -> SyncClient:
    """A client that stands in for another daemon of the pool (``condor@UID_DOMAIN``)."""
    home, _, address = collector
    return SyncClient(address, timeout=5, token=pool_token(home))


def as_user(collector, user: str = "alice") -> SyncClient:
    home, _, address = collector
    return SyncClient(address, timeout=5, token=pool_token(home, user_identity(home, user)))


def slot(name, **attrs):
    ad = {"Name": name, "MyType": "Machine", "Cpus": 1, "Memory": 1024, "State": "Unclaimed",
          "Requirements": "/Expr(TARGET.RequestCpus <= MY.Cpus)/"}
    ad.update(attrs)
    return ad


def test_update_query_constraint_projection(collector):
    _, _, address = collector
    with as_daemon(collector) as c:
        c.call("UPDATE_AD", type="Machine", ad=slot("slot1@a", Memory=512), private={"ClaimId": "c1"})
        c.call("UPDATE_AD", type="Machine", ad=slot("slot1@b", Memory=4096), private={"ClaimId": "c2"})
        c.call("UPDATE_AD", type="Machine", ad=slot("slot1@b", Memory=8192))  # replaces
        ads = c.call("QUERY", type="Machine")["ads"]
        names = sorted(a["Name"] for a in ads)
        assert names == ["slot1@a", "slot1@b"]
        b = next(a for a in ads if a["Name"] == "slot1@b")
        assert b["Memory"] == 8192 and isinstance(b["LastHeardFrom"], int)
        assert "ClaimId" not in b and all("ClaimId" not in a for a in ads)
        assert b["Requirements"] == "/Expr(TARGET.RequestCpus <= MY.Cpus)/"
        big = c.call("QUERY", type="machine", constraint="Memory > 1000 && State == \"Unclaimed\"")
        assert [a["Name"] for a in big["ads"]] == ["slot1@b"]
        proj = c.call("QUERY", type="Machine", constraint='Name == "slot1@a"', projection=["name", "memory", "Nope"])
        assert proj["ads"] == [{"Name": "slot1@a", "Memory": 512}]
        priv = c.call("QUERY", type="Machine", constraint='Name == "slot1@a"', private=True)["ads"]
        assert priv[0]["ClaimId"] == "c1"
        # an undefined constraint matches nothing; other types are separate
        assert c.call("QUERY", type="Machine", constraint="NoSuchAttr > 3")["ads"] == []
        assert c.call("QUERY", type="Submitter")["ads"] == []
        # the collector advertises itself
        own = c.call("QUERY", type="Collector")["ads"]
        assert own and own[0]["MyAddress"] == address


def test_invalidate(collector):
    with as_daemon(collector) as c:
        c.call("UPDATE_AD", type="Submitter", ad={"Name": "alice@x", "IdleJobs": 3})
        assert c.call("INVALIDATE_AD", type="Submitter", name="ALICE@x") == {"removed": 1}
        assert c.call("INVALIDATE_AD", type="Submitter", name="alice@x") == {"removed": 0}
        assert c.call("QUERY", type="Submitter", constraint='Name == "alice@x"')["ads"] == []


def test_one_submitter_at_two_schedds_has_two_ads(collector):
    """HTCondor's key for Submitter ads: Name and ScheddName (one user, several schedds)."""
    def names(c):
        ads = c.call("QUERY", type="Submitter", constraint='Name == "bob@x"')["ads"]
        return sorted((a["ScheddName"], a["IdleJobs"]) for a in ads)

    with as_daemon(collector) as c:
        for schedd, idle in (("s1", 1), ("s2", 2), ("s2", 5), ("s3", 3)):
            c.call("UPDATE_AD", type="Submitter", ad={"Name": "bob@x", "ScheddName": schedd, "IdleJobs": idle})
        assert names(c) == [("s1", 1), ("s2", 5), ("s3", 3)]
        assert c.call("INVALIDATE_AD", type="Submitter", name="bob@x", schedd_name="S2") == {"removed": 1}
        assert names(c) == [("s1", 1), ("s3", 3)]
        assert c.call("INVALIDATE_AD", type="Submitter", name="bob@x") == {"removed": 2}
        assert names(c) == []


def test_expiry_by_classad_lifetime(collector):
    with as_daemon(collector) as c:
        c.call("UPDATE_AD", type="Scheduler", ad={"Name": "short", "ClassAdLifetime": 0.3})
        c.call("UPDATE_AD", type="Scheduler", ad={"Name": "long"})
        assert {a["Name"] for a in c.call("QUERY", type="Scheduler")["ads"]} == {"short", "long"}
        time.sleep(0.5)  # time is the point: past the short ad's lifetime
        assert [a["Name"] for a in c.call("QUERY", type="Scheduler")["ads"]] == ["long"]
        # an update renews the lease
        c.call("UPDATE_AD", type="Scheduler", ad={"Name": "short", "ClassAdLifetime": 0.3})
        assert len(c.call("QUERY", type="Scheduler")["ads"]) == 2


def test_read_is_open_but_never_shows_private_attributes(collector):
    with as_daemon(collector) as c:
        c.call("UPDATE_AD", type="Machine", ad=slot("slot1@secret"), private={"ClaimId": "<c9#secret>"})
    for who in (lambda: SyncClient(collector[2], timeout=5), lambda: as_user(collector)):
        with who() as c:
            ads = c.call("QUERY", type="Machine", constraint='Name == "slot1@secret"')["ads"]
            assert [a["Name"] for a in ads] == ["slot1@secret"]
            assert "ClaimId" not in ads[0] and "<c9#secret>" not in str(ads)
            projected = c.call("QUERY", type="Machine", projection=["Name", "ClaimId"])["ads"]
            assert projected and all("ClaimId" not in a for a in projected)
            with pytest.raises(RemoteError) as e:
                c.call("QUERY", type="Machine", constraint='Name == "slot1@secret"', private=True)
            assert e.value.code == "PERMISSION_DENIED" and "\n" not in e.value.message
            assert "<c9#secret>" not in e.value.message
    with as_daemon(collector) as c:  # the negotiator's identity may read them
        ads = c.call("QUERY", type="Machine", constraint='Name == "slot1@secret"', private=True)["ads"]
        assert ads[0]["ClaimId"] == "<c9#secret>"


@pytest.mark.parametrize("user", [False, True], ids=["unauthenticated", "user-token"])
def test_only_daemons_may_advertise_or_invalidate_slots(collector, user):
    with as_daemon(collector) as c:
        c.call("UPDATE_AD", type="Machine", ad=slot("slot1@real"))
    home, proc, address = collector
    fake = slot("slot1@fake")
    with as_user(collector, "bob") if user else SyncClient(address, timeout=5) as c:
        for cmd, args in [
            ("UPDATE_AD", {"type": "Machine", "ad": fake}),
            ("UPDATE_ADS", {"type": "Machine", "ads": [{"ad": fake}]}),
            ("UPDATE_ADS", {"type": "Machine", "refresh": [{"Name": "slot1@real", "State": "Owner"}]}),
            ("INVALIDATE_AD", {"type": "Machine", "name": "slot1@real"}),
            ("UPDATE_AD", {"type": "Scheduler", "ad": {"Name": "fake-schedd"}}),
        ]:
            with pytest.raises(RemoteError) as e:
                c.call(cmd, **args)
            assert e.value.code == "PERMISSION_DENIED", (cmd, e.value)
            assert cmd in e.value.message and "\n" not in e.value.message
            who = user_identity(home, "bob") if user else "unauthenticated"
            assert who in e.value.message
        names = {a["Name"] for a in c.call("QUERY", type="Machine")["ads"]}  # READ still works
    assert "slot1@real" in names and "slot1@fake" not in names
    assert proc.poll() is None


@pytest.mark.parametrize(
    "cmd, args, words",
    [
        ("UPDATE_AD", {"type": "Machine"}, "missing argument 'ad'"),
        ("UPDATE_AD", {"type": "Machine", "ad": []}, "JSON object"),
        ("UPDATE_AD", {"type": "Machine", "ad": {"Memory": 1}}, "no string Name"),
        ("UPDATE_AD", {"type": "Machine", "ad": {"Name": "x", "R": "/Expr(1 +)/"}}, "bad expression"),
        ("UPDATE_AD", {"type": "Mach ine", "ad": {"Name": "x"}}, "bad ad type"),
        ("QUERY", {"type": "Machine", "constraint": "Memory >"}, "bad constraint"),
        ("QUERY", {"type": "Machine", "projection": "Name"}, "list of strings"),
        ("INVALIDATE_AD", {"type": "Machine", "name": 3}, "must be a string"),
        ("FROBNICATE", {}, "unknown command"),
    ],
)
def test_bad_requests_get_clear_errors(collector, cmd, args, words):
    _, proc, _ = collector
    with as_daemon(collector) as c:
        with pytest.raises(RemoteError) as e:
            c.call(cmd, **args)
        assert e.value.code == "BAD_REQUEST" and words in e.value.message
        assert c.call("QUERY", type="Collector")["ads"]  # same connection still answers
    assert proc.poll() is None


def test_malformed_frames_do_not_hurt(collector):
    _, proc, address = collector
    host, port = address.rsplit(":", 1)
    for payload in [b"\x00\x00\x00\x04{{{{", b"\xff\xff\xff\xff", b"\x00\x00\x00\x05[1,2]", b"\x00\x00"]:
        s = socket.create_connection((host, int(port)), timeout=5)
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(4096):
            data += chunk
        s.close()
        if len(payload) > 2:
            (n,) = struct.unpack(">I", data[:4])
            assert b'"BAD_FRAME"' in data[4:4 + n]
    with SyncClient(address, timeout=5) as c:
        assert c.call("QUERY", type="Collector")["ads"]
    assert proc.poll() is None


def test_sigterm_is_clean(tmp_path):
    home = make_home(tmp_path)
    proc, address = start_daemon("collector", home)
    try:
        with SyncClient(address, timeout=5) as c:
            c.call("QUERY", type="Collector")
    finally:
        assert stop_daemon(proc) == 0
    assert not (home / "run" / "collector.address").exists()
    log = (home / "log" / "CollectorLog").read_text()
    assert "listening on " + address in log and "stopped" in log


def test_restarted_collector_keeps_its_port(tmp_path):
    home = make_home(tmp_path)
    proc, first = start_daemon("collector", home)
    stop_daemon(proc)
    proc, second = start_daemon("collector", home)
    try:
        assert second == first
    finally:
        stop_daemon(proc)
