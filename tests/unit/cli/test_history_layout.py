"""condor_history 25's default listing: its defaultJob_PrintFormat (history.cpp)."""

import time

from roost.cli.history_cmd import HEADING, row, table

JOB = {"ClusterId": 12, "ProcId": 3, "Owner": "alice", "QDate": 0, "CompletionDate": 0, "JobStatus": 4,
       "Cmd": "/bin/sleep", "Args": "30", "RemoteWallClockTime": 65.0}


def test_heading_as_the_print_format_labels_it() -> None:
    assert HEADING == " ID          OWNER            SUBMITTED   RUN_TIME   ST   COMPLETED CMD"
    assert table([]).splitlines() == [HEADING]


def test_row_pads_the_id_to_its_label_and_shows_the_command_with_its_arguments() -> None:
    q = int(time.mktime((2026, 7, 2, 15, 11, 0, 0, 0, -1)))
    assert row({**JOB, "QDate": q, "CompletionDate": q + 60}) == \
        "12.3         alice           7/2  15:11   0+00:01:05 C   7/2  15:12 sleep 30"


def test_long_owner_is_cut_and_output_transfer_shows_in_st() -> None:
    r = row({**JOB, "Owner": "a" * 20, "JobStatus": 6})
    assert r.split()[1] == "a" * 14
    assert " > " in r


def test_lines_are_cut_to_1024_into_a_pipe_unless_wide() -> None:
    long_job = {**JOB, "Args": "x" * 2000}
    assert len(table([long_job]).splitlines()[1]) == 1024
    assert len(table([long_job], wide=True).splitlines()[1]) > 1024
