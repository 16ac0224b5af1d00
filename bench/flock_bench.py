"""A simulated week of two pools that flock to each other (issue 29), on the pure core.

Pool A is busy by day, pool B by night (each 100 slots; one-hour jobs; with
``--b-calm`` B's quiet hours are busier or quieter than A's, so the exchange is uneven). Every five
simulated minutes each pool runs its own idle jobs on its own free slots first (taking
back slots other pools' jobs hold, at most ``--reclaim`` per step as lent jobs retire:
the lent job goes home idle, as a vacated job does), then the schedd's ``outbound_plan`` says which waiting jobs may leave and the
other pool's ``admission`` how many it takes. Printed: jobs done and the mean wait with
and without flocking (and flocking that ignores our slots lent out: "no-home-1st"), the ledger's reciprocity at the week's end, and how many
five-minute steps had jobs of each pool on the other's slots at once (the seed's
"two pools flocking to each other at the same time": the goal is none).

    python bench/flock_bench.py [--days 7] [--balance 400]
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field

from roost.core.flock import (
    FlockLedger,
    FlockLevel,
    Waiting,
    admission,
    outbound_plan,
    parse_agreement,
)

STEP = 300.0
JOB_STEPS = 12  # one hour


@dataclass
class Pool:
    name: str
    slots: int
    busy_hours: frozenset[int]
    busy_rate: int  # jobs arriving per step while busy
    calm_rate: int
    idle: list[float] = field(default_factory=list)  # arrival times of waiting jobs
    home: list[int] = field(default_factory=list)  # steps left of our jobs on our slots
    lent: list[tuple[int, float]] = field(default_factory=list)  # other pool's jobs here: (steps left, arrival)
    away: int = 0  # our jobs running on the other pool's slots (counted there)
    done: int = 0
    waits: list[float] = field(default_factory=list)
    level: FlockLevel = field(default_factory=FlockLevel)
    ledger: FlockLedger = field(default_factory=FlockLedger)


def week(days: float, flocking: bool, balance: float | None, b_calm: int = 3,
         home_first: bool = True, reclaim_per_step: int = 5) -> dict[str, float]:
    a = Pool("a", 100, frozenset(range(8, 20)), 12, 3)
    b = Pool("b", 100, frozenset([*range(20, 24), *range(0, 8)]), 12, b_calm)
    extra = "" if balance is None else f"; balance = {balance:g}"
    agree = {
        "a": [parse_agreement("b", f"collector = cm.b; direction = both; domain = b; share = 50%{extra}")],
        "b": [parse_agreement("a", f"collector = cm.a; direction = both; domain = a; share = 50%{extra}")],
    }
    other = {"a": b, "b": a}
    two_way = 0
    for step in range(int(days * 86400 / STEP)):
        now = step * STEP
        hour = int(now // 3600) % 24
        for p in (a, b):
            rate = p.busy_rate if hour in p.busy_hours else p.calm_rate
            p.idle += [now] * rate
        for p in (a, b):  # jobs end
            p.home = [s - 1 for s in p.home if s > 1]
            p.done += 0  # counted at start below (runs always finish in this model)
            ended = [x for x in p.lent if x[0] <= 1]
            other[p.name].away -= len(ended)
            p.lent = [(s - 1, t) for s, t in p.lent if s > 1]
        for p in (a, b):  # home first: own jobs on free slots, then on slots lent out
            free = p.slots - len(p.home) - len(p.lent)
            reclaim = reclaim_per_step  # a lent job retires before its slot comes back
            while p.idle and (free > 0 or (p.lent and reclaim > 0)):
                if free <= 0:  # take a lent slot back: that job goes home idle
                    reclaim -= 1
                    _, arrived = p.lent.pop()
                    back = other[p.name]
                    back.away -= 1
                    back.idle.insert(0, arrived)
                    free += 1
                arrived = p.idle.pop(0)
                p.waits.append(now - arrived)
                p.home.append(JOB_STEPS)
                p.done += 1
                free -= 1
        if flocking:
            for p in (a, b):
                q = other[p.name]
                if not p.idle:
                    outbound_plan([], agree[p.name], p.level, now=now, after=600)
                    continue
                waiting = [Waiting("all", f"u@{p.name}", len(p.idle), now - p.idle[0])]
                plan = outbound_plan(waiting, agree[p.name], p.level, now=now, after=600,
                                     foreign_here=len(p.lent) if home_first else 0)
                if q.name not in plan.targets:
                    continue
                spare = q.slots - len(q.home) - len(q.lent)
                got = admission(user=f"u@{p.name}", domain=p.name, agreements=agree[q.name], hour=hour,
                                total_slots=q.slots, idle_slots=spare, used_by_pool={p.name: len(q.lent)},
                                ledger=q.ledger)
                n = min(spare, len(p.idle), got.limit if got.limit is not None else spare) if got.allowed else 0
                for _ in range(max(0, n)):
                    arrived = p.idle.pop(0)
                    p.waits.append(now - arrived)
                    q.lent.append((JOB_STEPS, arrived))
                    p.away += 1
                    p.done += 1
        if a.lent and b.lent:
            two_way += 1
        for p in (a, b):
            q = other[p.name]
            p.ledger.advance(now, giving={q.name: len(p.lent)}, receiving={q.name: p.away})
    waits = a.waits + b.waits
    return {
        "done": a.done + b.done,
        "mean_wait_min": statistics.fmean(waits) / 60 if waits else 0.0,
        "p95_wait_min": sorted(waits)[int(0.95 * len(waits))] / 60 if waits else 0.0,
        "reciprocity_a": a.ledger.reciprocity("b"),
        "reciprocity_b": b.ledger.reciprocity("a"),
        "ahead_b_at_a": a.ledger.ahead("b"),
        "two_way_steps": two_way,
        "left_idle": len(a.idle) + len(b.idle),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--b-calm", type=int, default=3, help="jobs per step B gets in its quiet hours (A: 3)")
    ap.add_argument("--reclaim", type=int, default=5,
                    help="lent slots a pool takes back per 5 minutes (the rest retire first)")
    ap.add_argument("--balance", type=float, default=400.0, help="slot-hours a pool may be ahead (0: no limit)")
    args = ap.parse_args()
    alone = week(args.days, False, None, args.b_calm)
    flock = week(args.days, True, args.balance or None, args.b_calm, reclaim_per_step=args.reclaim)
    blind = week(args.days, True, args.balance or None, args.b_calm, home_first=False, reclaim_per_step=args.reclaim)
    print(f"two pools x 100 slots, {args.days:g} simulated days, A busy by day, B by night "
          f"(quiet hours: A 3, B {args.b_calm} jobs per 5 min), balance {args.balance:g} slot-hours")
    for name, r in (("alone", alone), ("flocking", flock), ("no-home-1st", blind)):
        print(f"  {name:11s} done {r['done']:6.0f}  mean wait {r['mean_wait_min']:7.1f} min  "
              f"p95 {r['p95_wait_min']:7.1f} min  left idle {r['left_idle']:5.0f}  "
              f"reciprocity a:{r['reciprocity_a']:.2f} b:{r['reciprocity_b']:.2f}  "
              f"B ahead at A {r['ahead_b_at_a']:7.0f} slot-h  steps with two-way flocking {r['two_way_steps']}")
    ratio = flock["mean_wait_min"] / alone["mean_wait_min"] if alone["mean_wait_min"] else float("nan")
    print(f"mean wait flocking/alone: {ratio:.2f}; done flocking/alone: {flock['done'] / alone['done']:.3f}")


if __name__ == "__main__":
    main()
