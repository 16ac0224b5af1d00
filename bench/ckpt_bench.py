"""Checkpoint traffic (issue 15): upload speed through the schedd, and what the
checkpoint scheduler does to the peaks of many jobs checkpointing on one interval.

Runnable on its own::

    .venv/bin/python bench/ckpt_bench.py [--runs N] [--only upload,sched]
        [--jobs 48 --mb 20 --interval 10 --checkpoints 2 --limit 2 --bandwidth 0]

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``, the
median of ``--runs`` runs; a ratio above 1 means roost (or the scheduler) is better.
No targets: these are measurements.

Figures (each in a fresh personal pool under a temporary ROOST_HOME, 8 static slots, as
``pool_bench``; the schedd logs one line per checkpoint upload, with the time it was
queued, started and ended and its bytes, and the figures come from those lines):
- ``ckpt_upload``: one job writes a ``--upload-mb`` MB checkpoint and exits with its
  checkpoint code, five times; MB/s of each upload as the schedd sees it (its first read
  to the checkpoint stored: written, fsynced, renamed into place). Reference: ``cp`` of
  a file of the same size into a directory beside the spool, measured in the same run
  (``ckpt_upload_cp_sync``, informational: ``cp`` then ``sync`` of the copy, which is
  what the schedd's fsync pays for).
- ``ckpt_peak_uploads`` and ``ckpt_peak_mbps``: ``--jobs`` jobs of one cluster, each
  asking for a periodic checkpoint signal (``+WantCheckpointSignal``, SIGUSR2) every
  ``--interval`` seconds and writing a ``--mb`` MB checkpoint when it comes, ending after
  ``--checkpoints`` checkpoints, on 8 slots. Run twice: without the scheduler
  (``MAX_CONCURRENT_CHECKPOINT_UPLOADS = 0``, ``CHECKPOINT_STAGGER = false``: each job is
  signalled one interval after its start, as HTCondor) as the reference, and with it
  (``--limit`` uploads at once, staggered phases, ``--bandwidth`` MB/s budget, 0: none).
  Peak uploads in flight at once, and peak MB/s over any 1-second window (each upload's
  bytes spread evenly over its time). ``ckpt_wait`` (informational): median seconds an
  upload waited for admission with the scheduler; ``ckpt_makespan`` (informational):
  submit to the last job's end, with (reference: without). ``*_limit_only``: a third
  run with the admission limit alone (not staggered), to show what admission does by
  itself: the uploads that arrive together queue (``ckpt_wait_limit_only``).

The issue's figure is 200 jobs x 20 MB every 60 s (``--jobs 200 --interval 60``, about
an hour a run); the default is scaled down in jobs and time (48 jobs, every 10 s, two
checkpoints each: about six minutes for all figures) and says so in its output.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool, run_steps, wait_terminated  # noqa: E402

UPLOAD_LINE = re.compile(r"job (\S+): checkpoint upload queued ([\d.]+) start ([\d.]+) end ([\d.]+) "
                         r"bytes (\d+) (ok|failed)")
MB = 1_000_000

# One checkpoint of $1 bytes per run, $2 runs, then done. The last run removes the
# checkpoint files, so that the jobs' final outputs (every new file) are not all written
# to one name in the submit directory at once.
WRITER = """#!/bin/sh
n=0
if [ -f count.txt ]; then n=$(cat count.txt); fi
if [ "$n" -ge "$2" ]; then rm -f ckpt.dat count.txt; exit 0; fi
head -c "$1" /dev/zero > ckpt.dat
echo $((n+1)) > count.txt
exit 85
"""

# Waits for its checkpoint signal (SIGUSR2), then writes $1 bytes and exits with its
# checkpoint code; after $2 checkpoints it is done (and removes them, as WRITER).
ON_SIGNAL = """#!/bin/sh
n=0
if [ -f count.txt ]; then n=$(cat count.txt); fi
if [ "$n" -ge "$2" ]; then rm -f ckpt.dat count.txt; exit 0; fi
trap 'head -c "$1" /dev/zero > ckpt.dat; echo $((n+1)) > count.txt; exit 85' USR2
while :; do sleep 1 & wait $!; done
"""

# figure -> (unit, "lower"/"higher" is better)
FIGURES: dict[str, tuple[str, str]] = {
    "ckpt_upload": ("MB/s", "higher"),
    "ckpt_upload_cp_sync": ("MB/s", "higher"),
    "ckpt_peak_uploads": ("uploads", "lower"),
    "ckpt_peak_mbps": ("MB/s", "lower"),
    "ckpt_wait": ("s", "lower"),
    "ckpt_makespan": ("s", "lower"),
    "ckpt_peak_uploads_limit_only": ("uploads", "lower"),
    "ckpt_peak_mbps_limit_only": ("MB/s", "lower"),
    "ckpt_wait_limit_only": ("s", "lower"),
}
REFS: dict[str, list[float]] = {}  # figure -> the reference's values, measured in the same run
NOTES: dict[str, str] = {}


def uploads(home: Path) -> list[tuple[str, float, float, float, int, bool]]:
    """(job, queued, start, end, bytes, ok) of every checkpoint upload the schedd logged."""
    text = (home / "log" / "SchedLog").read_text(errors="replace")
    return [(m[1], float(m[2]), float(m[3]), float(m[4]), int(m[5]), m[6] == "ok")
            for m in UPLOAD_LINE.finditer(text)]


def peak_concurrent(spans: list[tuple[float, float]]) -> int:
    """Most spans open at one instant (an end and a start at the same instant: not both)."""
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans], key=lambda x: (x[0], x[1]))
    now = peak = 0
    for _, d in edges:
        now += d
        peak = max(peak, now)
    return peak


def peak_rate(spans: list[tuple[float, float, int]], window: float = 1.0) -> float:
    """Most bytes per second over any ``window`` (each span's bytes spread evenly over it).
    The windowed sum is piecewise linear, so its maximum has a window edge on a span edge."""
    def carried(lo: float, hi: float) -> float:
        total = 0.0
        for s, e, n in spans:
            if e <= s:
                total += n if lo <= s <= hi else 0
                continue
            overlap = min(e, hi) - max(s, lo)
            if overlap > 0:
                total += n * overlap / (e - s)
        return total

    edges = {t for s, e, _ in spans for t in (s, e)}
    best = 0.0
    for t in edges:
        best = max(best, carried(t, t + window), carried(t - window, t))
    return best / window


def _job_dir(bp: BenchPool, name: str, script: str, sub: str) -> Path:
    d = bp.home / name
    d.mkdir()
    (d / "job.sh").write_text(script)
    (d / "job.sh").chmod(0o755)
    (d / "job.sub").write_text(sub)
    return d


def _submit(bp: BenchPool, d: Path) -> None:
    done = bp.roost("submit", "job.sub", cwd=d)
    if done.returncode != 0:
        raise RuntimeError(f"roost submit failed: {done.stderr.strip()}")


def bench_upload(runs: int, size_mb: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ckpt_upload": []}
    cp: list[float] = []
    cp_sync: list[float] = []
    nbytes = size_mb * MB
    per_job = 5
    for i in range(runs):
        with BenchPool() as bp:
            d = _job_dir(bp, f"up{i}", WRITER,
                         f"executable = job.sh\narguments = {nbytes} {per_job}\ncheckpoint_exit_code = 85\n"
                         "transfer_checkpoint_files = ckpt.dat, count.txt\nlog = job.log\n"
                         "should_transfer_files = YES\nqueue\n")
            _submit(bp, d)
            wait_terminated(d / "job.log", 1, timeout=600, interval=0.2)
            for _job, _q, start, end, n, ok in uploads(bp.home):
                if ok and n >= nbytes and end > start:
                    out["ckpt_upload"].append(n / MB / (end - start))
            # the reference: cp of a file of the same size, beside the spool
            src, dst = bp.home / "src.dat", bp.home / "copy.dat"
            with open(src, "wb") as f:
                for _ in range(size_mb):
                    f.write(bytes(MB))
            for _ in range(per_job):
                dst.unlink(missing_ok=True)
                t0 = time.perf_counter()
                subprocess.run(["cp", str(src), str(dst)], check=True)
                cp.append(size_mb / (time.perf_counter() - t0))
                dst.unlink()
                t0 = time.perf_counter()
                subprocess.run(["cp", str(src), str(dst)], check=True)
                subprocess.run(["sync", str(dst)], check=True)
                cp_sync.append(size_mb / (time.perf_counter() - t0))
    REFS["ckpt_upload"] = cp
    out["ckpt_upload_cp_sync"] = cp_sync
    NOTES["ckpt_upload"] = f"{size_mb} MB checkpoints; reference: cp of the same size"
    NOTES["ckpt_upload_cp_sync"] = "cp + sync of the copy (informational)"
    return out


def _sched_run(jobs: int, mb: int, interval: float, checkpoints: int, extra: str,
               name: str) -> tuple[int, float, list[float], float]:
    """One run: (peak uploads at once, peak MB/s, admission waits, makespan)."""
    with BenchPool(extra) as bp:
        d = _job_dir(bp, name, ON_SIGNAL,
                     f"executable = job.sh\narguments = {mb * MB} {checkpoints}\ncheckpoint_exit_code = 85\n"
                     "transfer_checkpoint_files = ckpt.dat, count.txt\nlog = job.log\n"
                     "should_transfer_files = YES\n+WantCheckpointSignal = true\n"
                     f"+CheckpointSig = \"SIGUSR2\"\n+CheckpointInterval = {interval:g}\nqueue {jobs}\n")
        t0 = time.time()
        _submit(bp, d)
        timeout = (jobs / 8 + 1) * (checkpoints + 2) * interval * 2 + 300
        wait_terminated(d / "job.log", jobs, timeout=timeout, interval=0.5)
        makespan = time.time() - t0
        ups = [u for u in uploads(bp.home) if u[5]]
        if len(ups) < jobs * checkpoints:
            raise RuntimeError(f"{len(ups)} uploads logged, {jobs * checkpoints} expected")
        spans = [(s, e) for _, _, s, e, _, _ in ups]
        return (peak_concurrent(spans), peak_rate([(s, e, n) for _, _, s, e, n, _ in ups]) / MB,
                [s - q for _, q, s, _, _, _ in ups], makespan)


def bench_sched(runs: int, jobs: int, mb: int, interval: float, checkpoints: int,
                limit: int, bandwidth: float) -> dict[str, list[float]]:
    off = "\nMAX_CONCURRENT_CHECKPOINT_UPLOADS = 0\nCHECKPOINT_STAGGER = false\n"
    on = (f"\nMAX_CONCURRENT_CHECKPOINT_UPLOADS = {limit}\nCHECKPOINT_STAGGER = true\n"
          f"CHECKPOINT_UPLOAD_BANDWIDTH = {bandwidth:g}\n")
    limit_only = f"\nMAX_CONCURRENT_CHECKPOINT_UPLOADS = {limit}\nCHECKPOINT_STAGGER = false\n"
    res: dict[str, list[float]] = {"ckpt_peak_uploads": [], "ckpt_peak_mbps": [], "ckpt_wait": [],
                                   "ckpt_makespan": [], "ckpt_peak_uploads_limit_only": [],
                                   "ckpt_peak_mbps_limit_only": [], "ckpt_wait_limit_only": []}
    for key in res:
        REFS[key] = []
    for i in range(runs):
        p_off, r_off, w_off, m_off = _sched_run(jobs, mb, interval, checkpoints, off, f"off{i}")
        p_on, r_on, w_on, m_on = _sched_run(jobs, mb, interval, checkpoints, on, f"on{i}")
        p_lim, r_lim, w_lim, _m = _sched_run(jobs, mb, interval, checkpoints, limit_only, f"lim{i}")
        for key, v_on, v_off in (("ckpt_peak_uploads", p_on, p_off), ("ckpt_peak_mbps", r_on, r_off),
                                 ("ckpt_wait", statistics.median(w_on), statistics.median(w_off)),
                                 ("ckpt_makespan", m_on, m_off),
                                 ("ckpt_peak_uploads_limit_only", p_lim, p_off),
                                 ("ckpt_peak_mbps_limit_only", r_lim, r_off),
                                 ("ckpt_wait_limit_only", statistics.median(w_lim), statistics.median(w_off))):
            res[key].append(float(v_on))
            REFS[key].append(float(v_off))
    scale = (f"{jobs} jobs x {mb} MB every {interval:g} s, {checkpoints} checkpoints each, 8 slots"
             + ("" if (jobs, mb, interval) == (200, 20, 60) else "; the issue's 200 x 20 MB / 60 s scaled down"))
    sched = f"scheduler: {limit or 'no'} limit, staggered, {bandwidth:g} MB/s budget" if bandwidth else \
        f"scheduler: at most {limit or 'unlimited'} at once, staggered, no bandwidth budget"
    NOTES["ckpt_peak_uploads"] = f"{scale}; {sched}; reference: no scheduler"
    NOTES["ckpt_peak_mbps"] = "1 s windows; the same runs"
    NOTES["ckpt_wait"] = "median wait for admission; the same runs (informational)"
    NOTES["ckpt_makespan"] = "first submit to last job end; the same runs (informational)"
    NOTES["ckpt_peak_uploads_limit_only"] = f"admission alone: at most {limit} at once, not staggered"
    NOTES["ckpt_peak_mbps_limit_only"] = "admission alone"
    NOTES["ckpt_wait_limit_only"] = "admission alone: median wait for admission (informational)"
    return res


def report(name: str, values: list[float] | None, error: str | None = None) -> bool:
    unit, better = FIGURES[name]
    if not values:
        print(f"{name}: n/a {unit} (reference: n/a, ratio: n/a) -- {error or 'not measured'}", flush=True)
        return False
    v = statistics.median(values)
    ref_values = REFS.get(name)
    if ref_values:
        ref = statistics.median(ref_values)
        # below a millisecond (waits that did not happen) a ratio says nothing
        ratio_v = (ref / v if better == "lower" else v / ref) if v > 1e-3 and ref > 1e-3 else None
        ratio = "n/a" if ratio_v is None else f"{ratio_v:.2f}"
        ref_s = f"{ref:.3g}"
    else:
        ref_s, ratio = "none", "n/a"
    shown = f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    note = f"; {NOTES[name]}" if name in NOTES else ""
    print(f"{name}: {shown} {unit} (reference: {ref_s}, ratio: {ratio}) "
          f"[{len(values)} values, min {min(values):.3g}, max {max(values):.3g}{note}]", flush=True)
    return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1, help="runs per figure (default 1: each run is minutes)")
    p.add_argument("--only", default=None, help="comma-separated: upload,sched")
    p.add_argument("--upload-mb", type=int, default=100, help="checkpoint size for ckpt_upload (MB)")
    p.add_argument("--jobs", type=int, default=48)
    p.add_argument("--mb", type=int, default=20, help="checkpoint size of each job (MB)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between a job's checkpoints")
    p.add_argument("--checkpoints", type=int, default=2, help="checkpoints per job")
    p.add_argument("--limit", type=int, default=2, help="MAX_CONCURRENT_CHECKPOINT_UPLOADS with the scheduler")
    p.add_argument("--bandwidth", type=float, default=0.0, help="CHECKPOINT_UPLOAD_BANDWIDTH with the scheduler")
    ns = p.parse_args()
    only = set((ns.only or "upload,sched").split(","))
    unknown = only - {"upload", "sched"}
    if unknown:
        p.error(f"unknown figure(s): {', '.join(sorted(unknown))}")
    runs = max(1, ns.runs)
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "roost")], env=env, check=False,
                   stdout=subprocess.DEVNULL)
    steps: list[tuple[str, Callable[[], dict[str, list[float]]]]] = []
    if "upload" in only:
        steps.append(("ckpt_upload", lambda: bench_upload(runs, ns.upload_mb)))
    if "sched" in only:
        steps.append(("ckpt_peak_uploads", lambda: bench_sched(runs, ns.jobs, ns.mb, ns.interval,
                                                               ns.checkpoints, ns.limit, ns.bandwidth)))
    return 0 if run_steps(steps, report) else 1


if __name__ == "__main__":
    sys.exit(main())
