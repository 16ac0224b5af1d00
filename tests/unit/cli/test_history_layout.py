"""condor_history 25's default listing (history_utils' short_header/displayJobShort)."""

import time

from roost.cli.history_cmd import short_row, table

JOB = {"ClusterId": 12, "ProcId": 3, "Owner": "alice", "QDate": 0, "CompletionDate": 0, "JobStatus": 4,
       "JobPrio": 0, "ImageSize": 10, "Cmd": "/bin/sleep", "Args": "30", "RemoteWallClockTime": 65.0}


def test_heading_as_short_header() -> None:
    head = table([]).splitlines()[0]
    assert head == " ID      OWNER            SUBMITTED     RUN_TIME ST   COMPLETED CMD            "


def test_row_aligns_the_id_on_its_dot_and_pads_every_column() -> None:
    q = time.mktime((2026, 7, 2, 15, 11, 0, 0, 0, -1))
    row = short_row({**JOB, "QDate": int(q), "CompletionDate": int(q) + 60})
    assert row == "  12.3   alice           7/2  15:11   0+00:01:05 C   7/2  15:12 /bin/sleep 30  "


def test_no_completion_date_and_long_values_are_cut() -> None:
    row = short_row({**JOB, "QDate": 1, "Owner": "a" * 20, "Cmd": "/very/long/path/to/prog", "JobStatus": 3})
    assert row.split()[1] == "a" * 14
    assert " X   ???        /very/long/path" in row
    assert row.endswith("/very/long/path")


def test_a_job_missing_what_the_line_needs() -> None:
    assert short_row({k: v for k, v in JOB.items() if k != "JobPrio"}) == " --- ???? --- "
