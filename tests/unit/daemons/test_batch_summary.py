"""QUERY_JOBS ``batch``: the schedd counts procs per cluster and status instead of
sending a row per job, and ``roost q``'s batch view prints from the counts exactly what
it prints from every job (the same queue both ways, real JobQueue, no sockets)."""

from __future__ import annotations

import asyncio
import io

from roost.cli.q_batch import batch_view as _batch_view
from roost.cli.q_cmd import BATCH_ATTRS, _raw_totals
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.queries import batch_summary
from roost.daemons.schedd.store import Store


def _every_job(q: JobQueue, projection: list[str], jobs=None) -> dict:
    """The answer without ``batch``: each cluster's ad once, each proc's differences."""
    wanted = {n.lower() for n in projection}
    clusters, rows = {}, []
    for job in q.select() if jobs is None else jobs:
        clusters.setdefault(str(job.cluster.id), {k: v for k, v in job.cluster.ad.items() if k.lower() in wanted})
        d = {k: v for k, v in job.diff_obj().items() if k.lower() in wanted}
        rows.append([job.cluster.id, job.proc, d])
    return {"clusters": clusters, "jobs": rows}


def _queue(tmp_path) -> JobQueue:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()

    def add(owner: str, ad: dict, diffs: list[dict]) -> int:
        cid = q.new_cluster_id()
        ad = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": owner, "QDate": 1700000000 + cid,
              "TotalSubmitProcs": len(diffs), **ad}
        asyncio.run(q.store.commit(q.add_cluster(cid, owner, ad, diffs, (f"h#{cid}.", "#1"))))
        return cid

    big = add("alice", {}, [{"ProcId": i, "Arguments": str(i)} for i in range(300)])
    add("alice", {"JobBatchName": "sweep"}, [{"ProcId": i} for i in range(20)])
    add("alice", {"JobBatchName": "sweep"}, [{"ProcId": i} for i in range(5)])
    # procs of their own batch (a proc's own JobBatchName), and one submitted held
    mixed = add("bob", {}, [{"ProcId": 0}, {"ProcId": 1, "JobBatchName": "own"}, {"ProcId": 2, "JobStatus": 5}])
    add("carol", {"DAG_NodesTotal": 10, "DAG_NodesDone": 4, "JobUniverse": 7}, [{"ProcId": 0}])

    async def change() -> None:
        for p in (3, 4, 150):
            await q.store.commit(q.set(q.job(big, p), {"RemoteHost": "slot1@h"}, 2))
        await q.store.commit(q.set(q.job(big, 7), {"HoldReason": "x"}, 5))
        for p in (0, 299):  # the first and last leave: the id range and DONE follow
            await q.store.commit(q.to_history(q.job(big, p), 1700000500))
        await q.store.commit(q.set(q.job(mixed, 0), {}, 2))

    asyncio.run(change())
    return q


def _text(raw: dict) -> str:
    out = io.StringIO()
    _batch_view(raw, out, None)
    return out.getvalue()


def test_counts_print_what_every_job_prints(tmp_path):
    q = _queue(tmp_path)
    full = _every_job(q, BATCH_ATTRS)
    summary = batch_summary(q, None, BATCH_ATTRS)
    assert len(summary["jobs"]) == 1  # bob's proc of its own batch; the rest counted
    assert len(summary["counts"]) == 5
    text = _text(summary)
    assert text == _text(full)
    assert "1.1-298" in text and "sweep" in text and "own" in text
    assert _raw_totals(summary) == _raw_totals(full)
    q.store.close()


def test_counts_of_one_owner_and_of_a_constraint(tmp_path):
    q = _queue(tmp_path)
    summary = batch_summary(q, "alice", BATCH_ATTRS)
    mine = [j for j in q.select(owner="alice")]
    assert _text(summary) == _text(_every_job(q, BATCH_ATTRS, mine))
    running = [j for j in q.select() if j.status == 2]  # what a constraint matched
    summary = batch_summary(q, None, BATCH_ATTRS, iter(running))
    assert _text(summary) == _text(_every_job(q, BATCH_ATTRS, running))
    assert _raw_totals(summary) == {"Running": 4}
    q.store.close()
