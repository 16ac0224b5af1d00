"""``param``: the pool's configuration as a mapping (htcondor2's ``param``), read from
$ROOST_CONFIG or $ROOST_HOME/roost_config on first use. Assignments change this
process's view only, as in htcondor2."""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from typing import Any

from roost.htcondor2.errors import HTCondorException


class _Param(MutableMapping[str, str]):
    def __init__(self) -> None:
        self._config: Any = None
        self._set: dict[str, str] = {}

    def _cfg(self) -> Any:
        if self._config is None:
            # lazy: the configuration parser only when a value is asked for
            from roost.config import Config, ConfigError

            try:
                self._config = Config.load(env=os.environ, subsys="TOOL")
            except ConfigError as e:
                raise HTCondorException(str(e)) from e
        return self._config

    def __getitem__(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        up = key.upper()
        if up in self._set:
            return self._set[up]
        value = self._cfg().get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("key and value must be strings")
        self._set[key.upper()] = value

    def __delitem__(self, key: str) -> None:
        if key.upper() not in self._set:
            raise KeyError(key)
        del self._set[key.upper()]

    def __iter__(self) -> Iterator[str]:
        names = dict.fromkeys(n.upper() for n in self._cfg().names())
        names.update(dict.fromkeys(self._set))
        return iter(list(names))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def reload(self) -> None:
        """Read the configuration again (htcondor2.reload_config)."""
        self._config = None


param = _Param()


def reload_config() -> None:
    """Read the configuration files again."""
    param.reload()
