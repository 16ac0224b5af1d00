"""``Collector``: query the ads daemons advertise (slots, schedds, submitters ...)."""

from __future__ import annotations

import os
from typing import Any

from roost.api.connection import DaemonConnection
from roost.api.home import pool_home, read_address, run_path
from roost.net.addresses import collector_address

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
        """``address``, else the address this home's collector published (a personal
        pool, a central manager), else ``COLLECTOR_HOST`` of this home's configuration:
        a submit or execute host's tools reach the central manager as its daemons do.
        The configuration is read only then, so a personal pool's tools never pay for it."""
        addr = self._address or read_address(run_path(self.home, "collector.address"))
        if addr is None:
            addr = self._configured_address()
        return [addr] if addr else []

    def _configured_address(self) -> str | None:
        if not os.environ.get("ROOST_CONFIG") and not os.path.exists(os.path.join(self.home, "roost_config")):
            return None  # no pool was ever set up here: "no pool is running", not a guess
        # lazy: only a host without a collector of its own parses the configuration (~25 ms)
        from roost.config import Config, ConfigError

        try:
            cfg = Config.load(env={**os.environ, "ROOST_HOME": self.home})
        except ConfigError:
            return None
        if not cfg.files:
            return None
        return collector_address(cfg.get("COLLECTOR_HOST") or "", cfg.get_int("COLLECTOR_PORT", 9618) or 9618)

    def query_objs(self, ad_type: Any = "Machine", constraint: str | None = None,
                   projection: list[str] | None = None) -> list[dict[str, Any]]:
        """Ads as JSON-form dicts."""
        args: dict[str, Any] = {"type": ad_type_name(ad_type)}
        if constraint:
            args["constraint"] = constraint
        if projection:
            args["projection"] = list(projection)
        return list(self._conn.call("QUERY", **args).get("ads") or [])

    def query_grouped(self, ad_type: Any, constraint: str | None,
                      projection: list[str]) -> tuple[list[dict[str, Any]], list[int]]:
        """The distinct projected ads, each with how many ads it stands for: a summary of
        100,000 slots costs a few rows. (A collector that does not group answers every
        ad, each standing for one.)"""
        args: dict[str, Any] = {"type": ad_type_name(ad_type), "projection": list(projection), "group": True}
        if constraint:
            args["constraint"] = constraint
        got = self._conn.call("QUERY", **args)
        ads = list(got.get("ads") or [])
        counts = got.get("counts")
        if not isinstance(counts, list) or len(counts) != len(ads) or not all(type(n) is int for n in counts):
            counts = [1] * len(ads)
        return ads, counts

    def query(self, ad_type: Any = "Machine", constraint: str | None = None,
              projection: list[str] | None = None) -> list[Any]:
        """Ads as ClassAds (``htcondor2.Collector.query``)."""
        # lazy: only query() builds ClassAds; `roost status` (query_objs) never loads the library (~25 ms)
        from roost.net.adwire import obj_to_ad

        return [obj_to_ad(o) for o in self.query_objs(ad_type, constraint, projection)]

    def close(self) -> None:
        self._conn.close()
