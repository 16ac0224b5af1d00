"""``roost status``: the pool's slots (or schedds, submitters, daemons), as condor_status shows them."""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.cli.jobview import duration
from roost.cli.options import add_pool_args, collector_for
from roost.cli.restrict import error_line, split_af

SLOT_ATTRS = ["Name", "Machine", "OpSys", "Arch", "State", "Activity", "LoadAvg", "Memory",
              "EnteredCurrentActivity", "MyCurrentTime", "SlotType", "Cpus"]
STATES = ["Owner", "Claimed", "Unclaimed", "Matched", "Preempting", "Drained", "Backfill"]
SCHEDD_ATTRS = ["Name", "Machine", "TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs"]
SUBMITTER_ATTRS = ["Name", "Machine", "RunningJobs", "IdleJobs", "HeldJobs"]
DAEMON_ATTRS = ["Name", "Machine", "MyAddress", "DaemonStartTime"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="roost status", add_help=False,
                                description="Show the pool's slots and daemons (like condor_status).")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("names", nargs="*", metavar="NAME", help="only ads whose Name or Machine is one of these")
    p.add_argument("-constraint", "--constraint", default=None, metavar="EXPR")
    p.add_argument("-af", "-autoformat", "--af", dest="af", nargs="+", metavar="ATTR")
    p.add_argument("-long", "-l", "--long", action="store_true")
    p.add_argument("-json", "--json", action="store_true")
    p.add_argument("-totals", "--totals", action="store_true", help="only the totals table")
    add_pool_args(p, daemon=None)
    p.add_argument("-web", "--web", action="store_true", help="print the web dashboard's URL (docs/web.md)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument("-schedd", "--schedd", dest="kind", action="store_const", const="Scheduler")
    kind.add_argument("-submitters", "--submitters", dest="kind", action="store_const", const="Submitter")
    kind.add_argument("-negotiator", "--negotiator", dest="kind", action="store_const", const="Negotiator")
    kind.add_argument("-collector", "--collector", dest="kind", action="store_const", const="Collector")
    kind.add_argument("-master", "--master", dest="kind", action="store_const", const="Master")
    kind.add_argument("-startd", "--startd", dest="kind", action="store_const", const="Machine")
    return p


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    ns = parser().parse_args(argv)
    if ns.web:
        return _web_url()
    kind = ns.kind or "Machine"
    constraint = ns.constraint
    if ns.names:
        # lazy: only NAME arguments need ClassAd string quoting (roost.classad, ~4 ms)
        from roost.classad.unparse import quote

        alt = " || ".join(f"Name == {quote(n)} || Machine == {quote(n)}" for n in ns.names)
        constraint = f"({constraint}) && ({alt})" if constraint else alt
    raw_ads = ns.af or ns.long or ns.json
    projection = None
    if not raw_ads:
        projection = {"Machine": SLOT_ATTRS, "Scheduler": SCHEDD_ATTRS,
                      "Submitter": SUBMITTER_ATTRS}.get(kind, DAEMON_ATTRS)
    elif ns.af and all(a.isidentifier() for a in ns.af):
        projection = ["Name", *ns.af]
    try:
        ads = Collector(address=collector_for(ns.pool)).query_objs(kind, constraint, projection)
    except (PoolError, ValueError) as e:
        print(error_line("roost status", e), file=sys.stderr)
        return 1
    ads.sort(key=lambda a: (str(a.get("Machine", "")), _name_key(str(a.get("Name", "")))))
    out = sys.stdout
    if raw_ads:
        # lazy: only -af/-long/-json print ads; adtext compiles a regex on import (~1 ms)
        from roost.cli import adtext

        out.write(adtext.ads_text(ads, json=ns.json, long=ns.long, af=ns.af, af_flags=af_flags))
        return 0
    if kind == "Machine":
        _slots(ads, out, ns.totals)
    elif kind in ("Scheduler", "Submitter"):
        _job_counts(ads, out, kind, ns.totals)
    else:
        _daemons(ads, out)
    return 0


def _name_key(name: str) -> tuple[Any, ...]:
    """slot2 before slot10; slot1_3 after slot1."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _slots(ads: list[dict[str, Any]], out: Any, totals_only: bool) -> None:
    if not totals_only:
        lines = [f"{'Name':<24} {'OpSys':<10} {'Arch':<6} {'State':<9} {'Activity':<8} "
                 f"{'LoadAv':>6} {'Mem':>6} {'ActvtyTime':>12}", ""]
        for a in ads:
            now = a.get("MyCurrentTime") if isinstance(a.get("MyCurrentTime"), int) else time.time()
            since = a.get("EnteredCurrentActivity")
            act = duration(now - since) if isinstance(since, (int, float)) else "?"
            load = a.get("LoadAvg")
            load_s = f"{load:.3f}" if isinstance(load, (int, float)) else "?"
            lines.append(f"{str(a.get('Name', '?')):<24} {str(a.get('OpSys', '?')):<10} "
                         f"{str(a.get('Arch', '?')):<6} {str(a.get('State', '?')):<9} "
                         f"{str(a.get('Activity', '?')):<8} {load_s:>6} {a.get('Memory', '?')!s:>6} {act:>12}")
        out.write("\n".join(lines) + "\n\n")
    # Totals by Arch/OpSys, as condor_status ends its slot listing.
    groups: dict[str, dict[str, int]] = {}
    for a in ads:
        key = f"{a.get('Arch', '?')}/{a.get('OpSys', '?')}"
        g = groups.setdefault(key, {})
        g[str(a.get("State"))] = g.get(str(a.get("State")), 0) + 1
    head = f"{'':>15} {'Total':>5} " + " ".join(f"{s:>9}" for s in STATES)
    rows = [head, ""]
    grand: dict[str, int] = {}
    for key, g in sorted(groups.items()):
        rows.append(f"{key:>15} {sum(g.values()):>5} " + " ".join(f"{g.get(s, 0):>9}" for s in STATES))
        for s, n in g.items():
            grand[s] = grand.get(s, 0) + n
    rows += ["", f"{'Total':>15} {sum(grand.values()):>5} " + " ".join(f"{grand.get(s, 0):>9}" for s in STATES)]
    out.write("\n".join(rows) + "\n")


def _job_counts(ads: list[dict[str, Any]], out: Any, kind: str, totals_only: bool) -> None:
    keys = ("TotalRunningJobs", "TotalIdleJobs", "TotalHeldJobs") if kind == "Scheduler" else \
        ("RunningJobs", "IdleJobs", "HeldJobs")
    sums = [0, 0, 0]
    lines = [f"{'Name':<32} {'Machine':<20} {'RunningJobs':>11} {'IdleJobs':>9} {'HeldJobs':>9}", ""]
    for a in ads:
        vals = [a.get(k) if isinstance(a.get(k), int) else 0 for k in keys]
        sums = [s + v for s, v in zip(sums, vals)]
        lines.append(f"{str(a.get('Name', '?')):<32} {str(a.get('Machine', '?')):<20} "
                     f"{vals[0]:>11} {vals[1]:>9} {vals[2]:>9}")
    total = [f"{'':<32} {'':<20} {'RunningJobs':>11} {'IdleJobs':>9} {'HeldJobs':>9}", "",
             f"{'Total':>32} {'':<20} {sums[0]:>11} {sums[1]:>9} {sums[2]:>9}"]
    out.write(("" if totals_only else "\n".join(lines) + "\n\n") + "\n".join(total) + "\n")


def _daemons(ads: list[dict[str, Any]], out: Any) -> None:
    lines = [f"{'Name':<32} {'Machine':<20} {'Address':<22} Started", ""]
    for a in ads:
        started = a.get("DaemonStartTime")
        when = time.strftime("%m/%d %H:%M", time.localtime(started)) if isinstance(started, (int, float)) else "?"
        lines.append(f"{str(a.get('Name', '?')):<32} {str(a.get('Machine', '?')):<20} "
                     f"{str(a.get('MyAddress', '?')):<22} {when}")
    out.write("\n".join(lines) + "\n")


def _web_url() -> int:
    """``-web``: the dashboard's URL, from the address file its daemon writes on this host."""
    # lazy: only -web reads the run directory
    from roost.api.home import pool_home, read_address, run_path

    home = pool_home()
    addr = read_address(run_path(home, "web.address"))
    if addr is None:
        print(f"roost status: no web dashboard is running here (ROOST_HOME={home}; "
              "WEB in DAEMON_LIST starts one)", file=sys.stderr)
        return 1
    print(f"http://{addr}/")
    return 0
