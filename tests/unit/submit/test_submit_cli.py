"""``roost submit``: -dry-run -json prints condor_q -json job ads; errors name file and line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from roost.cli import submit_cmd

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "submit"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = submit_cmd.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_dry_run_prints_one_merged_ad_per_proc(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["-json", "-dry-run", str(EXAMPLES / "simple.sub")], capsys)
    assert rc == 0
    ads = json.loads(out)
    assert [a["ProcId"] for a in ads] == list(range(10))
    assert all(a["ClusterId"] == 1 and a["JobStatus"] == 1 and a["JobUniverse"] == 5 for a in ads)
    assert ads[7]["Args"] == "7" and ads[7]["Out"] == "simple.7.out" and ads[7]["RequestMemory"] == 64
    assert ads[0]["Requirements"].startswith("/Expr(") or "TARGET.Arch" in ads[0]["Requirements"]


def test_dry_run_of_the_sweep_example(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)
    rc, out, _ = run(["-json", "-dry-run", "sweep.sub"], capsys)
    assert rc == 0
    ads = json.loads(out)
    assert len(ads) == 4
    assert ads[3]["Arguments"] == "sweep.py --alpha 0.5 --beta 20 --out result.3.json"
    assert ads[3]["TransferInput"] == "sweep.py,inputs/params.3.txt" and ads[3]["ProjectName"] == "roost-examples"
    assert ads[0]["JobBatchName"] == "sweep"


def test_append_macros_and_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("executable = /bin/true\narguments = $(who)\nqueue 2\n"))
    rc, out, _ = run(["-json", "-a", "output = x.out", "-dry-run", "-", "who=cli"], capsys)
    assert rc == 0
    ads = json.loads(out)
    assert [a["Args"] for a in ads] == ["cli", "cli"] and ads[1]["Out"] == "x.out"


def test_without_dry_run_there_is_no_pool(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run([str(EXAMPLES / "simple.sub")], capsys)
    assert rc == 1 and out == "" and "no roost pool" in err


def test_errors_and_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.sub"
    bad.write_text("executable = /bin/true\nrequest_memory = 1GB\nrequirements = (Memory >\nqueue\n")
    rc, out, err = run(["-json", "-dry-run", str(bad)], capsys)
    assert rc == 1 and out == "" and f"{bad}:3" in err
    warn = tmp_path / "warn.sub"
    warn.write_text("executable = /bin/true\nreqest_memory = 1GB\nqueue\n")
    rc, out, err = run(["-json", "-dry-run", str(warn)], capsys)
    assert rc == 0 and "reqest_memory" in err and f"{warn}:2" in err and json.loads(out)


def test_a_dry_run_that_queues_nothing_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "none.sub").write_text("executable = /bin/true\nqueue matching *.nomatch\n")
    rc, out, err = run(["-dry-run", "-", "none.sub"], capsys)
    assert rc == 0 and "job(s) dry-run" not in out
    assert "none.sub:2: WARNING: '*.nomatch' does not match any files" in err
    assert '"none.sub" has only empty "queue" commands -- no jobs queued' in err
