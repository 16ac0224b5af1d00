"""The README's main job: start a personal pool, run a parameter sweep on it, show the result.

``python -m roost.demo`` (what ``make demo`` runs):

1. starts a personal pool with 8 slots in a fresh ROOST_HOME (``roost up``),
2. submits ``examples/sweep/sweep.sub``: a few hundred jobs, each a Monte Carlo
   estimate of pi with its own seed, reading an input file and writing an
   output file that roost transfers back,
3. shows progress while the jobs run (a bar on a terminal),
4. combines every job's output into one estimate of pi with its standard error,
5. prints the pool's figures (jobs per second, submit-to-finish latency), and
6. stops the pool (``roost down``) whatever happened.

The pool's directory is kept (it holds the outputs and logs the demo points at);
``--clean`` removes it afterwards.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from roost.api.errors import PoolError
from roost.api.pool import Pool
from roost.api.schedd import Schedd
from roost.cli.progress import Progress
from roost.config import write_personal_config
from roost.eventlog import EventType, read_events
from roost.vocabulary import JobStatus

SWEEP_DIR = Path(__file__).resolve().parents[2] / "examples" / "sweep"
DEMO_CONFIG = """
# roost demo: 8 slots on however many cores this host has
NUM_CPUS = 8
use FEATURE : StaticSlots
"""


def _say(text: str) -> None:
    print(text, flush=True)


def prepare_work(work: Path, njobs: int, samples: int) -> Path:
    """Copy the sweep into ``work`` and write one input file per job."""
    work.mkdir(parents=True, exist_ok=True)
    for name in ("sweep.sub", "pi.py"):
        shutil.copy2(SWEEP_DIR / name, work / name)
    (work / "inputs").mkdir(exist_ok=True)
    (work / "logs").mkdir(exist_ok=True)
    for i in range(njobs):
        (work / "inputs" / f"params.{i}.txt").write_text(f"{1000 + i} {samples}\n")
    return work / "sweep.sub"


def aggregate(work: Path, njobs: int) -> dict[str, float]:
    """Combine every job's ``seed samples hits`` into one estimate of pi."""
    total = hits = 0
    found = 0
    for i in range(njobs):
        path = work / f"result.{i}.txt"
        if not path.exists():
            continue
        _seed, n, h = (int(x) for x in path.read_text().split())
        total += n
        hits += h
        found += 1
    if not total:
        raise RuntimeError(f"no job wrote a result file in {work}")
    p = hits / total
    return {"jobs": found, "samples": total, "pi": 4 * p, "stderr": 4 * math.sqrt(p * (1 - p) / total)}


def latencies(log: Path) -> list[float]:
    """Submit-to-terminated seconds of each job, from the job event log."""
    submitted: dict[tuple[int, int], float] = {}
    out: list[float] = []
    for ev in read_events(log, strict=False):
        key = (ev.cluster, ev.proc)
        if ev.type == EventType.SUBMIT:
            submitted[key] = ev.timestamp
        elif ev.type == EventType.JOB_TERMINATED and key in submitted:
            out.append(ev.timestamp - submitted[key])
    return out


def wait_for_sweep(schedd: Any, ids: list[str], timeout: float) -> dict[str, Any]:
    """Wait with a progress display; fail fast if every unfinished job is held."""
    bar = Progress()
    deadline = time.monotonic() + timeout
    while True:
        try:
            got = schedd.wait(ids, timeout=1.0, progress=lambda g: bar.update(
                int(g["done"]), int(g["total"]), g.get("counts") or {}))
        except TimeoutError:
            got = None
        if got is not None:
            bar.update(int(got["done"]), int(got["total"]), got.get("counts") or {}, final=True)
            return got
        totals = schedd.totals()
        held_n, idle_n, running_n = (totals.get(JobStatus.TOTALS[s]) for s in (
            JobStatus.HELD, JobStatus.IDLE, JobStatus.RUNNING))
        if held_n and not idle_n and not running_n:
            held = schedd.query_objs(f"JobStatus == {JobStatus.HELD}", ["HoldReason"])
            reason = held[0].get("HoldReason") if held else "?"
            raise RuntimeError(f"{len(held)} job(s) are held, e.g. {reason}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sweep did not finish within {timeout:g} s")


def run(home: Path, njobs: int, samples: int, timeout: float) -> int:
    cfg = write_personal_config(home)
    if "roost demo" not in cfg.read_text():
        with open(cfg, "a") as f:
            f.write(DEMO_CONFIG)
    pool = Pool(home)
    _say(f"== starting a personal pool in {home}")
    t0 = time.monotonic()
    pool.start(timeout=60)
    _say(f"   up in {time.monotonic() - t0:.2f} s with {pool.slots()} slots")
    master_pid = pool.master_pid()
    try:
        work = home / "sweep"
        sub = prepare_work(work, njobs, samples)
        _say(f"== submitting {njobs} jobs ({samples:,} samples each) from {sub}")
        schedd = Schedd(home)
        cwd = os.getcwd()
        os.chdir(work)
        try:
            t_submit = time.monotonic()
            result = schedd.submit_file(str(sub), overrides={"NJOBS": str(njobs)})
        finally:
            os.chdir(cwd)
        t_submitted = time.monotonic()
        _say(f"   {result.num_procs} job(s) submitted to cluster {result.cluster}. "
             f"({t_submitted - t_submit:.3f} s)")
        _say("== running")
        wait_for_sweep(schedd, result.job_ids(), timeout)
        elapsed = time.monotonic() - t_submit
        failed = schedd.history(f"ClusterId == {result.cluster} && (ExitCode =!= 0 || JobStatus == 3)",
                                ["ProcId", "ExitCode", "ExitSignal"])
        if failed:
            first = failed[-1]
            err = work / "logs" / f"pi.{first['ProcId']}.err"
            detail = err.read_text(errors="replace").strip().splitlines()[-1:] if err.exists() else []
            _say(f"   {len(failed)} of {njobs} job(s) failed; job {result.cluster}.{first['ProcId']}: exit code "
                 f"{first.get('ExitCode')}{': ' + detail[0] if detail else ''}")
        est = aggregate(work, njobs)
        lat = sorted(latencies(work / "sweep.log"))
        _say("")
        _say("== result")
        _say(f"   pi = {est['pi']:.6f} +/- {est['stderr']:.6f}   "
             f"(from {est['jobs']} jobs, {est['samples']:,} samples)")
        _say(f"   true pi = {math.pi:.6f}; off by {abs(est['pi'] - math.pi) / est['stderr']:.2f} standard errors")
        _say("== pool figures")
        _say(f"   {njobs} jobs in {elapsed:.2f} s: {njobs / elapsed:.1f} jobs/s on {pool.slots()} slots")
        if lat:
            _say(f"   submit -> terminated per job: median {lat[len(lat) // 2]:.0f} s, "
                 f"max {lat[-1]:.0f} s (event log, whole seconds)")
        _say(f"   job outputs: {work}/result.*.txt; logs: {home}/log")
        return 0
    finally:
        _say("== stopping the pool")
        try:
            pool.stop(timeout=60)
        finally:
            if master_pid:
                try:
                    os.killpg(master_pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m roost.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=300, help="jobs in the sweep (default 300)")
    p.add_argument("--samples", type=int, default=200_000, help="random points per job (default 200,000)")
    p.add_argument("--home", default=None, help="ROOST_HOME to use (default: a new temporary directory)")
    p.add_argument("--clean", action="store_true",
                   help="remove the temporary ROOST_HOME (outputs and logs) afterwards")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for the sweep")
    ns = p.parse_args(argv)
    temp = ns.home is None
    home = Path(tempfile.mkdtemp(prefix="roost-demo-", dir="/tmp")) if temp else Path(ns.home).resolve()
    try:
        return run(home, ns.jobs, ns.samples, ns.timeout)
    except (PoolError, RuntimeError, OSError) as e:
        print(f"roost demo: {e}", file=sys.stderr)
        print(f"roost demo: logs are in {home / 'log'}", file=sys.stderr)
        temp = False  # keep them to look at
        return 1
    finally:
        if temp and ns.clean:
            shutil.rmtree(home, ignore_errors=True)
        elif temp:
            _say(f"   kept {home} (outputs, logs); `rm -rf {home}` removes it")


if __name__ == "__main__":
    sys.exit(main())
