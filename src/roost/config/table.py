"""Where a knob's raw value lives, and the order names are looked up in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One assignment: the name as written, its raw (unexpanded) value, where it came from.

    ``via`` names the ``use`` template that produced it, if any, so
    ``roost config -v`` can say why a knob has a value nobody typed.
    """

    name: str
    value: str
    file: str
    line: int
    via: str | None = None


def candidates(name: str, subsys: str | None, localname: str | None) -> list[str]:
    """Keys to try for ``name``, most specific first: LOCALNAME.NAME, SUBSYS.NAME, NAME.

    An already-qualified name (``SCHEDD.FOO``) is looked up as written.
    """
    key = name.upper()
    keys = []
    if localname:
        keys.append(f"{localname.upper()}.{key}")
    if subsys:
        keys.append(f"{subsys.upper()}.{key}")
    keys.append(key)
    return keys


def find(
    name: str,
    layers: list[Mapping[str, Entry]],
    subsys: str | None,
    localname: str | None,
) -> Entry | None:
    """Look ``name`` up through ``layers`` (config, then defaults, then facts).

    Each layer is searched for every qualified form before the next layer,
    so a ``SCHEDD.X`` in a file beats a plain ``X`` default, and a plain
    ``X`` in a file beats a ``SCHEDD.X`` default.
    """
    keys = candidates(name, subsys, localname)
    for layer in layers:
        for key in keys:
            entry = layer.get(key)
            if entry is not None:
                return entry
    return None
