"""Matching a constraint cluster by cluster (constraintmatch.py) selects exactly the jobs,
in the same order, that asking each job selects: plain, shaped and changed procs, several
statuses, constraints that read a status, a proc's own value, its ProcId, or an
attribute of the cluster ad that reads one."""

from __future__ import annotations

import asyncio

from roost.classad import ExprTree
from roost.core.jobpolicy import HELD, IDLE
from roost.daemons.schedd.constraintmatch import matching, matching_clusters
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.queries import _references
from roost.daemons.schedd.store import Store

# each with how many of the 650 jobs it selects (so that no case passes by selecting none)
CONSTRAINTS = {
    "ClusterId >= 0": 650, "JobStatus == 1": 632, "JobStatus == 5": 18, 'Arguments == "x 7"': 1,
    "ProcId < 10 || ProcId == 150": 43, 'Foo =?= "bar"': 1, "Derived": 1, "Small": 40,
    "ClusterId == 4 && JobStatus != 5": 33,
    "false": 0, "undefined_thing > 3": 0,
}


def _queue(tmp_path) -> JobQueue:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()

    def submit(diffs, **ad) -> int:
        cid = q.new_cluster_id()
        base = {"Cmd": "/bin/true", "ClusterId": cid, "JobStatus": IDLE, "Owner": "alice", **ad}
        asyncio.run(q.store.commit(q.add_cluster(cid, "alice", base, diffs, (f"h#{cid}.", "#1"))))
        return cid

    submit([{"ProcId": i} for i in range(200)], Small="/Expr(ProcId < 10)/")  # plain
    shaped = submit([{"ProcId": 0}] + [{"ProcId": i, "Arguments": f"x {i}"} for i in range(1, 200)],
                    Small="/Expr(ProcId < 10)/")
    changed = submit([{"ProcId": i} for i in range(200)], Derived="/Expr(Foo =?= \"bar\")/",
                     Small="/Expr(ProcId < 10)/")
    mixed = submit([{"ProcId": i} for i in range(50)], Small="/Expr(ProcId < 10)/")
    asyncio.run(q.store.commit(q.set(q.job(shaped, 3), {}, HELD)))
    asyncio.run(q.store.commit(q.set(q.job(changed, 150), {"Foo": "bar"})))
    for p in range(0, 50, 3):
        asyncio.run(q.store.commit(q.set(q.job(mixed, p), {}, HELD)))
    return q


def test_cluster_by_cluster_selects_what_each_job_selects(tmp_path):
    q = _queue(tmp_path)
    for text, n in CONSTRAINTS.items():
        expr = ExprTree(text)
        refs = _references(expr)
        want = [j.key for j in matching(q.select(), expr, refs) if j is not None]
        parts = [p for p in matching_clusters(list(q.clusters.values()), expr, refs, tick=100) if p is not None]
        got = [j.key for part in parts for j in part]
        assert got == want and len(got) == n, (text, len(want))
    everything = ExprTree("ClusterId >= 0")
    assert sum(len(p) for p in matching_clusters(list(q.clusters.values()), everything, _references(everything))
               if p) == 650
    q.store.close()
