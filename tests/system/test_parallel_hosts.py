"""Parallel jobs across hosts (issue 16): two execute hosts of two dedicated static
slots each (``use POLICY : Dedicated(submit)``); an Open MPI job of four nodes runs
across both through roost's openmpiscript; a host that dies under a running parallel
job stops its every node and puts the whole job back in the queue."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostpool import MultiHostPool, RoostHost, four_hosts
from netns import Network

from roost.mpi import OPENMPI_SCRIPT

DEDICATED = """
SLOT_TYPE_1 = cpus=1, memory=256
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = 2
use POLICY : Dedicated(submit)
"""

RING = """from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
tok = c.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)
total = c.allreduce(r, op=MPI.SUM)
print(f"rank {r} of {n} on {MPI.Get_processor_name()} got {tok} sum {total}", flush=True)
"""


def _has_mpi() -> bool:
    if shutil.which("mpirun") is None:
        return False
    return subprocess.run(["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True).returncode == 0


@pytest.fixture
def hosts(network: Network) -> Iterator[MultiHostPool]:
    with four_hosts(network, keyed=("exec1", "exec2"), execute_config=DEDICATED) as pool:
        sub = pool["submit"]
        for d in (sub.host.dir, sub.home):
            d.chmod(0o711)  # the job's owner reaches its _CONDOR_REMOTE_SPOOL_DIR
        yield pool


def _work(submit: RoostHost, name: str) -> Path:
    work = submit.host.dir / name
    work.mkdir()
    work.chmod(0o777)
    return work


def _submit(submit: RoostHost, work: Path, text: str) -> str:
    (work / "job.sub").write_text(text)
    done = submit.roost("submit", "job.sub", cwd=work)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return m.group(1)


def _ad(submit: RoostHost, cluster: str, *attrs: str) -> list[str]:
    done = submit.roost("q", cluster, "-af", *attrs, check=False)
    if not done.stdout.strip():
        done = submit.roost("history", cluster, "-af", *attrs, check=False)
    return done.stdout.split()


@pytest.mark.skipif(not _has_mpi(), reason="needs Open MPI (openmpi-bin) and mpi4py for /usr/bin/python3")
def test_mpi_job_runs_across_two_hosts(hosts: MultiHostPool) -> None:
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "mpi")
    shutil.copy(OPENMPI_SCRIPT, work / "openmpiscript")
    (work / "ring.py").write_text(RING)
    cluster = _submit(submit, work, "universe = parallel\nexecutable = openmpiscript\n"
                      "arguments = /usr/bin/python3 ring.py\ntransfer_input_files = ring.py\nmachine_count = 4\n"
                      "output = out.$(Node)\nerror = err.$(Node)\nlog = p.log\nrequest_memory = 64\nqueue\n")
    submit.roost("wait", "-quiet", "-wait", "120", cluster, timeout=130)
    out = (work / "out.0").read_text()
    assert _ad(submit, cluster, "JobStatus", "ExitCode") == ["4", "0"], (out, (work / "err.0").read_text(),
                                                                          hosts.log_tails())
    ranks = re.findall(r"rank (\d) of 4 on (\S+) got (\d) sum 6", out)
    assert sorted(int(r) for r, _h, _t in ranks) == [0, 1, 2, 3], out
    assert {h for _r, h, _t in ranks} == {"exec1", "exec2"}, out  # across both hosts


def test_a_host_dying_under_a_parallel_job_requeues_the_whole_job(hosts: MultiHostPool) -> None:
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "die")
    cluster = _submit(submit, work, "universe = parallel\nexecutable = /bin/sleep\narguments = 302\n"
                      "machine_count = 4\nlog = p.log\nrequest_memory = 64\nqueue\n")
    deadline = time.monotonic() + 60
    while _ad(submit, cluster, "JobStatus") != ["2"]:
        assert time.monotonic() < deadline, hosts.log_tails()
        time.sleep(0.2)
    # every node has started (Running comes with node 0; a node starting after the kill below
    # would outlive its dead host as an orphan)
    deadline = time.monotonic() + 60
    while subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.count("sleep 302") < 4:
        assert time.monotonic() < deadline, hosts.log_tails()
        time.sleep(0.2)
    for pid in hosts["exec2"].host.pids():  # the host dies: its daemons and its jobs
        subprocess.run(["kill", "-9", str(pid)], check=False)
    deadline = time.monotonic() + 60
    while _ad(submit, cluster, "JobStatus") != ["1"]:  # the lease (6 s) runs out: back to the queue
        assert time.monotonic() < deadline, hosts.log_tails()
        time.sleep(0.5)
    text = (work / "p.log").read_text()
    assert "007 (" in text and "Parallel job failed: node" in text, text
    deadline = time.monotonic() + 30
    while "sleep 302" in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout:
        assert time.monotonic() < deadline, "exec1's nodes were not stopped"
        time.sleep(0.5)
    log = (submit.home / "log" / "SchedLog").read_text()
    assert "every node stopped" in log
    submit.roost("rm", cluster)
