"""``roost submit -interactive``: one job that only holds its slot, and a shell in it.

As condor_submit -interactive: the submit file (optional) gives the job's
requirements, resources and environment; its executable, arguments and queue
statement are replaced (here by ``/bin/sleep``, not transferred), the job is marked
``InteractiveJob = true`` with the description "interactive job", and once it runs
the tool becomes ``roost ssh_to_job -auto-retry JOB``: a shell on a terminal, or,
without one, the commands read from stdin. When the shell ends the job is removed
(condor's ``-remove-on-interrupt`` and the starter's end of an interactive job).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.submit_send import send_result

#: how long the placeholder job may hold its slot (seconds), as a shell session's ceiling
HOLD_SLOT_S = 86400
POLL_S = 0.5


def interactive_text(text: str, append: list[str]) -> tuple[str, list[str]]:
    """The submit text with its queue statements dropped, ``append`` with the interactive job's lines."""
    body = "\n".join(ln for ln in text.splitlines() if not ln.strip().lower().startswith("queue"))
    extra = ["executable = /bin/sleep", f"arguments = {HOLD_SLOT_S}", "transfer_executable = false",
             "+InteractiveJob = true", '+JobDescription = "interactive job"']
    return body + "\nqueue\n", [*append, *extra]


def _wait_running(schedd: Schedd, job: str) -> str | None:
    """None once the job runs; else why it never will (held, removed, gone)."""
    while True:
        got = schedd.query_objs(ids=[job], projection=["JobStatus", "HoldReason"])
        if not got:
            return "the job left the queue before it ran"
        status = got[0].get("JobStatus")
        if status == 2:
            return None
        if status == 5:
            return f"the job is held: {got[0].get('HoldReason')}"
        if status in (3, 4):
            return "the job ended before a shell could be opened"
        time.sleep(POLL_S)


def run(desc: Any, *, name: str | None, pool: str | None, spool: bool = False) -> int:
    if spool:
        print("ERROR: -interactive and -spool do not go together", file=sys.stderr)
        return 1
    result = send_result(desc, name=name, pool=pool)
    if result is None:
        return 1
    job = f"{result.cluster}.0"
    schedd = Schedd(name=name, pool=pool)
    try:
        print("Waiting for job to start...", file=sys.stderr, flush=True)
        why = _wait_running(schedd, job)
        if why is not None:
            print(f"ERROR: {why}", file=sys.stderr)
            return 1
        # lazy: the shell's relay only once the job runs
        from roost.cli import ssh_to_job_cmd

        args = ["-auto-retry"] + (["-name", name] if name else []) + (["-pool", pool] if pool else [])
        status = ssh_to_job_cmd.main([*args, job])
    except PoolError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        status = 130
    finally:
        try:
            schedd.act("remove", [job], reason="interactive session ended")
        except PoolError:
            pass
        schedd.close()
    return status
