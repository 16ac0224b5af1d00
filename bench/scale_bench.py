"""The schedd's queue at organisation scale: a million jobs in one cluster (issue 27).

Runnable on its own::

    .venv/bin/python bench/scale_bench.py [--jobs 1000000] [--runs 3] [--history 200000] [--arguments]

Each run: a personal pool without a startd (the jobs stay idle), one ``queue N`` cluster of
``/bin/true`` (``--arguments``: with ``arguments = $(Process)``, so every proc differs).
Figures (medians of the runs), each against issue 27's goal (ratio = goal/value, >1 met):

- ``submit``: ``roost submit`` start to exit;
- ``q``: ``roost q`` (the default batch view) into /dev/null; ``q_totals``: ``roost q -totals``;
- ``rss_after_submit``: the schedd's VmRSS once the submit returned;
- ``restart``: ``roost restart -daemon schedd`` until ``roost q -totals`` answers with all
  N jobs; ``rss_after_restart``: the new schedd's VmRSS then;
- ``history_start``: a schedd with an empty queue and ``--history`` rows of history
  (written into the stopped schedd's file directly: submitting and finishing 200,000
  jobs would take minutes), from ``roost on -daemon schedd`` until ``q -totals`` answers;
  ``empty_start`` the same without history (what starting a Python daemon costs here);
- ``submit_schedd_cpu``: the CPU time the schedd spent while the submit ran;
- ``*_cpu``: the new schedd's CPU time (user + system) when it answered, against the
  same goal as its wall figure (less inflated than wall time on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pool_bench import NO_STARTD, ROOST, BenchPool, _job_dir  # noqa: E402

# figure -> (unit, goal) from issue 27
GOALS = {"submit": ("s", 5.0), "q": ("s", 2.0), "q_totals": ("s", 0.5), "rss_after_submit": ("MB", 500.0),
         "restart": ("s", 3.0), "rss_after_restart": ("MB", 500.0), "history_start": ("s", 1.0),
         "empty_start": ("s", 1.0), "restart_cpu": ("s", 3.0), "history_start_cpu": ("s", 1.0),
         "empty_start_cpu": ("s", 1.0), "submit_schedd_cpu": ("s", 5.0)}


def _timed(bp: BenchPool, *args: str) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([*ROOST, *args], env=bp.env, capture_output=True, text=True, timeout=900)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"roost {' '.join(args)} failed: {done.stderr.strip()}")
    return took, done.stdout


def _timed_devnull(bp: BenchPool, *args: str) -> float:
    t0 = time.perf_counter()
    done = subprocess.run([*ROOST, *args], env=bp.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          timeout=900)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"roost {' '.join(args)} failed: {done.stderr.decode().strip()}")
    return took


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")) / 1024.0


def _cpu_s(pid: int) -> float:
    """The CPU time (user + system) process ``pid`` has used: less inflated by a loaded
    machine than wall time."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _total(stdout: str) -> int | None:
    """The query's total from ``roost q -totals`` ("Total for query: N jobs; ...")."""
    for line in stdout.splitlines():
        if line.startswith("Total for query:"):
            return int(line.split(":")[1].split()[0])
    return None


def _wait_answer(bp: BenchPool, want: int, t0: float, deadline_s: float = 300.0) -> float:
    """Seconds from ``t0`` until ``roost q -totals`` answers with ``want`` jobs."""
    while time.perf_counter() - t0 < deadline_s:
        done = subprocess.run([*ROOST, "q", "-totals"], env=bp.env, capture_output=True, text=True, timeout=120)
        if done.returncode == 0 and _total(done.stdout) == want:
            return time.perf_counter() - t0
        time.sleep(0.05)
    raise RuntimeError(f"the schedd did not answer with {want} jobs within {deadline_s} s")


def _schedd_pid_after(bp: BenchPool, old: int | None) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            pid = bp.schedd_pid()
            if pid != old:
                return pid
        except Exception:  # the master between two children
            pass
        time.sleep(0.05)
    raise RuntimeError("no new schedd")


def queue_run(n: int, arguments: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    with BenchPool(NO_STARTD) as bp:
        args = "arguments = $(Process)\n" if arguments else ""
        d = _job_dir(bp.home, "big", f"executable = /bin/true\n{args}queue {n}\n")
        before = _cpu_s(bp.schedd_pid())
        t0 = time.perf_counter()
        done = bp.roost("submit", "job.sub", cwd=d)
        out["submit"] = time.perf_counter() - t0
        if done.returncode != 0:
            raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
        pid = bp.schedd_pid()
        out["submit_schedd_cpu"] = _cpu_s(pid) - before
        out["rss_after_submit"] = _rss_mb(pid)
        out["q"] = statistics.median(_timed_devnull(bp, "q") for _ in range(3))
        totals = [_timed(bp, "q", "-totals") for _ in range(3)]
        out["q_totals"] = statistics.median(t for t, _ in totals)
        if _total(totals[0][1]) != n:
            raise RuntimeError(f"q -totals says {totals[0][1]!r}, not {n} jobs")
        t0 = time.perf_counter()
        bp.roost("restart", "-daemon", "schedd")
        new = _schedd_pid_after(bp, pid)
        out["restart"] = _wait_answer(bp, n, t0)
        out["restart_cpu"] = _cpu_s(new)
        out["rss_after_restart"] = _rss_mb(new)
    return out


def _fake_history(db: Path, rows: int) -> None:
    """``rows`` finished jobs in the schedd's history, as ``to_history`` writes them."""
    # lazy: the schedd's own writer of history rows, so the rows are the real thing
    from roost.daemons.schedd.store import Store

    store = Store(str(db), fsync=False)
    try:
        now = int(time.time())
        base = {"Cmd": "/bin/true", "Owner": os.environ.get("USER", "nobody"), "JobStatus": 4, "ExitCode": 0,
                "Iwd": "/tmp", "RequestCpus": 1, "RequestMemory": 128, "JobUniverse": 5,
                "Requirements": "/Expr((TARGET.Arch == \"X86_64\") && (TARGET.OpSys == \"LINUX\") && "
                                "(TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory))/"}
        # a finished job's ad is ~2.5 KB (~70 attributes): the rest as attributes of that size
        base.update({f"HistoryAttr{k:02d}": f"value of a finished job's attribute number {k}" for k in range(50)})
        ops = []
        for i in range(rows):
            cid, proc = 1000 + i // 1000, i % 1000
            ad = dict(base, ClusterId=cid, ProcId=proc, CompletionDate=now, GlobalJobId=f"x#{cid}.{proc}#{now}")
            ops.append((cid, proc, base["Owner"], now, 4, json.dumps(ad)))
        store.write_now([(
            "INSERT OR REPLACE INTO history (cluster, proc, owner, completion, status, ad) VALUES (?, ?, ?, ?, ?, ?)",
            ops, True)])
        store.write_now([("INSERT OR REPLACE INTO meta (key, value) VALUES ('next_cluster', ?)",
                          (str(1000 + rows // 1000 + 1),))])
    finally:
        store.close()
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def history_run(rows: int) -> tuple[float, float]:
    with BenchPool(NO_STARTD) as bp:
        bp.pool.daemon_off("schedd")
        db = Path(bp.home) / "spool" / "job_queue.db"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the schedd has let go of its file
            try:
                bp.schedd_pid()
            except Exception:
                break
            if bp.pool.status()["daemons"]["SCHEDD"].get("pid") in (None, 0):
                break
            time.sleep(0.05)
        _fake_history(db, rows)
        t0 = time.perf_counter()
        bp.pool.daemon_on("schedd")
        took = _wait_answer(bp, 0, t0)
        return took, _cpu_s(_schedd_pid_after(bp, None))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--history", type=int, default=200_000)
    p.add_argument("--arguments", action="store_true", help="arguments = $(Process): every proc differs")
    p.add_argument("--only", default="", help="queue or history")
    a = p.parse_args()
    got: dict[str, list[float]] = {}
    for _ in range(a.runs):
        if a.only in ("", "queue"):
            for k, v in queue_run(a.jobs, a.arguments).items():
                got.setdefault(k, []).append(v)
        if a.only in ("", "history"):
            for name, rows in (("history_start", a.history), ("empty_start", 0)):  # (0: the start alone)
                took, cpu = history_run(rows)
                got.setdefault(name, []).append(took)
                got.setdefault(f"{name}_cpu", []).append(cpu)
    for name, values in got.items():
        unit, goal = GOALS[name]
        v = statistics.median(values)
        print(f"{name}: {v:.3f} {unit} (reference: {goal:g}, ratio: {goal / v if v else 0:.2f}) "
              f"[{len(values)} runs, min {min(values):.3f}, max {max(values):.3f}]", flush=True)


if __name__ == "__main__":
    main()
