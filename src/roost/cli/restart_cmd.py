"""``roost restart``: restart daemons of a host through its master (condor_restart).

Without ``-daemon`` every daemon the master runs is restarted, one after another;
each keeps its state (the schedd its queue, the startd its running jobs' starters).
``-name HOST`` (and ``-pool CM``) reaches another host's master; needs ADMINISTRATOR.
"""

from __future__ import annotations

import argparse
import sys

from roost.api.errors import PoolError
from roost.api.pool import Pool
from roost.cli.options import add_pool_args


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="roost restart", add_help=False,
                                description="Restart daemons of a host through its master.")
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("-daemon", "--daemon", metavar="NAME",
                   help="only this daemon (collector, negotiator, schedd, startd, or a local name)")
    add_pool_args(p, "master (a host)")
    ns = p.parse_args(argv)
    pool = Pool()
    try:
        names = [ns.daemon] if ns.daemon else pool.daemons(name=ns.name, pool=ns.pool)
        for daemon in names:
            pool.restart(daemon, name=ns.name, pool=ns.pool)
            print(f"{daemon.lower()}: restarting")
    except PoolError as e:
        print(f"roost restart: {e}", file=sys.stderr)
        return 1
    return 0
