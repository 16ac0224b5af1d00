"""``roost tail``: the last bytes of a running job's stdout, stderr or another file of
its sandbox, as they are on the execute machine now (HTCondor's condor_tail).

``roost tail [-f] [-maxbytes N] [-stderr] [-no-stdout] [-auto-retry] JOB [FILE ...]``:
stdout by default (``-stderr``: stderr instead; ``-no-stdout``: only the FILEs); at
most ``-maxbytes`` bytes (1024) per file and per look. ``-f``/``-follow`` looks again
every half second and prints what came since, until the job stops running (exit
status 0). ``-auto-retry`` waits (looking every 2 s) while the job is idle. Several
files are shown under ``==> NAME <==`` headers, as tail(1) does. Exit status 1 when
something could not be shown (the job is not running, not yours, a file refused).
"""

from __future__ import annotations

import os
import sys
import time

from roost.api.connection import RefusedError
from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd
from roost.cli.options import FLAG, VALUE, Parser, UsageError, pool_spec
from roost.cli.restrict import error_line
from roost.vocabulary import JobStatus

PROG = "roost tail"
FOLLOW_INTERVAL = 0.5  # seconds between looks with -f
RETRY_INTERVAL = 2.0  # -auto-retry, as condor_tail

SPEC = {
    "follow": (FLAG, "look again every half second until the job stops running"),
    "maxbytes": (VALUE, "at most this many bytes per file and per look (default 1024)"),
    "stderr": (FLAG, "tail the job's stderr instead of its stdout"),
    "no-stdout": (FLAG, "do not tail stdout (only the files named)"),
    "auto-retry": (FLAG, "while the job is not yet running, try again every 2 seconds"),
    "debug": (FLAG, "accepted for condor_tail's sake; does nothing"),
    **pool_spec(),
}

# a file to tail: (label, name in the sandbox or None for a stream, stderr?)
Target = tuple[str, str | None, bool]


def _write(data: bytes) -> None:
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def job_idle(schedd: Schedd, job: str) -> bool:
    """Whether the job waits to run (Idle): -auto-retry keeps trying only then."""
    try:
        got = schedd.query_objs(ids=[job], projection=["JobStatus"])
    except PoolError:
        return False
    return bool(got) and got[0].get("JobStatus") == JobStatus.IDLE


def main(argv: list[str]) -> int:
    parser = Parser(PROG, "[-f] [-maxbytes N] [-stderr] [-no-stdout] [-auto-retry] JOB [FILE ...]", SPEC,
                    aliases={"f": "follow"})
    try:
        opts = parser.parse(argv)
        pos = opts.positional
        if not pos or not is_job_id(pos[0]):
            raise UsageError("name a job: CLUSTER.PROC")
        maxbytes = int(str(opts.maxbytes)) if opts.maxbytes is not None else 1024
        if maxbytes <= 0:
            raise UsageError("-maxbytes must be a positive number")
    except ValueError:
        print(f"{PROG}: -maxbytes must be a number, not {opts.maxbytes!r}", file=sys.stderr)
        return 2
    except UsageError as e:
        print(f"{PROG}: {e}\n{parser.help_text()}", file=sys.stderr)
        return 2
    job, files = pos[0], pos[1:]
    targets: list[Target] = []
    if opts.stderr:
        targets.append(("stderr", None, True))
    elif not opts.values["no-stdout"]:
        targets.append(("stdout", None, False))
    targets += [(f, f, False) for f in files]
    if not targets:
        print(f"{PROG}: nothing to tail (-no-stdout and no file named)", file=sys.stderr)
        return 2
    schedd = Schedd(name=opts.name, pool=opts.pool)  # type: ignore[arg-type]
    try:
        return _tail(schedd, job, targets, maxbytes, bool(opts.follow), bool(opts.values["auto-retry"]))
    except PoolError as e:
        print(error_line(PROG, e), file=sys.stderr)
        return 1
    finally:
        schedd.close()


def _tail(schedd: Schedd, job: str, targets: list[Target], maxbytes: int, follow: bool, retry: bool) -> int:
    offsets: dict[Target, int | None] = {t: None for t in targets}
    errors: dict[Target, str] = {}
    shown: Target | None = None
    started = False
    status = 0
    while True:
        more = False
        for t in targets:
            label, name, stderr = t
            try:
                got = schedd.tail(job, name, stderr=stderr, offset=offsets[t], maxbytes=maxbytes)
            except RefusedError as e:
                if e.code in ("NOT_RUNNING", "NOT_FOUND", "DENIED", "BAD_REQUEST"):
                    if started and follow and e.code in ("NOT_RUNNING", "NOT_FOUND"):
                        return 1 if errors else 0  # the job ended while we followed it
                    if retry and not started and e.code == "NOT_RUNNING" and job_idle(schedd, job):
                        break  # not running yet: look again
                    print(error_line(PROG, e), file=sys.stderr)
                    return 1
                if errors.get(t) != str(e):  # a file refused: said once, tried again with -f
                    errors[t] = str(e)
                    print(error_line(PROG, e), file=sys.stderr)
                status = 1
                continue
            started = True
            errors.pop(t, None)
            data: bytes = got["data"]
            if data or (not follow and len(targets) > 1):
                if len(targets) > 1 and shown != t:
                    _write(f"{os.linesep if shown is not None else ''}==> {label} <==\n".encode())
                    shown = t
                _write(data)
            offsets[t] = int(got.get("end", 0))
            if offsets[t] < int(got.get("size", 0)):  # more than maxbytes came: look again at once
                more = True
        else:
            if not follow:
                return status
            if not more:
                time.sleep(FOLLOW_INTERVAL)
            continue
        time.sleep(RETRY_INTERVAL)  # -auto-retry: the job is not running yet
