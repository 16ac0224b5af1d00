"""Master-worker (``roost.mw``) on a personal pool: a 2,000-task parameter search while
worker jobs are vacated at random, against the same search done serially in-process.

Runnable on its own::

    .venv/bin/python bench/mw_bench.py [--quick] [--runs N] [--tasks N] [--workers N] [--vacate-every S]

The search: for each (a, b) of a 50 x 40 grid, Simpson's rule (20,000 intervals) for
the integral over [0, 3] of exp(-b x^2) sin(a x)^2, pure Python (a few ms a task);
the answer is the (a, b) with the largest integral. The pool runs it with one worker
job per core (``--workers``) in a fresh personal pool (8 static slots, as
``pool_bench``); every ``--vacate-every`` seconds (1 by default) the bench evicts one
live worker at random, in turn by removing its job (the master submits another),
holding and releasing it (killed, back to Idle, runs again) and vacating the whole
machine (``roost vacate``: every worker at once).

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``,
medians of ``--runs`` runs (3 unless told; 1 with ``--quick``):
- ``mw_tasks_per_s``: tasks over the pool's wall time, from the master's start (it
  submits its workers then) to the last result; reference: the serial in-process rate
  on this machine, so the ratio is the speed-up (above 1: the pool is faster).
- ``mw_wall``: that wall time; reference: the serial time (ratio serial/pool).
  ``pool/serial`` wall-time ratio printed beside it, as the issue asks for it.
- informational: ``mw_vacates`` (workers evicted by the bench), ``mw_requeued``
  (tasks given to another worker because theirs left), ``mw_duplicates`` (copies
  that finished second, dropped), ``mw_workers_joined``, ``mw_jobs_replaced``,
  ``mw_rejoin`` (median ms from a worker leaving to the next joining: the
  eviction's cost in worker time).
Then whether every run's 2,000 results equal the serial ones bit for bit.
There is no HTCondor reference: its MW library is retired and Work Queue is not
installed here.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool  # noqa: E402
from roost.api.schedd import Schedd  # noqa: E402
from roost.mw import Master, TaskDone, WorkerJoined, WorkerLeft  # noqa: E402

#: the task module shipped to the workers (the standard library only)
SEARCH = '''
import math

def integrate(p):
    """Simpson's rule for the integral over [0, 3] of exp(-b x^2) sin(a x)^2."""
    a, b, n = p["a"], p["b"], p["n"]
    h = 3.0 / n
    s = math.exp(-b * 9.0) * math.sin(a * 3.0) ** 2  # the two ends (the first is 0)
    for i in range(1, n):
        x = i * h
        s += (4 if i % 2 else 2) * math.exp(-b * x * x) * math.sin(a * x) ** 2
    return s * h / 3
'''
INTERVALS = 20_000


def grid(count: int) -> list[dict[str, Any]]:
    """``count`` points of a 50 x 40 (a, b) grid (repeated if more are asked for)."""
    pts = [{"a": round(0.2 + 0.1 * i, 10), "b": round(0.05 + 0.05 * j, 10), "n": INTERVALS}
           for i in range(50) for j in range(40)]
    return [pts[k % len(pts)] for k in range(count)]


def serial(payloads: list[dict[str, Any]]) -> tuple[float, list[float]]:
    scope: dict[str, Any] = {}
    exec(SEARCH, scope)
    fn = scope["integrate"]
    t0 = time.perf_counter()
    out = [fn(p) for p in payloads]
    return time.perf_counter() - t0, out


class Vacater:
    """Evicts one live worker every ``every`` seconds, three ways in turn."""

    WAYS = ("remove", "hold", "machine")

    def __init__(self, bp: BenchPool, every: float, rng: random.Random) -> None:
        self.bp = bp
        self.every = every
        self.rng = rng
        self.live: dict[str, str] = {}
        self.next = time.perf_counter() + every
        self.evicted = 0
        self.actions = 0
        self.gaps: list[float] = []  # seconds from a worker leaving to the next one joining
        self._left: list[float] = []
        self.schedd = Schedd(bp.home)

    def see(self, ev: Any) -> None:
        now = time.perf_counter()
        if isinstance(ev, WorkerJoined):
            self.live[ev.worker] = ev.job
            if self._left:
                self.gaps.append(now - self._left.pop(0))
        elif isinstance(ev, WorkerLeft):
            self.live.pop(ev.worker, None)
            self._left.append(now)
        if now < self.next or not self.live:
            return
        self.next = now + self.every
        way = self.WAYS[self.actions % len(self.WAYS)]
        self.actions += 1
        job = self.live[self.rng.choice(sorted(self.live))]
        if way == "remove":
            self.schedd.act("remove", [job])
            self.evicted += 1
        elif way == "hold":
            self.schedd.act("hold", [job])
            self.schedd.act("release", [job])
            self.evicted += 1
        else:
            self.evicted += len(self.live)
            done = self.bp.roost("vacate")
            if done.returncode != 0:
                raise RuntimeError(f"roost vacate: {done.stderr.strip()}")

    def close(self) -> None:
        self.schedd.close()


def pool_run(bp: BenchPool, payloads: list[dict[str, Any]], workers: int, every: float,
             rng: random.Random) -> dict[str, Any]:
    schedd = Schedd(bp.home)
    vac = Vacater(bp, every, rng)
    try:
        t0 = time.perf_counter()
        with Master("integrate", source=SEARCH, schedd=schedd, workers=workers, heartbeat=1.0,
                    poll=0.5) as m:
            ids = m.add_many(payloads)
            done = 0
            for ev in m.events(timeout=900):
                done += isinstance(ev, TaskDone)
                if done < len(payloads):
                    vac.see(ev)
            wall = time.perf_counter() - t0
            stats = m.stats()
            got = m.results()
        return {"wall": wall, "results": [got[i] for i in ids], "vacates": vac.evicted,
                "actions": vac.actions, "rejoin_ms": 1000 * statistics.median(vac.gaps) if vac.gaps else 0.0,
                **stats}
    finally:
        vac.close()
        schedd.close()


def line(name: str, value: float, unit: str, ref: float | None, ratio: float | None, note: str = "") -> None:
    shown = f"{value:.3f}" if value < 10 else f"{value:.1f}"
    refs = f"reference: {ref:.3g}" if ref is not None else "reference: none"
    rats = f"ratio: {ratio:.2f}" if ratio is not None else "ratio: n/a"
    print(f"{name}: {shown} {unit} ({refs}, {rats}){note}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=None, help="pool runs (median); 3 unless --quick")
    p.add_argument("--quick", action="store_true", help="one run")
    p.add_argument("--tasks", type=int, default=2000)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="worker jobs (default: one a core)")
    p.add_argument("--vacate-every", type=float, default=1.0, help="seconds between evictions")
    ns = p.parse_args()
    runs = ns.runs or (1 if ns.quick else 3)
    payloads = grid(ns.tasks)
    serial_s, expected = serial(payloads)
    best = max(range(len(payloads)), key=lambda k: expected[k])
    print(f"# {ns.tasks} tasks, {ns.workers} workers, {os.cpu_count()} cores; serial in-process: "
          f"{serial_s:.2f} s ({serial_s / ns.tasks * 1000:.2f} ms a task); best a={payloads[best]['a']} "
          f"b={payloads[best]['b']} integral={expected[best]:.6f}", flush=True)
    rng = random.Random(2024)
    got: list[dict[str, Any]] = []
    right = True
    with BenchPool() as bp:
        for r in range(runs):
            res = pool_run(bp, payloads, ns.workers, ns.vacate_every, rng)
            ok = res["results"] == expected
            right &= ok
            got.append(res)
            print(f"# run {r + 1}: {res['wall']:.2f} s, {res['vacates']} workers evicted ({res['actions']} "
                  f"actions), {res['requeued']} requeued, {res['duplicates']} duplicates, "
                  f"{res['workers_joined']} joins, {res['jobs_replaced']} jobs replaced, a worker back "
                  f"{res['rejoin_ms']:.0f} ms after one left (median), results "
                  f"{'equal the serial ones' if ok else 'DIFFER from the serial ones'}", flush=True)
    wall = statistics.median(r["wall"] for r in got)
    serial_rate = ns.tasks / serial_s
    line("mw_tasks_per_s", ns.tasks / wall, "tasks/s", serial_rate, ns.tasks / wall / serial_rate,
         f" [{len(got)} runs; reference = serial in-process]")
    line("mw_wall", wall, "s", serial_s, serial_s / wall, f" [pool/serial wall time: {wall / serial_s:.2f}]")
    for key, name, unit in (("vacates", "mw_vacates", "count"), ("requeued", "mw_requeued", "count"),
                            ("duplicates", "mw_duplicates", "count"), ("workers_joined", "mw_workers_joined", "count"),
                            ("jobs_replaced", "mw_jobs_replaced", "count"), ("rejoin_ms", "mw_rejoin", "ms")):
        v = statistics.median(r[key] for r in got)
        print(f"{name}: {v:.4g} {unit} (reference: none, ratio: n/a) [informational]", flush=True)
    print(f"answer: {'right' if right else 'WRONG'}: every run's {ns.tasks} results "
          f"{'equal' if right else 'do not all equal'} the serial ones", flush=True)
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
