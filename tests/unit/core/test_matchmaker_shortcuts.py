"""The matchmaker's shortcuts (an offer better than the whole heap taken without a heap
round trip; a constant-rank split job's next jobs taken on the same slot at once) give
exactly the plans of the plain path (``SlotPool.shortcuts = False``) and of the all-pairs
reference, on randomised pools: one pass, several passes over one pool, a whole fair-share
cycle, with limits, negotiator ranks and preemption."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roost.classad import ClassAd, ExprTree
from roost.classad.parser import parse_expr
from roost.core.fairshare import Submitter, negotiate_fair
from roost.core.matchmaker import Slot, SlotPool, negotiate
from roost.core.preemption import PreemptionPolicy

from .test_matchmaker import _reference, job, req

_STARTS = ["true", 'TARGET.Owner =!= "mallory"', "TARGET.Big =?= true || MY.Kind != 1"]
_READS_MEMORY = "TARGET.RequestMemory <= MY.Memory / 2"  # no job is split in such a pool
_REQS = [
    "TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus",
    "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus && TARGET.Disk >= RequestDisk",
    "RequestMemory <= TARGET.Memory && TARGET.Kind != 2",
    "(TARGET.Cpus > 2) && (TARGET.GPUs >= RequestGPUs)",
    "TARGET.Memory <= 6000 && TARGET.Cpus >= RequestCpus",  # an upper bound: not monotone
    "TARGET.Kind >= 1",
    "TARGET.Memory * 2 >= RequestMemory",  # not a threshold
]
_RANKS = [None, "0", "3", "TARGET.Memory", "TARGET.Memory", "TARGET.Cpus", "TARGET.Cpus",
          "TARGET.Kind", "-TARGET.Cpus", "TARGET.Memory - TARGET.Cpus * 100"]
_NEG_RANKS = [None, None, None, "MY.Kind", "0"]

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def pools(draw, claimed: bool = False):
    """(slots, requests by submitter, submitter names, limits or None, pre, post)."""
    slots = []
    starts = _STARTS + [_READS_MEMORY] if draw(st.integers(0, 4)) == 0 else _STARTS
    for i in range(draw(st.integers(1, 14))):
        kind = draw(st.integers(0, 2))
        part = draw(st.booleans())
        cpus = draw(st.integers(1, 16)) if part else draw(st.integers(1, 2))
        ad = ClassAd({"Name": f"s{i}", "Kind": kind, "Cpus": cpus,
                      "Memory": draw(st.sampled_from([1024, 4096, 16384, 32768])),
                      "Disk": draw(st.sampled_from([1000, 100000])),
                      "GPUs": draw(st.sampled_from([0, 0, 1, 2])),
                      "State": "Unclaimed", "PartitionableSlot": part})
        if claimed and not part and draw(st.integers(0, 3)) == 0:
            ad["State"] = "Claimed"
            ad["RemoteUser"] = draw(st.sampled_from(["u0", "u1", "u2"]))
            ad["RemoteUserPrio"] = draw(st.sampled_from([0.5, 10.0, 500.0]))
        if draw(st.integers(0, 5)) == 0:
            ad["SlotWeight"] = draw(st.sampled_from([0.5, 2, 3]))
        ad["START"] = ExprTree(draw(st.sampled_from(starts))).node
        ad["Requirements"] = ExprTree("START").node
        slots.append(Slot(f"s{i}", ad))
    subs = [f"u{k}" for k in range(draw(st.integers(1, 3)))]
    requests: dict[str, list] = {}
    for a in range(draw(st.integers(1, 6))):
        sub = draw(st.sampled_from(subs))
        ad = job(cpus=draw(st.sampled_from([0, 1, 1, 2, 3])),
                 memory=draw(st.sampled_from([0, 256, 1000, 3000])),
                 requirements=draw(st.sampled_from(_REQS)), rank=draw(st.sampled_from(_RANKS)),
                 Owner=draw(st.sampled_from(["alice", "mallory"])), Big=draw(st.booleans()),
                 RequestGPUs=draw(st.sampled_from([0, 0, 1])))
        requests.setdefault(sub, []).append(req(sub, a, draw(st.integers(1, 30)), ad))
    limits = None
    if draw(st.booleans()):
        limits = {s: draw(st.sampled_from([0.5, 1, 3, 10, 40])) for s in subs}
    pre, post = (draw(st.sampled_from(_NEG_RANKS)) for _ in range(2))
    return (slots, requests, subs, limits,
            None if pre is None else parse_expr(pre), None if post is None else parse_expr(post))


class Plain(SlotPool):
    """The pool with its shortcuts off: every offer and every job through the heap."""

    shortcuts = False


def _plan(plan, pool=None):
    return ([(m.submitter, m.request.autocluster, m.slot.name, m.rank,
              sorted(m.resources.items()), m.weight, m.preempts) for m in plan.matches],
            sorted(plan.unmatched.items()), sorted(plan.by_submitter.items()),
            sorted(plan.weight_by_submitter.items()), plan.evaluations,
            None if pool is None else pool.free_slots())


@SETTINGS
@given(pools())
def test_one_pass_equals_the_plain_path_and_the_all_pairs_reference(case):
    slots, requests, subs, limits, pre, post = case
    fast = SlotPool(slots, pre_job_rank=pre, post_job_rank=post)
    plain = Plain(slots, pre_job_rank=pre, post_job_rank=post)
    got = negotiate(slots, requests, subs, 0.0, limits=limits, pool=fast)
    want = negotiate(slots, requests, subs, 0.0, limits=limits, pool=plain)
    assert _plan(got, fast) == _plan(want, plain)
    ref = _reference(slots, requests, subs, limits, pre, post)
    assert [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
            for m in got.matches] == ref


@SETTINGS
@given(pools(), st.lists(st.tuples(st.permutations(range(3)), st.sampled_from([None, 1, 2.5, 6])),
                         min_size=2, max_size=5))
def test_several_passes_over_one_pool_equal_the_plain_path(case, spins):
    slots, requests, subs, _, pre, post = case
    fast = SlotPool(slots, pre_job_rank=pre, post_job_rank=post)
    plain = Plain(slots, pre_job_rank=pre, post_job_rank=post)
    for perm, limit in spins:
        order = [subs[i] for i in perm if i < len(subs)]
        limits = None if limit is None else dict.fromkeys(subs, limit)
        got = negotiate(slots, requests, order, 0.0, limits=limits, pool=fast)
        want = negotiate(slots, requests, order, 0.0, limits=limits, pool=plain)
        assert _plan(got, fast) == _plan(want, plain)


def _fair(slots, requests, subs, pre, post, preemption, shortcuts):
    submitters = [Submitter(n, eff_prio=[0.5, 10.0, 500.0][i % 3], running_weight=float(i))
                  for i, n in enumerate(subs)]
    was = SlotPool.shortcuts
    SlotPool.shortcuts = shortcuts
    try:
        return negotiate_fair(slots, requests, submitters, 0.0, pre_job_rank=pre,
                              post_job_rank=post, preemption=preemption)
    finally:
        SlotPool.shortcuts = was


@SETTINGS
@given(pools(claimed=True), st.booleans())
def test_a_fair_share_cycle_equals_the_plain_path(case, preempting):
    slots, requests, subs, _, pre, post = case
    policy = PreemptionPolicy(requirements=parse_expr("true")) if preempting else None
    got = _fair(slots, requests, subs, pre, post, policy, True)
    want = _fair(slots, requests, subs, pre, post, policy, False)
    assert _plan(got) == _plan(want)
    assert got.matches or not want.matches


class Counting(SlotPool):
    """Counts the jobs the same-slot runs took."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ran = 0

    def _run(self, out, *a):
        before = len(out)
        serial, used = super()._run(out, *a)
        self.ran += len(out) - before
        return serial, used


def test_a_constant_rank_job_fills_each_slot_in_input_order_in_runs():
    slots = [Slot(f"p{i}", ClassAd({"Name": f"p{i}", "Cpus": 8, "Memory": 8192, "Disk": 10**6,
                                     "State": "Unclaimed", "PartitionableSlot": True,
                                     "Requirements": True}))
             for i in range(3)]
    requests = {"u": [req("u", 1, 20, job(memory=1000))]}
    pool = Counting(slots)
    plan = negotiate(slots, requests, ["u"], 0.0, pool=pool)
    # 8 on p0, 8 on p1, 4 on p2: each slot until its Cpus run out, the first in input order
    assert [m.slot.name for m in plan.matches] == ["p0"] * 8 + ["p1"] * 8 + ["p2"] * 4
    assert pool.ran == 17  # all but the first job of each slot came in a run
    assert _plan(plan) == _plan(negotiate(slots, requests, ["u"], 0.0, pool=Plain(slots)))


def test_a_nan_rank_counts_as_zero():
    """A NaN rank would leave the heap's order to its layout; it sorts as 0 instead."""
    slots = [Slot(f"s{i}", ClassAd({"Name": f"s{i}", "Cpus": 1, "Memory": 4096, "Disk": 10**6,
                                     "State": "Unclaimed", "Requirements": True,
                                     "Speed": [1.0, math.nan, 2.0, math.nan][i]}))
             for i in range(4)]
    requests = {"u": [req("u", 1, 4, job(rank="TARGET.Speed"))]}
    plan = negotiate(slots, requests, ["u"], 0.0)
    assert [m.slot.name for m in plan.matches] == ["s2", "s0", "s1", "s3"]
    assert [m.rank[1] for m in plan.matches] == [2.0, 1.0, 0.0, 0.0]
