"""What -spool adds to a submit description: the hold until the input is in (always),
and condor_submit's leave_in_queue unless the file gives its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.cli import submit_cmd
from roost.core.spooling import LEAVE_IN_QUEUE


def _ad(tmp_path: Path, body: str, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    (tmp_path / "s.sub").write_text(body)
    out = tmp_path / "ads.txt"
    assert submit_cmd.main(["-spool", "-dry-run", str(out), str(tmp_path / "s.sub")]) == 0
    capsys.readouterr()
    return dict(ln.partition("=")[::2] for ln in out.read_text().splitlines() if "=" in ln)


def test_spool_holds_with_code_16_and_leaves_completed_jobs_until_fetched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ad = _ad(tmp_path, "executable = /bin/true\nqueue\n", capsys)
    assert ad["JobStatus"] == "5" and ad["HoldReasonCode"] == "16"
    assert ad["HoldReason"] == '"Spooling input data files"'
    assert ad["LeaveJobInQueue"] == LEAVE_IN_QUEUE


def test_the_files_own_leave_in_queue_wins_but_not_over_the_hold(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ad = _ad(tmp_path, "executable = /bin/true\nleave_in_queue = false\nhold = false\nqueue\n", capsys)
    assert ad["LeaveJobInQueue"] == "false"
    assert ad["JobStatus"] == "5" and ad["HoldReasonCode"] == "16"
