"""A real collector and negotiator, a schedd-like peer played by the test."""

import threading
import time

import pytest
from net.helpers import ThreadedServer  # tests/unit/net: the one threaded test server

from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import make_home, pool_token, start_daemon, stop_daemon, user_identity

JOB_REQ = "/Expr(TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= MY.RequestCpus)/"


def schedd_security(home):
    """What a real schedd of the pool at ``home`` passes to its server: the pool's token
    authority and policy, so the negotiator must prove it is one of the pool's daemons."""
    from roost.config import Config
    from roost.daemons.security import Security

    cfg = Config.load(str(home / "roost_config"), env={"ROOST_HOME": str(home)}, subsys="SCHEDD")
    return Security(cfg, "SCHEDD", make_key=False).serve_args("127.0.0.1")


class FakeSchedd:
    """Answers GET_REQUESTS from a table, records MATCHES; enforces the schedd's policy."""

    def __init__(self, requests, home):
        self.requests = requests
        self.asked = []
        self.matches = []
        self.got = threading.Event()
        self.ts = ThreadedServer({"GET_REQUESTS": self.get_requests, "MATCHES": self.on_matches},
                                 host="127.0.0.1", **schedd_security(home))
        self.address = self.ts.server.tcp_address

    async def get_requests(self, req, peer):
        self.asked.append(req["owner"])
        return {"requests": self.requests.get(req["owner"], [])}

    async def on_matches(self, req, peer):
        self.matches.extend(req["matches"])
        self.got.set()
        return {"accepted": len(req["matches"])}


def slot_ad(name, cpus, memory, partitionable=False, state="Unclaimed"):
    return {"Name": name, "MyType": "Machine", "Cpus": cpus, "Memory": memory, "Disk": 10**6,
            "State": state, "PartitionableSlot": partitionable, "Start": True,
            "Requirements": "/Expr(START)/", "MyAddress": "127.0.0.1:9"}


def job_ad(memory, requirements=JOB_REQ, owner="alice"):
    return {"Owner": owner, "RequestCpus": 1, "RequestMemory": memory, "RequestDisk": 10,
            "Requirements": requirements}


@pytest.fixture
def pool(tmp_path):
    home = make_home(tmp_path, "NEGOTIATOR_INTERVAL = 300\nNEGOTIATOR_MIN_INTERVAL = 0.01\n")
    procs = []
    try:
        collector, caddr = start_daemon("collector", home)
        procs.append(collector)
        negotiator, naddr = start_daemon("negotiator", home)
        procs.append(negotiator)
        yield caddr, naddr, negotiator, home
    finally:
        for p in reversed(procs):
            stop_daemon(p)


def as_daemon(home, address):
    """A client standing in for a daemon of the pool (``condor@UID_DOMAIN``)."""
    return SyncClient(address, timeout=5, token=pool_token(home))


def wait_cycles(neg, n, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = neg.call("CYCLE_STATS")
        if stats["cycles"] >= n:
            return stats
        time.sleep(0.01)
    raise AssertionError(f"fewer than {n} cycles: {stats}")


def test_reschedule_matches_and_partitionable_slots(pool):
    caddr, naddr, proc, home = pool
    schedd = FakeSchedd({
        "alice": [{"autocluster": 1, "count": 6, "ad": job_ad(512)},
                  {"autocluster": 2, "count": 1, "ad": {"RequestMemory": "/Expr(1 +)/"}}],
        "bob": [{"autocluster": 7, "count": 2, "ad": job_ad(1, '/Expr(TARGET.Arch == "SPARC")/', "bob")}],
    }, home)
    try:
        with as_daemon(home, caddr) as c, as_daemon(home, naddr) as neg:
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot1@h", 1, 1024), private={"ClaimId": "c-h1"})
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot2@h", 1, 256), private={"ClaimId": "c-h2"})
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot3@h", 1, 8192, state="Claimed"),
                   private={"ClaimId": "c-h3"})
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot1@p", 4, 4096, partitionable=True),
                   private={"ClaimId": "c-p"})
            for owner in ("alice", "bob"):
                c.call("UPDATE_AD", type="Submitter", ad={
                    "Name": f"{owner}@h", "Owner": owner, "ScheddAddress": schedd.address, "IdleJobs": 3})
            before = neg.call("CYCLE_STATS")["cycles"]
            neg.call("RESCHEDULE")
            assert schedd.got.wait(10), "no MATCHES arrived"
            stats = wait_cycles(neg, before + 1)
            got = sorted((m["slot_name"], m["claim_id"], m["autocluster"]) for m in schedd.matches)
            assert got == [("slot1@h", "c-h1", 1)] + [("slot1@p", "c-p", 1)] * 4
            assert sorted(schedd.asked) == ["alice", "bob"]
            m = next(m for m in schedd.matches if m["slot_name"] == "slot1@h")
            assert m["startd_address"] == "127.0.0.1:9" and m["slot_ad"]["Memory"] == 1024
            assert "ClaimId" not in m["slot_ad"]
            last = stats["last"][0]
            assert last["matches"] == 5 and last["per_submitter"] == {"alice@h": 5}
            assert last["rejected"] == 1  # the malformed request ad, skipped

            # Nothing changed at the startds: the promised slots are not offered again.
            schedd.got.clear()
            n = neg.call("CYCLE_STATS")["cycles"]
            neg.call("RESCHEDULE")
            stats = wait_cycles(neg, n + 1)
            assert stats["last"][0]["matches"] == 0 and not schedd.got.is_set()

            # The startd reports the p-slot carved (less left): what is left is offered again.
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot1@p", 0, 2048, partitionable=True),
                   private={"ClaimId": "c-p"})
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot9@h", 2, 2048), private={"ClaimId": "c-9"})
            n = neg.call("CYCLE_STATS")["cycles"]
            neg.call("RESCHEDULE")
            assert schedd.got.wait(10)
            wait_cycles(neg, n + 1)
            assert [m["slot_name"] for m in schedd.matches[5:]] == ["slot9@h"]
        assert proc.poll() is None
    finally:
        schedd.ts.close()


def test_unreachable_schedd_and_bad_answers_do_not_stop_cycles(pool):
    caddr, naddr, proc, home = pool

    async def bad_answer(req, peer):
        return {"requests": "nope"}

    bad = ThreadedServer({"GET_REQUESTS": bad_answer}, host="127.0.0.1", **schedd_security(home))
    good = FakeSchedd({"carol": [{"autocluster": 3, "count": 1, "ad": job_ad(1, owner="carol")}]}, home)
    try:
        with as_daemon(home, caddr) as c, as_daemon(home, naddr) as neg:
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot1@x", 1, 1024), private={"ClaimId": "c-x"})
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot0@x", 1, 1024))  # no claim id: not offered
            c.call("UPDATE_AD", type="Submitter", ad={"Name": "dead@x", "ScheddAddress": "127.0.0.1:1"})
            c.call("UPDATE_AD", type="Submitter", ad={"Name": "bad@x", "ScheddAddress": bad.server.tcp_address})
            c.call("UPDATE_AD", type="Submitter", ad={"Name": "carol@x", "Owner": "carol",
                                                       "ScheddAddress": good.address})
            n = neg.call("CYCLE_STATS")["cycles"]
            neg.call("RESCHEDULE")
            assert good.got.wait(10)
            stats = wait_cycles(neg, n + 1)
            assert [m["slot_name"] for m in good.matches] == ["slot1@x"]
            # the cycle that matched (a later one, with slot1 promised, asks nobody)
            matched = [c for c in stats["last"] if c["matches"]]
            errors = " ".join(matched[0]["errors"])
            assert "dead@x" in errors and "bad@x" in errors
        assert proc.poll() is None
    finally:
        bad.close()
        good.ts.close()


def test_negotiator_advertises_itself(pool):
    caddr, naddr, _, _ = pool
    with SyncClient(caddr, timeout=5) as c:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ads = c.call("QUERY", type="Negotiator")["ads"]
            if ads:
                break
            time.sleep(0.02)
        assert ads and ads[0]["MyAddress"] == naddr


def test_clean_shutdown_invalidates_the_ad(tmp_path):
    home = make_home(tmp_path)
    collector, caddr = start_daemon("collector", home)
    try:
        negotiator, naddr = start_daemon("negotiator", home)
        try:
            with SyncClient(caddr, timeout=5) as c:
                deadline = time.monotonic() + 10
                while not c.call("QUERY", type="Negotiator")["ads"] and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert c.call("QUERY", type="Negotiator")["ads"]
        finally:
            assert stop_daemon(negotiator) == 0
        with SyncClient(caddr, timeout=5) as c:
            assert c.call("QUERY", type="Negotiator")["ads"] == []
        assert not (home / "run" / "negotiator.address").exists()
        assert "NegotiatorLog" in {p.name for p in (home / "log").iterdir()}
    finally:
        stop_daemon(collector)


def wait_for_ads(c, ad_type, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ads = c.call("QUERY", type=ad_type)["ads"]
        if ads:
            return ads
        time.sleep(0.02)
    return []


def test_ads_come_back_after_the_collector_is_killed(tmp_path):
    home = make_home(tmp_path)
    collector, caddr = start_daemon("collector", home)
    negotiator = None
    try:
        negotiator, _ = start_daemon("negotiator", home)
        with SyncClient(caddr, timeout=5) as c:
            assert wait_for_ads(c, "Negotiator")
        collector.kill()
        collector.wait()
        collector, caddr2 = start_daemon("collector", home)
        assert caddr2 == caddr  # same port: the negotiator's address still works
        with SyncClient(caddr, timeout=5) as c:
            assert wait_for_ads(c, "Negotiator", timeout=5), "negotiator did not re-advertise"
    finally:
        if negotiator is not None:
            stop_daemon(negotiator)
        stop_daemon(collector)


def test_reschedule_needs_a_daemon_and_reads_are_open(pool):
    caddr, naddr, proc, home = pool
    with SyncClient(naddr, timeout=5) as anon, \
            SyncClient(naddr, timeout=5, token=pool_token(home, user_identity(home, "bob"))) as bob:
        for c, who in ((anon, "unauthenticated"), (bob, user_identity(home, "bob"))):
            assert isinstance(c.call("CYCLE_STATS")["cycles"], int)  # READ
            assert "users" in c.call("USERPRIO")
            with pytest.raises(RemoteError) as e:
                c.call("RESCHEDULE")
            assert e.value.code == "PERMISSION_DENIED"
            assert "RESCHEDULE" in e.value.message and who in e.value.message and "\n" not in e.value.message
    with as_daemon(home, naddr) as neg:
        assert neg.call("RESCHEDULE") is not None
    assert proc.poll() is None


def test_a_cycle_skipped_for_the_collector_runs_again_when_it_is_back(tmp_path):
    """Idle jobs must not wait a whole NEGOTIATOR_INTERVAL by free slots because one
    cycle found the collector down: the cycle is tried again soon, with nobody asking."""
    home = make_home(tmp_path, "NEGOTIATOR_INTERVAL = 300\nNEGOTIATOR_MIN_INTERVAL = 0.01\n")
    collector, caddr = start_daemon("collector", home)
    negotiator = schedd = None
    try:
        negotiator, naddr = start_daemon("negotiator", home)
        schedd = FakeSchedd({"dora": [{"autocluster": 4, "count": 1, "ad": job_ad(1, owner="dora")}]}, home)
        collector.kill()
        collector.wait()
        with as_daemon(home, naddr) as neg:
            n = neg.call("CYCLE_STATS")["cycles"]
            neg.call("RESCHEDULE")
            stats = wait_cycles(neg, n + 1)
            assert any("collector" in e for e in stats["last"][0]["errors"]), stats["last"][0]
        collector, caddr2 = start_daemon("collector", home)
        assert caddr2 == caddr
        with as_daemon(home, caddr) as c:
            c.call("UPDATE_AD", type="Machine", ad=slot_ad("slot1@d", 1, 1024), private={"ClaimId": "c-d"})
            c.call("UPDATE_AD", type="Submitter", ad={"Name": "dora@d", "Owner": "dora",
                                                       "ScheddAddress": schedd.address, "IdleJobs": 1})
        assert schedd.got.wait(20), "no cycle ran after the collector came back"
        assert [m["slot_name"] for m in schedd.matches] == ["slot1@d"]
    finally:
        if schedd is not None:
            schedd.ts.close()
        if negotiator is not None:
            stop_daemon(negotiator)
        stop_daemon(collector)


def test_config_val_gives_names_to_anyone_and_values_to_the_authenticated(pool):
    _, naddr, _, home = pool
    with SyncClient(naddr, timeout=5) as anon, as_daemon(home, naddr) as daemon:
        assert "NEGOTIATOR_INTERVAL" in anon.call("CONFIG_VAL")["names"]
        with pytest.raises(RemoteError, match="authenticated"):
            anon.call("CONFIG_VAL", names=["NEGOTIATOR_INTERVAL"])
        assert daemon.call("CONFIG_VAL", names=["NEGOTIATOR_INTERVAL"])["values"] == {"NEGOTIATOR_INTERVAL": "300"}
