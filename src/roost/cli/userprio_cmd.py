"""``roost userprio``: users' fair-share priorities, and setting them (condor_userprio).

Talks to the negotiator (its address in ``$ROOST_HOME/run/negotiator.address``):
``USERPRIO`` to list; ``SET_FACTOR``, ``SET_PRIORITY``, ``RESET_USAGE``,
``SET_FLOOR``, ``SET_CEILING`` to change. Lower effective priority is better.
"""

from __future__ import annotations

import json
import math
import sys
import time
from typing import Any

from roost.api.errors import PoolError
from roost.api.home import pool_home
from roost.api.negotiator import negotiator_connection
from roost.cli import userprio_layout as layout

USAGE = """usage: roost userprio [-pool HOST[:PORT]] [-name NEGOTIATOR] [-all|-most|-usage|-priority] [-allusers] [-json]
       roost userprio -setfactor USER FACTOR
       roost userprio -setprio USER PRIORITY
       roost userprio -resetusage USER | -resetusage -all | -resetall
       roost userprio -setfloor USER WEIGHT|none
       roost userprio -setceiling USER WEIGHT|none

Show each submitter's effective priority (real priority x factor; lower is
better), factor, weighted resources in use, total usage, time since last
usage, floor and ceiling, as condor_userprio does; -all adds the real priority
and the usage dates, -usage shows only usage, -priority only priorities.
Without -allusers, submitters idle for over a day are left out. -pool asks the
pool whose collector is at HOST[:PORT] (port 9618 when omitted), -name the
negotiator of that name it knows."""

class _Usage(Exception):
    pass


def _number(text: str, what: str, *, allow_none: bool = False) -> float | None:
    if allow_none and text.lower() in ("none", "undefined", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        raise _Usage(f"{what} must be a number, not {text!r}") from None


def parse(argv: list[str]) -> dict[str, Any]:
    opts: dict[str, Any] = {"all": False, "allusers": False, "flags": 0, "json": False, "action": None,
                            "pool": None, "name": None}
    i = 0

    def take(n: int, flag: str) -> list[str]:
        nonlocal i
        if len(argv) - i - 1 < n:
            raise _Usage(f"{flag} needs {n} argument{'s' if n > 1 else ''}")
        got = argv[i + 1:i + 1 + n]
        i += n
        return got

    while i < len(argv):
        a = argv[i]
        flag = "-" + a.lstrip("-").lower()
        if flag in ("-h", "-help"):
            opts["action"] = ("help",)
        elif flag == "-all":  # every column (condor_userprio's DetailAll)
            opts["all"] = True
            opts["flags"] |= layout.ALL
        elif flag == "-most":
            opts["flags"] |= layout.DEFAULT
        elif flag == "-allusers":  # every submitter, however long idle
            opts["allusers"] = True
        elif len(flag) >= 3 and "-usage".startswith(flag):
            opts["flags"] |= layout.USAGE_VIEW
        elif len(flag) >= 5 and "-priority".startswith(flag):
            opts["flags"] |= layout.PRIOS
        elif flag == "-json":
            opts["json"] = True
        elif flag in ("-pool", "-name"):
            (opts[flag[1:]],) = take(1, a)
        elif flag == "-setfactor":
            user, f = take(2, a)
            factor = _number(f, "the factor")
            if factor is None or factor < 1:
                raise _Usage("the factor must be at least 1")
            opts["action"] = ("factor", user, factor)
        elif flag == "-setprio":
            user, p = take(2, a)
            prio = _number(p, "the priority")
            if prio is None or not math.isfinite(prio):
                raise _Usage("the priority must be a finite number")
            opts["action"] = ("prio", user, prio)
        elif flag == "-resetall":  # condor_userprio's spelling of -resetusage -all
            opts["action"] = ("reset", "*")
        elif flag == "-resetusage":
            if i + 1 < len(argv) and argv[i + 1].lstrip("-").lower() in ("all", "allusers"):
                i += 1
                opts["action"] = ("reset", "*")
            else:
                (user,) = take(1, a)
                opts["action"] = ("reset", user)
        elif flag in ("-setfloor", "-setceiling"):
            user, w = take(2, a)
            opts["action"] = (flag[4:], user, _number(w, "the weight", allow_none=True))
        else:
            raise _Usage(f"unknown argument {a!r}")
        i += 1
    return opts


def _num(v: Any) -> str:
    return f"{v:.2f}" if isinstance(v, (int, float)) else "-"


def stations_table(stations: list[Any]) -> str:
    """NEGOTIATOR_ALGORITHM = updown: each submit machine's schedule index, best first."""
    rows = [(str(s.get("name")), s.get("index")) for s in stations if isinstance(s, dict)]
    width = max([len("Submit machine (Up-Down)"), *(len(n) for n, _ in rows)])
    out = [f"{'Submit machine (Up-Down)'.ljust(width)} {'Index':>9}",
           f"{'-' * width} {'-' * 9}"]
    out += [f"{n.ljust(width)} {_num(i):>9}" for n, i in rows]
    out.append("(lower is better: holding slots raises it, waiting with none lowers it)")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    try:
        opts = parse(argv)
    except _Usage as e:
        print(f"roost userprio: {e}\n\n{USAGE}", file=sys.stderr)
        return 2
    action = opts["action"]
    if action == ("help",):
        print(USAGE)
        return 0
    try:
        conn = negotiator_connection(pool_home(None), 30.0, name=opts["name"], pool=opts["pool"])
    except PoolError as e:
        print(f"roost userprio: {e}", file=sys.stderr)
        return 1
    try:
        if action is None:
            got = conn.call("USERPRIO")
            users = got.get("users") or []
            now = time.time()
            everyone = opts["all"] or opts["allusers"]
            if opts["json"]:  # roost's: -all keeps listing everyone here, as it always has
                print(json.dumps(layout.shown(users, now, everyone), indent=2))
            else:
                print(layout.table(users, now, opts["flags"] or layout.DEFAULT, opts["allusers"]))
                if isinstance(got.get("stations"), list):
                    print("\n" + stations_table(got["stations"]))
            return 0
        kind = action[0]
        if kind == "factor":
            conn.call("SET_FACTOR", name=action[1], factor=action[2])
            print(f"The priority factor of {action[1]} was set to {action[2]:g}")
        elif kind == "prio":
            got = conn.call("SET_PRIORITY", name=action[1], priority=action[2])
            print(f"The real priority of {action[1]} was set to {got.get('priority', action[2]):g}")
        elif kind == "reset":
            conn.call("RESET_USAGE", name=action[1])
            print("The accumulated usage of " + ("all users" if action[1] == "*" else action[1]) + " was reset")
        elif kind in ("floor", "ceiling"):
            cmd = "SET_FLOOR" if kind == "floor" else "SET_CEILING"
            conn.call(cmd, name=action[1], **{kind: action[2]})
            shown = "none" if action[2] is None else f"{action[2]:g}"
            print(f"The {kind} of {action[1]} was set to {shown}")
        return 0
    except _Usage as e:
        print(f"roost userprio: {e}", file=sys.stderr)
        return 2
    except PoolError as e:
        print(f"roost userprio: {e}", file=sys.stderr)
        return 1
    finally:
        conn.close()
