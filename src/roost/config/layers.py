"""The layers around the files: defaults and host facts below, ``_ROOST_*`` above.

Shared by ``Config.from_text`` (facts given) and the loader (facts detected),
so neither has to import the other for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from roost.config.defaults import DEFAULTS
from roost.config.parser import ParseState, resolve_self_reference
from roost.config.table import Entry

ENV_PREFIX = "_ROOST_"

DEFAULT_LAYER: Mapping[str, Entry] = MappingProxyType(
    {key: Entry(k.name, k.default, "<default>", 0) for key, k in DEFAULTS.items()}
)


def facts_layer(facts: Mapping[str, str]) -> dict[str, Entry]:
    """Host facts (detected by the loader, or given by a test) as the lowest layer."""
    return {k.upper(): Entry(k, v, "<detected>", 0) for k, v in facts.items()}


def apply_env_overrides(state: ParseState, env: Mapping[str, str]) -> None:
    """``_ROOST_NAME=value`` in the environment beats every file, as ``_CONDOR_NAME`` does."""
    for key, value in env.items():
        if key.upper().startswith(ENV_PREFIX) and len(key) > len(ENV_PREFIX):
            name = key[len(ENV_PREFIX) :]
            value = resolve_self_reference(state, name, value)
            state.table[name.upper()] = Entry(name, value, f"environment ({key})", 0)
