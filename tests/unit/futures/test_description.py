"""The submit text of a batch of calls, read by roost's own submit language: one cluster,
one job per task, each transferring the runner, cloudpickle and its own task file."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.futures import description as jobdesc
from roost.submit.reading import parse_text


def _expand(text: str) -> list[dict]:
    (cluster,) = parse_text(text).expand(cluster_id=7, qdate=0, owner="alice")
    return [cluster.proc_ad(i) for i in range(len(cluster))]


def test_one_cluster_one_job_per_task(tmp_path: Path) -> None:
    shipped = jobdesc.prepare_directory(str(tmp_path))
    (tmp_path / "pkg").mkdir()
    for t in ("t0", "t1", "t2"):
        (tmp_path / f"{t}.in").write_bytes(b"")
    text = jobdesc.batch_text(directory=str(tmp_path), python="/usr/bin/python3", tasks=["t0", "t1", "t2"],
                              tag="h:1:abc", shipped=shipped, input_files=[str(tmp_path / "pkg")],
                              request_cpus=2, request_memory="512", extra={"request_disk": "10000"})
    ads = _expand(text)
    assert [a["ProcId"] for a in ads] == [0, 1, 2]
    a = ads[1]
    assert a["Cmd"] == "/usr/bin/python3" and a["TransferExecutable"] is False
    assert a["Arguments"] == "-B roost_futures_runner.py t1.in t1.result"
    assert a["TransferInput"] == f"roost_futures_runner.py,cloudpickle,t1.in,{tmp_path}/pkg"
    assert a["Iwd"] == str(tmp_path) and a["Out"] == "t1.stdout" and a["Err"] == "t1.stderr"
    assert a["UserLog"] == f"{tmp_path}/jobs.log" and a["RequestMemory"] == 512
    assert a["RequestCpus"] == 2 and a["RoostFuturesExecutor"] == "h:1:abc"
    assert "TransferOutput" not in a  # every new file comes back: the result, if written


def test_paths_a_submit_file_cannot_list_are_refused() -> None:
    for bad in ("/tmp/a,b", "/tmp/a\nb", '/tmp/"x"'):
        with pytest.raises(ValueError, match="cannot be listed"):
            jobdesc.check_path(bad, "input file")
    assert jobdesc.check_path("/tmp/ok dir/x", "input file") == "/tmp/ok dir/x"
