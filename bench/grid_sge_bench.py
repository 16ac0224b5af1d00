"""``grid_resource = batch sge`` against a private Grid Engine cell (tests/sgekit.py).

Runnable on its own (as root: the execd runs jobs as their users)::

    .venv/bin/python bench/grid_sge_bench.py [--runs 5] [--jobs 50]

- ``grid_sge_turnaround``: one ``/bin/true`` grid job, from ``roost submit`` to
  Completed in the queue (qsub as its owner, the scheduler, the run, the exit file,
  the poll at ``GRIDMANAGER_JOB_PROBE_INTERVAL = 0.5``); reference: the same job
  ``qsub``'d by hand until it leaves qstat (ratio: roost / qsub alone). Medians.
- ``grid_sge_poll``: one poll's ``qstat -u '*' -xml`` and its parse with ``--jobs``
  pending jobs; reference: with one (ratio: many / one: what one poll for all jobs
  costs as the queue grows). Medians.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from poolkit import start_pool, stop_pool  # noqa: E402

from roost.core.gridsge import parse_qstat_xml  # noqa: E402
from sgekit import SgeCell, missing  # noqa: E402

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def qsub_until_gone(cell: SgeCell) -> float:
    t0 = time.monotonic()
    out = cell.run(*NOBODY, "qsub", "-terse", "-wd", "/tmp", "-o", "/dev/null", "-e", "/dev/null", "-b", "y",
                   "/bin/true").stdout.strip()
    while f"<JB_job_number>{out}</JB_job_number>" in cell.run("qstat", "-u", "*", "-xml").stdout:
        time.sleep(0.05)
    return time.monotonic() - t0


def poll_seconds(cell: SgeCell, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        parse_qstat_xml(cell.run("qstat", "-u", "*", "-xml").stdout)
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=50)
    args = ap.parse_args()
    why = missing()
    if why:
        print(f"skipped: {why}")
        return 0
    with SgeCell(slots=2) as cell:
        home = Path(f"/tmp/roost-sgebench-{os.getpid()}")
        work = Path(f"/tmp/roost-sgebench-work-{os.getpid()}")
        work.mkdir()
        pool = start_pool(home, cell.config_lines() + "GRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n")
        try:
            (work / "job.sub").write_text("universe = grid\ngrid_resource = batch sge\nexecutable = /bin/true\n"
                                          "transfer_executable = false\nqueue\n")
            roost_t, qsub_t = [], []
            for _ in range(args.runs):
                t0 = time.monotonic()
                done = pool.roost("submit", "job.sub", cwd=work)
                jid = re.search(r"submitted to cluster (\d+)", done.stdout).group(1) + ".0"  # type: ignore[union-attr]
                pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=120, what="completed")
                roost_t.append(time.monotonic() - t0)
                qsub_t.append(qsub_until_gone(cell))
        finally:
            stop_pool(pool)
            subprocess.run(["rm", "-rf", str(home), str(work)], check=False)
        r, q = statistics.median(roost_t), statistics.median(qsub_t)
        print(f"grid_sge_turnaround: {r:.2f} s (reference: qsub alone {q:.2f} s, ratio: {r / q:.2f})")
        cell.run(*NOBODY, "qsub", "-terse", "-h", "-wd", "/tmp", "-o", "/dev/null", "-e", "/dev/null", "-b", "y",
                 "/bin/true")
        one = poll_seconds(cell, args.runs)
        for _ in range(args.jobs - 1):
            cell.run(*NOBODY, "qsub", "-terse", "-h", "-wd", "/tmp", "-o", "/dev/null", "-e", "/dev/null", "-b", "y",
                     "/bin/true")
        many = poll_seconds(cell, args.runs)
        print(f"grid_sge_poll: {many * 1000:.1f} ms for {args.jobs} jobs (reference: 1 job {one * 1000:.1f} ms, "
              f"ratio: {many / one:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
