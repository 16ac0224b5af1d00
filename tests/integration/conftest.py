"""Fixtures: a real personal pool per test module (``pool``) and a fresh one per test
(``fresh_pool``) for tests that break daemons on purpose."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, log_tails, start_pool, stop_pool


def _short_home(prefix: str) -> Path:
    # Unix socket paths are limited to 107 bytes: keep ROOST_HOME short.
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@pytest.fixture(scope="module")
def pool() -> Iterator[PoolHandle]:
    home = _short_home("roost-it-")
    p = start_pool(home)
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.fixture
def jobdir() -> Iterator[Path]:
    """A directory jobs (and DAG managers) can write to: a root-submitted job runs as
    nobody, as in HTCondor, and pytest's temporary directories are private to root."""
    path = Path(tempfile.mkdtemp(prefix="roost-jobdir-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fresh_pool() -> Iterator[PoolHandle]:
    home = _short_home("roost-itf-")
    p = start_pool(home)
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.fixture
def long_lease_pool() -> Iterator[PoolHandle]:
    """A fresh pool whose claims outlive a slow restart of a daemon (JOB_LEASE_DURATION
    30, not 6): for tests that kill a daemon and expect its jobs to go on. On a loaded
    2-core machine a restarted startd took over 5 s to answer, the schedd's 6 s lease
    ran out, and the job ran again (issue 28: a flaky NumJobStarts)."""
    home = _short_home("roost-itl-")
    p = start_pool(home, "JOB_LEASE_DURATION = 30\n")
    try:
        yield p
    finally:
        stop_pool(p)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """On failure, append the pool's daemon logs to the report: that is where the why is."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        for name, p in (item.funcargs.items() if hasattr(item, "funcargs") else ()):
            if isinstance(p, PoolHandle):  # any pool fixture: pool, fresh_pool, a module's own
                rep.sections.append((f"roost logs ({name})", log_tails(p.home)))
