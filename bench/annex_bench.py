"""Glide-ins (``roost annex -slurm``) against a private Slurm on this host (tests/slurmkit.py).

Runnable on its own (as root: slurmd runs jobs as their users)::

    .venv/bin/python bench/annex_bench.py [--runs 3] [--jobs 1000]

A personal pool without a startd of its own (only glide-ins run its jobs) and a Slurm
node of 2 CPUs:
- ``annex_first_job``: one job waiting for a glide-in (``requirements = IsGlidein``),
  then ``roost annex -slurm 1``: seconds from the command to the job running on the
  glide-in (sbatch, Slurm's scheduling, the startd's start, its first ad, a cycle, the
  claim); median of ``--runs``.
- ``annex_throughput``: ``--jobs`` jobs of ``/bin/true`` submitted at once to a pool
  whose glide-in (2 CPUs) is up, until the last completed, jobs/s; reference: the same
  number of jobs through Slurm alone, one ``sbatch --wrap=true`` each, until Slurm
  lists none (ratio: glide-in / Slurm). Medians of ``--runs``.
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
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from pool_bench import BenchPool  # noqa: E402
from slurmkit import SlurmCluster, missing  # noqa: E402


def wait(pred, timeout: float, what: str, step: float = 0.1) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit(f"annex_bench: timed out waiting for {what}")
        time.sleep(step)


def jobs_in(pool: BenchPool, cluster: str, status: int) -> int:
    from roost.api.schedd import Schedd

    s = Schedd(pool.home)
    try:
        if status == 4:  # history answers for finished jobs, in the queue or not
            ads = s.history(f"ClusterId == {cluster}", ["JobStatus"])
        else:
            ads = s.query_objs(f"ClusterId == {cluster}", ["JobStatus"])
        return sum(1 for a in ads if a.get("JobStatus") == status)
    finally:
        s.close()


def submit(pool: BenchPool, work: Path, body: str) -> str:
    (work / "job.sub").write_text(body)
    done = pool.roost("submit", "job.sub", cwd=work)
    if done.returncode != 0:
        raise SystemExit(f"annex_bench: submit failed: {done.stderr}")
    return re.search(r"submitted to cluster (\d+)", done.stdout).group(1)  # type: ignore[union-attr]


def annex(pool: BenchPool, name: str, *args: str) -> list[str]:
    done = pool.roost("annex", "-slurm", "1", "-name", name, "-memory", "512", *args)
    if done.returncode != 0:
        raise SystemExit(f"annex_bench: roost annex failed: {done.stderr}")
    return re.search(r"\(jobs? ([\d, ]+)\)", done.stdout).group(1).split(", ")  # type: ignore[union-attr]


def glidein_up(pool: BenchPool, name: str) -> bool:
    from roost.api.collector import Collector

    c = Collector(pool.home)
    try:
        return bool(c.query_objs("Machine", f'AnnexName =?= "{name}"', ["Name"]))
    finally:
        c.close()


def slurm_empty(slurm: SlurmCluster) -> bool:
    return not slurm.run("squeue", "-h", check=False).stdout.strip()


def first_job(pool: BenchPool, slurm: SlurmCluster, work: Path, run: int) -> float:
    cluster = submit(pool, work, "executable = /bin/sleep\narguments = 1\nrequirements = TARGET.IsGlidein =?= True\nqueue\n")
    t0 = time.monotonic()
    annex(pool, f"first{run}", "-idle", "3s")
    wait(lambda: jobs_in(pool, cluster, 2) + jobs_in(pool, cluster, 4) >= 1, 180, "the job on the glide-in", 0.05)
    took = time.monotonic() - t0
    wait(lambda: slurm_empty(slurm), 120, "the idle glide-in to end")
    return took


def through_glidein(pool: BenchPool, slurm: SlurmCluster, work: Path, n: int, run: int) -> float:
    name = f"tp{run}"
    annex(pool, name, "-idle", "5s", "-cpus", "2")
    wait(lambda: glidein_up(pool, name), 180, "the glide-in")
    cluster = submit(pool, work, f"executable = /bin/true\nrequirements = TARGET.IsGlidein =?= True\nqueue {n}\n")
    t0 = time.monotonic()
    wait(lambda: jobs_in(pool, cluster, 4) >= n, 60 + n, f"{n} jobs through the glide-in", 0.2)
    took = time.monotonic() - t0
    wait(lambda: slurm_empty(slurm), 120, "the idle glide-in to end")
    return n / took


def through_slurm(slurm: SlurmCluster, work: Path, n: int) -> float:
    t0 = time.monotonic()
    for _ in range(n):
        slurm.run("sbatch", "--parsable", "--wrap=true", "--cpus-per-task=1", "--mem=64",
                  f"--output={work}/slurm-%j.out", "--job-name=bench-true")
    wait(lambda: slurm_empty(slurm), 60 + 2 * n, f"{n} jobs through Slurm", 0.2)
    return n / (time.monotonic() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1000)
    args = ap.parse_args()
    why = missing()
    if why:
        print(f"annex_bench: skipped: {why}")
        return 0
    work = Path(f"/tmp/roost-annex-bench-{os.getpid()}")
    work.mkdir()
    work.chmod(0o777)
    with SlurmCluster(cpus=2, memory_mb=1024) as slurm:
        extra = (f"\nSLURM_CONF = {slurm.conf}\nANNEX_POLL_INTERVAL = 1\nNEGOTIATOR_INTERVAL = 2\n"
                 "NEGOTIATOR_MIN_INTERVAL = 0.05\nUPDATE_INTERVAL = 5\nSTARTD_DETECT_CONTAINERS = False\n"
                 "STARTD_DETECT_JAVA = False\nSTARTD_DETECT_CRIU = False\n"
                 "DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD\n")
        try:
            with BenchPool(extra) as pool:
                firsts = [first_job(pool, slurm, work, r) for r in range(args.runs)]
                print(f"annex_first_job: {statistics.median(firsts):.2f} s (runs: {', '.join(f'{t:.2f}' for t in firsts)})",
                      flush=True)
                glide, alone = [], []
                for r in range(args.runs):
                    glide.append(through_glidein(pool, slurm, work, args.jobs, r))
                    alone.append(through_slurm(slurm, work, args.jobs))
                    print(f"  run {r}: glide-in {glide[-1]:.1f} jobs/s, Slurm alone {alone[-1]:.1f} jobs/s", flush=True)
                g, s = statistics.median(glide), statistics.median(alone)
                print(f"annex_throughput: {g:.1f} jobs/s for {args.jobs} jobs (reference: Slurm alone, sbatch each: "
                      f"{s:.1f} jobs/s, ratio: {g / s:.2f})")
        finally:
            slurm.run("scancel", "-u", str(os.getuid()), check=False)
            wait(lambda: slurm_empty(slurm), 60, "Slurm empty")
            subprocess.run(["rm", "-rf", str(work)], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
