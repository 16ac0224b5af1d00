"""What an Executor refuses before it reaches a pool, and what it leaves behind when
there is no pool (nothing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roost.api import NoPoolError
from roost.futures import Executor


def test_submit_commands_the_executor_sets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="may not set Executable, log"):
        Executor(tmp_path / "home", submit={"Executable": "/bin/sh", "log": "x", "request_disk": "1"},
                 scratch=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_no_pool_is_said_at_once_and_leaves_no_directory(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.raises(NoPoolError):
        Executor(tmp_path / "home", scratch=scratch)
    assert list(scratch.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's executor warns (its jobs run as nobody)")
def test_root_is_warned_that_nobody_jobs_can_rewrite_results(tmp_path: Path) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with pytest.warns(RuntimeWarning, match="could rewrite a result"), pytest.raises(NoPoolError):
        Executor(tmp_path / "home", scratch=scratch)
