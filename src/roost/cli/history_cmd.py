"""``roost history``: jobs that have left the queue, newest first, as condor_history shows them."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.jobview import STATUS_LETTERS, command, duration, short_date
from roost.cli.options import add_pool_args
from roost.cli.restrict import Restriction, error_line, split_af

ATTRS = ["ClusterId", "ProcId", "Owner", "QDate", "RemoteWallClockTime", "JobStatus", "CompletionDate",
         "EnteredCurrentStatus", "Cmd", "Arguments", "Args"]


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    p = argparse.ArgumentParser(prog="roost history", add_help=False,
                                description="Show finished jobs (like condor_history). Positional "
                                            "arguments are job ids (C or C.P) and user names.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("restrict", nargs="*", metavar="ID|USER")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-limit", "-match", "--limit", "--match", dest="limit", type=int, default=None,
                   help="at most this many jobs")
    p.add_argument("-af", "-autoformat", "--af", dest="af", nargs="+", metavar="ATTR")
    p.add_argument("-long", "-l", "--long", action="store_true")
    p.add_argument("-json", "--json", action="store_true")
    p.add_argument("-wide", "--wide", action="store_true")
    add_pool_args(p)
    ns = p.parse_args(argv)
    r = Restriction.parse(ns.restrict)
    raw = ns.af or ns.long or ns.json
    projection = None if raw else ATTRS
    if ns.af and all(a.isidentifier() for a in ns.af):
        projection = ns.af
    try:
        jobs = Schedd(name=ns.name, pool=ns.pool).history(r.constraint(ns.constraint), projection, match=ns.limit,
                                owner=r.owner(), ids=r.ids)
    except PoolError as e:
        print(error_line("roost history", e), file=sys.stderr)
        return 1
    out = sys.stdout
    if raw:
        # lazy: only -af/-long/-json print ads; adtext compiles a regex on import (~1 ms)
        from roost.cli import adtext

        out.write(adtext.ads_text(jobs, json=ns.json, long=ns.long, af=ns.af, af_flags=af_flags))
        return 0
    out.write(table(jobs, ns.wide))
    return 0


def table(jobs: list[dict[str, Any]], wide: bool = False) -> str:
    lines = [" ID      OWNER          SUBMITTED   RUN_TIME     ST COMPLETED   CMD"]
    for j in jobs:
        jid = f"{j['ClusterId']}.{j['ProcId']}"
        wall = j.get("RemoteWallClockTime")
        done = j.get("CompletionDate") or j.get("EnteredCurrentStatus")
        lines.append(
            f"{jid:>7}   {str(j.get('Owner', '?')):<14} {short_date(j.get('QDate')):>11} "
            f"{duration(wall if isinstance(wall, (int, float)) else 0):>12} "
            f"{STATUS_LETTERS.get(j.get('JobStatus'), '?'):<2} "  # type: ignore[arg-type]
            f"{short_date(done) if done else '???':<11} {command(j, wide)}"
        )
    return "\n".join(lines) + "\n"
