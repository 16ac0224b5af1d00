"""``roost.api.Collector`` against a real collector: the ads daemons advertise, asked
for as ``htcondor2.Collector.query`` asks."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemons.daemon_procs import pool_token, user_identity

import roost.api as roost
from roost.classad import ClassAd
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient


@pytest.fixture(scope="module")
def advertised(collector_daemon):
    """Two slots and a schedd, advertised as a startd and a schedd would (with the
    pool's daemon token: only a daemon may advertise)."""
    req = "/Expr(TARGET.RequestCpus <= MY.Cpus)/"
    with SyncClient(collector_daemon.address, timeout=5, token=pool_token(collector_daemon.home)) as c:
        for name, memory, state in (("slot1@a", 512, "Unclaimed"), ("slot1@b", 4096, "Claimed")):
            c.call("UPDATE_AD", type="Machine", private={"ClaimId": f"secret-{name}"},
                   ad={"Name": name, "Cpus": 1, "Memory": memory, "State": state, "Requirements": req})
        c.call("UPDATE_AD", type="Scheduler", ad={"Name": "schedd@a", "MyAddress": "127.0.0.1:9"})
    return collector_daemon


@pytest.fixture
def collector(advertised):
    c = roost.Collector(advertised.home)
    try:
        yield c
    finally:
        c.close()


def names(ads: list) -> list[str]:
    return sorted(a["Name"] for a in ads)


def test_query_objs_by_type_name_as_htcondor_spells_it(collector: roost.Collector) -> None:
    for ad_type in ("Machine", "machine", "Startd", "startd", "STARTD"):
        assert names(collector.query_objs(ad_type)) == ["slot1@a", "slot1@b"], ad_type
    assert names(collector.query_objs("Scheduler")) == names(collector.query_objs("schedd")) == ["schedd@a"]
    assert collector.query_objs("Submitter") == []


def test_query_by_htcondor2_ad_type(collector: roost.Collector) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    assert names(collector.query(htcondor2.AdType.Startd)) == ["slot1@a", "slot1@b"]
    assert names(collector.query(htcondor2.AdType.Schedd)) == ["schedd@a"]


def test_constraint_and_projection(collector: roost.Collector) -> None:
    got = collector.query_objs("Machine", 'Memory > 1000 && State == "Claimed"', ["Name", "Memory"])
    assert got == [{"Name": "slot1@b", "Memory": 4096}]
    assert collector.query_objs("Machine", "NoSuchAttribute > 3") == []  # undefined: no match


def test_query_gives_classads_without_private_attributes(collector: roost.Collector) -> None:
    ads = collector.query("Machine", 'Name == "slot1@a"')
    assert len(ads) == 1 and isinstance(ads[0], ClassAd)
    ad = ads[0]
    assert ad["Memory"] == 512 and ad["MyType"] == "Machine"
    # an expression arrives as an expression: it matches a job against this slot
    assert str(ad["Requirements"]) == "TARGET.RequestCpus <= MY.Cpus"
    assert ad["Requirements"].eval(ad, ClassAd({"RequestCpus": 1})) is True
    assert ad["Requirements"].eval(ad, ClassAd({"RequestCpus": 2})) is False
    assert "ClaimId" not in ad  # the claim is the negotiator's secret, not every reader's
    assert all("ClaimId" not in a for a in collector.query_objs("Machine", projection=["Name", "ClaimId"]))


def test_a_users_query_never_gets_private_attributes(advertised) -> None:
    """Private attributes (ClaimId) are for the negotiator and administrators: a user's
    ``private: true`` query is refused with one line, and asking for a ClaimId by name
    at READ gets nothing."""
    with SyncClient(advertised.address, timeout=5,
                    token=pool_token(advertised.home, user_identity(advertised.home, "bob"))) as c:
        with pytest.raises(RemoteError) as e:
            c.call("QUERY", type="Machine", private=True)
        assert e.value.code == "PERMISSION_DENIED" and "\n" not in e.value.message
        assert "secret-" not in str(c.call("QUERY", type="Machine", projection=["Name", "ClaimId"]))


def test_slots_are_the_default_and_query_objs_is_query_without_classads(collector: roost.Collector) -> None:
    assert names(collector.query()) == names(collector.query_objs()) == ["slot1@a", "slot1@b"]
    objs = collector.query_objs(constraint='Name == "slot1@a"')
    [ad] = collector.query(constraint='Name == "slot1@a"')
    assert len(objs) == 1 and set(objs[0]) == set(ad.keys())
    assert objs[0]["Requirements"] == "/Expr(TARGET.RequestCpus <= MY.Cpus)/"  # wire form, not parsed
    [scheduler] = collector.query("Scheduler", projection=["MyAddress"])
    assert dict(scheduler) == {"MyAddress": "127.0.0.1:9"}


def test_an_explicit_address_reaches_a_collector_of_another_home(advertised, tmp_path: Path) -> None:
    """``address=`` (a central manager elsewhere) needs nothing under the local home."""
    c = roost.Collector(tmp_path, address=advertised.address)
    try:
        assert names(c.query_objs("Machine")) == ["slot1@a", "slot1@b"]
    finally:
        c.close()
    assert not (tmp_path / "run").exists()


def test_a_home_without_a_collector_finds_it_through_collector_host(advertised, tmp_path: Path) -> None:
    """A submit or execute host: no ``run/collector.address``, the central manager in
    its configuration (``COLLECTOR_HOST``), as its daemons find it."""
    (tmp_path / "roost_config").write_text(f"COLLECTOR_HOST = {advertised.address}\n")
    c = roost.Collector(tmp_path)
    try:
        assert names(c.query_objs("Machine")) == ["slot1@a", "slot1@b"]
    finally:
        c.close()


def test_a_home_never_set_up_has_no_pool_rather_than_a_guessed_collector(tmp_path: Path) -> None:
    c = roost.Collector(tmp_path / "nothing-here", timeout=5)
    try:
        with pytest.raises(roost.PoolError, match="no pool is running"):
            c.query_objs("Machine")
    finally:
        c.close()
