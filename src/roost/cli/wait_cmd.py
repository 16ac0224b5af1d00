"""``roost wait``: block until jobs finish, like condor_wait.

``roost wait ID...`` asks the schedd (and shows progress); ``roost wait
LOGFILE [ID]`` follows a job event log instead, as condor_wait does, and needs
no pool at all: it is done when every job submitted in the log (or the one
named) has terminated or been aborted. Exit status 0 when all are done, 1 when
``-wait SECONDS`` ran out first ("Time expired."), 2 on errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id, parse_job_id
from roost.api.schedd import Schedd
from roost.cli.options import add_pool_args
from roost.cli.progress import Progress
from roost.cli.restrict import error_line


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost wait", add_help=False,
                                description="Wait for jobs (ids) or for the jobs of an event log to finish.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("targets", nargs="+", metavar="ID|LOGFILE")
    p.add_argument("-wait", "--wait", type=float, default=None, metavar="SECONDS",
                   help="give up after this long (exit status 1)")
    p.add_argument("-num", "--num", type=int, default=None,
                   help="with a log file: done once this many jobs have finished")
    p.add_argument("-quiet", "--quiet", action="store_true", help="no progress output")
    p.add_argument("-echo", "--echo", action="store_true", help="with a log file: print each event as it is read")
    p.add_argument("-debug", "--debug", action="store_true", help="accepted for condor_wait's sake")
    add_pool_args(p)
    ns = p.parse_args(argv)
    first = ns.targets[0]
    if not is_job_id(first):
        if not os.path.exists(first):
            print(f"roost wait: {first} is neither a job id nor an existing event log", file=sys.stderr)
            return 2
        return wait_log(first, ns.targets[1:], ns.wait, ns.num, ns.quiet, echo=ns.echo)
    bad = [t for t in ns.targets if not is_job_id(t)]
    if bad:
        print(f"roost wait: not a job id: {' '.join(bad)}", file=sys.stderr)
        return 2
    return wait_ids(ns.targets, ns.wait, ns.quiet, name=ns.name, pool=ns.pool)


def wait_ids(ids: list[str], timeout: float | None, quiet: bool, *, name: str | None = None,
             pool: str | None = None) -> int:
    bar = None if quiet else Progress()

    def show(got: dict[str, object]) -> None:
        if bar is not None:
            bar.update(int(got.get("done", 0)), int(got.get("total", 0)), got.get("counts") or {})  # type: ignore[arg-type]

    try:
        got = Schedd(name=name, pool=pool).wait(ids, timeout=timeout, progress=show)
    except TimeoutError:
        if bar is not None and bar.tty:
            sys.stdout.write("\n")
        print("Time expired.")
        return 1
    except PoolError as e:
        print(error_line("roost wait", e), file=sys.stderr)
        return 2
    if bar is not None:
        bar.update(int(got.get("done", 0)), int(got.get("total", 0)), got.get("counts") or {}, final=True)
    print("All jobs done.")
    return 0


def wait_log(path: str, ids: list[str], timeout: float | None, num: int | None, quiet: bool, *,
             echo: bool = False) -> int:
    # lazy: only waiting on an event log reads one (importing roost.eventlog costs ~30 ms)
    from roost.eventlog import EventLogFollower, EventType, format_event

    want = [parse_job_id(i) for i in ids]

    def wanted(c: int, p: int) -> bool:
        return not want or any(c == wc and (wp is None or p == wp) for wc, wp in want)

    follower = EventLogFollower(path)
    # "3/5 jobs done" lines on a terminal only: condor_wait prints just its verdict, and
    # scripts read it
    tty = sys.stdout.isatty()
    submitted: set[tuple[int, int]] = set()
    finished: set[tuple[int, int]] = set()
    deadline = None if timeout is None else time.monotonic() + timeout
    last = ""
    while True:
        for ev in follower.poll():
            key = (ev.cluster, ev.proc)
            if not wanted(*key):
                continue
            if echo:
                sys.stdout.write(format_event(ev))
            if ev.type == EventType.SUBMIT:
                submitted.add(key)
            elif ev.type in (EventType.JOB_TERMINATED, EventType.JOB_ABORTED):
                finished.add(key)
                submitted.add(key)
        done = len(finished)
        if not quiet and tty:
            line = f"{done}/{len(submitted)} jobs done"
            if line != last:
                print(line, flush=True)
                last = line
        if (num is not None and done >= num) or (num is None and submitted and submitted <= finished):
            print("All jobs done.")
            return 0
        if deadline is not None and time.monotonic() >= deadline:
            print("Time expired.")
            return 1
        time.sleep(0.05)
