"""``roost.futures.Executor.map`` over 10,000 small calls on a personal pool, against a
local ``concurrent.futures.ProcessPoolExecutor`` doing the same map in the same run.

Runnable on its own::

    .venv/bin/python bench/futures_bench.py [--quick] [--runs N] [--calls N] [--chunksize N]
                                             [--slots N] [--python PATH] [--single N]

The call: ``work(x)``, a sum of 200 squares (a few microseconds): the figure measures
what it costs to ship calls, not to compute them. Both executors get the same number
of CPUs (``--slots``, this machine's cores unless told: the pool gets that many
static slots, the process pool that many workers) and the same ``chunksize`` (500
unless told: 20 jobs for 10,000 calls). Each timing runs from creating the executor
to its shutdown, so the process pool pays for starting its workers as the pool pays
for its jobs.

Prints ``figure: value unit (reference: value, ratio: x.xx)``, medians of ``--runs``
runs (3 unless told; 1 with ``--quick``):
- ``futures_map_calls_per_s``: calls over wall time; reference: ProcessPoolExecutor's,
  ratio roost/local (above 1: roost is faster; it is not expected to be: every job
  is a scheduled, sandboxed process with its files transferred).
- ``futures_map_wall``: that wall time in seconds; reference: the process pool's.
- ``futures_single_calls_per_s``: ``--single`` calls (500 unless told) by ``submit``
  one at a time in a loop, each its own job (chunksize 1: what a job costs);
  reference: the process pool's ``submit`` loop.
Jobs run as ``nobody`` when root runs the bench: ``--python`` defaults to
``/usr/bin/python3`` when it has this Python's minor version.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool  # noqa: E402
from roost.futures import Executor  # noqa: E402


def work(x: int) -> int:
    """A small call (defined in __main__: cloudpickle ships it by value)."""
    return sum(i * i for i in range(x % 7, 200))


def default_python() -> str:
    """/usr/bin/python3 when it has this minor version (nobody can run it), else ours."""
    try:
        out = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30).stdout.split()
        if [int(v) for v in out] == list(sys.version_info[:2]):
            return "/usr/bin/python3"
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return sys.executable


def timed(fn: Callable[[], list[int]], expected: list[int]) -> float:
    t0 = time.perf_counter()
    got = fn()
    wall = time.perf_counter() - t0
    if got != expected:
        raise SystemExit("wrong results")
    return wall


def report(name: str, unit: str, values: list[float], refs: list[float], higher: bool) -> None:
    v, r = statistics.median(values), statistics.median(refs)
    ratio = (v / r if higher else r / v) if v and r else float("nan")
    print(f"{name}: {v:.4g} {unit} (reference: {r:.4g}, ratio: {ratio:.2f})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--chunksize", type=int, default=500)
    ap.add_argument("--single", type=int, default=500)
    ap.add_argument("--slots", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--python", default=None)
    args = ap.parse_args()
    runs = args.runs or (1 if args.quick else 3)
    python = args.python or default_python()
    xs = list(range(args.calls))
    expected = [work(x) for x in xs]
    singles = list(range(args.single))
    expected_single = [work(x) for x in singles]
    print(f"# {args.calls} calls, chunksize {args.chunksize}, {args.slots} slots/workers, "
          f"jobs run {python}, {runs} run(s)", flush=True)

    def roost_map() -> list[int]:
        with Executor(python=python) as ex:
            return list(ex.map(work, xs, chunksize=args.chunksize))

    def local_map() -> list[int]:
        with cf.ProcessPoolExecutor(max_workers=args.slots) as ex:
            return list(ex.map(work, xs, chunksize=args.chunksize))

    def roost_single() -> list[int]:
        with Executor(python=python) as ex:
            return [f.result() for f in [ex.submit(work, x) for x in singles]]

    def local_single() -> list[int]:
        with cf.ProcessPoolExecutor(max_workers=args.slots) as ex:
            return [f.result() for f in [ex.submit(work, x) for x in singles]]

    walls: dict[str, list[float]] = {k: [] for k in ("roost", "local", "roost1", "local1")}
    extra = f"\nNUM_CPUS = {args.slots}\n"
    with BenchPool(extra):
        roost_map()  # warm: the first negotiation cycle, page cache
        for _ in range(runs):
            walls["local"].append(timed(local_map, expected))
            walls["roost"].append(timed(roost_map, expected))
            print(f"# map: roost {walls['roost'][-1]:.2f} s, local {walls['local'][-1]:.2f} s", flush=True)
        if args.single:
            for _ in range(runs):
                walls["local1"].append(timed(local_single, expected_single))
                walls["roost1"].append(timed(roost_single, expected_single))
                print(f"# single: roost {walls['roost1'][-1]:.2f} s, local {walls['local1'][-1]:.2f} s",
                      flush=True)
    n = args.calls
    report("futures_map_calls_per_s", "calls/s", [n / w for w in walls["roost"]],
           [n / w for w in walls["local"]], higher=True)
    report("futures_map_wall", "s", walls["roost"], walls["local"], higher=False)
    if args.single:
        m = args.single
        report("futures_single_calls_per_s", "calls/s", [m / w for w in walls["roost1"]],
               [m / w for w in walls["local1"]], higher=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
