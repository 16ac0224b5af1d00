"""The grid universe against a real Slurm (issue 30): ``grid_resource = batch slurm``
jobs go to a private Slurm on this host (tests/slurmkit.py), mirrored in the queue,
their files staged in and back, rm/hold/release passed through, Slurm's refusals held
with Slurm's words, a schedd killed with -9 picking its Slurm jobs up again."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, job_dir, start_pool, stop_pool, wait_until
from poolkit import submit_text as submit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from slurmkit import SlurmCluster, missing  # noqa: E402

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    with SlurmCluster(cpus=2, memory_mb=1024, partitions=("debug", "short")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def grid_pool(slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PoolHandle]:
    home = Path(f"/tmp/roost-grid-{os.getpid()}")
    pool = start_pool(home, f"SLURM_CONF = {slurm.conf}\nGRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n")
    try:
        yield pool
    finally:
        stop_pool(pool)


@pytest.fixture
def work() -> Iterator[Path]:
    with job_dir("roost-grid-work") as d:
        yield d


JOB = """#!/bin/sh
read n < numbers.txt
echo "got $n on $(hostname) as $(id -un)"
echo "$n$n" > result.txt
echo "to stderr" >&2
exit 3
"""


def test_a_job_runs_in_slurm_and_its_files_and_events_come_home(grid_pool: PoolHandle, slurm: SlurmCluster,
                                                                 work: Path) -> None:
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    (work / "numbers.txt").write_text("21\n")
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch slurm
executable = job.sh
transfer_input_files = numbers.txt
transfer_output_files = result.txt
output = out.txt
error = err.txt
log = job.log
request_memory = 64
batch_queue = short
queue
""")
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed")
    assert done["ExitCode"] == 3 and done["GridJobStatus"] == "FAILED", "Slurm's word for a non-zero exit"
    assert re.fullmatch(r"batch slurm \d+", done["GridJobId"]), done["GridJobId"]
    assert re.fullmatch(r"got 21 on \S+ as nobody\n", (work / "out.txt").read_text()), "root's jobs run as nobody"
    assert (work / "err.txt").read_text() == "to stderr\n"
    assert (work / "result.txt").read_text() == "2121\n"
    log = (work / "job.log").read_text()
    numbers = re.findall(r"^(\d{3}) \(", log, re.M)
    assert numbers[:2] == ["000", "027"] and numbers[-1] == "005" and "001" in numbers, numbers
    assert f"GridJobId: {done['GridJobId']}" in log and "return value 3" in log
    slurm_id = done["GridJobId"].split()[-1]
    record = slurm.run("scontrol", "show", "job", "-o", slurm_id).stdout
    assert "Partition=short" in record and "MinMemoryNode=64M" in record


def test_slurm_refusing_the_job_holds_it_with_slurms_reason(grid_pool: PoolHandle, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch slurm
executable = /bin/true
transfer_executable = false
request_memory = 100000
log = job.log
queue
""")
    held = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    assert held["HoldReason"].startswith("Slurm refused the job: sbatch: error:"), held["HoldReason"]
    assert "Memory specification can not be satisfied" in held["HoldReason"]


def test_rm_hold_and_release_pass_through_to_slurm(grid_pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    body = """universe = grid
grid_resource = batch slurm
executable = /bin/sleep
transfer_executable = false
arguments = {secs}
log = job.log
queue
"""
    jid = submit(grid_pool, work, body.format(secs=300))
    running = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Slurm")
    slurm_id = running["GridJobId"].split()[-1]
    assert grid_pool.roost("rm", jid).returncode == 0

    def state(sid: str) -> str:
        out = slurm.run("scontrol", "show", "job", "-o", sid, check=False).stdout
        m = re.search(r"JobState=(\S+)", out)
        return m.group(1) if m else "gone"

    wait_until(lambda: state(slurm_id) == "CANCELLED", 30, "the Slurm job cancelled by roost rm")
    wait_until(lambda: grid_pool.job(jid) is not None and grid_pool.job(jid).get("JobStatus") == 3, 30, "removed")

    jid = submit(grid_pool, work, body.format(secs=3))
    first = grid_pool.wait_for(jid, lambda j: isinstance(j.get("GridJobId"), str), timeout=60, what="in Slurm")
    assert grid_pool.roost("hold", jid).returncode == 0
    wait_until(lambda: state(first["GridJobId"].split()[-1]) == "CANCELLED", 30, "cancelled by roost hold")
    assert grid_pool.roost("release", jid).returncode == 0
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed after release")
    assert done["NumGridSubmits"] == 2 and done["GridJobId"] != first["GridJobId"]


def test_a_schedd_killed_mid_run_picks_its_slurm_job_up_again_and_submits_it_once(
        grid_pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch slurm
executable = /bin/sleep
transfer_executable = false
arguments = 3
log = job.log
queue
""")
    grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Slurm")
    old = grid_pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    grid_pool.wait_daemon_back("schedd", old, timeout=30)
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed after the kill")
    assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1
    cluster = jid.split(".")[0]
    assert len(slurm.jobs(f".{cluster}.0.")) == 1, "one Slurm job, not two"
    log = (work / "job.log").read_text()
    assert log.count("\n005 (") + log.startswith("005 (") == 1 and log.count("027 (") == 1
