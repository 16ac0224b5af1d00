"""A real schedd process with real clients: submit, durability across kill -9,
queries, totals, actions, waits, autocluster requests, hostile input."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from roost.eventlog import read_events
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .daemon_procs import pool_token, user_identity
from .schedd_harness import ScheddProc, query, submit, wait_for

JOB = """\
executable = /bin/echo
arguments = hello $(Process)
output = out.$(Process)
log = job.log
request_memory = {mem}
queue {n}
"""


@pytest.fixture
def schedd(tmp_path):
    s = ScheddProc(tmp_path).start()
    try:
        yield s
    finally:
        s.stop()


def test_submit_is_durable_across_kill9(tmp_path):
    s = ScheddProc(tmp_path).start()
    try:
        with s.client() as c:
            cid, n = submit(c, JOB.format(mem=100, n=3), str(tmp_path))
            assert n == 3
            jobs = query(c)
            assert sorted(jobs) == [f"{cid}.0", f"{cid}.1", f"{cid}.2"]
            assert jobs[f"{cid}.1"]["Args"] == "hello 1" and jobs[f"{cid}.1"]["JobStatus"] == 1
            c.call("ACT", action="hold", ids=[f"{cid}.2"])
        s.kill9()
        s.start()
        with s.client() as c:
            jobs = query(c)
            assert sorted(jobs) == [f"{cid}.0", f"{cid}.1", f"{cid}.2"]
            assert jobs[f"{cid}.2"]["JobStatus"] == 5
            assert jobs[f"{cid}.2"]["HoldReasonCode"] == 1
            assert jobs[f"{cid}.0"]["Out"] == "out.0"
            # ids keep growing after a restart
            cid2, _ = submit(c, JOB.format(mem=100, n=1), str(tmp_path))
            assert cid2 > cid
    finally:
        s.stop()


def test_query_totals_constraint_projection(schedd, tmp_path):
    with schedd.client() as c:
        a, _ = submit(c, JOB.format(mem=100, n=4), str(tmp_path))
        b, _ = submit(c, JOB.format(mem=2000, n=2), str(tmp_path), owner="alice")
        t = c.call("QUERY_JOBS", totals=True)["totals"]
        assert t["Idle"] == 6 and t["Total"] == 6 and t["Running"] == 0
        assert c.call("QUERY_JOBS", totals=True, owner="alice")["totals"]["Idle"] == 2
        big = query(c, constraint="RequestMemory > 1000")
        assert sorted(big) == [f"{b}.0", f"{b}.1"]
        per_proc = query(c, constraint=f'ClusterId == {a} && ProcId >= 2')
        assert sorted(per_proc) == [f"{a}.2", f"{a}.3"]
        args = query(c, constraint='Args == "hello 3"')
        assert sorted(args) == [f"{a}.3"]
        proj = c.call("QUERY_JOBS", ids=[f"{a}.1"], projection=["Args", "Owner"])
        assert proj["jobs"] == [[a, 1, {"Args": "hello 1", "ProcId": 1}]]
        assert proj["clusters"] == {str(a): {"Args": "hello 0", "Owner": "root"}}
        assert len(c.call("QUERY_JOBS", limit=3)["jobs"]) == 3
        plain = c.call("QUERY_JOBS", projection=["args", "JobStatus"], owner="alice")
        assert plain["clusters"] == {str(b): {"Args": "hello 0", "JobStatus": 1}}
        assert plain["jobs"] == [[b, 0, {"ProcId": 0}], [b, 1, {"ProcId": 1, "Args": "hello 1"}]]
        c.call("ACT", action="hold", constraint="RequestMemory > 1000")
        t = c.call("QUERY_JOBS", totals=True)["totals"]
        assert t["Held"] == 2 and t["Idle"] == 4
        assert c.call("QUERY_JOBS", totals=True, constraint="JobStatus == 5")["totals"]["Held"] == 2


def test_act_remove_hold_release_and_events(schedd, tmp_path):
    with schedd.client() as c:
        cid, _ = submit(c, JOB.format(mem=100, n=2), str(tmp_path))
        r = c.call("ACT", action="hold", ids=[f"{cid}.0"], reason="wait a bit")
        assert {k: r[k] for k in ("count", "ids", "denied")} == {"count": 1, "ids": [f"{cid}.0"], "denied": []}
        assert r["results"] == {f"{cid}.0": 1} and r["totals"] == {"1": 1}  # AR_SUCCESS, per job id named
        assert r["unchanged"] == {}
        again = c.call("ACT", action="hold", ids=[f"{cid}.0"])  # already held: named with its JobStatus
        assert (again["count"], again["unchanged"]) == (0, {f"{cid}.0": 5})
        # an idle job is not suspended, continued or vacated (only a shadow's running job is)
        for action in ("suspend", "continue", "vacate", "vacate_fast"):
            got = c.call("ACT", action=action, ids=[f"{cid}.1"])
            assert (got["count"], got["unchanged"]) == (0, {f"{cid}.1": 1}), action
        assert query(c, ids=[f"{cid}.0"])[f"{cid}.0"]["HoldReason"] == "wait a bit"
        c.call("ACT", action="release", ids=[f"{cid}.0"])
        j = query(c, ids=[f"{cid}.0"])[f"{cid}.0"]
        assert j["JobStatus"] == 1 and "HoldReason" not in j and j["LastHoldReason"] == "wait a bit"
        r = c.call("ACT", action="remove", ids=[str(cid)])
        assert r["count"] == 2
        assert query(c) == {}
        hist = query(c, history=True)
        assert sorted(hist) == [f"{cid}.0", f"{cid}.1"]
        assert hist[f"{cid}.1"]["JobStatus"] == 3 and "condor_rm" in hist[f"{cid}.1"]["RemoveReason"]
        w = c.call("WAIT_JOBS", ids=[str(cid)], timeout=1)
        assert w["done"] == 2 and w["total"] == 2
    events = [(e.type.name, e.cluster, e.proc) for e in read_events(tmp_path / "job.log")]
    assert events == [
        ("SUBMIT", cid, 0), ("SUBMIT", cid, 1), ("JOB_HELD", cid, 0), ("JOB_RELEASED", cid, 0),
        ("JOB_ABORTED", cid, 0), ("JOB_ABORTED", cid, 1),
    ]


def test_history_with_a_limit_and_a_constraint_reads_pages_until_enough_match(schedd, tmp_path):
    """condor_history -limit N -constraint ...: the newest N that match, found a page of
    rows at a time (not all of a 100,000-row history); without a limit, every match."""
    with schedd.client() as c:
        cid, _ = submit(c, "executable = /bin/true\narguments = $(Process)\nqueue 1200\n", str(tmp_path))
        c.call("ACT", action="remove", ids=[str(cid)])
        rare = "JobStatus == 3 && ProcId % 100 == 7"
        got = c.call("QUERY_JOBS", constraint=rare, history=True, limit=5)["jobs"]
        assert sorted(p for _c, p, _d in got) == [707, 807, 907, 1007, 1107]  # the newest: highest procs first
        every = c.call("QUERY_JOBS", constraint=rare, history=True)["jobs"]
        assert sorted(p for _c, p, _d in every) == [p * 100 + 7 for p in range(12)]
        few = c.call("QUERY_JOBS", constraint="JobStatus == 3", history=True, limit=3)["jobs"]
        assert [p for _c, p, _d in few] == [1199, 1198, 1197]


def test_wait_jobs_wakes_on_change(schedd, tmp_path):
    import threading

    with schedd.client() as c:
        cid, _ = submit(c, JOB.format(mem=100, n=1), str(tmp_path))

    def later():
        time.sleep(0.3)  # time is the point: the removal comes while WAIT_JOBS waits
        with schedd.client() as c2:
            c2.call("ACT", action="remove", ids=[f"{cid}.0"])

    t = threading.Thread(target=later)
    t.start()
    with schedd.client() as c:
        t0 = time.monotonic()
        w = c.call("WAIT_JOBS", ids=[f"{cid}.0"], timeout=20)
        assert time.monotonic() - t0 < 10
        assert w["done"] == 1 and w["total"] == 1
        w = c.call("WAIT_JOBS", ids=[f"{cid}.0"], timeout=0)
        assert w["done"] == 1
    t.join()


def test_get_requests_groups_into_autoclusters(schedd, tmp_path):
    with schedd.client() as c:
        a, _ = submit(c, JOB.format(mem=100, n=5), str(tmp_path))
        b, _ = submit(c, JOB.format(mem=2000, n=3), str(tmp_path))
        submit(c, JOB.format(mem=2000, n=2), str(tmp_path), owner="alice")
        c.call("ACT", action="hold", ids=[f"{a}.4"])
    with SyncClient(schedd.address, timeout=5, token=pool_token(schedd.home)) as n:  # the negotiator
        reqs = n.call("GET_REQUESTS", owner="root")["requests"]
        counts = sorted((r["count"], r["ad"]["RequestMemory"]) for r in reqs)
        assert counts == [(3, 2000), (4, 100)]
        assert all(r["ad"]["Owner"] == "root" and isinstance(r["autocluster"], int) for r in reqs)
        assert len({r["autocluster"] for r in reqs}) == 2
        assert n.call("GET_REQUESTS", owner="alice@somewhere")["requests"][0]["count"] == 2
        assert n.call("GET_REQUESTS", owner="nobody-here")["requests"] == []


def test_malformed_requests_leave_the_daemon_up(schedd, tmp_path):
    with schedd.client() as c:
        with pytest.raises(RemoteError) as e:
            c.call("SUBMIT", cluster=999, cluster_ad={"Cmd": "/bin/true"}, procs=[{}])
        assert e.value.code == "BAD_REQUEST"
        cid = c.call("NEW_CLUSTER")["cluster"]
        for bad in (
            {"cluster_ad": {"Owner": "root"}, "procs": [{"ProcId": 0}]},  # no Cmd
            {"cluster_ad": {"Cmd": "/bin/true", "Requirements": "/Expr(1 +* )/"}, "procs": [{"ProcId": 0}]},
            {"cluster_ad": {"Cmd": "/bin/true"}, "procs": [{"ProcId": 0}, {"ProcId": 0}]},
            {"cluster_ad": {"Cmd": "/bin/true"}, "procs": []},
            {"cluster_ad": {"Cmd": "/bin/true"}, "procs": [{"ProcId": "x"}]},
            {"cluster_ad": "nope", "procs": [{}]},
            # issue 25's review: ClassAd names ignore case, so a second spelling of Owner
            # (or of AccountingGroup) would be what the startd or accountant reads
            {"cluster_ad": {"Cmd": "/bin/true", "Owner": "root", "owner": "alice"}, "procs": [{"ProcId": 0}]},
            {"cluster_ad": {"Cmd": "/bin/true", "AccountingGroup": "alice", "accountinggroup": "g.root"},
             "procs": [{"ProcId": 0}]},
            {"cluster_ad": {"Cmd": "/bin/true", "Owner": "root"}, "procs": [{"ProcId": 0, "owner": "alice"}]},
            {"cluster_ad": {"Cmd": "/bin/true"}, "procs": [{"ProcId": 0, "USER": "alice@elsewhere"}]},
            {"cluster_ad": {"Cmd": "/bin/true"}, "procs": [{"ProcId": 0, "Cmd": "/bin/a", "CMD": "/bin/b"}]},
        ):
            with pytest.raises(RemoteError) as e:
                c.call("SUBMIT", cluster=cid, **bad)
            assert e.value.code == "BAD_REQUEST", bad
        assert c.call("QUERY_JOBS")["jobs"] == []
        for cmd, args in (
            ("ACT", {"action": "explode", "ids": ["1"]}),
            ("ACT", {"action": "remove"}),
            ("QUERY_JOBS", {"constraint": "((("}),
            ("QUERY_JOBS", {"ids": ["x.y"]}),
            ("WAIT_JOBS", {"ids": ["1.x"]}),
            ("JOB_UPDATE", {"claim_id": "nope", "job": "1.0", "state": "exited"}),
            ("GET_FILES", {"claim_id": "nope", "job": "1.0"}),
        ):
            with pytest.raises(RemoteError):
                c.call(cmd, **args)
    # raw garbage on the TCP port
    host, port = schedd.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">I", 5) + b"\xff\xfe{{{")
        sock.recv(1000)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(struct.pack(">I", 2**31))
        sock.recv(1000)
    with schedd.client() as c:
        cid, n = submit(c, JOB.format(mem=100, n=1), str(tmp_path))
        assert n == 1 and wait_for(lambda: query(c))
    assert schedd.proc.poll() is None


def test_submit_owner_from_unix_peer(schedd, tmp_path):
    with schedd.client() as c:
        cid = c.call("NEW_CLUSTER")["cluster"]
        c.call("SUBMIT", cluster=cid, cluster_ad={"Cmd": "/bin/true", "Iwd": str(tmp_path)}, procs=[{"ProcId": 0}])
        job = query(c)[f"{cid}.0"]
        import os
        import pwd

        assert job["Owner"] == pwd.getpwuid(os.getuid()).pw_name
        assert job["ClusterId"] == cid and isinstance(job["QDate"], int)


def test_unauthenticated_tcp_peers_may_read_but_not_write(schedd, tmp_path):
    with schedd.client() as c:
        cid, _ = submit(c, JOB.format(mem=100, n=1), str(tmp_path))
    with SyncClient(schedd.address, timeout=5) as tcp:
        assert tcp.call("QUERY_JOBS", totals=True)["totals"]["Idle"] == 1
        assert tcp.call("WAIT_JOBS", ids=[f"{cid}.0"], timeout=0)["total"] == 1
        for cmd, args in (
            ("NEW_CLUSTER", {}),
            ("SUBMIT", {"cluster": cid + 1, "cluster_ad": {"Cmd": "/bin/true"}, "procs": [{"ProcId": 0}]}),
            ("SUBMIT_TEXT", {"text": "executable = /bin/true\nqueue\n", "cwd": str(tmp_path)}),
            ("ACT", {"action": "remove", "owner": "root"}),
            ("ACT", {"action": "hold", "ids": [f"{cid}.0"]}),
            ("GET_REQUESTS", {"owner": "root"}),
            ("MATCHES", {"matches": []}),
            ("JOB_UPDATE", {"claim_id": "x", "job": f"{cid}.0", "state": "exited"}),
        ):
            with pytest.raises(RemoteError) as e:
                tcp.call(cmd, **args)
            assert e.value.code == "PERMISSION_DENIED", (cmd, e.value)
            assert e.value.message.startswith(f"{cmd} refused to an unauthenticated peer: ")
            assert "\n" not in e.value.message
    with schedd.client() as c:
        jobs = query(c)
    assert list(jobs) == [f"{cid}.0"] and jobs[f"{cid}.0"]["JobStatus"] == 1  # untouched, nothing added


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="only a root schedd runs other users' jobs")
def test_a_user_token_acts_on_that_users_jobs_only(schedd, tmp_path):
    job = "executable = /bin/true\nqueue\n"
    with schedd.client() as c:  # root, a queue super user, submits for alice
        alice_job, _ = submit(c, job, str(tmp_path), owner="alice")
    bob = SyncClient(schedd.address, timeout=5, token=pool_token(schedd.home, user_identity(schedd.home, "bob")))
    with bob:
        mine, n = submit(bob, job, str(tmp_path), owner="bob")
        assert n == 1
        jobs = query(bob)  # READ: bob sees the whole queue
        assert jobs[f"{mine}.0"]["Owner"] == "bob" and jobs[f"{alice_job}.0"]["Owner"] == "alice"
        with pytest.raises(RemoteError) as e:
            submit(bob, job, str(tmp_path), owner="alice")
        assert e.value.code == "DENIED"
        assert "user bob may not submit jobs owned by 'alice'" in e.value.message and "\n" not in e.value.message
        for action in ("hold", "remove"):
            assert bob.call("ACT", action=action, ids=[f"{alice_job}.0"])["count"] == 0
            assert bob.call("ACT", action=action, owner="alice")["count"] == 0
            # every job bob names, he acts on his own only
            assert bob.call("ACT", action=action, constraint="true")["ids"] == [f"{mine}.0"]
        for cmd, args in (("GET_REQUESTS", {"owner": "bob"}), ("MATCHES", {"matches": []})):
            with pytest.raises(RemoteError) as e:
                bob.call(cmd, **args)
            assert e.value.code == "PERMISSION_DENIED" and "bob@" in e.value.message
    with schedd.client() as c:
        jobs = query(c)
    assert jobs[f"{alice_job}.0"]["JobStatus"] == 1  # alice's job: neither held nor removed
    assert f"{mine}.0" not in jobs or jobs[f"{mine}.0"]["JobStatus"] == 3  # bob's: removed
    assert [k for k, a in jobs.items() if a["Owner"] == "alice"] == [f"{alice_job}.0"]


def test_holds_are_counted_as_htcondor_counts_them(schedd, tmp_path):
    with schedd.client() as c:
        cid, _ = submit(c, JOB.format(mem=1, n=1), str(tmp_path))
        for _ in range(2):
            assert c.call("ACT", action="hold", ids=[f"{cid}.0"])["count"] == 1
            assert c.call("ACT", action="release", ids=[f"{cid}.0"])["count"] == 1
        c.call("ACT", action="hold", ids=[f"{cid}.0"])
        ad = query(c)[f"{cid}.0"]
    assert ad["NumHolds"] == 3
    assert ad["NumHoldsByReason"] == {"UserRequest": 3}
    schedd.stop()
    schedd.start()  # the counters are durable
    with schedd.client() as c:
        ad = query(c)[f"{cid}.0"]
    assert ad["NumHolds"] == 3 and ad["NumHoldsByReason"] == {"UserRequest": 3}


def test_a_reservation_ends_with_its_connection(schedd, tmp_path):
    from roost.submit import parse_submit

    with schedd.client() as a:
        cid = a.call("NEW_CLUSTER")["cluster"]
    # the reserving connection is closed: the reservation is gone with it
    [cs] = parse_submit(JOB.format(mem=1, n=1), cwd=str(tmp_path)).expand(cid, int(time.time()), "root")
    from roost.classad.jsonform import ad_to_obj
    from roost.submit.jobads import to_classad

    args = {"cluster": cid, "cluster_ad": ad_to_obj(cs.cluster_classad()),
            "procs": [ad_to_obj(to_classad(d)) for d in cs.proc_diffs]}
    with schedd.client() as b:
        # (the schedd sees the close on its own time: a released id reads as finished)
        wait_for(lambda: b.call("WAIT_JOBS", ids=[f"{cid}.0"], timeout=0)["total"] == 1)
        with pytest.raises(RemoteError) as e:
            b.call("SUBMIT", **args)
        assert e.value.code == "BAD_REQUEST" and "not reserved" in str(e.value)
        # on one connection, NEW_CLUSTER then SUBMIT still works
        cid2, n = submit(b, JOB.format(mem=1, n=1), str(tmp_path))
        assert n == 1 and cid2 > cid


def test_error_responses_are_one_line(schedd):
    with schedd.client() as c:
        with pytest.raises(RemoteError) as e:
            c.call("QUERY_JOBS", constraint="RequestMemory > (1 +")
    msg = str(e.value)
    assert e.value.code == "BAD_REQUEST"
    assert "\n" not in msg and "^" not in msg
    assert "1:" in msg  # line:column of the fault


def test_an_edit_keeps_the_jobs_own_spelling(schedd, tmp_path):
    """condor_qedit 3.0 requestmemory 5: ClassAd names ignore case, so the edit lands on
    RequestMemory rather than beside it (two spellings: whichever a reader met last)."""
    with schedd.client() as c:
        cid, _ = submit(c, JOB.format(mem=100, n=1), str(tmp_path))
        assert c.call("EDIT", ids=[f"{cid}.0"], attrs={"requestmemory": "5"})["count"] == 1
        ad = query(c)[f"{cid}.0"]
        assert ad["RequestMemory"] == 5 and "requestmemory" not in ad


def test_every_query_shows_each_jobs_own_global_job_id(schedd, tmp_path):
    """GlobalJobId is made from the cluster's template (no dict per proc): every way of
    asking (all jobs, a projection, a constraint, ids, the batch view, the history) and a
    restart after kill -9 show each proc its own, as the schedd named it at submit."""
    with schedd.client() as c:
        cid, _ = submit(c, "executable = /bin/true\nqueue 3\n", str(tmp_path))
        cid2, _ = submit(c, "executable = /bin/true\narguments = $(Process)\nqueue 2\n", str(tmp_path))
        every = query(c)
        ids = {k: v["GlobalJobId"] for k, v in every.items()}
        name = ids[f"{cid}.0"].split("#")[0]
        assert {k: v.split("#")[1] for k, v in ids.items()} == {k: k for k in ids} and len(ids) == 5
        assert all(v.startswith(f"{name}#") for v in ids.values())
        assert {k: v["GlobalJobId"] for k, v in query(c, projection=["GlobalJobId"]).items()} == ids
        assert {k: v["GlobalJobId"] for k, v in query(c, constraint="ProcId >= 0").items()} == ids
        assert query(c, ids=[f"{cid}.1"])[f"{cid}.1"]["GlobalJobId"] == ids[f"{cid}.1"]
        assert query(c, constraint=f'GlobalJobId == "{ids[f"{cid}.2"]}"').keys() == {f"{cid}.2"}
        got = c.call("QUERY_JOBS", projection=["ClusterId", "ProcId", "Owner", "JobStatus"], batch=True)
        assert got["jobs"] == [] and sorted(e[1]["1"] for e in got["counts"]) == [2, 3]
        c.call("ACT", action="remove", ids=[f"{cid}.1"])
        wait_for(lambda: f"{cid}.1" in query(c, history=True, ids=[f"{cid}.1"]) and
                 query(c, history=True, ids=[f"{cid}.1"])[f"{cid}.1"]["JobStatus"] == 3)
        assert query(c, history=True, ids=[f"{cid}.1"])[f"{cid}.1"]["GlobalJobId"] == ids[f"{cid}.1"]
    schedd.kill9()
    schedd.start()
    with schedd.client() as c:
        again = {k: v["GlobalJobId"] for k, v in query(c).items()}
        assert again == {k: v for k, v in ids.items() if k != f"{cid}.1"}
