"""The schedd's periodic policy and its ads in a real collector (K1's), both real processes."""

from __future__ import annotations

from roost.eventlog import read_events
from roost.net.syncclient import SyncClient

from .daemon_procs import start_daemon, stop_daemon
from .schedd_harness import ScheddProc, query, submit, wait_for


def test_periodic_hold_and_remove(tmp_path):
    s = ScheddProc(tmp_path).start()
    try:
        with s.client() as c:
            a, _ = submit(c, 'executable = /bin/true\nlog = job.log\nperiodic_hold = JobStatus == 1\n'
                          'periodic_hold_reason = "policy says so"\nperiodic_hold_subcode = 42\nqueue 2\n', str(tmp_path))
            b, _ = submit(c, "executable = /bin/true\nlog = job.log\nperiodic_remove = true\nqueue\n", str(tmp_path))
            held = wait_for(lambda: [j for j in query(c).values() if j["JobStatus"] == 5] or None)
            wait_for(lambda: len([j for j in query(c).values() if j["JobStatus"] == 5]) == 2)
            assert held[0]["HoldReason"] == "policy says so" and held[0]["HoldReasonCode"] == 3
            assert held[0]["HoldReasonSubCode"] == 42
            wait_for(lambda: f"{b}.0" not in query(c))
            hist = query(c, history=True, ids=[f"{b}.0"])
            assert hist[f"{b}.0"]["JobStatus"] == 3 and "PeriodicRemove" in hist[f"{b}.0"]["RemoveReason"]
        names = [(e.type.name, e.cluster) for e in read_events(tmp_path / "job.log")]
        assert ("JOB_HELD", a) in names and ("JOB_ABORTED", b) in names
    finally:
        s.stop()


def test_submitter_and_scheduler_ads_reach_the_collector(tmp_path):
    s = ScheddProc(tmp_path)
    collector, _ = start_daemon("collector", s.home)
    try:
        s.start()
        with s.client() as c:
            cid, _ = submit(c, "executable = /bin/true\nqueue 3\n", str(tmp_path), owner="alice")
            c.call("ACT", action="hold", ids=[f"{cid}.2"])
        caddr = (s.home / "run" / "collector.address").read_text().strip()
        with SyncClient(caddr, timeout=5) as col:
            def submitter():
                ads = col.call("QUERY", type="Submitter")["ads"]
                return ads and ads[0]["HeldJobs"] == 1 and ads[0]
            ad = wait_for(submitter)
            assert ad["IdleJobs"] == 2 and ad["RunningJobs"] == 0 and ad["Owner"] == "alice"
            assert ad["ScheddAddress"] == s.address and ad["Name"].startswith("alice@")
            sched = wait_for(lambda: [a for a in col.call("QUERY", type="Scheduler")["ads"]
                                      if a.get("TotalHeldJobs") == 1])
            assert sched[0]["MyAddress"] == s.address and sched[0]["TotalIdleJobs"] == 2
            with s.client() as c:
                c.call("ACT", action="remove", owner="alice")
            wait_for(lambda: col.call("QUERY", type="Submitter")["ads"][0]["IdleJobs"] == 0)
    finally:
        s.stop()
        stop_daemon(collector)
