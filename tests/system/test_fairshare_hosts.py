"""One user's fair share spans the submit hosts of a UID_DOMAIN (issue 12).

A central manager, two submit hosts and one execute host of two slots. alice submits
from both submit hosts and bob from one, all before the execute host starts, so the
first negotiation sees everyone waiting. alice is ``alice@UID_DOMAIN`` on both hosts:
each schedd advertises its own Submitter ad of that one name, the negotiator gives
her one share (one slot of two while bob waits, not two because she uses two
schedds), and the accountant keeps one record for her whose usage counts the jobs of
both hosts.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from hostpool import UID_DOMAIN, MultiHostPool, RoostHost
from netns import Network

ALICE, BOB = f"alice@{UID_DOMAIN}", f"bob@{UID_DOMAIN}"
SECONDS = 2  # each job's length
#: the accountant samples the slots each cycle: often, so its usage is close to the jobs'
ACCOUNTING_CONFIG = "NEGOTIATOR_INTERVAL = 0.5\n"


@pytest.fixture
def hosts(network: Network) -> Iterator[MultiHostPool]:
    """A central manager and two submit hosts, started; the execute host ``exec``
    added (two one-CPU slots) but not started: the test starts it."""
    pool = MultiHostPool(network)
    try:
        cm = pool.add("cm", "CentralManager")
        with (cm.home / "roost_config").open("a") as f:
            f.write(ACCOUNTING_CONFIG)
        cm.roost("up", "-timeout", "30", timeout=45)
        for name, role in (("sub1", "Submit"), ("sub2", "Submit"), ("exec", "Execute")):
            h = pool.add(name, role)
            h.take_pool_key(cm)
        pool.start("sub1", "sub2")
        yield pool
    finally:
        pool.stop()


def submit(host: RoostHost, user: str, n: int) -> str:
    work = host.host.dir / f"work-{user}"
    work.mkdir()
    work.chmod(0o755)
    (work / "job.sub").write_text(
        f"executable = /bin/sleep\narguments = {SECONDS}\naccounting_group_user = {user}\n"
        f"should_transfer_files = YES\ntransfer_executable = false\nlog = jobs.log\nrequest_cpus = 1\nrequest_memory = 64\nqueue {n}\n")
    done = host.roost("submit", "job.sub", cwd=work)
    m = re.search(r"(\d+) job\(s\) submitted to cluster (\d+)", done.stdout)
    assert m and m.group(1) == str(n), done.stdout
    return m.group(2)


def submitter_ads(cm: RoostHost) -> set[tuple[str, str, int]]:
    out = cm.roost("status", "-submitters", "-af", "Name", "ScheddName", "IdleJobs").stdout
    return {(n, s, int(i)) for n, s, i in (line.split() for line in out.splitlines() if line.strip())}


def idle_of(host: RoostHost, user: str) -> int:
    out = host.roost("q", "-af", "AcctGroupUser", "JobStatus").stdout
    return sum(1 for line in out.splitlines() if line.split() == [user, "1"])


def queued(host: RoostHost) -> int:
    return len(host.roost("q", "-af", "ClusterId").stdout.split())


def claims(cm: RoostHost) -> list[tuple[str, str]]:
    """(RemoteUser, ClientMachine) of every claimed slot the collector knows."""
    out = cm.roost("status", "-af", "RemoteUser", "ClientMachine").stdout
    return [(u, c) for u, c in (line.split() for line in out.splitlines() if line.strip()) if u != "undefined"]


def test_one_users_fair_share_spans_both_submit_hosts(hosts: MultiHostPool) -> None:
    cm, sub1, sub2 = hosts["cm"], hosts["sub1"], hosts["sub2"]
    clusters = {sub1: [submit(sub1, "alice", 3), submit(sub1, "bob", 4)], sub2: [submit(sub2, "alice", 3)]}

    # one Submitter ad per (name, schedd): alice's two share her name
    want = {(ALICE, "sub1", 3), (ALICE, "sub2", 3), (BOB, "sub1", 4)}
    deadline = time.monotonic() + 10
    while (ads := submitter_ads(cm)) != want:
        assert time.monotonic() < deadline, ads
        time.sleep(0.1)

    hosts["exec"].roost("up", "-timeout", "30", timeout=45)
    # while bob waits, alice holds one slot of the two, bob the other
    contended: list[list[tuple[str, str]]] = []
    seen: set[tuple[str, str]] = set()
    deadline = time.monotonic() + 25
    while time.monotonic() < deadline:
        before = idle_of(sub1, "bob")
        now = claims(cm)
        seen.update(now)
        if before and idle_of(sub1, "bob"):
            contended.append(now)
        elif not before:
            break
        time.sleep(0.1)
    users = [[u for u, _ in c] for c in contended]
    assert sum(1 for u in users if u) >= 3, contended  # bob waited a while with slots busy
    assert all(u.count(ALICE) <= 1 for u in users), contended
    assert any(BOB in u for u in users) and any(ALICE in u for u in users), contended

    while queued(sub1) + queued(sub2):  # the rest, alice's alone
        assert time.monotonic() < deadline, seen
        seen.update(claims(cm))
        time.sleep(0.1)
    for host, ids in clusters.items():
        host.roost("wait", "-quiet", "-wait", "10", *ids, timeout=20)
    # the slots alice held came from both hosts, all under her one name
    assert {c for u, c in seen if u == ALICE} == {sub1.address, sub2.address}, seen
    assert {u for u, _ in seen} == {ALICE, BOB}, seen

    users = json.loads(cm.roost("userprio", "-all", "-json").stdout)
    names = sorted(u["name"] for u in users if "@" in u["name"])
    assert names == [ALICE, BOB], names
    alice = next(u for u in users if u["name"] == ALICE)
    wall = {}
    for host in (sub1, sub2):
        out = host.roost("history", "-af", "AcctGroupUser", "RemoteWallClockTime").stdout
        wall[host.name] = sum(float(t) for u, t in (line.split() for line in out.splitlines()) if u == "alice")
    assert all(w >= 3 * SECONDS * 0.9 for w in wall.values()), wall
    # her one record was charged the jobs of both hosts (more than either alone)
    assert alice["accumulated_usage"] >= 0.75 * sum(wall.values()), (alice, wall)
