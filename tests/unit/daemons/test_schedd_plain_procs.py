"""Plain procs (plainprocs.py): after a restart, a sparse cluster's procs untouched since
submit stay ranges until something touches one. Whatever touches them (a lookup, a
change, a removal of part of a range, an iteration, the idle lists) sees exactly the
jobs a full build gave, and a restart with a mix of touched and untouched procs, or a
kill -9 in the middle of removing part of a range, keeps every job exactly once."""

from __future__ import annotations

import asyncio
import sqlite3

from roost.core.jobpolicy import HELD, IDLE, REMOVED, RUNNING
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.plainprocs import Plain
from roost.daemons.schedd.queries import batch_summary
from roost.daemons.schedd.store import Store

from .removal_child import kill_mid_removal

N = 2000


def _queue(path) -> JobQueue:
    q = JobQueue(Store(str(path), fsync=False))
    q.load()
    return q


def _state(q: JobQueue) -> dict:
    """Everything a user or a shadow sees of each job (iterating makes every proc a Job)."""
    return {job.key: (job.status, job.merged(), job.claim, job.diff_obj()) for job in q.select()}


def _submit(q: JobQueue, diffs: list[dict]) -> int:
    cid = q.new_cluster_id()
    ad = {"Cmd": "/bin/true", "JobStatus": IDLE, "Owner": "alice", "QDate": 1700000000}
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", ad, diffs, (f"host#{cid}.", "#1700000000"))))
    return cid


def _commit(q: JobQueue, ops) -> None:
    asyncio.run(q.store.commit(ops))


def _plain(q: JobQueue, cid: int) -> int:
    """How many of the cluster's procs are still plain (not made into Jobs)."""
    plain = q.clusters[cid]._plain
    return plain.n if plain is not None else 0


def test_plain_ranges_less_the_taken_procs():
    plain = Plain([(0, 5), (10, 13)], IDLE, shaped=True, owns=[[f"v{i}"] for i in range(1, 5)] + [["a"], ["b"], ["c"]],
                  first=1)
    for p in (0, 4, 11):
        plain.take(p)
    plain.take(7)  # never submitted: nothing to take
    assert plain.n == 5 and not plain.has(4) and plain.has(3) and not plain.has(7) and plain.covers(4)
    assert [(lo, hi, o) for lo, hi, o in plain.runs()] == [(1, 4, [("v1",), ("v2",), ("v3",)]), (10, 11, [("a",)]),
                                                           (12, 13, [("c",)])]
    assert plain.own(0) is None and plain.own(12) == ("c",)
    assert (plain.first_proc(), plain.last_proc()) == (1, 12)
    assert not Plain.fits([[0, 5], [3, 8]]) and Plain.fits([[0, 5], [5, 8]])


def test_a_restart_makes_no_jobs_until_one_is_looked_up(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(N)])
    before = _state(q)
    q.store.close()
    again = _queue(db)
    cluster = again.clusters[cid]
    assert _plain(again, cid) == N and not cluster.touched()
    assert again.totals_named()["Idle"] == N and cluster.size() == N and cluster.counts == {IDLE: N}
    assert again.has_idle()
    job = again.job(cid, 17)
    assert job is not None and job is again.job(cid, 17) and cluster.holds(job)
    assert _plain(again, cid) == N - 1 and again.job(cid, N) is None
    assert (cluster.first_proc(), cluster.last_proc()) == (0, N - 1)
    assert _state(again) == before  # every proc, as a full build gave it
    assert cluster._plain is None and again.job(cid, 17) is job  # the one made first is kept
    assert list(cluster.procs) == list(range(N))
    again.store.close()


def test_the_idle_lists_are_made_at_the_first_ask_in_submit_order(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    a = _submit(q, [{"ProcId": i} for i in range(5)])
    b = _submit(q, [{"ProcId": i} for i in range(3)])
    _commit(q, q.set(q.job(a, 2), {}, HELD))
    q.store.close()
    again = _queue(db)
    assert again._idle is None
    taken = again.job(b, 1)
    assert taken is not None
    again.take_idle(taken)  # handed to a claim before anyone asked for the lists
    assert [j.key for j in again.idle_jobs("alice")] == [(a, 0), (a, 1), (a, 3), (a, 4), (b, 0), (b, 2)]
    again.give_back_idle(taken)
    assert (b, 1) in {j.key for j in again.idle_jobs("alice")}
    again.store.close()


def test_changes_hold_and_partial_removal_survive_a_restart_with_the_rest_plain(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(N)])
    q.store.close()
    q = _queue(db)
    _commit(q, q.set(q.job(cid, 3), {"Foo": "bar"}))
    _commit(q, q.set(q.job(cid, 4), {}, HELD))
    run = q.job(cid, 5)
    q.set_claim(run, {"claim_id": "c1", "startd_address": "<127.0.0.1:1>", "slot_name": "slot1"})
    _commit(q, q.set(run, {}, RUNNING))
    gone = [(q.job(cid, p), {"RemoveReason": "test"}) for p in range(100, 200)]  # condor_rm of part of the range
    _commit(q, q.finish_many(gone, REMOVED, 1700000100))
    _commit(q, q.to_history(q.job(cid, 1999), 1700000200) or [("SELECT 1", ())])
    assert _plain(q, cid) == N - 104
    before = _state(q)
    q.store.close()

    again = _queue(db)
    cluster = again.clusters[cid]
    assert _plain(again, cid) == N - 104  # the 3 changed ones are Jobs; the 101 gone are gone
    assert {j.proc for j in cluster.touched()} == {3, 4, 5}
    assert again.totals_named()["Idle"] == N - 103 and again.totals_named()["Held"] == 1  # (3 is idle)
    assert set(again.running) == {(cid, 5)} and again.running[(cid, 5)].claim["claim_id"] == "c1"
    assert again.job(cid, 150) is None and again.job(cid, 1999) is None and cluster.size() == N - 101
    assert cluster.last_proc() == 1998
    assert cluster.finished == 101
    assert _state(again) == before
    hist = again.store.history_rows(clusters=[cid])
    assert sorted(p for _c, p, _ad in hist) == [*range(100, 200), 1999]
    again.store.close()


def test_a_shaped_cluster_restarts_plain_and_reads_the_same(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    # arguments = $(Process) (a template) and a value of each proc's own (no template)
    diffs = [{"ProcId": 0}] + [{"ProcId": i, "Arguments": f"x {i}", "Seed": (i * 7919) % 1000}
                               for i in range(1, N)]
    cid = _submit(q, diffs)
    assert q.clusters[cid].shape is not None
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert _plain(again, cid) == N
    j = again.job(cid, 1234)
    assert j is not None and j.get("Arguments") == "x 1234" and j.get("Seed") == (1234 * 7919) % 1000
    assert again.job(cid, 0).own() is None  # proc 0 has the cluster's values
    _commit(again, again.set(again.job(cid, 9), {"Seed": -1}))
    again.store.close()
    third = _queue(db)
    assert third.job(cid, 9).get("Seed") == -1 and third.job(cid, 10).get("Seed") == (10 * 7919) % 1000
    before[(cid, 9)] = None
    after = _state(third)
    after[(cid, 9)] = None
    assert after == before
    third.store.close()


def test_queries_that_need_no_job_leave_the_range_alone(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(N)])
    q.store.close()
    again = _queue(db)
    _commit(again, again.set(again.job(cid, 7), {"JobBatchName": "other"}))
    summary = batch_summary(again, None, ["Owner", "JobBatchName"])
    assert summary["counts"] == [[cid, {str(IDLE): N - 1}, 0, N - 1]]
    assert [row[:2] for row in summary["jobs"]] == [[cid, 7]]
    cluster = again.clusters[cid]
    assert [j.proc for j in cluster.procs_naming("JobUniverse")] == []
    assert [j.proc for j in cluster.procs_naming("JobBatchName")] == [7]
    assert _plain(again, cid) == N - 1
    again.store.close()


def test_kill_9_while_removing_part_of_a_range_keeps_every_job_exactly_once(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(N)])
    q.store.close()
    kill_mid_removal(db, cid, 0, 1000, 50, reason=False, after=3)
    again = _queue(db)
    in_queue = {p for (_c, p) in (j.key for j in again.select())}
    with sqlite3.connect(db) as c:
        in_history = [p for (p,) in c.execute("SELECT proc FROM history WHERE cluster = ?", (cid,))]
    assert len(in_history) == len(set(in_history)) and 150 <= len(in_history) < 1000
    assert in_queue.isdisjoint(in_history) and in_queue | set(in_history) == set(range(N))
    assert again.totals_named()["Total"] == N - len(in_history) == again.clusters[cid].size()
    again.store.close()


def test_the_batch_view_makes_a_shaped_clusters_jobs_only_when_it_shows_their_own_values(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i, "Arguments": str(i)} for i in range(N)])
    q.store.close()
    again = _queue(db)
    quiet = batch_summary(again, None, ["Owner", "JobBatchName"])
    assert quiet["counts"] == [[cid, {str(IDLE): N}, 0, N - 1]] and quiet["jobs"] == []
    assert _plain(again, cid) == N
    loud = batch_summary(again, None, ["Owner", "Arguments"])
    assert len(loud["jobs"]) == N and loud["jobs"][5] == [cid, 5, {"ProcId": 5, "Arguments": "5"}]
    assert again.clusters[cid]._plain is None
    again.store.close()


def test_a_submit_stays_ranges_before_and_after_the_idle_lists_are_made(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)  # a started schedd: its idle lists not asked for yet
    a = _submit(q, [{"ProcId": i} for i in range(N)])
    b = _submit(q, [{"ProcId": i, "Arguments": f"-n {i}"} for i in range(N)])
    assert _plain(q, a) == N and _plain(q, b) == N and q.totals_named()["Idle"] == 2 * N
    assert q.job(b, 7).get("Arguments") == "-n 7"
    assert len(q.idle["alice"]) == 2 and _plain(q, a) == N and _plain(q, b) == N - 1  # a block each
    c = _submit(q, [{"ProcId": i} for i in range(10)])  # the lists are made now: still ranges
    assert _plain(q, c) == 10 and len(q.idle["alice"]) == 3
    keys = [j.key for j in q.idle_jobs("alice")]  # every job, in submit order, made as reached
    assert keys == [(a, i) for i in range(N)] + [(b, i) for i in range(N)] + [(c, i) for i in range(10)]
    assert _plain(q, a) == 0 and q.job(b, 7).get("Arguments") == "-n 7"
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    again.store.close()


def test_a_real_schedd_restarted_with_plain_procs_acts_on_exactly_the_jobs_it_had(tmp_path):
    """A schedd process: submit, hold one, kill -9, start again (its procs plain), then
    condor_rm of part of the range, periodic_hold over a plain cluster, a query of all."""
    from .schedd_harness import ScheddProc, query, submit, wait_for

    s = ScheddProc(tmp_path).start()
    try:
        job = "executable = /bin/true\nqueue 300\n"
        with s.client() as c:
            a, _ = submit(c, job, str(tmp_path))
            c.call("ACT", action="hold", ids=[f"{a}.5"])
        s.kill9()
        s.start()
        with s.client() as c:
            assert c.call("QUERY_JOBS", totals=True)["totals"]["Idle"] == 299
            c.call("ACT", action="remove", ids=[f"{a}.{p}" for p in range(10, 20)])
            b, _ = submit(c, "executable = /bin/true\nperiodic_hold = ProcId >= 290\nqueue 300\n", str(tmp_path))
        s.kill9()
        s.start()
        with s.client() as c:
            def held_now() -> list[str]:
                return [k for k, j in query(c).items() if j["JobStatus"] == HELD]

            wait_for(lambda: len(held_now()) >= 11, timeout=30)  # the periodic policy's turn
            held = held_now()
            jobs = query(c)
            assert sorted(held) == sorted([f"{a}.5"] + [f"{b}.{p}" for p in range(290, 300)])
            assert set(jobs) == {f"{a}.{p}" for p in range(300) if not 10 <= p < 20} | {f"{b}.{p}" for p in range(300)}
            assert c.call("QUERY_JOBS", totals=True)["totals"] == {**c.call("QUERY_JOBS", totals=True)["totals"],
                                                                    "Idle": 579, "Held": 11, "Total": 590}
    finally:
        s.stop()
