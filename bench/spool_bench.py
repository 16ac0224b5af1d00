"""condor_submit -spool and condor_transfer_data (issue 26): bytes through the schedd,
and whether it keeps answering others while they move.

Runnable on its own::

    .venv/bin/python bench/spool_bench.py [--runs N] [--mb 200]

Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``, the
median of ``--runs`` runs, in a fresh personal pool (bench/pool_bench.py's):
- ``spool_in``: MB/s of ``roost submit -spool`` of a job with one ``--mb`` MB input
  (the whole command: submit, SPOOL_FILES, the schedd's fsync and rename). Reference:
  ``cp`` of the file into a directory beside the spool and ``sync``, in the same run.
- ``transfer_data``: MB/s of ``roost transfer_data`` of that job once it has copied
  its input to an output of the same size. Reference: the same ``cp`` + ``sync``.
- ``q_during_spool``: median milliseconds of a QUERY_JOBS round trip on another
  connection while a ``--mb`` MB spool is under way. Reference: the same round trip
  with nothing moving, in the same run (ratio below 1: slower while spooling).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from pool_bench import BenchPool  # noqa: E402

JOB = ("executable = /bin/cp\narguments = big.in big.out\ntransfer_executable = false\n"
       "transfer_input_files = big.in\nshould_transfer_files = YES\nqueue\n")


def _cp_sync(src: Path, dest_dir: Path) -> float:
    t = time.perf_counter()
    subprocess.run(["cp", str(src), str(dest_dir / "copy")], check=True)
    subprocess.run(["sync"], check=True)
    took = time.perf_counter() - t
    (dest_dir / "copy").unlink()
    return took


def _query_ms(n: int) -> list[float]:
    from roost.api.schedd import Schedd

    s = Schedd()
    out = []
    try:
        s.call("QUERY_JOBS", totals=True)
        for _ in range(n):
            t = time.perf_counter()
            s.call("QUERY_JOBS", totals=True)
            out.append((time.perf_counter() - t) * 1000)
            time.sleep(0.01)
    finally:
        s.close()
    return out


def one_run(bp: BenchPool, mb: int, work: Path) -> dict[str, tuple[float, float]]:
    sub = work / "job"
    shutil.rmtree(sub, ignore_errors=True)
    sub.mkdir(parents=True)
    sub.chmod(0o777)
    with open(sub / "big.in", "wb") as f:
        for _ in range(mb):
            f.write(os.urandom(1 << 20))
    (sub / "s.sub").write_text(JOB)
    ref = mb / _cp_sync(sub / "big.in", bp.home)
    idle = statistics.median(_query_ms(50))
    during: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        while not stop.is_set():
            during.extend(_query_ms(5))

    t = threading.Thread(target=probe)
    t.start()
    start = time.perf_counter()
    done = bp.roost("submit", "-spool", "s.sub", cwd=sub)
    took = time.perf_counter() - start
    stop.set()
    t.join()
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip())
    cluster = next(ln for ln in done.stdout.splitlines() if "submitted to cluster" in ln).split()[-1].rstrip(".")
    deadline = time.monotonic() + 300
    while bp.roost("q", cluster, "-af", "JobStatus").stdout.strip() != "4":
        if time.monotonic() > deadline:
            raise RuntimeError("the job did not complete")
        time.sleep(0.2)
    start = time.perf_counter()
    got = bp.roost("transfer_data", cluster)
    fetch = time.perf_counter() - start
    if got.returncode != 0 or (sub / "big.out").stat().st_size != mb << 20:
        raise RuntimeError(got.stderr.strip() or "big.out not fetched")
    return {"spool_in": (mb / took, ref), "transfer_data": (mb / fetch, ref),
            "q_during_spool": (statistics.median(during) if during else float("nan"), idle)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--mb", type=int, default=200)
    ns = p.parse_args()
    results: dict[str, list[tuple[float, float]]] = {}
    work = Path(f"/tmp/roost-spool-bench-{os.getpid()}")
    try:
        with BenchPool() as bp:
            for _ in range(ns.runs):
                for k, v in one_run(bp, ns.mb, work).items():
                    results.setdefault(k, []).append(v)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    units = {"spool_in": ("MB/s", "higher"), "transfer_data": ("MB/s", "higher"), "q_during_spool": ("ms", "lower")}
    for name, pairs in results.items():
        v = statistics.median(a for a, _ in pairs)
        ref = statistics.median(b for _, b in pairs)
        unit, better = units[name]
        ratio = (v / ref if better == "higher" else ref / v) if v and ref else float("nan")
        print(f"{name}: {v:.2f} {unit} (reference: {ref:.2f}, ratio: {ratio:.2f}) [{len(pairs)} runs, {ns.mb} MB]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
