"""Flocking between two pools in network namespaces (issue 29, docs/flocking.md).

Pool A (``a.test``): a central manager, a submit host and one execute host; pool B
(``b.test``): a central manager that also submits, and one execute host. Each pool has
its own TRUST_DOMAIN and signing key; the admins exchanged tokens as docs/flocking.md
says: B minted ``condor@a.test`` for A's submit host, A minted ``condor@b.test`` for
B's central manager and execute host. A sends ``group_physics`` jobs to B; B takes A's
jobs and would send its own to A, which A's agreement does not take.

The pools are built once for the module (five hosts are slow to start on a loaded
machine); the tests that partition and then kill B's central manager run last.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostpool import UID_DOMAIN, RoostHost
from netns import Network, unavailable

from roost.vocabulary import JobStatus

IDLE, RUNNING, DONE = str(JobStatus.IDLE), str(JobStatus.RUNNING), str(JobStatus.COMPLETED)

JOB = """#!/bin/sh
sleep $1
echo "$(hostname) $(id -un)" > result.txt
"""

FLOCK_FAST = "FLOCK_AFTER = 1\nFLOCK_INTERVAL = 1\n"


def _configured(h: RoostHost, domain: str, extra: str) -> RoostHost:
    """``h`` in its pool's UID_DOMAIN, with the flocking knobs."""
    cfg = h.home / "roost_config"
    cfg.write_text(cfg.read_text().replace(f"UID_DOMAIN = {UID_DOMAIN}", f"UID_DOMAIN = {domain}")
                   + FLOCK_FAST + extra)
    return h


class Pools:
    """The five hosts by name: cma, suba, exa (pool A); cmb, exb (pool B)."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.hosts: dict[str, RoostHost] = {}

    def __getitem__(self, name: str) -> RoostHost:
        return self.hosts[name]

    def add(self, name: str, roles: list[str], cm: RoostHost, domain: str, extra: str = "") -> RoostHost:
        host = self.net.add_host(name)
        h = self.hosts[name] = _configured(RoostHost(host, roles, cm.address), domain, extra)
        return h

    def log_tails(self) -> str:
        return "\n".join(h.log_tails() for h in self.hosts.values())

    def stop(self) -> None:
        for h in reversed(list(self.hosts.values())):
            with contextlib.suppress(Exception):
                h.roost("down", "-timeout", "10", timeout=15, check=False)


@pytest.fixture(scope="module")
def pools() -> Iterator[Pools]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net:
        p = Pools(net)
        try:
            cma_host = net.add_host("cma")
            cmb_host = net.add_host("cmb")
            a_conf = (f"FLOCK_AGREEMENTS = b\nFLOCK_AGREEMENT_b = collector = {cmb_host.address}; "
                      "direction = send; domain = b.test; users = group_physics\n")
            b_conf = (f"FLOCK_AGREEMENTS = a\nFLOCK_AGREEMENT_a = collector = {cma_host.address}; "
                      "direction = both; domain = a.test\n")
            cma = p.hosts["cma"] = _configured(RoostHost(cma_host, ["CentralManager"], cma_host.address),
                                               "a.test", a_conf)
            cmb = p.hosts["cmb"] = _configured(RoostHost(cmb_host, ["CentralManager", "Submit"], cmb_host.address),
                                               "b.test", b_conf)
            suba = p.add("suba", ["Submit"], cma, "a.test", a_conf)
            exa = p.add("exa", ["Execute"], cma, "a.test", a_conf)
            exb = p.add("exb", ["Execute"], cmb, "b.test", b_conf)
            cma.roost("up", "-timeout", "30", timeout=45)
            # the exchange (docs/flocking.md): each pool mints the other's daemon identity,
            # and the other's admin drops it into the hosts' tokens.d before they start
            for h in (cmb, exb):
                (h.home / "tokens.d").mkdir(mode=0o700)
                cma.roost("token", "create", "-identity", "condor@b.test",
                          "-file", str(h.home / "tokens.d" / "pool-a"))
            cmb.roost("up", "-timeout", "30", timeout=45)
            (suba.home / "tokens.d").mkdir(mode=0o700)  # joins A with a daemon token only
            cma.roost("token", "create", "-identity", "condor@a.test", "-file", str(suba.home / "tokens.d" / "pool"))
            cmb.roost("token", "create", "-identity", "condor@a.test", "-file", str(suba.home / "tokens.d" / "pool-b"))
            exa.take_pool_key(cma)
            exb.take_pool_key(cmb)
            for h in (suba, exa, exb):
                h.roost("up", "-timeout", "30", timeout=45)
            _wait_slots(cma, {"exa"})
            _wait_slots(cmb, {"exb"})
            yield p
        finally:
            p.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call" and rep.failed:
        p = item.funcargs.get("pools") if hasattr(item, "funcargs") else None
        if isinstance(p, Pools):
            rep.sections.append(("roost logs, every host", p.log_tails()))


def _wait_slots(cm: RoostHost, machines: set[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    seen: set[str] = set()
    while time.monotonic() < deadline:
        seen = set(cm.roost("status", "-af", "Machine", check=False).stdout.split())
        if machines <= seen:
            return
        time.sleep(0.3)
    raise AssertionError(f"{cm.name}: slots of {sorted(machines - seen)} never arrived\n{cm.log_tails()}")


def _work(h: RoostHost, name: str) -> Path:
    work = h.host.dir / name
    work.mkdir()
    work.chmod(0o777)
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    return work


def _submit(h: RoostHost, work: Path, secs: float, n: int = 1, extra: str = "", name: str = "job") -> str:
    (work / f"{name}.sub").write_text(
        f"executable = job.sh\narguments = {secs}\nshould_transfer_files = YES\n"
        f"transfer_output_files = result.txt\n"
        f'transfer_output_remaps = "result.txt = {name}.$(Cluster).$(Process).txt"\n'
        f"log = {name}.log\nrequest_memory = 64\n{extra}queue {n}\n")
    done = h.roost("submit", f"{name}.sub", cwd=work)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return m.group(1)


def _ads(h: RoostHost, cluster: str, *attrs: str) -> list[list[str]]:
    done = h.roost("q", cluster, "-af", *attrs, check=False)
    if not done.stdout.strip():
        done = h.roost("history", cluster, "-af", *attrs, check=False)
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def _until(what: str, check, timeout: float = 60, pools: Pools | None = None):  # noqa: ANN001, ANN202
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}\n" + (pools.log_tails() if pools else ""))
        time.sleep(0.3)


def _running_on(h: RoostHost, cluster: str) -> list[str]:
    """The hosts the cluster's running jobs run on (empty until all of them run)."""
    rows = _ads(h, cluster, "JobStatus", "RemoteHost")
    if not rows or any(r[0] != RUNNING or len(r) < 2 for r in rows):
        return []
    return [r[1].rpartition("@")[2].split(".")[0] for r in rows]


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
