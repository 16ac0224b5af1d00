"""The matchmaker's shortcuts against plain evaluation, on random ads (hypothesis).

A split job (:mod:`roost.core.thresholds`) is answered per base, its thresholds
compared as numbers against what is left of a carved slot, and, when its Rank is
a slot resource, ranked from what is left without evaluating the ad. Each of those
must give what evaluating both Requirements, the fit and the three ranks on the
carved slot's own ad gives: a shortcut may never change a match or its order.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from roost.classad import ClassAd, ExprTree
from roost.classad.evaluate import matches
from roost.core.matchmaker import Request, Slot, SlotPool, _fits, _requested, negotiate
from roost.core.matchvalues import eval_number

from .test_matchmaker import _reference

_STARTS = ["true", 'TARGET.Owner =!= "mallory"', "TARGET.ImageSize < 4000",
           "(TARGET.RequestGPUs =!= undefined && TARGET.RequestGPUs > 0) || GPUs == 0",
           "TARGET.RequestMemory <= MY.Memory / 2", "MY.Kind != 1 || TARGET.Big =?= true"]
_CLAUSES = ["TARGET.Memory >= RequestMemory", "TARGET.Cpus >= RequestCpus",
            "TARGET.Disk >= RequestDisk", "TARGET.GPUs >= RequestGPUs", "Memory >= 2000",
            "TARGET.Cpus > 1", "TARGET.Memory <= 6000", 'TARGET.Arch == "X86_64"',
            "TARGET.Kind >= 1", "TARGET.Memory * 2 >= RequestMemory"]
_RANKS = [None, "0", "3", "TARGET.Memory", "TARGET.Cpus", "Memory", "TARGET.GPUs",
          "TARGET.Disk", "-TARGET.Cpus", "TARGET.Kind * 3 + 1"]
_NEG_RANKS = [None, "7", "2.5", "MY.Kind", "MY.Memory"]

slot_ads = st.fixed_dictionaries({
    "Kind": st.integers(0, 2),
    "Arch": st.sampled_from(["X86_64", "aarch64"]),
    "Cpus": st.sampled_from([1, 2, 4, 8, 16]),
    "Memory": st.sampled_from([1024, 4096, 8192, 16384]),
    "Disk": st.sampled_from([1000, 100000]),
    "GPUs": st.sampled_from([0, 1, 2, None]),  # None: the slot has no GPUs attribute
    "START": st.sampled_from(_STARTS),
})
job_ads = st.fixed_dictionaries({
    "RequestCpus": st.sampled_from([0, 1, 2, 3]),
    "RequestMemory": st.sampled_from([0, 500, 1000, 3000]),
    "RequestDisk": st.sampled_from([10, 5000]),
    "RequestGPUs": st.sampled_from([0, 1, None]),
    "ImageSize": st.sampled_from([100, 5000]),
    "Owner": st.sampled_from(["alice", "mallory"]),
    "Big": st.booleans(),
    "Memory": st.sampled_from([None, None, None, 5000]),  # the job's own Memory: a bare name reads it
    "Clauses": st.lists(st.sampled_from(_CLAUSES), min_size=1, max_size=4),
    "Rank": st.sampled_from(_RANKS),
})


def _slot(name, d):
    ad = ClassAd({"Name": name, "Kind": d["Kind"], "Arch": d["Arch"], "Cpus": d["Cpus"],
                  "Memory": d["Memory"], "Disk": d["Disk"], "State": "Unclaimed",
                  "PartitionableSlot": True})
    if d["GPUs"] is not None:
        ad["GPUs"] = d["GPUs"]
    ad["START"] = ExprTree(d["START"]).node
    ad["Requirements"] = ExprTree("START").node
    return Slot(name, ad)


def _job(d):
    ad = ClassAd({k: d[k] for k in ("RequestCpus", "RequestMemory", "RequestDisk", "ImageSize",
                                    "Owner", "Big")})
    for k in ("RequestGPUs", "Memory"):
        if d[k] is not None:
            ad[k] = d[k]
    ad["Requirements"] = ExprTree(" && ".join(d["Clauses"])).node
    if d["Rank"] is not None:
        ad["Rank"] = ExprTree(d["Rank"]).node
    return ad


def _plain(view, job, pre, post):
    """What evaluation says of ``job`` on the carved slot: None, or (ranks, amounts)."""
    ad = view.fresh_ad()
    if not (matches(ad, job) and matches(job, ad)):
        return None
    amounts = _requested(job, ad)
    if not _fits(view, amounts):
        return None
    return (eval_number(pre, ad, job), eval_number(job._attrs.get("rank"), job, ad),
            eval_number(post, ad, job)), amounts


@settings(max_examples=300, deadline=None)
@given(slot_ads, job_ads, st.lists(st.sampled_from([(1, 500), (2, 1000), (1, 3000), (4, 0)]),
                                   max_size=4),
       st.sampled_from(_NEG_RANKS), st.sampled_from(_NEG_RANKS))
def test_candidate_equals_plain_evaluation_on_a_carved_slot(s, j, carves, pre, post):
    pre_node = None if pre is None else ExprTree(pre).node
    post_node = None if post is None else ExprTree(post).node
    pool = SlotPool([_slot("p", s)], pre_job_rank=pre_node, post_job_rank=post_node)
    view = pool.views[0]
    for cpus, memory in carves:  # what earlier matches took (as the matchmaker does)
        if view.remaining["Cpus"] >= cpus and view.remaining["Memory"] >= memory:
            view.take({"Cpus": cpus, "Memory": memory, "Disk": 0, "GPUs": 0})
    job = _job(j)
    _, fixed, names, _, _, split = pool._job_info(job)
    part = pool.classes.partition(job, names)
    got = pool._candidate(Request("u", 1, 1, job), view, None, fixed, split, {}, part)
    want = _plain(view, job, pre_node, post_node)
    assert (got is None) == (want is None), (got, want)
    if got is not None:
        _, ranks, amounts, weight, preempts = got
        assert ranks == want[0]
        assert dict(amounts) == want[1]
        assert weight == want[1]["Cpus"] and not preempts


@settings(max_examples=60, deadline=None)
@given(st.lists(slot_ads, min_size=1, max_size=12),
       st.lists(st.tuples(job_ads, st.integers(1, 12)), min_size=1, max_size=6),
       st.sampled_from(_NEG_RANKS), st.sampled_from(_NEG_RANKS),
       st.sampled_from([None, 1, 4, 16]))
def test_plan_equals_the_all_pairs_reference(slots, jobs, pre, post, limit):
    """The whole pass, shortcuts and caches included, against every request tried on
    every slot's freshly carved ad."""
    pre_node = None if pre is None else ExprTree(pre).node
    post_node = None if post is None else ExprTree(post).node
    pool = [_slot(f"s{i}", d) for i, d in enumerate(slots)]
    requests = {"u": [Request("u", a, n, _job(d), "schedd") for a, (d, n) in enumerate(jobs)]}
    limits = None if limit is None else {"u": float(limit)}
    want = _reference(pool, requests, ["u"], limits, pre_node, post_node)
    plan = negotiate(pool, requests, ["u"], 0.0, limits=limits, pre_job_rank=pre_node,
                     post_job_rank=post_node)
    got = [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
           for m in plan.matches]
    assert got == want



# Jobs that take the per-base heaps by what is left (:mod:`roost.core.rankheaps`): lower
# bounds only, ranked by one resource; slots whose START reads no resource.
# bases of several slots whose resources run out in turn, Disk included.
ranked_slot_ads = st.fixed_dictionaries({
    "Kind": st.integers(0, 1),
    "Arch": st.just("X86_64"),
    "Cpus": st.sampled_from([2, 3, 4, 8]),
    "Memory": st.sampled_from([3000, 4096, 5000, 8192]),
    "Disk": st.sampled_from([6000, 12000, 100000]),
    "GPUs": st.sampled_from([0, 1, 2]),
    "START": st.sampled_from([s for s in _STARTS if "Memory" not in s]),
})
ranked_job_ads = job_ads.map(lambda d: {**d, "Clauses": [
    c for c in d["Clauses"] if "<=" not in c and "*" not in c and "Kind" not in c]
    or ["TARGET.Memory >= RequestMemory"]})
_RANKED_BY = st.sampled_from(["TARGET.Memory", "TARGET.Cpus", "Memory", "TARGET.GPUs",
                              "TARGET.Disk"])


@settings(max_examples=100, deadline=None)
@given(st.lists(ranked_slot_ads, min_size=1, max_size=10),
       st.lists(st.tuples(ranked_job_ads, _RANKED_BY, st.integers(1, 10)), min_size=1,
                max_size=5),
       st.sampled_from([None, "7", "2.5"]), st.booleans())
def test_jobs_ranked_by_what_is_left_equal_the_all_pairs_reference(slots, jobs, pre, turns):
    """Jobs ranked by a resource, against every slot's freshly carved ad: all their jobs in
    one call each, or (``turns``) the pie's way, one job per call with the ads taking
    turns, so each ad's cached answers and the heaps by what is left outlive slots carved
    by the other ads' calls."""
    pre_node = None if pre is None else ExprTree(pre).node
    pool = [_slot(f"s{i}", d) for i, d in enumerate(slots)]
    ads = [(_job({**d, "Rank": rank}), n) for d, rank, n in jobs]
    if turns:
        reqs = [Request("u", a, 1, ad, "schedd") for k in range(max(n for _, n in ads))
                for a, (ad, n) in enumerate(ads) if k < n]
    else:
        reqs = [Request("u", a, n, ad, "schedd") for a, (ad, n) in enumerate(ads)]
    want = _reference(pool, {"u": reqs}, ["u"], None, pre_node, None)
    plan = negotiate(pool, {"u": reqs}, ["u"], 0.0, pre_job_rank=pre_node)
    got = [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
           for m in plan.matches]
    assert got == want


def test_a_slot_one_job_cannot_take_stays_on_offer_to_a_job_alike():
    """Two jobs ranked by Memory that ask alike but for Disk share a base's heap; the
    slot with the most Memory has too little Disk for the first, and must still be the
    second's best."""
    base = {"Kind": 0, "Arch": "X86_64", "Cpus": 4, "GPUs": 0, "START": "true"}
    pool = [_slot("big", {**base, "Memory": 8192, "Disk": 3000}),
            _slot("small", {**base, "Memory": 4096, "Disk": 100000})]
    job = {"RequestCpus": 1, "RequestMemory": 500, "RequestGPUs": 0, "ImageSize": 100,
           "Owner": "alice", "Big": False, "Memory": None, "Rank": "TARGET.Memory",
           "Clauses": ["TARGET.Memory >= RequestMemory", "TARGET.Disk >= RequestDisk"]}
    reqs = [Request("u", 0, 1, _job({**job, "RequestDisk": 5000})),
            Request("u", 1, 1, _job({**job, "RequestDisk": 10}))]
    plan = negotiate(pool, {"u": reqs}, ["u"], 0.0)
    assert [(m.request.autocluster, m.slot.name) for m in plan.matches] == [(0, "small"), (1, "big")]
    assert _reference(pool, {"u": reqs}, ["u"]) == [
        (m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
        for m in plan.matches]
