"""``roost reconfig``: every daemon of the pool rereads its configuration (condor_reconfig).

Through the master, which needs ADMINISTRATOR: the pool's owner (with the token
``roost up`` gave them), root, or whoever ALLOW_ADMINISTRATOR names. What changes
while running: who may do what (ALLOW_*, DENY_*, SEC_*), UPDATE_INTERVAL; knobs a
daemon reads at start (ports, slot layout) need ``roost restart``.
"""

from __future__ import annotations

import argparse
import sys

from roost.api.errors import PoolError
from roost.api.pool import Pool
from roost.cli.options import add_pool_args


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost reconfig", add_help=False,
                                description="Make the pool's daemons reread their configuration.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-daemon", "--daemon", metavar="NAME",
                   help="only this daemon (master, collector, negotiator, schedd, startd)")
    add_pool_args(p, "master (a host)")
    ns = p.parse_args(argv)
    try:
        results = Pool().reconfig(ns.daemon, name=ns.name, pool=ns.pool)
    except PoolError as e:
        print(f"roost reconfig: {e}", file=sys.stderr)
        return 1
    failed = False
    for name, outcome in results.items():
        print(f"{name.lower()}: {outcome}")
        failed |= outcome not in ("reconfigured", "not running")
    return 1 if failed else 0
