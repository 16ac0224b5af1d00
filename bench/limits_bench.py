"""What memory limits and live usage reports cost a personal pool, in one run.

Runnable on its own::

    .venv/bin/python bench/limits_bench.py [--quick] [--runs N]

Two personal pools of 8 static slots, up at once, runs alternating between them:

- *on*: the defaults: every job in a memory cgroup limited to its slot
  (``STARTD_MEMORY_LIMIT = hard``, where the host has a memory controller) and a CPU
  share (``STARTD_CPU_SHARES``), its sandbox watched against its Disk
  (``STARTD_DISK_LIMIT = hold``), and its usage reported every
  ``STARTER_UPDATE_INTERVAL`` (1 s here, to make the reports happen during the runs;
  the default is 300 s).
- *off*: ``STARTD_MEMORY_LIMIT = off`` (no memory cgroup), no CPU shares, disk not
  watched, and reports every 3600 s.

Figures (medians; ratio on/off, target within 10%): ``throughput`` (1,000 ``/bin/true``
jobs, submit to the last terminated event, jobs/s) and ``latency`` (one ``/bin/true``,
``roost submit`` to its terminated event, the CLI included).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import ROOST, BenchPool, _job_dir, wait_terminated  # noqa: E402

MODES = {
    "on": "\nSTARTD_MEMORY_LIMIT = hard\nSTARTD_CPU_SHARES = True\nSTARTD_DISK_LIMIT = hold\n"
          "STARTER_UPDATE_INTERVAL = 1\n",
    "off": "\nSTARTD_MEMORY_LIMIT = off\nSTARTD_CPU_SHARES = False\nSTARTD_DISK_LIMIT = none\n"
           "STARTER_UPDATE_INTERVAL = 3600\n",
}


def throughput(bp: BenchPool, name: str, n: int) -> float:
    d = _job_dir(bp.home, name, f"executable = /bin/true\nlog = job.log\nqueue {n}\n")
    t0 = time.perf_counter()
    done = bp.roost("submit", "job.sub", cwd=d)
    if done.returncode != 0:
        raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
    return n / (wait_terminated(d / "job.log", n, timeout=600, interval=0.01) - t0)


def latency(bp: BenchPool, name: str) -> float:
    d = _job_dir(bp.home, name, "executable = /bin/true\nlog = job.log\nqueue\n")
    t0 = time.perf_counter()
    proc = subprocess.Popen([*ROOST, "submit", "job.sub"], env=bp.env, cwd=d,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t1 = wait_terminated(d / "job.log", 1, timeout=30, proc=proc)
    proc.communicate(timeout=30)
    return t1 - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--runs", type=int, default=None)
    ns = p.parse_args()
    runs = ns.runs or (2 if ns.quick else 5)
    jobs = 300 if ns.quick else 1000
    res: dict[str, dict[str, list[float]]] = {m: {"throughput": [], "latency": []} for m in MODES}
    with contextlib.ExitStack() as stack:
        pools = {m: stack.enter_context(BenchPool(extra)) for m, extra in MODES.items()}
        for m, bp in pools.items():
            latency(bp, "warm")
            shown = bp.roost("status", "-af", "MemoryEnforcement").stdout.splitlines()
            print(f"  [{m}] memory: {shown[0] if shown else 'unknown'}", flush=True)
        for i in range(runs):
            for m, bp in pools.items():
                res[m]["throughput"].append(throughput(bp, f"tp{i}", jobs))
        for i in range(runs * 3):
            for m, bp in pools.items():
                time.sleep(0.2)
                res[m]["latency"].append(latency(bp, f"lat{i}"))
    ok = True
    for name, unit, better in (("throughput", "jobs/s", "higher"), ("latency", "s", "lower")):
        on, off = (statistics.median(res[m][name]) for m in ("on", "off"))
        ratio = on / off
        met = ratio >= 0.9 if better == "higher" else ratio <= 1.1
        ok &= met
        print(f"{name}: on {on:.3f} {unit}, off {off:.3f} {unit}, on/off {ratio:.2f} "
              f"(target within 10%: {'met' if met else 'NOT met'}) [{len(res['on'][name])} runs each]", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
