"""``RemoteParam``: another daemon's configuration as a mapping (htcondor2's), read
with CONFIG_VAL from the daemon at the location ad's ``MyAddress``: each value as that
daemon expands it, a string, as in htcondor2. roost's daemons keep no runtime
configuration, so assigning or deleting raises, saying how to change a knob instead."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

from roost.api.connection import DaemonConnection
from roost.api.home import pool_home
from roost.classad import ClassAd
from roost.htcondor2.errors import HTCondorException, as_htcondor


class RemoteParam(MutableMapping[str, str]):
    """The configuration of the daemon ``location`` (from :meth:`Collector.locate`)
    names; names are fetched once (:meth:`refresh` fetches them again), values on first
    use."""

    def __init__(self, location: ClassAd) -> None:
        if not isinstance(location, ClassAd):
            raise TypeError("location must be a classad2.ClassAd")
        address = location.get("MyAddress")
        if not isinstance(address, str) or not address:
            raise HTCondorException("the location ad has no MyAddress")
        self._address = address
        self._what = str(location.get("MyType") or "daemon").lower()
        self._keys: dict[str, str] = {}
        self._cache: dict[str, str | None] = {}
        self.refresh()

    def _call(self, **args: Any) -> dict[str, Any]:
        conn = DaemonConnection(pool_home(None), self._what, lambda: [self._address], 30.0)
        conn.remote = True
        try:
            with as_htcondor():
                return conn.call("CONFIG_VAL", **args)
        finally:
            conn.close()

    def refresh(self) -> None:
        """Fetch the daemon's knob names again and forget the values read."""
        names = self._call().get("names") or []
        self._keys = {str(n).upper(): str(n) for n in names}
        self._cache = {}

    def __getitem__(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        up = key.upper()
        if up not in self._keys:
            raise KeyError(key)
        if up not in self._cache:
            self._cache[up] = (self._call(names=[self._keys[up]]).get("values") or {}).get(self._keys[up])
        value = self._cache[up]
        if value is None:
            raise KeyError(key)
        return value

    def _refuse(self, key: str) -> HTCondorException:
        return HTCondorException(
            f"roost's daemons take no runtime configuration (ENABLE_RUNTIME_CONFIG): set {key} in the "
            "daemon's configuration file and reconfigure it (send_command(ad, DaemonCommand.Reconfig))")

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if not isinstance(value, str):
            raise TypeError("value must be a string")
        raise self._refuse(key)

    def __delitem__(self, key: str) -> None:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        if key.upper() not in self._keys:
            raise KeyError(key)
        raise self._refuse(key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys.values()))

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.upper() in self._keys
