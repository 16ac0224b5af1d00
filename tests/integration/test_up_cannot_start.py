"""``roost up`` with a configuration a daemon cannot run with: it fails at once with the
daemon's own reason from its log, instead of waiting while the master restarts the
daemon, and leaves no pool behind. The startd says so by exiting with HTCondor's
DAEMON_NO_RESTART status, after which the master leaves it off."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import FAST_CONFIG, PoolHandle

from roost.api.pool import Pool
from roost.config import write_personal_config

#: more CPUs per slot than any machine here has (FAST_CONFIG says NUM_CPUS = 4)
CANNOT_FIT = "NUM_SLOTS_TYPE_1 = 4\nSLOT_TYPE_1 = cpus=1000\nSLOT_TYPE_1_PARTITIONABLE = False\n"
BAD_START = "START = (Owner == \n"


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="roost-up-", dir="/tmp"))
    try:
        yield path
    finally:
        pid = Pool(path).master_pid()
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        shutil.rmtree(path, ignore_errors=True)


def _up_with(home: Path, extra: str) -> tuple[PoolHandle, object]:
    cfg = write_personal_config(home)
    with open(cfg, "a") as f:
        f.write(FAST_CONFIG + extra)
    pool = PoolHandle(home)
    # a timeout far beyond the test's own: only failing at once gets an answer in time
    return pool, pool.roost("up", "-timeout", "3600", timeout=120)


@pytest.mark.parametrize(("extra", "reason"), [
    (CANNOT_FIT, "the slot layout does not fit this machine: slot types ask for 4000 cpus but the machine has 4"),
    (BAD_START, "START = '(Owner ==' is not a ClassAd expression"),
])
def test_up_fails_at_once_with_the_startlogs_reason(home: Path, extra: str, reason: str) -> None:
    pool, up = _up_with(home, extra)
    assert up.returncode == 1, (up.stdout, up.stderr)
    assert up.stdout == ""
    assert up.stderr.startswith(f"roost up: the startd cannot start: {reason}")
    assert "the pool was stopped again" in up.stderr
    start_log = (home / "log" / "StartLog").read_text()
    assert f"ERROR roost.startd: startd cannot start: {reason}" in start_log
    assert start_log.count("starting startd (pid") == 1  # not restarted
    assert "Traceback" not in start_log
    master_log = (home / "log" / "MasterLog").read_text()
    assert "exited with status 99 (daemon will not restart automatically)" in master_log
    assert not Pool(home).running()
    assert pool.roost("status").returncode != 0


def test_a_layout_that_fits_still_comes_up(home: Path) -> None:
    """The same knobs with a layout the machine holds: the pool starts as before."""
    pool, up = _up_with(home, CANNOT_FIT.replace("cpus=1000", "cpus=1"))
    try:
        assert up.returncode == 0, (up.stdout, up.stderr)
        assert "4 slots, 4 cpus" in up.stdout
    finally:
        pool.roost("down", "-timeout", "30", timeout=60)
