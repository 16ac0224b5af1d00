"""tests/daemon_logs.py: a wait sees only lines past its mark, and says what it saw when
the line never comes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from daemon_logs import log_mark, wait_log


def test_wait_log_sees_only_lines_after_the_mark(tmp_path: Path) -> None:
    log = tmp_path / "StartLog"
    assert log_mark(log) == 0  # not there yet
    log.write_text("job 1.0: started, pid 11, record written; reported\n")
    mark = log_mark(log)
    writer = threading.Timer(0.05, lambda: log.open("a").write(
        "job 1.0: started, pid 22, record written; reported\n"))
    writer.start()
    try:
        m = wait_log(log, r"job 1\.0: started, pid (\d+)", after=mark, timeout=10)
    finally:
        writer.join()
    assert m.group(1) == "22"
    assert wait_log(log, r"pid (\d+)").group(1) == "11"  # from the start without a mark


def test_a_line_half_written_is_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "SchedLog"
    log.write_text("job 2.0: ex")
    done = threading.Timer(0.05, lambda: log.open("a").write("ited; reported\n"))
    done.start()
    try:
        assert wait_log(log, r"job 2\.0: exited; reported$", timeout=10)
    finally:
        done.join()


def test_a_missing_line_fails_with_the_logs_tail(tmp_path: Path) -> None:
    log = tmp_path / "StartLog"
    log.write_text("job launcher not built: jobs start without it\n")
    with pytest.raises(AssertionError, match="job launcher not built"):
        wait_log(log, "job launcher ready", timeout=0.1)


def test_a_rotated_log_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "StartLog"
    log.write_text("x" * 100 + "\n")
    mark = log_mark(log)
    log.write_text("job 3.0: exited; reported\n")  # shorter than the mark: a new file
    assert wait_log(log, r"job 3\.0: exited", after=mark, timeout=5)
