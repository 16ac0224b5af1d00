"""What one flocking decision of the schedd costs (issue 29): ``waiting_entries`` over a
real job queue (SQLite store, as the schedd loads it) plus ``outbound_plan``, for N idle
jobs in C clusters, and what an unflocked schedd pays for the same queue's
GET_REQUESTS (the reference: the work the negotiator's question costs anyway).

Second figure: the never-home verdicts (``core.flock.never_home``, one job per
autocluster) over S home slot ads, for the C autoclusters, one of which no slot can
run (a full scan) while the others fit at home (the first slot answers); the
reference is ``q -analyze``'s count of one job against the same slots.

    python bench/flock_round_bench.py [--jobs 100000] [--clusters 10] [--slots 1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from roost.classad import ClassAd
from roost.config import Config
from roost.core.condor_analysis import count
from roost.core.flock import FlockLevel, never_home, outbound_plan, parse_agreements
from roost.daemons.schedd.autocluster_ids import AutoClusters
from roost.daemons.schedd.flocking import waiting_entries
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import Store

AD = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Requirements": "/Expr(true)/",
      "RequestMemory": 100, "QDate": 1000}
CONF = "FLOCK_AGREEMENTS = b\nFLOCK_AGREEMENT_b = collector = cm.b; direction = send; domain = b.example\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--clusters", type=int, default=10)
    ap.add_argument("--slots", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        q = JobQueue(Store(str(Path(d) / "q.db"), fsync=False))
        q.load()
        per = args.jobs // args.clusters
        for c in range(args.clusters):
            cid = q.new_cluster_id()
            owner = f"u{c % 3}"
            asyncio.run(q.store.commit(q.add_cluster(cid, owner, {**AD, "Owner": owner, "RequestMemory": 100 + c},
                                                     [{"ProcId": i} for i in range(per)], (f"h#{cid}.", "#1"))))
        name = lambda cl: f"{cl.owner}@a.example"  # noqa: E731
        ac = AutoClusters(q, name, lambda: None)
        agreements = parse_agreements(Config.from_text(CONF).get)
        rounds, requests = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            waiting, _ = waiting_entries(q, ac, name, now=2000.0, by_default=True)
            outbound_plan(waiting, agreements, FlockLevel(), now=2000.0, after=60.0)
            rounds.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            for owner in ("u0", "u1", "u2"):
                ac.requests(owner, None)
            requests.append(time.perf_counter() - t0)
        r, g = statistics.median(rounds), statistics.median(requests)
        print(f"flock round ({args.jobs} idle jobs, {args.clusters} clusters): {r * 1000:.2f} ms "
              f"(reference: GET_REQUESTS of every owner {g * 1000:.2f} ms, ratio: {r / g:.2f})")
        q.store.close()
    verdicts(args.clusters, args.slots, args.runs)


def verdicts(clusters: int, n_slots: int, runs: int) -> None:
    slots = [ClassAd(f'[Name = "slot1@m{i}"; Machine = "m{i}"; PartitionableSlot = true; Cpus = {i % 3}; '
                     f"TotalSlotCpus = 8; Memory = 4000; TotalSlotMemory = 16000; Disk = 10000000; "
                     f'Arch = "X86_64"; OpSys = "LINUX"; Requirements = START; START = TARGET.User =!= "bad@a"]')
             for i in range(n_slots)]
    jobs = [ClassAd(f'[ClusterId = {c}; ProcId = 0; User = "u@a"; RequestCpus = {64 if c == 0 else 1}; '
                    f"RequestMemory = {100 + c}; Requirements = TARGET.Arch == \"X86_64\" && "
                    "TARGET.Cpus >= RequestCpus && TARGET.Memory >= RequestMemory]") for c in range(clusters)]
    took, ref = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = [never_home(j, slots) for j in jobs]
        took.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        count(jobs[1], slots)
        ref.append(time.perf_counter() - t0)
    assert out == [True] + [False] * (clusters - 1), out
    t, r = statistics.median(took), statistics.median(ref)
    print(f"never-home verdicts ({clusters} autoclusters, 1 never-home, {n_slots} slots): {t * 1000:.2f} ms "
          f"(reference: q -analyze's count of one job over the slots {r * 1000:.2f} ms, ratio: {t / r:.2f})")


if __name__ == "__main__":
    main()
