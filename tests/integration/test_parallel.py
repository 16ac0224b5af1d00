"""Parallel-universe jobs under the dedicated scheduler (issue 16), on a real pool of
four static one-CPU slots made dedicated with ``use POLICY : Dedicated``: nodes with
their number in files, arguments and environment; the shutdown policies; MPI (Open MPI
through roost's openmpiscript); a job that can never fit says why; a serial job that
asks for a dedicated slot; removal stops every node."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

from roost.mpi import OPENMPI_SCRIPT

DEDICATED4 = """
SLOT_TYPE_1 = cpus=1, memory=512
SLOT_TYPE_1_PARTITIONABLE = False
NUM_SLOTS_TYPE_1 = 4
use POLICY : Dedicated
DEDICATED_SCHEDULER_INTERVAL = 0.5
UNUSED_CLAIM_TIMEOUT = 8
"""
# UNUSED_CLAIM_TIMEOUT: a claim no dedicated job wants goes back this long after its job
# (an ordinary job after the parallel ones waits for it: 30 s made one test 31 s); long
# enough that the next parallel job of a test still finds the claims its last one left

RING = """from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
tok = c.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)
total = c.allreduce(r, op=MPI.SUM)
print(f"rank {r} of {n} got {tok} sum {total}", flush=True)
"""


def _has_mpi() -> bool:
    if shutil.which("mpirun") is None:
        return False
    return subprocess.run(["/usr/bin/python3", "-c", "import mpi4py"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def dpool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-par-", dir="/tmp"))
    home.chmod(0o711)  # jobs' owners reach their _CONDOR_REMOTE_SPOOL_DIR through Chirp
    p = start_pool(home, DEDICATED4)
    try:
        yield p
    finally:
        stop_pool(p)


def _events(d: Path, log: str = "p.log") -> list[str]:
    return re.findall(r"^(\d{3}) \(", (d / log).read_text(), re.M)


def test_nodes_get_their_number_and_wait_for_all(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("""universe = parallel
executable = /bin/sh
arguments = "-c 'echo node $(Node) of $_CONDOR_NPROCS procno $_CONDOR_PROCNO hosts $_ROOST_PARALLEL_HOSTS spool $_CONDOR_REMOTE_SPOOL_DIR; sleep $(Node); exit $(Node)'"
machine_count = 3
+ParallelShutdownPolicy = "WAIT_FOR_ALL"
output = out.$(Node)
error = err.$(NODE)
log = p.log
should_transfer_files = YES
queue
""", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait([jid], timeout=60)
    for n in range(3):
        text = (jobdir / f"out.{n}").read_text()
        assert text.startswith(f"node {n} of 3 procno {n} hosts 127.0.0.1 127.0.0.1 127.0.0.1 spool "), text
        assert (jobdir / f"err.{n}").exists()
    job = dpool.job(jid)
    assert job is not None and job["JobStatus"] == 4 and job["ExitCode"] == 0, job  # node 0's exit
    ev = _events(jobdir)
    assert ev.count("001") == 1 and ev.count("014") == 3 and ev.count("015") == 3 and ev[-1] == "005", ev
    text = (jobdir / "p.log").read_text()
    assert "Node 2 terminated." in text and "(return value 2)" in text


def test_node_0_ends_the_job_by_default(dpool: PoolHandle, jobdir: Path) -> None:
    """Without WAIT_FOR_ALL the job is over when node 0 exits: the others are stopped."""
    # (sleep 307: a duration no other test uses, since ps sees every test's processes)
    r = dpool.submit("""universe = parallel
executable = /bin/sh
arguments = "-c 'if [ $(Node) = 0 ]; then sleep 1; exit 3; fi; exec sleep 307'"
machine_count = 4
log = p.log
queue
""", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait([jid], timeout=60)
    job = dpool.job(jid)
    assert job is not None and job["ExitCode"] == 3, job
    wait_until(lambda: "sleep 307" not in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                         text=True).stdout, 30, "the other nodes stopped")


@pytest.mark.skipif(not _has_mpi(), reason="needs Open MPI (openmpi-bin) and mpi4py for /usr/bin/python3")
def test_mpi_ring_on_four_slots(dpool: PoolHandle, jobdir: Path) -> None:
    shutil.copy(OPENMPI_SCRIPT, jobdir / "openmpiscript")
    (jobdir / "ring.py").write_text(RING)
    r = dpool.submit("""universe = parallel
executable = openmpiscript
arguments = /usr/bin/python3 ring.py
transfer_input_files = ring.py
machine_count = 4
output = out.$(Node)
error = err.$(Node)
log = p.log
queue
""", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait([jid], timeout=120)
    job = dpool.job(jid)
    out = (jobdir / "out.0").read_text()
    assert job is not None and job["ExitCode"] == 0, (job, out, (jobdir / "err.0").read_text())
    for rank in range(4):
        assert f"rank {rank} of 4 got {(rank - 1) % 4} sum 6" in out, out
    assert not (jobdir / ".roost_mpi_contacts").exists()  # the nodes' secrets stay on the nodes


def test_a_job_bigger_than_the_dedicated_pool_says_why(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("universe = parallel\nexecutable = /bin/true\nmachine_count = 9\nqueue\n", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    job = dpool.wait_for(jid, lambda j: "DedicatedSchedulerReason" in j, 30, "a reason")
    assert job["DedicatedSchedulerReason"] == "needs 9 dedicated nodes; 4 match it"
    assert job["JobStatus"] == 1
    dpool.roost("rm", jid, check=True)


def test_a_serial_job_may_ask_for_a_dedicated_slot(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("executable = /bin/echo\narguments = hi\n+WantDedicated = true\noutput = o\nqueue\n", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait([jid], timeout=60)
    assert (jobdir / "o").read_text() == "hi\n"


def test_removing_a_running_parallel_job_stops_every_node(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("""universe = parallel
executable = /bin/sleep
arguments = 301
machine_count = 2
log = p.log
queue
""", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait_for(jid, lambda j: j["JobStatus"] == 2, 60, "running")
    wait_until(lambda: subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                      text=True).stdout.count("sleep 301") == 2, 30, "both nodes running")
    dpool.roost("rm", jid, check=True)
    wait_until(lambda: "sleep 301" not in subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                                         text=True).stdout, 30, "every node stopped")
    wait_until(lambda: (dpool.job(jid) or {}).get("JobStatus") == 3, 30, "removed")
    assert "009" in _events(jobdir)
    assert os.path.isdir(dpool.home / "spool")


def test_analyze_says_why_a_too_big_job_never_runs(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("universe = parallel\nexecutable = /bin/true\nmachine_count = 7\nqueue\n", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait_for(jid, lambda j: "DedicatedSchedulerReason" in j, 30, "a reason")
    out = dpool.roost("q", "-analyze", jid, check=True).stdout
    assert "the dedicated scheduler will never run it: it needs 7 dedicated nodes; 4 match it" in out, out
    dpool.roost("rm", jid, check=True)


def test_while_a_big_job_waits_its_slots_backfill_opportunistic_jobs_vacated_for_it(
        dpool: PoolHandle, jobdir: Path) -> None:
    """A (2 nodes) runs until told, C (2 nodes) ends at once; B (4 nodes) must wait for A. The
    claims C left are lent: opportunistic jobs run there, and are vacated (evicted, 004)
    when A ends and B claims its four slots back by rank; then B runs."""
    # A runs until the test says so (a file in its shared working directory)
    a = dpool.submit("universe = parallel\nexecutable = /bin/sh\n"
                     "arguments = \"-c 'while [ ! -e go ]; do sleep 0.2; done'\"\nmachine_count = 2\n"
                     "should_transfer_files = NO\nlog = a.log\nqueue\n", jobdir).clusters[0][0]
    c = dpool.submit("universe = parallel\nexecutable = /bin/true\nmachine_count = 2\nlog = c.log\nqueue\n",
                     jobdir).clusters[0][0]
    dpool.wait([f"{c}.0"], timeout=60)
    assert (dpool.job(f"{a}.0") or {}).get("JobStatus") == 2  # A still runs
    b = dpool.submit("universe = parallel\nexecutable = /bin/true\nmachine_count = 4\nlog = b.log\nqueue\n",
                     jobdir).clusters[0][0]
    opp = dpool.submit("executable = /bin/sleep\narguments = 120\nlog = opp.log\nqueue 2\n", jobdir).clusters[0][0]
    wait_until(lambda: _events(jobdir, "opp.log").count("001") == 2, 30, "opportunistic jobs on the lent slots")
    assert (dpool.job(f"{b}.0") or {}).get("JobStatus") == 1  # B still waits for A
    (jobdir / "go").write_text("")
    dpool.wait([f"{b}.0"], timeout=90)
    ev = _events(jobdir, "opp.log")
    assert ev.count("004") == 2, ev  # both vacated for B
    assert (dpool.job(f"{b}.0") or {}).get("ExitCode") == 0
    dpool.roost("rm", str(opp), check=True)


def test_want_dedicated_procs_are_jobs_each_and_scheduler_cannot_be_claimed(
        dpool: PoolHandle, jobdir: Path) -> None:
    """queue 2 of +WantDedicated: two one-node jobs, each with its own exit. An ordinary
    job naming the dedicated scheduler in +Scheduler does not get its rank."""
    r = dpool.submit("executable = /bin/sh\narguments = \"-c 'exit $(Process)'\"\n+WantDedicated = true\n"
                     "queue 2\n", jobdir)
    cid = r.clusters[0][0]
    dpool.wait([f"{cid}.0", f"{cid}.1"], timeout=60)
    assert [(dpool.job(f"{cid}.{p}") or {}).get("ExitCode") for p in (0, 1)] == [0, 1]
    spoof = dpool.submit('executable = /bin/sleep\narguments = 303\n+Scheduler = "DedicatedScheduler@localhost"\n'
                         "queue\n", jobdir).clusters[0][0]
    dpool.wait_for(f"{spoof}.0", lambda j: j["JobStatus"] == 2, 60, "running")
    ranks = dpool.roost("status", "-af", "RemoteUser", "CurrentRank", check=True).stdout
    assert not any(line.startswith("root@") and not line.endswith(" 0.0") and not line.endswith(" 0")
                   for line in ranks.splitlines()), ranks
    s = dpool.schedd()
    try:
        with pytest.raises(Exception, match="Scheduler"):
            s.edit(f"{spoof}.0", {"Scheduler": "DedicatedScheduler@localhost"})  # the schedd's own attribute
    finally:
        s.close()
    dpool.roost("rm", str(spoof), check=True)


def test_tail_of_a_running_parallel_job_reads_node_0(dpool: PoolHandle, jobdir: Path) -> None:
    r = dpool.submit("universe = parallel\nexecutable = /bin/sh\n"
                     "arguments = \"-c 'echo I am node $(Node); exec sleep 304'\"\nmachine_count = 2\n"
                     "output = out.$(Node)\nqueue\n", jobdir)
    jid = f"{r.clusters[0][0]}.0"
    dpool.wait_for(jid, lambda j: j["JobStatus"] == 2, 60, "running")
    wait_until(lambda: "I am node 0" in dpool.roost("tail", jid).stdout, 20, "node 0's output through roost tail")
    dpool.roost("rm", jid, check=True)


def test_a_multi_executable_job_runs_its_procs_together(dpool: PoolHandle, jobdir: Path) -> None:
    """Two queue statements, different arguments and machine_count: one job of three
    nodes, numbered across its procs; each proc completes."""
    r = dpool.submit("""universe = parallel
executable = /bin/sh
arguments = "-c 'echo master $(Node) of $_CONDOR_NPROCS'"
machine_count = 1
output = out.$(Node)
log = p.log
+ParallelShutdownPolicy = "WAIT_FOR_ALL"
queue
arguments = "-c 'echo worker $(Node) of $_CONDOR_NPROCS; sleep 1'"
machine_count = 2
queue
""", jobdir)
    cid = r.clusters[0][0]
    dpool.wait([f"{cid}.0", f"{cid}.1"], timeout=60)
    assert [(jobdir / f"out.{n}").read_text() for n in range(3)] == [
        "master 0 of 3\n", "worker 1 of 3\n", "worker 2 of 3\n"]
    assert all((dpool.job(f"{cid}.{p}") or {}).get("JobStatus") == 4 for p in (0, 1))
