"""``param``: the pool's configuration as a mapping (htcondor2's ``param``), read from
$ROOST_CONFIG or $ROOST_HOME/roost_config on first use; knobs HTCondor types are
``int``/``float``/``bool`` (:mod:`roost.htcondor2.param_types`). Assignments change this
process's view only, as in htcondor2, until :func:`reload_config`. Lookups are those
of the subsystem :func:`set_subsystem` names (``TOOL`` until then): ``SCHEDD.FOO``
before ``FOO`` for a process that calls itself a schedd."""

from __future__ import annotations

import os
from collections.abc import Iterator, MutableMapping
from typing import Any

from roost.htcondor2.enums import SubsystemType
from roost.htcondor2.errors import HTCondorException
from roost.htcondor2.param_types import BOOL_KNOBS, FLOAT_KNOBS, INT_KNOBS

_TRUE = frozenset({"true", "yes", "t", "on"})
_FALSE = frozenset({"false", "no", "f", "off"})


def _is_typed(name: str) -> bool:
    base = name.rsplit(".", 1)[-1]
    return base in INT_KNOBS or base in FLOAT_KNOBS or base in BOOL_KNOBS


def _typed(name: str, value: str) -> Any:
    """``value`` as the type HTCondor's table gives knob ``name`` (arithmetic such as
    ``5 * 60`` evaluated); a number roost reads with a fraction (``0.5`` seconds) stays
    a float. Untyped knobs stay strings."""
    if not _is_typed(name):
        return value
    base = name.rsplit(".", 1)[-1]
    # lazy: only typed knobs need the arithmetic
    from roost.config.arith import ArithError, evaluate

    text = value.strip()
    if base in BOOL_KNOBS and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    try:
        number = evaluate(text)
    except ArithError:
        kind = "a boolean" if base in BOOL_KNOBS else "a number"
        raise HTCondorException(f"{name} = {value!r} is not {kind}") from None
    if base in BOOL_KNOBS:
        return bool(number)
    if base in INT_KNOBS and float(number).is_integer():
        return int(number)
    return float(number)


class _Param(MutableMapping[str, Any]):
    def __init__(self) -> None:
        self._config: Any = None
        self._set: dict[str, str] = {}
        self._subsys = "TOOL"
        self._root: str | None = None

    def _cfg(self) -> Any:
        if self._config is None:
            # lazy: the configuration parser only when a value is asked for
            from roost.config import Config, ConfigError

            env = dict(os.environ)
            if self._root is not None:
                env["ROOST_CONFIG"] = self._root
            try:
                self._config = Config.load(env=env, subsys=self._subsys)
            except ConfigError as e:
                raise HTCondorException(str(e)) from e
        return self._config

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str):
            raise TypeError("key must be a string")
        up = key.upper()
        # a value this process set counts as if it were in the files: SUBSYS.NAME wins
        # over NAME wherever each came from
        for name in ([up] if "." in up else [f"{self._subsys}.{up}", up]):
            value = self._set.get(name)
            if value is None:
                value = self._cfg().get(name)
            if value is not None and (value.strip() or not _is_typed(name)):
                return _typed(name, value)  # an empty number or boolean counts as unset, as in roost
        raise KeyError(key)

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

    def reload(self, root_config_file: str | None = None) -> None:
        """Forget this process's assignments and read the files again."""
        self._set.clear()
        self._root = root_config_file
        self._config = None

    @property
    def subsystem(self) -> str:
        """The subsystem lookups are made for (``TOOL`` until :func:`set_subsystem`)."""
        return self._subsys

    def set_subsystem(self, name: str) -> None:
        self._subsys = name.upper()
        self._config = None  # the files' SUBSYS.NAME entries are looked up for the new name


param = _Param()


def reload_config(root_config_file: str | None = None) -> None:
    """Read the configuration again, dropping values set through ``param``;
    ``root_config_file`` is read in place of $ROOST_CONFIG (as CONDOR_CONFIG would be)."""
    if root_config_file is not None and not isinstance(root_config_file, str):
        raise TypeError("root_config_file must be a string")
    param.reload(root_config_file)


def set_subsystem(name: str, daemon_type: SubsystemType = SubsystemType.Auto, /) -> None:
    """Look configuration up as the subsystem ``name`` (``SCHEDD``, ``TOOL`` …) does:
    ``NAME.KNOB`` entries then win over ``KNOB``. ``daemon_type`` is accepted for
    htcondor2's sake; roost's configuration depends on the name only."""
    if not isinstance(name, str):
        raise TypeError(f"argument 1 must be str, not {type(name).__name__}")
    if not isinstance(daemon_type, SubsystemType):
        raise TypeError("daemon_type must be of type htcondor2.SubsystemType")
    if not name.strip() or any(c.isspace() or c == "." for c in name.strip()):
        raise ValueError(f"not a subsystem name: {name!r}")
    param.set_subsystem(name.strip())
