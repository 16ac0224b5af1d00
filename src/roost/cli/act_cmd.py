"""``roost rm``, ``roost hold``, ``roost release``: act on jobs as condor_rm/hold/release do.

Targets are job ids (``12.3``), clusters (``12``), user names, ``-constraint``
or ``-all``; each target is one request, so each gets its own line saying what
happened, and any target that matched nothing makes the exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys

from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd, current_user
from roost.cli.options import add_pool_args
from roost.cli.restrict import error_line

#: action -> (command name, past participle used in messages)
VERBS = {"remove": ("rm", "marked for removal"), "hold": ("hold", "held"), "release": ("release", "released")}


def run(action: str, argv: list[str]) -> int:
    prog, done = VERBS[action]
    p = argparse.ArgumentParser(prog=f"roost {prog}", add_help=False,
                                description=f"{action.capitalize()} jobs by id, cluster, user, "
                                            "-constraint or -all.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("targets", nargs="*", metavar="ID|CLUSTER|USER")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-all", "--all", action="store_true", help="every job (every job of yours unless root)")
    p.add_argument("-reason", "--reason", default=None, help="recorded in the job (HoldReason, RemoveReason)")
    if action == "remove":
        # condor_rm -forcex takes removed jobs out at once; here a removed job leaves the
        # queue as soon as nothing runs for it, so the flag asks for nothing more
        p.add_argument("-forcex", "--forcex", action="store_true", help="accepted for condor_rm's sake")
    add_pool_args(p)
    ns = p.parse_args(argv)
    if not ns.targets and not ns.constraint and not ns.all:
        print(f"roost {prog}: name jobs (ids, clusters or users), -constraint EXPR or -all", file=sys.stderr)
        return 1
    rc = 0
    try:
        schedd = Schedd(name=ns.name, pool=ns.pool)
        requests: list[tuple[dict[str, object], str, str]] = []
        for t in ns.targets:
            if is_job_id(t):
                if "." in t:
                    requests.append(({"ids": [t]}, f"Job {t} {done}", f"Job {t} not found"))
                else:
                    requests.append(({"ids": [t]}, f"All jobs in cluster {t} have been {done}",
                                     f"Couldn't find/{action} all jobs in cluster {t}"))
            else:
                requests.append(({"owner": t}, f'All jobs of user "{t}" have been {done}',
                                 f'Couldn\'t find/{action} all of user {t}\'s job(s)'))
        if ns.constraint:
            requests.append(({"constraint": ns.constraint}, f"All jobs matching constraint ({ns.constraint}) have been {done}",
                             f"Couldn't find/{action} all jobs matching constraint ({ns.constraint})"))
        if ns.all:
            args: dict[str, object] = {"constraint": "true"}
            if os.geteuid() != 0:
                args["owner"] = current_user()
            requests.append((args, f"All jobs have been {done}", f"Couldn't find/{action} any jobs"))
        for args, ok_msg, fail_msg in requests:
            got = schedd.act(action, args.get("ids"), constraint=args.get("constraint"),  # type: ignore[arg-type]
                             owner=args.get("owner"), reason=ns.reason)  # type: ignore[arg-type]
            if int(got.get("count", 0)) > 0:
                print(ok_msg)
            else:
                ids = args.get("ids")
                denied = got.get("denied") or []
                if ids and denied and "." in str(ids[0]):  # type: ignore[index]
                    # condor_rm's words for a job that is another user's
                    fail_msg = f"Permission denied to {action} job {denied[0]}"
                print(fail_msg, file=sys.stderr)
                rc = 1
    except PoolError as e:
        print(error_line(f"roost {prog}", e), file=sys.stderr)
        return 1
    return rc


def main_rm(argv: list[str]) -> int:
    return run("remove", argv)


def main_hold(argv: list[str]) -> int:
    return run("hold", argv)


def main_release(argv: list[str]) -> int:
    return run("release", argv)


main = main_rm
