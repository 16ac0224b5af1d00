"""The grid universe's Slurm jobs through faults on both sides (issue 30), against a
real private Slurm (tests/slurmkit.py): the controller restarted mid-run (026/025, the
job completes once), the node killed under a running job (Slurm says NODE_FAIL, roost
submits it again: HTCondor reruns a job whose machine vanished), and the schedd killed
with -9 while its job is pending in Slurm (exactly one Slurm job; ``q -analyze`` says
where it waits)."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from slurmkit import SlurmCluster, missing  # noqa: E402

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    # a lost node is noticed after SlurmdTimeout (300 s by default), and a ping of a dead
    # slurmd fails after MessageTimeout (10 s by default: the node was DOWN after 26 s, 12 s
    # with 3)
    with SlurmCluster(cpus=2, memory_mb=1024, extra_conf="SlurmdTimeout=5\nMessageTimeout=3") as cluster:
        yield cluster


@pytest.fixture(scope="module")
def grid_pool(slurm: SlurmCluster) -> Iterator[PoolHandle]:
    home = Path(f"/tmp/roost-gridf-{os.getpid()}")
    pool = start_pool(home, f"SLURM_CONF = {slurm.conf}\nGRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n")
    try:
        yield pool
    finally:
        stop_pool(pool)


@pytest.fixture
def work() -> Path:
    d = Path(f"/tmp/roost-gridf-work-{os.getpid()}-{time.monotonic_ns()}")
    d.mkdir()
    return d


SLEEP = """universe = grid
grid_resource = batch slurm
executable = /bin/sleep
transfer_executable = false
arguments = {secs}
log = job.log
queue
"""


def submit(pool: PoolHandle, work: Path, secs: int) -> str:
    (work / "job.sub").write_text(SLEEP.format(secs=secs))
    done = pool.roost("submit", "job.sub", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return f"{m.group(1)}.0"


def events(work: Path) -> list[str]:
    return re.findall(r"^(\d{3}) \(", (work / "job.log").read_text(), re.M)


def slurm_states(slurm: SlurmCluster, jid: str) -> list[str]:
    """The states of every Slurm job submitted for roost job ``jid``, oldest first."""
    from roost.core.gridbatch import parse_scontrol

    part = f".{jid.split('.')[0]}.0."
    out = slurm.run("scontrol", "show", "job", "-o", check=False).stdout
    got = [(int(r["JobId"]), r.get("JobState", "")) for r in parse_scontrol(out) if part in r.get("JobName", "")]
    return [state for _, state in sorted(got)]


def test_the_controller_restarted_mid_run_is_026_then_025_and_the_job_completes_once(
        grid_pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    jid = submit(grid_pool, work, 6)
    grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Slurm")
    slurm.stop_controller()
    try:
        wait_until(lambda: "026" in events(work), 60, "026: Slurm stopped answering")
        assert grid_pool.job(jid)["JobStatus"] == 2, "the job runs on in slurmd: still Running here"
    finally:
        slurm.start_controller()
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=90, what="completed")
    assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1 and done["GridJobStatus"] == "COMPLETED"
    seen = events(work)
    assert seen.count("026") == 1 and seen.count("025") == 1 and seen.count("005") == 1, seen
    assert seen.index("026") < seen.index("025") < seen.index("005") and seen.count("027") == 1, seen
    assert slurm_states(slurm, jid) == ["COMPLETED"]


def test_a_node_lost_under_a_running_job_is_submitted_again_and_completes_once(
        grid_pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    jid = submit(grid_pool, work, 4)
    first = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Slurm")
    assert slurm.kill_node(), "slurmd was running"
    try:
        again = grid_pool.wait_for(
            jid, lambda j: j.get("NumGridSubmits") == 2 and isinstance(j.get("GridJobId"), str)
            and j["GridJobId"].startswith("batch slurm ") and j["GridJobId"] != first["GridJobId"],
            timeout=120, what="submitted again after NODE_FAIL")
        assert again["JobStatus"] == 1, "Idle while its new Slurm job waits for a node"
        assert "NODE_FAIL" in again["LastVacateReason"], again["LastVacateReason"]
        assert slurm_states(slurm, jid)[0] == "NODE_FAIL"
    finally:
        slurm.start_node()
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=120, what="completed on the node back")
    assert done["ExitCode"] == 0
    seen = events(work)
    assert seen.count("027") == 2 and seen.count("001") == 2 and seen.count("004") == 1, seen
    assert seen.count("005") == 1 and seen[-1] == "005", seen
    assert slurm_states(slurm, jid) == ["NODE_FAIL", "COMPLETED"]


def test_a_schedd_killed_while_its_job_is_pending_in_slurm_leaves_one_slurm_job(
        grid_pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    blocker = slurm.run("sbatch", "--parsable", "--cpus-per-task=2", "--output=/dev/null", "--wrap",
                        "sleep 300").stdout.strip()
    try:
        wait_until(lambda: "JobState=RUNNING" in slurm.run("scontrol", "show", "job", "-o", blocker).stdout, 60,
                   "the blocker running on both CPUs")
        jid = submit(grid_pool, work, 1)
        pending = grid_pool.wait_for(jid, lambda j: j.get("GridJobStatusReason") == "Resources", timeout=60,
                                     what="pending in Slurm for Resources")
        slurm_id = pending["GridJobId"].split()[-1]
        said = grid_pool.roost("q", "-better-analyze", jid)
        assert said.returncode == 0, said.stderr
        assert f"Grid job (batch slurm): pending in Slurm as job {slurm_id}: (Resources)" in said.stdout, said.stdout
        assert "Run analysis summary" not in said.stdout, "no matchmaking for a job Slurm schedules"
        old = grid_pool.daemon_pid("schedd")
        os.kill(old, signal.SIGKILL)
        grid_pool.wait_daemon_back("schedd", old, timeout=30)
        back = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 1, timeout=30, what="idle after restart")
        assert back["GridJobId"] == pending["GridJobId"], "the same Slurm job, polled again"
    finally:
        slurm.run("scancel", blocker, check=False)
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=90, what="completed")
    assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1
    assert slurm_states(slurm, jid) == ["COMPLETED"], "one Slurm job, not two"
    seen = events(work)
    assert seen.count("027") == 1 and seen.count("005") == 1, seen
