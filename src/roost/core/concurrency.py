"""Concurrency limits: how many running jobs may hold a named license at once.

Its own module because three parts read them and none should load the others: the
matchmaker caps the jobs it matches (:func:`concurrency_room`), the negotiator counts
what running jobs hold (:func:`parse_concurrency_limits` of each slot's
``ConcurrencyLimits``), and ``q -analyze`` explains a job that waits for one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# HTCondor's CONCURRENCY_LIMIT_DEFAULT when the knob is not set
DEFAULT_CONCURRENCY_LIMIT = 2308032.0

_EPS = 1e-9


@dataclass
class ConcurrencyLimits:
    """The negotiator's concurrency limits (``<NAME>_LIMIT``, ``CONCURRENCY_LIMIT_DEFAULT``,
    ``CONCURRENCY_LIMIT_DEFAULT_<GROUP>``) and what running jobs hold now.

    Names are case-insensitive (keys lower case). A name without its own
    limit uses ``group_defaults[prefix]`` when it has the form ``prefix.rest``
    and the prefix has one (HTCondor's group defaults), else ``default``.
    """

    limits: dict[str, float] = field(default_factory=dict)
    default: float = DEFAULT_CONCURRENCY_LIMIT
    in_use: dict[str, float] = field(default_factory=dict)
    group_defaults: dict[str, float] = field(default_factory=dict)

    def limit_of(self, name: str) -> float:
        k = name.lower()
        v = self.limits.get(k)
        if v is not None:
            return float(v)
        prefix, dot, _ = k.partition(".")
        if dot and prefix in self.group_defaults:
            return float(self.group_defaults[prefix])
        return float(self.default)


_SPLIT = re.compile(r"[,\s]+")


def parse_concurrency_limits(text: Any) -> dict[str, float] | None:
    """A job's ``ConcurrencyLimits`` (``"license:2, db"``) as {lower name: amount};
    amounts default to 1, repeated names add up. None when the text is malformed
    (a non-numeric or negative amount): such a job is never matched, rather than
    run past a license."""
    if type(text) is not str:
        return {}
    out: dict[str, float] = {}
    for tok in _SPLIT.split(text.strip()):
        if not tok:
            continue
        name, colon, amount = tok.partition(":")
        name = name.strip().lower()
        if not name:
            return None
        n = 1.0
        if colon:
            try:
                n = float(amount)
            except ValueError:
                return None
            if not math.isfinite(n) or n < 0:
                return None
        out[name] = out.get(name, 0.0) + n
    return out


def concurrency_room(
    needs: dict[str, float], concurrency: ConcurrencyLimits, used: Mapping[str, float]
) -> int | None:
    """How many jobs needing ``needs`` still fit under the limits (None: no bound)."""
    room: int | None = None
    for name, amount in needs.items():
        if amount <= 0:
            continue
        left = concurrency.limit_of(name) - concurrency.in_use.get(name, 0.0) - used.get(name, 0.0)
        n = max(0, math.floor((left + _EPS) / amount))
        room = n if room is None else min(room, n)
    return room


__all__ = [
    "DEFAULT_CONCURRENCY_LIMIT",
    "ConcurrencyLimits",
    "concurrency_room",
    "parse_concurrency_limits",
]
