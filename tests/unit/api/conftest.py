"""Fixtures for the client API tests: real daemon processes in temporary ROOST_HOMEs.

The API is what a user's script meets, so it is tested against the daemons it talks
to (started with ``python -m roost.daemons.<name>`` as tests/unit/daemons does, and
stopped by their pids), never against stand-ins. One schedd and one collector per
test process (each xdist worker has its own) keep the directory fast; each test works
on clusters it submitted itself and leaves the daemons as it found them.

Security: these daemons are started directly, not by a master, so nothing gives the
user running the tests a token of the pool. :func:`owner.owner_token` does what ``roost up``
(the master) does: it writes a token for this user to ``$(LOCAL_DIR)/tokens.d``, which
the API presents on TCP (:func:`roost.api.connection.pool_token`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from daemons.daemon_procs import make_home, start_daemon, stop_daemon

import roost.api as roost

from .owner import owner_token


@dataclass
class Daemon:
    """A daemon process of a pool under ``home``, at ``address``."""

    home: Path
    address: str
    proc: subprocess.Popen


@pytest.fixture(scope="session")
def schedd_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """A schedd alone: jobs queue, hold, release and are removed; local-universe jobs
    run on the submit host, other jobs stay idle (there is no startd)."""
    home = make_home(tmp_path_factory.mktemp("schedd"), "SCHEDD_MIN_INTERVAL = 0\n")
    owner_token(home)  # before the schedd starts: it reads the pool key then
    proc, address = start_daemon("schedd", home)
    try:
        yield Daemon(home, address, proc)
    finally:
        stop_daemon(proc)


@pytest.fixture(scope="session")
def collector_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    home = make_home(tmp_path_factory.mktemp("collector"))
    owner_token(home)
    proc, address = start_daemon("collector", home)
    try:
        yield Daemon(home, address, proc)
    finally:
        stop_daemon(proc)


@pytest.fixture
def schedd(schedd_daemon: Daemon) -> Iterator[roost.Schedd]:
    """A client of the shared schedd, found through its home as a user's script finds it."""
    s = roost.Schedd(schedd_daemon.home)
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def job_dir() -> Iterator[str]:
    """A directory every user may enter: a root schedd runs local-universe jobs as
    their owner or ``nobody``, never as root, and pytest's own temporary directories
    are private to root."""
    d = tempfile.mkdtemp(prefix="roost-api-")
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
