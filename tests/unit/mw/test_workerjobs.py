"""How many worker jobs a master keeps, against a fake schedd: jobs that leave the
queue are replaced, evicted and held ones are not, and jobs that never start a
worker make the master give up instead of resubmitting for ever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roost.core import jobpolicy as jp
from roost.mw.workerjobs import TAG_ATTR, WorkerJobs, census, is_alive, worker_description
from roost.submit.reading import parse_text


class FakeSchedd:
    def __init__(self) -> None:
        self.jobs: dict[str, int] = {}
        self.hold_codes: dict[str, int] = {}
        self.cluster = 0
        self.removed: list[str] = []

    def submit(self, desc: dict[str, str], count: int) -> Any:
        self.cluster += 1
        ids = [f"{self.cluster}.{p}" for p in range(count)]
        for j in ids:
            self.jobs[j] = jp.IDLE

        class Result:
            def job_ids(self) -> list[str]:
                return ids

        return Result()

    def query_objs(self, constraint: str, projection: list[str]) -> list[dict[str, Any]]:
        assert constraint == f'{TAG_ATTR} =?= "t1"'
        return [{"ClusterId": int(j.split(".")[0]), "ProcId": int(j.split(".")[1]), "JobStatus": s,
                 "HoldReasonCode": self.hold_codes.get(j), "HoldReason": "why"} for j, s in self.jobs.items()]

    def history(self, ids: list[str], projection: list[str]) -> list[dict[str, Any]]:
        return [{"ExitCode": 1}]

    def act(self, action: str, ids: list[str] | None = None, *, constraint: str | None = None,
            reason: str = "") -> None:
        assert action == "remove"
        self.removed.append(constraint or ",".join(ids or []))
        for j in ids or []:
            del self.jobs[j]


def test_the_worker_description_is_a_valid_submit_description(tmp_path: Path) -> None:
    files = [tmp_path / "roost_mw_worker.py", tmp_path / "roost_mw.key"]
    for f in files:
        f.write_text("s3cret")
    desc = worker_description(python="/usr/bin/python3", host="10.0.0.5", port=4567, directory=str(tmp_path),
                              files=[str(f) for f in files], tag="t1",
                              extra={"request_memory": "512", "requirements": 'OpSys == "LINUX"'})
    text = "\n".join(f"{k} = {v}" for k, v in desc.items()) + "\nqueue 2\n"
    [cluster] = parse_text(text, cwd=str(tmp_path)).expand(cluster_id=5, qdate=0, owner="alice")
    ad = cluster.cluster_ad
    assert ad["Cmd"] == "/usr/bin/python3" and ad[TAG_ATTR] == "t1"
    assert ad["RequestMemory"] == 512 and ad["TransferExecutable"] is False
    assert [cluster.proc_ad(p)["Arguments"] for p in range(2)] == [
        f"-B roost_mw_worker.py 10.0.0.5 4567 5.{p}" for p in range(2)]
    # the secret is a file, never in the ad (anyone who may query the queue reads the ad)
    assert "roost_mw.key" in ad["TransferInput"]
    assert "s3cret" not in repr([cluster.proc_ad(p) for p in range(2)])


def test_census_counts_evicted_and_held_jobs_alive_and_finds_failed_starts() -> None:
    ads = {"1.0": {"JobStatus": jp.IDLE}, "1.1": {"JobStatus": jp.RUNNING},
           "1.2": {"JobStatus": jp.HELD, "HoldReasonCode": jp.HOLD_USER},
           "1.3": {"JobStatus": jp.COMPLETED},
           "1.5": {"JobStatus": jp.HELD, "HoldReasonCode": jp.HOLD_FAILED_TO_CREATE_PROCESS}}  # 1.4 left
    alive = {j for j, ad in ads.items() if is_alive(ad)}
    assert alive == {"1.0", "1.1", "1.2"}
    seen = census({"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"}, alive, joined={"1.0", "1.3"})
    assert seen.alive == {"1.0", "1.1", "1.2"}
    assert seen.ended == ["1.3", "1.4", "1.5"]
    assert seen.failed_starts == ["1.4", "1.5"]


def test_jobs_that_leave_the_queue_are_replaced_and_evicted_ones_are_not() -> None:
    s = FakeSchedd()
    jobs = WorkerJobs(s, {}, wanted=3, tag="t1", max_failed_starts=3)
    assert jobs.submit(3) == ["1.0", "1.1", "1.2"]
    assert jobs.keep(joined={"1.0", "1.1", "1.2"}) == []
    s.jobs["1.1"] = jp.IDLE  # evicted: back to Idle, runs again by itself
    s.jobs["1.2"] = jp.HELD  # held by someone: theirs to release
    s.hold_codes["1.2"] = jp.HOLD_USER
    assert jobs.keep(joined={"1.0", "1.1", "1.2"}) == []
    del s.jobs["1.0"]  # removed, or finished
    assert jobs.keep(joined={"1.0", "1.1", "1.2"}) == ["2.0"]
    assert jobs.replaced == 1 and jobs.submitted == 4 and not jobs.giving_up
    jobs.remove_all()
    assert s.removed == [f'{TAG_ATTR} =?= "t1"']


def test_jobs_that_never_start_a_worker_make_the_master_give_up() -> None:
    s = FakeSchedd()
    jobs = WorkerJobs(s, {}, wanted=2, tag="t1", max_failed_starts=3)
    jobs.submit(2)
    s.jobs.clear()  # both ended without a worker joining
    assert jobs.keep(joined=set()) == ["2.0", "2.1"]
    assert jobs.failed_in_a_row == 2
    s.jobs.clear()
    assert jobs.keep(joined=set()) == []  # the third failure: no more submitting
    assert jobs.giving_up and "exited with code 1" in jobs.why_failed()


def test_a_worker_joining_resets_the_count_of_failed_starts() -> None:
    s = FakeSchedd()
    jobs = WorkerJobs(s, {}, wanted=1, tag="t1", max_failed_starts=2)
    jobs.submit(1)
    s.jobs.clear()
    assert jobs.keep(joined=set()) == ["2.0"]
    assert jobs.keep(joined={"2.0"}) == []  # it started: starting works
    assert jobs.failed_in_a_row == 0
    s.jobs.clear()
    assert jobs.keep(joined={"2.0"}) == ["3.0"]  # a worker that ran and ended: replaced, no failure
    assert not jobs.giving_up


def test_a_job_held_by_the_system_is_removed_and_replaced() -> None:
    s = FakeSchedd()
    jobs = WorkerJobs(s, {}, wanted=1, tag="t1", max_failed_starts=1)
    jobs.submit(1)
    s.jobs["1.0"] = jp.HELD
    s.hold_codes["1.0"] = jp.HOLD_FAILED_TO_CREATE_PROCESS
    assert jobs.keep(joined=set()) == []  # removed; one failed start is the limit here
    assert s.removed == ["1.0"] and "1.0" not in s.jobs
    assert jobs.giving_up and jobs.why_failed() == "job 1.0 held: why"
