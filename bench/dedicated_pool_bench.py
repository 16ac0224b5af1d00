"""The dedicated scheduler's claim and release heuristics on a real pool (issue 16).

A personal pool of 8 dedicated static slots (``use POLICY : Dedicated``) gets the same
seeded mixed workload under each configuration: parallel jobs of 2-8 nodes arriving
as a Poisson stream (``sleep`` of 3-8 s, ``+EstimatedRuntime`` given), and a stream of
serial 3-s jobs that always has work waiting. The collector's slot ads are sampled
every 0.25 s: "busy" is the mean share of slots Busy (split into dedicated and
opportunistic work); "goodput" counts only work that was kept (the parallel jobs' node
time, 3 s per completed serial job: a serial run evicted by a parallel job's claim is
work lost); the parallel jobs' mean wait comes from their QDate and JobStartDate. Configurations:

- ``simple``: claims released as soon as no job wants them (UNUSED_CLAIM_TIMEOUT = 0),
  claims held for a waiting job stay idle (no lending), plain FIFO;
- ``keep``: claims kept 30 s for the next parallel job; ``lend``: that, and idle claims
  lent to opportunistic jobs while a job waits; ``easy``: simple with EASY backfill by
  the jobs' estimates; ``improved``: EASY, lending, claims kept 5 s.

Prints each configuration's figures and its ratios to ``simple``. Usage:
``python bench/dedicated_pool_bench.py [--seconds 60] [--runs 1]``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pool_bench import BenchPool  # noqa: E402

SLOTS = 8
BASE = f"""
NUM_CPUS = {SLOTS}
MEMORY = {SLOTS * 512}
SLOT_TYPE_1 = cpus=1, memory=512
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = {SLOTS}
use POLICY : Dedicated
DEDICATED_SCHEDULER_INTERVAL = 0.5
CLAIM_WORKLIFE = 0
"""
SIMPLE = "UNUSED_CLAIM_TIMEOUT = 0\nDEDICATED_SCHEDULER_LEND_IDLE_CLAIMS = False\n"
CONFIGS = {
    "simple": SIMPLE,
    "keep": "UNUSED_CLAIM_TIMEOUT = 30\nDEDICATED_SCHEDULER_LEND_IDLE_CLAIMS = False\n",
    "lend": "UNUSED_CLAIM_TIMEOUT = 30\nDEDICATED_SCHEDULER_LEND_IDLE_CLAIMS = True\n",
    "easy": SIMPLE + "DEDICATED_SCHEDULER_BACKFILL = easy\n",
    "improved": "UNUSED_CLAIM_TIMEOUT = 5\nDEDICATED_SCHEDULER_LEND_IDLE_CLAIMS = True\n"
                "DEDICATED_SCHEDULER_BACKFILL = easy\n",
}


def workload(seconds: float, seed: int) -> list[tuple[float, int, int]]:
    """(arrival offset, nodes, run seconds) of the parallel jobs."""
    rng = random.Random(seed)
    out, t = [], 0.0
    while True:
        t += rng.expovariate(1 / 6.0)
        if t > seconds:
            return out
        out.append((t, rng.choice((2, 4, 6, 8)), rng.randint(3, 8)))


def run(name: str, seconds: float, seed: int) -> dict[str, float]:
    from roost.api.collector import Collector
    from roost.api.schedd import Schedd

    jobs = workload(seconds, seed)
    with BenchPool(BASE + CONFIGS[name]) as bp, tempfile.TemporaryDirectory(prefix="roost-dedb-") as d:
        Path(d).chmod(0o777)
        schedd = Schedd(bp.home)
        samples: list[tuple[int, int]] = []
        stop = threading.Event()

        def sample() -> None:
            c = Collector(bp.home)
            while not stop.is_set():
                try:
                    ads = c.query_objs("Machine", projection=["Activity", "RemoteUser"])
                except Exception:
                    ads = []
                busy = [a for a in ads if a.get("Activity") == "Busy"]
                ded = sum(1 for a in busy if str(a.get("RemoteUser", "")).startswith("DedicatedScheduler@"))
                samples.append((ded, len(busy) - ded))
                stop.wait(0.25)
            c.close()

        serial = schedd.submit(f"executable = /bin/sleep\narguments = 3\ninitialdir = {d}\nlog = serial.log\n"
                                    f"queue {int(seconds * SLOTS / 3)}\n")
        t0 = time.time()
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        ids = []
        for offset, nodes, secs in jobs:
            delay = t0 + offset - time.time()
            if delay > 0:
                time.sleep(delay)
            r = schedd.submit(f"universe = parallel\nexecutable = /bin/sleep\narguments = {secs}\n"
                                   f"machine_count = {nodes}\n+EstimatedRuntime = {secs + 2}\n"
                                   f"initialdir = {d}\nqueue\n")
            ids.append(f"{r.clusters[0][0]}.0")
        schedd.wait(ids, timeout=seconds * 10)
        makespan = time.time() - t0
        stop.set()
        sampler.join()
        scid = serial.clusters[0][0]
        serial_done = sum(1 for _ in schedd.history(constraint=f"ClusterId == {scid} && JobStatus == 4",
                                                   projection=["ProcId"]))
        evicted = (Path(d) / "serial.log").read_text().count("\n004 (")  # serial runs cut short
        schedd.act("remove", [f"{scid}"])
        waits, node_secs = [], 0.0
        for j in schedd.history(ids=ids):
            waits.append(float(j["JobStartDate"]) - float(j["QDate"]))
            node_secs += float(j["RemoteWallClockTime"]) * int(j["MaxHosts"])
        schedd.close()
        if os.environ.get("DEDICATED_BENCH_LOG"):
            shutil.copy(bp.home / "log" / "SchedLog", f"{os.environ['DEDICATED_BENCH_LOG']}.{name}")
    ded = statistics.fmean(s[0] for s in samples) / SLOTS
    opp = statistics.fmean(s[1] for s in samples) / SLOTS
    # goodput: work that was kept (parallel jobs' node time, completed serial jobs' 3 s)
    good = (node_secs + 3.0 * serial_done) / (SLOTS * makespan)
    return {"utilisation": ded + opp, "dedicated": ded, "opportunistic": opp, "goodput": good,
            "evictions": float(evicted), "parallel_wait": statistics.fmean(waits), "makespan": makespan,
            "jobs": float(len(ids))}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=60.0, help="how long parallel jobs arrive")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--only", nargs="*", choices=sorted(CONFIGS), help="these configurations only")
    ns = p.parse_args()
    names = ns.only or list(CONFIGS)
    if "simple" not in names:
        names.insert(0, "simple")
    got: dict[str, list[dict[str, float]]] = {k: [] for k in names}
    for r in range(ns.runs):
        for name in names:  # alternate, so drift of the machine hits each alike
            got[name].append(run(name, ns.seconds, ns.seed + r))
    med = {k: {m: statistics.median(x[m] for x in v) for m in v[0]} for k, v in got.items()}
    for k, m in med.items():
        print(f"{k:9s} busy {m['utilisation']:.1%} (dedicated {m['dedicated']:.1%}, opportunistic "
              f"{m['opportunistic']:.1%}), goodput {m['goodput']:.1%}, {m['evictions']:.0f} serial runs evicted; "
              f"parallel jobs' mean wait {m['parallel_wait']:.1f} s over {m['jobs']:.0f} jobs; "
              f"makespan {m['makespan']:.1f} s")
    s = med["simple"]
    for k, i in med.items():
        if k != "simple":
            print(f"ratio {k}/simple: goodput {i['goodput'] / s['goodput']:.2f}, "
                  f"busy {i['utilisation'] / s['utilisation']:.2f}, "
                  f"parallel wait {i['parallel_wait'] / max(s['parallel_wait'], 1e-9):.2f}, "
                  f"makespan {i['makespan'] / s['makespan']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
