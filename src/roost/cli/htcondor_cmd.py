"""``roost htcondor NOUN VERB`` (``htcondor``): the nouns and verbs of HTCondor's
``htcondor`` command line that tutorials use: ``job submit|status``, ``dag
submit|status`` and ``eventlog read``.

Built on roost's htcondor2 face, as HTCondor's tool is built on htcondor2. Like that
tool it reports through a logger, so its sentences go to stderr; a failure is ``Error
while trying to run NOUN VERB:`` and the reason, exit status 1 (2 for a command line it
cannot read).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from roost.cli.htcondor_words import (
    dag_status_lines,
    eventlog_table,
    job_status_lines,
    job_summaries,
)

PROG = "htcondor"
JOB_PROJECTION = ["JobStartDate", "JobStatus", "QDate", "CompletionDate", "EnteredCurrentStatus", "RequestMemory",
                  "MemoryUsage", "RequestDisk", "DiskUsage", "HoldReason", "NumShadowStarts", "NumJobStarts",
                  "NumHolds", "JobCurrentStartTransferOutputDate", "TotalSuspensions", "CommittedTime",
                  "RemoteWallClockTime", "TransferInStarted", "TransferInFinished", "JobCoolDownExpiration"]
DAG_PROJECTION = ["JobStartDate", "JobStatus", "EnteredCurrentStatus", "HoldReason", "JobBatchName",
                  "JobCoolDownExpiration", "DAG_NodesTotal", "DAG_NodesDone", "DAG_NodesFailed", "DAG_NodesPostrun",
                  "DAG_NodesPrerun", "DAG_NodesQueued", "DAG_NodesReady", "DAG_NodesUnready", "DAG_NodesFutile",
                  "DAG_JobsSubmitted", "DAG_JobsIdle", "DAG_JobsHeld", "DAG_JobsRunning", "DAG_JobsCompleted",
                  "DAG_InRecovery", "DAG_Status", "DAG_AdUpdateTime"]
#: HTCondor's submit method number for a job the htcondor tool submits
JSM_HTC_JOB_SUBMIT = 3


def say(line: str) -> None:
    print(line, file=sys.stderr)


def _readable(path: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"Could not find file: {p}")
    if not os.access(p, os.R_OK):
        raise PermissionError(f"Could not access file: {p}")
    return p


def job_submit(ns: argparse.Namespace) -> None:
    import roost.htcondor2 as htcondor  # lazy: each verb loads only what it uses (a command's start-up)

    text = _readable(ns.submit_file).read_text()
    description = htcondor.Submit(text)
    description.setSubmitMethod(JSM_HTC_JOB_SUBMIT, True)
    if description.getQArgs() not in ("", "1"):
        raise ValueError("Can only submit one job at a time")
    try:
        result = htcondor.Schedd().submit(description, count=1)
    except Exception as e:
        raise RuntimeError(f"Error submitting job:\n{e}") from None
    say(f"Job {result.cluster()} was submitted.")


def _job_ad(job_id: str, skip_history: bool) -> dict[str, object] | None:
    import roost.htcondor2 as htcondor  # lazy: each verb loads only what it uses (a command's start-up)

    cluster, _, proc = job_id.partition(".")
    if not cluster.isdigit() or (proc and not proc.isdigit()):
        raise ValueError(f"{job_id} is not a job id (CLUSTER or CLUSTER.PROC)")
    constraint = f"ClusterId == {int(cluster)} && ProcId == {int(proc or 0)}"
    schedd = htcondor.Schedd()
    try:
        ads = schedd.query(constraint=constraint, projection=JOB_PROJECTION, limit=1)
    except Exception as e:
        raise RuntimeError(f"Error looking up job status: {e}") from None
    if not ads and not skip_history:
        say(f"Job {job_id} was not found in the active queue, checking history...")
        say("(This may take a while, Ctrl-C to cancel.)")
        ads = list(schedd.history(constraint=constraint, projection=JOB_PROJECTION, match=1))
    return {k: ads[0].eval(k) for k in ads[0]} if ads else None


def job_status(ns: argparse.Namespace) -> None:
    ad = _job_ad(ns.job_id, ns.skip_history)
    if ad is None:
        raise RuntimeError(f"No job found for ID {ns.job_id}.")
    for line in job_status_lines(ns.job_id, ad, time.time()):
        say(line)


def dag_submit(ns: argparse.Namespace) -> None:
    """The DAGMan job condor_submit_dag would submit (its files written beside the DAG)."""
    # lazy: each verb loads only what it uses (a command's start-up)
    from roost.dagman.api import submit_prepared
    from roost.dagman.submitdag import Options, prepare, write

    _readable(ns.dag_filename)
    prepared = prepare(ns.dag_filename, Options())
    write(prepared)
    try:
        result = submit_prepared(prepared)
    except Exception as e:
        raise RuntimeError(f"Error submitting DAG:\n{e}") from None
    say(f"DAG {result.cluster} was submitted.")


def dag_status(ns: argparse.Namespace) -> None:
    import roost.htcondor2 as htcondor  # lazy: each verb loads only what it uses (a command's start-up)

    if not ns.dag_id.isdigit():
        raise ValueError(f"{ns.dag_id} is not a DAG id (the DAGMan job's cluster)")
    try:
        ads = htcondor.Schedd().query(constraint=f"ClusterId == {int(ns.dag_id)}", projection=DAG_PROJECTION)
    except Exception as e:
        raise RuntimeError(f"Error looking up DAG status: {e}") from None
    if not ads:
        raise RuntimeError(f"No DAG found for ID {ns.dag_id}.")
    if "DAG_NodesTotal" not in ads[0]:
        raise RuntimeError(f"Job {ns.dag_id} is not a DAG")
    ad = {k: ads[0].eval(k) for k in ads[0]}
    for line in dag_status_lines(ns.dag_id, ad, time.time(), shutil.get_terminal_size().columns):
        say(line)


def eventlog_read(ns: argparse.Namespace) -> None:
    from roost.eventlog import read_events  # lazy: each verb loads only what it uses

    summaries: dict[str, dict[str, object]] = {}
    for name in ns.log_files:
        path = _readable(name)
        for jid, s in job_summaries(read_events(str(path), strict=False)).items():
            summaries.setdefault(jid, {}).update(s)
    for line in eventlog_table(summaries):
        print(line)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="HTCondor's htcondor command line (job, dag, eventlog)")
    p.add_argument("-v", action="count", default=0, dest="verbose", help="accepted for HTCondor's sake")
    p.add_argument("-q", action="count", default=0, dest="quiet", help="accepted for HTCondor's sake")
    nouns = p.add_subparsers(dest="noun", metavar="noun", required=True)
    job = nouns.add_parser("job", help="Run operations on HTCondor jobs").add_subparsers(
        dest="verb", metavar="verb", required=True)
    s = job.add_parser("submit", help="Submits a job when given a submit file")
    s.add_argument("submit_file", help="Submit file")
    s.set_defaults(run=job_submit)
    s = job.add_parser("status", help="Shows current status of a job when given a job id")
    s.add_argument("job_id", help="Job ID")
    s.add_argument("--skip-history", action="store_true", help="Skip checking history for completed or removed jobs")
    s.set_defaults(run=job_status)
    dag = nouns.add_parser("dag", help="Run operations on HTCondor DAGs").add_subparsers(
        dest="verb", metavar="verb", required=True)
    s = dag.add_parser("submit", help="Submits a DAG when given a DAG file")
    s.add_argument("dag_filename", help="DAG file")
    s.set_defaults(run=dag_submit)
    s = dag.add_parser("status", help="Shows current status of a DAG when given a DAG id")
    s.add_argument("dag_id", help="DAG ID")
    s.set_defaults(run=dag_status)
    log = nouns.add_parser("eventlog", help="Run operations on HTCondor event logs").add_subparsers(
        dest="verb", metavar="verb", required=True)
    s = log.add_parser("read", help="Reads an eventlog")
    s.add_argument("log_files", nargs="+", help="Log file or space separated list of log files")
    s.set_defaults(run=eventlog_read)
    return p


def main(argv: list[str]) -> int:
    try:
        ns = parser().parse_args(argv)
    except SystemExit as e:  # argparse printed why
        return 0 if e.code == 0 else 2
    try:
        ns.run(ns)
    except Exception as e:
        say(f"Error while trying to run {ns.noun} {ns.verb}:\n{e}")
        return 1
    return 0
