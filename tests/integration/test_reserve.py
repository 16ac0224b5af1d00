"""`roost reserve` (issue 16): a reservation of the four dedicated slots of a fresh
pool. Before its window an opportunistic job runs there; shortly before it opens
(DEDICATED_RESERVATION_MARGIN) the dedicated scheduler claims the nodes and the job is
vacated; during the window a dedicated job waits; after it, it runs."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

CONFIG = """
SLOT_TYPE_1 = cpus=1, memory=512
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = 4
use POLICY : Dedicated
DEDICATED_SCHEDULER_INTERVAL = 0.5
DEDICATED_RESERVATION_MARGIN = 2
"""


@pytest.fixture
def rpool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-rsv-", dir="/tmp"))
    p = start_pool(home, CONFIG)
    try:
        yield p
    finally:
        stop_pool(p)


def test_a_reservation_holds_its_nodes_for_its_window(rpool: PoolHandle, jobdir: Path) -> None:
    done = rpool.roost("reserve", "-nodes", "4", "-start", "+8", "-duration", "6", check=True)
    m = re.match(r"reservation (r[0-9a-f]+): 4 nodes from .* to ", done.stdout)
    assert m, done.stdout
    rid = m.group(1)
    start, end = None, None
    s = rpool.schedd()
    try:
        [r] = s.reservations()
        start, end = r["start"], r["end"]
        assert r["id"] == rid and r["nodes"] == 4
        wait_until(lambda: len(s.reservations()[0]["nodes_held"]) == 4, 10, "nodes set aside")
    finally:
        s.close()
    opp = rpool.submit("executable = /bin/sleep\narguments = 120\nlog = opp.log\nqueue\n", jobdir).clusters[0][0]
    rpool.wait_for(f"{opp}.0", lambda j: j["JobStatus"] == 2, 10, "the opportunistic job running before the window")
    # the margin before the window: the nodes are claimed back, the job vacated
    wait_until(lambda: "004 (" in (jobdir / "opp.log").read_text(), 15, "the opportunistic job vacated")
    assert time.time() < end
    ded = rpool.submit("executable = /bin/true\n+WantDedicated = true\nqueue\n", jobdir).clusters[0][0]
    rpool.wait([f"{ded}.0"], timeout=60)
    job = rpool.job(f"{ded}.0")
    assert job is not None and job["JobStartDate"] >= int(end) - 1, (job, start, end)  # not in the window
    assert "no reservations" in rpool.roost("reserve", "-list", check=True).stdout  # over and forgotten
    rpool.roost("rm", str(opp), check=True)


def test_reserve_refuses_nonsense(rpool: PoolHandle) -> None:
    bad = rpool.roost("reserve", "-nodes", "2", "-duration", "-5")
    assert bad.returncode == 2 and "must be positive" in bad.stderr
    bad = rpool.roost("reserve", "-nodes", "2", "-duration", "60", "-start", "yesterday")
    assert bad.returncode == 2 and "-start 'yesterday'" in bad.stderr
    gone = rpool.roost("reserve", "-remove", "rnothere")
    assert gone.returncode == 1 and "no reservation" in gone.stderr
    ok = rpool.roost("reserve", "-nodes", "1", "-start", "+3600", "-duration", "1h", check=True)
    rid = ok.stdout.split()[1].rstrip(":")
    assert rid in rpool.roost("reserve", "-list", check=True).stdout
    rpool.roost("reserve", "-remove", rid, check=True)
    assert "no reservations" in rpool.roost("reserve", "-list", check=True).stdout
