"""GET_REQUESTS' autoclusters over a real JobQueue: a run of procs without differences
joins its cluster's autocluster without a signature each (the million-job path), and
the answer is what a signature per job gives."""

from __future__ import annotations

import asyncio

from roost.core.jobpolicy import HELD, IDLE
from roost.daemons.schedd.autocluster_ids import AutoClusters
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import Store

AD = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Requirements": "/Expr(true)/",
      "RequestMemory": 100, "QDate": 1}


def _queue(tmp_path) -> JobQueue:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()

    def add(diffs: list[dict], **extra) -> None:
        cid = q.new_cluster_id()
        asyncio.run(q.store.commit(q.add_cluster(cid, "alice", {**AD, **extra}, diffs, (f"h#{cid}.", "#1"))))

    add([{"ProcId": i} for i in range(300)])
    # procs that differ in a significant attribute, between runs of plain ones
    add([{"ProcId": i, **({"RequestMemory": 200} if i % 3 == 0 else {})} for i in range(30)])
    add([{"ProcId": i, "Arguments": str(i)} for i in range(20)])
    return q


def _by_signature(ac: AutoClusters, q: JobQueue) -> dict[int, list[tuple[int, int]]]:
    """The autoclusters and their members from a signature per job (the plain way)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for job in list(q.idle_jobs("alice")):
        if not job.busy:
            out.setdefault(ac.autocluster_of(job, ac.signature(job)), []).append(job.key)
    return out


def test_requests_group_as_a_signature_per_job_does(tmp_path):
    q = _queue(tmp_path)
    q.take_idle(q.job(1, 5))  # a busy job is left out
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    got = ac.requests("alice", None)
    want = _by_signature(ac, q)
    assert {r["autocluster"]: r["count"] for r in got} == {a: len(m) for a, m in want.items()}
    assert sorted(r["count"] for r in got) == [10, 299 + 20 + 20]  # RequestMemory 200, and the rest
    for a, members in want.items():  # members handed out in queue order
        taken = []
        while (job := ac.take(a)) is not None:
            taken.append(job.key)
            q.take_idle(job)
        assert taken == members
    q.store.close()


def test_a_job_priority_orders_the_members(tmp_path):
    q = _queue(tmp_path)
    asyncio.run(q.store.commit(q.set(q.job(1, 250), {"JobPrio": 5})))
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    got = ac.requests("alice", None)
    first = ac.take(got[0]["autocluster"])
    assert first is not None and first.key == (1, 250)
    q.store.close()


def _made(q: JobQueue, cid: int) -> int:
    """How many of the cluster's procs are Jobs (the rest plain ranges)."""
    return len(q.clusters[cid]._procs)


def test_a_plain_block_is_counted_not_made_and_its_jobs_made_as_taken(tmp_path):
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    q.idle  # noqa: B018 -- the idle lists made (a schedd that negotiated): the submit below stays ranges
    cid = q.new_cluster_id()
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", dict(AD), [{"ProcId": i} for i in range(5000)],
                                             (f"h#{cid}.", "#1"))))
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    got = ac.requests("alice", None)
    assert [r["count"] for r in got] == [5000] and _made(q, cid) == 1  # the sample only
    a = got[0]["autocluster"]
    taken = []
    for _ in range(3):
        job = ac.take(a)
        assert job is not None
        q.take_idle(job)
        taken.append(job.proc)
    assert taken == [0, 1, 2] and _made(q, cid) == 3
    # a walk of the block (a reused claim's window) starts past the procs taken
    assert next(q.idle_jobs("alice")).proc == 3 and q._blocks[cid].start == 3 and _made(q, cid) == 4
    # a proc made and changed since in what the matchmaker sees: its own autocluster;
    # one given back: offered again, once
    asyncio.run(q.store.commit(q.set(q.job(cid, 10), {"RequestMemory": 999})))
    q.give_back_idle(q.job(cid, 1))
    got = ac.requests("alice", None)
    assert sorted(r["count"] for r in got) == [1, 4997]
    assert sum(1 for _ in q.idle_jobs("alice")) == 4998 == q.totals_named()["Idle"] - 2
    by_count = {r["count"]: r["autocluster"] for r in got}
    changed = ac.take(by_count[1])
    assert changed is not None and changed.proc == 10 and ac.take(by_count[1]) is None
    q.take_idle(changed)
    rest = []
    while (job := ac.take(by_count[4997])) is not None:
        q.take_idle(job)
        rest.append(job.proc)
    assert sorted(rest) == [1] + list(range(3, 10)) + list(range(11, 5000)) and len(set(rest)) == len(rest)
    assert not list(q.idle_jobs("alice")) and ac.requests("alice", None) == []
    q.store.close()


def test_a_run_taken_from_goes_on_when_its_cluster_is_made_whole_meanwhile(tmp_path):
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    cid = q.new_cluster_id()
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", dict(AD), [{"ProcId": i} for i in range(300)],
                                             (f"h#{cid}.", "#1"))))
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    a = ac.requests("alice", None)[0]["autocluster"]
    first = ac.take(a)
    assert first is not None and first.proc == 0
    q.take_idle(first)
    assert len(list(q.select())) == 300 and _made(q, cid) == 300  # a query that lists every job
    rest = []
    while (job := ac.take(a)) is not None:
        q.take_idle(job)
        rest.append(job.proc)
    assert rest == list(range(1, 300))
    q.store.close()


def test_a_raised_job_of_a_plain_block_comes_first_without_making_the_block(tmp_path):
    """condor_prio on one job of a big ``queue N``: that job is offered first, the rest
    follow in order once each, and the block's other procs are not all made into Jobs."""
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    q.idle  # noqa: B018 -- the idle lists made: the submits below stay ranges
    cids = []
    for qdate in (1, 2):
        cid = q.new_cluster_id()
        cids.append(cid)
        asyncio.run(q.store.commit(q.add_cluster(cid, "alice", {**AD, "QDate": qdate},
                                                 [{"ProcId": i} for i in range(3000)], (f"h#{cid}.", "#1"))))
    first, second = cids
    asyncio.run(q.store.commit(q.set(q.job(second, 2500), {"JobPrio": 7})))
    asyncio.run(q.store.commit(q.set(q.job(first, 1000), {"JobPrio": -3})))
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    got = ac.requests("alice", None)
    assert [r["count"] for r in got] == [6000]
    assert _made(q, first) + _made(q, second) <= 6  # the two raised or lowered, and samples
    a = got[0]["autocluster"]
    order = []
    while (job := ac.take(a)) is not None:
        q.take_idle(job)
        order.append(job.key)
    assert order[0] == (second, 2500)  # raised: first of all
    assert order[-1] == (first, 1000)  # lowered: after every job at priority 0
    rest = order[1:-1]
    assert rest == [(first, p) for p in range(3000) if p != 1000] + [(second, p) for p in range(3000) if p != 2500]
    q.store.close()


def test_a_released_proc_keeps_its_place_among_its_blocks_when_a_priority_orders_them(tmp_path):
    """With a JobPrio in play, a proc held and released (listed on its own) is taken in
    submit order among its cluster's plain procs, not after all of them."""
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    q.idle  # noqa: B018 -- the idle lists made: the submit below stays ranges
    cid = q.new_cluster_id()
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", dict(AD), [{"ProcId": i} for i in range(6)],
                                             (f"h#{cid}.", "#1"))))
    asyncio.run(q.store.commit(q.set(q.job(cid, 5), {"JobPrio": 3})))
    asyncio.run(q.store.commit(q.set(q.job(cid, 1), {}, HELD)))
    asyncio.run(q.store.commit(q.set(q.job(cid, 1), {}, IDLE)))
    ac = AutoClusters(q, lambda c: c.owner, lambda: None)
    got = ac.requests("alice", None)
    assert [r["count"] for r in got] == [6]
    order = []
    while (job := ac.take(got[0]["autocluster"])) is not None:
        q.take_idle(job)
        order.append(job.proc)
    assert order == [5, 0, 1, 2, 3, 4]
    q.store.close()
