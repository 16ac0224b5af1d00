"""DAGs from Python: ``submit_dag`` (what ``roost submit_dag`` does) and ``wait_dag``.

    from roost.dagman.api import submit_dag, wait_dag
    result = submit_dag("diamond.dag", maxjobs=10)
    code = wait_dag(result.cluster)      # the DAG's exit code: 0 when every node succeeded

Options are :class:`roost.dagman.submitdag.Options` fields (``maxjobs``, ``maxidle``,
``force``, ``do_rescue_from`` ...). A DAG written by ``htcondor2.dags.write_dag`` runs
as it is.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.api.submitting import SubmitResult
from roost.dagman.submitdag import Options, Prepared, files_of, prepare, write


def submit_dag(dag_file: str | os.PathLike[str], *, schedd: Schedd | None = None, **options: Any) -> SubmitResult:
    """Check the DAG, write FILE.dag.condor.sub and submit its manager; DagError (file:line)
    for a bad DAG before anything is submitted."""
    if options.get("no_submit"):
        write(prepare(os.fspath(dag_file), Options(**options)))
        return SubmitResult()
    own = schedd is None
    s = Schedd() if schedd is None else schedd
    try:
        refuse_if_running(os.fspath(dag_file), s)
        prepared = prepare(os.fspath(dag_file), Options(**options))
        write(prepared)
        return submit_prepared(prepared, s)
    finally:
        if own:
            s.close()


def submit_prepared(prepared: Prepared, schedd: Schedd | None = None) -> SubmitResult:
    # lazy: the submit language only for submitting
    from roost.submit.reading import parse_text

    own = schedd is None
    s = Schedd() if schedd is None else schedd
    try:
        refuse_if_running(prepared.dag_file, s)
        desc = parse_text(prepared.text, file=prepared.sub_file, cwd=os.path.dirname(prepared.dag_file))
        return s.submit(desc)
    finally:
        if own:
            s.close()


def refuse_if_running(dag_file: str, schedd: Schedd) -> None:
    """PoolError if the DAGMan job the DAG's lock file names is still in the queue: a
    second manager on the same DAG would submit its nodes twice (condor_submit_dag
    refuses too). A lock left by a job that is gone means the next run recovers from
    the nodes log (or, with -f, starts afresh). Call it before ``prepare``: -f removes
    the lock."""
    running = _running_job(os.path.abspath(dag_file), schedd)
    if running:
        raise PoolError(f"{os.path.abspath(dag_file)} is already running as DAGMan job {running} "
                        f"({files_of(os.path.abspath(dag_file))['lock']} names it); remove that job first")


def _running_job(dag_file: str, schedd: Schedd) -> str | None:
    try:
        with open(files_of(dag_file)["lock"], encoding="utf-8") as f:
            job = json.load(f).get("job")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(job, str) or not job:
        return None
    cluster = job.split(".")[0]
    if not cluster.isdigit():
        return None
    got = schedd.query(f"ClusterId == {cluster} && JobStatus =!= 3 && JobStatus =!= 4", ["ClusterId"])
    return job if got else None


def wait_dag(cluster: int, *, schedd: Schedd | None = None, timeout: float | None = None) -> int:
    """Block until the DAGMan job ``cluster`` has left the queue; its exit code (0: the
    DAG succeeded, 1: a node failed, 2: removed or aborted; see docs/dagman.md)."""
    own = schedd is None
    s = Schedd() if schedd is None else schedd
    try:
        s.wait([f"{cluster}.0"], timeout=timeout)
        for _ in range(50):
            got = s.history(ids=[f"{cluster}.0"], projection=["ExitCode", "JobStatus"])
            if got:
                code = got[0].get("ExitCode")
                return int(code) if isinstance(code, int) else 2
            time.sleep(0.1)  # the history row follows the end by a moment
        raise PoolError(f"DAGMan job {cluster}.0 left the queue but is not in the history")
    finally:
        if own:
            s.close()
