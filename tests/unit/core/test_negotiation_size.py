"""The negotiation cycle at 100,000 jobs: right answers at size, and bookkeeping whose
work follows the matches, not matches × autoclusters (counted, never timed)."""

import random

from roost.classad import ClassAd, ExprTree
from roost.core import fairshare
from roost.core.fairshare import Submitter, _Cycle, negotiate_fair
from roost.core.matchmaker import Request, Slot

_REQ = ExprTree("TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus").node


class _Counted(Request):
    """A Request that counts how many are made (the fair-share bookkeeping's copies)."""

    __slots__ = ()
    made = 0

    def __init__(self, *args, **kwargs):
        type(self).made += 1
        super().__init__(*args, **kwargs)


def _copies_made(monkeypatch, n_requests: int, rounds: int) -> tuple[int, _Cycle]:
    """Copies the bookkeeping makes while ``rounds`` single matches are taken, one at a
    time, from one submitter's ``n_requests`` autoclusters (the one-match rounds)."""
    monkeypatch.setattr(fairshare, "Request", _Counted)
    _Counted.made = 0
    ad = ClassAd({"RequestCpus": 1})
    reqs = [Request("u", i, 1 + i % 3, ad) for i in range(n_requests)]
    cyc = _Cycle({"u": reqs}, [Submitter("u", 1.0)], [])
    rng = random.Random(5)
    pending, _ = cyc.remaining_requests(["u"])
    for _ in range(rounds):
        live = [c for c in rng.sample(pending["u"], 3) if c.count > 0] or [
            c for c in pending["u"] if c.count > 0]
        copy = live[0]
        cyc.took(cyc.orig[id(copy)])
        pending, _ = cyc.remaining_requests(["u"])
    return _Counted.made, cyc


def test_pending_requests_follow_single_matches_at_100000(monkeypatch):
    made, cyc = _copies_made(monkeypatch, 100_000, 20_000)
    assert made == 100_000  # each autocluster copied once, whatever the matches
    pending, orig = cyc.remaining_requests(["u"])
    live = {orig[id(c)].autocluster: c.count for c in pending["u"] if c.count > 0}
    want = {r.autocluster: cyc.left[id(r)] for r in cyc.requests["u"] if cyc.left[id(r)] > 0}
    assert live == want
    order = [orig[id(c)].autocluster for c in pending["u"]]
    assert order == sorted(order)  # still the schedd's order
    assert sum(want.values()) == sum(1 + i % 3 for i in range(100_000)) - 20_000


def _pool(n_static: int, n_part: int) -> list[Slot]:
    slots = []
    for i in range(n_static + n_part):
        part = i >= n_static
        ad = ClassAd({"Name": f"s{i}", "Cpus": 16 if part else 1,
                      "Memory": 65536 if part else 2048 * (1 + i % 4), "Disk": 10**7,
                      "State": "Unclaimed", "PartitionableSlot": part, "Requirements": True})
        slots.append(Slot(f"s{i}", ad))
    return slots


def test_fair_cycle_at_100000_jobs_is_consistent():
    """1,000 autoclusters × 100 jobs over 2,000 static and 250 partitionable slots, 50 users."""
    slots = _pool(2000, 250)
    requests: dict[str, list[Request]] = {}
    for a in range(1000):
        user = f"u{a % 50}"
        ad = ClassAd({"RequestCpus": 1 + a % 2, "RequestMemory": 512 * (1 + a % 5),
                      "RequestDisk": 1000})
        ad["Requirements"] = _REQ
        if a % 3 == 0:
            ad["Rank"] = ExprTree("TARGET.Memory").node
        requests.setdefault(user, []).append(Request(user, a, 100, ad))
    subs = [Submitter(u, eff_prio=0.5 + i) for i, u in enumerate(sorted(requests))]
    plan = negotiate_fair(slots, requests, subs, now=0.0)
    jobs = 100_000
    assert len(plan.matches) + sum(plan.unmatched.values()) == jobs
    by_ac: dict[int, int] = {}
    cpus: dict[str, float] = {}
    memory: dict[str, float] = {}
    for m in plan.matches:
        by_ac[m.request.autocluster] = by_ac.get(m.request.autocluster, 0) + 1
        ad = m.slot.ad
        assert ad["Memory"] >= m.request.ad["RequestMemory"] or m.resources
        if m.resources:
            cpus[m.slot.name] = cpus.get(m.slot.name, 0) + m.resources["Cpus"]
            memory[m.slot.name] = memory.get(m.slot.name, 0) + m.resources["Memory"]
        else:
            assert m.slot.name not in cpus  # a static slot once
            cpus[m.slot.name] = 1
    assert all(n <= 100 for n in by_ac.values())
    assert all(cpus[s] <= 16 and memory[s] <= 65536 for s in memory)
    assert sum(cpus.values()) == 2000 + 250 * 16  # demand exceeds supply: every cpu is taken
    assert sum(plan.by_submitter.values()) == len(plan.matches)
    # better priority (lower eff_prio) never ends with less weight than a worse one
    weight = [plan.weight_by_submitter[s.name] for s in subs]
    assert weight[0] >= weight[-1]
