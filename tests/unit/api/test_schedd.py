"""``roost.api.Schedd`` against a real schedd: what a script written for
``htcondor2.Schedd`` does (submit, query, act, wait, history)."""

from __future__ import annotations

import asyncio
import getpass
import os
import time
from pathlib import Path

import pytest
from net.helpers import ThreadedServer  # tests/unit/net: the one threaded test server

import roost.api as roost
from roost.classad import ClassAd
from roost.submit import SubmitError
from roost.submit.reading import parse_text

IDLE, REMOVED, COMPLETED, HELD = 1, 3, 4, 5


def jobs_of(schedd: roost.Schedd, cluster: int, *attrs: str) -> dict[str, dict]:
    """The cluster's jobs as ``{"C.P": dict}``."""
    return {f"{j['ClusterId']}.{j['ProcId']}": j
            for j in schedd.query_objs(f"ClusterId == {cluster}", list(attrs))}


# -- submitting ---------------------------------------------------------------------


def test_submit_a_dict_makes_count_jobs_and_names_them(schedd: roost.Schedd, job_dir: str) -> None:
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300", "hold": "true",
                       "initialdir": job_dir}, count=3)
    assert r.num_procs == 3 and len(r.clusters) == 1
    assert r.job_ids() == [f"{r.cluster}.{p}" for p in range(3)]
    jobs = jobs_of(schedd, r.cluster, "Cmd", "Args", "Iwd", "JobStatus", "Owner")
    assert sorted(jobs) == r.job_ids()
    for ad in jobs.values():
        assert ad["Cmd"] == "/bin/sleep" and ad["Args"] == "300" and ad["Iwd"] == job_dir
        assert ad["JobStatus"] == HELD and ad["Owner"] == getpass.getuser()  # the jobs are the user's
    schedd.act("remove", str(r.cluster))


def test_submit_text_follows_its_queue_statement_unless_count_is_given(schedd: roost.Schedd) -> None:
    text = "executable = /bin/true\nhold = true\nqueue 2\n"
    assert schedd.submit(text).num_procs == 2
    r = schedd.submit(text, count=4)  # count replaces the file's own queue statement
    assert r.num_procs == 4 and len(jobs_of(schedd, r.cluster)) == 4
    r1 = schedd.submit("executable = /bin/true\nhold = true\n")  # no queue statement: one job
    assert r1.job_ids() == [f"{r1.cluster}.0"]
    schedd.act("remove", constraint=f"ClusterId >= {r.cluster - 1} && ClusterId <= {r1.cluster}")


def test_a_description_that_changes_executable_stays_one_cluster(schedd: roost.Schedd) -> None:
    """As condor_submit: every queue statement lands in one cluster, ProcIds counting on."""
    r = schedd.submit("hold = true\nexecutable = /bin/true\nqueue 2\nexecutable = /bin/echo\nqueue 1\n")
    ((c1, n1),) = r.clusters
    assert n1 == 3 and r.cluster == c1 and r.num_procs == 3
    assert r.job_ids() == [f"{c1}.0", f"{c1}.1", f"{c1}.2"]
    cmds = jobs_of(schedd, c1, "Cmd")
    assert [cmds[k]["Cmd"] for k in sorted(cmds)] == ["/bin/true", "/bin/true", "/bin/echo"]
    schedd.act("remove", [str(c1)])


def test_each_cluster_is_expanded_with_the_id_the_schedd_gave_it(tmp_path: Path) -> None:
    """The cluster's jobs carry the id NEW_CLUSTER gave, ``$(Cluster)`` included, whatever
    the statements: a real server on the schedd's socket plays a schedd."""
    ids = iter([10])
    got: dict[int, dict] = {}

    async def new_cluster(req: dict, peer: object) -> dict:
        return {"cluster": next(ids)}

    async def submit(req: dict, peer: object) -> dict:
        got[req["cluster"]] = req
        return {"cluster": req["cluster"], "count": len(req["procs"])}

    (tmp_path / "run").mkdir()
    with ThreadedServer({"NEW_CLUSTER": new_cluster, "SUBMIT": submit},
                        unix_path=str(tmp_path / "run" / "schedd.sock")):
        with roost.Schedd(tmp_path) as schedd:
            r = schedd.submit("output = out.$(Cluster).$(Process)\nexecutable = /bin/true\nqueue 2\n"
                              "executable = /bin/echo\nqueue 1\n")
    assert r.clusters == [(10, 3)] and r.job_ids() == ["10.0", "10.1", "10.2"]
    assert sorted(got) == [10]
    req = got[10]
    assert len(req["procs"]) == 3
    for p, diff in enumerate(req["procs"]):
        job = {**req["cluster_ad"], **diff}
        assert job["Cmd"] == ("/bin/echo" if p == 2 else "/bin/true") and job["Out"].endswith(f"out.10.{p}")


def test_submit_file_takes_relative_paths_from_the_current_directory(
        schedd: roost.Schedd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As condor_submit: paths are relative to where the user stands, not to the file;
    ``overrides`` set variables the file reads, ``append`` adds commands before queue."""
    files, here = tmp_path / "files", tmp_path / "here"
    files.mkdir()
    here.mkdir()
    (here / "prog").write_text("#!/bin/sh\n")
    (here / "prog").chmod(0o755)
    sub = files / "job.sub"
    sub.write_text("executable = prog\narguments = $(word)\nqueue 2\n")
    monkeypatch.chdir(here)
    r = schedd.submit_file(str(sub), overrides={"word": "hello"}, append=["hold = true"])
    jobs = jobs_of(schedd, r.cluster, "Cmd", "Iwd", "Args", "JobStatus")
    assert len(jobs) == 2
    for ad in jobs.values():
        assert ad["Cmd"] == str(here / "prog") and ad["Iwd"] == str(here)
        assert ad["Args"] == "hello" and ad["JobStatus"] == HELD
    schedd.act("remove", str(r.cluster))


def test_submit_text_takes_relative_paths_from_cwd_and_a_parsed_description_as_is(
        schedd: roost.Schedd, tmp_path: Path) -> None:
    """``cwd=`` stands in for the current directory; a ``SubmitDescription`` already
    parsed (with its own directory) is submitted as it is."""
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "prog").write_text("#!/bin/sh\n")
        (tmp_path / d / "prog").chmod(0o755)
    r = schedd.submit("executable = prog\nhold = true\n", cwd=str(tmp_path / "a"))
    desc = parse_text("executable = prog\nhold = true\nqueue 2\n", cwd=str(tmp_path / "b"))
    r2 = schedd.submit(desc)
    assert r.num_procs == 1 and r2.num_procs == 2 and r2.cluster > r.cluster
    for result, d in ((r, "a"), (r2, "b")):
        for ad in jobs_of(schedd, result.cluster, "Cmd", "Iwd").values():
            assert ad["Cmd"] == str(tmp_path / d / "prog") and ad["Iwd"] == str(tmp_path / d)
    schedd.act("remove", [str(r.cluster), str(r2.cluster)])


@pytest.mark.parametrize("count", [None, 2])
def test_a_macro_whose_name_starts_with_queue_is_not_a_queue_statement(
        schedd: roost.Schedd, count: int | None) -> None:
    r = schedd.submit({"executable": "/bin/true", "hold": "true", "queue_name": "short",
                       "my.Queue": '"$(queue_name)"'}, count=count)
    try:
        jobs = jobs_of(schedd, r.cluster, "Queue")
        assert len(jobs) == (count or 1)
        assert {j["Queue"] for j in jobs.values()} == {"short"}
    finally:
        schedd.act("remove", str(r.cluster))


def test_a_bad_description_names_file_and_line_and_queues_nothing(schedd: roost.Schedd,
                                                                 tmp_path: Path) -> None:
    before = schedd.totals()["Total"]
    sub = tmp_path / "bad.sub"
    sub.write_text("executable = /bin/true\nrequest_memory = (((\nqueue\n")
    with pytest.raises(SubmitError, match=rf"^{sub}:2: request_memory") as err:
        schedd.submit_file(str(sub))
    assert "not a valid ClassAd expression" in str(err.value)
    with pytest.raises(SubmitError, match=r":2: .*never closed"):
        schedd.submit("executable = /bin/true\nqueue 2 in (\n")
    with pytest.raises(FileNotFoundError):
        schedd.submit_file(str(tmp_path / "missing.sub"))
    assert schedd.totals()["Total"] == before


# -- querying -----------------------------------------------------------------------


def test_query_gives_classads_query_objs_dicts_with_the_projection(schedd: roost.Schedd) -> None:
    r = schedd.submit({"executable": "/bin/true", "hold": "true", "my.Colour": '"blue"'}, count=2)
    ads = schedd.query(f"ClusterId == {r.cluster}", ["JobStatus", "Colour"])
    assert len(ads) == 2 and all(isinstance(a, ClassAd) for a in ads)
    assert sorted(a["ProcId"] for a in ads) == [0, 1]  # ids come even when not asked for
    assert {a["Colour"] for a in ads} == {"blue"} and {a["JobStatus"] for a in ads} == {HELD}
    objs = schedd.query_objs(f"ClusterId == {r.cluster}", ["Colour"])
    assert [set(o) for o in objs] == [{"ClusterId", "ProcId", "Colour"}] * 2
    full = schedd.query_objs(f"ClusterId == {r.cluster} && ProcId == 1")
    assert len(full) == 1 and full[0]["Cmd"] == "/bin/true" and full[0]["ProcId"] == 1
    schedd.act("remove", str(r.cluster))


def test_query_by_ids_and_by_owner(schedd: roost.Schedd) -> None:
    r = schedd.submit({"executable": "/bin/true", "hold": "true"}, count=3)
    c = r.cluster
    got = schedd.query_objs(ids=[f"{c}.0", f"{c}.2"], projection=["Owner"])
    assert sorted((j["ClusterId"], j["ProcId"]) for j in got) == [(c, 0), (c, 2)]
    assert len(schedd.query_objs(ids=str(c))) == 3
    owner = got[0]["Owner"]
    assert len(schedd.query_objs(f"ClusterId == {c}", owner=owner)) == 3
    assert schedd.query_objs(f"ClusterId == {c}", owner=owner + "-someone-else") == []
    assert schedd.query(f"ClusterId == {c} && ProcId > 5") == []
    schedd.act("remove", str(c))


def test_query_limit_caps_the_jobs_returned(schedd: roost.Schedd) -> None:
    c = schedd.submit({"executable": "/bin/true", "hold": "true"}, count=4).cluster
    assert len(schedd.query_objs(f"ClusterId == {c}", limit=2)) == 2
    assert len(schedd.query(f"ClusterId == {c}", ["JobStatus"], limit=3)) == 3
    assert len(schedd.query_objs(ids=str(c), limit=10)) == 4
    assert schedd.query_objs(ids=str(c), limit=0) == []
    schedd.act("remove", str(c))


def test_totals_count_jobs_by_state_name(schedd: roost.Schedd) -> None:
    other = schedd.submit({"executable": "/bin/sleep", "arguments": "300"}).cluster  # idle, not counted
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300", "hold": "true"}, count=3)
    mine = f"ClusterId == {r.cluster}"
    assert schedd.totals(mine) == {"Idle": 0, "Running": 0, "Removed": 0, "Completed": 0, "Held": 3,
                                   "Transferring Output": 0, "Suspended": 0, "Total": 3}
    everything = schedd.totals()
    assert everything["Total"] >= 4 and everything["Idle"] >= 1
    schedd.act("release", f"{r.cluster}.1")
    t = schedd.totals(mine)
    assert (t["Held"], t["Idle"], t["Total"]) == (2, 1, 3)
    owner = schedd.query_objs(mine, ["Owner"])[0]["Owner"]
    assert schedd.totals(mine, owner=owner)["Total"] == 3
    assert schedd.totals(mine, owner=owner + "-someone-else")["Total"] == 0
    assert schedd.totals(owner=owner + "-someone-else")["Total"] == 0  # owner alone filters too
    schedd.act("remove", [str(r.cluster), str(other)])


# -- acting -------------------------------------------------------------------------


def test_hold_release_and_remove_report_the_jobs_they_changed(schedd: roost.Schedd) -> None:
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300"}, count=3)
    c = r.cluster
    got = schedd.act("hold", f"{c}.1", reason="disk full")
    assert {k: got[k] for k in ("count", "ids", "denied")} == {"count": 1, "ids": [f"{c}.1"], "denied": []}
    assert got["unchanged"] == {}
    # condor_rm's per-job result codes (1 done, 2 not found, 4 already done), the queue's size
    assert got["results"] == {f"{c}.1": 1} and got["totals"] == {"1": 1} and got["queue_size"] == 3
    jobs = jobs_of(schedd, c, "JobStatus", "HoldReason")
    assert jobs[f"{c}.1"]["JobStatus"] == HELD and jobs[f"{c}.1"]["HoldReason"] == "disk full"
    assert {jobs[f"{c}.{p}"]["JobStatus"] for p in (0, 2)} == {IDLE}
    got = schedd.act("HOLD", [f"{c}.1", f"{c}.9"])  # already held; the action's case does not matter
    assert got["count"] == 0 and got["results"] == {f"{c}.1": 4, f"{c}.9": 2}
    got = schedd.act("release", constraint=f"ClusterId == {c}")
    assert {k: got[k] for k in ("count", "ids", "denied")} == {"count": 1, "ids": [f"{c}.1"], "denied": []}
    assert got["unchanged"] == {}
    assert "results" not in got and got["totals"] == {"1": 1, "3": 2}  # two were not held to be released
    owner = schedd.query_objs(f"ClusterId == {c}", ["Owner"])[0]["Owner"]
    assert schedd.act("remove", owner=owner + "-someone-else", constraint=f"ClusterId == {c}")["count"] == 0
    got = schedd.act("remove", owner=owner, constraint=f"ClusterId == {c} && ProcId != 0")
    assert sorted(got["ids"]) == [f"{c}.1", f"{c}.2"] and got["count"] == 2
    got = schedd.act("remove", (c, 0))
    assert {k: got[k] for k in ("count", "ids", "denied")} == {"count": 1, "ids": [f"{c}.0"], "denied": []}
    assert got["unchanged"] == {}
    assert schedd.query_objs(f"ClusterId == {c}") == []


def test_act_refuses_a_bad_action_or_no_target_without_a_pool(tmp_path: Path) -> None:
    schedd = roost.Schedd(tmp_path)  # nothing runs here: the checks come first
    with pytest.raises(ValueError, match="action must be one of remove, hold, release, suspend, continue, vacate, "
                                         "vacate_fast, not 'explode'"):
        schedd.act("explode", "1")
    with pytest.raises(ValueError, match="act needs ids, a constraint or an owner"):
        schedd.act("remove")
    with pytest.raises(ValueError, match="act needs ids"):
        schedd.act("hold", [], reason="no jobs named")


# -- waiting and history ------------------------------------------------------------


def test_wait_returns_once_the_jobs_finished_and_history_has_them(schedd: roost.Schedd,
                                                                 job_dir: str) -> None:
    r = schedd.submit({"universe": "local", "executable": "/bin/sh",
                       "arguments": "\"-c 'exit 3'\"", "initialdir": job_dir}, count=2)
    seen: list[dict] = []
    got = schedd.wait(r.job_ids(), timeout=30, progress=seen.append)
    assert got["done"] == got["total"] == 2 and got["counts"].get("Finished") == 2
    assert seen and seen[-1] == got  # progress saw the final answer
    assert all(s["total"] == 2 for s in seen)
    hist = schedd.history(f"ClusterId == {r.cluster}", ["ExitCode", "JobStatus"])
    assert sorted((h["ProcId"], h["JobStatus"], h["ExitCode"]) for h in hist) == [
        (0, COMPLETED, 3), (1, COMPLETED, 3)]
    assert schedd.query_objs(f"ClusterId == {r.cluster}") == []  # they left the queue


def test_wait_counts_removed_jobs_done(schedd: roost.Schedd) -> None:
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300"}, count=2)
    schedd.act("remove", str(r.cluster))
    got = schedd.wait(str(r.cluster), timeout=30)
    assert got["done"] == got["total"] == 2


def test_wait_gives_up_after_its_timeout(schedd: roost.Schedd) -> None:
    """No startd here: the job stays idle and the wait must end with TimeoutError."""
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300"})
    seen: list[dict] = []
    try:
        with pytest.raises(TimeoutError, match=r"0 of 1 jobs done after 0.3 s"):
            schedd.wait(r.job_ids(), timeout=0.3, progress=seen.append)
        assert seen and seen[-1]["done"] == 0 and seen[-1]["counts"].get("Idle") == 1
    finally:
        schedd.act("remove", r.job_ids())


def test_a_schedd_that_does_not_answer_in_the_clients_timeout_is_a_pool_error(tmp_path: Path) -> None:
    """``timeout=`` bounds every call: a schedd that takes longer is reported, and the
    same client works again once it answers in time. A real server on the schedd's
    socket plays a schedd that is slow to answer one query."""
    delays = iter([2.0, 0.0])

    async def query_jobs(req: dict, peer: object) -> dict:
        await asyncio.sleep(next(delays))  # time is the point: slower than the client's timeout, once
        return {"totals": {"Total": 7}}

    (tmp_path / "run").mkdir()
    with ThreadedServer({"QUERY_JOBS": query_jobs}, unix_path=str(tmp_path / "run" / "schedd.sock")):
        with roost.Schedd(tmp_path, timeout=0.2) as schedd:
            t0 = time.monotonic()
            with pytest.raises(roost.PoolError, match=r"lost the connection to the schedd: .*no answer in 0.2 s"):
                schedd.totals()
            assert time.monotonic() - t0 < 1.5
            assert schedd.totals() == {"Total": 7}


def test_wait_outlasts_a_client_timeout_shorter_than_the_wait(schedd_daemon) -> None:
    with roost.Schedd(schedd_daemon.home, timeout=0.2) as schedd:
        r = schedd.submit({"executable": "/bin/sleep", "arguments": "300"})
        try:
            with pytest.raises(TimeoutError, match="0 of 1 jobs done after 0.5 s"):
                schedd.wait(r.job_ids(), timeout=0.5)
        finally:
            schedd.act("remove", r.job_ids())


def test_history_lists_only_finished_jobs(schedd: roost.Schedd) -> None:
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300", "hold": "true"}, count=3)
    c = r.cluster
    schedd.act("remove", [f"{c}.0", f"{c}.2"])
    schedd.wait([f"{c}.0", f"{c}.2"], timeout=30)
    hist = schedd.history(projection=["JobStatus"], ids=[str(c)])
    assert sorted((h["ProcId"], h["JobStatus"]) for h in hist) == [(0, REMOVED), (2, REMOVED)]
    assert len(schedd.history(ids=[str(c)], match=1)) == 1
    assert [h["ProcId"] for h in schedd.history("ProcId == 2", ids=str(c))] == [2]
    assert len(schedd.history(ids=str(c), owner=getpass.getuser())) == 2  # the jobs' Owner
    assert schedd.history(ids=str(c), owner=getpass.getuser() + "-someone-else") == []
    assert schedd.query_objs(f"ClusterId == {c}", ["JobStatus"]) == [
        {"ClusterId": c, "ProcId": 1, "JobStatus": HELD}]  # still queued, not history
    schedd.act("remove", str(c))


def test_the_schedd_home_is_a_path(schedd_daemon) -> None:
    assert roost.Schedd(schedd_daemon.home).home == schedd_daemon.home
    assert roost.Schedd(str(schedd_daemon.home)).home == schedd_daemon.home
    assert isinstance(roost.Schedd(os.fspath(schedd_daemon.home)).home, Path)
