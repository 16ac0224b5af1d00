"""The pure matchmaker: slots and requests in, plan out."""

from roost.classad import ClassAd
from roost.classad.parser import parse_expr
from roost.core.matchmaker import Request, Slot, SlotPool, negotiate

JOB_REQ = "TARGET.Cpus >= MY.RequestCpus && TARGET.Memory >= MY.RequestMemory"


def slot(name, cpus=1, memory=1024, state="Unclaimed", partitionable=False, **extra):
    ad = ClassAd({"Name": name, "Cpus": cpus, "Memory": memory, "Disk": 100000, "State": state,
                  "PartitionableSlot": partitionable, **extra})
    if "Requirements" not in extra:
        ad["Requirements"] = parse_expr("START") if "START" in extra else True
    return Slot(name, ad, claim_id=f"claim-{name}", address="127.0.0.1:1")


def job(cpus=1, memory=100, requirements=JOB_REQ, rank=None, **extra):
    ad = ClassAd({"RequestCpus": cpus, "RequestMemory": memory, "RequestDisk": 10, **extra})
    from roost.classad import ExprTree
    ad["Requirements"] = ExprTree(requirements)
    if rank is not None:
        ad["Rank"] = ExprTree(rank)
    return ad


def req(submitter, ac, count, ad):
    return Request(submitter, ac, count, ad, extra="schedd")


def names(plan):
    return [m.slot.name for m in plan.matches]


def test_static_slots_one_job_each_and_unmatched_counted():
    slots = [slot("s1"), slot("s2"), slot("s3", state="Claimed")]
    plan = negotiate(slots, {"alice": [req("alice", 1, 5, job())]}, ["alice"], now=0.0)
    assert sorted(names(plan)) == ["s1", "s2"]
    assert plan.unmatched == {("alice", 1): 3}
    assert plan.by_submitter == {"alice": 2}
    assert all(m.slot.claim_id == "claim-" + m.slot.name for m in plan.matches)


def test_requirements_both_ways():
    slots = [
        slot("small", memory=256),
        slot("picky", memory=4096, Requirements=parse_expr('TARGET.Owner == "bob"')),
        slot("big", memory=4096),
    ]
    plan = negotiate(slots, {"alice": [req("alice", 1, 3, job(memory=1000, Owner="alice"))]},
                     ["alice"], now=0.0)
    assert names(plan) == ["big"]
    plan = negotiate(slots, {"bob": [req("bob", 1, 3, job(memory=1000, Owner="bob"))]}, ["bob"], now=0.0)
    assert sorted(names(plan)) == ["big", "picky"]


def test_no_match_gets_nothing():
    slots = [slot("s1", memory=100)]
    plan = negotiate(slots, {"a": [req("a", 7, 2, job(memory=5000))]}, ["a"], now=0.0)
    assert plan.matches == [] and plan.unmatched == {("a", 7): 2}


def test_job_rank_then_input_order():
    slots = [slot("a", memory=1024), slot("b", memory=8192), slot("c", memory=4096), slot("d", memory=8192)]
    plan = negotiate(slots, {"u": [req("u", 1, 3, job(rank="TARGET.Memory"))]}, ["u"], now=0.0)
    assert names(plan) == ["b", "d", "c"]
    assert plan.matches[0].rank == (0.0, 8192.0, 0.0)
    # an undefined or non-numeric rank is 0: plain input order
    plan = negotiate(slots, {"u": [req("u", 1, 2, job(rank="TARGET.NoSuch"))]}, ["u"], now=0.0)
    assert names(plan) == ["a", "b"]


def test_pre_and_post_job_rank():
    slots = [slot("a", Speed=1, Prio=5), slot("b", Speed=3, Prio=1), slot("c", Speed=3, Prio=2)]
    plan = negotiate(slots, {"u": [req("u", 1, 3, job(rank="TARGET.Speed"))]}, ["u"], now=0.0,
                     pre_job_rank=parse_expr("MY.Prio"))
    assert names(plan) == ["a", "c", "b"]  # pre-job rank beats the job's Rank
    plan = negotiate(slots, {"u": [req("u", 1, 3, job(rank="TARGET.Speed"))]}, ["u"], now=0.0,
                     post_job_rank=parse_expr("MY.Prio"))
    assert names(plan) == ["c", "b", "a"]  # the job's Rank first, post-job rank breaks its ties


def test_partitionable_slot_takes_jobs_while_resources_last():
    p = slot("p", cpus=8, memory=4000, partitionable=True)
    plan = negotiate([p], {"u": [req("u", 1, 10, job(cpus=2, memory=1000))]}, ["u"], now=0.0)
    assert names(plan) == ["p"] * 4  # memory runs out first (4 × 1000)
    assert plan.unmatched == {("u", 1): 6}
    assert plan.matches[0].resources["Cpus"] == 2 and plan.matches[0].resources["Memory"] == 1000
    assert p.ad.eval("Memory") == 4000  # the caller's ad is not changed


def test_partitionable_remaining_visible_to_later_requests_and_requirements():
    p = slot("p", cpus=4, memory=8000, partitionable=True)
    requests = {"u": [req("u", 1, 3, job(cpus=1)), req("u", 2, 2, job(cpus=2, requirements=JOB_REQ + " && TARGET.Cpus >= 2"))]}
    plan = negotiate([p], requests, ["u"], now=0.0)
    assert [(m.request.autocluster, m.slot.name) for m in plan.matches] == [(1, "p"), (1, "p"), (1, "p")]
    assert plan.unmatched == {("u", 2): 2}  # one cpu left, the 2-cpu jobs do not fit


def test_submitter_order_and_limits():
    slots = [slot(f"s{i}") for i in range(4)]
    requests = {"a": [req("a", 1, 3, job())], "b": [req("b", 1, 3, job())]}
    plan = negotiate(slots, requests, ["b", "a"], now=0.0)
    assert plan.by_submitter == {"b": 3, "a": 1}
    plan = negotiate(slots, requests, ["b", "a"], now=0.0, limits={"b": 1})
    assert plan.by_submitter == {"b": 1, "a": 3}
    assert plan.unmatched == {("b", 1): 2}


def test_pool_can_be_spun_again():
    slots = [slot(f"s{i}") for i in range(3)]
    pool = SlotPool(slots)
    requests = {"a": [req("a", 1, 5, job())]}
    first = negotiate(slots, requests, ["a"], 0.0, limits={"a": 1}, pool=pool)
    second = negotiate(slots, requests, ["a"], 0.0, pool=pool)
    assert len(first.matches) == 1 and len(second.matches) == 2
    assert not set(names(first)) & set(names(second))
    assert pool.free_slots() == 0


def test_slot_start_expression_reads_job():
    slots = [slot("s", START=parse_expr('TARGET.Owner =!= "mallory"'))]
    slots[0].ad["START"] = parse_expr('TARGET.Owner =!= "mallory"')
    plan = negotiate(slots, {"m": [req("m", 1, 1, job(Owner="mallory"))]}, ["m"], now=0.0)
    assert plan.matches == []
    plan = negotiate(slots, {"x": [req("x", 1, 1, job(Owner="alice"))]}, ["x"], now=0.0)
    assert names(plan) == ["s"]


# --- the fast path against the plain algorithm --------------------------------------------

import heapq  # noqa: E402
import random  # noqa: E402

from roost.classad import ExprTree  # noqa: E402
from roost.classad.evaluate import matches  # noqa: E402
from roost.core.concurrency import ConcurrencyLimits  # noqa: E402
from roost.core.matchmaker import _fits, _requested  # noqa: E402
from roost.core.matchvalues import eval_number  # noqa: E402
from roost.core.slotclasses import SlotView  # noqa: E402


def _reference(slots, requests_by_submitter, order, limits=None, pre=None, post=None):
    """The old all-pairs matchmaker (every request against every slot), kept as the
    definition of the answer; a partitionable slot stays on offer while it has room."""
    views = [SlotView(s, i, False) for i, s in enumerate(slots) if s.ad.eval("State") == "Unclaimed"]
    out = []
    for sub in order:
        budget = None if limits is None else limits.get(sub)
        used = 0.0
        for r in requests_by_submitter.get(sub, ()):
            job = r.ad

            def cand(v, job=job):
                ad = v.fresh_ad()  # a carved slot's ad shows what is left
                if not (matches(ad, job) and matches(job, ad)):
                    return None
                amounts, weight = {}, v.weight
                if v.partitionable:
                    amounts = _requested(job, ad)
                    if not _fits(v, amounts):
                        return None
                    weight = amounts["Cpus"]
                rank = (eval_number(pre, ad, job), eval_number(job._attrs.get("rank"), job, ad),
                        eval_number(post, ad, job))
                return rank, amounts, weight

            heap = []
            for v in views:
                if not v.used:
                    c = cand(v)
                    if c is not None:
                        heap.append((-c[0][0], -c[0][1], -c[0][2], v.index, v, c))
            heapq.heapify(heap)
            n = 0
            while heap and n < r.count:
                *_, v, (rank, amounts, weight) = heapq.heappop(heap)
                if budget is not None and used + weight > budget + 1e-9:
                    continue
                used += weight
                n += 1
                out.append((r.autocluster, v.slot.name, rank, dict(amounts), weight))
                if v.partitionable:
                    v.take(amounts)
                    c = cand(v)
                    if c is not None:
                        heapq.heappush(heap, (-c[0][0], -c[0][1], -c[0][2], v.index, v, c))
                else:
                    v.used = True
    return out


_STARTS = ['TARGET.Owner =!= "mallory"', "TARGET.RequestMemory <= MY.Memory / 2", "true",
           'eval("TARGET.RequestCpus < 4")', "MY.Kind != 3 || TARGET.Big =?= true",
           "TARGET.Prio > MY.Cut"]
_JOB_REQS = ["TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus", "true",
             'TARGET.Arch == "X86_64"', "TARGET.Kind >= 2 && TARGET.Disk >= RequestDisk"]
_RANKS = [None, "TARGET.Memory", "TARGET.Cpus", "5", "TARGET.Kind * 10 - TARGET.Memory / 1000"]


def _random_case(rng):
    slots = []
    for i in range(rng.randint(5, 40)):
        kind = rng.randrange(5)
        part = kind in (0, 4) and rng.random() < 0.7
        ad = ClassAd({"Name": f"s{i}", "Machine": f"h{i}", "Kind": kind,
                      "Arch": "X86_64" if kind != 2 else "aarch64",
                      "Cpus": [1, 2, 8, 1, 4][kind] * (4 if part else 1),
                      "Memory": [1024, 2048, 4096, 1024, 8192][kind], "Disk": 1000 * (kind + 1),
                      "State": "Unclaimed" if rng.random() < 0.9 else "Claimed",
                      "PartitionableSlot": part, "Cut": rng.choice([0, 5])})
        ad["START"] = ExprTree(_STARTS[rng.randrange(len(_STARTS))]).node
        ad["Requirements"] = ExprTree("START").node
        if rng.random() < 0.2:
            ad["SlotWeight"] = ExprTree("Cpus * 2").node
        slots.append(Slot(f"s{i}", ad))
    requests = {}
    subs = [f"u{k}" for k in range(rng.randint(1, 3))]
    for a in range(rng.randint(1, 8)):
        sub = rng.choice(subs)
        ad = job(cpus=rng.choice([1, 1, 2, 3]), memory=rng.choice([100, 1000, 3000]),
                 requirements=rng.choice(_JOB_REQS), rank=rng.choice(_RANKS),
                 Owner=rng.choice(["alice", "mallory"]), Prio=rng.randrange(10),
                 Big=rng.random() < 0.5)
        if rng.random() < 0.2:
            ad["RequestMemory"] = ExprTree("TARGET.Memory / 4").node
        requests.setdefault(sub, []).append(req(sub, a, rng.randint(1, 12), ad))
    limits = {s: rng.choice([1, 3, 10]) for s in subs} if rng.random() < 0.4 else None
    pre = ExprTree(rng.choice(["MY.Kind", "MY.Memory"])).node if rng.random() < 0.3 else None
    post = ExprTree("MY.Cut").node if rng.random() < 0.3 else None
    return slots, requests, subs, limits, pre, post


def test_fast_path_equals_all_pairs_reference():
    for seed in range(150):
        rng = random.Random(seed)
        slots, requests, subs, limits, pre, post = _random_case(rng)
        want = _reference(slots, requests, subs, limits, pre, post)
        plan = negotiate(slots, requests, subs, 0.0, limits=limits, pre_job_rank=pre,
                         post_job_rank=post)
        got = [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
               for m in plan.matches]
        assert got == want, seed


def test_fast_path_over_several_passes_equals_one_reference_run():
    for seed in range(40):
        slots, requests, subs, _, pre, post = _random_case(random.Random(1000 + seed))
        want = _reference(slots, requests, subs + subs, None, pre, post)
        pool = SlotPool(slots, pre_job_rank=pre, post_job_rank=post)
        first = negotiate(slots, requests, subs, 0.0, pool=pool)
        second = negotiate(slots, requests, subs, 0.0, pool=pool)
        got = [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
               for m in first.matches + second.matches]
        assert got == want, seed


def test_fewer_evaluations_than_pairs_for_alike_slots():
    slots = [slot(f"s{i}", memory=2048) for i in range(200)]
    plan = negotiate(slots, {"u": [req("u", 1, 150, job(rank="TARGET.Memory"))]}, ["u"], 0.0)
    assert len(plan.matches) == 150 and names(plan)[:3] == ["s0", "s1", "s2"]
    assert plan.evaluations <= 2


# --- slot weight ----------------------------------------------------------------------------

def test_limits_are_slot_weight():
    slots = [slot("big", cpus=4), slot("a"), slot("b"), slot("c")]
    requests = {"u": [req("u", 1, 4, job())]}
    plan = negotiate(slots, requests, ["u"], 0.0, limits={"u": 3})
    # "big" (weight 4) is too heavy for a limit of 3: the three one-cpu slots instead
    assert names(plan) == ["a", "b", "c"]
    assert plan.by_submitter == {"u": 3} and plan.weight_by_submitter == {"u": 3.0}
    plan = negotiate(slots, requests, ["u"], 0.0, limits={"u": 5})
    assert names(plan) == ["big", "a"] and plan.weight_by_submitter == {"u": 5.0}


def test_slot_weight_expression_and_partitionable_weight():
    s = slot("w", cpus=2, SlotWeight=ExprTree("Cpus * 10").node)
    p = slot("p", cpus=8, memory=8000, partitionable=True)
    plan = negotiate([s, p], {"u": [req("u", 1, 3, job(cpus=2))]}, ["u"], 0.0)
    assert [(m.slot.name, m.weight) for m in plan.matches] == [("w", 20.0), ("p", 2.0), ("p", 2.0)]
    assert plan.weight_by_submitter == {"u": 24.0}


# --- concurrency limits ---------------------------------------------------------------------

def test_concurrency_limits_cap_matches_and_are_recorded():
    slots = [slot(f"s{i}") for i in range(10)]
    conc = ConcurrencyLimits(limits={"license": 5}, default=100, in_use={"license": 1})
    requests = {"u": [req("u", 1, 10, job(ConcurrencyLimits="LICENSE:2, db"))]}
    plan = negotiate(slots, requests, ["u"], 0.0, concurrency=conc)
    assert len(plan.matches) == 2  # (5 - 1) // 2
    assert plan.concurrency_used == {"license": 4.0, "db": 2.0}
    assert plan.unmatched == {("u", 1): 8}
    assert conc.in_use == {"license": 1}  # the caller's record is not changed


def test_concurrency_default_group_default_and_later_passes():
    slots = [slot(f"s{i}") for i in range(10)]
    conc = ConcurrencyLimits(default=3, group_defaults={"license": 1})
    pool = SlotPool(slots)
    r = {"u": [req("u", 1, 10, job(ConcurrencyLimits="db"))],
         "v": [req("v", 2, 10, job(ConcurrencyLimits="license.north other:0.5"))]}
    plan = negotiate(slots, r, ["u", "v"], 0.0, pool=pool, concurrency=conc)
    assert plan.by_submitter == {"u": 3, "v": 1}
    again = negotiate(slots, r, ["u", "v"], 0.0, pool=pool, concurrency=conc)
    assert again.by_submitter == {"u": 0, "v": 0}  # the first pass used everything up


def test_malformed_concurrency_limits_never_match():
    plan = negotiate([slot("s")], {"u": [req("u", 1, 1, job(ConcurrencyLimits="lic:x"))]}, ["u"],
                     0.0, concurrency=ConcurrencyLimits())
    assert plan.matches == []
