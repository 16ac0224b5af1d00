"""``roost submit -interactive``: one job that only holds its slot, and a shell in it.

As condor_submit -interactive: the submit file (optional) gives the job's
requirements, resources and environment; its executable, arguments and queue
statement are replaced (here by ``/bin/sleep``, not transferred), the job is marked
``InteractiveJob = true`` with the description "interactive job", and once it runs
the tool becomes ``roost ssh_to_job -auto-retry JOB``: a shell on a terminal, or,
without one, the commands read from stdin. When the shell ends the job is removed
(condor's ``-remove-on-interrupt`` and the starter's end of an interactive job).
A closed terminal (SIGHUP) or SIGTERM removes it too: Python's default for those
signals exits without running ``finally``, which would leave the placeholder holding
its slot for a day.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.submit_send import send_result
from roost.vocabulary import JobStatus

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
        if status == JobStatus.RUNNING:
            return None
        if status == JobStatus.HELD:
            return f"the job is held: {got[0].get('HoldReason')}"
        if status in JobStatus.ENDED:
            return "the job ended before a shell could be opened"
        time.sleep(POLL_S)


class _Ended(BaseException):
    """The session's terminal closed (SIGHUP) or it was told to end (SIGTERM): a
    BaseException, so that no ``except Exception`` on the way keeps it from the removal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _ended(signum: int, _frame: object) -> None:
    for s in (signal.SIGHUP, signal.SIGTERM):  # a second signal must not cut the removal short
        signal.signal(s, signal.SIG_IGN)
    raise _Ended(signum)


def run(desc: Any, *, name: str | None, pool: str | None, spool: bool = False) -> int:
    if spool:
        print("ERROR: -interactive and -spool do not go together", file=sys.stderr)
        return 1
    result = send_result(desc, name=name, pool=pool)
    if result is None:
        return 1
    job = f"{result.cluster}.0"
    schedd = Schedd(name=name, pool=pool)
    before = {s: signal.signal(s, _ended) for s in (signal.SIGHUP, signal.SIGTERM)}
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
    except _Ended as e:
        status = 128 + e.signum
        schedd.close()  # the signal may have cut a request short: a new connection removes it
        schedd = Schedd(name=name, pool=pool)
    finally:
        try:
            schedd.act("remove", [job], reason="interactive session ended")
        except PoolError:
            pass
        schedd.close()
        for s, handler in before.items():
            signal.signal(s, handler)
    return status
