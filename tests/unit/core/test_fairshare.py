"""Fair share: the pie, floors and ceilings, group quotas, and a simulated day of negotiation.

Slots here have weight 1 (static Cpus=1 or partitionable jobs with
RequestCpus=1), so match counts and weights agree.
"""

import random

import pytest

from roost.classad import ClassAd, ExprTree
from roost.core.accountant import Accountant
from roost.core.fairshare import (
    NONE_GROUP,
    GroupConfig,
    Submitter,
    group_quotas,
    negotiate_fair,
    slot_weight,
)
from roost.core.matchmaker import Request, Slot

JOB_REQ = "TARGET.Cpus >= MY.RequestCpus && TARGET.Memory >= MY.RequestMemory"


def slot(name, cpus=1, memory=1024, state="Unclaimed", partitionable=False, **extra):
    ad = ClassAd({"Name": name, "Cpus": cpus, "Memory": memory, "Disk": 100000, "State": state,
                  "PartitionableSlot": partitionable, "Requirements": True, **extra})
    return Slot(name, ad, claim_id=f"claim-{name}")


def job(cpus=1, memory=100, requirements=JOB_REQ, **extra):
    ad = ClassAd({"RequestCpus": cpus, "RequestMemory": memory, "RequestDisk": 10, **extra})
    ad["Requirements"] = ExprTree(requirements)
    return ad


def demand(counts, ad=None):
    """{submitter: idle jobs} → requests_by_submitter, one autocluster each."""
    return {n: [Request(n, 1, c, ad if ad is not None else job())] for n, c in counts.items() if c > 0}


def slots(n, prefix="s"):
    return [slot(f"{prefix}{i:03d}") for i in range(n)]


def sub(name, eff=500.0, running=0.0, **kw):
    return Submitter(name, eff, running, **kw)


# --- one cycle -----------------------------------------------------------------


def test_equal_priorities_split_evenly():
    plan = negotiate_fair(slots(10), demand({"a@h": 50, "b@h": 50}), [sub("a@h"), sub("b@h")], 0.0)
    assert plan.by_submitter == {"a@h": 5, "b@h": 5}
    assert plan.unmatched == {("a@h", 1): 45, ("b@h", 1): 45}
    assert len(plan.matches) == 10 and plan.evaluations > 0
    assert len({m.slot.name for m in plan.matches}) == 10


def test_shares_in_inverse_proportion_to_effective_priority():
    subs = [sub("a@h", 100.0), sub("b@h", 200.0), sub("c@h", 400.0)]
    plan = negotiate_fair(slots(14), demand({"a@h": 50, "b@h": 50, "c@h": 50}), subs, 0.0)
    assert plan.by_submitter == {"a@h": 8, "b@h": 4, "c@h": 2}
    # served best priority first
    assert plan.matches[0].submitter == "a@h"


def test_running_weight_counts_against_the_slice():
    # a already holds 6 of a 10-weight pool; 4 free; equal priority → b gets all 4 (5 is its slice)
    pool = slots(4) + [slot(f"c{i}", state="Claimed") for i in range(6)]
    plan = negotiate_fair(pool, demand({"a@h": 9, "b@h": 9}), [sub("a@h", running=6), sub("b@h")], 0.0)
    assert plan.by_submitter == {"a@h": 0, "b@h": 4}


def test_leftovers_go_round_again():
    # b wants only 1 of its 5: the next spin hands the rest to a
    plan = negotiate_fair(slots(10), demand({"a@h": 50, "b@h": 1}), [sub("a@h"), sub("b@h")], 0.0)
    assert plan.by_submitter == {"a@h": 9, "b@h": 1}


def test_someone_whose_jobs_fit_nowhere_does_not_block_the_others():
    picky = job(requirements="TARGET.Memory > 100000")
    reqs = demand({"a@h": 50}) | {"b@h": [Request("b@h", 7, 5, picky)]}
    plan = negotiate_fair(slots(6), reqs, [sub("a@h", 1e6), sub("b@h", 0.5)], 0.0)
    assert plan.by_submitter == {"a@h": 6, "b@h": 0}
    assert plan.unmatched[("b@h", 7)] == 5


def test_strict_ordering_with_huge_factor_ratio():
    subs = [sub("low@h", 0.5 * 1e6), sub("high@h", 0.5)]
    plan = negotiate_fair(slots(10), demand({"low@h": 30, "high@h": 30}), subs, 0.0)
    assert plan.by_submitter == {"low@h": 0, "high@h": 10}
    plan = negotiate_fair(slots(10), demand({"low@h": 30, "high@h": 4}), subs, 0.0)
    assert plan.by_submitter == {"low@h": 6, "high@h": 4}


def test_floor_and_ceiling():
    subs = [sub("vip@h", 0.5, ceiling=3), sub("poor@h", 1e9, floor=4), sub("mid@h", 1000.0)]
    plan = negotiate_fair(slots(12), demand({"vip@h": 50, "poor@h": 50, "mid@h": 50}), subs, 0.0)
    assert plan.by_submitter["vip@h"] == 3  # ceiling caps even the best priority
    assert plan.by_submitter["poor@h"] == 4  # floor guaranteed despite a terrible priority
    assert plan.by_submitter["mid@h"] == 5
    # a ceiling counts what is already held
    plan = negotiate_fair(slots(12), demand({"vip@h": 50}), [sub("vip@h", 0.5, running=2, ceiling=3)], 0.0)
    assert plan.by_submitter["vip@h"] == 1


def test_partitionable_slot_weight_is_requested_cpus():
    pslot = slot("p", cpus=8, memory=8000, partitionable=True)
    assert slot_weight(pslot.ad) == 8
    plan = negotiate_fair([pslot], demand({"a@h": 20, "b@h": 20}), [sub("a@h"), sub("b@h")], 0.0)
    assert plan.by_submitter == {"a@h": 4, "b@h": 4}


def test_slot_weight_expression():
    s = slot("w", cpus=4, SlotWeight=ExprTree("Cpus * 2"))
    assert slot_weight(s.ad) == 8
    assert slot_weight(slot("x", cpus=3).ad) == 3


def test_no_starvation_one_cycle_100_users_8_slots():
    users = [f"u{i:03d}@h" for i in range(100)]
    plan = negotiate_fair(slots(8), demand({u: 5 for u in users}), [sub(u) for u in users], 0.0)
    assert len(plan.matches) == 8
    assert sum(1 for u in users if plan.by_submitter[u]) == 8  # eight different users


def test_demand_without_a_submitter_record_is_served_last():
    plan = negotiate_fair(slots(3), demand({"known@h": 2, "stranger@h": 5}), [sub("known@h", 1e6)], 0.0)
    assert plan.by_submitter == {"known@h": 2, "stranger@h": 1}


# --- group quotas ----------------------------------------------------------------


def test_group_quotas_static_and_scaling():
    groups = [GroupConfig("physics", quota=20), GroupConfig("chemistry", quota=10)]
    q = group_quotas(groups, 30, {"physics": 100, "chemistry": 100, NONE_GROUP: 100})
    assert q == {"physics": 20, "chemistry": 10, NONE_GROUP: 0}
    q = group_quotas(groups, 15, {"physics": 100, "chemistry": 100})  # half the pool gone: scaled
    assert q["physics"] == pytest.approx(10) and q["chemistry"] == pytest.approx(5)
    q = group_quotas(groups, 60, {"physics": 100, "chemistry": 100, NONE_GROUP: 100})  # not scaled up
    assert q == {"physics": 20, "chemistry": 10, NONE_GROUP: 30}


def test_group_quotas_dynamic_nested():
    groups = [GroupConfig("physics", dynamic=2 / 3), GroupConfig("physics.hep", dynamic=0.75),
              GroupConfig("physics.lep", dynamic=0.25), GroupConfig("chemistry", dynamic=1 / 3)]
    q = group_quotas(groups, 30, {"physics.hep": 100, "physics.lep": 100, "chemistry": 100})
    assert q["physics"] == pytest.approx(20)
    assert q["physics.hep"] == pytest.approx(15)
    assert q["physics.lep"] == pytest.approx(5)
    assert q["chemistry"] == pytest.approx(10)


def test_group_surplus_off_and_on():
    groups = [GroupConfig("physics", quota=6), GroupConfig("chemistry", quota=4)]
    q = group_quotas(groups, 20, {"physics": 100, "chemistry": 0})
    assert q["physics"] == 6  # no surplus: capped at quota though chemistry and <none> are idle
    groups[0].accept_surplus = True
    q = group_quotas(groups, 20, {"physics": 100, "chemistry": 0})
    assert q["physics"] == 20
    q = group_quotas(groups, 20, {"physics": 100, "chemistry": 0, NONE_GROUP: 100})
    # chemistry's 4 spare go to physics and <none> in proportion to their quotas (6 : 10)
    assert q["physics"] == pytest.approx(6 + 4 * 6 / 16)
    assert q[NONE_GROUP] == pytest.approx(10 + 4 * 10 / 16)


def test_subgroup_surplus_stays_inside_a_capped_parent():
    groups = [GroupConfig("physics", quota=20), GroupConfig("physics.hep", quota=15, accept_surplus=True),
              GroupConfig("physics.lep", quota=5, accept_surplus=True), GroupConfig("chemistry", quota=10)]
    q = group_quotas(groups, 40, {"physics.hep": 100, "physics.lep": 0, "chemistry": 0})
    assert q["physics.hep"] == pytest.approx(20)  # took lep's share, but not beyond physics' 20
    assert q["physics"] == pytest.approx(20)


def group_pool():
    return slots(20)


def test_negotiate_fair_holds_static_group_quotas():
    groups = [GroupConfig("physics", quota=6), GroupConfig("chemistry", quota=4)]
    subs = [sub("physics.a@h", group="physics"), sub("physics.b@h", group="physics"),
            sub("chemistry.c@h", group="chemistry"), sub("d@h")]
    reqs = demand({s.name: 50 for s in subs})
    plan = negotiate_fair(group_pool(), reqs, subs, 0.0, groups=groups)
    assert plan.by_submitter == {"physics.a@h": 3, "physics.b@h": 3, "chemistry.c@h": 4, "d@h": 10}
    # what `q -analyze` shows: each group's allocation and what it holds at the cycle's end
    assert plan.group_quota == pytest.approx({"physics": 6, "chemistry": 4, "<none>": 10})
    assert plan.group_held == pytest.approx({"physics": 6, "chemistry": 4, "<none>": 10})
    assert negotiate_fair(group_pool(), reqs, subs, 0.0).group_quota == {}


def test_negotiate_fair_group_quota_counts_running_and_splits_by_priority():
    groups = [GroupConfig("physics", quota=6)]
    subs = [sub("physics.a@h", 100.0, running=1, group="physics"),
            sub("physics.b@h", 200.0, group="physics")]
    plan = negotiate_fair(slots(19), demand({s.name: 50 for s in subs}), subs, 0.0, groups=groups)
    assert plan.by_submitter == {"physics.a@h": 3, "physics.b@h": 2}  # 4 : 2 of 6, one already held


def test_negotiate_fair_surplus_on_and_off():
    subs = [sub("physics.a@h", group="physics"), sub("chemistry.c@h", group="chemistry")]
    reqs = demand({"physics.a@h": 50})
    capped = [GroupConfig("physics", quota=6), GroupConfig("chemistry", quota=4)]
    plan = negotiate_fair(group_pool(), reqs, subs, 0.0, groups=capped)
    assert plan.by_submitter["physics.a@h"] == 6
    surplus = [GroupConfig("physics", quota=6, accept_surplus=True), GroupConfig("chemistry", quota=4)]
    plan = negotiate_fair(group_pool(), reqs, subs, 0.0, groups=surplus)
    assert plan.by_submitter["physics.a@h"] == 20


def test_negotiate_fair_dynamic_quota():
    groups = [GroupConfig("physics", dynamic=0.5), GroupConfig("physics.theory", dynamic=0.5)]
    subs = [sub("physics.theory.t@h", group="physics.theory"), sub("physics.p@h", group="physics"),
            sub("x@h")]
    plan = negotiate_fair(group_pool(), demand({s.name: 50 for s in subs}), subs, 0.0, groups=groups)
    assert plan.by_submitter == {"physics.theory.t@h": 5, "physics.p@h": 5, "x@h": 10}


def test_unknown_group_is_none():
    subs = [sub("ghost.g@h", group="ghost"), sub("y@h")]
    plan = negotiate_fair(slots(10), demand({"ghost.g@h": 50, "y@h": 50}), subs, 0.0,
                          groups=[GroupConfig("physics", quota=5)])
    # both are in <none>, which also gets what idle physics leaves
    assert plan.by_submitter == {"ghost.g@h": 5, "y@h": 5}


# --- simulated days ----------------------------------------------------------------


class Sim:
    """A pool of weight-1 slots, users with endless queues, jobs of random length, a cycle a minute."""

    def __init__(self, n_slots, factors, *, halflife=3600.0, job_len=(600, 1800), seed=1, queue=None,
                 floors=None, ceilings=None):
        self.slots = slots(n_slots)
        self.acct = Accountant(halflife=halflife)
        for u, f in factors.items():
            self.acct.set_factor(u, f)
        self.users = list(factors)
        self.rng = random.Random(seed)
        self.job_len = job_len
        self.running = {}  # slot name -> (user, end time)
        self.queue = queue or {}
        self.ever_ran = set()
        self.floors = floors or {}
        self.ceilings = ceilings or {}

    def held(self):
        out = dict.fromkeys(self.users, 0.0)
        for u, _ in self.running.values():
            out[u] += 1
        return out

    def cycle(self, now):
        for s in self.slots:
            r = self.running.get(s.name)
            if r is not None and r[1] <= now:
                del self.running[s.name]
                s.ad["State"] = "Unclaimed"
        held = self.held()
        self.acct.update(held, now)
        subs = [Submitter(u, self.acct.effective_priority(u), held[u], floor=self.floors.get(u),
                          ceiling=self.ceilings.get(u), usage=self.acct.get(u).usage) for u in self.users]
        counts = {u: self.queue.get(u, 1000) for u in self.users}
        plan = negotiate_fair(self.slots, demand(counts), subs, now)
        for m in plan.matches:
            m.slot.ad["State"] = "Claimed"
            self.running[m.slot.name] = (m.submitter, now + self.rng.uniform(*self.job_len))
            self.ever_ran.add(m.submitter)
            if m.submitter in self.queue:
                self.queue[m.submitter] -= 1
        return plan

    def run(self, seconds, step=60.0, sample_from=None):
        """Run, and return each user's mean held weight over the samples after ``sample_from``."""
        sums = dict.fromkeys(self.users, 0.0)
        n = 0
        t = 0.0
        while t <= seconds:
            self.cycle(t)
            if sample_from is not None and t >= sample_from:
                for u, h in self.held().items():
                    sums[u] += h
                n += 1
            t += step
        return {u: v / max(n, 1) for u, v in sums.items()}


def expected_shares(acct, users):
    inv = {u: 1.0 / acct.effective_priority(u) for u in users}
    total = sum(inv.values())
    return {u: v / total for u, v in inv.items()}


@pytest.mark.parametrize("factors", [
    {"a@h": 1000.0, "b@h": 4000.0},
    {"a@h": 1000.0, "b@h": 2000.0, "c@h": 8000.0},
])
def test_simulated_day_converges_to_inverse_effective_priority(factors):
    sim = Sim(40, factors)
    mean = sim.run(86400, sample_from=18 * 3600)
    total = sum(mean.values())
    assert total == pytest.approx(40, abs=1)  # the pool stays busy
    want = expected_shares(sim.acct, sim.users)
    for u in sim.users:
        assert mean[u] / total == pytest.approx(want[u], abs=0.05), (mean, want)
    # better factor, more slots; at equilibrium held ∝ 1/sqrt(factor) since priority tracks use
    names = list(factors)
    assert mean[names[0]] > mean[names[1]]
    ratio = mean[names[0]] / mean[names[1]]
    assert ratio == pytest.approx((factors[names[1]] / factors[names[0]]) ** 0.5, rel=0.15)


def test_simulated_day_equal_factors_equal_slots():
    sim = Sim(30, {"a@h": 1000.0, "b@h": 1000.0, "c@h": 1000.0}, seed=7)
    mean = sim.run(86400, sample_from=12 * 3600)
    for u in sim.users:
        assert mean[u] == pytest.approx(10, abs=1.0), mean


def test_simulated_newcomer_gets_in_as_jobs_finish():
    # hog has held the whole pool for hours; new arrives and reaches its fair half
    sim = Sim(20, {"hog@h": 1000.0, "new@h": 1000.0}, queue={"new@h": 0})
    sim.run(6 * 3600)
    assert sim.held()["hog@h"] == 20
    sim.queue["new@h"] = 1000
    t0 = 6 * 3600 + 60
    t = t0
    while t <= t0 + 4 * 3600:
        sim.cycle(t)
        t += 60
    held = sim.held()
    assert held["new@h"] >= 10  # its better priority (no history) gives it at least half


def test_simulated_floor_and_ceiling_hold_all_day():
    sim = Sim(20, {"a@h": 1000.0, "b@h": 1e6, "c@h": 1000.0}, floors={"b@h": 5}, ceilings={"a@h": 4})
    t = 0.0
    while t <= 86400:
        sim.cycle(t)
        held = sim.held()
        assert held["a@h"] <= 4
        if t > 3600:
            assert held["b@h"] >= 5
        t += 300


def test_simulated_no_starvation_100_users_8_slots():
    users = {f"u{i:03d}@h": 1000.0 for i in range(100)}
    sim = Sim(8, users, job_len=(300, 900), seed=3)
    sim.run(6 * 3600)
    assert sim.ever_ran == set(users)


# --- with the weight-limit matchmaker --------------------------------------------


def test_heavier_static_slots_share_by_weight():
    pool = [slot(f"big{i}", cpus=4) for i in range(4)]  # weight 16 in all
    plan = negotiate_fair(pool, demand({"a@h": 9, "b@h": 9}), [sub("a@h"), sub("b@h")], 0.0)
    assert plan.by_submitter == {"a@h": 2, "b@h": 2}
    assert plan.weight_by_submitter == {"a@h": 8.0, "b@h": 8.0}


def test_thin_slices_still_get_a_heavy_slot():
    # 10 users each entitled to 0.8 of weight; slots weigh 4: still all 2 slots are used
    users = [f"u{i}@h" for i in range(10)]
    pool = [slot("big0", cpus=4), slot("big1", cpus=4)]
    plan = negotiate_fair(pool, demand(dict.fromkeys(users, 3)), [sub(u) for u in users], 0.0)
    assert len(plan.matches) == 2
    assert len({m.submitter for m in plan.matches}) == 2


def test_concurrency_limits_hold_across_spins():
    from roost.core.concurrency import ConcurrencyLimits

    lic = job(ConcurrencyLimits="license")
    reqs = {"a@h": [Request("a@h", 1, 10, lic)], "b@h": [Request("b@h", 1, 10, lic)]}
    limits = ConcurrencyLimits(limits={"license": 3})
    plan = negotiate_fair(slots(10), reqs, [sub("a@h"), sub("b@h", 1e6)], 0.0, concurrency=limits)
    assert len(plan.matches) == 3
    assert plan.concurrency_used == {"license": 3.0}


def test_priority_preemption_takes_only_the_slice():
    from roost.classad.parser import parse_expr
    from roost.core.preemption import PreemptionPolicy

    pool = [slot(f"c{i}", state="Claimed", RemoteUser="hog@h", RemoteUserPrio=5000.0, CurrentRank=0.0,
                 PreemptClaimId=f"pre-{i}") for i in range(4)]
    subs = [sub("hog@h", 5000.0, running=4), sub("new@h", 500.0)]
    policy = PreemptionPolicy(requirements=parse_expr("true"))
    plan = negotiate_fair(pool, demand({"hog@h": 5, "new@h": 5}), subs, 0.0, preemption=policy)
    # new's slice is 4 * (1/500) / (1/500 + 1/5000) ≈ 3.6: three preemptions, not four
    assert plan.by_submitter == {"hog@h": 0, "new@h": 3}
    assert all(m.preempts for m in plan.matches)
    plan = negotiate_fair(pool, demand({"hog@h": 5, "new@h": 5}), subs, 0.0)
    assert plan.matches == []  # no policy: claimed slots are not candidates
