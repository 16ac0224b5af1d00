"""Finding a daemon by name through a pool's collector, as HTCondor's tools do for
``-name NAME -pool HOST[:PORT]``: the daemon's ad (``Name == NAME``, or a bare host
matching ``Machine``) gives its ``MyAddress``. Loaded only when a tool names a pool or
a daemon: a personal pool's ``roost q`` never imports this."""

from __future__ import annotations

import socket
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import NoPoolError, PoolError
from roost.net.addresses import collector_address

COLLECTOR_PORT = 9618

#: ad type -> the daemon's name in messages
DAEMONS = {"Scheduler": "schedd", "Negotiator": "negotiator", "Master": "master", "Collector": "collector",
           "Machine": "startd"}


def pool_address(pool: str) -> str:
    """``-pool HOST[:PORT]`` -> ``host:port`` (COLLECTOR_PORT, 9618, when omitted)."""
    text = pool.strip()
    if text.startswith("<") and text.endswith(">"):
        text = text[1:-1].split("?", 1)[0]
    if not text:
        raise ValueError("-pool needs a HOST[:PORT]")
    addr = collector_address(text, COLLECTOR_PORT)
    if addr is None:  # host:0
        raise ValueError(f"-pool {pool}: port 0 names no collector")
    return addr


def _matches(ad: dict[str, Any], name: str) -> bool:
    if ad.get("Name") == name:
        return True
    # a bare host: the daemon of that machine (HTCondor accepts `-name host` for `schedd@host` too)
    return "@" not in name and (ad.get("Machine") == name
                                or str(ad.get("Name", "")).rsplit("@", 1)[-1] == name)


def locate(home: str, ad_type: str, name: str | None, pool: str | None, timeout: float | None = 30.0) -> str:
    """The address of the ``ad_type`` daemon called ``name`` in the pool whose collector
    is at ``pool`` (this home's collector when None). Without a name: the only such
    daemon, else this host's. NoPoolError with one clear line when none fits."""
    try:
        address = pool_address(pool) if pool else None
    except ValueError as e:
        raise PoolError(str(e)) from None
    collector = Collector(home, address=address, timeout=timeout)
    where = address or (collector._addresses() or [f"ROOST_HOME={home}"])[0]
    daemon = DAEMONS.get(ad_type, ad_type.lower())
    try:
        ads = collector.query_objs(ad_type, projection=["Name", "Machine", "MyAddress"])
    finally:
        collector.close()
    ads = [a for a in ads if isinstance(a.get("MyAddress"), str) and a["MyAddress"]]
    if name is not None:
        hits = [a for a in ads if _matches(a, name)]
        if not hits:
            raise NoPoolError(f"no {daemon} named {name} in the pool at {where}")
        exact = [a for a in hits if a.get("Name") == name]
        return str((exact or hits)[0]["MyAddress"])
    if len(ads) == 1:
        return str(ads[0]["MyAddress"])
    host = socket.getfqdn()
    short = host.split(".", 1)[0]
    mine = [a for a in ads if a.get("Machine") in (host, short) or _matches(a, short)]
    if mine:
        return str(mine[0]["MyAddress"])
    if not ads:
        raise NoPoolError(f"no {daemon} in the pool at {where}")
    names = ", ".join(sorted(str(a.get("Name")) for a in ads))
    raise NoPoolError(f"the pool at {where} has several {daemon}s ({names}): name one with -name")
