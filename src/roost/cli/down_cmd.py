"""``roost down``: stop the personal pool under ROOST_HOME (its daemons, then the master)."""

from __future__ import annotations

import argparse
import sys

from roost.api.errors import PoolError
from roost.api.pool import Pool


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost down", add_help=False,
                                description="Stop the pool under $ROOST_HOME and wait until it has exited.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-fast", "--fast", action="store_true",
                   help="give daemons one second to stop before killing them")
    p.add_argument("-timeout", "--timeout", type=float, default=60.0,
                   help="seconds to wait for the master to exit (default 60)")
    ns = p.parse_args(argv)
    pool = Pool()
    try:
        stopped = pool.stop(timeout=ns.timeout, fast=ns.fast)
    except PoolError as e:
        print(f"roost down: {e}", file=sys.stderr)
        return 1
    if not stopped:
        print(f"roost down: no pool is running (ROOST_HOME={pool.home})")
        return 0
    print(f"roost pool stopped (ROOST_HOME={pool.home})")
    return 0
