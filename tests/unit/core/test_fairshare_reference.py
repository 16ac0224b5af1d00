"""negotiate_fair against a plain transcription of its policy: every spin and every
one-match round through ``matchmaker.negotiate`` on a pool without shortcuts, the
order sorted afresh each round, who still wants recounted each round. Random pools
where the slices run thin (many submitters, few slots), so most of a cycle is
one-match rounds; static and partitionable slots, ranked jobs, floors, ceilings,
groups, preemption."""

from __future__ import annotations

import random

from roost.classad import ClassAd, ExprTree
from roost.classad.parser import parse_expr
from roost.core import fairshare as fs
from roost.core.fairshare import GroupConfig, Submitter, negotiate_fair
from roost.core.matchmaker import Plan, Request, Slot, SlotPool, negotiate, takes_nothing
from roost.core.preemption import PreemptionPolicy
from roost.vocabulary import SlotState


class _Plain(SlotPool):
    shortcuts = False


def _reference(slots, requests, submitters, groups=(), preemption=None) -> Plan:
    pool = _Plain(slots, preemption=preemption)
    cyc = fs._Cycle(requests, submitters, groups)
    prios = {n: s.eff_prio for n, s in cyc.subs.items()}
    free_w = pool_w = 0.0
    for s in slots:
        state = fs._state(s.ad)
        if state in (SlotState.UNCLAIMED, SlotState.CLAIMED):
            pool_w += fs.slot_weight(s.ad)
            if state == SlotState.UNCLAIMED:
                free_w += fs.slot_weight(s.ad)
    total = max(pool_w, free_w + sum(cyc.held.values()))
    if groups:
        demand: dict[str, float] = {}
        for n in cyc.subs:
            g = cyc.group[n]
            demand[g] = demand.get(g, 0.0) + cyc.held[n] + cyc.pending_weight(n)
        quota = fs._allocate(groups, total, demand)[1]
    else:
        quota = {fs.NONE_GROUP: total}
    plan = Plan()
    plan.by_submitter = dict.fromkeys(cyc.subs, 0)
    plan.weight_by_submitter = dict.fromkeys(cyc.subs, 0.0)

    def call(reqs, order, limits, orig):
        nonlocal free_w
        p = negotiate(slots, reqs, order, 0.0, limits=limits, pool=pool, submitter_prio=prios)
        for m in p.matches:
            r = m.request = orig.get(id(m.request), m.request)
            n = r.submitter
            if id(r) in cyc.left:
                cyc.took(r)
            cyc.held[n] += m.weight
            plan.by_submitter[n] += 1
            plan.weight_by_submitter[n] += m.weight
            if m.preempts:
                victim = fs._eval_attr(m.slot.ad, "RemoteUser")
                if isinstance(victim, str) and victim in cyc.held:
                    cyc.held[victim] = max(0.0, cyc.held[victim] - m.weight)
            else:
                free_w -= m.weight
        plan.matches.extend(p.matches)
        return len(p.matches)

    spin = True
    while True:
        active = [n for n in cyc.subs if n not in cyc.rejected and cyc.wants(n)]
        if not active or (preemption is None and (free_w <= fs._EPS or pool.free_slots() == 0)):
            break
        if spin:
            shares, limits = fs._slices(cyc, active, quota, preemption is not None)
            order = sorted(active, key=lambda n: fs._service_key(cyc, n, quota))
            reqs, orig = cyc.remaining_requests(order)
            if call(reqs, order, limits, orig):
                continue
        if free_w <= fs._EPS:
            break
        got = False
        for n in sorted(active, key=lambda n: (-(shares[n] - cyc.held[n]), fs._eff(cyc.subs[n]),
                                               cyc.subs[n].usage, n)):
            if not fs._room(cyc, n, quota):
                continue
            reqs, orig = cyc.remaining_requests([n])
            for r in reqs[n]:
                if r.count > 0:
                    one = Request(r.submitter, r.autocluster, 1, r.ad, r.extra)
                    if call({n: [one]}, [n], None, {id(one): orig[id(r)]}):
                        got = True
                        break
            if got:
                break
            cyc.rejected.add(n)
        if not got:
            break
        still = [n for n in cyc.subs if n not in cyc.rejected and cyc.wants(n)]
        spin = still != active
    for n, rs in cyc.requests.items():
        for r in rs:
            if cyc.left[id(r)] > 0:
                plan.unmatched[(n, r.autocluster)] = cyc.left[id(r)]
    return plan


def _case(rng: random.Random, claimed: bool):
    slots = []
    for i in range(rng.randint(2, 16)):
        part = rng.random() < 0.4
        ad = ClassAd({"Name": f"s{i}", "Kind": rng.randrange(3),
                      "Cpus": rng.choice([4, 8, 16]) if part else rng.choice([1, 1, 2]),
                      "Memory": rng.choice([2048, 8192, 32768]), "Disk": 10**6,
                      "GPUs": rng.choice([0, 0, 1]), "State": "Unclaimed",
                      "PartitionableSlot": part, "Requirements": True})
        if claimed and not part and rng.random() < 0.3:
            ad["State"] = "Claimed"
            ad["RemoteUser"] = f"u{rng.randrange(6)}"
            ad["RemoteUserPrio"] = rng.choice([0.5, 10.0, 500.0])
        slots.append(Slot(f"s{i}", ad))
    names = [f"u{k}" for k in range(rng.randint(1, 12))]
    requests: dict[str, list[Request]] = {}
    for a in range(rng.randint(1, 30)):
        n = rng.choice(names)
        ad = ClassAd({"RequestCpus": rng.choice([1, 1, 2, 4]),
                      "RequestMemory": rng.choice([256, 1024, 4096]), "RequestDisk": 10,
                      "RequestGPUs": rng.choice([0, 0, 0, 1])})
        ad["Requirements"] = ExprTree(rng.choice([
            "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus",
            "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus"
            " && TARGET.GPUs >= RequestGPUs",
            "TARGET.Kind != 1 && TARGET.Cpus >= RequestCpus",
            "TARGET.Memory <= 8192"])).node
        rank = rng.choice([None, "TARGET.Memory", "TARGET.Cpus", "TARGET.Kind"])
        if rank is not None:
            ad["Rank"] = ExprTree(rank).node
        requests.setdefault(n, []).append(Request(n, a, rng.randint(1, 20), ad))
    groups = []
    if rng.random() < 0.3:
        groups = [GroupConfig("g1", quota=rng.choice([2, 10])),
                  GroupConfig("g2", dynamic=0.3, accept_surplus=rng.random() < 0.5)]
    subs = []
    for k, n in enumerate(names):
        subs.append(Submitter(n, eff_prio=rng.choice([0.5, 1, 10, 100, 500]) * (1 + k % 3),
                              running_weight=rng.choice([0, 0, 2, 5]),
                              group=rng.choice([None, "g1", "g2"]) if groups else None,
                              floor=rng.choice([None, None, 3]),
                              ceiling=rng.choice([None, None, 6]), usage=rng.random()))
    return slots, requests, subs, groups


def _rows(plan):
    return ([(m.request.submitter, m.request.autocluster, m.slot.name, m.rank,
              dict(m.resources), m.weight, m.preempts) for m in plan.matches],
            plan.unmatched, plan.by_submitter, plan.weight_by_submitter)


def test_negotiate_fair_equals_the_plain_transcription_of_its_policy():
    rounds = 0
    for seed in range(120):
        rng = random.Random(seed)
        claimed = seed % 4 == 3
        slots, requests, subs, groups = _case(rng, claimed)
        policy = PreemptionPolicy(requirements=parse_expr("true")) if claimed else None
        want = _reference(slots, requests, subs, groups, policy)
        got = negotiate_fair(slots, requests, subs, 0.0, groups=groups, preemption=policy)
        assert _rows(got) == _rows(want), seed
        rounds += len(got.matches)
    assert rounds > 500


def test_takes_nothing_only_while_nothing_has_changed():
    """A job that wants at most 4096 MB left finds nothing on a fresh 8192 MB slot;
    that stays known only until another job carves the slot, after which the call
    must be made (and now matches): when the other job reads the same slot classes
    and when it reads others (its partition's change is then not the small job's)."""
    ad = ClassAd({"Name": "p", "Cpus": 8, "Memory": 8192, "Disk": 10**6, "State": "Unclaimed",
                  "PartitionableSlot": True, "Requirements": True})
    slots = [Slot("p", ad)]
    small = ClassAd({"RequestCpus": 1, "RequestMemory": 512, "RequestDisk": 10})
    small["Requirements"] = ExprTree("TARGET.Memory <= 4096 && TARGET.Cpus >= 1").node
    big = ClassAd({"RequestCpus": 1, "RequestMemory": 4500, "RequestDisk": 10})
    for reads in ("", " && TARGET.Kind =!= 7"):  # the same slot classes, or others
        _changed_after_nothing(slots, small, big, reads)


def _changed_after_nothing(slots, small, big, reads):
    big = ClassAd(big)
    big["Requirements"] = ExprTree("TARGET.Memory >= RequestMemory" + reads).node
    pool = SlotPool(slots)
    assert not takes_nothing(pool, small)  # never asked: unknown
    assert pool.match_request(Request("u", 0, 1, small)) == []
    assert takes_nothing(pool, small)
    assert len(pool.match_request(Request("u", 1, 1, big))) == 1  # 3692 MB left
    assert not takes_nothing(pool, small)
    assert [m.slot.name for m in pool.match_request(Request("u", 0, 1, small))] == ["p"]
