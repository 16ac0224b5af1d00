"""``condor_q`` against ``roost q`` with 100,000 jobs queued: the condor name costs nothing.

Runnable on its own::

    .venv/bin/python bench/condor_cmd_bench.py [--quick] [--runs N] [--jobs N]

One personal pool without a startd (the jobs stay idle) gets a ``queue 100000``
submit; then each view is listed by ``.venv/bin/condor_q ARGS`` and ``.venv/bin/roost
q ARGS``, alternating the two (which goes first alternates too), and the two
outputs must be the same (the header's clock time aside). Per view it prints::

    condor_q_100k[VIEW]: median s (reference: roost q's median, ratio: x.xx) target ...: met

and ``condor_q_100k_cpu[VIEW]`` the same for the command's own CPU time (user +
system: what the condor name could add, without the noise of a busy machine's
scheduling; the schedd's share of the wall time is the same for both),
where the ratio is roost q's time over condor_q's (above 1: condor_q was quicker), as in
the other benches; issue 17 asks that condor_q take at most 1.10 x roost q's time
(a ratio of at least 0.91).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from pool_bench import NO_STARTD, BenchPool, _job_dir  # noqa: E402

BIN = Path(sys.executable).parent
VIEWS: dict[str, list[str]] = {
    "batch": [],
    "nobatch": ["-nobatch"],
    "af": ["-af", "ClusterId", "ProcId", "JobStatus"],
    "format": ["-format", "%d.", "ClusterId", "-format", "%d\\n", "ProcId"],
    "totals": ["-totals"],
}
TARGET = 1.10


def _same(a: str, b: str) -> bool:
    """Outputs equal but for the ``-- Schedd: ... @ time`` header line."""
    def strip(text: str) -> list[str]:
        return [ln for ln in text.splitlines() if not ln.startswith("-- Schedd: ")]

    return strip(a) == strip(b)


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, the command's own CPU seconds (user + system), its stdout."""
    c0, t0 = _cpu(), time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    took, cpu = time.perf_counter() - t0, _cpu() - c0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return took, cpu, done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="runs of each command per view (default 7)")
    ap.add_argument("--jobs", type=int, default=100_000, help="jobs in the queue (default 100000)")
    ap.add_argument("--quick", action="store_true", help="3 runs, 20,000 jobs")
    args = ap.parse_args()
    runs, n = (3, 20_000) if args.quick else (args.runs, args.jobs)
    condor_q, roost = BIN / "condor_q", BIN / "roost"
    if not condor_q.exists() or not roost.exists():
        print(f"condor_q_100k: n/a s (reference: n/a, ratio: n/a) -- {condor_q} or {roost} missing: run `make venv`")
        return 1
    label = f"{n // 1000}k"
    ok = True
    with BenchPool(NO_STARTD) as bp:
        d = _job_dir(bp.home, "big", f"executable = /bin/true\narguments = $(Process)\nqueue {n}\n")
        done = bp.roost("submit", "job.sub", cwd=d)
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        for view, extra in VIEWS.items():
            times: dict[str, list[float]] = {"condor": [], "roost": []}
            cpus: dict[str, list[float]] = {"condor": [], "roost": []}
            outs: dict[str, str] = {}
            cmds = {"condor": [str(condor_q), *extra], "roost": [str(roost), "q", *extra]}
            for i in range(runs):
                order = ("condor", "roost") if i % 2 == 0 else ("roost", "condor")
                for who in order:
                    took, cpu, out = _run(cmds[who], bp.env)
                    times[who].append(took)
                    cpus[who].append(cpu)
                    outs.setdefault(who, out)
            if not _same(outs["condor"], outs["roost"]):
                print(f"condor_q_{label}[{view}]: outputs differ from roost q's", flush=True)
                ok = False
                continue
            lines = len(outs["roost"].splitlines())
            for what, got, note in (("", times, "wall time"), ("_cpu", cpus, "the command's own CPU time")):
                c, r = statistics.median(got["condor"]), statistics.median(got["roost"])
                met = c <= TARGET * r
                ok = ok and met
                print(f"condor_q_{label}{what}[{view}]: {c:.3f} s (reference: {r:.3f}, ratio: {r / c:.2f}) "
                      f"target condor_q <= {TARGET:.2f} x roost q: {'met' if met else 'NOT met'} "
                      f"[{note}; reference: roost q; medians of {runs} runs each, alternating; min "
                      f"{min(got['condor']):.3f} / {min(got['roost']):.3f} s; {lines} lines, same output]",
                      flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
