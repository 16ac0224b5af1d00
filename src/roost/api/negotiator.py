"""Reaching the pool's negotiator (user priorities: ``roost userprio``, ``q -analyze``)."""

from __future__ import annotations

from roost.api.collector import Collector
from roost.api.connection import DaemonConnection
from roost.api.errors import PoolError
from roost.api.home import read_address, run_path


def negotiator_connection(home: str, timeout: float, *, name: str | None = None,
                          pool: str | None = None) -> DaemonConnection:
    """A connection to the negotiator: the address under ``run/``, else the one its
    Negotiator ad gives the collector (a central manager on another host). Without
    either, calls raise the usual no-pool / not-answering ``NoPoolError``. ``name``
    and/or ``pool`` (the collector's ``HOST[:PORT]``): the negotiator that pool's
    collector knows by that name (``condor_userprio -pool``); NoPoolError if none."""
    if name is not None or pool is not None:
        # lazy: only -name/-pool look the negotiator up by name
        from roost.api.locate import locate

        found = locate(home, "Negotiator", name, pool, timeout)
        conn = DaemonConnection(home, "negotiator", lambda: [found], timeout)
        conn.remote = True
        return conn
    addr = read_address(run_path(home, "negotiator.address"))
    if not addr:
        collector = Collector(home, timeout=timeout)
        try:
            ads = collector.query_objs("Negotiator", projection=["MyAddress"])
        except PoolError:
            ads = []
        finally:
            collector.close()
        addr = next((a["MyAddress"] for a in ads if isinstance(a.get("MyAddress"), str)), None)
    return DaemonConnection(home, "negotiator", lambda: [addr] if addr else [], timeout)
