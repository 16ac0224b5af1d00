"""Gone ranges (queuefinish.py): procs of a sparse cluster that leave the queue together
are written as ``[lo, hi)`` ranges, not a GONE row each. A restart after removing part
of a cluster (with changed, held and shaped procs inside and outside the ranges, or
every other proc), a kill -9 in the middle of the removal, and a salvage of the file
(even one that lost its ranges) bring back exactly the jobs not removed, with their
own values; never a removed one."""

from __future__ import annotations

import json
import sqlite3

import pytest

from roost.core.jobpolicy import HELD, IDLE, REMOVED
from roost.daemons.schedd import salvage
from roost.daemons.schedd.jobqueue import GONE, JobQueue
from roost.daemons.schedd.plainprocs import Plain, ranges_less, runs
from roost.daemons.schedd.store import SCHEMA

from .removal_child import kill_mid_removal
from .test_schedd_plain_procs import _commit, _queue, _state, _submit

N = 2000
NOW = {"RemoveReason": "via condor_rm (by user alice)", "LastJobStatus": IDLE, "EnteredCurrentStatus": 1700000100}


def _remove(q: JobQueue, cid: int, procs) -> None:
    _commit(q, q.finish_many([(q.job(cid, p), NOW) for p in procs], REMOVED, 1700000100))


def _rows(db, sql: str) -> list:
    with sqlite3.connect(db) as c:
        return c.execute(sql).fetchall()


def _shaped() -> list[dict]:
    return [{"ProcId": 0}] + [{"ProcId": i, "Arguments": f"x {i}"} for i in range(1, N)]


def test_ranges_less_gone_and_runs():
    assert runs([5, 3, 4, 9, 0]) == [(0, 1), (3, 6), (9, 10)] and runs([]) == []
    # owns stays indexed by the submitted ranges: each range left says where its procs' values start
    left, starts = ranges_less([(0, 10), (20, 30)], [(2, 4), (3, 6), (8, 22), (29, 40)], 1)
    assert left == [(0, 2), (6, 8), (22, 29)] and starts == [0, 5, 11]
    plain = Plain([(0, 10), (20, 30)], IDLE, shaped=True, owns=[[p] for p in [*range(1, 10), *range(20, 30)]],
                  first=1, gone=[(2, 4), (3, 6), (8, 22), (29, 40)])
    assert plain.n == 11 and [plain.own(p) for p in (0, 1, 6, 7, 22, 28)] == [None, (1,), (6,), (7,), (22,), (28,)]
    assert not plain.has(2) and not plain.has(21) and not plain.has(29) and not plain.covers(29) and plain.covers(28)


def test_a_restart_after_removing_part_of_a_cluster_keeps_exactly_the_rest(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, _shaped())
    _commit(q, q.set(q.job(cid, 3), {"Foo": "bar"}))  # changed (a procs row), then removed
    _commit(q, q.set(q.job(cid, 4), {}, HELD))  # held, then removed
    _commit(q, q.set(q.job(cid, 1500), {"Foo": "kept"}))  # changed, stays
    _commit(q, q.set(q.job(cid, 1501), {}, HELD))  # held, stays
    _commit(q, q.to_history(q.job(cid, 1700), 1700000050))  # one job's end: a GONE row, as before
    q.store.close()
    q = _queue(db)  # the rest plain again
    _remove(q, cid, range(0, 1000))
    _remove(q, cid, range(1200, 1400))
    before = _state(q)
    q.store.close()
    assert _rows(db, "SELECT lo, hi FROM gone_ranges") == [(0, 1000), (1200, 1400)]
    # the removed procs' own rows went with them; the GONE row of the one that ended stays
    assert _rows(db, "SELECT proc, status FROM procs ORDER BY proc") == [(1500, IDLE), (1501, HELD), (1700, GONE)]
    again = _queue(db)
    cluster = again.clusters[cid]
    assert cluster._plain is not None and cluster._plain.n == N - 1200 - 1 - 2
    assert again.job(cid, 3) is None and again.job(cid, 4) is None and again.job(cid, 1300) is None
    assert again.job(cid, 1100).get("Arguments") == "x 1100" and again.job(cid, 1999).get("Arguments") == "x 1999"
    assert again.job(cid, 1500).get("Foo") == "kept" and again.job(cid, 1501).status == HELD
    assert again.totals_named()["Idle"] == N - 1200 - 2 and again.totals_named()["Held"] == 1
    assert cluster.size() == N - 1201 and cluster.finished == 1201
    assert {j.key for j in again.idle_jobs("alice")} == {k for k, v in before.items() if v[0] == IDLE}
    assert _state(again) == before
    hist = {p: ad for _c, p, ad in again.store.history_rows(clusters=[cid])}
    assert sorted(hist) == sorted([*range(0, 1000), *range(1200, 1400), 1700])
    assert hist[3]["Foo"] == "bar" and hist[4]["LastJobStatus"] == IDLE and hist[5]["Arguments"] == "x 5"
    again.store.close()


def test_every_other_proc_removed(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(N)])
    _remove(q, cid, range(0, N, 2))
    before = _state(q)
    q.store.close()
    assert len(_rows(db, "SELECT * FROM gone_ranges")) == N // 2
    again = _queue(db)
    assert sorted(p for _c, p in _state(again)) == list(range(1, N, 2)) and _state(again) == before
    _remove(again, cid, range(1, N, 2))  # the rest: the cluster goes, with its ranges
    again.store.close()
    assert _rows(db, "SELECT COUNT(*) FROM gone_ranges") == [(0,)] and _rows(db, "SELECT COUNT(*) FROM clusters") == [(0,)]
    assert _rows(db, "SELECT COUNT(*) FROM history") == [(N,)]


def test_a_cluster_built_whole_at_load_leaves_its_gone_ranges_out(tmp_path):
    """Procs submitted out of order (ranges a Plain cannot bisect): the full build."""
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": p, "Arguments": f"a{p}"} for p in [*range(500, 600), *range(0, 100)]])
    _commit(q, q.set(q.job(cid, 510), {"Foo": 1}))
    _remove(q, cid, range(505, 520))
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert again.clusters[cid]._plain is None and _state(again) == before
    assert again.job(cid, 510) is None and again.job(cid, 520).get("Arguments") == "a520"
    assert again.totals_named()["Idle"] == 185
    again.store.close()


def test_kill_9_in_the_middle_of_a_removal_keeps_each_job_in_the_queue_or_the_history(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, _shaped())
    _commit(q, q.set(q.job(cid, 150), {"Foo": "bar"}))  # a procs row inside what is removed
    q.store.close()
    kill_mid_removal(db, cid, 100, 1900, 60, reason=True, after=4)
    again = _queue(db)
    state = _state(again)
    in_queue = {p for _c, p in state}
    in_history = [p for (p,) in _rows(db, f"SELECT proc FROM history WHERE cluster = {cid}")]
    assert len(in_history) == len(set(in_history)) and 240 <= len(in_history) < 1800
    assert in_queue.isdisjoint(in_history) and in_queue | set(in_history) == set(range(N))
    assert set(in_history) == {p for lo, hi in _rows(db, "SELECT lo, hi FROM gone_ranges") for p in range(lo, hi)}
    assert all(state[(cid, p)][1].get("Arguments") == f"x {p}" for p in in_queue if p)
    assert again.totals_named()["Total"] == len(in_queue) == again.clusters[cid].size()
    again.store.close()


def test_salvage_keeps_the_ranges_and_the_history_keeps_out_what_a_lost_range_held(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, _shaped())
    _commit(q, q.set(q.job(cid, 420), {"Foo": "bar"}))
    _remove(q, cid, [*range(0, 40), *range(41, 300)])
    _commit(q, q.to_history(q.job(cid, 40), 1700000200))  # a GONE row
    before = _state(q)
    q.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    q.store.close()
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())
    line = salvage.salvage(str(db), "test", SCHEMA)
    assert f"1 clusters, {N - 300} jobs in the queue, 300 in the history" in line
    again = _queue(db)
    assert _state(again) == before
    again.store.close()
    # a file whose ranges and tombstones were lost (a damaged page): the history still says
    # those jobs left, and they stay out
    with sqlite3.connect(copy) as c:
        c.execute("DELETE FROM gone_ranges")
        c.execute("DELETE FROM procs WHERE status = ?", (GONE,))
    line = salvage.salvage(str(copy), "test", SCHEMA)
    assert f"1 clusters, {N - 300} jobs in the queue, 300 in the history" in line
    lost = _queue(copy)
    assert _state(lost) == before and lost.job(cid, 40) is None and lost.job(cid, 420).get("Foo") == "bar" and lost.job(cid, 42) is None
    lost.store.close()


def test_salvage_of_a_cluster_from_before_sparse_clusters_drops_a_finished_jobs_row(tmp_path):
    db = tmp_path / "q.db"
    with sqlite3.connect(db) as c:
        c.executescript(SCHEMA + """
INSERT INTO meta VALUES ('next_cluster', '4');
INSERT INTO clusters VALUES (3, 'bob', '{"Cmd":"/bin/true","JobStatus":1,"Owner":"bob"}', NULL, NULL);
INSERT INTO procs VALUES (3, 0, 1, NULL, NULL), (3, 1, 1, NULL, NULL), (3, 2, 1, NULL, NULL);
INSERT INTO history VALUES (3, 1, 'bob', 5, 3, '{"ProcId":1,"JobStatus":3}');
""")
    assert "1 clusters, 2 jobs in the queue, 1 in the history" in salvage.salvage(str(db), "test", SCHEMA)
    q = _queue(db)
    assert sorted(q.clusters[3].procs) == [0, 2]
    q.store.close()


@pytest.mark.parametrize("keep_ads", [True, False])
def test_a_history_row_holds_the_text_of_the_procs_own_ad(tmp_path, keep_ads):
    """The history text is made of parts (queuefinish.py): it must read exactly as the
    proc's own ad written whole, in the same order, whatever overlaps (a proc's own
    RemoveReason or GlobalJobId, a cluster without a template, quotes and accents)."""
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = q.new_cluster_id()
    ad = {"Cmd": "/bin/true", "JobStatus": IDLE, "Owner": "alice"}
    diffs = [{"ProcId": 0}, {"ProcId": 1, "Arguments": 'say "hé"'}, {"ProcId": 2, "RemoveReason": "old", "X": 1},
             {"ProcId": 3, "GlobalJobId": "own#3"}, {"ProcId": 4}]
    _commit(q, q.add_cluster(cid, "alice", ad, diffs, ('h"ost#é.', "#1700000000")))
    plain = q.new_cluster_id()  # no GlobalJobId template
    _commit(q, q.add_cluster(plain, "alice", dict(ad), [{"ProcId": 0}, {"ProcId": 1, "Y": [1, 2]}]))
    _commit(q, q.set(q.job(cid, 4), {"EnteredCurrentStatus": 7}))  # own overlaps what the removal sets
    shaped = q.new_cluster_id()  # a template and values of each proc's own (procshape.py)
    _commit(q, q.add_cluster(shaped, "alice", dict(ad), [{"ProcId": 0}] + [
        {"ProcId": i, "Arguments": f"-n {i} \"q\"", "Seed": [i, "é"] if i % 2 else i * 1.5} for i in range(1, 6)],
        (f"h#{shaped}.", "#1")))
    assert q.clusters[shaped].shape is not None
    templated = q.new_cluster_id()  # templates only (arguments = -n $(Process) "q"), GlobalJobId among them
    _commit(q, q.add_cluster(templated, "alice", dict(ad), [{"ProcId": 0}] + [
        {"ProcId": i, "Arguments": f'-n {i} "é"', "GlobalJobId": f"own#{i}"} for i in range(1, 6)],
        (f"h#{templated}.", "#1")))
    assert all(t is not None for _k, t in q.clusters[templated].shape)
    bare = q.new_cluster_id()
    _commit(q, q.add_cluster(bare, "alice", dict(ad), [{"ProcId": 0}] + [
        {"ProcId": i, "Arguments": f"{i}"} for i in range(1, 6)], (f"h#{bare}.", "#1")))
    attrs = {"RemoveReason": "via condor_rm", "EnteredCurrentStatus": 1700000100, "LastJobStatus": IDLE}
    jobs = ([q.job(cid, p) for p in range(5)] + [q.job(plain, p) for p in range(2)]
            + [q.job(c, p) for c in (shaped, templated, bare) for p in range(6)])
    want = {}
    for j in jobs:
        obj = {"ProcId": j.proc, **(j.own() or {}), **attrs}
        if j.cluster.gjid is not None and "GlobalJobId" not in obj:
            obj["GlobalJobId"] = j.global_job_id()
        obj["JobStatus"] = REMOVED
        want[j.key] = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    _commit(q, q.finish_many([(j, attrs) for j in jobs], REMOVED, 1700000100, keep_ads=keep_ads))
    q.store.close()
    got = {(c, p): text for c, p, text in _rows(db, "SELECT cluster, proc, ad FROM history")}
    assert got == want
    # kept: the job read after it left has what the removal set (the pool log's 028 reads it)
    assert (jobs[-1].get("RemoveReason") == "via condor_rm") is keep_ads and jobs[-1].get("Arguments") == "5"


def test_salvage_drops_a_cluster_whose_every_job_the_history_holds(tmp_path):
    """Damage that kept a cluster's row but lost what said its jobs had gone: the history
    holds them all, so the cluster is not brought back empty (nor with its jobs)."""
    db = tmp_path / "q.db"
    q = _queue(db)
    cid = _submit(q, [{"ProcId": i} for i in range(10)])
    kept = _submit(q, [{"ProcId": i} for i in range(10)])
    _remove(q, cid, range(0, 6))
    _remove(q, kept, range(0, 4))
    q.store.close()
    with sqlite3.connect(db) as c:  # the last four of cid "removed" by history alone
        c.execute("DELETE FROM gone_ranges")
        c.executemany("INSERT INTO history VALUES (?, ?, 'alice', 5, 3, '{}')", [(cid, p) for p in range(6, 10)])
    line = salvage.salvage(str(db), "test", SCHEMA)
    assert "1 clusters, 6 jobs in the queue, 14 in the history" in line and "unreadable" not in line
    again = _queue(db)
    assert list(again.clusters) == [kept] and sorted(again.clusters[kept].procs) == list(range(4, 10))
    again.store.close()
