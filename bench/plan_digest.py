"""Digests of negotiation plans over big generated pools, to show that a change to the
matchmaker or fair share leaves every decision as it was.

Run it on two trees and compare the lines (``PYTHONPATH`` picks the tree)::

    PYTHONPATH=/old/src python bench/plan_digest.py > old.txt
    PYTHONPATH=src python bench/plan_digest.py > new.txt && diff old.txt new.txt

Each line is one configuration (sizes, seed, fair or plain, preemption, groups) and the
sha256 of its plan: every match in order (submitter, autocluster, slot, ranks,
resources, weight, preempts), what is left unmatched, and the per-submitter sums.
``evaluations`` is printed apart: a change may evaluate less and still decide the same.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
from pathlib import Path

if not any(Path(p, "roost").is_dir() for p in sys.path if p):  # lazy: only without PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.classad import ClassAd  # noqa: E402
from roost.core.fairshare import GroupConfig, Submitter, negotiate_fair  # noqa: E402
from roost.core.matchmaker import Request, Slot, negotiate  # noqa: E402
from roost.core.preemption import PreemptionPolicy  # noqa: E402

STARTS = ["true", 'TARGET.Owner =!= "user3"', "TARGET.ImageSize < 4000000",
          "(TARGET.RequestGPUs =!= undefined && TARGET.RequestGPUs > 0) || GPUs == 0"]


def _slots(rng: random.Random, n: int, claimed: bool) -> list[Slot]:
    kinds = []
    for k in range(rng.randint(8, 40)):
        part = rng.random() < 0.3
        kinds.append(dict(arch="X86_64" if k % 5 else "aarch64",
                          cpus=rng.choice([8, 16, 32, 64]) if part else rng.choice([1, 1, 2]),
                          memory=(rng.choice([32, 64, 128, 256]) * 1024) if part else rng.choice([2048, 4096, 8192]),
                          disk=rng.choice([100, 200, 500]) * 1000000, gpus=rng.choice([0, 0, 0, 2, 4]) if part else 0,
                          part=part, start=STARTS[k % len(STARTS)] if k % 3 else "true",
                          weight=rng.choice(["Cpus", "Cpus", "Cpus * 1.5", "1"])))
    out = []
    for i in range(n):
        k = kinds[rng.randrange(len(kinds))]
        extra = ""
        state = "Unclaimed"
        if claimed and not k["part"] and rng.random() < 0.2:
            state = "Claimed"
            extra = (f' RemoteUser = "user{rng.randrange(30)}@example.org"; RemoteUserPrio = {rng.choice([0.5, 10.0, 500.0])};'
                     f' CurrentRank = 0.0;')
        ad = ClassAd(
            f'[Name = "slot{i}@host{i}"; Machine = "host{i}"; MyType = "Machine"; Arch = "{k["arch"]}"; OpSys = "LINUX";'
            f' Cpus = {k["cpus"]}; Memory = {k["memory"]}; Disk = {k["disk"]}; GPUs = {k["gpus"]};'
            f' State = "{state}"; Activity = "Idle"; PartitionableSlot = {str(k["part"]).lower()};{extra}'
            f' SlotWeight = {k["weight"]}; Start = {k["start"]}; Requirements = START; Rank = 0; KFlops = {rng.randrange(1000, 2000)}]')
        out.append(Slot(f"slot{i}", ad, f"c{i}", "127.0.0.1:1"))
    return out


def _job(rng: random.Random, user: int) -> ClassAd:
    cpus = rng.choice([1, 1, 1, 2, 4])
    mem = rng.choice([512, 1024, 2048, 4096])
    gpu = rng.random() < 0.05
    rank = rng.choice(["0", "0", "TARGET.Memory", "TARGET.Cpus", "TARGET.KFlops", "TARGET.Memory - 10 * TARGET.Cpus"])
    arch = "aarch64" if rng.random() < 0.1 else "X86_64"
    req = (f'(TARGET.Arch == "{arch}") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
           " && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)")
    if gpu:
        req += " && (TARGET.GPUs >= RequestGPUs)"
    if rng.random() < 0.05:
        req += " && TARGET.Memory > 100000"
    return ClassAd(f'[Owner = "user{user}"; JobUniverse = 5; RequestCpus = {cpus}; RequestMemory = {mem};'
                   f" RequestDisk = {rng.choice([1000, 100000, 1000000])}; RequestGPUs = {1 if gpu else 0};"
                   f" ImageSize = {rng.choice([1000, 5000000])}; Rank = {rank}; Requirements = {req}]")


def case(n_slots: int, n_acs: int, seed: int, claimed: bool, grouped: bool):
    rng = random.Random(seed)
    slots = _slots(rng, n_slots, claimed)
    users = max(1, min(100, n_acs // rng.choice([3, 10])))
    requests: dict[str, list[Request]] = {}
    for a in range(n_acs):
        u = a % users
        name = f"user{u}@example.org"
        requests.setdefault(name, []).append(Request(name, a, rng.choice([1, 10, 100, 300]), _job(rng, u)))
    groups = []
    if grouped:
        groups = [GroupConfig("g1", quota=n_slots / 5), GroupConfig("g2", dynamic=0.3, accept_surplus=True),
                  GroupConfig("g3", dynamic=0.2)]
    subs = []
    for i, n in enumerate(sorted(requests)):
        subs.append(Submitter(n, eff_prio=rng.choice([0.5, 1, 2, 5, 10, 50, 100, 500]) * (1 + i % 7),
                              running_weight=(i % 5) * 10.0,
                              group=rng.choice([None, "g1", "g2", "g3"]) if groups else None,
                              floor=rng.choice([None, None, None, 20.0]) if groups else None,
                              ceiling=rng.choice([None, None, None, 200.0]), usage=rng.random()))
    return slots, requests, subs, groups


def digest(plan) -> str:
    h = hashlib.sha256()
    for m in plan.matches:
        h.update(repr((m.request.submitter, m.request.autocluster, m.slot.name, m.rank,
                       sorted(m.resources.items()), m.weight, m.preempts)).encode())
    h.update(repr(sorted(plan.unmatched.items())).encode())
    h.update(repr(sorted(plan.by_submitter.items())).encode())
    h.update(repr(sorted(plan.weight_by_submitter.items())).encode())
    h.update(repr((sorted(plan.group_quota.items()), sorted(plan.group_held.items()))).encode())
    return h.hexdigest()[:16]


CONFIGS = [(n, a, seed, claimed, grouped)
           for n, a in ((300, 30), (1000, 100), (2500, 300), (6000, 1000))
           for seed in (1, 2, 3)
           for claimed, grouped in ((False, False), (True, False), (False, True), (True, True))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the two smaller sizes only")
    args = ap.parse_args()
    for n, a, seed, claimed, grouped in CONFIGS:
        if args.quick and n > 1000:
            continue
        slots, requests, subs, groups = case(n, a, seed, claimed, grouped)
        policy = PreemptionPolicy.from_config("RemoteUserPrio > SubmitterUserPrio * 1.2") if claimed else None
        fair = negotiate_fair(slots, requests, subs, 0.0, groups=groups, preemption=policy)
        print(f"fair  slots={n} acs={a} seed={seed} claimed={claimed} groups={grouped}: {digest(fair)}"
              f" matches={len(fair.matches)} (evaluations {fair.evaluations})", flush=True)
        if not grouped:
            plain = negotiate(slots, requests, sorted(requests), 0.0, preemption=policy)
            print(f"plain slots={n} acs={a} seed={seed} claimed={claimed}: {digest(plain)}"
                  f" matches={len(plain.matches)} (evaluations {plain.evaluations})", flush=True)


if __name__ == "__main__":
    main()
