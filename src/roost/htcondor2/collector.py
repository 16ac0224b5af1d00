"""``Collector``: htcondor2's query, locate and locateAll over :class:`roost.api.Collector`."""

from __future__ import annotations

from typing import Any

from roost.api.collector import Collector as ApiCollector
from roost.api.locate import pool_address
from roost.classad import ClassAd
from roost.htcondor2.enums import AD_MYTYPE, ANY_TYPES, DAEMON_MYTYPE, AdType, DaemonType
from roost.htcondor2.errors import HTCondorException, as_htcondor
from roost.net.adwire import obj_to_ad

#: what a location ad holds (htcondor2's locate returns these attributes)
LOCATION_ATTRS = ["MyType", "Name", "Machine", "MyAddress", "AddressV1", "CondorVersion", "CondorPlatform"]


class Collector:
    """The collector of the pool at $ROOST_HOME, or the one at ``pool`` (``HOST[:PORT]``,
    a list of them: the first; a location ad: its ``MyAddress``)."""

    def __init__(self, pool: str | ClassAd | list[str] | tuple[str, ...] | None = None,
                 security: Any = None) -> None:
        address = None
        if isinstance(pool, ClassAd):
            address = pool.get("MyAddress")
        elif isinstance(pool, (list, tuple)):
            address = pool[0] if pool else None
        elif pool is not None:
            address = pool
        if address is not None:
            try:
                address = pool_address(str(address))
            except ValueError as e:
                raise HTCondorException(str(e)) from None
        self._api = ApiCollector(address=address)

    def _query(self, my_type: str | None, constraint: str | None, projection: list[str] | None) -> list[ClassAd]:
        with as_htcondor():
            if my_type is None:
                objs = [o for t in ANY_TYPES for o in self._api.query_objs(t, constraint, projection)]
            else:
                objs = self._api.query_objs(my_type, constraint, projection)
        return [obj_to_ad(o) for o in objs]

    def query(self, ad_type: AdType = AdType.Any, constraint: str | None = None,
              projection: list[str] | None = None, statistics: str | None = None) -> list[ClassAd]:
        """The ads of ``ad_type`` matching ``constraint`` (every type roost's collector
        holds for ``AdType.Any``)."""
        if not isinstance(ad_type, AdType):
            raise TypeError("ad_type must be an AdType")
        if ad_type not in AD_MYTYPE:
            raise HTCondorException(f"roost's collector holds no {ad_type.name} ads")
        text = None if constraint is None else str(constraint)
        return self._query(AD_MYTYPE[ad_type], text, list(projection) if projection else None)

    def locateAll(self, daemon_type: DaemonType) -> list[ClassAd]:
        """A location ad for every daemon of ``daemon_type`` in the pool."""
        return self._query(self._my_type(daemon_type), None, LOCATION_ATTRS)

    def locate(self, daemon_type: DaemonType, name: str | None = None) -> ClassAd:
        """The location ad of the daemon called ``name`` (without one: the first such
        daemon); pass it to ``Schedd(...)``. HTCondorException when there is none."""
        my_type = self._my_type(daemon_type)
        ads = self.locateAll(daemon_type)
        if name is not None:
            ads = [a for a in ads if a.get("Name") == name] or [a for a in ads if a.get("Machine") == name]
        if not ads:
            raise HTCondorException(f"Unable to find {my_type} daemon" + (f" {name!r}" if name else ""))
        return ads[0]

    def directQuery(self, daemon_type: DaemonType, name: str | None = None,
                    projection: list[str] | None = None, statistics: str | None = None) -> ClassAd:
        """The daemon's full ad, as the collector holds it (roost's daemons answer no
        direct queries; their collector ads are kept current)."""
        found = self.locate(daemon_type, name)
        ads = self._query(self._my_type(daemon_type), f'Name == "{found.get("Name")}"',
                          list(projection) if projection else None)
        return ads[0] if ads else found

    @staticmethod
    def _my_type(daemon_type: DaemonType) -> str:
        if not isinstance(daemon_type, DaemonType):
            raise TypeError("daemon_type must be a DaemonType")
        my_type = DAEMON_MYTYPE.get(daemon_type)
        if my_type is None:
            raise HTCondorException(f"roost has no {daemon_type.name} daemon")
        return my_type

    def close(self) -> None:
        self._api.close()
