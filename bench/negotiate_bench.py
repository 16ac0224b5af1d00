"""One negotiation over a big pool: 10,000 slots × 100,000 idle jobs (1,000 autoclusters).

Slots: 40 machine kinds (Arch, OpSys, Memory, Cpus, Disk, GPUs), a quarter
of them partitionable (16-64 cpus), the rest static one-cpu slots; some
kinds have a START that reads the job (Owner, ImageSize, RequestGPUs); each
slot has its own Name and Machine and its own parsed expressions, as the
collector would hand them over. Jobs: 100 users × 10 autoclusters × 100
jobs; Requirements on Arch/OpSys/Memory/Cpus/Disk (some on GPUs), some with
a Rank. Demand exceeds supply, so late requests are tried against a full
pool. The time is ``negotiate(...)`` including building the slot view.

Reference: the 2 s target. HTCondor's manual says negotiation cycles take
"on the order of ten minutes" at 100,000-core scale; the old all-pairs
matchmaker here needed 10 M symmetric matches at this size.
Prints ``figure: value unit (reference: value, ratio: x.xx)`` lines.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.classad import ClassAd  # noqa: E402
from roost.core.matchmaker import Request, Slot, negotiate  # noqa: E402

TARGET_S = 2.0
RUNS = 3

STARTS = [
    "true",
    'TARGET.Owner =!= "mallory"',
    "TARGET.ImageSize < 4000000",
    "(TARGET.RequestGPUs =!= undefined && TARGET.RequestGPUs > 0) || GPUs == 0",
]


def kinds(n: int = 40) -> list[dict]:
    rng = random.Random(7)
    out = []
    for k in range(n):
        part = k % 4 == 0
        out.append({
            "arch": "X86_64" if k % 5 else "aarch64",
            "opsys": "LINUX",
            "cpus": rng.choice([16, 32, 64]) if part else 1,
            "memory": (rng.choice([64, 128, 256]) * 1024) if part else rng.choice([2048, 4096, 8192]),
            "disk": rng.choice([100, 200, 500]) * 1000000,
            "gpus": rng.choice([0, 0, 0, 2, 4]) if part else 0,
            "part": part,
            "start": STARTS[k % len(STARTS)] if k % 3 else "true",
        })
    return out


def slot_ad(i: int, kind: dict) -> ClassAd:
    return ClassAd(
        f'[Name = "slot{i}@host{i}.example.org"; Machine = "host{i}.example.org"; MyType = "Machine";'
        f' Arch = "{kind["arch"]}"; OpSys = "{kind["opsys"]}"; Cpus = {kind["cpus"]};'
        f' Memory = {kind["memory"]}; Disk = {kind["disk"]}; GPUs = {kind["gpus"]};'
        f' State = "Unclaimed"; Activity = "Idle"; PartitionableSlot = {str(kind["part"]).lower()};'
        f' SlotWeight = Cpus; Start = {kind["start"]}; Requirements = START; Rank = 0]'
    )


def job_ad(user: int, ac: int) -> ClassAd:
    rng = random.Random(user * 1000 + ac)
    cpus = rng.choice([1, 1, 1, 2, 4])
    mem = rng.choice([512, 1024, 2048, 4096])
    gpu = rng.random() < 0.05
    rank = rng.choice(["0", "0", "TARGET.Memory", "TARGET.Cpus"])
    arch = "aarch64" if rng.random() < 0.1 else "X86_64"
    req = (
        f'(TARGET.Arch == "{arch}") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
        " && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus)"
    )
    if gpu:
        req += " && (TARGET.GPUs >= RequestGPUs)"
    return ClassAd(
        f'[Owner = "user{user}"; JobUniverse = 5; RequestCpus = {cpus}; RequestMemory = {mem};'
        f" RequestDisk = {rng.choice([1000, 100000, 1000000])}; RequestGPUs = {1 if gpu else 0};"
        f" ImageSize = {rng.choice([1000, 5000000])}; Rank = {rank}; Requirements = {req}]"
    )


def build(n_slots: int, n_acs: int, per_ac: int = 100, n_users: int = 100):
    ks = kinds()
    rng = random.Random(1)
    slots = [
        Slot(f"slot{i}", slot_ad(i, ks[rng.randrange(len(ks))]), f"c{i}", "127.0.0.1:1")
        for i in range(n_slots)
    ]
    requests: dict[str, list[Request]] = {}
    users = min(n_users, n_acs)
    for a in range(n_acs):
        u = a % users
        name = f"user{u}@example.org"
        requests.setdefault(name, []).append(Request(name, a, per_ac, job_ad(u, a)))
    return slots, requests, sorted(requests)


def once(n_slots: int, n_acs: int) -> tuple[float, int, int]:
    slots, requests, order = build(n_slots, n_acs)
    t = time.perf_counter()
    plan = negotiate(slots, requests, order, now=0.0)
    dt = time.perf_counter() - t
    return dt, len(plan.matches), plan.evaluations


def line(figure: str, value: float, unit: str, ref: float) -> None:
    print(f"{figure}: {value:.3f} {unit} (reference: {ref:.3f} {unit}, ratio: {value / ref:.2f})")


def main() -> None:
    runs = [once(10000, 1000) for _ in range(RUNS)]
    dt = statistics.median(r[0] for r in runs)
    _, nm, ev = runs[0]
    line("negotiate 10000 slots x 100000 jobs (1000 autoclusters)", dt, "s", TARGET_S)
    print(f"matches: {nm} jobs")
    print(f"class evaluations: {ev} (all pairs would be {10000 * 1000})")
    for n_slots in (1000, 2500, 5000, 10000):
        for n_acs in (100, 300, 1000):
            dts = [once(n_slots, n_acs)[0] for _ in range(RUNS)]
            line(f"scaling {n_slots} slots x {n_acs} autoclusters", statistics.median(dts), "s",
                 TARGET_S)


if __name__ == "__main__":
    main()
