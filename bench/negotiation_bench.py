"""A negotiation cycle in the pure core: 1,000 slots × 100 autoclusters.

Slots look like a startd's (Requirements = START, a Rank, Cpus/Memory/Disk);
each autocluster is a submit-file job ad (Requirements on Memory, Cpus, Disk,
Arch and OpSys; some with a Rank) wanting 20 jobs, so demand (2,000 jobs)
exceeds supply and every autocluster is tried against the whole pool.
Two cases: 1,000 static slots, and 125 partitionable slots of 8 cpus
(1,000 cpus). Prints ``figure: value unit`` lines, medians of several runs.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.classad import ClassAd  # noqa: E402
from roost.core.matchmaker import Request, Slot, negotiate  # noqa: E402

RUNS = 5


def slot_ad(i: int, partitionable: bool) -> ClassAd:
    return ClassAd(
        f'[Name = "slot{i}@host{i // 8}"; MyType = "Machine"; Arch = "X86_64"; OpSys = "LINUX";'
        f' Cpus = {8 if partitionable else 1}; Memory = {16384 if partitionable else 2048 + (i % 4) * 1024};'
        f' Disk = 10000000; State = "Unclaimed"; Activity = "Idle"; PartitionableSlot = {str(partitionable).lower()};'
        f' KFlops = {1000 + i}; Start = TARGET.ImageSize < 4000000 && TARGET.Owner =!= "mallory";'
        f' Requirements = START; Rank = 0]'
    )


def job_ad(ac: int) -> ClassAd:
    rank = "TARGET.KFlops" if ac % 3 == 0 else "0"
    return ClassAd(
        f'[Owner = "user{ac % 10}"; JobUniverse = 5; RequestCpus = 1; RequestMemory = {512 + ac % 5 * 256};'
        f' RequestDisk = 1000; ImageSize = 1000; Rank = {rank};'
        f' Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&'
        f' (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)'
        f' && (TARGET.HasFileTransfer =?= undefined || TARGET.HasFileTransfer)]'
    )


def run(partitionable: bool) -> tuple[float, int, int]:
    n_slots = 125 if partitionable else 1000
    slots = [Slot(f"slot{i}", slot_ad(i, partitionable), f"c{i}", "127.0.0.1:1") for i in range(n_slots)]
    requests: dict[str, list[Request]] = {}
    for ac in range(100):
        user = f"user{ac % 10}"
        requests.setdefault(user, []).append(Request(user, ac, 20, job_ad(ac)))
    order = sorted(requests)
    times = []
    plan = None
    for _ in range(RUNS):
        t0 = time.perf_counter()
        plan = negotiate(slots, requests, order, now=0.0)
        times.append(time.perf_counter() - t0)
    assert plan is not None
    return statistics.median(times), len(plan.matches), plan.evaluations


def main() -> None:
    t, matches, evals = run(False)
    print(f"negotiation cycle, 1000 static slots x 100 autoclusters: {t * 1e3:.1f} ms "
          f"({matches} matches, {evals} match evaluations, {t / evals * 1e6:.2f} us each)")
    t, matches, evals = run(True)
    print(f"negotiation cycle, 125 partitionable slots (1000 cpus) x 100 autoclusters: {t * 1e3:.1f} ms "
          f"({matches} matches, {evals} match evaluations)")


if __name__ == "__main__":
    main()
