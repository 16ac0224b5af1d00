"""The negotiator's fair-share side: the accountant's persistence and the USERPRIO /
SET_FACTOR / RESET_USAGE / SET_FLOOR / SET_CEILING commands, on a real collector and
negotiator in a temporary home; usage charged from claimed slot ads."""

import asyncio
import getpass
import json
import time

import pytest

from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import make_home, pool_token, start_daemon, stop_daemon, user_identity

pytest.importorskip("roost.core.accountant")

CONFIG = "NEGOTIATOR_INTERVAL = 300\nNEGOTIATOR_MIN_INTERVAL = 0.01\n"


@pytest.fixture
def home(tmp_path):
    return make_home(tmp_path, CONFIG)


@pytest.fixture
def collector(home):
    proc, addr = start_daemon("collector", home)
    try:
        yield addr
    finally:
        stop_daemon(proc)


def as_owner(home, address):
    """A client for the pool's owner, ``$(USERNAME)@UID_DOMAIN`` (ADMINISTRATOR and DAEMON
    by default): what the owner's tools present after ``roost up``."""
    return SyncClient(address, token=pool_token(home, user_identity(home, getpass.getuser())))


def as_daemon(home, address):
    """A client standing in for a daemon of the pool (``condor@UID_DOMAIN``)."""
    return SyncClient(address, token=pool_token(home))


def users(neg):
    return {u["name"]: u for u in neg.call("USERPRIO")["users"]}


def test_factor_persists_across_restarts(home, collector):
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = as_owner(home, addr)
        neg.call("SET_FACTOR", name="alice@h", factor=5000)
        neg.call("SET_CEILING", name="alice@h", ceiling=3)
        got = users(neg)["alice@h"]
        assert got["factor"] == 5000
        assert got["ceiling"] == 3
        assert got["effective"] == pytest.approx(got["priority"] * 5000)
        neg.close()
    finally:
        assert stop_daemon(proc) == 0
    state = json.loads((home / "spool" / "accountant.json").read_text())
    assert "alice@h" in json.dumps(state)
    assert not list((home / "spool").glob(".accountant.json.*.tmp"))
    assert (home / "spool" / "accountant.json").stat().st_mode & 0o777 == 0o600  # docs/security.md
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = as_owner(home, addr)
        got = users(neg)["alice@h"]
        assert got["factor"] == 5000 and got["ceiling"] == 3
        neg.call("SET_CEILING", name="alice@h", ceiling=None)
        assert users(neg)["alice@h"]["ceiling"] is None
        neg.close()
    finally:
        stop_daemon(proc)


def test_corrupt_state_is_set_aside(home, collector):
    spool = home / "spool"
    spool.mkdir(parents=True, exist_ok=True)
    (spool / "accountant.json").write_text("{not json")
    (spool / "accountant.json").chmod(0o644)  # as an older roost left it
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = as_owner(home, addr)
        assert users(neg) == {}
        neg.call("SET_FACTOR", name="bob@h", factor=2000)
        assert users(neg)["bob@h"]["factor"] == 2000
        neg.close()
    finally:
        stop_daemon(proc)
    aside = list(spool.glob("accountant.json.corrupt.*"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    assert aside[0].stat().st_mode & 0o777 == 0o600  # closed at start, before it was set aside
    assert "bob@h" in (spool / "accountant.json").read_text()
    log = (home / "log" / "NegotiatorLog").read_text()
    assert "corrupt" in log


def test_bad_arguments_are_refused(home, collector):
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = as_owner(home, addr)
        for cmd, args in [("SET_FACTOR", {"name": "a@h", "factor": 0.5}),
                          ("SET_FACTOR", {"name": "a@h", "factor": "big"}),
                          ("SET_FLOOR", {"name": "a@h", "floor": -1}),
                          ("RESET_USAGE", {})]:
            with pytest.raises(RemoteError) as e:
                neg.call(cmd, **args)
            assert e.value.code == "BAD_REQUEST"
        neg.close()
    finally:
        stop_daemon(proc)


def test_only_an_administrator_may_change_priorities(home, collector):
    proc, addr = start_daemon("negotiator", home)
    bob = user_identity(home, "bob")
    try:
        with SyncClient(addr, token=pool_token(home, bob)) as c, SyncClient(addr) as anon:
            for client, who in ((c, bob), (anon, "unauthenticated")):
                assert "users" in client.call("USERPRIO")  # READ is open
                for cmd, args in [("SET_FACTOR", {"name": bob, "factor": 1.0}),
                                  ("SET_PRIORITY", {"name": "alice@h", "priority": 1000}),
                                  ("RESET_USAGE", {"name": "*"}),
                                  ("SET_FLOOR", {"name": bob, "floor": 10}),
                                  ("SET_CEILING", {"name": bob, "ceiling": 10})]:
                    with pytest.raises(RemoteError) as e:
                        client.call(cmd, **args)
                    assert e.value.code == "PERMISSION_DENIED", (cmd, e.value)
                    assert cmd in e.value.message and who in e.value.message and "\n" not in e.value.message
            assert bob not in users(c)
        with SyncClient(addr, token=pool_token(home, user_identity(home, "root"))) as admin:
            admin.call("SET_FACTOR", name=bob, factor=1.0)
            assert users(admin)[bob]["factor"] == 1.0
    finally:
        stop_daemon(proc)


def claimed_slot(name, user, cpus):
    return {"Name": name, "MyType": "Machine", "Cpus": cpus, "Memory": 1024, "State": "Claimed",
            "Activity": "Busy", "RemoteUser": user, "RemoteOwner": user.split("@")[0],
            "SlotWeight": "/Expr(Cpus)/", "MyAddress": "127.0.0.1:9"}


def test_usage_comes_from_claimed_slots_and_resets(home, collector):
    col = as_daemon(home, collector)
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot1@h", "carol@h", 2))
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot2@h", "carol@h", 1))
    col.call("UPDATE_AD", type="Machine", ad=claimed_slot("slot3@h", "dave@h", 1))
    proc, addr = start_daemon("negotiator", home)
    try:
        neg = as_owner(home, addr)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (users(neg).get("carol@h") or {}).get("usage", 0) <= 0:
            neg.call("RESCHEDULE")  # usage is resource-seconds: it grows from cycle to cycle
            time.sleep(0.05)
        got = users(neg)
        assert got["carol@h"]["resources_used"] == 3
        assert got["dave@h"]["resources_used"] == 1
        assert got["carol@h"]["usage"] > 0
        assert got["carol@h"]["priority"] > got["dave@h"]["priority"]
        assert neg.call("RESET_USAGE", name="*")["count"] >= 2
        got = users(neg)
        assert got["carol@h"]["usage"] < 3 * 0.2
        neg.close()
    finally:
        stop_daemon(proc)
        col.close()


def test_set_priority_and_limits_on_a_live_negotiator(tmp_path):
    """SET_PRIORITY (condor_userprio -setprio) and LIMITS (what `q -analyze` reads):
    limits in use come from the claimed slots' ConcurrencyLimits, group figures
    from their RemoteUser."""
    home = make_home(tmp_path, CONFIG + "LICENSE_LIMIT = 2\nCONCURRENCY_LIMIT_DEFAULT_SW = 1\n"
                                        "GROUP_NAMES = physics\nGROUP_QUOTA_physics = 3\n")
    col_proc, col_addr = start_daemon("collector", home)
    col = as_daemon(home, col_addr)
    try:
        col.call("UPDATE_AD", type="Machine",
                 ad={**claimed_slot("slot1@h", "physics.carol@h", 2), "ConcurrencyLimits": "license, sw.x:0.5"})
        proc, addr = start_daemon("negotiator", home)
        try:
            neg = as_owner(home, addr)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and neg.call("LIMITS")["as_of"] is None:
                neg.call("RESCHEDULE")
                time.sleep(0.05)
            got = neg.call("LIMITS")
            assert got["concurrency"]["limits"] == {"license": 2.0}
            assert got["concurrency"]["group_defaults"] == {"sw": 1.0}
            assert got["concurrency"]["in_use"] == {"license": 1.0, "sw.x": 0.5}
            assert got["concurrency"]["default"] == 2308032.0
            assert got["groups"] == [{"name": "physics", "quota": 3.0, "dynamic": None, "accept_surplus": False,
                                      "allocation": None, "held": 2.0}]

            assert neg.call("SET_PRIORITY", name="dave@h", priority=42)["priority"] == 42.0
            assert users(neg)["dave@h"]["priority"] == pytest.approx(42.0, rel=1e-3)  # aged to now
            assert neg.call("SET_PRIORITY", name="dave@h", priority=0.1)["priority"] == 0.5  # the floor
            for bad in (float("inf"), True, "high"):
                with pytest.raises(RemoteError) as e:
                    neg.call("SET_PRIORITY", name="dave@h", priority=bad)
                assert e.value.code == "BAD_REQUEST"
            neg.close()
        finally:
            stop_daemon(proc)
    finally:
        col.close()
        stop_daemon(col_proc)


# -- in-process: the cycle's pieces ----------------------------------------------------------
def _negotiator(tmp_path, text=""):
    from roost.config.config import Config
    from roost.daemons.negotiator import Negotiator

    cfg = Config.from_text(f"LOCAL_DIR = {tmp_path}\n{text}", subsys="NEGOTIATOR")
    neg = Negotiator(config=cfg)
    neg.load_accountant()
    return neg


def _slot(name, state, **attrs):
    ad = {"MyType": "Machine", "Name": name, "State": state, "Cpus": 1, "Memory": 1024,
          "Rank": "/Expr(0)/", "SlotWeight": "/Expr(Cpus)/", "MyAddress": "tcp:127.0.0.1:1"}
    if state == "Unclaimed":
        ad["ClaimId"] = f"claim-{name}"
    else:
        ad.update(PreemptClaimId=f"preempt-{name}", RemoteUser="alice@h", CurrentRank=0)
    ad.update(attrs)
    return ad


def _counting_conversions(monkeypatch):
    import roost.daemons.negotiator_slots as mod

    calls = []
    real = mod.obj_to_ad

    def counting(obj):
        calls.append(obj.get("Name"))
        return real(obj)

    monkeypatch.setattr(mod, "obj_to_ad", counting)
    return calls


def test_claimed_slots_that_cannot_be_preempted_are_not_converted(tmp_path, monkeypatch):
    calls = _counting_conversions(monkeypatch)
    neg = _negotiator(tmp_path)  # PREEMPTION_REQUIREMENTS = False, constant Rank
    objs = [_slot("slot1@h", "Unclaimed"), _slot("slot2@h", "Claimed")]
    policy = neg._preemption_policy()
    assert [s.name for s in neg._slots(objs, policy)] == ["slot1@h"]
    assert calls == ["slot1@h"]
    neg._slots(objs, policy)
    assert calls == ["slot1@h"]  # unchanged ads: cached
    # a Rank that may prefer another job: offered for (rank) preemption
    objs[1] = _slot("slot2@h", "Claimed", Rank="/Expr(TARGET.Owner == \"bob\")/")
    assert [s.name for s in neg._slots(objs, policy)] == ["slot1@h", "slot2@h"]


def test_priority_preemption_offers_claimed_slots(tmp_path):
    neg = _negotiator(tmp_path, "PREEMPTION_REQUIREMENTS = True\n")
    objs = [_slot("slot1@h", "Unclaimed"), _slot("slot2@h", "Claimed")]
    slots = neg._slots(objs, neg._preemption_policy())
    assert [s.claim_id for s in slots] == ["claim-slot1@h", "preempt-slot2@h"]
    assert slots[1].ad["RemoteUserPrio"] == pytest.approx(500.0)


def test_custom_slot_weight_is_evaluated_once_per_ad(tmp_path, monkeypatch):
    calls = _counting_conversions(monkeypatch)
    neg = _negotiator(tmp_path)
    objs = [_slot("slot2@h", "Claimed", Cpus=2, SlotWeight="/Expr(Cpus * 3)/")]
    assert neg._usage(objs, [])[0] == {"alice@h": 6.0}
    assert neg._usage(objs, [])[0] == {"alice@h": 6.0}
    assert calls == ["slot2@h"]


def test_bad_group_knob_is_logged_once_and_negotiation_goes_on(tmp_path, caplog):
    neg = _negotiator(tmp_path, "GROUP_NAMES = physics\nGROUP_QUOTA_physics = lots\n"
                                "CONCURRENCY_LIMIT_DEFAULT = many\n")
    for _ in range(3):
        groups = neg._groups()
        assert [(g.name, g.quota) for g in groups] == [("physics", None)]
        assert neg._concurrency({}) is not None
    ignored = [r.getMessage().split(":")[0] for r in caplog.records if "ignoring" in r.getMessage()]
    assert ignored == ["ignoring GROUP_QUOTA_physics", "ignoring CONCURRENCY_LIMIT_DEFAULT"]


def test_plan_passes_usage_and_counts_group_members_without_idle_jobs(tmp_path, monkeypatch):
    import roost.daemons.negotiator as negotiator
    from roost.core.matchmaker import Plan

    seen = {}

    def fake(slots, requests, submitters, now, **kw):
        seen.update({s.name: s for s in submitters})
        return Plan()

    monkeypatch.setattr(negotiator, "negotiate_fair", fake)
    neg = _negotiator(tmp_path, "GROUP_NAMES = physics\nGROUP_QUOTA_physics = 2\n")
    neg.accountant.update({"physics.bob@h": 1.0}, 1000.0)
    neg.accountant.update({"physics.bob@h": 1.0}, 2000.0)
    usage = {"physics.alice@h": 2.0, "carol@h": 1.0}
    neg._plan([], {"physics.bob@h": []}, ["physics.bob@h"], {"physics.bob@h": 500.0}, usage, {}, None, 3000.0)
    # alice runs in the group with nothing idle: her weight counts against its quota
    assert seen["physics.alice@h"].running_weight == 2.0 and seen["physics.alice@h"].group == "physics"
    assert "carol@h" not in seen  # no group, nothing wanted: nothing to count
    assert seen["physics.bob@h"].usage > 0  # the tie-break among equal priorities


def test_promised_matches_hold_weight_and_limits_until_their_startd_answers(tmp_path):
    """A cycle milliseconds after a match sees the slot still Unclaimed: the match's
    weight (for fair share and group quotas) and its licenses count until answered."""
    from roost.classad import ClassAd
    from roost.core.matchmaker import Match, Request, Slot

    neg = _negotiator(tmp_path)
    slot = _slot("slot1@h", "Unclaimed", NumClaimRequests=0)
    ad = ClassAd({"ConcurrencyLimits": "license, db:2"})
    neg._remember([Match(Request("physics.a@h", 1, 1, ad), Slot("slot1@h", ClassAd({}), extra=slot),
                         (0.0, 0.0, 0.0), {"Cpus": 2.0}, weight=2.0)])
    assert neg._usage([slot], []) == ({"physics.a@h": 2.0}, {"license": 1.0, "db": 2.0})
    answered = dict(slot, NumClaimRequests=1)  # the startd answered: its dynamic slot counts now
    assert neg._usage([answered], []) == ({}, {})


# -- Up-Down (NEGOTIATOR_ALGORITHM = updown) ---------------------------------------------------
def _sub(name, schedd, idle=0, weight=0):
    return {"Name": name, "ScheddName": schedd, "ScheddAddress": f"<{schedd}>", "IdleJobs": idle,
            "WeightedRunningJobs": weight}


def test_updown_orders_submit_machines_strictly_and_persists(tmp_path):
    from roost.classad import ClassAd, ExprTree
    from roost.core.matchmaker import Request, Slot

    neg = _negotiator(tmp_path, "NEGOTIATOR_ALGORITHM = UpDown\nUPDOWN_DOWN_RATE = 2\n")
    assert neg.updown_mode
    subs = [_sub("alice@h", "busy.example", idle=5, weight=3), _sub("bob@h", "quiet.example", idle=2),
            _sub("carol@h", "busy.example", idle=1)]
    neg._advance_updown(subs, 1000.0)
    neg._advance_updown(subs, 1000.0 + 1800)
    assert neg.updown.index == pytest.approx({"busy.example": 1.5, "quiet.example": -1.0})
    # the index decides the priority: every submitter of a machine shares it
    assert neg._eff_prio("alice@h") == neg._eff_prio("carol@h") == pytest.approx(2 ** 1.5)
    assert neg._eff_prio("bob@h") == pytest.approx(0.5)
    assert neg._eff_prio("stranger@h") == 1.0

    def slot(i):
        ad = ClassAd({"Name": f"s{i}", "Cpus": 1, "Memory": 1024, "State": "Unclaimed"})
        ad["Requirements"], ad["Rank"] = ExprTree("true"), ExprTree("0")
        return Slot(f"s{i}", ad, claim_id=f"c{i}")

    def req(name, n):
        ad = ClassAd({"RequestCpus": 1, "RequestMemory": 1})
        ad["Requirements"] = ExprTree("true")
        return [Request(name, 1, n, ad)]

    requests = {"alice@h": req("alice@h", 5), "bob@h": req("bob@h", 2)}
    prios = {n: neg._eff_prio(n) for n in requests}
    order = sorted(requests, key=lambda n: prios[n])
    plan = neg._plan([slot(i) for i in range(3)], requests, order, prios, {}, {}, None, 0.0)
    # strict order, not a pie: the quiet machine takes all it wants, the busy one the rest
    assert plan.by_submitter == {"bob@h": 2, "alice@h": 1}

    users = asyncio.run(neg.h_userprio({}, None))
    assert users["stations"] == [{"name": "quiet.example", "index": pytest.approx(-1.0)},
                                 {"name": "busy.example", "index": pytest.approx(1.5)}]
    neg._acct_dirty = True
    assert neg.save_accountant(force=True)
    again = _negotiator(tmp_path, "NEGOTIATOR_ALGORITHM = updown\n")
    assert again.updown.index == pytest.approx(neg.updown.index) and again.updown.last == 2800.0


def test_an_unknown_algorithm_is_logged_and_fair_share_runs(tmp_path, caplog):
    neg = _negotiator(tmp_path, "NEGOTIATOR_ALGORITHM = lottery\n")
    assert not neg.updown_mode
    assert any("NEGOTIATOR_ALGORITHM" in r.getMessage() for r in caplog.records)
    assert "stations" not in asyncio.run(neg.h_userprio({}, None))


def test_group_and_remote_prio_factors_come_from_the_configuration(tmp_path):
    neg = _negotiator(tmp_path, "GROUP_NAMES = physics\nGROUP_PRIO_FACTOR_physics = 7\n"
                                "ACCOUNTANT_LOCAL_DOMAIN = h\nREMOTE_PRIO_FACTOR = 50000\n")
    acct = neg.accountant  # as load_accountant rebuilt it
    assert (acct.new_factor("physics.a@h"), acct.new_factor("b@h"), acct.new_factor("b@x")) == (7, 1000, 50000)
    assert neg._user_prio("b@x") == pytest.approx(0.5 * 50000)
