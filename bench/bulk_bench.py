"""The schedd's bulk actions on a big idle queue, and whether it answers meanwhile (issue 27).

Runnable on its own::

    .venv/bin/python bench/bulk_bench.py [--jobs 100000] [--runs 3] [--extras]

Each run: a personal pool without a startd (the jobs stay idle), one ``queue N``
cluster with a user log submitted, then, each timed from start to exit of the tool
while a thread of this process asks the schedd for its totals (QUERY_JOBS through
``roost.api``) again and again:

- ``hold_all``, ``release_all``, ``rm_all``: ``roost hold -all``, ``roost release -all``,
  ``roost rm -all``;
- with ``--extras`` also (between release and rm): ``hold_constraint`` (``roost hold
  -constraint 'ProcId >= 0'``, a constraint read per proc), ``release_constraint``,
  ``qedit`` (``roost qedit -constraint 'ProcId >= 0' BenchMark 1``), ``rm_cluster``
  (``roost rm <cluster>`` instead of ``-all``), ``history_limit`` (``roost history
  -limit 10`` after the removal), ``history_all`` (every history row through the API)
  and ``restart`` (``roost restart``-ing the schedd with the removed set in its
  history, until the new one answers).

Each figure prints its median over the runs, and for each action ``<name>_query``: the
slowest query answered while it ran (the goal: ~0.2 s at most), and
``<name>_schedd_cpu``: the CPU seconds the schedd spent meanwhile (user + system, from
/proc), which a machine loaded by others inflates far less than the wall time. The user log is read
at the end of each run and must hold one 012, one 013 and one 009 event per job
(twice 012 and 013 with ``--extras``), so the figures are of work really done.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool_bench import NO_STARTD, BenchPool, _job_dir, cpu_seconds  # noqa: E402

#: today's figures on main before issue 27's bulk work (seconds), for the ratio
BEFORE = {"rm_all": 4.0, "hold_all": 17.0, "release_all": 18.0}


class Prober:
    """Asks the schedd for its totals in a loop; the slowest answer while on."""

    def __init__(self, home: Path) -> None:
        from roost.api.schedd import Schedd

        self.schedd = Schedd(str(home))
        self.worst = 0.0
        self.asked = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Prober:
        self.worst, self.asked = 0.0, 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                self.schedd.totals()
            except Exception:  # noqa: BLE001 - a refused query counts as its wait
                self.schedd.close()
            self.worst = max(self.worst, time.perf_counter() - t0)
            self.asked += 1
            time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.schedd.close()


def timed(bp: BenchPool, probe: Prober, out: dict[str, list[float]], name: str, *args: str,
          cwd: Path | None = None) -> None:
    pid = bp.schedd_pid()
    cpu0 = cpu_seconds(pid)
    with probe:
        t0 = time.perf_counter()
        done = bp.roost(*args, cwd=cwd)
        took = time.perf_counter() - t0
    cpu = cpu_seconds(pid) - cpu0  # with the probe's answers (each ~1 ms)
    if done.returncode != 0:
        raise RuntimeError(f"roost {' '.join(args)} failed: {done.stderr.strip()[:400]}")
    out.setdefault(name, []).append(took)
    out.setdefault(name + "_query", []).append(probe.worst)
    out.setdefault(name + "_schedd_cpu", []).append(cpu)


def count_events(log: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    with open(log) as f:
        for line in f:
            if line[:3].isdigit() and line[3:5] == " (":
                counts[line[:3]] = counts.get(line[:3], 0) + 1
    return counts


def one_run(n: int, extras: bool, out: dict[str, list[float]]) -> None:
    with BenchPool(NO_STARTD) as bp:
        d = _job_dir(bp.home, "big", f"executable = /bin/true\narguments = $(Process)\nlog = big.log\nqueue {n}\n")
        done = bp.roost("submit", "job.sub", cwd=d)
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        probe = Prober(bp.home)
        timed(bp, probe, out, "hold_all", "hold", "-all")
        timed(bp, probe, out, "release_all", "release", "-all")
        holds = 1
        if extras:
            timed(bp, probe, out, "hold_constraint", "hold", "-constraint", "ProcId >= 0")
            timed(bp, probe, out, "release_constraint", "release", "-constraint", "ProcId >= 0")
            timed(bp, probe, out, "qedit", "qedit", "-constraint", "ProcId >= 0", "BenchMark", "1")
            holds = 2
            from roost.api.schedd import Schedd

            with Schedd(str(bp.home)) as s:
                cid = min(int(a["ClusterId"]) for a in s.query_objs(projection=["ClusterId"]))
            timed(bp, probe, out, "rm_cluster", "rm", str(cid))
            timed(bp, probe, out, "history_limit", "history", "-limit", "10")
            t0 = time.perf_counter()
            with Schedd(str(bp.home)) as s:
                rows = len(s.history(projection=["ProcId"]))
            out.setdefault("history_all", []).append(time.perf_counter() - t0)
            if rows < n:
                raise RuntimeError(f"history has {rows} rows, not {n}")
            old = bp.schedd_pid()
            t0 = time.perf_counter()
            bp.pool.restart_daemon("SCHEDD")
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    if bp.schedd_pid() != old:
                        with Schedd(str(bp.home), timeout=5) as s:
                            s.totals()
                        break
                except Exception:  # noqa: BLE001 - not back yet
                    pass
                time.sleep(0.05)
            out.setdefault("restart", []).append(time.perf_counter() - t0)
        else:
            timed(bp, probe, out, "rm_all", "rm", "-all")
        got = count_events(d / "big.log")
        want = {"012": n * holds, "013": n * holds, "009": n}
        if any(got.get(k, 0) != v for k, v in want.items()):
            raise RuntimeError(f"user log holds {got}, not {want}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--extras", action="store_true", help="also the constraint, qedit, history and restart paths")
    a = p.parse_args()
    out: dict[str, list[float]] = {}
    for _ in range(a.runs):
        one_run(a.jobs, a.extras, out)
    for name, values in out.items():
        med = statistics.median(values)
        line = f"{name}_{a.jobs}: {med:.3f} s [{len(values)} runs, min {min(values):.3f}, max {max(values):.3f}]"
        before = BEFORE.get(name)
        if before is not None:
            ref = before * a.jobs / 100_000
            line += f" (before: {ref:.1f}, ratio: {ref / med:.2f})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
