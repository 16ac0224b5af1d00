"""Grid universe overhead against Slurm itself (issue 30): N short jobs through roost's
grid manager (``universe = grid``, ``grid_resource = batch slurm``) against the same N
submitted with ``sbatch`` directly, to the same private Slurm (tests/slurmkit.py), with
the same options (core.gridbatch.sbatch_args makes both command lines). Needs root and
Debian's slurm-wlm and munge (``make test`` installs them)::

    .venv/bin/python bench/grid_bench.py [--jobs 50] [--runs 3] [--probe 10]

Each run times submit-to-all-complete both ways, alternating which goes first:

- ``sbatch``: the N ``sbatch`` calls one after another, as a user's loop does, to
  Slurm's ``EndTime`` of the last (whole seconds, read once all ended: ``scontrol``
  every 0.1 s would load slurmctld on a small host and slow what it measures);
- ``sbatch_parallel``: the same with 8 ``sbatch`` calls at a time (roost's grid manager
  runs its sbatch calls concurrently: the stricter reference);
- ``roost``: ``roost submit`` of one ``queue N`` cluster, then the user log read every
  0.1 s until it holds N terminated events (005): the job done as its user sees it,
  output staged back.

Figures (medians): both totals, their ratio (goal <= 1.2), and roost's extra seconds
per job. ``--probe`` is GRIDMANAGER_JOB_PROBE_INTERVAL (10 s, the default).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pool_bench import NO_STARTD, BenchPool  # noqa: E402
from roost.core.gridbatch import parse_sbatch, parse_scontrol, sbatch_args  # noqa: E402
from slurmkit import SlurmCluster, missing  # noqa: E402

MEMORY_MB = 16
DONE = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL"}


def by_sbatch(slurm: SlurmCluster, n: int, tag: str, parallel: int = 1) -> float:
    """Seconds from the first ``sbatch`` to Slurm saying all N ended; ``parallel``
    sbatch calls at a time (1: a user's loop)."""
    work = Path(f"/tmp/roost-gb-{os.getpid()}-{tag}")
    work.mkdir(mode=0o755)
    script = work / "job.sh"
    script.write_text("#!/bin/sh\nexec /bin/true\n")
    script.chmod(0o755)

    def one(i: int) -> str | None:
        args = sbatch_args({"RequestCpus": 1, "RequestMemory": MEMORY_MB}, name=f"direct.{tag}.{parallel}.{i}",
                           sandbox=str(work), script=str(script))
        return parse_sbatch(slurm.run("sbatch", *args).stdout)

    wall0 = time.time()
    with ThreadPoolExecutor(parallel) as pool:
        want = set(pool.map(one, range(n)))
    while True:  # once a second: scontrol every 0.1 s would load slurmctld and slow what it measures
        time.sleep(1.0)
        records = [r for r in parse_scontrol(slurm.run("scontrol", "show", "job", "-o").stdout)
                   if r["JobId"] in want]
        if len(records) == len(want) and all(r.get("JobState", "").split("+")[0] in DONE for r in records):
            # Slurm's own end time (whole seconds, so up to 1 s short): the same moment 005 is for roost
            took = max(time.mktime(time.strptime(r["EndTime"], "%Y-%m-%dT%H:%M:%S")) for r in records) - wall0
            break
    subprocess.run(["rm", "-rf", str(work)], check=False)
    return took


def _stamps(text: str, code: str) -> list[float]:
    """Wall-clock times of the ``code`` events in a user log (HTCondor's ISO format)."""
    out = []
    for m in re.finditer(rf"^{code} \(\S+\) (\S+ \S+)", text, re.M):
        stamp = m.group(1)
        for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S", "%m/%d %H:%M:%S"):
            try:
                out.append(time.mktime(time.strptime(stamp.split(".")[0], fmt.split(".")[0]))
                           + (float("0." + stamp.split(".")[1]) if "." in stamp else 0.0))
                break
            except ValueError:
                continue
    return out


def _slurm_ends(slurm: SlurmCluster, cluster: str) -> dict[int, float]:
    """Proc -> Slurm's EndTime of each of the cluster's Slurm jobs."""
    out = slurm.run("scontrol", "show", "job", "-o").stdout
    return {int(r["JobName"].split(".")[-2]): time.mktime(time.strptime(r["EndTime"], "%Y-%m-%dT%H:%M:%S"))
            for r in parse_scontrol(out)
            if f".{cluster}." in r.get("JobName", "") and r.get("EndTime", "Unknown") != "Unknown"}


def _lags(text: str, ends: dict[int, float]) -> list[float]:
    """Per job: its 005 in the user log after Slurm's EndTime (whole seconds both)."""
    out = []
    for m in re.finditer(r"^005 \(\d+\.(\d+)\.\d+\) (\S+ \S+)", text, re.M):
        proc, stamp = int(m.group(1)), m.group(2).split(".")[0]
        if proc in ends:
            out.append(time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) - ends[proc])
    return out


def by_roost(bp: BenchPool, slurm: SlurmCluster, n: int, tag: str) -> float:
    """Seconds from ``roost submit`` to the user log holding N terminated events; where
    the time went on a ``#`` line (last job in Slurm, Slurm's last end, last 005)."""
    work = bp.home / f"grid-{tag}"
    work.mkdir()
    (work / "job.sub").write_text(f"""universe = grid
grid_resource = batch slurm
executable = /bin/true
transfer_executable = false
request_memory = {MEMORY_MB}
log = job.log
queue {n}
""")
    t0, wall0 = time.perf_counter(), time.time()
    done = bp.roost("submit", "job.sub", cwd=work)
    if done.returncode != 0:
        raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")
    cluster = re.search(r"submitted to cluster (\d+)", done.stdout).group(1)  # type: ignore[union-attr]
    log = work / "job.log"
    while True:
        text = log.read_text() if log.exists() else ""
        if len(re.findall(r"^005 \(", text, re.M)) >= n:
            took = time.perf_counter() - t0
            sub, term, ends = _stamps(text, "027"), _stamps(text, "005"), _slurm_ends(slurm, cluster)
            if sub and term and ends:
                lags = _lags(text, ends)
                print(f"#   roost: submit command {max(_stamps(text, '000')) - wall0:.1f} s, last in Slurm "
                      f"{max(sub) - wall0:.1f} s, Slurm's last end {max(ends.values()) - wall0:.1f} s, last 005 "
                      f"{max(term) - wall0:.1f} s; 005 after Slurm's end: median {statistics.median(lags):.0f} s, "
                      f"max {max(lags):.0f} s", flush=True)
            return took
        if time.perf_counter() - t0 > 600:
            raise RuntimeError(f"roost: not all {n} jobs done in 600 s")
        time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--probe", type=float, default=10.0, help="GRIDMANAGER_JOB_PROBE_INTERVAL, seconds")
    ap.add_argument("--slurm-cpus", type=int, default=8, help="CPUs the private Slurm's node says it has")
    a = ap.parse_args()
    why = missing()
    if why:
        print(f"grid_bench: skipped: {why}")
        return 0
    direct: list[float] = []
    parallel: list[float] = []
    grid: list[float] = []
    # config_overrides: the node may say it has more CPUs than this host (short jobs, not CPU-bound)
    with SlurmCluster(cpus=a.slurm_cpus, memory_mb=a.slurm_cpus * 256,
                      extra_conf="SlurmdParameters=config_overrides") as slurm:
        extra = f"{NO_STARTD}SLURM_CONF = {slurm.conf}\nGRIDMANAGER_JOB_PROBE_INTERVAL = {a.probe:g}\n"
        pool = BenchPool(extra)
        os.rmdir(pool.home)  # a home other users may pass, as a pool's: the jobs run as nobody in its spool
        pool.home = Path(f"/tmp/roost-gridbench-{os.getpid()}")
        pool.home.mkdir(mode=0o755)
        pool.env["ROOST_HOME"] = str(pool.home)
        with pool as bp:
            for run in range(a.runs):
                order = (0, 1, 2) if run % 2 == 0 else (2, 1, 0)
                for which in order:
                    if which == 0:
                        direct.append(by_sbatch(slurm, a.jobs, f"r{run}"))
                    elif which == 1:
                        parallel.append(by_sbatch(slurm, a.jobs, f"r{run}", parallel=8))
                    else:
                        grid.append(by_roost(bp, slurm, a.jobs, f"r{run}"))
                print(f"# run {run}: sbatch {direct[-1]:.2f} s, sbatch x8 {parallel[-1]:.2f} s, "
                      f"roost {grid[-1]:.2f} s", flush=True)
    d, p, g = statistics.median(direct), statistics.median(parallel), statistics.median(grid)
    n = a.jobs
    print(f"sbatch_{n}: {d:.2f} s")
    print(f"sbatch_parallel_{n}: {p:.2f} s")
    print(f"grid_{n}: {g:.2f} s (reference: {d:.2f} s sbatch, ratio: {g / d:.2f})")
    print(f"grid_{n}_vs_parallel: {g:.2f} s (reference: {p:.2f} s sbatch x8, ratio: {g / p:.2f}, goal: <= 1.20)")
    print(f"grid_overhead_per_job: {(g - p) / n * 1000:.0f} ms (reference: 0 ms sbatch x8)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
