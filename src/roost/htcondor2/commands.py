"""``send_command``: htcondor2's way to reconfigure, restart and turn off daemons,
over roost's master commands (RECONFIG, RESTART_DAEMON, DAEMON_OFF, DAEMON_ON,
SHUTDOWN; docs/protocol.md), sent to the daemon at the location ad's ``MyAddress``.

roost's daemons are managed through their master, so a command for a master ad does
what HTCondor's master does with it; to another daemon's ad only ``Reconfig`` goes
(every roost daemon takes RECONFIG) — the others raise, naming the master's way.
"""

from __future__ import annotations

from typing import Any

from roost.api.connection import DaemonConnection
from roost.api.home import pool_home
from roost.classad import ClassAd
from roost.htcondor2.enums import DaemonCommand
from roost.htcondor2.errors import HTCondorException, as_htcondor

#: MyType -> roost's name of that daemon (its DAEMON_LIST entry)
_DAEMONS = {"Master": "master", "Scheduler": "schedd", "Machine": "startd", "Collector": "collector",
            "Negotiator": "negotiator"}
#: commands to one daemon of a master (target: its DAEMON_LIST name) -> (master command, fast)
_ONE = {DaemonCommand.DaemonOff: ("DAEMON_OFF", False), DaemonCommand.DaemonOffFast: ("DAEMON_OFF", True),
        DaemonCommand.DaemonOn: ("DAEMON_ON", False)}
#: commands to every daemon of a master
_EVERY = {DaemonCommand.DaemonsOff: ("DAEMON_OFF", False), DaemonCommand.DaemonsOffPeaceful: ("DAEMON_OFF", False),
          DaemonCommand.DaemonsOffFast: ("DAEMON_OFF", True), DaemonCommand.DaemonsOn: ("DAEMON_ON", False),
          DaemonCommand.Restart: ("RESTART_DAEMON", False), DaemonCommand.RestartPeaceful: ("RESTART_DAEMON", False)}
#: commands that stop the master and all of its daemons -> fast
_SHUTDOWN = {DaemonCommand.OffGraceful: False, DaemonCommand.OffPeaceful: False, DaemonCommand.OffFast: True,
             DaemonCommand.OffForce: True}


def send_command(ad: ClassAd, dc: DaemonCommand, target: str | None = None) -> None:
    """Send ``dc`` to the daemon ``ad`` locates (from :meth:`Collector.locate`);
    ``target`` is the daemon a master's ``DaemonOn``/``DaemonOff``/``Restart``/
    ``Reconfig`` is for (``"SCHEDD"``). ``Restart`` without one restarts every daemon
    of the master (the master itself keeps running)."""
    if not isinstance(ad, ClassAd):
        raise TypeError("ad must be a classad2.ClassAd")
    if not isinstance(dc, DaemonCommand):
        raise TypeError("dc must be an htcondor2.DaemonCommand")
    if target is not None and not isinstance(target, str):
        raise TypeError("target must be a string")
    address = ad.get("MyAddress")
    if not isinstance(address, str) or not address:
        raise ValueError("Address not available in location ClassAd.")
    my_type = ad.get("MyType")
    if my_type is None:
        raise ValueError("Daemon type not available in location ClassAd.")
    daemon = _DAEMONS.get(str(my_type))
    if daemon is None:
        raise ValueError("Unknown daemon type.")
    if dc in (DaemonCommand.SetForceShutdown, DaemonCommand.SetPeacefulShutdown):
        raise HTCondorException(f"roost's daemons have no peaceful-shutdown mode ({dc.name})")
    if daemon != "master" and dc is not DaemonCommand.Reconfig:
        raise HTCondorException(f"roost manages its {daemon} through the master: send {dc.name} to the "
                                f"master's location ad with target {daemon.upper()!r}")
    conn = DaemonConnection(pool_home(None), daemon, lambda: [address], 30.0)
    conn.remote = True
    try:
        with as_htcondor():
            _send(conn, daemon, dc, target)
    finally:
        conn.close()


def _send(conn: DaemonConnection, daemon: str, dc: DaemonCommand, target: str | None) -> None:
    if dc is DaemonCommand.Reconfig:
        conn.call("RECONFIG", **({"daemon": target} if target and daemon == "master" else {}))
    elif dc in _SHUTDOWN:
        conn.call("SHUTDOWN", fast=_SHUTDOWN[dc])
    elif dc in _ONE:
        if not target:
            raise HTCondorException(f"{dc.name} needs the target daemon's name (such as 'SCHEDD')")
        cmd, fast = _ONE[dc]
        conn.call(cmd, name=target.upper(), **({"fast": True} if fast else {}))
    elif dc in _EVERY:
        cmd, fast = _EVERY[dc]
        names = [target.upper()] if target else sorted(_status(conn))
        for name in names:
            conn.call(cmd, name=name, **({"fast": True} if fast else {}))
    else:  # pragma: no cover - every member is handled above
        raise HTCondorException(f"roost cannot send {dc.name}")


def _status(conn: DaemonConnection) -> dict[str, Any]:
    return dict(conn.call("STATUS").get("daemons") or {})
