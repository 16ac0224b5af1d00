"""The job queue's SQLite store and in-memory queue, without sockets: group commit,
reload after reopening, counters, history."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3

import pytest

from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import FORMAT, NewerFormat, Store


def _queue(path) -> JobQueue:
    q = JobQueue(Store(str(path), fsync=True))
    q.load()
    return q


def test_changes_commit_in_batches_and_reload(tmp_path):
    db = tmp_path / "spool" / "job_queue.db"
    q = _queue(db)

    async def work() -> None:
        cid = q.new_cluster_id()
        ops = q.add_cluster(cid, "alice", {"Cmd": "/bin/true", "JobStatus": 1}, [{"ProcId": i, "Args": str(i)} for i in range(50)])
        await q.store.commit(ops)
        jobs = list(q.select([str(cid)]))
        # 50 concurrent changes: far fewer transactions than changes
        before = q.store.batches
        await asyncio.gather(*(q.store.commit(q.set(j, {"Note": j.proc}, 2)) for j in jobs))
        assert q.store.batches - before < 10
        await q.store.commit(q.to_history(jobs[0], 123))

    asyncio.run(work())
    assert q.totals_named()["Running"] == 49 and q.totals_named("alice")["Total"] == 49
    q.store.close()
    again = _queue(db)
    assert again.totals_named()["Running"] == 49
    job = again.job(1, 7)
    assert job is not None and job.get("Note") == 7 and job.get("Args") == "7" and job.status == 2
    assert job.merged()["Cmd"] == "/bin/true" and job.classad().eval("ProcId") == 7
    assert again.job(1, 0) is None and again.clusters[1].finished == 1
    assert [r[:2] for r in again.store.history_rows(owner="alice")] == [(1, 0)]
    assert again.next_cluster == 2
    again.store.close()


def test_history_is_trimmed_oldest_first(tmp_path):
    q = _queue(tmp_path / "q.db")

    async def work() -> None:
        cid = q.new_cluster_id()
        await q.store.commit(q.add_cluster(cid, "bob", {"Cmd": "x", "JobStatus": 1}, [{"ProcId": i} for i in range(5)]))
        for i, job in enumerate(list(q.select())):
            await q.store.commit(q.to_history(job, 100 + i))
        await q.store.commit(q.store.trim_history_ops(3))

    asyncio.run(work())
    assert sorted(r[1] for r in q.store.history_rows()) == [2, 3, 4]
    assert 1 not in q.clusters and q.gone[1] == 5
    q.store.close()


def test_job_ends_committed_but_not_logged_are_replayed_once(tmp_path):
    """A schedd killed between committing a job's end and writing its events: the next
    one writes them, unless the log has them already (killed after the write)."""
    from roost.daemons.schedd.lifecycle import JobLifecycle
    from roost.daemons.schedd.userlog import UserLogs
    from roost.eventlog import TerminatedEvent, format_event

    db = tmp_path / "job_queue.db"
    store = Store(str(db), fsync=True)
    written, unwritten = tmp_path / "a.log", tmp_path / "b.log"
    ev_a = format_event(TerminatedEvent(1, 0, 1_700_000_000.0, return_value=0))
    ev_b = format_event(TerminatedEvent(2, 0, 1_700_000_001.0, return_value=3))
    written.write_text(ev_a)
    store.write_now([("INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)", (1, str(written), None, ev_a)),
                     ("INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)", (2, str(unwritten), None, ev_b))])
    store.close()
    store = Store(str(db), fsync=True)
    jobs = JobLifecycle(None, store, JobQueue(store), UserLogs(), on_idle=lambda j: None, on_change=lambda: None)
    assert jobs.replay_pending_events() == 1
    jobs.userlogs.close()
    assert written.read_text() == ev_a and unwritten.read_text() == ev_b
    assert store.pending_events() == []
    assert next(jobs._event_ids) == 3  # ids go on after those seen
    store.close()


def _mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_a_new_queue_and_its_wal_and_shm_are_owner_only(tmp_path):
    """They hold every job's ad and each running job's ClaimId (docs/security.md,
    *Secrets at rest*); SQLite gives its -wal and -shm the database's mode."""
    old = os.umask(0o022)
    try:
        db = tmp_path / "job_queue.db"
        q = _queue(db)
        asyncio.run(q.store.commit(q.add_cluster(q.new_cluster_id(), "alice", {"Cmd": "/bin/true"}, [{"ProcId": 0}])))
        modes = {p.name: _mode(p) for p in tmp_path.iterdir()}
        q.store.close()
    finally:
        os.umask(old)
    assert {"job_queue.db", "job_queue.db-wal", "job_queue.db-shm"} <= set(modes), modes
    assert set(modes.values()) == {0o600}, modes


def test_an_older_roosts_open_queue_files_are_closed_at_start(tmp_path):
    db = tmp_path / "job_queue.db"
    conn = sqlite3.connect(db)  # as an older roost made them: under umask 022
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()  # kept open: its -wal and -shm stay
    aside = tmp_path / "job_queue.db.damaged-20240101T000000"
    aside.write_bytes(b"old")
    for p in (db, tmp_path / "job_queue.db-wal", tmp_path / "job_queue.db-shm", aside):
        os.chmod(p, 0o644)
    store = Store(str(db), fsync=False)
    try:
        assert sorted(os.path.basename(p) for p in store.closed_files) == [
            "job_queue.db", "job_queue.db-shm", "job_queue.db-wal", aside.name]
        assert {p.name: _mode(p) for p in tmp_path.iterdir()} == dict.fromkeys(
            ["job_queue.db", "job_queue.db-wal", "job_queue.db-shm", aside.name], 0o600)
    finally:
        store.close()
        conn.close()


def test_history_rows_hold_only_the_procs_own_part_and_read_back_whole(tmp_path):
    """A history row is the proc's own attributes over its cluster's ad, stored once
    (history_clusters): read back, each ad is exactly ``Job.merged()``, key order too."""
    db = tmp_path / "q.db"
    q = _queue(db)
    cluster_ad = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Args": "x", "Iwd": "/tmp"}
    want: dict[int, dict] = {}

    async def work() -> None:
        cid = q.new_cluster_id()
        await q.store.commit(q.add_cluster(cid, "alice", cluster_ad, [{"ProcId": i, "Args": str(i)} for i in range(6)]))
        jobs = list(q.select([str(cid)]))
        q.set(jobs[0], {"ExitCode": 0, "Iwd": "/elsewhere"}, 4)
        want[0] = jobs[0].merged()
        await q.store.commit(q.to_history(jobs[0], 100))
        now = {"RemoveReason": "via condor_rm", "LastJobStatus": 1, "EnteredCurrentStatus": 200}
        for job in jobs[1:]:
            want[job.proc] = {**job.merged(), **now, "JobStatus": 3}
        await q.store.commit(q.finish_many([(j, now) for j in jobs[1:]], 3, 200))

    asyncio.run(work())
    assert not q.clusters and q.totals_named()["Total"] == 0
    rows = {proc: ad for _c, proc, ad in q.store.history_rows()}
    assert rows == want
    assert all(list(rows[p]) == list(want[p]) for p in want)  # the order merged() gives
    conn = sqlite3.connect(db)
    (n,) = conn.execute("SELECT COUNT(*) FROM history_clusters").fetchone()
    texts = [t for (t,) in conn.execute("SELECT ad FROM history")]
    assert n == 1 and all("Cmd" not in t for t in texts)  # the cluster ad is written once
    conn.close()
    q.store.close()


def test_history_rows_of_an_older_roost_hold_the_whole_ad(tmp_path):
    """Rows written before history_clusters (the whole merged ad) read as they are,
    also when later procs of the same cluster are stored the compact way."""
    db = tmp_path / "q.db"
    q = _queue(db)
    full = {"Cmd": "/bin/old", "ProcId": 0, "JobStatus": 4, "ExitCode": 3}

    async def work() -> None:
        cid = q.new_cluster_id()
        await q.store.commit(q.add_cluster(cid, "bob", {"Cmd": "/bin/old", "JobStatus": 1}, [{"ProcId": 0}, {"ProcId": 1}]))
        jobs = list(q.select([str(cid)]))
        q.set(jobs[0], {"ExitCode": 3}, 4)
        await q.store.commit([
            ("DELETE FROM procs WHERE cluster = ? AND proc = 0", (cid,)),
            ("INSERT INTO history (cluster, proc, owner, completion, status, ad) VALUES (?, 0, 'bob', 1, 4, ?)",
             (cid, json.dumps(full))),
        ])
        q.set(jobs[1], {"ExitCode": 5}, 4)
        await q.store.commit(q.to_history(jobs[1], 2))

    asyncio.run(work())
    rows = {proc: ad for _c, proc, ad in q.store.history_rows()}
    assert rows[0] == full
    assert rows[1] == {"Cmd": "/bin/old", "JobStatus": 4, "ProcId": 1, "ExitCode": 5}
    q.store.close()


def test_trimming_history_drops_cluster_ads_only_when_nothing_stands_on_them(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)

    async def work() -> None:
        a = q.new_cluster_id()
        await q.store.commit(q.add_cluster(a, "bob", {"Cmd": "a", "JobStatus": 1}, [{"ProcId": i} for i in range(2)]))
        b = q.new_cluster_id()
        await q.store.commit(q.add_cluster(b, "bob", {"Cmd": "b", "JobStatus": 1}, [{"ProcId": i} for i in range(3)]))
        for job in list(q.select([str(a)])):
            await q.store.commit(q.to_history(job, 10))
        first_b = next(iter(q.select([str(b)])))
        await q.store.commit(q.to_history(first_b, 20))
        # every row of cluster a and b's one row trimmed: a's ad goes; b's stays (b is still queued)
        await q.store.commit(q.store.trim_history_ops(0))
        for job in list(q.select([str(b)])):
            await q.store.commit(q.to_history(job, 30))

    asyncio.run(work())
    conn = sqlite3.connect(db)
    assert [c for (c,) in conn.execute("SELECT cluster FROM history_clusters")] == [2]
    conn.close()
    assert sorted((ad["Cmd"], p) for _c, p, ad in q.store.history_rows()) == [("b", 1), ("b", 2)]
    q.store.close()


def test_a_constraint_reads_the_same_in_the_small_ad_as_in_the_whole_one():
    """``Job.classad_for(Cluster.reach(...))`` (condor_q -constraint over 100,000 jobs
    without building each whole ad) gives every constraint the value the whole ad gives."""
    from roost.classad import ExprTree
    from roost.daemons.schedd.jobqueue import Cluster, Job
    from roost.daemons.schedd.queries import _references

    cluster = Cluster(1, "alice", {
        "Cmd": "/bin/x", "JobStatus": 1, "Foo": 3, "Owner": "alice",
        "RequestMemory": "/Expr(ifThenElse(MemoryUsage =?= undefined, 128, MemoryUsage * 2))/",
        "Big": "/Expr(Foo + Bar)/", "Deep": "/Expr(Big * RequestMemory)/", "Nested": {"A": 1},
    })
    diffs = [None, {"MemoryUsage": 100, "Bar": 7}, {"Bar": "/Expr(Foo * 2)/"}, {"Foo": 10, "Args": "a b"},
             {"RequestMemory": 4096}, {"Nested": {"A": 2}}]
    texts = ["ProcId % 2 == 1", "RequestMemory > 150", "Big == 10", 'Cmd == "/bin/x" && JobStatus == 1',
             "Bar == 7", "Missing =?= undefined", "Deep > 1000", "MY.Foo == 3", 'regexp("a", Args)',
             "Nested.A == 2", "JobStatus == 1 || Foo > 5", "isUndefined(MemoryUsage)", 'strcat(Owner, "x") == "alicex"']
    for text in texts:
        expr = ExprTree(text)
        refs = _references(expr)
        assert refs is not None
        for proc, diff in enumerate(diffs):
            job = Job(cluster, proc, 1 + proc % 2, diff)
            small = job.classad_for(cluster.reach(expr, refs))
            if small is None:  # one of its own values is an expression: the whole ad is used
                assert diff and any(str(v).startswith("/Expr(") for v in diff.values())
                continue
            whole = expr.eval(job.classad())
            got = expr.eval(small)
            assert repr(got) == repr(whole), (text, diff, got, whole)


def test_an_insert_of_many_rows_writes_what_one_insert_a_row_writes(tmp_path):
    """Store._many sends an INSERT of many rows as statements of several rows each: the
    table ends as a row at a time leaves it (a key twice in a batch: the later row, as
    OR REPLACE or an upsert has it), whatever the batch's size or the statement's limit
    of parameters, and a row that breaks a constraint fails the whole transaction."""
    from roost.daemons.schedd.queuefinish import _INSERT_HISTORY, _UPSERT_PROC

    def rows(n: int) -> tuple[list, list]:
        hist = [(1, p % (n - 3 if n > 3 else n), "alice", p, 3, json.dumps({"P": p})) for p in range(n)]
        procs = [(1, p % (n // 2 or 1), p, json.dumps({"X": p}), None) for p in range(n)]
        return hist, procs

    def tables(store: Store) -> tuple[list, list]:
        c = store.conn
        return (c.execute("SELECT * FROM history ORDER BY cluster, proc").fetchall(),
                c.execute("SELECT * FROM procs ORDER BY cluster, proc").fetchall())

    for n in (1, 15, 16, 17, 499, 500, 501, 1234):
        for limit in (None, 20):
            hist, procs = rows(n)
            one = Store(str(tmp_path / f"one-{n}-{limit}.db"), fsync=False)
            for h in hist:
                one.conn.execute(_INSERT_HISTORY, h)
            for p in procs:
                one.conn.execute(_UPSERT_PROC, p)
            many = Store(str(tmp_path / f"many-{n}-{limit}.db"), fsync=False)
            if limit is not None:
                many.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)
                many._max_vars = limit
            asyncio.run(many.commit([(_INSERT_HISTORY, hist, True), (_UPSERT_PROC, procs, True)]))
            assert tables(many) == tables(one) and len(tables(many)[0]) == len({(h[0], h[1]) for h in hist})
            one.close()
            many.close()
    store = Store(str(tmp_path / "fails.db"), fsync=False)
    twice = [(i, "p", None, "t") for i in range(40)] + [(3, "p", None, "again")]
    try:
        asyncio.run(store.commit([(_INSERT_HISTORY, rows(100)[0], True),
                                  ("INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)", twice, True)]))
        raise AssertionError("a duplicate key must fail the batch")
    except sqlite3.IntegrityError:
        pass
    assert tables(store)[0] == [] and store.pending_events() == []
    store.close()


def test_a_queue_file_of_a_newer_format_is_refused_and_left_as_it_is(tmp_path):
    """A downgrade must not bring removed jobs back: a file that says it is of a newer
    format than this roost knows (its removed procs may be kept where this roost does not
    look) is refused with a clear reason, and not touched."""
    path = str(tmp_path / "q.db")
    s = Store(path, fsync=False)
    s.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == FORMAT
    conn.execute(f"PRAGMA user_version = {FORMAT + 1}")
    conn.close()
    before = open(path, "rb").read()
    with pytest.raises(NewerFormat, match=rf"newer roost \(queue format {FORMAT + 1}; this roost reads up to {FORMAT}\)"):
        Store(path, fsync=False)
    assert open(path, "rb").read() == before


def test_an_upsert_with_a_parameter_of_its_own_goes_a_row_at_a_time(tmp_path):
    """A parameter outside the row (``DO UPDATE SET x = ?``) cannot repeat once per row
    of a multi-row statement: such an INSERT keeps executemany, and writes what it does."""
    sql = ("INSERT INTO meta (key, value) VALUES (?, ?) "
           "ON CONFLICT(key) DO UPDATE SET value = excluded.value || ?")
    rows = [(f"k{i % 7}", f"v{i}", "+") for i in range(60)]
    store = Store(str(tmp_path / "q.db"), fsync=False)
    asyncio.run(store.commit([(sql, rows, True)]))
    got = dict(store.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'k%'").fetchall())
    assert got == {f"k{k}": f"v{max(i for i in range(60) if i % 7 == k)}+" for k in range(7)}
    store.close()
