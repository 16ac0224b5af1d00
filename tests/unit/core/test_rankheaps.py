"""Jobs ranked by what is left of a resource share a base's heap when they need the
same resources left at all (:mod:`roost.core.rankheaps`), whatever numbers they ask
for: a member too small for one job stays on offer to the others, within a call and
across calls, and the plans are those of the all-pairs reference."""

from __future__ import annotations

import random

from roost.classad import ClassAd, ExprTree
from roost.core.matchmaker import Request, Slot, SlotPool, negotiate

from .test_matchmaker import _reference

_REQ = "TARGET.Memory >= RequestMemory && TARGET.Cpus >= RequestCpus"


def _pslot(name: str, cpus: int, memory: int, gpus: int = 0) -> Slot:
    ad = ClassAd({"Name": name, "Arch": "X86_64", "Cpus": cpus, "Memory": memory,
                  "Disk": 10**6, "GPUs": gpus, "State": "Unclaimed",
                  "PartitionableSlot": True, "Requirements": True})
    return Slot(name, ad)


def _job(cpus: int, memory: int, rank: str, gpus: int = 0, disk: int = 10) -> ClassAd:
    ad = ClassAd({"RequestCpus": cpus, "RequestMemory": memory, "RequestDisk": disk,
                  "RequestGPUs": gpus})
    clauses = _REQ + (" && TARGET.GPUs >= RequestGPUs" if gpus else "")
    ad["Requirements"] = ExprTree(clauses + " && TARGET.Disk >= RequestDisk").node
    ad["Rank"] = ExprTree(rank).node
    return ad


def _got(plan):
    return [(m.request.autocluster, m.slot.name, m.rank, dict(m.resources), m.weight)
            for m in plan.matches]


def test_a_member_too_small_for_one_job_stays_on_offer_to_the_next():
    """``big`` has the most Memory but only 2 Cpus: the 4-cpu job passes it over (set
    aside for its call, several jobs long), the 1-cpu jobs after it still get it first."""
    slots = [_pslot("big", 2, 65536), _pslot("mid", 8, 32768), _pslot("small", 16, 16384)]
    reqs = [Request("u", 0, 3, _job(4, 1024, "TARGET.Memory")),
            Request("u", 1, 2, _job(1, 1024, "TARGET.Memory")),
            Request("u", 2, 1, _job(4, 1024, "TARGET.Memory"))]
    pool = SlotPool(slots)
    plan = negotiate(slots, {"u": reqs}, ["u"], 0.0, pool=pool)
    assert [(m.request.autocluster, m.slot.name) for m in plan.matches] == [
        (0, "mid"), (0, "mid"), (0, "small"), (1, "big"), (1, "big"), (2, "small")]
    assert _got(plan) == _reference(slots, {"u": reqs}, ["u"])
    # the three jobs need Cpus and Memory left: one heap by Memory for the base
    (part,) = [p for p in pool.classes._partitions.values() if p.bheaps]
    assert [k[1:] for k in part.bheaps] == [("Memory", ("Cpus",))]


def test_many_jobs_alike_but_for_their_numbers_equal_the_all_pairs_reference():
    """Jobs ranked by Memory or by Cpus that differ only in the Cpus, Memory and GPUs
    they ask for, one job per call taking turns (as the pie does) and whole requests,
    on bases whose members run out of Cpus, Memory or GPUs first."""
    for seed in range(25):
        rng = random.Random(seed)
        slots = [_pslot(f"p{i}", rng.choice([2, 4, 8, 16]),
                        rng.choice([2048, 8192, 16384, 65536]), rng.choice([0, 0, 1, 2]))
                 for i in range(rng.randint(3, 12))]
        ads = []
        for _ in range(rng.randint(2, 8)):
            ads.append((_job(rng.choice([1, 1, 2, 4]), rng.choice([256, 1024, 4096]),
                             rng.choice(["TARGET.Memory", "TARGET.Cpus"]),
                             gpus=rng.choice([0, 0, 0, 1])), rng.randint(1, 12)))
        if seed % 2:
            reqs = [Request("u", a, 1, ad) for k in range(max(n for _, n in ads))
                    for a, (ad, n) in enumerate(ads) if k < n]
        else:
            reqs = [Request("u", a, n, ad) for a, (ad, n) in enumerate(ads)]
        plan = negotiate(slots, {"u": reqs}, ["u"], 0.0)
        assert _got(plan) == _reference(slots, {"u": reqs}, ["u"]), seed
        assert len(plan.matches) > 0
