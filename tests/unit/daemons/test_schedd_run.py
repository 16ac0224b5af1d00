"""The schedd running jobs: a real schedd process and a test-side startd-like peer
on a real socket (claim, activate, GET_FILES, PUT_FILES, JOB_UPDATE, keep-alives)."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time

import pytest

from roost.eventlog import read_events

from .schedd_harness import FakeStartd, ScheddProc, query, submit, wait_for


@pytest.fixture
def pool(tmp_path):
    s = ScheddProc(tmp_path, "JOB_LEASE_DURATION = 1.5\n").start()
    peers: list[FakeStartd] = []
    try:
        yield s, peers
    finally:
        s.stop()
        for p in peers:
            p.close()


def match_all(s: ScheddProc, startd: FakeStartd, claim: str = "claim-1") -> int:
    with s.daemon_client() as n:
        reqs = n.call("GET_REQUESTS", owner="root")["requests"]
    for r in reqs:
        startd.send_match(s.address, r["autocluster"], claim)
    return len(reqs)


def run_one_held_open(s: ScheddProc, peers: list[FakeStartd], tmp_path) -> tuple[FakeStartd, int]:
    """One `sleep` job (log ``job.log``) running on a fake startd that keeps it running
    (``hang``) until the test says otherwise; the startd and the job's cluster."""
    startd = FakeStartd(s.home)
    startd.hang = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/sleep\nlog = job.log\nqueue\n", str(tmp_path))
        match_all(s, startd)
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 1)
    # it began (the starter said so after its input: 001 is written then)
    wait_for(lambda: "EXECUTE" in [e.type.name for e in read_events(tmp_path / "job.log")])
    return startd, cid


def kinds_when(path, want: list[str]) -> list[str]:
    """The event log's event names once it holds ``want`` (events follow commits)."""
    wait_for(lambda: len(list(read_events(path))) >= len(want))
    return [e.type.name for e in read_events(path)]


def history(s: ScheddProc) -> dict:
    with s.client() as c:
        return {k: v for k, v in query(c, history=True).items() if v["JobStatus"] in (3, 4)}


def test_job_runs_with_files_events_and_history(pool, tmp_path):
    s, peers = pool
    (tmp_path / "in.txt").write_bytes(b"input data")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x").write_bytes(b"xx")

    def run(job, inputs):
        assert job["Cmd"] == "/bin/echo"
        return {"stdout": b"hello\n", "result.dat": inputs["in.txt"][::-1], "sub/y": b"yy"}, {"exit_code": 0}

    startd = FakeStartd(s.home, run)
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/echo\noutput = out.txt\nerror = err.txt\nlog = job.log\n"
                        "transfer_input_files = in.txt, sub\ntransfer_output_remaps = \"sub/y=renamed.y\"\n"
                        "should_transfer_files = YES\nqueue\n", str(tmp_path))
    assert match_all(s, startd) == 1
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["ExitCode"] == 0 and done["NumJobStarts"] == 1
    assert done["RemoteHost"] == "slot1_1@fake" and done["RemoteUserCpu"] == 1.0
    assert sorted(startd.inputs[f"{cid}.0"]) == ["echo", "in.txt", "sub/x"]
    assert startd.inputs[f"{cid}.0"]["in.txt"] == b"input data"
    assert (tmp_path / "out.txt").read_bytes() == b"hello\n"
    assert (tmp_path / "result.dat").read_bytes() == b"atad tupni"
    assert (tmp_path / "renamed.y").read_bytes() == b"yy"
    # 040s around the input (before 001: the job begins after it) and the output
    want = ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "FILE_TRANSFER", "FILE_TRANSFER", "JOB_TERMINATED"]
    kinds_when(tmp_path / "job.log", want)
    events = list(read_events(tmp_path / "job.log"))
    assert [e.type.name for e in events] == want
    assert [e["Type"] for e in events if e.type.name == "FILE_TRANSFER"] == [2, 3, 5, 6]
    assert events[-1]["ReturnValue"] == 0 and events[-1]["TerminatedNormally"] is True
    with s.client() as c:
        assert c.call("QUERY_JOBS", totals=True)["totals"]["Total"] == 0
    wait_for(lambda: "RELEASE_CLAIM" in startd.names())


def test_claim_is_reused_for_the_next_jobs(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home)
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue 4\n", str(tmp_path))
    with s.daemon_client() as n:
        [req] = n.call("GET_REQUESTS", owner="root")["requests"]
        assert req["count"] == 4
    startd.send_match(s.address, req["autocluster"])
    wait_for(lambda: len(history(s)) == 4)
    names = startd.names()
    assert names.count("REQUEST_CLAIM") == 1 and names.count("ACTIVATE_CLAIM") == 4
    wait_for(lambda: "RELEASE_CLAIM" in startd.names())
    kinds_when(tmp_path / "job.log", ["x"] * 12)
    terms = [e for e in read_events(tmp_path / "job.log") if e.type.name == "JOB_TERMINATED"]
    assert sorted(e.proc for e in terms) == [0, 1, 2, 3]


def test_exit_policy_retries_and_holds(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home, lambda job, inputs: ({}, {"exit_code": 3 if job["ProcId"] == 0 else 5}))
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/false\nlog = job.log\nmax_retries = 1\n"
                        "on_exit_hold = ExitCode == 5\nqueue 2\n", str(tmp_path))
    match_all(s, startd)
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["ExitCode"] == 3 and done["NumJobStarts"] == 2 and done["NumJobCompletions"] == 2
    with s.client() as c:
        held = wait_for(lambda: (query(c, ids=[f"{cid}.1"]).get(f"{cid}.1") or {}).get("JobStatus") == 5
                        and query(c, ids=[f"{cid}.1"])[f"{cid}.1"])
    assert held["HoldReasonCode"] == 3 and "OnExitHold" in held["HoldReason"]
    kinds_when(tmp_path / "job.log", ["x"] * 8)
    kinds = [(e.type.name, e.proc) for e in read_events(tmp_path / "job.log")]
    assert kinds.count(("JOB_TERMINATED", 0)) == 2 and ("JOB_HELD", 1) in kinds


def test_remove_running_job_vacates_it(pool, tmp_path):
    s, peers = pool
    startd, cid = run_one_held_open(s, peers, tmp_path)
    with s.client() as c:
        assert c.call("ACT", action="remove", ids=[str(cid)])["count"] == 1
    wait_for(lambda: "DEACTIVATE_CLAIM" in startd.names())
    startd.hang = False  # the starter now reports the (killed) job's exit
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 3
    want = ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "JOB_ABORTED"]
    assert kinds_when(tmp_path / "job.log", want) == want


def test_lost_claim_puts_the_job_back_to_idle(pool, tmp_path):
    s, peers = pool
    startd, _ = run_one_held_open(s, peers, tmp_path)
    with s.client() as c:
        startd.forget_claims = True
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Idle"] == 1)
    want = ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "SHADOW_EXCEPTION"]
    assert kinds_when(tmp_path / "job.log", want) == want


@pytest.mark.parametrize("how", ["kill9", "sigterm"])
def test_restarted_schedd_reconnects_to_running_job(pool, tmp_path, how):
    s, peers = pool
    startd, cid = run_one_held_open(s, peers, tmp_path)
    if how == "kill9":
        s.kill9()
    else:
        s.stop()
    s.start()
    wait_for(lambda: "RECONNECT" in startd.names())
    assert "RELEASE_CLAIM" not in startd.names() and "DEACTIVATE_CLAIM" not in startd.names()
    startd.hang = False
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4
    want = ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "JOB_RECONNECTED", "JOB_TERMINATED"]
    assert kinds_when(tmp_path / "job.log", want) == want


def test_a_job_that_ended_while_the_schedd_was_away_stays_done_across_the_next_restart(pool, tmp_path):
    """RECONNECT answers with one job's exit: it completes at once, its cluster's other
    job runs on, and a schedd killed right after finds the first done. The chaos test
    once saw it Running again (and run twice): the reconnect's own bookkeeping commit,
    queued after the exit's, wrote the proc's row back over its GONE mark."""
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.hang = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/sleep\nlog = job.log\nqueue 2\n", str(tmp_path))
        match_all(s, startd, "claim-1")
        match_all(s, startd, "claim-2")
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 2)
    wait_for(lambda: [e.type.name for e in read_events(tmp_path / "job.log")].count("EXECUTE") == 2)
    s.kill9()
    startd.ended_away[f"{cid}.0"] = {"state": "exited", "exit_code": 0, "usage": {}}
    s.start()
    wait_for(lambda: history(s).get(f"{cid}.0"))
    wait_for(lambda: [e.type.name for e in read_events(tmp_path / "job.log")].count("JOB_RECONNECTED") == 2)
    with s.client() as c:
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"].get("Running") == 1)
    s.stop()  # every commit made is durable (a kill -9 may come after any of them)
    s.start()
    with s.client() as c:
        assert c.call("QUERY_JOBS", totals=True)["totals"].get("Running") == 1
        assert sorted(query(c)) == [f"{cid}.1"]
    terminated = [e.proc for e in read_events(tmp_path / "job.log") if e.type.name == "JOB_TERMINATED"]
    assert terminated == [0]


def test_reconnect_failure_requeues(pool, tmp_path):
    s, peers = pool
    startd, _ = run_one_held_open(s, peers, tmp_path)
    s.kill9()
    startd.claims.clear()
    s.start()
    with s.client() as c:
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Idle"] == 1)


def test_local_universe_runs_on_the_submit_host(pool):
    s, _ = pool
    d = tempfile.mkdtemp()
    os.chmod(d, 0o755)
    try:
        with s.client() as c:
            cid, _ = submit(c, "universe = local\nexecutable = /bin/sh\narguments = \"-c 'echo hi; id -u; exit 7'\"\n"
                            "output = local.out\nlog = job.log\nqueue\n", d)
        done = wait_for(lambda: history(s).get(f"{cid}.0"))
        assert done["ExitCode"] == 7 and done["JobStatus"] == 4
        out = open(os.path.join(d, "local.out")).read().split()
        assert out[0] == "hi" and (os.geteuid() != 0 or out[1] != "0")
        want = ["SUBMIT", "EXECUTE", "JOB_TERMINATED"]
        assert kinds_when(os.path.join(d, "job.log"), want) == want
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the schedd checks owners' rights only when it runs as root")
def test_files_the_owner_may_not_read_are_not_sent(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home)
    peers.append(startd)
    d = tempfile.mkdtemp()
    os.chmod(d, 0o777)
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write("root only")
    os.chmod(secret, 0o600)
    try:
        with s.client() as c:
            cid, _ = submit(c, f"executable = /bin/cat\ntransfer_input_files = {secret}\n"
                            "should_transfer_files = YES\nlog = job.log\nqueue\n", d, owner="nobody")
        with s.daemon_client() as n:
            [req] = n.call("GET_REQUESTS", owner="nobody")["requests"]
        startd.send_match(s.address, req["autocluster"])
        with s.client() as c:
            held = wait_for(lambda: (query(c).get(f"{cid}.0") or {}).get("HoldReasonCode") and query(c)[f"{cid}.0"])
        assert held["JobStatus"] == 5 and held["HoldReasonCode"] == 13 and "may not read" in held["HoldReason"]
        assert not startd.inputs.get(f"{cid}.0")
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_local_job_left_by_a_killed_schedd_is_replaced(pool):
    s, _ = pool
    d = tempfile.mkdtemp()
    os.chmod(d, 0o755)
    try:
        with s.client() as c:
            cid, _ = submit(c, "universe = local\nexecutable = /bin/sleep\narguments = 30\nlog = job.log\nqueue\n", d)
            wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 1)
        def committed_claim():
            db = sqlite3.connect(s.home / "spool" / "job_queue.db")
            try:
                return db.execute("SELECT claim FROM procs WHERE status = 2").fetchone()
            finally:
                db.close()

        pid = json.loads(wait_for(committed_claim)[0])["local_pid"]
        s.kill9()
        assert os.path.exists(f"/proc/{pid}")  # the job outlived its schedd
        s.start()
        with s.client() as c:
            again = wait_for(lambda: (query(c).get(f"{cid}.0") or {}).get("NumJobStarts") == 2 and query(c)[f"{cid}.0"])
            assert again["JobStatus"] == 2
            assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
            c.call("ACT", action="remove", ids=[str(cid)])
        log = os.path.join(d, "job.log")
        wait_for(lambda: "JOB_ABORTED" in [e.type.name for e in read_events(log)])
        kinds = [e.type.name for e in read_events(log)]
        # (the first EXECUTE may be missing: the kill can land between commit and log)
        assert kinds[0] == "SUBMIT" and kinds[-3:] == ["SHADOW_EXCEPTION", "EXECUTE", "JOB_ABORTED"]
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_refused_claim_leaves_the_job_idle_for_the_next_match(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.deny_claims = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nqueue\n", str(tmp_path))
    assert match_all(s, startd) == 1
    wait_for(lambda: "REQUEST_CLAIM" in startd.names())
    startd.deny_claims = False
    wait_for(lambda: match_all(s, startd, claim="claim-2") == 1)  # offered again once given back
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["NumJobStarts"] == 1


def test_wait_jobs_counts_a_job_done_only_once_its_exit_is_logged_and_committed(pool):
    """Whatever WAIT_JOBS calls done already has its terminated event in the user log
    and its history row committed: `roost wait` returning means both are there."""
    s, _ = pool
    d = tempfile.mkdtemp()
    os.chmod(d, 0o755)
    n = 30
    try:
        with s.client() as c:
            cid, _ = submit(c, f"universe = local\nexecutable = /bin/true\nlog = job.log\nqueue {n}\n", d)
            seen = 0
            for _ in range(5000):
                if seen >= n:
                    break
                got = c.call("WAIT_JOBS", ids=[str(cid)], timeout=0.2)
                seen = got["done"]
                logged = sum(1 for e in read_events(os.path.join(d, "job.log")) if e.type.name == "JOB_TERMINATED")
                db = sqlite3.connect(s.home / "spool" / "job_queue.db")
                try:
                    committed = db.execute("SELECT COUNT(*) FROM history WHERE cluster = ?", (cid,)).fetchone()[0]
                finally:
                    db.close()
                assert logged >= seen and committed >= seen, (seen, logged, committed)
            assert seen == n
            for p in range(n):
                assert c.call("WAIT_JOBS", ids=[f"{cid}.{p}"], timeout=5)["done"] == 1
    finally:
        import shutil

        shutil.rmtree(d, ignore_errors=True)


def test_refused_activation_backs_off_instead_of_storming(pool, tmp_path):
    """claim -> activation refused -> release -> rematch must not loop at full speed:
    the refused autocluster is left out of GET_REQUESTS for a growing while (1 s, then
    2 s, ...), logged once, and offered again (then run) once the startd accepts."""
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.deny_activations = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nqueue\n", str(tmp_path))
    assert match_all(s, startd) == 1
    wait_for(lambda: "RELEASE_CLAIM" in startd.names())  # refused, claim given up
    assert match_all(s, startd, claim="claim-2") == 0  # not offered again at once
    wait_for(lambda: match_all(s, startd, claim="claim-2") == 1)  # after the back-off: refused again
    wait_for(lambda: startd.names().count("RELEASE_CLAIM") == 2)
    assert match_all(s, startd, claim="claim-3") == 0  # a longer back-off now
    startd.deny_activations = False
    wait_for(lambda: match_all(s, startd, claim="claim-3") == 1)
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["NumJobStarts"] == 1
    assert startd.names().count("ACTIVATE_CLAIM") == 3
    assert s.log().count("not offered for") == 1  # logged when the back-off began, not per refusal


def test_a_reused_claim_takes_the_owners_jobs_in_jobprio_order(pool, tmp_path):
    """condor_submit's `priority`: a later, more urgent cluster runs before the earlier
    jobs on a claim the schedd reuses, not only at negotiation."""
    s, peers = pool
    startd = FakeStartd(s.home)
    peers.append(startd)
    with s.client() as c:
        low, _ = submit(c, "executable = /bin/true\nqueue 3\n", str(tmp_path))
        high, _ = submit(c, "executable = /bin/true\npriority = 10\nqueue 2\n", str(tmp_path))
        neg, _ = submit(c, "executable = /bin/true\npriority = -5\nqueue 1\n", str(tmp_path))
    with s.daemon_client() as n:
        reqs = n.call("GET_REQUESTS", owner="root")["requests"]
    startd.send_match(s.address, reqs[0]["autocluster"])  # one claim: every job runs on it in turn
    wait_for(lambda: len(history(s)) == 6)
    ran = [f"{r['job_ad']['ClusterId']}.{r['job_ad']['ProcId']}" for c, r in startd.calls if c == "ACTIVATE_CLAIM"]
    assert ran == [f"{high}.0", f"{high}.1", f"{low}.0", f"{low}.1", f"{low}.2", f"{neg}.0"]


def test_a_cut_input_transfer_is_not_the_jobs_fault(pool, tmp_path):
    """The starter reports its input transfer cut (a reset, a schedd restarting) as
    ``failed`` with ``retry``: the job goes back to Idle and runs again; no hold."""
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.cut_transfer_once = "input transfer failed: GET_FILES from x: Connection reset by peer"
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue\n", str(tmp_path))
        match_all(s, startd)
        idle = wait_for(lambda: (j := query(c, ids=[f"{cid}.0"]).get(f"{cid}.0")) and j.get("JobStatus") == 1
                        and j.get("NumShadowExceptions") == 1 and j)
        assert "HoldReasonCode" not in idle or not idle.get("HoldReasonCode")
    match_all(s, startd, claim="claim-2")
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["ExitCode"] == 0
    kinds = kinds_when(tmp_path / "job.log", ["SUBMIT", "EXECUTE", "SHADOW_EXCEPTION", "EXECUTE", "JOB_TERMINATED"])
    assert "JOB_HELD" not in kinds and kinds.count("SHADOW_EXCEPTION") == 1, kinds


def test_output_the_job_did_not_make_holds_it_with_code_12(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home, lambda job, inputs: (
        {}, {"exit_code": 0, "output_error": "result.txt: the job did not create it (No such file or directory)"}))
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue\n", str(tmp_path))
        match_all(s, startd)
        held = wait_for(lambda: (j := query(c, ids=[f"{cid}.0"]).get(f"{cid}.0")) and j.get("JobStatus") == 5 and j)
    assert (held["HoldReasonCode"], held["HoldReasonSubCode"]) == (12, 2), held
    assert "result.txt: the job did not create it" in held["HoldReason"]
    kinds = kinds_when(tmp_path / "job.log", ["SUBMIT", "EXECUTE", "JOB_HELD"])
    assert "JOB_TERMINATED" not in kinds, kinds


def test_a_suspension_shows_as_status_7_and_events_010_011(pool, tmp_path):
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.suspend_for = 1.0
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue\n", str(tmp_path))
        match_all(s, startd)
        sus = wait_for(lambda: (j := query(c, ids=[f"{cid}.0"]).get(f"{cid}.0")) and j.get("JobStatus") == 7 and j)
        assert sus["TotalSuspensions"] == 1 and sus["LastSuspensionTime"] > 0
        assert c.call("QUERY_JOBS", totals=True)["totals"].get("Suspended") == 1
    done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["TotalSuspensions"] == 1
    kinds = kinds_when(tmp_path / "job.log", ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "JOB_SUSPENDED", "JOB_UNSUSPENDED", "JOB_TERMINATED"])
    assert kinds == ["SUBMIT", "FILE_TRANSFER", "FILE_TRANSFER", "EXECUTE", "JOB_SUSPENDED", "JOB_UNSUSPENDED", "JOB_TERMINATED"], kinds
    text = (tmp_path / "job.log").read_text()
    assert "Job was suspended.\n\tNumber of processes actually suspended: 3" in text and "Job was unsuspended." in text


def test_a_machine_that_always_cuts_the_transfer_cannot_requeue_a_job_for_ever(pool, tmp_path):
    from roost.daemons.schedd.shadow import MAX_TRANSFER_RETRIES

    s, peers = pool
    startd = FakeStartd(s.home)
    startd.cut_transfer_once, startd.cut_transfer_always = "GET_FILES from x: Connection reset by peer", True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue\n", str(tmp_path))
        for i in range(MAX_TRANSFER_RETRIES + 1):
            wait_for(lambda: query(c, ids=[f"{cid}.0"])[f"{cid}.0"]["JobStatus"] in (1, 5))
            if query(c, ids=[f"{cid}.0"])[f"{cid}.0"]["JobStatus"] == 5:
                break
            wait_for(lambda n=i: match_all(s, startd, claim=f"claim-{n}") > 0)  # offered again after its back-off
            wait_for(lambda n=i: query(c, ids=[f"{cid}.0"])[f"{cid}.0"].get("NumShadowExceptions", 0) > n
                     or query(c, ids=[f"{cid}.0"])[f"{cid}.0"]["JobStatus"] == 5)
        held = wait_for(lambda: (j := query(c, ids=[f"{cid}.0"])[f"{cid}.0"]) and j["JobStatus"] == 5 and j)
    assert held["NumShadowExceptions"] == MAX_TRANSFER_RETRIES and held["HoldReasonCode"] == 13, held


def test_requeue_back_off_doubles_from_the_second_fault() -> None:
    from roost.daemons.schedd.lifecycle import requeue_backoff

    assert [requeue_backoff(n, 1.0, 60.0) for n in range(1, 10)] == [0, 1, 2, 4, 8, 16, 32, 60, 60]
    assert requeue_backoff(5, 0.0, 60.0) == 0  # SCHEDD_REQUEUE_BACKOFF = 0: none


def test_a_requeued_job_waits_out_its_back_off_before_it_is_offered(tmp_path):
    from roost.daemons.schedd.lifecycle import requeue_backoff

    s = ScheddProc(tmp_path, "SCHEDD_REQUEUE_BACKOFF = 1.5\nSCHEDD_REQUEUE_BACKOFF_MAX = 1.5\n")
    peers: list[FakeStartd] = []
    try:
        s.start()
        startd = FakeStartd(s.home)
        startd.cut_transfer_once, startd.cut_transfer_always = "GET_FILES from x: Connection reset by peer", True
        peers.append(startd)
        with s.client() as c:
            cid, _ = submit(c, "executable = /bin/true\nlog = job.log\nqueue\n", str(tmp_path))
            match_all(s, startd, claim="claim-a")
            wait_for(lambda: query(c, ids=[f"{cid}.0"])[f"{cid}.0"].get("NumShadowExceptions", 0) == 1)
            wait_for(lambda: match_all(s, startd, claim="claim-b") > 0)  # the first fault: offered at once
            wait_for(lambda: query(c, ids=[f"{cid}.0"])[f"{cid}.0"].get("NumShadowExceptions", 0) == 2)
            t0 = time.monotonic()
            with s.daemon_client() as n:
                assert n.call("GET_REQUESTS", owner="root")["requests"] == []  # waiting it out
            wait_for(lambda: match_all(s, startd, claim="claim-c") > 0, timeout=10)
            waited = time.monotonic() - t0
            assert query(c, ids=[f"{cid}.0"])[f"{cid}.0"]["JobStatus"] in (1, 2)
        assert 1.0 < waited < 5.0, waited
        assert requeue_backoff(2, 1.5, 1.5) == 1.5
    finally:
        for p in peers:
            p.close()
        s.stop()


@pytest.mark.parametrize("cmd", ["PUT_FILES", "PUT_CHECKPOINT"])
def test_put_files_for_a_claim_the_schedd_does_not_serve_keeps_the_stream_in_step(pool, cmd):
    """A restarted schedd that has not yet reconnected answers NOT_FOUND, and reads the
    file bytes first: the starter's next request on that connection is read as one
    (the chaos test once saw the bytes read as a frame header, and a job held)."""
    s, _peers = pool
    data = b"processed 42 on exec1\n" * 100
    with s.daemon_client() as c:
        c.send({"cmd": cmd, "job": "9.0", "claim_id": "no-such-claim",
                "files": [{"name": "out", "size": len(data), "mode": 0o644}]})
        c.send_bytes(data)
        first = c.recv()
        assert first.get("ok") is not True and first.get("code") == "NOT_FOUND", first
        second = c.call("QUERY_JOBS", totals=True)
        assert "totals" in second


def test_a_claim_request_without_an_answer_is_released_and_the_job_stays_idle(pool, tmp_path):
    """The startd granted the claim but its answer never came (the connection was cut):
    the shadow releases the claim (else the slot stays claimed until its lease ends)
    and the job is offered again."""
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.cut_claims = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nqueue\n", str(tmp_path))
        assert match_all(s, startd) == 1
        release = wait_for(lambda: next((r for n, r in startd.calls if n == "RELEASE_CLAIM"), None))
        assert release["claim_id"] == "claim-1" and "claim-1" not in startd.claims
        assert "ACTIVATE_CLAIM" not in startd.names()
        assert c.call("QUERY_JOBS", totals=True)["totals"]["Idle"] == 1
        startd.cut_claims = False
        wait_for(lambda: match_all(s, startd, claim="claim-2") == 1, timeout=20)  # after the refusal's back-off
        done = wait_for(lambda: history(s).get(f"{cid}.0"))
    assert done["JobStatus"] == 4 and done["NumJobStarts"] == 1


def test_starts_in_flight_per_startd_are_bounded(tmp_path):
    """SCHEDD_MAX_STARTING_PER_STARTD = 2: of five matches on one startd, two claims are
    requested until their jobs report running; then the others follow, and all run."""
    s = ScheddProc(tmp_path, "SCHEDD_MAX_STARTING_PER_STARTD = 2\n").start()
    startd = FakeStartd(s.home)
    try:
        startd.hold_running = True
        startd.hang = True
        with s.client() as c:
            cid, _ = submit(c, "executable = /bin/sleep\nqueue 5\n", str(tmp_path))
            with s.daemon_client() as n:
                (req,) = n.call("GET_REQUESTS", owner="root")["requests"]
            for i in range(5):
                startd.send_match(s.address, req["autocluster"], f"claim-{i}")
            wait_for(lambda: startd.names().count("ACTIVATE_CLAIM") == 2)
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:  # nothing more comes while those two start
                assert startd.names().count("REQUEST_CLAIM") == 2
                time.sleep(0.05)
            startd.hold_running = False
            wait_for(lambda: startd.names().count("ACTIVATE_CLAIM") == 5)
            wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 5)
            assert startd.names().count("REQUEST_CLAIM") == 5
    finally:
        startd.hang = False
        s.stop()
        startd.close()


def test_a_checkpoint_sent_again_after_the_schedd_died_before_answering_is_counted_once(pool, tmp_path):
    """The schedd kept a checkpoint and was killed before its answer: the starter sends
    the same checkpoint (same ``checkpoint_id``) to the restarted schedd, which keeps
    the count (the CI once saw NumCkpts 8 for 7 checkpoints); a new id counts again."""
    s, peers = pool
    startd = FakeStartd(s.home)
    startd.hang = True
    peers.append(startd)
    with s.client() as c:
        cid, _ = submit(c, "executable = /bin/sleep\ncheckpoint_exit_code = 85\nshould_transfer_files = YES\n"
                        "transfer_checkpoint_files = state\nqueue\n", str(tmp_path))
        match_all(s, startd)
        wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 1)
    claim, jid = "claim-1#d", f"{cid}.0"

    def put(ckpt_id: str, data: bytes) -> dict:
        with s.daemon_client() as d:
            d.send({"cmd": "PUT_CHECKPOINT", "job": jid, "claim_id": claim, "checkpoint_id": ckpt_id,
                    "files": [{"name": "state", "size": len(data), "mode": 0o644}]})
            d.send_bytes(data)
            return d.recv()

    def ckpts() -> tuple:
        with s.client() as c:
            ad = query(c)[jid]
        return ad.get("NumCkpts"), ad.get("CheckpointNumber")

    first = put("a1", b"step 3")
    assert first.get("ok") is True and ckpts() == (1, first["number"]), first
    s.kill9()
    s.start()
    wait_for(lambda: "RECONNECT" in startd.names())
    again = wait_for(lambda: (r := put("a1", b"step 3")).get("ok") and r)  # served once reconnected
    assert again["number"] == first["number"] and ckpts() == (1, first["number"])
    second = put("b2", b"step 6")
    assert second.get("ok") is True and second["number"] != first["number"]
    assert ckpts() == (2, second["number"])
    bad = put("x" * 65, b"?")
    assert bad.get("ok") is not True and bad.get("code") == "BAD_REQUEST", bad
    assert ckpts() == (2, second["number"])
