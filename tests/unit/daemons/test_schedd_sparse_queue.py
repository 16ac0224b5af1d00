"""Sparse clusters (jobqueue's docstring): a submitted cluster is one row, procs rows
exist only for procs changed since; reloading gives back exactly the queue that was
(statuses, differences, claims, GlobalJobId), a proc gone to history stays gone, and
a file written before sparse clusters still loads and changes as it did."""

from __future__ import annotations

import asyncio
import sqlite3

from roost.daemons.schedd import salvage
from roost.daemons.schedd.jobqueue import GONE, JobQueue
from roost.daemons.schedd.store import SCHEMA, Store

GJID = ("host#1.", "#1700000000")


def _queue(path) -> JobQueue:
    q = JobQueue(Store(str(path), fsync=False))
    q.load()
    return q


def _state(q: JobQueue) -> dict:
    """Everything a user or a shadow sees of each job."""
    return {job.key: (job.status, job.merged(), job.claim, job.diff_obj()) for job in q.select()}


def _submit(q: JobQueue, n: int, diffs=None) -> int:
    cid = q.new_cluster_id()
    procs = diffs if diffs is not None else [{"ProcId": i} for i in range(n)]
    ad = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice"}
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", ad, procs, (f"host#{cid}.", "#1700000000"))))
    return cid


def test_a_submitted_cluster_is_one_row_and_reloads_whole(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, 1000)
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM procs").fetchone() == (0,)
    job = q.job(cid, 7)
    assert job is not None and job.diff is None
    assert job.get("GlobalJobId") == "host#1.7#1700000000" == job.merged()["GlobalJobId"]
    assert job.classad().eval("GlobalJobId") == "host#1.7#1700000000"
    assert job.diff_obj()["GlobalJobId"] == "host#1.7#1700000000"
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    assert again.totals_named()["Idle"] == 1000 and len(list(again.idle_jobs("alice"))) == 1000
    again.store.close()


def test_changes_and_departures_survive_a_reload(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    # procs that differ (arguments, one submitted held), and procs ids with a gap
    diffs = [{"ProcId": i, "Arguments": str(i)} for i in range(5)] + [{"ProcId": 9, "JobStatus": 5}]
    cid = _submit(q, 0, diffs)

    async def work() -> None:
        await q.store.commit(q.set(q.job(cid, 1), {"Note": "x"}, 2))
        q.set_claim(q.job(cid, 2), {"claim_id": "c2"})
        await q.store.commit(q.set(q.job(cid, 2), {}, 2))
        gone = q.job(cid, 3)
        await q.store.commit(q.to_history(gone, 100))
        # a late change to a job already gone must not bring it back
        await q.store.commit(q.set(gone, {"Late": True}))

    asyncio.run(work())
    before = _state(q)
    assert sorted(p for _c, p in before) == [0, 1, 2, 4, 9]
    assert q.totals_named()["Running"] == 2 and q.totals_named()["Held"] == 1
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    assert again.totals_named() == {**again.totals_named(), "Running": 2, "Held": 1, "Idle": 2, "Total": 5}
    assert set(again.running) == {(cid, 1), (cid, 2)} and {j.key for j in again.idle_jobs("alice")} == {(cid, 0), (cid, 4)}
    assert again.clusters[cid].finished == 1
    assert again.job(cid, 0).get("Arguments") == "0" and again.job(cid, 1).get("Note") == "x"

    async def finish() -> None:
        for job in list(again.select()):
            await again.store.commit(again.to_history(job, 200))

    asyncio.run(finish())
    again.store.close()
    with sqlite3.connect(db) as c:  # the whole cluster gone: its rows (tombstones too) with it
        assert c.execute("SELECT COUNT(*) FROM procs").fetchone() == (0,)
        assert c.execute("SELECT COUNT(*) FROM clusters").fetchone() == (0,)
        assert c.execute("SELECT COUNT(*) FROM history").fetchone() == (6,)


def test_a_tombstone_is_what_keeps_a_finished_proc_out(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, 3)
    asyncio.run(q.store.commit(q.to_history(q.job(cid, 1), 100)))
    q.store.close()
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT proc, status FROM procs").fetchall() == [(1, GONE)]
    again = _queue(db)
    assert sorted(again.clusters[cid].procs) == [0, 2]
    again.store.close()


def test_a_file_from_before_sparse_clusters(tmp_path):
    """The schema and rows an older roost wrote: a procs row per proc, GlobalJobId in each
    proc's differences, no layout column."""
    db = tmp_path / "q.db"
    with sqlite3.connect(db) as c:
        c.executescript("""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE clusters (cluster INTEGER PRIMARY KEY, owner TEXT NOT NULL, ad TEXT NOT NULL, procs TEXT);
CREATE TABLE procs (cluster INTEGER NOT NULL, proc INTEGER NOT NULL, status INTEGER NOT NULL,
    diff TEXT, claim TEXT, PRIMARY KEY (cluster, proc)) WITHOUT ROWID;
CREATE TABLE history (cluster INTEGER NOT NULL, proc INTEGER NOT NULL, owner TEXT NOT NULL,
    completion INTEGER NOT NULL, status INTEGER NOT NULL, ad TEXT NOT NULL, PRIMARY KEY (cluster, proc));
CREATE TABLE pending_events (id INTEGER PRIMARY KEY, path TEXT NOT NULL, owner TEXT, text TEXT NOT NULL);
INSERT INTO meta VALUES ('next_cluster', '4');
INSERT INTO clusters VALUES (3, 'bob', '{"Cmd":"/bin/true","JobStatus":1,"Owner":"bob"}',
    '{"0":{"GlobalJobId":"h#3.0#5"},"1":{"GlobalJobId":"h#3.1#5"},"2":{"GlobalJobId":"h#3.2#5"}}');
INSERT INTO procs VALUES (3, 0, 1, NULL, NULL), (3, 1, 1, NULL, NULL), (3, 2, 2, '{"GlobalJobId":"h#3.2#5","X":1}', NULL);
""")
    assert salvage.damage(str(db)) is None
    old = tmp_path / "old.db"  # salvage reads a file without the layout column too
    old.write_bytes(db.read_bytes())
    assert "1 clusters, 3 jobs" in salvage.salvage(str(old), "test", SCHEMA)
    salvaged = _queue(old)
    assert sorted(salvaged.clusters[3].procs) == [0, 1, 2] and salvaged.job(3, 2).get("X") == 1
    salvaged.store.close()
    q = _queue(db)
    assert sorted(q.clusters[3].procs) == [0, 1, 2] and q.clusters[3].sparse is False
    assert q.job(3, 1).get("GlobalJobId") == "h#3.1#5" and q.job(3, 2).get("X") == 1
    assert q.totals_named()["Running"] == 1 and q.next_cluster == 4

    async def work() -> None:
        await q.store.commit(q.set(q.job(3, 0), {"Y": 2}, 5))
        await q.store.commit(q.to_history(q.job(3, 1), 100))

    asyncio.run(work())
    _submit(q, 2)  # a new cluster in the old file is sparse
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    assert sorted(again.clusters[3].procs) == [0, 2] and again.job(3, 0).status == 5
    assert again.clusters[4].sparse and again.job(4, 1).get("GlobalJobId") == "host#4.1#1700000000"
    again.store.close()


def test_salvage_keeps_sparse_clusters(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, 50)
    asyncio.run(q.store.commit(q.to_history(q.job(cid, 10), 100)))
    before = _state(q)
    q.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    q.store.close()
    # what salvage keeps of a file is every row it can read: here all of them
    line = salvage.salvage(str(db), "test", SCHEMA)
    assert "1 clusters, 49 jobs in the queue, 1 in the history" in line
    again = _queue(db)
    assert _state(again) == before
    again.store.close()


def test_a_bulk_removal_of_part_of_a_sparse_cluster_stays_removed_after_a_reload(tmp_path):
    """``finish_many`` (condor_rm of a big queue) on a sparse cluster: the removed procs
    leave one gone range while the cluster stays (no procs row), nothing when the whole
    cluster goes, and
    their history rows read back as their whole ads (GlobalJobId from the template)."""
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, 1000)
    other = _submit(q, 10)
    jobs = list(q.select([str(cid)]))
    now = {"RemoveReason": "via condor_rm", "LastJobStatus": 1, "EnteredCurrentStatus": 5}
    want = {j.proc: {**j.merged(), **now, "JobStatus": 3} for j in jobs[:600]}
    asyncio.run(q.store.commit(q.finish_many([(j, now) for j in jobs[:600]], 3, 5)))
    asyncio.run(q.store.commit(q.finish_many([(j, now) for j in q.select([str(other)])], 3, 6)))
    with sqlite3.connect(db) as c:
        rows = dict(c.execute("SELECT cluster, COUNT(*) FROM procs GROUP BY cluster").fetchall())
        gone = c.execute("SELECT cluster, lo, hi FROM gone_ranges").fetchall()
    assert rows == {} and gone == [(cid, 0, 600)]  # the other cluster left whole: nothing of it
    q.store.close()
    again = _queue(db)
    assert sorted(j.proc for j in again.select()) == list(range(600, 1000))
    assert again.clusters[cid].finished == 600 and other not in again.clusters
    hist = {p: ad for c, p, ad in again.store.history_rows(clusters=[cid])}
    assert hist == want and hist[7]["GlobalJobId"] == f"host#{cid}.7#1700000000"
    again.store.close()
