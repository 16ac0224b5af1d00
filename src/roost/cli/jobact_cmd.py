"""``roost suspend``, ``roost continue``, ``roost vacate_job``: condor_suspend,
condor_continue and condor_vacate_job, which act on running jobs through their startd.

Targets are read as condor_rm's family reads them (``12.3``, a cluster ``12``, a user
name, ``-constraint``, ``-all``), and each gets HTCondor's line: ``Job 12.3 suspended``,
``All jobs in cluster 12 have been suspended``, or on stderr why not (``Job 12.3 not
running to be suspended``, ``Permission denied to suspend job 12.3``, ...); any target
left undone makes the exit status 1. The schedd asks the startd; JobStatus and the user
log's events (010/011 for suspend and continue, 004 for a vacate) follow from the
startd's report, a moment after the tool returns.
"""

from __future__ import annotations

import os
import sys

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd, current_user
from roost.cli.options import FLAG, VALUE, Parser, UsageError, pool_spec
from roost.cli.restrict import error_line
from roost.vocabulary import JobStatus

#: ACT action -> (verb, present word, past word) as condor_rm's family writes them
WORDS = {
    "suspend": ("suspend", "suspend", "suspended"),
    "continue": ("continue", "continue", "continued"),
    "vacate": ("vacate_job", "vacate", "vacated"),
    "vacate_fast": ("vacate_job", "fast-vacate", "fast-vacated"),
}


def job_line(action: str, job: str, denied: bool, status: int | None) -> str:
    """Why ``job``, named by id, was not acted on: HTCondor's words for each case."""
    _, present, past = WORDS[action]
    if denied:
        return f"Permission denied to {present} job {job}"
    if status is None:
        return f"Job {job} not found"
    if action == "suspend" and status == JobStatus.SUSPENDED:
        return f"Job {job} already suspended"
    if action == "continue" and status == JobStatus.RUNNING:
        return f"Job {job} already running"
    return f"Job {job} not running to be {past}"


def run(action: str, argv: list[str]) -> int:
    verb = WORDS[action][0]
    prog = f"roost {verb}"
    spec = {"constraint": (VALUE, "act on the jobs matching this ClassAd expression"),
            "all": (FLAG, "every job (every job of yours unless root)"),
            "debug": (FLAG, "accepted for HTCondor's sake (roost's tools have no debug log)")}
    if action.startswith("vacate"):
        spec["fast"] = (FLAG, "a fast vacate: SIGKILL at once, not the job's kill signal and JobMaxVacateTime")
    spec.update(pool_spec())
    parser = Parser(prog, "[options] [ID|CLUSTER|USER ...]", spec)
    try:
        ns = parser.parse(argv)
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    if ns.values.get("fast"):
        action = "vacate_fast"
    _, present, past = WORDS[action]
    if not ns.positional and not ns.constraint and not ns.all:
        print(f"{prog}: You did not specify any jobs (ids, clusters, users, -constraint EXPR or -all)",
              file=sys.stderr)
        print(parser.help_text(), file=sys.stderr)
        return 1
    # (selection, line when done, line when not) per target
    requests: list[tuple[dict[str, object], str, str]] = []
    for t in ns.positional:
        if is_job_id(t) and "." in t:
            requests.append(({"ids": [t]}, f"Job {t} {past}", ""))
        elif is_job_id(t):
            requests.append(({"ids": [t]}, f"All jobs in cluster {t} have been {past}",
                             f"Couldn't find/{present} all jobs in cluster {t}"))
        else:
            requests.append(({"owner": t}, f'All jobs of user "{t}" have been {past}',
                             f"Couldn't find/{present} all of user {t}'s job(s)"))
    if ns.constraint:
        requests.append(({"constraint": ns.constraint}, f"All jobs matching constraint ({ns.constraint}) have been {past}",
                         f"Couldn't find/{present} all jobs matching constraint ({ns.constraint})"))
    if ns.all:
        sel: dict[str, object] = {"constraint": "true"}
        if os.geteuid() != 0:
            sel["owner"] = current_user()
        requests.append((sel, f"All jobs have been {past}", f"Couldn't find/{present} any jobs"))
    rc = 0
    try:
        schedd = Schedd(name=ns.name, pool=ns.pool)  # type: ignore[arg-type]
        for sel, ok_line, fail_line in requests:
            got = schedd.act(action, sel.get("ids"), constraint=sel.get("constraint"),  # type: ignore[arg-type]
                             owner=sel.get("owner"))  # type: ignore[arg-type]
            if int(got.get("count", 0)) > 0:
                print(ok_line)
                continue
            rc = 1
            if not fail_line:  # one job by id: say why
                job = str(sel["ids"][0])  # type: ignore[index]
                status = (got.get("unchanged") or {}).get(job)
                fail_line = job_line(action, job, job in (got.get("denied") or []), status)
            print(fail_line, file=sys.stderr)
    except PoolError as e:
        print(error_line(prog, e), file=sys.stderr)
        return 1
    return rc


def main_suspend(argv: list[str]) -> int:
    return run("suspend", argv)


def main_continue(argv: list[str]) -> int:
    return run("continue", argv)


def main_vacate_job(argv: list[str]) -> int:
    return run("vacate", argv)


main = main_suspend
