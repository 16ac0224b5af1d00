"""The grid universe against a real Grid Engine (issue 30): ``grid_resource = batch
sge`` jobs go to a private Son of Grid Engine cell on this host (tests/sgekit.py),
mirrored in the queue, their files staged in and back, rm/hold/release passed through
(qdel), Grid Engine's refusals and limits held with its words, a schedd killed with -9
picking its Grid Engine job up again."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, job_dir, start_pool, stop_pool, wait_until
from poolkit import submit_text as submit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sgekit import SgeCell, missing  # noqa: E402

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def sge() -> Iterator[SgeCell]:
    with SgeCell(slots=2) as cell:
        yield cell


@pytest.fixture(scope="module")
def grid_pool(sge: SgeCell) -> Iterator[PoolHandle]:
    home = Path(f"/tmp/roost-gridsge-{os.getpid()}")
    pool = start_pool(home, sge.config_lines() + "SGE_PARALLEL_ENVIRONMENT = smp\nSGE_MEMORY_RESOURCE = h_vmem\n"
                      "GRIDMANAGER_JOB_PROBE_INTERVAL = 0.5\n")
    try:
        yield pool
    finally:
        stop_pool(pool)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def work() -> Iterator[Path]:
    with job_dir("roost-gridsge-work") as d:
        yield d


JOB = """#!/bin/sh
read n < numbers.txt
echo "got $n as $(id -un) in $NSLOTS slots"
echo "$n$n" > result.txt
echo "to stderr" >&2
exit 3
"""


def accounting(sge: SgeCell, what: str) -> dict[str, str]:
    from roost.core.gridsge import parse_qacct

    got: list[dict[str, str]] = []
    wait_until(lambda: bool(got.extend(parse_qacct(sge.run("qacct", "-j", what, check=False).stdout)) or got),
               30, f"qacct's record of {what}")
    return got[-1]


def test_a_job_runs_in_grid_engine_and_its_files_and_events_come_home(grid_pool: PoolHandle, sge: SgeCell,
                                                                       work: Path) -> None:
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    (work / "numbers.txt").write_text("21\n")
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = job.sh
transfer_input_files = numbers.txt
transfer_output_files = result.txt
output = out.txt
error = err.txt
log = job.log
request_cpus = 2
request_memory = 64
batch_runtime = 600
batch_queue = roost.q
queue
""")
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=90, what="completed")
    assert done["ExitCode"] == 3 and done["GridJobStatus"] == "done"
    assert re.fullmatch(r"batch sge \d+", done["GridJobId"]), done["GridJobId"]
    assert (work / "out.txt").read_text() == "got 21 as nobody in 2 slots\n", "root's jobs run as nobody, 2 slots"
    assert (work / "err.txt").read_text() == "to stderr\n"
    assert (work / "result.txt").read_text() == "2121\n"
    log = (work / "job.log").read_text()
    numbers = re.findall(r"^(\d{3}) \(", log, re.M)
    assert numbers[:2] == ["000", "027"] and numbers[-1] == "005" and "001" in numbers, numbers
    assert f"GridJobId: {done['GridJobId']}" in log and "return value 3" in log
    record = accounting(sge, done["GridJobId"].split()[-1])
    assert record["granted_pe"] == "smp" and record["slots"] == "2" and record["qname"] == "roost.q"
    assert record["owner"] == "nobody" and record["jobname"] == done["GridJobSubmitName"]
    assert "h_vmem=64M" in record["category"] and "h_rt=600" in record["category"], record["category"]


def test_grid_engine_refusing_the_job_holds_it_with_its_reason(grid_pool: PoolHandle, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = /bin/true
transfer_executable = false
batch_queue = nosuch.q
log = job.log
queue
""")
    held = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    assert held["HoldReason"] == ('Grid Engine refused the job: Unable to run job: Job was rejected because job '
                                  'requests unknown queue "nosuch.q" Exiting.'), held["HoldReason"]


def test_a_job_past_its_batch_runtime_is_held_with_grid_engines_words(grid_pool: PoolHandle, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = /bin/sleep
transfer_executable = false
arguments = 120
batch_runtime = 2
log = job.log
queue
""")
    held = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=90, what="held past h_rt")
    assert held["HoldReasonCode"] == 46, held
    assert held["HoldReason"].startswith("Grid Engine: it ran past its limit (batch_runtime): failed 37 "
                                         "(qmaster enforced h_rt"), held["HoldReason"]


def test_rm_hold_and_release_pass_through_to_grid_engine(grid_pool: PoolHandle, sge: SgeCell, work: Path) -> None:
    body = """universe = grid
grid_resource = batch sge
executable = /bin/sleep
transfer_executable = false
arguments = {secs}
log = job.log
queue
"""

    def listed(sge_id: str) -> bool:
        return f"<JB_job_number>{sge_id}</JB_job_number>" in sge.run("qstat", "-u", "*", "-xml").stdout

    jid = submit(grid_pool, work, body.format(secs=300))
    # Running from Grid Engine's "t" (its transfer to the execd) on; "r" once it runs there
    running = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2 and j.get("GridJobStatus") == "r",
                                 timeout=60, what="running in Grid Engine")
    assert running["RemoteHost"].startswith("sge/")
    sge_id = running["GridJobId"].split()[-1]
    assert grid_pool.roost("rm", jid).returncode == 0
    wait_until(lambda: not listed(sge_id), 30, "the Grid Engine job deleted by roost rm")
    wait_until(lambda: grid_pool.job(jid) is not None and grid_pool.job(jid).get("JobStatus") == 3, 30, "removed")

    jid = submit(grid_pool, work, body.format(secs=3))
    first = grid_pool.wait_for(jid, lambda j: isinstance(j.get("GridJobId"), str), timeout=60, what="in Grid Engine")
    assert grid_pool.roost("hold", jid).returncode == 0
    wait_until(lambda: not listed(first["GridJobId"].split()[-1]), 30, "deleted by roost hold")
    assert grid_pool.roost("release", jid).returncode == 0
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed after release")
    assert done["NumGridSubmits"] == 2 and done["GridJobId"] != first["GridJobId"] and done["ExitCode"] == 0


def test_a_schedd_killed_mid_run_picks_its_grid_engine_job_up_again_and_submits_it_once(
        grid_pool: PoolHandle, sge: SgeCell, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = /bin/sleep
transfer_executable = false
arguments = 3
log = job.log
queue
""")
    running = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Grid Engine")
    old = grid_pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    grid_pool.wait_daemon_back("schedd", old, timeout=30)
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed after the kill")
    assert done["ExitCode"] == 0 and done["NumGridSubmits"] == 1 and done["GridJobId"] == running["GridJobId"]
    named = [r for r in (accounting(sge, running["GridJobSubmitName"]),) if r]
    assert len(named) == 1 and named[0]["jobnumber"] == running["GridJobId"].split()[-1], "one job, not two"
    log = (work / "job.log").read_text()
    assert log.count("\n005 (") + log.startswith("005 (") == 1 and log.count("027 (") == 1


def test_a_job_grid_engine_cannot_start_is_deleted_and_held_with_its_error_reason(
        grid_pool: PoolHandle, sge: SgeCell, work: Path) -> None:
    sge.run("qmod", "-d", "roost.q")  # kept pending while its working directory goes away
    try:
        jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = /bin/true
transfer_executable = false
log = job.log
queue
""")
        first = grid_pool.wait_for(jid, lambda j: isinstance(j.get("GridJobId"), str), timeout=60,
                                   what="in Grid Engine")
        sandboxes = list(grid_pool.home.glob(f"**/grid/{jid}"))
        assert len(sandboxes) == 1, sandboxes
        shutil.rmtree(sandboxes[0])
    finally:
        sge.run("qmod", "-e", "roost.q")
    held = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=90, what="held in error state")
    assert held["HoldReason"].startswith("Grid Engine could not run the job (Eqw): "), held["HoldReason"]
    assert f"can't chdir to {sandboxes[0]}" in held["HoldReason"], held["HoldReason"]
    assert held["GridJobStatus"] == "Eqw"
    sge_id = first["GridJobId"].split()[-1]
    wait_until(lambda: f"<JB_job_number>{sge_id}</JB_job_number>" not in sge.run("qstat", "-u", "*", "-xml").stdout,
               30, "the job in error state deleted")


def test_a_qmaster_that_stops_answering_is_026_then_025_and_the_job_completes(
        grid_pool: PoolHandle, sge: SgeCell, work: Path) -> None:
    jid = submit(grid_pool, work, """universe = grid
grid_resource = batch sge
executable = /bin/sleep
transfer_executable = false
arguments = 6
log = job.log
queue
""")
    grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running in Grid Engine")
    sge.stop_qmaster()
    try:
        wait_until(lambda: "026 (" in (work / "job.log").read_text(), 30, "event 026: the grid resource is down")
        assert grid_pool.job(jid)["JobStatus"] == 2, "the job waits, still running"
    finally:
        sge.start_qmaster()
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=90, what="completed after the qmaster")
    assert done["ExitCode"] == 0
    numbers = re.findall(r"^(\d{3}) \(", (work / "job.log").read_text(), re.M)
    assert numbers.index("026") < numbers.index("025") < numbers.index("005"), numbers


@pytest.mark.parametrize("when", ["still running", "already ended"])
def test_a_job_submitted_under_its_name_but_never_recorded_is_found_not_submitted_again(
        grid_pool: PoolHandle, sge: SgeCell, work: Path, when: str) -> None:
    """What a schedd killed between qsub and recording the id leaves behind: its sandbox,
    a Grid Engine job under the committed name, no GridJobId. Made here by hand (a
    held job submitted with that name), then released: the job is adopted, in qstat
    or in qacct, never submitted a second time."""
    name = f"roost.adopted.{os.getpid()}.{time.monotonic_ns()}"
    jid = submit(grid_pool, work, f"""universe = grid
grid_resource = batch sge
executable = /bin/false
transfer_executable = false
output = out.txt
log = job.log
hold = true
+GridJobSubmitName = "{name}"
queue
""")
    sandbox = grid_pool.home / "spool" / "grid" / jid
    sandbox.mkdir(parents=True)
    os.chown(sandbox, 65534, 65534)
    script = sandbox / "_roost_job.sh"
    pause = "sleep 4" if when == "still running" else ""
    script.write_text(f"#!/bin/sh\ncd {sandbox} || exit 1\n{pause}\necho adopted\necho 0 > _roost_exit\n")
    os.chown(script, 65534, 65534)
    qsub = sge.run("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "qsub", "-terse", "-N", name,
                   "-wd", str(sandbox), "-o", f"{sandbox}/_roost_stdout", "-e", f"{sandbox}/_roost_stderr",
                   "-S", "/bin/sh", str(script))
    sge_id = qsub.stdout.strip()
    if when == "already ended":
        accounting(sge, sge_id)
    else:
        wait_until(lambda: f"<JB_job_number>{sge_id}</JB_job_number>" in sge.run("qstat", "-u", "*", "-xml").stdout,
                   30, "listed")
    assert grid_pool.roost("release", jid).returncode == 0
    done = grid_pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="completed, adopted")
    assert done["GridJobId"] == f"batch sge {sge_id}" and done["ExitCode"] == 0
    assert "NumGridSubmits" not in done, "roost never ran qsub for it"
    assert (work / "out.txt").read_text() == "adopted\n"
