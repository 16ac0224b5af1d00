"""Reaching the pool's negotiator (user priorities: ``roost userprio``, ``q -analyze``)."""

from __future__ import annotations

from roost.api.collector import Collector
from roost.api.connection import DaemonConnection
from roost.api.errors import PoolError
from roost.api.home import read_address, run_path


def negotiator_connection(home: str, timeout: float) -> DaemonConnection:
    """A connection to the negotiator: the address under ``run/``, else the one its
    Negotiator ad gives the collector (a central manager on another host). Without
    either, calls raise the usual no-pool / not-answering ``NoPoolError``."""
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
