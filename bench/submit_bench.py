"""Submit benchmark: expand a ``queue 100000`` description into job ads.

Prints ``figure: value unit (reference: value, ratio: x.xx)`` lines, medians
of several runs. References: condor_submit submits a 100,000-proc cluster to
a personal pool in 18-24 s (HTCondor 25; published figure, 20 s used), and
``htcondor2.Submit`` run here in the same process: it parses and expands
macros offline, but its ``jobs()``/``procs()`` raise NotImplementedError
without a schedd, so the same-process reference is parsing plus per-item
``expand()`` of the per-proc commands over ``itemdata()``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

N = 100_000
RUNS = 3
TEXT = f"""
executable = /bin/echo
arguments = $(Process) --seed $(Process)
output = out.$(Process)
error = err.$(Process)
log = sweep.log
request_memory = 2GB
request_cpus = 1
queue {N}
"""
ITEM_TEXT = "executable = /bin/echo\narguments = $(x) $(y)\noutput = out.$(x)\nqueue x,y from (\n" + "".join(
    f"{i} {i * 2}\n" for i in range(N)) + ")\n"


def _expand(text: str) -> int:
    from roost.submit import parse_submit

    desc = parse_submit(text, file="bench.sub", cwd="/tmp", env={})
    clusters = desc.expand(cluster_id=1, qdate=0)
    return sum(len(c) for c in clusters)


def _dry_run_json(text: str) -> int:
    """Expansion plus the condor_q -json text of every proc (what -dry-run prints)."""
    from roost.submit import parse_submit
    from roost.submit.wire import iter_json

    clusters = parse_submit(text, file="bench.sub", cwd="/tmp", env={}).expand(cluster_id=1, qdate=0)
    return sum(len(piece) for piece in iter_json(clusters))


def _timed(fn, *a) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn(*a)
    return time.perf_counter() - t


def _memory_child() -> None:
    """Peak memory growth of one expansion, measured alone in a fresh process."""
    import tracemalloc

    import roost.submit  # noqa: F401  (import cost is not part of the figure)

    tracemalloc.start()
    n = _expand(TEXT)
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"procs": n, "peak_mb": peak / 2**20}))


def _htcondor_reference() -> float | None:
    try:
        import htcondor2
    except ImportError:
        return None

    def run() -> None:
        s = htcondor2.Submit(ITEM_TEXT)
        for row in s.itemdata():
            s["x"], s["y"] = row["x"], row["y"]
            s.expand("arguments")
            s.expand("output")

    return statistics.median(_timed(run) for _ in range(RUNS))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-child":
        _memory_child()
        return
    assert _expand(TEXT) == N
    t = statistics.median(_timed(_expand, TEXT) for _ in range(RUNS))
    print(f"submit_expand_queue_100000: {t:.3f} s (reference: 20.000 s condor_submit, ratio: {t / 20.0:.2f})")
    t_json = statistics.median(_timed(_dry_run_json, TEXT) for _ in range(RUNS))
    print(f"submit_dry_run_json_100000: {t_json:.3f} s (reference: 20.000 s condor_submit, ratio: {t_json / 20.0:.2f})")
    t_items = statistics.median(_timed(_expand, ITEM_TEXT) for _ in range(RUNS))
    ref = _htcondor_reference()
    if ref is not None:
        print(f"submit_expand_queue_from_100000_rows: {t_items:.3f} s (reference: {ref:.3f} s htcondor2.Submit itemdata+expand, ratio: {t_items / ref:.2f})")
    else:
        print(f"submit_expand_queue_from_100000_rows: {t_items:.3f} s (reference: n/a htcondor2 not installed, ratio: n/a)")
    peaks = []
    for _ in range(RUNS):
        out = subprocess.run([sys.executable, __file__, "--memory-child"], capture_output=True, text=True, check=True)
        peaks.append(json.loads(out.stdout)["peak_mb"])
    pk = statistics.median(peaks)
    print(f"submit_expand_queue_100000_peak_memory: {pk:.1f} MB (reference: 200.0 MB budget, ratio: {pk / 200.0:.2f})")
    # The second figure for this script: write 100,000 events and read them back.
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import eventlog_bench

    eventlog_bench.main([])


if __name__ == "__main__":
    main()
