"""CPU a steady pool costs: 2,000 static slots, all claimed by long sleep jobs.

Runnable on its own::

    .venv/bin/python bench/idle_bench.py [--slots N] [--seconds S] [--runs R]

A personal pool (every daemon of ``roost up``, one startd with N static slots)
runs N ``/bin/sleep`` jobs; once every slot is claimed and the pool has settled,
each daemon's CPU (utime + stime from ``/proc/<pid>/stat``, its own threads, not
the jobs) is read over S seconds, R times. Prints one line per daemon and one for
them all together, ``figure: value unit (reference: value, ratio: x.xx)``, in % of
one core (median of the runs); the reference is the goal of issue 27 for the sum
(5 %) and the figure measured before that issue's work for each daemon (2,000 slots).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool_bench import BenchPool  # noqa: E402

#: % of a core each daemon took before issue 27 (2,000 claimed static slots), and the goal
BEFORE = {"COLLECTOR": 24.0, "NEGOTIATOR": 17.0, "STARTD": 27.0}
GOAL_TOTAL = 5.0


def own_cpu(pid: int) -> float:
    """utime + stime of the process itself (not its reaped children: the jobs)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def claimed(bp: BenchPool) -> int:
    from roost.api.collector import Collector

    col = Collector(bp.home, timeout=30.0)
    try:
        return len(col.query_objs("Machine", 'State == "Claimed"', ["Name"]))
    finally:
        col.close()


def _leftovers(home: Path) -> list[int]:
    """Processes whose command line names this pool's home (its jobs and their keepers)."""
    mark = str(home).encode()
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if mark in f.read():
                        out.append(int(entry))
            except OSError:
                continue
    return out


def wait_for(what: str, cond, timeout: float, every: float = 1.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached in {timeout:g} s")
        time.sleep(every)


def trace(pids: dict[str, int], seconds: float, step: float) -> None:
    """Print every daemon's CPU (% of a core) each ``step`` seconds: periodic work shows as spikes."""
    end = time.monotonic() + seconds
    last = {name: own_cpu(pid) for name, pid in pids.items()}
    t_last = time.monotonic()
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(step, left))
        now = {name: own_cpu(pid) for name, pid in pids.items()}
        dt = time.monotonic() - t_last
        t_last = time.monotonic()
        print("# " + " ".join(f"{k.lower()[:5]}={100 * (now[k] - last[k]) / dt:5.1f}" for k in sorted(pids)), flush=True)
        last = now


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slots", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=30.0, help="length of one measurement")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--settle", type=float, default=20.0, help="seconds to wait once every slot is claimed")
    p.add_argument("--extra", default="", help="more configuration lines (\\n-separated)")
    p.add_argument("--trace", type=float, default=0.0, help="also print each daemon's CPU every this many seconds")
    ns = p.parse_args()
    n = ns.slots
    extra = (f"\nNUM_CPUS = {n}\nMEMORY = {n * 64}\nSTARTD_DETECT_GPUS = false\n"
             + ns.extra.replace("\\n", "\n") + "\n")
    with BenchPool(extra) as bp:
        d = bp.home / "sleepers"
        d.mkdir()
        (d / "job.sub").write_text("executable = /bin/sleep\narguments = 100000\nrequest_memory = 16\n"
                                   f"request_disk = 64\nqueue {n}\n")
        t0 = time.monotonic()
        done = bp.roost("submit", "job.sub", cwd=d)
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        wait_for(f"{n} claimed slots", lambda: claimed(bp) >= n, timeout=600, every=2.0)
        print(f"# {n} slots claimed after {time.monotonic() - t0:.1f} s; settling {ns.settle:g} s", flush=True)
        time.sleep(ns.settle)
        pids = {name: int(v["pid"]) for name, v in bp.pool.status()["daemons"].items() if v["pid"]}
        pids["MASTER"] = bp.master_pid or 0
        per: dict[str, list[float]] = {name: [] for name in pids}
        totals: list[float] = []
        for _ in range(ns.runs):
            before = {name: own_cpu(pid) for name, pid in pids.items()}
            w0 = time.monotonic()
            if ns.trace > 0:
                trace(pids, ns.seconds, ns.trace)
            else:
                time.sleep(ns.seconds)
            wall = time.monotonic() - w0
            run_total = 0.0
            for name, pid in pids.items():
                pct = 100.0 * (own_cpu(pid) - before[name]) / wall
                per[name].append(pct)
                run_total += pct
            totals.append(run_total)
        still = claimed(bp)
        # the jobs go before the pool: a startd stopped with 2,000 running would leave
        # them to their keepers (they outlive it by design)
        bp.roost("rm", "-all")
        wait_for("the jobs to leave", lambda: not _leftovers(bp.home), timeout=300, every=2.0)
    for pid in _leftovers(bp.home):  # whatever a failed stop left behind, by pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for name in sorted(per):
        v = statistics.median(per[name])
        ref = BEFORE.get(name)
        ref_s = f"reference: {ref:g}, ratio: {ref / v:.2f}" if ref and v > 0 else \
            (f"reference: {ref:g}, ratio: inf" if ref else "reference: n/a, ratio: n/a")
        print(f"idle_cpu_{name.lower()}_{n}: {v:.2f} % ({ref_s}) "
              f"[{ns.runs} x {ns.seconds:g} s, min {min(per[name]):.2f}, max {max(per[name]):.2f}]")
    v = statistics.median(totals)
    ok = v <= GOAL_TOTAL
    print(f"idle_cpu_all_{n}: {v:.2f} % (reference: {GOAL_TOTAL:g}, ratio: {GOAL_TOTAL / v if v else float('inf'):.2f}) "
          f"target <= {GOAL_TOTAL:g}: {'met' if ok else 'NOT met'} [{still} slots still claimed at the end]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
