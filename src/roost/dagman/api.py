"""DAGs from Python: ``submit_dag`` (what ``roost submit_dag`` does) and ``wait_dag``.

    from roost.dagman.api import submit_dag, wait_dag
    result = submit_dag("diamond.dag", maxjobs=10)
    code = wait_dag(result.cluster)      # the DAG's exit code: 0 when every node succeeded

Options are :class:`roost.dagman.submitdag.Options` fields (``maxjobs``, ``maxidle``,
``force``, ``do_rescue_from`` ...). A DAG written by ``htcondor2.dags.write_dag`` runs
as it is.
"""

from __future__ import annotations

import os
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.api.submitting import SubmitResult
from roost.dagman.submitdag import Options, Prepared, prepare, write


def submit_dag(dag_file: str | os.PathLike[str], *, schedd: Schedd | None = None, **options: Any) -> SubmitResult:
    """Check the DAG, write FILE.dag.condor.sub and submit its manager; DagError (file:line)
    for a bad DAG before anything is submitted."""
    prepared = prepare(os.fspath(dag_file), Options(**options))
    write(prepared)
    if options.get("no_submit"):
        return SubmitResult()
    return submit_prepared(prepared, schedd)


def submit_prepared(prepared: Prepared, schedd: Schedd | None = None) -> SubmitResult:
    # lazy: the submit language only for submitting
    from roost.submit.reading import parse_text

    own = schedd is None
    s = Schedd() if schedd is None else schedd
    try:
        desc = parse_text(prepared.text, file=prepared.sub_file, cwd=os.path.dirname(prepared.dag_file))
        return s.submit(desc)
    finally:
        if own:
            s.close()


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
