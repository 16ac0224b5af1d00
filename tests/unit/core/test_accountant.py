"""The accountant: HTCondor's half-life priorities, factors, and a state file that never crashes."""

import json
import math

import pytest

from roost.core.accountant import Accountant, UserRecord, group_of

H = 3600.0


def test_new_user_starts_at_minimum_with_default_factor():
    a = Accountant(halflife=H)
    assert a.real_priority("alice@h") == 0.5
    assert a.effective_priority("alice@h") == 500.0
    assert a.effective_priority("alice@h", nice=True) == 0.5 * 1e10


def test_nice_user_gets_the_nice_factor_when_first_seen_and_it_can_be_changed():
    a = Accountant(halflife=H, default_factor=1000, nice_factor=1e7)
    a.update({"nice-user.bob@h": 1, "bob@h": 1}, 0.0)
    assert a.factor("nice-user.bob@h") == 1e7 and a.factor("bob@h") == 1000
    assert a.effective_priority("nice-user.bob@h", nice=True) == 0.5 * 1e7
    a.set_factor("nice-user.bob@h", 50)  # condor_userprio -setfactor works on nice users too
    assert a.effective_priority("nice-user.bob@h", nice=True) == 0.5 * 50
    # A version-1 state file kept 1000 for them but always used the nice factor: so do we.
    old = {"version": 1, "users": [{"name": "nice-user.bob@h", "factor": 1000.0}, {"name": "bob@h"}]}
    b = Accountant.from_json(old, nice_factor=1e7)
    assert b.factor("nice-user.bob@h") == 1e7 and b.factor("bob@h") == 1000
    assert Accountant.from_json(a.to_json(), nice_factor=1e7).factor("nice-user.bob@h") == 50


def test_priority_follows_weight_in_use_with_half_life():
    a = Accountant(halflife=H)
    a.update({"alice@h": 10}, 0.0)
    assert a.real_priority("alice@h") == 0.5  # no time has passed yet
    a.update({"alice@h": 10}, H)
    assert a.real_priority("alice@h") == pytest.approx(0.5 * 0.5 + 0.5 * 10)
    a.update({}, 2 * H)  # stopped: halves towards the floor
    assert a.real_priority("alice@h") == pytest.approx(5.25 / 2)
    for t in range(3, 40):
        a.update({}, t * H)
    assert a.real_priority("alice@h") == 0.5  # never below min_priority


def test_steady_use_settles_at_that_weight_regardless_of_cycle_length():
    fine, coarse = Accountant(halflife=H), Accountant(halflife=H)
    for t in range(0, 10 * 3600 + 1, 60):
        fine.update({"u@h": 7}, float(t))
    for t in range(0, 10 * 3600 + 1, 1800):
        coarse.update({"u@h": 7}, float(t))
    assert fine.real_priority("u@h") == pytest.approx(7, rel=0.01)
    assert fine.real_priority("u@h") == pytest.approx(coarse.real_priority("u@h"), rel=1e-9)


def test_usage_is_weighted_slot_seconds_decayed_with_priority():
    a = Accountant(halflife=H)
    a.update({"u@h": 4}, 0.0)
    a.update({"u@h": 4}, H)
    assert a.get("u@h").usage == pytest.approx(4 * H)
    a.update({}, 2 * H)
    rec = a.get("u@h")
    assert rec.usage == pytest.approx(2 * H)  # recent usage fades...
    assert rec.accumulated_usage == pytest.approx(4 * H)  # ...HTCondor's AccumulatedUsage does not
    for t in range(3, 30):
        a.update({}, t * H)
    assert a.get("u@h").accumulated_usage == pytest.approx(4 * H)
    assert rec.resources_used == 0
    assert rec.begin_usage_time == 0.0 and rec.last_usage_time == H


def test_non_finite_weight_counts_as_nothing():
    a = Accountant(halflife=H)
    a.update({"u@h": math.nan, "v@h": math.inf, "w@h": -3}, 0.0)
    a.update({"u@h": math.nan, "v@h": math.inf, "w@h": -3}, H)
    assert [a.real_priority(n) for n in ("u@h", "v@h", "w@h")] == [0.5, 0.5, 0.5]
    assert a.get("v@h").accumulated_usage == 0


def test_clock_going_backwards_ages_nothing():
    a = Accountant(halflife=H)
    a.update({"u@h": 4}, 100.0)
    a.update({"u@h": 4}, 50.0)
    assert a.real_priority("u@h") == 0.5


def test_factor_floor_ceiling_reset():
    a = Accountant(halflife=H, default_factor=100)
    a.update({"u@h": 2}, 0.0)
    a.update({"u@h": 2}, 10 * H)
    a.set_factor("u@h", 3)
    assert a.effective_priority("u@h") == pytest.approx(a.real_priority("u@h") * 3)
    for bad in (0, 0.5, -1, math.inf, True, "2"):
        with pytest.raises(ValueError):
            a.set_factor("u@h", bad)  # HTCondor: a factor is at least 1
    with pytest.raises(ValueError):
        a.set_floor("u@h", -1)
    a.set_floor("u@h", 2)
    a.set_ceiling("u@h", 5)
    a.set_ceiling("u@h", None)
    rec = a.get("u@h")
    assert (rec.floor, rec.ceiling, rec.factor) == (2.0, None, 3.0)
    a.update({"v@h": 1}, 11 * H)
    prio = a.real_priority("u@h")
    a.reset_usage("u@h", now=11 * H)
    # -resetusage forgets usage, not priority (that is -setprio)
    rec = a.get("u@h")
    assert (rec.usage, rec.accumulated_usage, rec.begin_usage_time) == (0, 0, 11 * H)
    assert a.real_priority("u@h") == prio > 0.5
    assert a.get("v@h").accumulated_usage > 0
    a.reset_usage("*")
    assert a.get("v@h").accumulated_usage == 0 and a.get("v@h").begin_usage_time is None
    assert a.real_priority("v@h") > 0.5
    a.set_priority("v@h", 0.1)
    assert a.real_priority("v@h") == 0.5  # never below the minimum
    a.set_priority("v@h", 42)
    assert a.real_priority("v@h") == 42
    with pytest.raises(ValueError):
        a.set_priority("v@h", math.nan)


def test_records_best_effective_priority_first_and_are_copies():
    a = Accountant(halflife=H)
    a.update({"busy@h": 8, "idle@h": 0}, 0.0)
    a.update({"busy@h": 8}, H)
    recs = a.records()
    assert [r.name for r in recs] == ["idle@h", "busy@h"]
    recs[0].priority = 99
    assert a.real_priority("idle@h") == 0.5


def test_group_names():
    assert group_of("physics.theory.einstein@h") == "physics.theory"
    assert group_of("alice@h") is None
    assert group_of("physics.theory") == "physics.theory"
    a = Accountant()
    a.update({"physics.bob@h": 1, "physics": 1}, 0.0)
    assert a.get("physics.bob@h").group == "physics"
    a.set_group("physics.bob@h", None)
    assert a.get("physics.bob@h").group is None


def test_json_round_trip():
    a = Accountant(halflife=H)
    a.update({"alice@h": 3, "physics.theory": 2}, 0.0)
    a.update({"alice@h": 1}, 2 * H)
    a.set_factor("alice@h", 10)
    a.set_floor("alice@h", 1)
    a.set_ceiling("physics.theory", 4)
    obj = json.loads(json.dumps(a.to_json()))
    b = Accountant.from_json(obj, halflife=H)
    assert b.records() == a.records()
    assert b.last_update == a.last_update
    # time goes on identically after a restart
    a.update({"alice@h": 2}, 3 * H)
    b.update({"alice@h": 2}, 3 * H)
    assert b.real_priority("alice@h") == a.real_priority("alice@h")


@pytest.mark.parametrize("obj", [None, [], "junk", 3, {"users": "x"}, {"users": None}, {"last_update": "x"},
                                 {"last_update": 10**400}])
def test_from_json_garbage_gives_empty_accountant(obj):
    a = Accountant.from_json(obj)
    assert a.records() == []


def test_from_json_skips_bad_entries_and_keeps_good_ones():
    obj = {
        "version": 1,
        "last_update": 10.0,
        "mystery": {"x": 1},
        "users": [
            {"name": "good@h", "priority": 4.0, "factor": 2.0, "usage": 7.0, "unknown_field": 1},
            {"name": "", "priority": 1.0},
            {"priority": 3.0},
            "notadict",
            {"name": "badprio@h", "priority": "high"},
            {"name": "nan@h", "priority": math.nan},
            {"name": "boolfloor@h", "floor": True},
            {"name": "low@h", "priority": 0.01, "factor": -5},
            {"name": "half@h", "factor": 0.5, "floor": -1, "ceiling": -2},
            {"name": "huge@h", "priority": 10**400},
            {"name": "minimal@h"},
        ],
    }
    a = Accountant.from_json(obj, default_factor=1000)
    names = {r.name for r in a.records()}
    assert names == {"good@h", "low@h", "half@h", "minimal@h"}
    assert a.effective_priority("good@h") == 8.0
    assert a.real_priority("low@h") == 0.5 and a.factor("low@h") == 1000
    half = a.get("half@h")
    assert (half.factor, half.floor, half.ceiling) == (1000, None, None)  # factor < 1 is invalid, as in HTCondor
    assert a.get("minimal@h") == UserRecord("minimal@h", factor=1000.0)


def test_new_names_get_group_and_remote_factors_as_htcondor_picks_them():
    a = Accountant(default_factor=1000, nice_factor=1e9, group_factors={"Physics": 10, "physics.hep": 5, "bad": 0.5},
                   remote_factor=10000, local_domain="Example.org")
    assert a.new_factor("alice@example.org") == 1000
    assert a.new_factor("alice@elsewhere.net") == 10000  # outside the local domain
    assert a.new_factor("physics.alice@elsewhere.net") == 10  # the group's factor comes first
    assert a.new_factor("physics.hep.bob@example.org") == 5  # the longest group
    assert a.new_factor("physicsx.bob@example.org") == 1000  # not a group member
    assert a.new_factor("bad.carol@example.org") == 1000  # a factor below 1 is ignored
    assert a.new_factor("nice-user.physics.dan@example.org") == 1e9
    a.update({"physics.alice@elsewhere.net": 1.0}, 0.0)
    assert a.get("physics.alice@elsewhere.net").factor == 10
    a.set_factor("physics.alice@elsewhere.net", 3)  # a stored factor wins from then on
    again = Accountant.from_json(a.to_json(), group_factors={"physics": 20})
    assert again.get("physics.alice@elsewhere.net").factor == 3
    # without ACCOUNTANT_LOCAL_DOMAIN every name is local
    assert Accountant(remote_factor=10000).new_factor("x@anywhere") == 1000
