"""The schedd's answer to its first negotiation over a 1,000,000-job plain cluster (issue 27).

Runnable on its own::

    .venv/bin/python bench/first_negotiation_bench.py [--jobs 1000000] [--matches 1000] [--runs 3]

In process, over the schedd's real queue (``JobQueue`` on a real SQLite ``Store`` in a
temporary directory) and its real ``AutoClusters``: one ``queue N`` cluster of
``/bin/true`` submitted as SUBMIT adds it (``add_cluster``, a proc ``{"ProcId": i}``
each), then, timed, what a first negotiation asks of the schedd:

- ``get_requests``: the idle lists made and GET_REQUESTS answered (``AutoClusters.
  requests``): the event loop is blocked for all of it;
- ``matches``: MATCHES of ``--matches`` jobs (``take``, then ``take_idle``), as the
  shadows would start them;
- ``jobs_made``: how many of the cluster's procs were made into ``Job`` objects by then
  (the rest stay ranges: plainprocs.py);
- ``submit_after``: a second cluster of N submitted once the idle lists exist.

Figures: medians of the runs, CPU seconds of this process (``time.process_time``;
the machine may be shared), each against 0.1 s (reference: the time a query may wait).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from roost.daemons.schedd.autocluster_ids import AutoClusters  # noqa: E402
from roost.daemons.schedd.jobqueue import JobQueue  # noqa: E402
from roost.daemons.schedd.store import Store  # noqa: E402

AD = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Requirements": "/Expr(true)/",
      "RequestMemory": 128, "RequestCpus": 1, "QDate": 1700000000, "JobUniverse": 5}
REFERENCE = 0.1


def _submit(q: JobQueue, n: int) -> None:
    cid = q.new_cluster_id()
    ops = q.add_cluster(cid, "alice", dict(AD), [{"ProcId": i} for i in range(n)], (f"h#{cid}.", "#1700000000"))
    asyncio.run(q.store.commit(ops))


def one_run(n: int, matches: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        q = JobQueue(Store(str(Path(d) / "q.db"), fsync=False))
        q.load()
        q._idle = None  # a schedd that has not negotiated since it started (as after a load)
        _submit(q, n)
        ac = AutoClusters(q, lambda c: c.owner, lambda: None)
        t0 = time.process_time()
        got = ac.requests("alice", None)
        t1 = time.process_time()
        assert sum(r["count"] for r in got) == n, got
        for _ in range(matches):
            job = ac.take(got[0]["autocluster"])
            assert job is not None
            q.take_idle(job)
        t2 = time.process_time()
        made = len(q.clusters[1]._procs)
        t3 = time.process_time()
        _submit(q, n)
        t4 = time.process_time()
        q.store.close()
        return {"get_requests": t1 - t0, "matches": t2 - t1, "jobs_made": float(made), "submit_after": t4 - t3}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--matches", type=int, default=1000)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    runs = [one_run(a.jobs, a.matches) for _ in range(a.runs)]
    for name in ("get_requests", "matches", "submit_after"):
        v = statistics.median(r[name] for r in runs)
        print(f"{name}_{a.jobs}: {v:.3f} s cpu (reference: {REFERENCE:.3f}, ratio: {REFERENCE / v if v else 0:.2f}) "
              f"[{a.runs} runs, min {min(r[name] for r in runs):.3f}, max {max(r[name] for r in runs):.3f}]")
    print(f"jobs_made_{a.jobs}: {statistics.median(r['jobs_made'] for r in runs):.0f} "
          f"(after {a.matches} matches)")


if __name__ == "__main__":
    main()
