"""``roost who``: what runs on this machine, as condor_who shows it.

One line per busy slot of this host's startd: the job's owner, the schedd's host
it came from (CLIENT), the slot (``1`` static, ``1_2`` dynamic), the job id and
how long it has run. The slots are this host's ads in the collector: those of
the startd whose address ``run/startd.address`` holds, else those whose
``Machine`` is this host. ``-allslots`` lists idle slots too; ``-af``, ``-format``,
``-long``, ``-json`` and ``-constraint`` work on the slot ads, as in condor_who.
"""

from __future__ import annotations

import socket
import sys
import time
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.api.home import pool_home, read_address, run_path
from roost.cli.options import Parser, UsageError, collector_for
from roost.cli.restrict import error_line, split_af, split_format

SPEC = {
    "constraint": ("value", "only slots for which this ClassAd expression is true"),
    "allslots": ("flag", "idle slots too, not only those running a job"),
    "af": ("values", "print these attributes or expressions of each slot ad (-af:jlht, flags)"),
    "long": ("flag", "every attribute of each slot ad"),
    "json": ("flag", "the slot ads as a JSON array"),
    "wide": ("flag", "do not truncate columns"),
    "pool": ("value", "the pool whose collector is at HOST[:PORT]"),
    "address": ("value", "the startd at this address (host:port) instead of this host's"),
    "verbose": ("flag", "accepted for condor_who's sake"),
}
ALIASES = {"autoformat": "af", "l": "long"}
ATTRS = ["Name", "Machine", "MyAddress", "SlotID", "DynamicSlot", "RemoteOwner", "RemoteUser",
         "ClientMachine", "JobId", "JobStart", "State", "Activity", "Cpus", "Memory", "Disk"]


def slot_id(ad: dict[str, Any]) -> str:
    """condor_who's SLOT: ``1`` for slot1, ``1_2`` for a dynamic slot1_2."""
    name = str(ad.get("Name", ""))
    if ad.get("DynamicSlot") is True and name.startswith("slot"):
        return name[4:].split("@", 1)[0]
    sid = ad.get("SlotID")
    return str(sid) if isinstance(sid, int) else "?"


def _mine(ads: list[dict[str, Any]], address: str | None) -> list[dict[str, Any]]:
    if address:
        return [a for a in ads if a.get("MyAddress") == address]
    host = socket.getfqdn()
    names = {host, host.split(".", 1)[0], socket.gethostname()}
    return [a for a in ads if a.get("Machine") in names]


def table(ads: list[dict[str, Any]], now: float, wide: bool = False) -> str:
    """The OWNER CLIENT SLOT JOB RUNTIME table, its columns as wide as their widest cell."""
    # lazy: the D+HH:MM:SS of -format %T, without the ClassAd library
    from roost.cli.printf import _duration

    rows = [["OWNER", "CLIENT", "SLOT", "JOB", "  RUNTIME"]]
    for a in ads:
        start = a.get("JobStart")
        run = _duration(max(0, int(now - start))) if isinstance(start, int | float) and a.get("JobId") else ""
        owner = a.get("RemoteOwner") or a.get("RemoteUser") or ""
        client = str(a.get("ClientMachine") or "")
        if not wide:
            client = client[:40]
        rows.append([str(owner), client, slot_id(a), str(a.get("JobId") or ""), run])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[i].ljust(widths[i]) for i in range(len(r) - 1)] + [r[-1].rjust(widths[-1])]
        lines.append(" ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    argv, af_flags = split_af(argv)
    try:
        argv, formats = split_format(argv, shortest=2)
        ns = Parser("roost who", "[options]", SPEC, ALIASES).parse(argv)
        address = collector_for(ns.pool)  # type: ignore[arg-type]
    except (UsageError, ValueError) as e:
        print(f"roost who: {e}", file=sys.stderr)
        return 2
    home = pool_home(None)
    startd = ns.address or read_address(run_path(home, "startd.address"))
    constraint = ns.constraint
    if not ns.allslots:
        busy = "JobId =!= undefined"
        constraint = f"({constraint}) && {busy}" if constraint else busy
    collector = Collector(home, address=address)
    try:
        raw = bool(ns.af or ns.long or ns.json or formats)
        ads = collector.query_objs("Machine", constraint, None if raw else ATTRS)
    except PoolError as e:
        print(error_line("roost who", e), file=sys.stderr)
        return 1
    finally:
        collector.close()
    ads = sorted(_mine(ads, startd if isinstance(startd, str) else None), key=lambda a: str(a.get("Name")))
    out = sys.stdout
    if formats:
        # lazy: only -format prints printf columns
        from roost.cli import printf

        out.write(printf.text(formats, ads))
        return 0
    if raw:
        # lazy: only -af/-long/-json print ads
        from roost.cli import adtext

        out.write(adtext.ads_text(ads, json=ns.json, long=ns.long, af=ns.af, af_flags=af_flags))
        return 0
    out.write(table(ads, time.time(), bool(ns.wide)))
    return 0

