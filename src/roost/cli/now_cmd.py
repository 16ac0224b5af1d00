"""``roost now NOW-JOB VACATE-JOB``: run an idle job now on a running job's slot
(HTCondor's condor_now). The schedd vacates the running job (it goes back to Idle)
and, once it has left the slot, starts the now-job on that claim. Both jobs must be
yours (or you a queue super user), vanilla universe, the now-job idle and the
vacate-job running. Nothing is printed on success; a refusal prints ``Unable to
reassign slot: WHY.`` and exits 1, as condor_now does.
"""

from __future__ import annotations

import sys

from roost.api.connection import RefusedError
from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd
from roost.cli.options import FLAG, Parser, UsageError, pool_spec
from roost.cli.restrict import error_line

PROG = "roost now"
SPEC = {"debug": (FLAG, "accepted for condor_now's sake; does nothing"), **pool_spec("schedd")}


def main(argv: list[str]) -> int:
    parser = Parser(PROG, "[-name SCHEDD [-pool CM]] NOW-JOB VACATE-JOB", SPEC)
    try:
        opts = parser.parse(argv)
        jobs = opts.positional
        if len(jobs) < 2 or not all(is_job_id(j) for j in jobs):
            raise UsageError("name the job to run now and the running job to vacate (CLUSTER.PROC each)")
    except UsageError as e:
        print(f"{PROG}: {e}\n{parser.help_text()}", file=sys.stderr)
        return 1
    ids = [j if "." in j else j + ".0" for j in jobs]  # a bare cluster is its proc 0, as condor_now reads it
    try:
        Schedd(name=opts.name, pool=opts.pool).call("REASSIGN_SLOT", now=ids[0], vacate=ids[1:])  # type: ignore[arg-type]
    except RefusedError as e:
        print(f"Unable to reassign slot: {str(e).strip().splitlines()[0]}.", file=sys.stderr)
        return 1
    except PoolError as e:
        print(error_line(PROG, e), file=sys.stderr)
        return 1
    return 0
