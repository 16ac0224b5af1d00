"""The dedicated scheduler's figures (issue 16), from the pure core (roost.core.dedicated).

Runnable on its own::

    .venv/bin/python bench/dedicated_bench.py [--runs N] [--days D] [--seed S]

- ``dedicated_cycle_1000x1000``: one planning cycle, 1,000 queued parallel jobs (1-16
  nodes, ten users, half with estimates) on 1,000 dedicated slots (half running, over
  125 hosts), per-user order and EASY backfill; median of the runs against the issue's
  target (<= 1 s).
- utilisation of a mixed workload on a simulated 64-node pool: Poisson arrivals (every
  300 s on average: about 87% of the nodes asked for) of
  2-16-node parallel jobs (exponential run times, users' estimates 1-2x the truth) plus
  an endless stream of 1-node opportunistic jobs that run on whatever the dedicated
  scheduler offers for backfill and lose their work when vacated. For each policy
  (FIFO, per-user, FIFO + EASY, per-user + EASY): the share of node-time running
  parallel jobs, the share running opportunistic work that completed, the share lost
  to vacated opportunistic work, and the parallel jobs' mean wait; ratios against FIFO.
  Claims are instantaneous here (the real pool's claim latency is measured with the
  daemons, not in this model).
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.core.dedicated import ParallelJob, Resource, plan  # noqa: E402

TARGET_CYCLE_S = 1.0
POLICIES = [("fifo", "none"), ("user", "none"), ("fifo", "easy"), ("user", "easy")]


def cycle_case(rng: random.Random) -> tuple[list[ParallelJob], list[Resource]]:
    now = 0.0
    res = []
    for i in range(1000):
        host = f"h{i // 8}"
        if i % 2:
            res.append(Resource(f"s{i}", host=host, claimed=True, running=f"r{i}", busy_until=now + rng.uniform(60, 7200)))
        else:
            res.append(Resource(f"s{i}", host=host, claimed=rng.random() < 0.7, idle_since=now - rng.uniform(0, 900)))
    jobs = [ParallelJob(f"{i}", f"u{i % 10}", rng.randint(1, 16), submitted=float(i),
                        estimate=rng.uniform(60, 3600) if i % 2 else None) for i in range(1000)]
    return jobs, res


def measure_cycle(runs: int, seed: int) -> float:
    rng = random.Random(seed)
    jobs, res = cycle_case(rng)
    prios = {f"u{i}": 0.5 + i for i in range(10)}
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        plan(jobs, res, 0.0, order="user", priorities=prios, backfill="easy")
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def simulate(order: str, backfill: str, days: float, seed: int, nodes: int = 64,
             interarrival: float = 300.0) -> dict[str, float]:
    """One run of the mixed workload; the same arrivals for every policy (same seed)."""
    rng = random.Random(seed)
    horizon = days * 86400.0
    users = ["ann", "bob", "cat", "dan"]
    prios = {"ann": 0.5, "bob": 2.0, "cat": 8.0, "dan": 32.0}
    arrivals = []
    t = 0.0
    while True:
        t += rng.expovariate(1 / interarrival)
        if t >= horizon:
            break
        run = rng.expovariate(1 / 1800.0) + 60
        arrivals.append((t, rng.choice(users), rng.randint(2, 16), run, run * rng.uniform(1.0, 2.0)))
    SERIAL = 300.0  # each opportunistic job's run time
    busy_until: dict[str, float] = {}  # node -> end of its parallel job
    running_job: dict[str, str] = {}
    serial_start: dict[str, float] = {}  # node -> when its opportunistic job started
    queue: dict[str, ParallelJob] = {}
    truth: dict[str, float] = {}
    submitted: dict[str, float] = {}
    events: list[tuple[float, int, str, object]] = []
    seq = 0
    for i, (at, user, n, run, est) in enumerate(arrivals):
        heapq.heappush(events, (at, seq, "arrive", (f"p{i}", user, n, run, est)))
        seq += 1
    par_time = serial_done = serial_lost = 0.0
    waits: list[float] = []
    names = [f"n{i}" for i in range(nodes)]
    backfill_ok: dict[str, float] = {}

    def stop_serial(node: str, now: float, completed: bool) -> None:
        nonlocal serial_done, serial_lost
        began = serial_start.pop(node, None)
        if began is not None:
            if completed:
                serial_done += now - began
            else:
                serial_lost += now - began

    def fill_serial(now: float) -> None:
        nonlocal seq
        for node, until in backfill_ok.items():
            if node not in serial_start and node not in busy_until and until > now:
                serial_start[node] = now
                heapq.heappush(events, (now + SERIAL, seq, "serial", (node, now)))
                seq += 1

    now = 0.0
    while events:
        now, _s, kind, what = heapq.heappop(events)
        if now > horizon:
            now = horizon
            break
        if kind == "serial":
            node, began = what  # type: ignore[misc]
            if serial_start.get(node) == began:
                stop_serial(node, now, True)
                fill_serial(now)
            continue
        if kind == "arrive":
            jid, user, n, run, est = what  # type: ignore[misc]
            queue[jid] = ParallelJob(jid, user, n, submitted=now, estimate=est)
            truth[jid], submitted[jid] = run, now
        else:  # a parallel job ended
            jid = what
            for node in [x for x, j in running_job.items() if j == jid]:
                del running_job[node], busy_until[node]
        res = [Resource(x, claimed=True, running=running_job.get(x), busy_until=busy_until.get(x, 0.0),
                        backfill=x in serial_start, idle_since=now) for x in names]
        p = plan(queue.values(), res, now, order=order, priorities=prios, backfill=backfill, margin=0.0,
                 unused_claim_timeout=float("inf"))
        for jid, nodes_of in p.start + p.gather:
            job = queue.pop(jid)
            end = now + truth[jid]
            waits.append(now - submitted[jid])
            par_time += (min(end, horizon) - now) * job.nodes
            for node in nodes_of:
                stop_serial(node, now, False)  # vacated for it
                running_job[node], busy_until[node] = jid, end
            heapq.heappush(events, (end, seq, "end", jid))
            seq += 1
        backfill_ok = p.backfill
        for node in list(serial_start):
            if node not in backfill_ok:
                stop_serial(node, now, False)  # the scheduler wants it back
        fill_serial(now)
    for node in list(serial_start):
        stop_serial(node, horizon, True)  # still running at the end: count what it did
    total = horizon * nodes
    return {"parallel": par_time / total, "serial": serial_done / total, "lost": serial_lost / total,
            "wait": statistics.mean(waits) if waits else 0.0, "jobs": float(len(waits)),
            "queued": float(len(queue))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--days", type=float, default=7.0)
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    cycle = measure_cycle(args.runs, args.seed)
    print(f"dedicated_cycle_1000x1000: {cycle:.3f} s (target <= {TARGET_CYCLE_S:g}: "
          f"{'met' if cycle <= TARGET_CYCLE_S else 'NOT met'}; ratio {TARGET_CYCLE_S / cycle:.1f}) "
          f"[median of {args.runs}]")
    print(f"mixed workload, 64 nodes, {args.days:g} simulated days, seed {args.seed}:")
    base = None
    for order, bf in POLICIES:
        r = simulate(order, bf, args.days, args.seed)
        if base is None:
            base = r
        print(f"  {order:>4} + {bf:<4}: parallel {r['parallel']:.1%}  opportunistic done {r['serial']:.1%}  "
              f"lost {r['lost']:.1%}  busy {r['parallel'] + r['serial']:.1%}  mean wait {r['wait']:.0f} s "
              f"({int(r['jobs'])} started, {int(r['queued'])} still queued)  "
              f"parallel ratio {r['parallel'] / base['parallel']:.2f}, wait ratio "
              f"{(base['wait'] / r['wait']) if r['wait'] else float('inf'):.2f}")


if __name__ == "__main__":
    main()
