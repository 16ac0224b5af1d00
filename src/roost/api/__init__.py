"""roost's Python client API: talk to a running pool from Python.

``Schedd`` (submit, query, act, history, wait), ``Collector`` (query ads) and
``Pool`` (start, status, stop a personal pool), shaped after HTCondor's
``htcondor2`` bindings so users switch with little change. Job ids are
written as HTCondor users write them: ``"12"`` (a cluster) or ``"12.3"``.

Submodules are imported on first use: ``roost q`` pays only for the blocking
client, never for asyncio or the submit language.
"""

from __future__ import annotations

import importlib
from typing import Any

from roost.api.errors import NoPoolError, PoolError

__all__ = ["Collector", "NoPoolError", "Pool", "PoolError", "Schedd"]

_LAZY = {
    "Schedd": "roost.api.schedd",
    "Collector": "roost.api.collector",
    "Pool": "roost.api.pool",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'roost.api' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    """The public names, the lazily imported classes among them (``dir(roost.api)``)."""
    return sorted(set(globals()) | set(__all__))
