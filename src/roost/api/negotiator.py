"""Reaching the pool's negotiator (user priorities: ``roost userprio``, ``q -analyze``,
the dashboard's job page)."""

from __future__ import annotations

from typing import Any

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


def priority_name(job: dict[str, Any]) -> str | None:
    """The name the negotiator's USERPRIO table gives the job's submitter
    (``group.user`` for a job in an accounting group)."""
    user, group = job.get("User") or job.get("Owner"), job.get("AcctGroup")
    if isinstance(user, str) and isinstance(group, str) and group:
        return f"{group}.{user}"
    return user if isinstance(user, str) else None


def negotiator_view(home: str, pool: str | None = None
                    ) -> tuple[list[dict[str, Any]] | None, Any, list[dict[str, Any]] | None]:
    """The negotiator's USERPRIO table, its concurrency limits (a ConcurrencyLimits) and
    accounting groups (LIMITS); each None when it cannot answer (not running, too old)."""
    # lazy: only q -analyze and the dashboard's job page read the limits
    from roost.core.concurrency import ConcurrencyLimits

    try:
        conn = negotiator_connection(home, 5.0, pool=pool)
    except PoolError:
        return None, None, None
    try:
        try:
            users = conn.call("USERPRIO").get("users")
        except (PoolError, OSError):
            return None, None, None
        try:
            got = conn.call("LIMITS")
        except (PoolError, OSError):
            got = {}
    finally:
        conn.close()
    users = [u for u in users if isinstance(u, dict)] if isinstance(users, list) else None
    cl, limits = got.get("concurrency"), None
    if isinstance(cl, dict):
        def numbers(key: str) -> dict[str, float]:
            d = cl.get(key)
            return {str(k).lower(): float(v) for k, v in d.items()
                    if type(v) in (int, float)} if isinstance(d, dict) else {}
        default = cl.get("default")
        limits = ConcurrencyLimits(limits=numbers("limits"), in_use=numbers("in_use"),
                                   group_defaults=numbers("group_defaults"))
        if type(default) in (int, float):
            limits.default = float(default)
    groups = got.get("groups")
    groups = [g for g in groups if isinstance(g, dict)] if isinstance(groups, list) else None
    return users, limits, groups
