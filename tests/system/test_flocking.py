"""Flocking between two pools in network namespaces (issue 29, docs/flocking.md).

Pool A (``a.test``): a central manager, a submit host and one execute host; pool B
(``b.test``): a central manager that also submits, and one execute host. Each pool has
its own TRUST_DOMAIN and signing key; the admins exchanged tokens as docs/flocking.md
says (``flockpools``): B minted ``condor@a.test`` for A's submit host, A minted
``condor@b.test`` for B's central manager and execute host. A sends ``group_physics`` jobs to B; B takes A's
jobs and would send its own to A, which A's agreement does not take.

The pools are built once for the module (five hosts are slow to start on a loaded
machine); the tests that partition and then kill B's central manager run last.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
from collections.abc import Iterator

import pytest
from flockpools import IDLE, RUNNING, Pools, PoolSpec, flock
from flockpools import ads as _ads
from flockpools import running_on as _running_on
from flockpools import submit as _submit
from flockpools import until as _until
from flockpools import wait_slots as _wait_slots
from flockpools import work as _work
from netns import Network, unavailable
from wanlink import WanLink

A_CONF = ("FLOCK_AGREEMENTS = b\nFLOCK_AGREEMENT_b = collector = {b}; direction = send; domain = b.test; "
          "users = group_physics\n")
B_CONF = "FLOCK_AGREEMENTS = a\nFLOCK_AGREEMENT_a = collector = {a}; direction = both; domain = a.test\n"


@pytest.fixture(scope="module")
def pools() -> Iterator[Pools]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net, flock(net, [
        PoolSpec("a", "cma", ["CentralManager"], {"suba": ["Submit"], "exa": ["Execute"]}, keyed=("exa",),
                 conf=lambda cms: A_CONF.format(**cms), sends_to=("b",)),
        PoolSpec("b", "cmb", ["CentralManager", "Submit"], {"exb": ["Execute"]}, keyed=("exb",),
                 conf=lambda cms: B_CONF.format(**cms)),
    ]) as p:
        yield p


def test_jobs_pool_a_cannot_serve_run_in_pool_b_and_report_home(pools: Pools) -> None:
    suba, cmb = pools["suba"], pools["cmb"]
    work = _work(suba, "flock")
    # A's one execute host is full: one job takes both cores, a second waits for them
    home = _submit(suba, work, 40, n=2, extra="request_cpus = 2\n", name="home")
    _until("a home job runs on exa", lambda: any(r[:1] == [RUNNING] for r in _ads(suba, home, "JobStatus")),
           pools=pools)
    physics = _submit(suba, work, 2, n=2, extra="accounting_group = group_physics\nrequest_cpus = 1\n",
                      name="physics")
    suba.roost("wait", "-quiet", "-wait", "90", physics, timeout=100)
    for proc in range(2):
        host, user = (work / f"physics.{physics}.{proc}.txt").read_text().split()
        assert host == "exb"  # ran in pool B, and its output came home
        assert user == "nobody"  # another UID_DOMAIN's job runs as B's slot user
    rows = _ads(suba, physics, "ExitCode", "RemoteHost", "User")
    assert [r[0] for r in rows] == ["0", "0"] and all(r[1].endswith("@exb") for r in rows), rows
    assert all(r[2] == "root@a.test" for r in rows), rows  # User: the owner in its own domain
    log = (work / "physics.log").read_text()
    assert log.count("\n001 (") == 2 and log.count("\n005 (") == 2, log  # events came home
    # (c) root@a.test is no user of the agreement: its waiting job never went to B
    waiting = [r for r in _ads(suba, home, "JobStatus", "NumJobStarts") if r[0] == IDLE]
    assert waiting == [[IDLE, "0"]], _ads(suba, home, "JobStatus", "NumJobStarts")
    subs = cmb.roost("status", "-submitters", "-af", "Name", check=False).stdout.split()
    assert "root@a.test" not in subs, subs
    idle_id = next(f"{home}.{r[0]}" for r in _ads(suba, home, "ProcId", "JobStatus") if r[1] == IDLE)
    why = suba.roost("q", "-better-analyze", idle_id).stdout
    assert "Flocking: no agreement with b lets root@a.test's jobs go" in why, why
    # B's negotiator charged A's user under its own name, and counted the exchange
    prio = cmb.roost("userprio", "-all", check=False).stdout
    assert "group_physics.root@a.test" in prio, prio
    flock = cmb.roost("status", "-flock").stdout
    assert re.search(r"^a\s+both\s+a\.test\s", flock, re.M), flock
    given = float(re.search(r"^a\s+\S+\s+\S+\s+\d+\s+\d+\s+(\S+)", flock, re.M).group(1))
    assert given > 0, flock
    suba.roost("rm", home)


def test_pool_b_jobs_never_run_in_pool_a(pools: Pools) -> None:
    cmb, cma, exb = pools["cmb"], pools["cma"], pools["exb"]
    work = _work(cmb, "oneway")
    # only A's execute host could run it: B tries to flock it, A's collector refuses
    cluster = _submit(cmb, work, 1, extra='requirements = (Machine == "exa")\n', name="b")
    sched_log = cmb.home / "log" / "SchedLog"
    _until("B's schedd tried pool a and was refused",
           lambda: "flocking to pool a" in sched_log.read_text(errors="replace"), pools=pools)
    assert "refused" in sched_log.read_text(errors="replace")
    subs = cma.roost("status", "-submitters", "-af", "Name", check=False).stdout.split()
    assert not any(s.endswith("@b.test") for s in subs), subs
    assert _ads(cmb, cluster, "JobStatus") == [[IDLE]]
    cmb.roost("rm", cluster)
    assert exb  # (B's own slots stayed free for B)


def test_status_of_the_other_pool_from_a_host_with_both_pools_tokens(pools: Pools) -> None:
    suba, cmb = pools["suba"], pools["cmb"]
    issuers = suba.python(
        "import sys\nfrom roost.net.token_store import find_tokens\n"
        "print(' '.join(sorted({t.claims.issuer for t in find_tokens(sys.argv[1])})))",
        str(suba.home / "tokens.d")).stdout.split()
    assert len(issuers) == 2, issuers
    there = suba.roost("status", "-pool", cmb.address, "-af", "Machine").stdout.split()
    assert there and set(there) == {"exb"}, there
    here = suba.roost("status", "-af", "Machine").stdout.split()
    assert set(here) == {"exa"}, here


def test_over_a_wide_area_link_flocked_jobs_run_and_report_home(pools: Pools) -> None:
    suba = pools["suba"]
    work = _work(suba, "wan")
    home = _submit(suba, work, 20, extra="request_cpus = 2\n", name="home")
    _until("the home job runs", lambda: _running_on(suba, home) == ["exa"], pools=pools)
    with WanLink(pools.net, ["cmb", "exb"], delay_ms=50, mbit=20) as link:  # B is far away now
        assert link.rtt_ms(suba.host, pools["exb"].address) >= 100
        physics = _submit(suba, work, 1, n=2, extra="accounting_group = group_physics\nrequest_cpus = 1\n",
                          name="physics")
        suba.roost("wait", "-quiet", "-wait", "90", physics, timeout=100)
        for proc in range(2):
            assert (work / f"physics.{physics}.{proc}.txt").read_text().split()[0] == "exb"
        assert [r[0] for r in _ads(suba, physics, "ExitCode")] == ["0", "0"]
        assert (work / "physics.log").read_text().count("\n005 (") == 2
    suba.roost("rm", home)


# Counts to 4, saying where each start runs. At 2 it checkpoints (exit 85: the starter
# sends ckpt.txt home and runs it again); at 3, the first time, it waits to be evicted.
COUNTER = """#!/bin/sh
echo "start on $(hostname)"
i=0
if [ -f ckpt.txt ]; then i=$(cat ckpt.txt); echo "resumed at $i"; fi
while [ $i -lt 4 ]; do
  i=$((i+1))
  if [ $i -eq 2 ] && [ ! -f ckpt.txt ]; then sleep 1; echo 2 > ckpt.txt; exit 85; fi
  if [ $i -eq 3 ] && [ ! -f "$1" ]; then touch "$1"; sleep 120; fi
done
echo "done $i"
"""


def test_a_job_checkpoints_in_pool_b_and_resumes_from_it_at_home(pools: Pools) -> None:
    suba = pools["suba"]
    work = _work(suba, "ckpt")
    (work / "count.sh").write_text(COUNTER)
    (work / "count.sh").chmod(0o755)
    home = _submit(suba, work, 120, extra="request_cpus = 2\n", name="home")
    _until("the home job runs", lambda: _running_on(suba, home) == ["exa"], pools=pools)
    marker = work / "evict-me"
    (work / "count.sub").write_text(
        f"executable = count.sh\narguments = {marker}\ncheckpoint_exit_code = 85\n"
        "transfer_checkpoint_files = ckpt.txt\noutput = out.txt\nlog = count.log\n"
        "should_transfer_files = YES\naccounting_group = group_physics\nrequest_cpus = 1\n"
        "request_memory = 64\nqueue\n")
    cluster = suba.roost("submit", "count.sub", cwd=work).stdout.split()[-1].rstrip(".")
    jid = f"{cluster}.0"
    _until("the counter waits at step 3 in pool b", marker.exists, timeout=90, pools=pools)
    assert _running_on(suba, cluster) == ["exb"]
    assert _ads(suba, cluster, "NumCkpts", "RemotePool") == [["1", "b"]]
    spool = suba.home / "spool" / "checkpoints" / cluster / "0" / "current" / "ckpt.txt"
    assert spool.read_text() == "2\n"  # B's starter sent the checkpoint home
    # A's slot is free again; the job may not leave home now, so its next run is A's
    suba.roost("rm", home)
    suba.roost("hold", jid)
    suba.roost("qedit", jid, "WantFlocking", "false")
    suba.roost("release", jid)
    suba.roost("wait", "-quiet", "-wait", "90", cluster, timeout=100)
    assert (work / "out.txt").read_text() == "start on exa\nresumed at 2\ndone 4\n"
    assert _ads(suba, cluster, "ExitCode", "NumJobStarts", "RemotePool") == [["0", "2", "undefined"]]


def test_b_central_manager_partitioned_jobs_there_finish_and_a_goes_on(pools: Pools) -> None:
    suba = pools["suba"]
    work = _work(suba, "cut")
    home = _submit(suba, work, 10, extra="request_cpus = 2\n", name="home")
    _until("the home job runs", lambda: _running_on(suba, home) == ["exa"], pools=pools)
    physics = _submit(suba, work, 8, extra="accounting_group = group_physics\nrequest_cpus = 1\n",
                      name="physics")
    _until("the physics job runs on exb", lambda: _running_on(suba, physics) == ["exb"], pools=pools)
    pools.net.cut("cmb")  # B's central manager unreachable: its daemons run on, alone
    try:
        local = _submit(suba, work, 1, extra="request_cpus = 1\n", name="local")
        suba.roost("wait", "-quiet", "-wait", "90", physics, home, local, timeout=100)
        assert (work / f"physics.{physics}.0.txt").read_text().split()[0] == "exb"
        assert (work / f"local.{local}.0.txt").read_text().split()[0] == "exa"
        assert [r[0] for r in _ads(suba, physics, "ExitCode")] == ["0"]
    finally:
        pools.net.mend("cmb")


def test_b_central_manager_killed_jobs_there_finish_a_goes_on_and_flocking_resumes(pools: Pools) -> None:
    suba, cmb = pools["suba"], pools["cmb"]
    work = _work(suba, "cmdown")
    home = _submit(suba, work, 12, extra="request_cpus = 2\n", name="home")
    _until("the home job runs", lambda: _running_on(suba, home) == ["exa"], pools=pools)
    physics = _submit(suba, work, 10, n=2, extra="accounting_group = group_physics\nrequest_cpus = 1\n",
                      name="physics")
    _until("both physics jobs run on exb", lambda: _running_on(suba, physics) == ["exb", "exb"], pools=pools)
    assert "Flocking: runs in pool b" in suba.roost("q", "-analyze", f"{physics}.0").stdout
    for pid in cmb.host.pids():  # B's central manager (collector, negotiator, schedd, master) dies
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    local = _submit(suba, work, 1, extra="request_cpus = 1\n", name="local")  # A's own pool goes on
    suba.roost("wait", "-quiet", "-wait", "90", physics, home, local, timeout=100)
    for proc in range(2):
        assert (work / f"physics.{physics}.{proc}.txt").read_text().split()[0] == "exb"
    assert (work / f"local.{local}.0.txt").read_text().split()[0] == "exa"
    assert [r[0] for r in _ads(suba, physics, "ExitCode")] == ["0", "0"]
    assert (work / "physics.log").read_text().count("\n005 (") == 2
    # B's central manager back: new flocked matches resume
    cmb.roost("up", "-timeout", "30", timeout=45)
    # the startd retries a lost collector with back-off up to 30 s: after a 90 s outage
    # its next try may be that far off, and a loaded machine adds its own delay
    _wait_slots(cmb, {"exb"}, timeout=120)
    busy = _submit(suba, work, 20, extra="request_cpus = 2\n", name="busy")
    _until("A's slot is taken again", lambda: _running_on(suba, busy) == ["exa"], pools=pools)
    again = _submit(suba, work, 1, extra="accounting_group = group_physics\nrequest_cpus = 1\n", name="again")
    suba.roost("wait", "-quiet", "-wait", "90", again, timeout=100)
    assert (work / f"again.{again}.0.txt").read_text().split()[0] == "exb"
    suba.roost("rm", busy)
