"""``Collector``: query the ads daemons advertise (slots, schedds, submitters ...)."""

from __future__ import annotations

import os
from typing import Any

from roost.api.connection import DaemonConnection
from roost.api.home import pool_home, read_address, run_path

#: htcondor2.AdType names -> the ad's MyType
ALIASES = {"startd": "Machine", "schedd": "Scheduler", "machine": "Machine", "scheduler": "Scheduler",
           "submitter": "Submitter", "negotiator": "Negotiator", "master": "Master", "collector": "Collector"}


def ad_type_name(ad_type: object) -> str:
    """``"Machine"``, ``"Startd"`` or ``htcondor2.AdType.Startd`` -> ``"Machine"``."""
    name = getattr(ad_type, "name", None) or str(ad_type)
    return ALIASES.get(name.lower(), name)


class Collector:
    """A client of the collector of the pool at ``home``; ``address`` overrides it."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, address: str | None = None,
                 timeout: float | None = 60.0) -> None:
        self.home = pool_home(home)
        self._conn = DaemonConnection(self.home, "collector", self._addresses, timeout)
        self._address = address

    def _addresses(self) -> list[str]:
        addr = self._address or read_address(run_path(self.home, "collector.address"))
        return [addr] if addr else []

    def query_objs(self, ad_type: Any = "Machine", constraint: str | None = None,
                   projection: list[str] | None = None) -> list[dict[str, Any]]:
        """Ads as JSON-form dicts."""
        args: dict[str, Any] = {"type": ad_type_name(ad_type)}
        if constraint:
            args["constraint"] = constraint
        if projection:
            args["projection"] = list(projection)
        return list(self._conn.call("QUERY", **args).get("ads") or [])

    def query(self, ad_type: Any = "Machine", constraint: str | None = None,
              projection: list[str] | None = None) -> list[Any]:
        """Ads as ClassAds (``htcondor2.Collector.query``)."""
        # lazy: only query() builds ClassAds; `roost status` (query_objs) never loads the library (~25 ms)
        from roost.net.adwire import obj_to_ad

        return [obj_to_ad(o) for o in self.query_objs(ad_type, constraint, projection)]

    def close(self) -> None:
        self._conn.close()
