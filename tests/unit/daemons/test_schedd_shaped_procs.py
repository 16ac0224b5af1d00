"""Shaped clusters (jobqueue's ``Job`` docstring): procs that all differ from their
cluster in the same attributes keep a tuple, not a dict, and templated values
(``arguments = $(Process)``) nothing at all; every reader sees the same job as if
each proc held its dict, before and after a change, and after a reload."""

from __future__ import annotations

import asyncio
import json
import sqlite3

from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import Store


def _queue(path) -> JobQueue:
    q = JobQueue(Store(str(path), fsync=False))
    q.load()
    return q


def _state(q: JobQueue) -> dict:
    return {job.key: (job.status, job.merged(), job.claim, job.diff_obj(), job.own(), job.diff)
            for job in q.select()}


def _submit(q: JobQueue, diffs: list[dict]) -> int:
    cid = q.new_cluster_id()
    ad = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Arguments": "cluster's"}
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", ad, diffs, (f"host#{cid}.", "#1700000000"))))
    return cid


def _layout(db, cid: int) -> tuple[dict, str]:
    with sqlite3.connect(db) as c:
        layout, procs = c.execute("SELECT layout, procs FROM clusters WHERE cluster = ?", (cid,)).fetchone()
    return json.loads(layout), procs


def test_templated_values_are_made_from_the_proc_id(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    diffs = [{"ProcId": p, "Arguments": f"{p}", "Out": f"out.1{p}.txt"} for p in range(200)]
    cid = _submit(q, [dict(d) for d in diffs])
    layout, procs = _layout(db, cid)
    assert layout["shape"] == [["Arguments", ["", ""]], ["Out", ["out.1", ".txt"]]] and procs == "{}"
    job = q.job(cid, 17)
    assert job._diff == ()  # nothing of its own kept per proc
    assert job.own() == {"Arguments": "17", "Out": "out.117.txt"} and job._diff == ()
    assert job.get("Arguments") == "17" and job.get("Out") == "out.117.txt" and job.get("Cmd") == "/bin/true"
    assert job.merged()["Arguments"] == "17" and job.classad().eval("Out") == "out.117.txt"
    assert job.diff_obj() == {"ProcId": 17, "Arguments": "17", "Out": "out.117.txt",
                              "GlobalJobId": "host#1.17#1700000000"}
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert again.job(cid, 5)._diff == ()  # (until _state asks for each diff)
    assert _state(again) == before
    again.store.close()


def test_other_values_stay_each_procs_own_through_changes_and_a_reload(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    # one templated attribute, one free (a list and a number among them), in a range from 10
    words = ["a", "b", 3, ["x"], "e", "f"]
    diffs = [{"ProcId": 10 + i, "Arguments": w, "Out": f"o{10 + i}"} for i, w in enumerate(words)]
    cid = _submit(q, diffs)
    layout, procs = _layout(db, cid)
    assert layout["shape"] == [["Arguments", None], ["Out", ["o", ""]]] and json.loads(procs) == {"values": [[w] for w in words]}
    assert q.job(cid, 13).get("Arguments") == ["x"] and q.job(cid, 12).merged()["Arguments"] == 3

    async def work() -> None:
        await q.store.commit(q.set(q.job(cid, 11), {"Note": "x"}, 2))  # an attribute: a dict of its own
        await q.store.commit(q.set(q.job(cid, 14), {}, 5))  # only its status: still as submitted
        await q.store.commit(q.to_history(q.job(cid, 15), 100))

    asyncio.run(work())
    assert q.job(cid, 11)._diff == {"Arguments": "b", "Out": "o11", "Note": "x"}
    assert q.job(cid, 14)._diff == ("e",)
    before = _state(q)
    assert sorted(p for _c, p in before) == [10, 11, 12, 13, 14]
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    assert again.totals_named()["Held"] == 1 and again.totals_named()["Running"] == 1
    rows = again.store.history_rows()
    assert [(c, p, ad["Arguments"], ad["Out"]) for c, p, ad in rows] == [(cid, 15, "f", "o15")]
    again.store.close()


def test_procs_that_differ_unalike_keep_their_dicts(tmp_path):
    db = tmp_path / "q.db"
    q = _queue(db)
    diffs = [{"ProcId": 0, "Arguments": "0"}, {"ProcId": 1, "Out": "1"}, {"ProcId": 2, "Arguments": "2"}]
    cid = _submit(q, diffs)
    assert "shape" not in _layout(db, cid)[0]
    assert q.job(cid, 1)._diff == {"Out": "1"} and q.job(cid, 1).get("Arguments") == "cluster's"
    held = [{"ProcId": 0, "Arguments": "0"}, {"ProcId": 1, "JobStatus": 5}]  # same size, other keys
    cid2 = _submit(q, held)
    assert "shape" not in _layout(db, cid2)[0] and q.job(cid2, 1).status == 5
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert _state(again) == before
    again.store.close()


def test_a_change_in_place_through_diff_is_kept(tmp_path):
    """``diff`` hands out the proc's own dict (made once from the tuple): what a caller
    changes in it stays, as with a proc that always had its dict."""
    q = _queue(tmp_path / "q.db")
    cid = _submit(q, [{"ProcId": p, "Arguments": f"a{p}"} for p in range(3)])
    job = q.job(cid, 2)
    job.diff["HoldReason"] = "because"
    assert job.get("HoldReason") == "because" and job.get("Arguments") == "a2"
    assert "HoldReason" not in q.job(cid, 1).merged()
    q.store.close()


def test_proc_zero_of_a_submit_keeps_the_cluster_ads_values(tmp_path):
    """condor_submit's cluster ad holds proc 0's values, so proc 0 differs in nothing
    and the rest in ``Args``: they are shaped, proc 0 stays as it was."""
    db = tmp_path / "q.db"
    q = _queue(db)
    diffs = [{"ProcId": 0}] + [{"ProcId": p, "Arguments": str(p)} for p in range(1, 50)]
    cid = _submit(q, diffs)
    layout, _procs = _layout(db, cid)
    assert layout["shape_from"] == 1 and layout["shape"] == [["Arguments", ["", ""]]]
    assert q.job(cid, 0)._diff is None and q.job(cid, 0).get("Arguments") == "cluster's"
    assert q.job(cid, 1)._diff == () and q.job(cid, 49).get("Arguments") == "49"
    asyncio.run(q.store.commit(q.set(q.job(cid, 0), {}, 2)))
    before = _state(q)
    q.store.close()
    again = _queue(db)
    assert again.job(cid, 0)._diff is None and again.job(cid, 2)._diff == ()
    assert _state(again) == before
    again.store.close()


def test_procs_naming_finds_every_proc_that_may_differ_there(tmp_path):
    """What the start-up's local-universe pass and the dedicated scheduler look at: a
    proc left out must have its cluster's value of the attribute."""
    q = _queue(tmp_path / "q.db")
    plain = _submit(q, [{"ProcId": p} for p in range(100)])
    asyncio.run(q.store.commit(q.set(q.job(plain, 7), {"JobUniverse": 12})))
    assert [j.proc for j in q.clusters[plain].procs_naming("JobUniverse", "WantDedicated")] == [7]
    assert list(q.clusters[plain].procs_naming("WantDedicated")) == []
    shaped = _submit(q, [{"ProcId": p, "JobUniverse": 12 if p % 2 else 5} for p in range(10)])
    found = {j.proc for j in q.clusters[shaped].procs_naming("JobUniverse")}
    assert {j.proc for j in q.clusters[shaped].procs.values() if j.get("JobUniverse") == 12} <= found
    assert list(q.clusters[shaped].procs_naming("Other")) == []
    q.store.close()
