"""The grid universe and glide-ins through a Slurm cluster of three hosts (issue 30):
slurmctld on the controller host, where the roost pool runs too (central manager and
schedd, so the grid manager's ``sbatch`` reaches slurmctld), and a slurmd on each of two
more hosts, every host a pair of namespaces of a ``netns.Network`` (tests/slurmkit.py,
tests/system/hostpool.py). Grid jobs land on both nodes and their output comes home; a
node lost under a job (slurmd and the job killed with -9) is Slurm's NODE_FAIL and roost
runs the job again on the other node, which kept running its own, the schedd (the
grid manager) killed with -9 meanwhile submitting nothing twice; slurmctld restarted
mid-job leaves one Slurm job that completes; ``roost annex -slurm 2`` starts a
glide-in on each node, which join the pool's collector over the bridge at their
nodes' addresses, run the jobs that ask for them and leave when idle.

One cluster and one pool for the module: the tests run in order (the node lost in one
is back before the next)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostpool import MultiHostPool, RoostHost
from netns import Network, unavailable

from slurmkit import NODE_LOSS_CONF, SlurmCluster, event_codes, missing

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from poolkit import wait_until  # noqa: E402

NODES = ("n1", "n2")


class Site:
    """The three hosts: the pool on ``cm`` (with slurmctld), slurmd on n1 and n2."""

    def __init__(self, pool: MultiHostPool, slurm: SlurmCluster) -> None:
        self.pool, self.slurm = pool, slurm
        self.cm: RoostHost = pool["cm"]

    def work(self, name: str) -> Path:
        d = self.cm.host.dir / name
        d.mkdir()
        d.chmod(0o777)  # root's jobs run as nobody, their output is written back as the owner
        return d

    def submit(self, work: Path, body: str) -> str:
        (work / "job.sub").write_text(body)
        done = self.cm.roost("submit", "job.sub", cwd=work)
        m = re.search(r"submitted to cluster (\d+)", done.stdout)
        assert m, done.stdout
        return m.group(1)

    def job(self, jid: str) -> dict[str, Any] | None:
        for cmd in ("q", "history"):
            done = self.cm.roost(cmd, jid, "-json", check=False)
            if done.returncode == 0 and done.stdout.strip().startswith("["):
                ads = json.loads(done.stdout)
                if ads:
                    return ads[0]
        return None

    def wait_job(self, jid: str, pred: Callable[[dict[str, Any]], bool], timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        ad = None
        while time.monotonic() < deadline:
            ad = self.job(jid)
            if ad is not None and pred(ad):
                return ad
            time.sleep(0.1)
        raise AssertionError(f"job {jid}: {what} not within {timeout:g} s; last ad: {ad}")

    def node_of(self, jid: str) -> str:
        """The Slurm node a running grid job is on (RemoteHost is ``slurm/<node>``)."""
        return self.wait_job(jid, lambda j: j.get("JobStatus") == 2, 30, "running in Slurm")["RemoteHost"][6:]

    def glideins(self, annex: str) -> list[list[str]]:
        done = self.cm.roost("status", "-constraint", f'AnnexName =?= "{annex}" && IsGlidein =?= True',
                             "-af", "Machine", "MyAddress", "SlurmJobId", check=False)
        return [line.split() for line in done.stdout.splitlines() if line.strip()]

    def log_tails(self) -> str:
        """Every host's roost logs, Slurm's, and what the glide-ins' Slurm jobs printed."""
        outs = [f"==== glide-in {f.name}\n{f.read_text(errors='replace')[-3000:]}"
                for f in sorted(self.cm.home.glob("annex/*/*.out"))]
        return "\n".join([self.pool.log_tails(), self.slurm.log_tails(), *outs])


@pytest.fixture(scope="module")
def site() -> Iterator[Site]:
    reason = unavailable() or missing()
    if reason is not None:
        pytest.skip(reason)
    with Network() as net:
        pool = MultiHostPool(net)
        cm = pool.add("cm", "CentralManager", "Submit")
        nodes = [net.add_host(n) for n in NODES]
        with SlurmCluster(net.dir / "slurm", cpus=2, memory_mb=1024, extra_conf=NODE_LOSS_CONF,
                          controller=cm.host, nodes=nodes) as slurm:
            with open(cm.home / "roost_config", "a") as f:
                # its daemons listen on its own address only: not one a glide-in on a node can bind
                f.write(f"SLURM_CONF = {slurm.conf}\nGRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n"
                        f"ANNEX_POLL_INTERVAL = 0.5\nBIND_ADDRESS = {cm.address}\n")
            (cm.home / "slurm-tmp").mkdir(mode=0o755)
            cm.env["TMPDIR"] = str(cm.home / "slurm-tmp")  # sbatch passes it on: the glide-ins' homes
            try:
                cm.roost("up", "-timeout", "30", timeout=45)
                yield Site(pool, slurm)
            finally:
                slurm.run("scancel", "-u", "root", check=False)
                pool.stop()


GRID = """universe = grid
grid_resource = batch slurm
executable = job.sh
arguments = {secs}
request_cpus = 2
request_memory = 64
output = out.$(Process).txt
log = job.log
queue {n}
"""

# where it ran, at its end: a run killed never writes
JOB = """#!/bin/sh
sleep $1
echo "on $(hostname)"
"""


def _grid_work(site: Site, name: str) -> Path:
    work = site.work(name)
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    return work


def test_grid_jobs_land_on_both_nodes_and_their_output_comes_back(site: Site) -> None:
    work = _grid_work(site, "both")
    # two CPUs each, a node's all: one job per node
    cluster = site.submit(work, GRID.format(secs=2, n=2))
    for p in (0, 1):
        done = site.wait_job(f"{cluster}.{p}", lambda j: j.get("JobStatus") == 4, 60, "completed")
        assert done["ExitCode"] == 0 and done["GridJobStatus"] == "COMPLETED", done
    records = site.slurm.jobs(f".{cluster}.")
    assert sorted(r["NodeList"] for r in records) == sorted(NODES), records
    assert {(work / f"out.{p}.txt").read_text() for p in (0, 1)} == {f"on {n}\n" for n in NODES}


def test_a_node_lost_and_the_grid_manager_killed_rerun_the_job_on_the_other_node_and_duplicate_nothing(
        site: Site) -> None:
    """One slurmd host loses power under a job (everything there killed with -9) and, at
    once, the schedd (its grid manager) is killed with -9 too: the restarted grid manager
    sees Slurm's NODE_FAIL and submits that job once more, which runs on the other node;
    the other node's own job, mid-run through both, completes from its one Slurm job."""
    work = _grid_work(site, "lost")
    # its first run waits to be killed with its node; the second ends at once
    (work / "lost.sh").write_text(f"#!/bin/sh\nmkdir {work}/ran 2>/dev/null && sleep 60\necho \"on $(hostname)\"\n")
    (work / "lost.sh").chmod(0o755)
    lost = site.submit(work, GRID.format(secs=0, n=1).replace("job.sh", "lost.sh"))
    other = site.submit(work, GRID.format(secs=6, n=1).replace("out.$(Process)", "other").replace("job.log", "o.log"))
    lost_node, other_node = site.node_of(f"{lost}.0"), site.node_of(f"{other}.0")
    assert other_node != lost_node
    # allocated is not yet started: the power must go once the first run has begun (a
    # slurmd under load took over 0.5 s, and the rerun then was the first, sleeping 60 s)
    wait_until(lambda: (work / "ran").is_dir(), 30, "the first run started on its node")
    assert site.slurm.kill_node(lost_node), "slurmd was running"
    try:
        pidfile = site.cm.home / "run" / "schedd.pid"
        old = int(pidfile.read_text().split()[0])
        os.kill(old, signal.SIGKILL)
        wait_until(lambda: pidfile.exists() and pidfile.read_text().split()[:1] not in ([], [str(old)]), 30,
                   "the schedd (and its grid manager) back")
        done = site.wait_job(f"{lost}.0", lambda j: j.get("JobStatus") == 4, 60, "completed after NODE_FAIL")
        assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 2, done
        assert "NODE_FAIL" in done["LastVacateReason"] and done["LastRemoteHost"] == f"slurm/{lost_node}", done
        assert (work / "out.0.txt").read_text() == f"on {other_node}\n"
        records = site.slurm.jobs(f".{lost}.0.")
        assert [(r["JobState"], r["NodeList"]) for r in records] == [("NODE_FAIL", lost_node),
                                                                   ("COMPLETED", other_node)], records
        seen = event_codes(work / "job.log")
        assert seen.count("027") == 2 and seen.count("001") == 2 and seen.count("004") == 1, seen
        assert seen.count("005") == 1 and seen[-1] == "005", seen
        done = site.wait_job(f"{other}.0", lambda j: j.get("JobStatus") == 4, 30, "the other node's job done")
        assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1, done
        assert (work / "other.txt").read_text() == f"on {other_node}\n"
        assert site.slurm.states_for(f"{other}.0") == ["COMPLETED"], "one Slurm job, not two"
        seen = event_codes(work / "o.log")
        assert seen.count("027") == 1 and seen.count("005") == 1, seen
    finally:
        site.slurm.start_node(lost_node)
    wait_until(lambda: site.slurm.node_states().get(lost_node) == "idle", 30, f"{lost_node} back")


def test_slurmctld_restarted_mid_job_the_job_completes_once(site: Site) -> None:
    work = _grid_work(site, "ctld")
    jid = site.submit(work, GRID.format(secs=5, n=1)) + ".0"
    site.node_of(jid)
    site.slurm.stop_controller()
    try:
        wait_until(lambda: "026" in event_codes(work / "job.log"), 30, "026: Slurm stopped answering")
        assert site.job(jid)["JobStatus"] == 2, "the job runs on in slurmd: still Running here"
    finally:
        site.slurm.start_controller()
    done = site.wait_job(jid, lambda j: j.get("JobStatus") == 4, 60, "completed")
    assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1 and done["GridJobStatus"] == "COMPLETED"
    seen = event_codes(work / "job.log")
    assert seen.count("026") == 1 and seen.count("025") == 1 and seen.count("005") == 1, seen
    assert seen.index("026") < seen.index("025") < seen.index("005") and seen.count("027") == 1, seen
    assert site.slurm.states_for(jid) == ["COMPLETED"]


def test_annex_glideins_start_on_both_nodes_join_over_the_bridge_run_jobs_and_leave(site: Site) -> None:
    slurm, cm = site.slurm, site.cm
    # one glide-in per node needs both nodes up: after the tests before (a node lost, the
    # controller restarted) a loaded machine can leave one not yet back (a ping missed
    # under SlurmdTimeout=4), and both glide-ins would then run on the other in turn
    wait_until(lambda: site.slurm.node_states() == dict.fromkeys(NODES, "idle"), 60, "both nodes idle")
    work = site.work("annex")
    # waiting for glide-ins, one job per node: a glide-in that joins first must not take
    # both in turn while the other is still starting
    cluster = site.submit(work, """executable = /bin/sh
arguments = "-c 'sleep 3; hostname'"
requirements = TARGET.IsGlidein =?= True && TARGET.Machine == ifThenElse(MY.ProcId == 0, "n1", "n2")
request_cpus = 2
should_transfer_files = YES
output = g.$(Process).out
log = g.log
queue 2
""")
    # two CPUs each: one glide-in per node. An override of the central manager's own in the
    # environment of `roost annex`, which sbatch passes on: not the glide-ins' address
    cm.env["_ROOST_NETWORK_INTERFACE"] = cm.address
    try:
        done = cm.roost("annex", "-slurm", "2", "-duration", "10m", "-idle", "5s", "-name", "g", "-cpus", "2",
                        "-memory", "256")
    finally:
        del cm.env["_ROOST_NETWORK_INTERFACE"]
    ids = re.search(r"\(jobs ([\d, ]+)\)", done.stdout).group(1).split(", ")
    # a glide-in shows its partitionable slot and, once a job runs there, its dynamic one:
    # two ads may be one glide-in's, so count their machines
    wait_until(lambda: {a[0] for a in site.glideins("g")} == set(NODES), 60, "a glide-in of each node in the pool")
    addresses = {h.name: h.address for h in site.pool.net.hosts.values()}
    ads = site.glideins("g")
    assert {a[0] for a in ads} == set(NODES), ads
    for machine, address, slurm_id in ads:
        assert re.match(rf"<?{re.escape(addresses[machine])}:\d+", address), ads  # its node's, over the bridge
        assert slurm_id in ids
    for p in (0, 1):
        site.wait_job(f"{cluster}.{p}", lambda j: j.get("JobStatus") == 4, 60, "done on a glide-in")
    assert {(work / f"g.{p}.out").read_text().strip() for p in (0, 1)} == set(NODES)
    wait_until(lambda: not site.glideins("g"), 60, "the idle glide-ins gone from the pool")
    wait_until(lambda: all(slurm.state(j) in ("COMPLETED", "gone") for j in ids), 30, "their Slurm jobs done")
    shown = json.loads(cm.roost("status", "-annex", "-json").stdout)
    assert [a["state"] for a in shown if a["name"] == "g"] == ["ended"], shown
    wait_until(lambda: not list((cm.home / "slurm-tmp").glob("roost-gi-*")), 10, "each glide-in removed its home")
