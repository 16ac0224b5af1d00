"""``roost up``: start a personal pool under ROOST_HOME and wait until it can run jobs."""

from __future__ import annotations

import argparse
import os
import sys
import time

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.api.pool import Pool
from roost.poolhome import personal_home


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost up", add_help=False,
                                description="Start a personal pool (master, collector, negotiator, schedd, "
                                            "startd) under $ROOST_HOME, default ~/.local/share/roost.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-timeout", "--timeout", type=float, default=60.0,
                   help="seconds to wait for the pool to become ready (default 60)")
    ns = p.parse_args(argv)
    pool = Pool()
    if not os.environ.get("ROOST_HOME") and not pool.running():
        # the system pool found by lookup is its service's to start (contrib/systemd),
        # not a user's: without ROOST_HOME, `roost up` starts the user's own pool
        pool = Pool(personal_home())
    if pool.running():
        print(f"roost up: a pool is already running (ROOST_HOME={pool.home}, master pid "
              f"{pool.master_pid()}); `roost down` stops it")
        return 0
    try:
        st = pool.start(timeout=ns.timeout)
    except PoolError as e:
        print(f"roost up: {e}", file=sys.stderr)
        return 1
    daemons = st.get("daemons", {})
    names = " ".join(n.lower() for n in daemons)
    print(f"roost pool is up (ROOST_HOME={pool.home}): master pid {st.get('pid')}; {names}"
          + (f"; {_slot_summary(pool)}" if "STARTD" in daemons else ""))
    return 0


def _slot_summary(pool: object) -> str:
    """``8 slots, 8 cpus`` or ``1 partitionable slot, 4 cpus``."""
    # the startd sends its slots' ads one by one: the pool is up with the first, so read
    # until two looks a quarter second apart agree (at most ~3 s) before counting them
    ads: list[dict[str, object]] = []
    for _ in range(12):
        try:
            got = Collector(pool.home).query_objs("Machine", projection=["Name", "Cpus", "SlotType"])  # type: ignore[attr-defined]
        except PoolError:
            return "slots not visible"
        if ads and sorted(str(a.get("Name")) for a in got) == sorted(str(a.get("Name")) for a in ads):
            break
        ads = got
        time.sleep(0.25)
    cpus = sum(a.get("Cpus", 0) for a in ads if isinstance(a.get("Cpus"), int) and a.get("SlotType") != "Dynamic")
    kind = "partitionable " if ads and all(a.get("SlotType") == "Partitionable" for a in ads) else ""
    return f"{len(ads)} {kind}slot{'s' if len(ads) != 1 else ''}, {cpus} cpus"
