"""Job ads read from files (condor_q -jobads, condor_history -file) and queried as a schedd."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roost.cli.file_queue import FileQueue, read_jobads
from roost.cli.q_cmd import _goodput

LONG = 'ClusterId = 3\nProcId = 0\nOwner = "ann"\nJobStatus = 2\nRequestCpus = 1 + 1\n\n' \
       'ClusterId = 3\nProcId = 1\nOwner = "ann"\nJobStatus = 5\n'


def test_long_json_and_history_files_read_alike(tmp_path: Path) -> None:
    (tmp_path / "long").write_text(LONG)
    ads = read_jobads(str(tmp_path / "long"))
    assert [(a["ClusterId"], a["ProcId"], a["JobStatus"]) for a in ads] == [(3, 0, 2), (3, 1, 5)]
    (tmp_path / "json").write_text(json.dumps(ads))
    assert read_jobads(str(tmp_path / "json")) == ads
    (tmp_path / "hist").write_text(LONG.replace("\n\n", "\n*** ProcId = 0 ClusterId = 3\n") + "*** ProcId = 1\n")
    assert read_jobads(str(tmp_path / "hist")) == ads


def test_a_bad_ad_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "bad").write_text(LONG + "\nClusterId = 4\nProcId = \n")
    with pytest.raises(ValueError, match=r"/bad:13:10: expected an expression"):
        read_jobads(str(tmp_path / "bad"))
    with pytest.raises(ValueError, match="can't open"):
        read_jobads(str(tmp_path / "absent"))


def test_file_queue_filters_and_counts(tmp_path: Path) -> None:
    (tmp_path / "long").write_text(LONG)
    q = FileQueue("Jobads: long", read_jobads(str(tmp_path / "long")), str(tmp_path))
    assert [j["ProcId"] for j in q.query_objs("RequestCpus == 2")] == [0]
    assert [j["ProcId"] for j in q.query_objs(ids=["3.1"])] == [1]
    assert q.query_objs(owner="bob") == []
    totals = q.call("QUERY_JOBS", totals=True)["totals"]
    assert (totals["Running"], totals["Held"], totals["Total"]) == (1, 1, 2)
    raw = q.query_raw()
    assert raw["clusters"]["3"]["ProcId"] == 0 and len(raw["jobs"]) == 2


def test_goodput_columns() -> None:
    job = {"JobStatus": 4, "RemoteWallClockTime": 200.0, "CommittedTime": 100, "RemoteUserCpu": 50.0,
           "BytesSent": 1024 * 1024, "BytesRecvd": 1024 * 1024}
    assert _goodput(job) == ("50.0", "50.0", "0.08")
    assert _goodput({"JobStatus": 1}) == ("??", "??", "??")
