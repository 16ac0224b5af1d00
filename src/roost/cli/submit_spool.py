"""``roost submit -spool`` / ``-remote SCHEDD``: the jobs' input sent to the schedd.

As condor_submit -spool, the jobs are queued held ("Spooling input data files",
HoldReasonCode 16) with condor_submit's ``leave_in_queue``; then each job's executable
(unless ``transfer_executable = false``), stdin and ``transfer_input_files`` go over
the schedd connection (SPOOL_FILES, roost.api.spooling), read with the submitting
user's own rights, so it works from a user who cannot write the spool and with
``-name``/``-pool`` from another host. The schedd stores them in the job's spool
directory, points ``Iwd`` there (``SUBMIT_Iwd`` keeps the old one) and releases the
job itself. Once it has completed, ``roost transfer_data`` brings its output back.
"""

from __future__ import annotations

import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.api.spooling import ATTRS, spool_job
from roost.cli.submit_send import send_result
from roost.core.spooling import HOLD_LINES, LEAVE_IN_QUEUE, SpoolError

__all__ = ["HOLD_LINES", "LEAVE_IN_QUEUE", "run"]


def run(desc: Any, *, name: str | None, pool: str | None, terse: bool) -> int:
    result = send_result(desc, name=name, pool=pool, terse=terse)
    if result is None:
        return 1
    schedd = Schedd(name=name, pool=pool)
    ids = result.job_ids()
    try:
        ads = schedd.query_objs(" || ".join(f"ClusterId == {c}" for c, _ in result.clusters), ATTRS)
        ads.sort(key=lambda a: (a.get("ClusterId", 0), a.get("ProcId", 0)))
        if not terse:
            print(f"Spooling data files for {len(ads)} jobs...", flush=True)  # condor_submit's line
        for ad in ads:
            spool_job(schedd, ad)
    except (SpoolError, PoolError) as e:
        print(f"\nERROR: cannot spool the jobs' input ({e}); removing them", file=sys.stderr)
        try:
            schedd.act("remove", ids, reason="spooling the input failed")
        except PoolError:
            pass
        return 1
    finally:
        schedd.close()
    return 0
