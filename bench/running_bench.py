"""The execute side with thousands of jobs running at once on one startd (issue 27).

Runnable on its own::

    .venv/bin/python bench/running_bench.py [--jobs 2000,4000] [--runs N] [--keep SECONDS]

One personal pool per size N (a temporary ROOST_HOME, one startd of N static slots),
N ``sleep`` jobs submitted in one cluster. Figures, one line each, in the form
``figure: value unit (reference: value, ratio: x.xx)``:

- ``running_N``: submit start until the schedd counts all N jobs Running.
- ``processes_N``: submit start until N job processes really exist (counted in /proc
  by their command line, which is unique to this bench).
- ``lag_N``: the worst lag seen between the schedd's Running count and the processes
  that exist (jobs), sampled once a second.
- ``startd_fds_N``: the startd's peak open descriptors; ``fds_per_job_N`` the same,
  less the idle startd's, per running job; then one line per kind (pipe, socket,
  pidfd, memfd, exit file, cgroup file, other) per running job.
- ``held_N``: jobs held at the end (must be 0).

References: the figures an outside check measured before issue 27's work (3.5
descriptors per running job in the startd; processes ~30 s behind Running at 4,000
jobs); the held reference is 0. A ratio above 1 means better than the reference.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "src"))

from pool_bench import BenchPool  # noqa: E402  (the bench's own directory)

#: an argument no other process on the machine has: counts this bench's jobs only
SLEEP_ARG = "86399.25"
REF_FDS_PER_JOB = 3.5
REF_LAG_4000 = 30.0


def pool_config(n: int) -> str:
    # each slot gets MEMORY/N MiB: 64 MiB each, whatever the machine has
    # NEGOTIATOR_INTERVAL: a cycle that matched slots already claimed (the collector had
    # not heard yet) leaves jobs idle until the next periodic one
    return (f"\nNUM_CPUS = {n}\nMEMORY = {n * 64}\nSTARTD_DETECT_CONTAINERS = False\n"
            "STARTD_DETECT_JAVA = False\nNEGOTIATOR_INTERVAL = 10\n")


def our_jobs() -> Iterator[int]:
    """Pids of processes running this bench's sleep (one /proc walk: ~0.1 s at 10,000)."""
    want = SLEEP_ARG.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if len(argv) >= 2 and argv[1] == want and argv[0].endswith(b"sleep"):
            yield int(name)


def count_jobs() -> int:
    """How many of this bench's sleep jobs run now."""
    return sum(1 for _ in our_jobs())


def fd_kinds(pid: int) -> Counter[str]:
    """The open descriptors of ``pid`` by kind."""
    kinds: Counter[str] = Counter()
    base = f"/proc/{pid}/fd"
    for fd in os.listdir(base):
        try:
            target = os.readlink(f"{base}/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            kinds["pipe"] += 1
        elif target.startswith("socket:"):
            kinds["socket"] += 1
        elif "pidfd" in target:
            kinds["pidfd"] += 1
        elif target.startswith("/memfd:"):
            kinds["memfd"] += 1
        elif target.endswith(".exit") or "/.jobs/" in target:
            kinds["exit_file"] += 1
        elif target.startswith("/sys/fs/cgroup"):
            kinds["cgroup"] += 1
        else:
            kinds["other"] += 1
    return kinds


def kill_leftovers() -> int:
    """Kill this bench's sleep jobs still running (by their pids): a job outlives a
    startd that is stopped under it, and an interrupted run leaves them."""
    killed = 0
    for pid in our_jobs():
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            continue
    return killed


def run_once(n: int, timeout: float) -> dict[str, float]:
    try:
        return _run_once(n, timeout)
    finally:
        kill_leftovers()


def _run_once(n: int, timeout: float) -> dict[str, float]:
    out: dict[str, float] = {}
    with BenchPool(pool_config(n)) as bp:
        from roost.api.schedd import Schedd

        startd = int(bp.pool.status()["daemons"]["STARTD"]["pid"])
        idle_fds = sum(fd_kinds(startd).values())
        d = bp.home / "jobs"
        d.mkdir()
        (d / "job.sub").write_text(f"executable = /bin/sleep\narguments = {SLEEP_ARG}\n"
                                   f"request_memory = 16\nrequest_disk = 1024\nqueue {n}\n")
        schedd = Schedd(bp.home)
        t0 = time.perf_counter()
        done = bp.roost("submit", "job.sub", cwd=d)
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        running_at = procs_at = None
        peak: Counter[str] = Counter()
        peak_total = 0
        samples: list[tuple[float, int, int]] = []  # (time, schedd's Running count, processes)
        deadline = t0 + timeout
        while (running_at is None or procs_at is None) and time.perf_counter() < deadline:
            time.sleep(1.0)
            now = time.perf_counter()
            totals = schedd.totals()
            running, procs = totals.get("Running", 0), count_jobs()
            kinds = fd_kinds(startd)
            if sum(kinds.values()) > peak_total:
                peak_total, peak = sum(kinds.values()), kinds
            samples.append((now, running, procs))
            if running_at is None and running >= n:
                running_at = now - t0
            if procs_at is None and procs >= n:
                procs_at = now - t0
            held = totals.get("Held", 0)
            print(f"  t={now - t0:6.1f}s running={running} processes={procs} held={held} "
                  f"startd_fds={sum(kinds.values())}", file=sys.stderr, flush=True)
        out["held"] = float(schedd.totals().get("Held", 0))
        out["running"] = running_at if running_at is not None else float("inf")
        out["processes"] = procs_at if procs_at is not None else float("inf")
        out["lag"] = worst_lag(samples, n)
        out["startd_fds"] = float(peak_total)
        out["fds_per_job"] = (peak_total - idle_fds) / n
        for kind in ("pipe", "socket", "pidfd", "memfd", "exit_file", "cgroup", "other"):
            out[f"{kind}_per_job"] = peak[kind] / n
        bp.roost("rm", "-all")
        schedd.close()
    return out


def worst_lag(samples: list[tuple[float, int, int]], n: int) -> float:
    """The longest time, over counts k in steps of n/20, between the schedd first
    counting k jobs Running and k job processes first existing."""
    worst = 0.0
    for k in range(max(1, n // 20), n + 1, max(1, n // 20)):
        ran = next((t for t, r, _ in samples if r >= k), None)
        began = next((t for t, _, p in samples if p >= k), None)
        if ran is not None and began is not None:
            worst = max(worst, began - ran)
    return worst


def line(name: str, value: float, unit: str, ref: float | None, lower_better: bool = True) -> str:
    if ref is None:
        return f"{name}: {value:.2f} {unit} (reference: none, ratio: n/a)"
    if lower_better:
        ratio = (ref / value) if value > 0 else float("inf")
    else:
        ratio = value / ref if ref else float("inf")
    return f"{name}: {value:.2f} {unit} (reference: {ref:g}, ratio: {ratio:.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", default="2000,4000", help="comma-separated sizes (default 2000,4000)")
    ap.add_argument("--runs", type=int, default=1, help="runs per size (median reported)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for all to run")
    ns = ap.parse_args()
    ok = True
    for n in (int(x) for x in ns.jobs.split(",")):
        runs = [run_once(n, ns.timeout) for _ in range(ns.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(line(f"running_{n}", med["running"], "s", None))
        print(line(f"processes_{n}", med["processes"], "s", None))
        print(line(f"lag_{n}", med["lag"], "s", REF_LAG_4000 * n / 4000))
        print(line(f"startd_fds_{n}", med["startd_fds"], "fds", REF_FDS_PER_JOB * n))
        print(line(f"fds_per_job_{n}", med["fds_per_job"], "fds", REF_FDS_PER_JOB))
        for kind in ("pipe", "socket", "pidfd", "memfd", "exit_file", "cgroup", "other"):
            print(line(f"{kind}_per_job_{n}", med[f"{kind}_per_job"], "fds", None))
        print(f"held_{n}: {med['held']:.0f} jobs (reference: 0, ratio: {'1.00' if med['held'] == 0 else '0.00'})")
        ok = ok and med["held"] == 0 and med["running"] != float("inf")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
