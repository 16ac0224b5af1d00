"""``roost drain``, ``roost vacate``, ``roost off``, ``roost on``: the machine owner's commands.

They talk to a startd (docs/protocol.md, Startd): with no MACHINE, the one of
the personal pool under $ROOST_HOME (its ``run/startd.address``); with one,
the startd whose slot ads name that machine, found through the collector.

- ``drain [-graceful|-quick|-fast] [-reason R] [-cancel]``: stop taking new
  jobs; graceful lets running jobs finish within their MaxJobRetirementTime,
  quick vacates them (SIGTERM), fast kills them. The slots end Drained.
  ``-cancel`` (as condor_drain -cancel) offers the slots again.
- ``vacate [-fast]``: evict every job the startd runs (they go back to Idle).
- ``off`` / ``on``: stop / resume offering the slots; running jobs go on.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from roost.api.collector import Collector
from roost.api.connection import client_credentials
from roost.api.errors import PoolError
from roost.api.home import pool_home, read_address, run_path
from roost.cli.options import add_pool_args, collector_for
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient


class _Failed(Exception):
    pass


def _startd_address(machine: str | None, pool: str | None = None) -> str:
    home = pool_home()
    if machine is None and pool is not None:
        raise _Failed("with -pool, name the machine")
    if machine is None:
        addr = read_address(run_path(home, "startd.address"))
        if addr is None:
            if read_address(run_path(home, "master.address")) is None:
                raise _Failed(f"no pool is running (ROOST_HOME={home}): start one with `roost up`")
            raise _Failed(f"the pool at ROOST_HOME={home} runs no startd")
        return addr
    quoted = machine.replace("\\", "\\\\").replace('"', '\\"')
    try:
        c = Collector(address=collector_for(pool))
        try:
            ads = c.query_objs("Machine", f'Machine == "{quoted}" || Name == "{quoted}"', ["MyAddress"])
        finally:
            c.close()
    except (PoolError, ValueError) as e:
        raise _Failed(str(e)) from None
    for ad in ads:
        if isinstance(ad.get("MyAddress"), str) and ad["MyAddress"]:
            return str(ad["MyAddress"])
    raise _Failed(f"no startd for machine {machine!r} is known to the collector"
                  + (f" at {collector_for(pool)}" if pool else ""))


def _call(machine: str | None, cmd: str, pool: str | None = None, **args: Any) -> dict[str, Any]:
    address = _startd_address(machine, pool)
    client = SyncClient(address, timeout=30.0, **client_credentials(pool_home(), address))
    try:
        return client.call(cmd, **args)
    except RemoteError as e:
        raise _Failed(f"the startd refused {cmd}: {e.message}") from None
    except (ConnectionError, OSError) as e:
        raise _Failed(f"cannot reach the startd at {address}: {e}") from None
    finally:
        client.close()


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"roost {prog}", add_help=False, description=description)
    p.add_argument("-h", "-help", "--help", action="help", help="show this help and exit")
    p.add_argument("machine", nargs="?", default=None, metavar="MACHINE",
                   help="the machine (default: this pool's own startd)")
    add_pool_args(p, daemon="startd")
    return p


def _machine(ns: Any) -> str | None:
    """MACHINE, or -name MACHINE (condor_off/condor_vacate's spelling)."""
    if ns.machine and ns.name and ns.machine != ns.name:
        raise SystemExit(f"roost: give the machine once (MACHINE or -name), not {ns.machine} and {ns.name}")
    ns.machine = ns.machine or ns.name
    return ns.machine


def _run(prog: str, fn: Any) -> int:
    try:
        line = fn()
    except _Failed as e:
        print(f"roost {prog}: {e}", file=sys.stderr)
        return 1
    print(line)
    return 0


def main_drain(argv: list[str]) -> int:
    p = _parser("drain", "Stop a machine taking new jobs and let it empty (condor_drain).")
    how = p.add_mutually_exclusive_group()
    how.add_argument("-graceful", "--graceful", dest="how", action="store_const", const="graceful",
                     help="let running jobs finish within their retirement time (the default)")
    how.add_argument("-quick", "--quick", dest="how", action="store_const", const="quick",
                     help="vacate running jobs (SIGTERM, then SIGKILL after their vacate time)")
    how.add_argument("-fast", "--fast", dest="how", action="store_const", const="fast",
                     help="kill running jobs at once")
    how.add_argument("-cancel", "--cancel", dest="how", action="store_const", const="cancel",
                     help="stop draining: offer the slots again")
    p.add_argument("-reason", "--reason", default=None, metavar="R", help="why (shown as DrainReason)")
    ns = p.parse_args(argv)
    where = _machine(ns) or "this machine"

    def go() -> str:
        if ns.how == "cancel":
            _call(ns.machine, "CANCEL_DRAIN", ns.pool)
            return f"Drain of {where} cancelled"
        args: dict[str, Any] = {"how": ns.how or "graceful"}
        if ns.reason:
            args["reason"] = ns.reason
        got = _call(ns.machine, "DRAIN", ns.pool, **args)
        return f"Sent {args['how']} drain to {where} ({got.get('claims', 0)} claims to empty)"

    return _run("drain", go)


def main_vacate(argv: list[str]) -> int:
    p = _parser("vacate", "Evict every job a machine runs; the jobs go back to Idle (condor_vacate).")
    p.add_argument("-fast", "--fast", action="store_true", help="kill the jobs at once (no SIGTERM first)")
    ns = p.parse_args(argv)
    _machine(ns)

    def go() -> str:
        got = _call(ns.machine, "VACATE", ns.pool, fast=bool(ns.fast))
        return f"Sent {'fast ' if ns.fast else ''}vacate to {ns.machine or 'this machine'} ({got.get('jobs', 0)} jobs)"

    return _run("vacate", go)


def _switch(argv: list[str], prog: str, cmd: str, description: str, done: str) -> int:
    """``roost off`` / ``roost on``: a machine's slots; with ``-daemon NAME``, one daemon
    of a host, through its master (condor_off/condor_on -daemon)."""
    p = _parser(prog, description)
    p.add_argument("-daemon", "--daemon", metavar="NAME",
                   help="stop (off) or start (on) this daemon of the host instead, through its master")
    # condor_off/condor_on's subsystem flags: -startd is -daemon STARTD
    for sub in ("master", "startd", "schedd", "collector", "negotiator"):
        p.add_argument(f"-{sub}", f"--{sub}", dest="daemon", action="store_const", const=sub.upper(),
                       help=f"-daemon {sub.upper()}")
    if prog == "off":
        p.add_argument("-fast", "--fast", action="store_true", help="with -daemon: kill it, no graceful stop")
        p.add_argument("-graceful", "--graceful", action="store_true", help="with -daemon: the default")
    ns = p.parse_args(argv)
    _machine(ns)
    if ns.daemon:
        return _daemon_switch(prog, ns)

    def go() -> str:
        _call(ns.machine, cmd, ns.pool)
        return f"{ns.machine or 'This machine'} {done}"

    return _run(prog, go)


def _daemon_switch(prog: str, ns: Any) -> int:
    # lazy: only -daemon speaks to a master
    from roost.api.errors import PoolError
    from roost.api.pool import Pool

    try:
        if prog == "off":
            Pool().daemon_off(ns.daemon, fast=bool(ns.fast), name=ns.machine, pool=ns.pool)
        else:
            Pool().daemon_on(ns.daemon, name=ns.machine, pool=ns.pool)
    except PoolError as e:
        print(f"roost {prog}: {e}", file=sys.stderr)
        return 1
    print(f"{ns.daemon.lower()} on {ns.machine or 'this host'}: turned {prog}")
    return 0


def main_off(argv: list[str]) -> int:
    return _switch(argv, "off", "SET_OFF", "Stop offering a machine's slots (running jobs go on).",
                   "no longer offers its slots")


def main_on(argv: list[str]) -> int:
    return _switch(argv, "on", "SET_ON", "Offer a machine's slots again after `roost off`.",
                   "offers its slots again")


def main(argv: list[str]) -> int:
    return main_drain(argv)
