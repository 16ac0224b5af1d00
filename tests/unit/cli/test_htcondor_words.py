"""The htcondor command line's sentences and event log table. The table's expected text
is what HTCondor's own htcondor_cli (25.x, `htcondor eventlog read`) printed for the same
log; the status sentences follow its job.py and dagman.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from roost.cli.htcondor_words import (
    dag_status_lines,
    eventlog_table,
    job_status_lines,
    job_summaries,
    readable_size,
    readable_time,
)
from roost.eventlog import (
    AbortedEvent,
    EventLogWriter,
    EvictedEvent,
    ExecuteEvent,
    SubmitEvent,
    TerminatedEvent,
    read_events,
)
from roost.eventlog.textformat import Usage

T = 1700000000.0
NOW = 1800000000.0


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_eventlog_read_as_htcondors_tool_prints_it(tmp_path: Path, utc: None) -> None:
    log = tmp_path / "b.log"
    EventLogWriter(log).write_many([
        SubmitEvent(5, 0, T, submit_host="<10.1.2.3:9618?addrs=10.1.2.3-9618>"),
        SubmitEvent(5, 1, T, submit_host="<10.1.2.3:9618>"), SubmitEvent(5, 2, T, submit_host="<10.1.2.3:9618>"),
        ExecuteEvent(5, 0, T + 60, execute_host="<10.0.0.9:1>", slot_name="slot1_1@ep.example.org"),
        ExecuteEvent(5, 1, T + 61, execute_host="<10.0.0.9:1>"),
        EvictedEvent(5, 0, T + 200, run_remote_usage=Usage(70, 5)), AbortedEvent(5, 2, T + 210, reason="x"),
        ExecuteEvent(5, 0, T + 300, execute_host="<10.0.0.8:1>", slot_name="slot2@ep2.example.org"),
        TerminatedEvent(5, 0, T + 4000, return_value=0, run_remote_usage=Usage(3600, 61),
                        total_remote_usage=Usage(3670, 66)),
        TerminatedEvent(5, 1, T + 90000, return_value=1, total_remote_usage=Usage(90000, 100))])
    assert eventlog_table(job_summaries(read_events(str(log)))) == [
        "Job      Host                    Start Time       Evict Time       Evictions   Wall Time     Good Time     CPU Usage      ",
        "5.0      slot2@ep2.example.org   11/14/23 22:18   11/14/23 23:20   1           0+01:02:00    0+01:02:00    0+01:02:16    ",
        "5.1      10.1.2.3                11/14/23 22:14   11/15/23 23:13   0           1+00:59:00    1+00:59:00    1+01:01:40    ",
    ]


def test_readable_units() -> None:
    assert [readable_time(s) for s in (0, 1, 30.5, 90, 7200, 86400 * 2 + 3600 * 5)] == [
        "0 second", "1 second", "30.5 seconds", "2 minutes", "2 hours", "2 days 5 hours"]
    assert [readable_size(n) for n in (512, 2048, 1024 ** 3, 1536 * 1024 ** 2)] == [
        "512 B", "2.000 KB", "1.000 GB", "1.500 GB"]


def test_job_status_sentences() -> None:
    idle = {"JobStatus": 1, "QDate": NOW - 30, "RequestMemory": 1024, "RequestDisk": 2048}
    assert job_status_lines("5", idle, NOW) == [
        "Job 5 is currently idle.", "It was submitted 30.0 seconds ago.", "It requested 1.000 GB of memory.",
        "It requested 2.000 MB of disk space.", "Job has 0.0% goodput for 0 second of wall clock time."]
    running = {"JobStatus": 2, "QDate": NOW - 600, "JobStartDate": NOW - 120, "RequestMemory": 128, "MemoryUsage": 3,
               "RequestDisk": 1000, "DiskUsage": 50, "NumShadowStarts": 2, "NumJobStarts": 2, "TotalSuspensions": 1,
               "CommittedTime": 30, "RemoteWallClockTime": 120}
    assert job_status_lines("5.0", running, NOW) == [
        "Job 5.0 is currently running.", "It started running 2 minutes ago.", "It was submitted 10 minutes ago.",
        "Its current memory usage is 3.000 MB out of 128.000 MB requested.",
        "Its current disk usage is 50.000 KB out of 1000.000 KB requested.",
        "It has been suspended 1 time.", "HTCondor has attempted to start the job 2 times.",
        "The job has started 2 times.", "Job has 25.0% goodput for 2 minutes of wall clock time."]
    held = {"JobStatus": 5, "QDate": NOW - 7200, "EnteredCurrentStatus": NOW - 3600, "NumHolds": 1,
            "HoldReason": "via condor_hold (by user alice)"}
    assert job_status_lines("5.0", held, NOW)[:5] == [
        "Job 5.0 is currently held.", "It has been held for 1 hour.",
        'It was held because "via condor_hold (by user alice)".', "It has been held 1 time.",
        "It was submitted 2 hours ago."]
    done = {"JobStatus": 4, "QDate": NOW - 100, "CompletionDate": NOW - 10, "RemoteWallClockTime": 80,
            "CommittedTime": 80}
    assert job_status_lines("5.0", done, NOW) == [
        "Job 5.0 has completed.", "It completed 10.0 seconds ago.", "It was submitted 2 minutes ago.",
        "Job had 100.0% goodput for 1 minute of wall clock time."]


def test_dag_status_report() -> None:
    ad = {"JobStatus": 2, "JobStartDate": NOW - 75, "JobBatchName": "diamond.dag+7", "DAG_NodesTotal": 4,
          "DAG_NodesDone": 1, "DAG_NodesQueued": 2, "DAG_NodesUnready": 1, "DAG_JobsSubmitted": 3,
          "DAG_JobsIdle": 1, "DAG_JobsRunning": 1, "DAG_JobsCompleted": 1, "DAG_Status": 0, "DAG_InRecovery": 0,
          "DAG_AdUpdateTime": NOW - 1}
    assert dag_status_lines("7", ad, NOW, 80) == [
        "DAG 7 [diamond.dag] has been running for  and 00:01:15",
        "DAG has submitted 3 job(s), of which:",
        "\t      1 is submitted and waiting for resources.",
        "\t      1 is running.",
        "\t      1 has completed.",
        "DAG contains 4 node(s) total, of which:",
        "\t[#]   1 has completed.",
        "\t[=]   2 are running: 2 jobs.",
        "\t[-]   1 is waiting on other nodes to finish.",
        "DAG is running normally.",
        "[" + "#" * 10 + "=" * 19 + "-" * 10 + "] DAG is 25.00% complete.",
    ]
    failed = dict(ad, JobStatus=5, EnteredCurrentStatus=NOW - 90000, HoldReason="x", DAG_NodesFailed=1,
                  DAG_NodesUnready=0, DAG_Status=2)
    lines = dag_status_lines("7", failed, NOW, 80)
    assert lines[:2] == ["DAG 7 [diamond.dag] has been held for 1 day and 01:00:00", "Hold Reason: x"]
    assert lines[-2] == "DAG had at least one node fail. Only 75.00% of the DAG can complete."
