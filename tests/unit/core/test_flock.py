"""The pure decisions of flocking (roost.core.flock): agreements read from the
configuration, which jobs leave home and where, whose foreign jobs a pool serves, and
the ledger of the exchange."""

from __future__ import annotations

import json

import pytest

from roost.classad import ClassAd
from roost.core.flock import (
    Agreement,
    FlockConfigError,
    FlockLedger,
    FlockLevel,
    Hours,
    Waiting,
    admission,
    agreement_for,
    never_home,
    outbound_plan,
    parse_agreement,
    parse_agreements,
)

PHYSICS = ("collector = cm.physics.example:9618; direction = both; domain = physics.example; "
           "users = alice, group_hep; share = 25%; idle_above = 2; hours = 20-7; balance = 500; "
           "owner_consent = true")


def conf(**knobs: str):
    return lambda name: knobs.get(name)


def test_an_agreement_reads_every_key() -> None:
    a = parse_agreement("physics", PHYSICS)
    assert (a.collector, a.send, a.take, a.domain, a.trust_domain) == (
        "cm.physics.example:9618", True, True, "physics.example", "physics.example")
    assert a.users == {"alice", "group_hep"} and a.share == 0.25 and a.idle_above == 2
    assert a.hours == Hours(20, 7) and a.balance == 500 and a.owner_consent
    assert a.share_slots(100) == 25 and parse_agreement("x", "direction = take; share = 40").share_slots(100) == 40


@pytest.mark.parametrize("text, why", [
    ("direction = sideways", "expected send, take or both"),
    ("direction = send", "needs that pool's collector"),
    ("collector = a; colour = red", "KEY one of"),
    ("direction = take; share = 150%", "percentage below 100"),
    ("direction = take; share = 2.5", "a count of slots"),
    ("direction = take; hours = night", "START-END"),
    ("direction = take; hours = 25-3", "hours run 0-23"),
    ("direction = take; idle_above = -1", "a number of 0 or more"),
    ("direction = take; owner_consent = maybe", "true or false"),
    ("direction = take; users = a; users = b", "users is given twice"),
    ("direction = take; direction = send", "direction is given twice"),
])
def test_a_bad_agreement_is_refused_naming_the_knob_and_the_problem(text: str, why: str) -> None:
    with pytest.raises(FlockConfigError) as err:
        parse_agreement("chem", text)
    assert err.value.knob == "FLOCK_AGREEMENT_chem" and why in str(err.value)
    assert str(err.value).startswith("FLOCK_AGREEMENT_chem: ")


def test_flock_to_orders_the_pools_and_plain_hosts_are_htcondors_flocking() -> None:
    got = parse_agreements(conf(
        FLOCK_AGREEMENTS="physics, chem",
        FLOCK_AGREEMENT_physics=PHYSICS,
        FLOCK_AGREEMENT_chem="collector = cm.chem.example; direction = send",
        FLOCK_TO="cm.chem.example, cm.plain.example",
        FLOCK_FROM="submit.bio.example"))
    assert [a.name for a in got] == ["chem", "cm.plain.example", "physics", "FLOCK_FROM"]
    plain = got[1]
    assert plain.send and not plain.take and plain.collector == "cm.plain.example"
    assert got[3].take and not got[3].send and got[3].schedds == {"submit.bio.example"}
    with pytest.raises(FlockConfigError, match="FLOCK_AGREEMENT_bio: not set"):
        parse_agreements(conf(FLOCK_AGREEMENTS="bio"))
    with pytest.raises(FlockConfigError, match="FLOCK_TO: x: its agreement"):
        parse_agreements(conf(FLOCK_AGREEMENTS="x", FLOCK_AGREEMENT_x="direction = take", FLOCK_TO="x"))
    assert parse_agreements(conf()) == []


def test_hours_across_midnight() -> None:
    night, day = Hours(20, 7), Hours(8, 18)
    assert [h for h in range(24) if night.contains(h)] == [0, 1, 2, 3, 4, 5, 6, 20, 21, 22, 23]
    assert [h for h in range(24) if day.contains(h)] == list(range(8, 18))


B = Agreement("b", collector="cm.b", domain="b.example")
C = Agreement("c", collector="cm.c", domain="c.example", users=frozenset({"bob"}))


def w(key: str = "1", *, user: str = "alice@a.example", idle: int = 5, waited: float = 100.0, **kw) -> Waiting:
    return Waiting(key, user, idle, waited, **kw)


def test_home_first_until_flock_after_then_one_pool_more_each_interval() -> None:
    memory = FlockLevel()
    plan = outbound_plan([w(waited=10)], [B, C], memory, now=0, after=60)
    assert plan.targets == {} and "waited 10 s of FLOCK_AFTER 60 s" in plan.home["1"] and memory.level == 0
    plan = outbound_plan([w(waited=61, user="bob@a.example")], [B, C], memory, now=61, after=60)
    assert plan.targets == {"b": ["1"]} and memory.level == 1
    plan = outbound_plan([w(waited=90, user="bob@a.example")], [B, C], memory, now=91, after=60)
    assert memory.level == 1, "the level grows once per FLOCK_AFTER, not every cycle"
    plan = outbound_plan([w(waited=130, user="bob@a.example")], [B, C], memory, now=125, after=60)
    assert memory.level == 2 and plan.targets == {"b": ["1"], "c": ["1"]}
    plan = outbound_plan([w(waited=200, user="bob@a.example")], [B, C], memory, now=300, after=60)
    assert memory.level == 2, "never past the pools there are"
    plan = outbound_plan([], [B, C], memory, now=301, after=60)
    assert memory.level == 0 and plan.level == 0, "no unmet need: back home"


def test_a_job_no_home_machine_could_run_flocks_at_once() -> None:
    plan = outbound_plan([w(waited=0, never_home=True)], [B], FlockLevel(), now=0, after=600)
    assert plan.targets == {"b": ["1"]} and plan.at_once == {"1"}
    # even while other pools' jobs hold our slots: taking them back would not help it
    plan = outbound_plan([w(waited=0, never_home=True)], [B], FlockLevel(), now=0, after=600, foreign_here=3)
    assert plan.targets == {"b": ["1"]}
    only_alice = Agreement(name="p", collector="cm.p", users=frozenset({"alice"}))
    plan = outbound_plan([w(waited=0, never_home=True, user="bob@a.example")], [only_alice], FlockLevel(),
                         now=0, after=600)
    assert plan.home["1"] == ("no agreement with p lets bob@a.example's jobs go (and no machine at home "
                              "could ever run it)")


def _job(cpus: int = 1, memory: int = 100, extra: str = "") -> ClassAd:
    return ClassAd(f'[ClusterId = 1; ProcId = 0; User = "u@a"; RequestCpus = {cpus}; RequestMemory = {memory}; '
                   f"Requirements = TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory{extra}]")


def _pslot(machine: str, cpus_left: int, total: int = 8, start: str = "true") -> ClassAd:
    return ClassAd(f'[Name = "slot1@{machine}"; Machine = "{machine}"; PartitionableSlot = true; '
                   f"Cpus = {cpus_left}; TotalSlotCpus = {total}; Memory = 1000; TotalSlotMemory = 1000; "
                   f"Requirements = START; START = {start}]")


def test_never_home_is_q_analyzes_verdict_over_the_home_slots() -> None:
    full = _pslot("exa", 0)  # busy now, but empty it would run 8 cpus
    assert not never_home(_job(cpus=4), [full]), "busy is not never: the slot's whole size counts"
    assert never_home(_job(cpus=16), [full, _pslot("exa2", 8)]), "no machine has 16 cpus"
    assert never_home(_job(extra=' && TARGET.HasGPU =?= true'), [full]), "the job's requirements reject all"
    assert never_home(_job(), [_pslot("exa", 8, start='TARGET.User == "someone@else"')]), "the slots refuse it"
    dynamic = ClassAd('[Name = "slot1_1@exa"; DynamicSlot = true; Cpus = 32; Memory = 9999; '
                      "Requirements = true]")
    assert never_home(_job(cpus=16), [dynamic]), "a dynamic slot is its partitionable slot's, not a machine"
    assert not never_home(_job(cpus=16), []), "no slots seen: no verdict, the job waits as any other"


def test_who_may_leave_users_and_want_flocking() -> None:
    memory = FlockLevel(level=2, raised_at=0)
    plan = outbound_plan([w("a"), w("b", user="bob@a.example"), w("c", want_flocking=False),
                          w("d", want_flocking=True)], [B, C], memory, now=1, after=60)
    assert plan.pools_of("a") == ["b"] and plan.pools_of("b") == ["b", "c"] and plan.pools_of("d") == ["b"]
    assert plan.home["c"] == "WantFlocking is false"
    plan = outbound_plan([w("a"), w("d", want_flocking=True)], [B], FlockLevel(), now=1, after=60,
                         by_default=False)
    assert "FLOCK_BY_DEFAULT is false" in plan.home["a"] and plan.pools_of("d") == ["b"]
    plan = outbound_plan([w("a")], [C], FlockLevel(), now=1, after=60)
    assert plan.home["a"] == "no agreement with c lets alice@a.example's jobs go"
    assert outbound_plan([w()], [], FlockLevel(), now=0, after=0).home["1"] == "no FLOCK_TO pool"


def test_no_two_way_traffic_our_slots_lent_out_are_taken_back_first() -> None:
    """The seed's open question: two pools flocking to each other at once. A pool
    whose slots run other pools' jobs sends none of its own away for work those slots
    could do: its negotiator takes them back first."""
    plan = outbound_plan([w(waited=1e6)], [B], FlockLevel(), now=0, after=60, foreign_here=3)
    assert plan.targets == {} and "3 of our slots run other pools' jobs" in plan.home["1"]
    plan = outbound_plan([w(waited=1e6, never_home=True)], [B], FlockLevel(), now=0, after=60, foreign_here=3)
    assert plan.targets == {"b": ["1"]}, "work no home slot could ever run still goes"


LENDER = parse_agreement("physics", PHYSICS.replace("direction = both", "direction = take"))


def admit(user: str = "alice@physics.example", hour: int = 22, **kw):
    args = dict(user=user, domain="physics.example", agreements=[LENDER], hour=hour, total_slots=100,
                idle_slots=30, used_by_pool={})
    args.update(kw)
    return admission(**args)


def test_the_lender_serves_an_agreed_pool_within_its_conditions() -> None:
    ok = admit()
    assert ok.allowed and ok.agreement == "physics" and ok.limit == 25 and ok.owner_consent
    assert admit(used_by_pool={"physics": 20}).limit == 5
    assert admit(idle_slots=5).limit == 3, "only what stays above idle_above"
    assert admit(user="carol@physics.example", groups=("group_hep",)).allowed


@pytest.mark.parametrize("kw, why", [
    ({"user": "carol@physics.example"}, "does not cover carol@physics.example"),
    ({"hour": 12}, "lends only at hours 20-7 (now 12)"),
    ({"idle_slots": 2}, "more than 2 of our slots are idle (2 are)"),
    ({"used_by_pool": {"physics": 25}}, "holds its share of 25 slots"),
    ({"domain": "chem.example"}, "no agreement lends this pool's machines to chem.example"),
])
def test_the_lender_refuses_with_the_reason(kw, why) -> None:
    got = admit(**kw)
    assert not got.allowed and why in got.reason


def test_a_flock_from_host_is_served_on_no_further_condition() -> None:
    agreements = parse_agreements(conf(FLOCK_FROM="submit.bio.example"))
    assert agreement_for(agreements, domain="bio.example", schedd_host="submit.bio.example").name == "FLOCK_FROM"
    got = admission(user="x@bio.example", domain="bio.example", agreements=agreements, hour=0, total_slots=4,
                    idle_slots=0, used_by_pool={}, schedd_host="submit.bio.example")
    assert got.allowed and got.limit is None
    assert agreement_for(agreements, domain="bio.example", schedd_host="other.example") is None


def test_the_ledger_fades_measures_reciprocity_and_stops_a_pool_that_only_takes() -> None:
    ledger = FlockLedger(halflife=7 * 86400)
    ledger.advance(0, giving={}, receiving={})
    ledger.advance(3600, giving={"physics": 600}, receiving={"physics": 0})
    assert ledger.given["physics"] == pytest.approx(600), "600 slots for an hour"
    assert ledger.ahead("physics") > 500 and ledger.reciprocity("physics") == 0.0
    got = admit(ledger=ledger)
    assert not got.allowed and "slot-hours ahead of the exchange (balance 500)" in got.reason
    ledger.advance(7200, giving={}, receiving={"physics": 600})
    assert ledger.given["physics"] == pytest.approx(600 * 0.5 ** (1 / 168)), "an hour of a week's half-life"
    assert 0.9 < ledger.reciprocity("physics") <= 1.0 and admit(ledger=ledger).allowed
    ledger.advance(7200 + 14 * 86400, giving={}, receiving={})
    assert ledger.given["physics"] < 600 * 0.26, "two half-lives later a quarter is left"
    back = FlockLedger.from_json(json.loads(json.dumps(ledger.to_json())))
    assert back == ledger
    assert FlockLedger.from_json({"given": {"x": "nan?"}, "last": "soon"}).given == {}
    ledger.advance(0, giving={"physics": 1}, receiving={})  # time running backwards counts as none
    assert ledger.last == 0


# -- the ALLOW_* entries a connected pool needs ----------------------------------------

def test_a_connected_pool_gets_only_the_levels_its_direction_needs() -> None:
    from roost.core.flock import flock_allow_entries

    got = flock_allow_entries(parse_agreements(conf(
        FLOCK_AGREEMENTS="b, c",
        FLOCK_AGREEMENT_b="collector = cm.b; direction = send; domain = b.example",
        FLOCK_AGREEMENT_c="direction = take; domain = c.example",
        FLOCK_FROM="submit.d.example")), negotiator_hosts=["cm.e.example"])
    assert got[("SCHEDD", "NEGOTIATOR")] == ["condor@b.example", "cm.e.example"]
    assert got[("SCHEDD", "DAEMON")] == ["condor@b.example"]
    # their schedds advertise, claim and activate here: ours do not there
    assert got[("COLLECTOR", "ADVERTISE_SCHEDD")] == ["condor@c.example", "submit.d.example"]
    assert got[("STARTD", "DAEMON")] == ["condor@c.example", "submit.d.example"]
    assert "condor@c.example" not in got[("SCHEDD", "NEGOTIATOR")]


def test_flock_entries_extend_the_list_the_level_would_read_and_nothing_else() -> None:
    from roost.core.flock import with_flock_entries

    base = conf(ALLOW_NEGOTIATOR="condor@a.example", ALLOW_DAEMON="condor@a.example, root@a.example",
                ALLOW_WRITE="*")
    get = with_flock_entries(base, {("SCHEDD", "NEGOTIATOR"): ["condor@b.example"],
                                    ("COLLECTOR", "ADVERTISE_SCHEDD"): ["condor@c.example"]})
    assert get("ALLOW_NEGOTIATOR_SCHEDD") == "condor@a.example, condor@b.example"
    # ADVERTISE_SCHEDD unset: it reads DAEMON's list, plus the connected pool
    assert get("ALLOW_ADVERTISE_SCHEDD_COLLECTOR") == "condor@a.example, root@a.example, condor@c.example"
    assert get("ALLOW_NEGOTIATOR") == "condor@a.example" and get("ALLOW_WRITE") == "*"
    assert get("ALLOW_NEGOTIATOR_STARTD") is None
    # a daemon's own list, where the admin set one, is what is extended
    own = with_flock_entries(conf(ALLOW_NEGOTIATOR_SCHEDD="cm.a.example", ALLOW_NEGOTIATOR="x@y"),
                             {("SCHEDD", "NEGOTIATOR"): ["condor@b.example"]})
    assert own("ALLOW_NEGOTIATOR_SCHEDD") == "cm.a.example, condor@b.example"
    assert with_flock_entries(base, {}) is base  # no agreements: the configuration as it is


def test_another_pool_s_schedd_advertises_only_its_own_users() -> None:
    from roost.core.flock import foreign_ad_refusal

    assert foreign_ad_refusal("Submitter", "alice@a.example", "condor@a.example", "b.example") is None
    assert foreign_ad_refusal("Machine", "slot1@x", "condor@b.example", "b.example") is None  # our own
    assert foreign_ad_refusal("Machine", "slot1@x", None, "b.example") is None  # the ALLOW lists decide
    assert "not 'bob@b.example'" in foreign_ad_refusal("Submitter", "bob@b.example", "condor@a.example", "b.example")
    assert "not 'eve@c.example'" in foreign_ad_refusal("Submitter", "eve@c.example", "condor@a.example", "b.example")
    assert "only Submitter ads" in foreign_ad_refusal("Machine", "slot1@x", "condor@a.example", "b.example")


def test_a_plain_flock_to_host_may_negotiate_from_its_host() -> None:
    from roost.core.flock import collector_host, flock_allow_entries

    got = flock_allow_entries(parse_agreements(conf(FLOCK_TO="10.1.2.3:9618")))
    assert got == {("SCHEDD", "NEGOTIATOR"): ["10.1.2.3"]}
    assert collector_host("cm.b.example") == "cm.b.example" and collector_host("[::1]:9618") == "::1"
