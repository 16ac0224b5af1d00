"""``roost reserve``: hold dedicated resources for a time window (issue 16).

    roost reserve -nodes N -duration D [-start T]   hold N dedicated nodes from T for D
    roost reserve -list                             the reservations not over yet
    roost reserve -remove ID                        drop one

T is ``now`` (the default), ``+SECONDS`` from now, Unix seconds, or a local date and
time (``2026-12-01 09:00``); D is seconds, or a number with s, m, h or d. Nothing runs
on the nodes during the window; opportunistic jobs use them until
``DEDICATED_RESERVATION_MARGIN`` before it, dedicated jobs only when they are expected
to end by then (``EstimatedRuntime``). Adding and removing need ADMINISTRATOR.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.options import add_pool_args

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_start(text: str, now: float) -> float:
    """``now``, ``+SECONDS``, Unix seconds, or a local ISO date and time."""
    t = text.strip()
    if t.lower() == "now":
        return now
    if t.startswith("+"):
        return now + parse_duration(t[1:])
    try:
        return float(t)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(t).timestamp()
    except ValueError:
        raise ValueError(f"-start {text!r}: give now, +SECONDS, Unix seconds or YYYY-MM-DD HH:MM") from None


def parse_duration(text: str) -> float:
    t = text.strip().lower()
    unit = _UNITS.get(t[-1:], None)
    try:
        value = float(t[:-1] if unit else t)
    except ValueError:
        raise ValueError(f"duration {text!r}: give seconds, or a number with s, m, h or d") from None
    if value <= 0:
        raise ValueError(f"duration {text!r} must be positive")
    return value * (unit or 1)


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost reserve", add_help=False,
                                description="Hold dedicated resources for a time window.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-nodes", "--nodes", type=int, help="how many dedicated nodes")
    p.add_argument("-start", "--start", default="now", help="now, +SECONDS, Unix seconds or YYYY-MM-DD HH:MM")
    p.add_argument("-duration", "--duration", help="seconds, or a number with s, m, h or d")
    p.add_argument("-list", "--list", action="store_true", help="the reservations not over yet")
    p.add_argument("-remove", "--remove", metavar="ID", help="drop a reservation")
    add_pool_args(p)
    ns = p.parse_args(argv)
    try:
        schedd = Schedd(name=ns.name, pool=ns.pool)
        if ns.list:
            rows = schedd.reservations()
            if not rows:
                print("no reservations")
            for r in rows:
                held = ", ".join(r.get("nodes_held") or []) or "(none yet)"
                print(f"{r['id']}  {r['nodes']} nodes  {_when(r['start'])} .. {_when(r['end'])}  by {r.get('by') or '?'}"
                      f"  on {held}")
            return 0
        if ns.remove:
            schedd.unreserve(ns.remove)
            print(f"reservation {ns.remove} removed")
            return 0
        if ns.nodes is None or ns.duration is None:
            print("roost reserve: give -nodes N and -duration D (or -list, -remove ID)", file=sys.stderr)
            return 2
        now = time.time()
        got = schedd.reserve(ns.nodes, parse_duration(ns.duration), parse_start(ns.start, now))
    except ValueError as e:
        print(f"roost reserve: {e}", file=sys.stderr)
        return 2
    except PoolError as e:
        print(f"roost reserve: {e}", file=sys.stderr)
        return 1
    print(f"reservation {got['id']}: {ns.nodes} nodes from {_when(got['start'])} to {_when(got['end'])}")
    return 0
