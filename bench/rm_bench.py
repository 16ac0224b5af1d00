"""`roost rm -all` of a big idle queue, and whether the schedd answers meanwhile (issue 27).

Runnable on its own::

    .venv/bin/python bench/rm_bench.py [--jobs 100000] [--runs 3]

Each run: a personal pool without a startd (the jobs stay idle), one ``queue N``
cluster submitted, then ``roost rm -all`` timed from start to exit while this process
asks ``roost q -totals`` again and again. Figures (medians):

- ``rm_all``: seconds of ``roost rm -all`` (reference: HTCondor 25.0.13 removing the same
  100,000 jobs on this machine kind, 1.6 s, measured from outside for issue 27);
- ``q_during_rm``: the slowest ``roost q -totals`` while the removal ran, against the
  median ``q -totals`` of the same pool before it (the schedd must keep answering);
- ``schedd_cpu``: CPU seconds the schedd spent on the removal (user + system, from
  /proc), which a loaded machine inflates far less than the wall time.

``--restart``: also, in a pool of its own each run, ``roost rm -constraint 'ProcId < N/2'``
then ``roost rm -constraint 'ProcId % 2 == 0'`` (three quarters of the jobs: a half in
bulk, then every other proc of the rest), then ``roost restart -daemon schedd`` until
``q -totals`` answers with the quarter left: ``restart_after_rm`` (seconds) and
``restart_after_rm_cpu`` (the new schedd's CPU then), the cost of loading what the
removals wrote (issue 27's gone ranges).

``--profile FILE``: the schedd runs under cProfile (``ROOST_SCHEDD_PROFILE``) and leaves
its statistics in FILE (of the last run: submit and removal; read them with ``python -m
pstats FILE``); its CPU figures then include the profiler's cost. ``--no-probe``: no
``q -totals`` while the removal runs, so ``schedd_cpu`` is the removal's alone.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool_bench import NO_STARTD, ROOST, BenchPool, _job_dir  # noqa: E402
from scale_bench import _cpu_s, _schedd_pid_after, _wait_answer  # noqa: E402

HTCONDOR_RM_100K = 1.6  # seconds, issue 27's measurement of HTCondor 25.0.13 here


def _q_totals(bp: BenchPool) -> float:
    t0 = time.perf_counter()
    subprocess.run([*ROOST, "q", "-totals"], env=bp.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False, timeout=600)
    return time.perf_counter() - t0


def _cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(n: int, probe: bool = True) -> tuple[float, float, float, float]:
    """(rm -all seconds, median q -totals before, slowest q -totals during, schedd CPU s);
    ``probe`` False: no ``q -totals`` during the removal (the CPU figure is then the
    removal's alone, not also the answers, whose number grows with the wall time)."""
    with BenchPool(NO_STARTD) as bp:
        d = _job_dir(bp.home, "big", f"executable = /bin/true\narguments = $(Process)\nqueue {n}\n")
        done = bp.roost("submit", "job.sub", cwd=d)
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        before = statistics.median(_q_totals(bp) for _ in range(5))
        during: list[float] = []
        stop = threading.Event()

        def ask() -> None:
            while not stop.is_set():
                during.append(_q_totals(bp))

        t = threading.Thread(target=ask)
        pid = bp.schedd_pid()
        cpu0 = _cpu(pid)
        t0 = time.perf_counter()
        if probe:
            t.start()
        rm = bp.roost("rm", "-all")
        took = time.perf_counter() - t0
        stop.set()
        if probe:
            t.join()
        cpu = _cpu(pid) - cpu0  # includes the q -totals answers (each ~1 ms)
        if rm.returncode != 0:
            raise RuntimeError(f"roost rm -all failed: {rm.stderr.strip()}")
        return took, before, max(during) if during else 0.0, cpu


def restart_run(n: int) -> tuple[float, float]:
    """(seconds until a restarted schedd answers, its CPU seconds then) after removing
    three quarters of a ``queue n`` cluster: the first half in bulk (contiguous ranges),
    then every other proc of the rest (a range per proc)."""
    with BenchPool(NO_STARTD) as bp:
        d = _job_dir(bp.home, "big", f"executable = /bin/true\narguments = $(Process)\nqueue {n}\n")
        for args in (("submit", "job.sub"), ("rm", "-constraint", f"ProcId < {n // 2}"),
                     ("rm", "-constraint", "ProcId % 2 == 0")):
            done = bp.roost(*args, cwd=d)
            if done.returncode != 0:
                raise RuntimeError(f"roost {' '.join(args)} failed: {done.stderr.strip()}")
        pid = bp.schedd_pid()
        t0 = time.perf_counter()
        bp.roost("restart", "-daemon", "schedd")
        new = _schedd_pid_after(bp, pid)
        took = _wait_answer(bp, sum(1 for p in range(n // 2, n) if p % 2), t0)  # the odd procs of the upper half
        return took, _cpu_s(new)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--profile", metavar="FILE", help="cProfile statistics of the schedd into FILE")
    p.add_argument("--no-probe", action="store_true", help="no q -totals during the removal (CPU of the removal alone)")
    p.add_argument("--restart", action="store_true", help="also a restart after removing three quarters of the jobs")
    a = p.parse_args()
    if a.profile:
        os.environ["ROOST_SCHEDD_PROFILE"] = str(Path(a.profile).resolve())  # the master's children inherit it
    runs = [one_run(a.jobs, not a.no_probe) for _ in range(a.runs)]
    rm = statistics.median(r[0] for r in runs)
    before = statistics.median(r[1] for r in runs)
    during = statistics.median(r[2] for r in runs)
    cpu = statistics.median(r[3] for r in runs)
    ref = HTCONDOR_RM_100K * a.jobs / 100_000
    print(f"rm_all_{a.jobs}: {rm:.2f} s (reference: {ref:.2f}, ratio: {ref / rm:.2f}) "
          f"[{a.runs} runs, min {min(r[0] for r in runs):.2f}, max {max(r[0] for r in runs):.2f}]")
    print(f"q_totals_during_rm: {during:.3f} s slowest (reference: {before:.3f} before the rm, "
          f"ratio: {before / during if during else 0:.2f})")
    print(f"schedd_cpu_rm_all_{a.jobs}: {cpu:.2f} s (reference: {ref:.2f}, ratio: {ref / cpu if cpu else 0:.2f})")
    if a.restart:
        again = [restart_run(a.jobs) for _ in range(a.runs)]
        took = statistics.median(r[0] for r in again)
        used = statistics.median(r[1] for r in again)
        # (no HTCondor figure: the reference is issue 27's restart goal for a million jobs, 3 s)
        print(f"restart_after_rm_{a.jobs}: {took:.2f} s (reference: 3.00, ratio: {3.0 / took:.2f}) "
              f"[{a.runs} runs, min {min(r[0] for r in again):.2f}, max {max(r[0] for r in again):.2f}]")
        print(f"restart_after_rm_cpu_{a.jobs}: {used:.2f} s (reference: 3.00, ratio: {3.0 / used if used else 0:.2f})")


if __name__ == "__main__":
    main()
