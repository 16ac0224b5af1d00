"""rm, hold and release on a real pool: what the user sees, and what the event log records."""

from __future__ import annotations

from pathlib import Path

import htcondor2
import pytest
from poolkit import PoolHandle


def _kinds(log: Path) -> list[htcondor2.JobEventType]:
    return [e.type for e in htcondor2.JobEventLog(str(log)).events(stop_after=0)]


def test_hold_release_remove_a_running_job(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nlog = act.log\nqueue 2\n", tmp_path)
    jid = f"{r.cluster}.0"
    pool.wait_for(jid, lambda j: j["JobStatus"] == 2, what="running")

    out = pool.roost("hold", jid, "-reason", "testing holds", check=True)
    assert out.stdout.strip() == f"Job {jid} held"
    ad = pool.wait_for(jid, lambda j: j["JobStatus"] == 5, what="held")
    assert "testing holds" in ad.get("HoldReason", "")

    out = pool.roost("release", jid, check=True)
    assert out.stdout.strip() == f"Job {jid} released"
    pool.wait_for(jid, lambda j: j["JobStatus"] in (1, 2), what="idle or running again")

    out = pool.roost("rm", str(r.cluster), check=True)
    assert out.stdout.strip() == f"All jobs in cluster {r.cluster} have been marked for removal"
    got = pool.wait(r.job_ids(), timeout=30)
    assert got["done"] == 2
    ad = pool.job(jid)
    assert ad is not None and ad["JobStatus"] == 3
    # HTCondor's default reason, which condor_q -hold and scripts show
    assert ad.get("RemoveReason", "").startswith("via condor_rm (by user "), ad
    kinds = _kinds(tmp_path / "act.log")
    assert htcondor2.JobEventType.JOB_HELD in kinds
    assert htcondor2.JobEventType.JOB_RELEASED in kinds
    assert kinds.count(htcondor2.JobEventType.JOB_ABORTED) == 2


def test_actions_on_nothing_fail_clearly(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nqueue 2\n", tmp_path)
    held, other = f"{r.cluster}.0", f"{r.cluster}.1"
    out = pool.roost("rm", "99999.0")
    assert out.returncode == 1
    assert out.stderr.strip() == "Job 99999.0 not found"
    out = pool.roost("release", "99999")
    assert out.returncode == 1 and out.stderr.strip() == "Couldn't find/release all jobs in cluster 99999"
    out = pool.roost("hold")
    assert out.returncode == 1 and "name jobs" in out.stderr
    # per job, condor_hold/condor_release's words; one success is enough for status 0
    out = pool.roost("hold", held)
    assert out.returncode == 1 and out.stderr.strip() == f"Job {held} already held"
    out = pool.roost("release", held, "99999.3")
    assert out.returncode == 0 and out.stdout.strip() == f"Job {held} released"
    assert out.stderr.strip() == "Job 99999.3 not found"
    pool.wait_for(held, lambda j: j["JobStatus"] in (1, 2), what="released")
    out = pool.roost("release", held)
    assert out.returncode == 1 and out.stderr.strip() == f"Job {held} not held to be released"
    out = pool.roost("rm", "-totals", held, other, check=True)
    assert out.stdout.splitlines() == [
        "2 Succeeded, 0 Failed, 0 Not Found, 0 Bad Status, 0 Already Done, 0 Permission Denied",
        f"Job {held} marked for removal", f"Job {other} marked for removal"]
    pool.wait(r.job_ids(), timeout=30)
    # an empty queue is not an error: condor_rm says so and exits 0
    out = pool.roost("rm", "-all")
    assert out.returncode == 0 and out.stdout == ""
    assert out.stderr.strip() == "roost rm:0:There are no jobs in the queue"


def test_long_and_totals_results(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nqueue 2\n", tmp_path)
    out = pool.roost("release", "-long", f"{r.cluster}.1", check=True)
    ad = dict(ln.split(" = ", 1) for ln in out.stdout.splitlines() if " = " in ln)
    assert ad[f"job_{r.cluster}_1"] == "1" and ad["ActionResult"] == "1" and ad["JobAction"] == "2"
    assert out.stdout.splitlines()[-1] == f"Job {r.cluster}.1 released"
    out = pool.roost("rm", "-totals", str(r.cluster), "99998", check=True)
    assert out.stdout.splitlines() == [
        "2 Succeeded, 0 Failed, 0 Not Found, 0 Bad Status, 0 Already Done, 0 Permission Denied",
        f"All jobs matching constraint (ClusterId == {r.cluster} || ClusterId == 99998) have been marked for removal"]
    pool.wait(r.job_ids(), timeout=30)


def test_constraint_and_user_targets(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nqueue 3\n", tmp_path)
    ads = pool.schedd().query_objs(ids=[str(r.cluster)], projection=["JobStatus"])
    assert [a["JobStatus"] for a in ads] == [5, 5, 5]  # submitted on hold
    out = pool.roost("release", "-constraint", f"ClusterId == {r.cluster} && ProcId == 1", check=True)
    assert out.stdout.strip() == (f"All jobs matching constraint (ClusterId == {r.cluster} && ProcId == 1) "
                                  "have been released")
    pool.wait_for(f"{r.cluster}.1", lambda j: j["JobStatus"] in (1, 2), what="released")
    from roost.api.schedd import current_user

    me = current_user()
    out = pool.roost("rm", me, check=True)
    assert out.stdout.strip() == f'All jobs of user "{me}" have been marked for removal'
    pool.wait(r.job_ids(), timeout=30)


def test_edit_sets_attributes_and_refuses_the_schedds_own(pool: PoolHandle, tmp_path: Path) -> None:
    from roost.api.connection import RefusedError
    from roost.api.schedd import Expr

    r = pool.submit("executable = /bin/sleep\narguments = 30\nhold = true\nqueue 2\n", tmp_path)
    s = pool.schedd()
    try:
        got = s.edit(f"{r.cluster}.1", {"Foo": 3, "Name2": "text", "Bar": Expr("Foo * 2")})
        assert got["count"] == 1
        (ad,) = s.query(f"ClusterId == {r.cluster} && ProcId == 1", ["Foo", "Name2", "Bar"])
        assert (ad["Foo"], ad["Name2"], str(ad["Bar"])) == (3, "text", "Foo * 2")
        (other,) = s.query(f"ClusterId == {r.cluster} && ProcId == 0", ["Foo"])
        assert "Foo" not in other
        with pytest.raises(RefusedError) as e:
            s.edit(str(r.cluster), {"Owner": "mallory"})
        assert e.value.code == "DENIED"
        with pytest.raises(RefusedError):
            s.edit(str(r.cluster), {"Bad": Expr("1 +")})
        s.act("remove", str(r.cluster))
    finally:
        s.close()


def test_rm_of_a_big_mixed_cluster_removes_each_job_once_with_its_event(pool: PoolHandle, tmp_path: Path) -> None:
    """condor_rm of 3,000 jobs, idle, held and running among them: the idle and held go
    in bulk, the running are stopped on their slots; each job has one 009 event, one
    history row whose ad is the whole job ad (RemoveReason, its own Args, the hold it
    had), and nothing is left in the queue."""
    n = 3000
    r = pool.submit(f"executable = /bin/sleep\narguments = 300 $(Process)\nlog = big.log\nqueue {n}\n", tmp_path)
    pool.wait_for(f"{r.cluster}.0", lambda j: j["JobStatus"] == 2, what="running")
    held = [f"{r.cluster}.{p}" for p in (1500, 2999)]
    pool.roost("hold", *held, check=True)
    for jid in held:
        pool.wait_for(jid, lambda j: j["JobStatus"] == 5, what="held")
    out = pool.roost("rm", str(r.cluster), check=True)
    assert out.stdout.strip() == f"All jobs in cluster {r.cluster} have been marked for removal"
    got = pool.wait(r.job_ids(), timeout=60)
    assert got["done"] == n
    q = pool.roost("q", "-totals", str(r.cluster), check=True)
    assert "0 jobs;" in q.stdout, q.stdout
    kinds = _kinds(tmp_path / "big.log")
    assert kinds.count(htcondor2.JobEventType.JOB_ABORTED) == n
    s = pool.schedd()
    try:
        hist = s.history(ids=[str(r.cluster)])
    finally:
        s.close()
    ads = {ad["ProcId"]: ad for ad in hist}
    assert sorted(ads) == list(range(n))
    assert all(ad["JobStatus"] == 3 and ad["Cmd"].endswith("sleep") and ad["ClusterId"] == r.cluster
               and ad["RemoveReason"].startswith("via condor_rm (by user ") for ad in ads.values())
    assert ads[1234]["Args"] == "300 1234"  # the proc's own Args over the cluster's
    assert all(ads[int(j.split(".")[1])]["HoldReason"].startswith("via condor_hold") for j in held)
    assert ads[0].get("RemoteHost") or ads[0].get("LastRemoteHost")  # it ran: a slot's name stays


def test_an_act_answer_lists_the_jobs_done_unless_told_not_to(pool: PoolHandle, tmp_path: Path) -> None:
    """``roost rm -all`` prints a count: it asks for no list of the jobs (``list_ids``
    false), and gets the same count and totals; other callers still get the list."""
    r = pool.submit("executable = /bin/sleep\narguments = 300\nhold = true\nqueue 3\n", tmp_path)
    s = pool.schedd()
    try:
        quiet = s.call("ACT", action="release", constraint=f"ClusterId == {r.cluster}", list_ids=False)
        listed = s.call("ACT", action="remove", constraint=f"ClusterId == {r.cluster}")
    finally:
        s.close()
    assert "ids" not in quiet and quiet["count"] == 3 and quiet["totals"] == {"1": 3}
    assert sorted(listed["ids"]) == [f"{r.cluster}.{p}" for p in range(3)] and listed["totals"] == {"1": 3}
    pool.wait(r.job_ids(), timeout=30)
