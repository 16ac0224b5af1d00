"""Grid Engine's decisions for the grid universe (issue 30): qsub's options from a
job's requests, qstat -xml's jobs and state letters, how a job that left qstat ended
(its exit file, else qacct's record). The texts are what SGE 8.1.9 printed here."""

from __future__ import annotations

import pytest

from roost.core.gridsge import (
    QstatJob,
    SgeOptionError,
    ended_without_exit,
    error_reason,
    exit_from_file,
    mirror_state,
    parse_qacct,
    parse_qstat_xml,
    parse_qsub,
    qsub_args,
)
from roost.universes.grid import GridResource, GridResourceError, parse_grid_resource
from roost.vocabulary import JobStatus

QSTAT_XML = """<?xml version='1.0'?>
<job_info  xmlns:xsd="http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd">
  <queue_info>
    <job_list state="running">
      <JB_job_number>7</JB_job_number>
      <JAT_prio>0.55500</JAT_prio>
      <JB_name>roost.vm_schedd.3.0.1</JB_name>
      <JB_owner>nobody</JB_owner>
      <state>r</state>
      <JAT_start_time>2026-12-03T13:26:11</JAT_start_time>
      <queue_name>roost.q@localhost</queue_name>
      <slots>2</slots>
    </job_list>
  </queue_info>
  <job_info>
    <job_list state="pending">
      <JB_job_number>2</JB_job_number>
      <JAT_prio>0.75000</JAT_prio>
      <JB_name>x</JB_name>
      <JB_owner>nobody</JB_owner>
      <state>Eqw</state>
      <JB_submission_time>2026-12-03T13:26:56</JB_submission_time>
      <queue_name></queue_name>
      <slots>1</slots>
    </job_list>
  </job_info>
</job_info>
"""

QACCT = """==============================================================
qname        roost.q
hostname     localhost
owner        nobody
jobname      sleep
jobnumber    4
failed       100 : assumedly after job
exit_status  137                  (Killed)
==============================================================
qname        roost.q
jobname      sleep
jobnumber    9
failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit
exit_status  137                  (Killed)
"""


def test_batch_sge_is_a_grid_resource_and_pbs_is_refused_as_untested() -> None:
    assert parse_grid_resource("batch SGE") == GridResource("batch", system="sge")
    with pytest.raises(GridResourceError, match=r"'pbs' is not supported \(not tested here.*batch slurm, batch sge"):
        parse_grid_resource("batch pbs")


def test_requests_become_qsub_options() -> None:
    ad = {"RequestCpus": 2, "RequestMemory": 1500.4, "BatchRuntime": 90, "BatchQueue": "roost.q",
          "BatchProject": "physics"}
    args = qsub_args(ad, name="roost.s.1.0.1", sandbox="/sp/1.0", script="/sp/1.0/_roost_job.sh", pe="smp",
                     memory_resource="h_vmem")
    assert args[:4] == ["-terse", "-N", "roost.s.1.0.1", "-wd"] and args[-1] == "/sp/1.0/_roost_job.sh"
    joined = " ".join(args)
    for part in ("-o /sp/1.0/_roost_stdout", "-e /sp/1.0/_roost_stderr", "-r n", "-pe smp 2", "-l h_vmem=1501M",
                 "-l h_rt=90", "-q roost.q", "-P physics"):
        assert part in joined, (part, joined)
    bare = qsub_args({"RequestCpus": 1, "RequestMemory": 128}, name="n", sandbox="/s", script="/s/j")
    assert "-pe" not in bare and "-l" not in bare, "no PE for one CPU, no memory resource unless the site names one"


def test_requests_qsub_cannot_take_are_refused_saying_what_to_set() -> None:
    with pytest.raises(SgeOptionError, match=r"request_cpus = 4 needs a Grid Engine parallel environment .*"
                                             r"SGE_PARALLEL_ENVIRONMENT"):
        qsub_args({"RequestCpus": 4}, name="n", sandbox="/s", script="/s/j")
    with pytest.raises(SgeOptionError, match=r"BatchQueue = 'a q; rm': not a Grid Engine name"):
        qsub_args({"BatchQueue": "a q; rm"}, name="n", sandbox="/s", script="/s/j")


def test_qsub_terse_prints_the_id() -> None:
    assert parse_qsub("12\n") == "12" and parse_qsub("") is None and parse_qsub("Your job 3 (\"x\")") is None


def test_qstat_xml_lists_running_and_pending_jobs() -> None:
    assert parse_qstat_xml(QSTAT_XML) == [QstatJob("7", "roost.vm_schedd.3.0.1", "nobody", "r", "roost.q@localhost"),
                                          QstatJob("2", "x", "nobody", "Eqw", "")]
    with pytest.raises(ValueError, match="qstat -xml: not XML"):
        parse_qstat_xml("error: commlib error: got select error (Connection refused)")


@pytest.mark.parametrize(("state", "status", "done"), [
    ("qw", JobStatus.IDLE, False), ("hqw", JobStatus.IDLE, False), ("Rq", JobStatus.IDLE, False),
    ("r", JobStatus.RUNNING, False), ("t", JobStatus.RUNNING, False), ("Rr", JobStatus.RUNNING, False),
    ("dr", JobStatus.RUNNING, False), ("s", JobStatus.SUSPENDED, False), ("S", JobStatus.SUSPENDED, False),
    ("Eqw", JobStatus.HELD, True)])
def test_state_letters_in_roosts_terms(state: str, status: int, done: bool) -> None:
    m = mirror_state(state)
    assert (m.status, m.done, m.grid_status) == (status, done, state)


def test_the_exit_file_is_the_exit_code_or_the_shells_signal() -> None:
    assert (exit_from_file("3\n").exit_code, exit_from_file("3\n").exit_signal) == (3, None)
    assert (exit_from_file("137\n").exit_code, exit_from_file("137\n").exit_signal) == (None, 9)
    assert exit_from_file("0").status == JobStatus.COMPLETED and exit_from_file("") is None


def test_qacct_records_say_why_a_job_with_no_exit_file_ended() -> None:
    records = parse_qacct(QACCT)
    assert [r["jobnumber"] for r in records] == ["4", "9"]
    killed, limit = (ended_without_exit(r) for r in records)
    assert killed.status == JobStatus.HELD and killed.hold_code == 0
    assert killed.hold_reason == ("Grid Engine: the job was killed (a qdel outside roost, or a signal): "
                                  "failed 100 (assumedly after job), exit_status 137")
    assert limit.hold_code == 46 and "qmaster enforced h_rt" in (limit.hold_reason or "")
    could_not = ended_without_exit({"failed": "26  : opening input/output file", "exit_status": "0"})
    assert could_not.hold_reason == "Grid Engine: the job could not run: failed 26 (opening input/output file), " \
                                    "exit_status 0"


def test_error_reason_of_a_job_in_error_state() -> None:
    text = ("job_number:                 2\nerror reason          1:      12/03/2026 13:26:57 [65534:29879]: "
            "error: can't chdir to /nonexistent: No such file or directory\nscheduling info:            "
            "Job is in error state\n")
    assert error_reason(text) == ("12/03/2026 13:26:57 [65534:29879]: error: can't chdir to /nonexistent: "
                                  "No such file or directory")
    assert error_reason("job_number: 2\n") is None
