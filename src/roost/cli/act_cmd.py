"""``roost rm``, ``roost hold``, ``roost release``: act on jobs as condor_rm/hold/release do.

As in HTCondor 25's tools: job ids (``12.3``) are one request with a line per job
(``Job 12.3 marked for removal``, ``Job 12.4 not held to be released``); clusters
and users are joined into one constraint (``ClusterId == 12 || Owner == "bob"``),
and with ``-constraint`` or ``-all`` make one request answered by one line (``All
jobs in cluster 12 have been marked for removal``). ``-totals`` adds the counts of
each result, ``-long`` the result ad. The exit status is 1 when a request acted on
nothing, except on an empty queue (``There are no jobs in the queue``, status 0).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd
from roost.cli.options import add_pool_args
from roost.cli.restrict import error_line

#: action -> (command name, past participle, the verb in failures, HTCondor's JobAction number)
VERBS = {"remove": ("rm", "marked for removal", "remove", 3), "hold": ("hold", "held", "hold", 1),
         "release": ("release", "released", "release", 2)}
SUCCESS, NOT_FOUND, BAD_STATUS, ALREADY_DONE, DENIED = 1, 2, 3, 4, 5


def result_line(action: str, job: str, code: int) -> str:
    """What condor_rm/hold/release print for one job id (JobActionResults' words)."""
    if code == SUCCESS:
        return f"Job {job} {VERBS[action][1]}"
    if code == NOT_FOUND:
        return f"Job {job} not found"
    if code == DENIED:
        return f"Permission denied to {VERBS[action][2]} job {job}"
    if code == BAD_STATUS:
        return f"Job {job} not held to be released" if action == "release" else f"Invalid result for job {job}"
    if code == ALREADY_DONE:
        if action == "hold":
            return f"Job {job} already held"
        if action == "remove":
            return f"Job {job} already marked for removal"
        return f"Invalid result for job {job}"
    return f"No result found for job {job}"


def totals_line(totals: dict[str, Any]) -> str:
    def n(code: int) -> int:
        v = totals.get(str(code), 0)
        return v if isinstance(v, int) else 0

    return (f"{n(SUCCESS)} Succeeded, {n(0)} Failed, {n(NOT_FOUND)} Not Found, {n(BAD_STATUS)} Bad Status, "
            f"{n(ALREADY_DONE)} Already Done, {n(DENIED)} Permission Denied")


def result_ad(action: str, got: dict[str, Any], per_job: bool) -> str:
    """The schedd's answer as the result ClassAd condor_rm -long prints."""
    lines = []
    if per_job:
        for job, code in (got.get("results") or {}).items():
            c, _, p = str(job).partition(".")
            lines.append(f"job_{c}_{p} = {int(code)}")
        lines.append("ActionResultType = 1")
    else:
        lines.append("ActionResultType = 2")
        lines += [f"result_total_{k} = {(got.get('totals') or {}).get(str(k), 0)}" for k in range(7)]
    lines += [f"JobAction = {VERBS[action][3]}", f"ActionResult = {1 if got.get('count') else 0}",
              f"TotalJobAds = {int(got.get('queue_size') or 0)}",
              f"IsQueueSuperUser = {'true' if got.get('super') else 'false'}"]
    return "\n".join(lines) + "\n\n"


def _constraint(targets: list[str]) -> tuple[str, str, str]:
    """Clusters and users as condor_rm joins them: (constraint, kind, the message's words)."""
    # kind: "cluster" or "user" for one target, else "complex"
    parts, kinds = [], []
    for t in targets:
        if t.isdigit():
            parts.append(f"ClusterId == {t}")
            kinds.append("cluster")
        else:
            parts.append(f'Owner == "{t}"')
            kinds.append("user")
    text = " || ".join(parts)
    if len(parts) == 1:
        value = text.split(" == ", 1)[1]
        return text, kinds[0], f" in cluster {value}" if kinds[0] == "cluster" else f" of user {value}"
    return text, "complex", f" matching constraint ({text})"


def run(action: str, argv: list[str]) -> int:
    prog, done, verb, _ = VERBS[action]
    name = f"roost {prog}"
    p = argparse.ArgumentParser(prog=name, add_help=False,
                                description=f"{action.capitalize()} jobs by id, cluster, user, "
                                            "-constraint or -all.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("targets", nargs="*", metavar="ID|CLUSTER|USER")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-all", "--all", action="store_true", help="every job (every job of yours unless root)")
    p.add_argument("-reason", "--reason", default=None, help="recorded in the job (HoldReason, RemoveReason)")
    p.add_argument("-totals", "--totals", action="store_true", help="the count of each result")
    p.add_argument("-long", "--long", action="store_true", help="the schedd's result ad")
    if action == "remove":
        # condor_rm -forcex takes removed jobs out at once; here a removed job leaves the
        # queue as soon as nothing runs for it, so the flag asks for nothing more
        p.add_argument("-forcex", "--forcex", action="store_true", help="accepted for condor_rm's sake")
    add_pool_args(p)
    ns = p.parse_args(argv)
    if not ns.targets and not ns.constraint and not ns.all:
        print(f"{name}: name jobs (ids, clusters or users), -constraint EXPR or -all", file=sys.stderr)
        return 1
    if ns.all and (ns.targets or ns.constraint):
        print(f"{name}: can't mix -all with other constraints", file=sys.stderr)
        return 1
    job_ids, others = [], []
    for t in ns.targets:
        if is_job_id(t) and "." in t:
            job_ids.append(t)
        elif is_job_id(t) and int(t) <= 0:
            print(f"Invalid cluster # from {t}.", file=sys.stderr)
            return 1
        else:
            others.append(t)
    rc = 0
    try:
        schedd = Schedd(name=ns.name, pool=ns.pool)
        base: dict[str, Any] = {"action": action}
        if ns.reason:
            base["reason"] = ns.reason
        if job_ids:
            if ns.constraint:
                print("Warning, -constraint is ignored for fully qualified job ids", file=sys.stderr)
            got = schedd.call("ACT", ids=job_ids, **base)
            if ns.long:
                sys.stdout.write(result_ad(action, got, True))
            elif ns.totals:
                print(totals_line(got.get("totals") or {}))
            results = got.get("results") or {}
            for jid in job_ids:
                c, _, proc = jid.partition(".")
                key = f"{int(c)}.{int(proc)}"
                code = int(results.get(key, 0))
                print(result_line(action, key, code), file=sys.stdout if code == SUCCESS else sys.stderr)
            if not got.get("count"):
                rc = 1
        constraint, kind, words = None, "", ""
        if ns.all:
            constraint, words = "ClusterId >= 0", ""
        elif ns.constraint and others:
            joined, _, _ = _constraint(others)
            constraint = f"({ns.constraint}) && ({joined})"
            words = f" matching constraint ({constraint})"
        elif ns.constraint:
            constraint, words = ns.constraint, f" matching constraint ({ns.constraint})"
        elif others:
            constraint, kind, words = _constraint(others)
        if constraint is not None:
            # one cluster is ClusterId == C: asked by id, which the schedd finds without a scan
            select: dict[str, Any] = {"ids": [others[0]]} if kind == "cluster" else {"constraint": constraint}
            # the answer's count and totals are what is printed: no list of the jobs done
            got = schedd.call("ACT", results=bool(ns.long and not ns.totals), list_ids=False, **select, **base)
            if ns.long and not ns.totals:
                sys.stdout.write(result_ad(action, got, True))
            elif ns.totals:
                print(totals_line(got.get("totals") or {}))
            if got.get("count"):
                print(f"All jobs{words} have been {done}")
            elif not got.get("queue_size"):
                # condor_rm's CondorError text: "<tool>:0:<message>"; nothing was wrong
                print(f"{name}:0:There are no jobs in the queue", file=sys.stderr)
            else:
                print("", file=sys.stderr)  # condor_rm's (empty) error stack, then its verdict
                print(f"Couldn't find/{verb} all jobs{words}", file=sys.stderr)
                rc = 1
    except PoolError as e:
        print(error_line(name, e), file=sys.stderr)
        return 1
    return rc


def main_rm(argv: list[str]) -> int:
    return run("remove", argv)


def main_hold(argv: list[str]) -> int:
    return run("hold", argv)


def main_release(argv: list[str]) -> int:
    return run("release", argv)


main = main_rm
