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
