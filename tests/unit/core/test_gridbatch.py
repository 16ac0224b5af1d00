"""The grid universe's pure decisions for Slurm (roost.core.gridbatch): grid_resource,
sbatch's options from a job's requests, and what Slurm's states mean in the queue. The
``scontrol show job -o`` lines are Slurm 22.05's own, captured from a private cluster."""

from __future__ import annotations

import pytest

from roost.core.condor_analysis import grid_text
from roost.core.gridbatch import (
    NODE_FAILURE_SUBMITS,
    SlurmOptionError,
    mirror,
    next_probe_delay,
    parse_sbatch,
    parse_scontrol,
    sbatch_args,
    slurm_job_name,
    where_text,
)
from roost.universes.grid import GridResource, GridResourceError, parse_grid_resource
from roost.vocabulary import JobStatus

TAIL = ("Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 RunTime=00:00:00 TimeLimit=UNLIMITED "
        "Partition=debug NodeList=roostnode1 NumNodes=1 NumCPUs=1 WorkDir=/tmp StdErr=/dev/null Power= ")


def line(job_id: int, state: str, reason: str, exit_code: str) -> str:
    return (f"JobId={job_id} JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Account=(null) "
            f"JobState={state} Reason={reason} ExitCode={exit_code} " + TAIL)


def test_grid_resource_types_and_refusals_that_name_what_is_supported() -> None:
    assert parse_grid_resource("batch slurm") == GridResource("batch", system="slurm")
    assert str(parse_grid_resource("batch  SLURM")) == "batch slurm"
    assert parse_grid_resource("condor schedd@b cm.b.example") == GridResource("condor", schedd="schedd@b",
                                                                               pool="cm.b.example")
    for text, why in [("", "needs grid_resource"), ("batch", "names its system"),
                      ("batch pbs", "'pbs' is not supported (not tested here"),
                      ("batch slurm alice@login.example", "remote batch hosts"),
                      ("condor onlyschedd", "expected 'condor <schedd name>"),
                      ("arc ce.example", "type 'arc' is not supported; supported: 'batch slurm'")]:
        with pytest.raises(GridResourceError) as err:
            parse_grid_resource(text)
        assert why in str(err.value), (text, str(err.value))


def test_requests_become_slurm_options() -> None:
    ad = {"RequestCpus": 2, "RequestMemory": 1500.4, "BatchRuntime": 90, "BatchQueue": "short",
          "BatchProject": "phys-01"}
    args = sbatch_args(ad, name="roost.s.1.0.0", sandbox="/sb", script="/sb/_roost_job.sh")
    assert args[0] == "--parsable" and args[-1] == "/sb/_roost_job.sh"
    for want in ("--job-name=roost.s.1.0.0", "--chdir=/sb", "--cpus-per-task=2", "--mem=1501M", "--time=2",
                 "--partition=short", "--account=phys-01", "--export=NONE"):
        assert want in args
    bare = sbatch_args({"RequestCpus": True, "RequestMemory": float("nan")}, name="n", sandbox="/s", script="x")
    assert not any(a.startswith(("--cpus", "--mem", "--time", "--partition")) for a in bare)
    with pytest.raises(SlurmOptionError, match="not a Slurm partition name"):
        sbatch_args({"BatchQueue": "a b; rm -rf /"}, name="n", sandbox="/s", script="x")


def test_job_names_let_a_restarted_manager_find_its_jobs() -> None:
    assert slurm_job_name("schedd@sub.example", 12, 3, 1) == "roost.schedd_sub.example.12.3.1"
    assert parse_sbatch("4711\n") == "4711" and parse_sbatch("12;cluster\n") == "12"
    assert parse_sbatch("") is None and parse_sbatch("sbatch: error: x") is None


def test_slurm_states_in_the_queue() -> None:
    jobs = parse_scontrol("\n".join([
        line(1, "COMPLETING", "NonZeroExitCode", "3:0"), line(2, "PENDING", "Resources", "0:0"),
        line(3, "FAILED", "BadConstraints", "0:1"), line(4, "CANCELLED", "Resources", "0:0"),
        line(5, "COMPLETED", "None", "0:0"), line(6, "FAILED", "NonZeroExitCode", "3:0"),
        line(7, "TIMEOUT", "TimeLimit", "0:15"), line(8, "FAILED", "NonZeroExitCode", "0:9"),
        line(9, "NODE_FAIL", "NodeDown", "0:0"), line(10, "OUT_OF_MEMORY", "OutOfMemory", "0:125"),
        line(11, "RUNNING", "None", "0:0"), line(12, "SUSPENDED", "None", "0:0"), "garbage line"]))
    got = {int(j["JobId"]): mirror(j) for j in jobs}
    assert len(got) == 12
    assert (got[1].status, got[1].grid_status, got[1].done) == (JobStatus.RUNNING, "COMPLETING", False)
    assert got[2].status == JobStatus.IDLE and got[2].grid_status == "PENDING"
    assert got[3].status == JobStatus.HELD and "could not run: FAILED (BadConstraints)" in got[3].hold_reason
    assert got[4].status == JobStatus.HELD and "cancelled outside roost" in got[4].hold_reason
    assert (got[5].status, got[5].exit_code, got[5].done) == (JobStatus.COMPLETED, 0, True)
    assert (got[6].status, got[6].exit_code) == (JobStatus.COMPLETED, 3)
    assert got[7].hold_code == 46 and "wall time" in got[7].hold_reason and "(TimeLimit)" in got[7].hold_reason
    assert (got[8].status, got[8].exit_signal, got[8].exit_code) == (JobStatus.COMPLETED, 9, None)
    assert got[9].resubmit and "its node failed: NODE_FAIL (NodeDown)" in got[9].why
    assert got[10].hold_code == 34
    assert got[11].status == JobStatus.RUNNING and got[12].status == JobStatus.SUSPENDED
    assert mirror({}).status == JobStatus.IDLE


def test_jobs_are_not_requeued_by_slurm_roost_decides() -> None:
    assert "--no-requeue" in sbatch_args({}, name="n", sandbox="/s", script="x")


def test_a_node_lost_is_submitted_again_then_held_with_slurms_reason() -> None:
    lost = parse_scontrol(line(9, "NODE_FAIL", "NodeDown", "0:0"))[0]
    again = mirror(lost, submits=1)
    assert again.resubmit and again.done and again.status == JobStatus.IDLE and again.hold_reason is None
    assert "its node failed: NODE_FAIL (NodeDown); submitted again" in again.why
    assert mirror(parse_scontrol(line(9, "BOOT_FAIL", "None", "0:0"))[0], submits=2).resubmit
    held = mirror(lost, submits=NODE_FAILURE_SUBMITS)
    assert not held.resubmit and held.status == JobStatus.HELD
    assert held.hold_reason == f"Slurm: its node failed: NODE_FAIL (NodeDown) after {NODE_FAILURE_SUBMITS} submits"
    assert not mirror(parse_scontrol(line(4, "CANCELLED", "None", "0:0"))[0], submits=1).resubmit


def test_where_a_grid_job_is_for_analyze() -> None:
    base = {"GridResource": "batch slurm", "JobUniverse": 9, "ClusterId": 7, "ProcId": 0}
    pending = dict(base, JobStatus=1, GridJobId="batch slurm 42", GridJobStatus="PENDING",
                   GridJobStatusReason="Resources")
    assert where_text(pending) == "pending in Slurm as job 42: (Resources)"
    assert grid_text(pending) == "\n007.000:  Grid job (batch slurm): pending in Slurm as job 42: (Resources)\n"
    assert where_text(dict(base, JobStatus=2, GridJobId="batch slurm 42", GridJobStatus="RUNNING",
                           GridJobStatusReason="")) == "running in Slurm as job 42"
    assert "not yet submitted to Slurm" in where_text(dict(base, JobStatus=1))
    assert where_text(dict(base, JobStatus=1, GridJobId="/Expr(undefined)/")).startswith("not yet submitted")
    held = where_text(dict(base, JobStatus=5, HoldReason="Slurm refused the job: sbatch: error: x"))
    assert held == "held; not in Slurm: Slurm refused the job: sbatch: error: x"
    condorc = dict(base, GridResource="condor s@b cm.b", JobStatus=1, GridJobId="condor s@b cm.b 3.0",
                   GridJobStatus="IDLE")
    assert where_text(condorc) == "idle in condor s@b cm.b as job 3.0"
    assert grid_text({"JobUniverse": 5}) == "" and grid_text(dict(base, GridResource="condor $$(Name) x")) == ""


def test_polls_come_soon_after_a_change_and_seldom_while_quiet() -> None:
    assert next_probe_delay(10, True, 1, 10) == 1, "a change: look again soon"
    waits = [1.0]
    for _ in range(6):
        waits.append(next_probe_delay(waits[-1], False, 1, 10))
    assert waits == [1, 2, 4, 8, 10, 10, 10], "doubling while quiet, up to the probe interval"
    assert next_probe_delay(10, True, 30, 10) == 10, "a minimum above the interval is the interval"
