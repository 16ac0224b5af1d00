"""Jobs that read a partitionable slot's resources only as thresholds (``Split``):
their answers per base, the per-base scan with its cursors and spent-slot skips,
must give exactly the plans of the all-pairs reference and of a pool that
remembers nothing between requests."""

import random

from roost.classad import ClassAd, ExprTree
from roost.core.matchmaker import Slot, SlotPool, negotiate
from roost.core.thresholds import Split

from .test_matchmaker import _reference, job, req
from .test_matchmaker_cache import Forgetful, _spin

_STARTS = ["true", "true", 'TARGET.Owner =!= "mallory"', "TARGET.Big =?= true || MY.Kind != 1",
           "TARGET.RequestMemory <= MY.Memory / 2"]  # the last reads a resource: no split
_REQS = [
    "TARGET.Memory >= MY.RequestMemory && TARGET.Cpus >= RequestCpus",
    "RequestMemory <= TARGET.Memory && TARGET.Kind != 2",
    "(TARGET.Cpus > 2) && (TARGET.Disk >= RequestDisk)",
    "Memory >= 2000",  # a bare name: the slot's, unless the job has its own Memory
    "TARGET.Memory <= 6000 && TARGET.Cpus >= RequestCpus",  # an upper bound: not monotone
    "TARGET.Kind >= 1",
    "TARGET.Memory * 2 >= RequestMemory",  # not a threshold: no split
]
_RANKS = [None, "0", "TARGET.Memory", "TARGET.Kind", "-TARGET.Cpus", "TARGET.Kind * 3 + 1"]


def _case(rng):
    slots = []
    starts = _STARTS if rng.random() < 0.25 else _STARTS[:-1]
    for i in range(rng.randint(6, 30)):
        kind = rng.randrange(3)
        part = rng.random() < 0.75
        ad = ClassAd({"Name": f"s{i}", "Kind": kind, "Cpus": [4, 8, 2][kind] if part else 1,
                      "Memory": [8192, 4096, 16384][kind] if part else 2048,
                      "Disk": 100000, "State": "Unclaimed", "PartitionableSlot": part})
        if part and rng.random() < 0.15:
            ad["Memory"] = ExprTree(f"{[8192, 4096, 16384][kind] // 2} * 2").node  # not a literal
        ad["START"] = ExprTree(rng.choice(starts)).node
        ad["Requirements"] = ExprTree("START").node
        slots.append(Slot(f"s{i}", ad))
    requests = {}
    subs = [f"u{k}" for k in range(rng.randint(1, 3))]
    for a in range(rng.randint(1, 8)):
        sub = rng.choice(subs)
        extra = {"Owner": rng.choice(["alice", "mallory"]), "Big": rng.random() < 0.5}
        if rng.random() < 0.1:
            extra["Memory"] = 5000  # the job's own Memory: a bare ``Memory`` reads it
        ad = job(cpus=rng.choice([1, 1, 2, 3, 0]), memory=rng.choice([500, 1000, 3000]),
                 requirements=rng.choice(_REQS), rank=rng.choice(_RANKS), **extra)
        requests.setdefault(sub, []).append(req(sub, a, rng.randint(1, 15), ad))
    limits = {s: rng.choice([1, 3, 10]) for s in subs} if rng.random() < 0.4 else None
    return slots, requests, subs, limits


def test_split_jobs_equal_the_all_pairs_reference():
    for seed in range(300):
        slots, requests, subs, limits = _case(random.Random(seed))
        want = _reference(slots, requests, subs, limits)
        plan = negotiate(slots, requests, subs, 0.0, limits=limits)
        got = [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
               for m in plan.matches]
        assert got == want, seed


def test_split_jobs_over_many_passes_equal_a_pool_that_remembers_nothing():
    for seed in range(200):
        slots, requests, subs, _ = _case(random.Random(9000 + seed))
        want = _spin(Forgetful(slots), slots, requests, subs, seed)
        got = _spin(SlotPool(slots), slots, requests, subs, seed)
        assert got == want, seed


def test_which_jobs_are_split():
    slots = [Slot("p", ClassAd({"Cpus": 8, "Memory": 8192, "Disk": 1000, "State": "Unclaimed",
                                "PartitionableSlot": True, "Requirements": True}))]
    pool = SlotPool(slots)

    def split(requirements, rank=None, **extra):
        return pool._job_info(job(requirements=requirements, rank=rank, **extra))[5]

    s = split("TARGET.Memory >= RequestMemory && TARGET.Arch =!= \"ppc\"", rank="0")
    assert isinstance(s, Split) and s.ranked and s.monotone and s.cpus and len(s.rest) == 1
    assert not split("TARGET.Memory <= 4096").monotone
    assert not split("TARGET.Memory >= 1", rank="TARGET.Memory").ranked
    assert split("TARGET.Memory / 2 >= RequestMemory") is None  # not a threshold
    # the job's own Memory: names are not scoped, so this stays on the general path
    assert split("Memory >= 1", Memory=3) is None
    assert split("TARGET.Memory >= RequestMemory", RequestMemory=ExprTree("TARGET.Cpus")) is None
