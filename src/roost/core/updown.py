"""Up-Down: the seeds' schedule index, which orders submit machines instead of users.

The original Condor shared remote capacity between *workstations*: each
submit machine (a schedd, here) has a schedule index, lower is better.

- a station that holds remote capacity goes **up**: its index grows with the
  slot weight it holds (``up`` per weight-hour);
- a station that wants capacity and holds none goes **down** (``down`` per
  hour of waiting), so a light user who waits soon outranks a heavy one;
- a station that neither holds nor wants drifts back towards 0 (``decay``
  per hour), so old history fades.

Capacity goes to the waiting station with the lowest index first (strict
order, not a pie), and with preemption on, a lower index may take a slot from
a higher one (:func:`preemption_priority` turns indexes into the positive,
lower-is-better numbers ``PREEMPTION_REQUIREMENTS`` compares).

Pure: time is a parameter; :class:`UpDown` round-trips through JSON.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_HOUR = 3600.0
_CLAMP = 1000.0  # |index| beyond this changes no order that matters, and 2**index stays finite


@dataclass
class UpDownRates:
    up: float = 1.0     # index gained per weight-hour held
    down: float = 1.0   # index lost per hour waiting with nothing held
    decay: float = 1.0  # index moved towards 0 per hour neither holding nor waiting


@dataclass
class UpDown:
    """Every station's schedule index and when it was last advanced."""

    index: dict[str, float] = field(default_factory=dict)
    last: float | None = None

    def advance(self, held: Mapping[str, float], waiting: Collection[str], now: float,
                rates: UpDownRates | None = None) -> None:
        """Move every index over the time since the last call: ``held`` is each station's
        slot weight in use now, ``waiting`` the stations with idle jobs. The first call
        only starts the clock; time running backwards counts as none."""
        rates = rates or UpDownRates()
        hours = 0.0 if self.last is None else max(0.0, now - self.last) / _HOUR
        self.last = now
        for station in set(self.index) | set(held) | set(waiting):
            i = self.index.get(station, 0.0)
            h = max(0.0, held.get(station, 0.0))
            if h > 0:
                i += rates.up * h * hours
            elif station in waiting:
                i -= rates.down * hours
            else:
                step = rates.decay * hours
                i = max(0.0, i - step) if i > 0 else min(0.0, i + step)
            i = max(-_CLAMP, min(_CLAMP, i))
            if i == 0.0 and h <= 0 and station not in waiting:
                self.index.pop(station, None)  # nothing to remember
            else:
                self.index[station] = i

    def order(self, stations: Iterable[str]) -> list[str]:
        """``stations`` best (lowest index) first; ties by name."""
        return sorted(set(stations), key=lambda s: (self.index.get(s, 0.0), s))

    def to_json(self) -> dict[str, Any]:
        return {"index": dict(sorted(self.index.items())), "last": self.last}

    @classmethod
    def from_json(cls, obj: Any) -> UpDown:
        """Rebuild from :meth:`to_json`; malformed entries are skipped, never raised."""
        got = cls()
        if not isinstance(obj, dict):
            return got
        last = obj.get("last")
        if type(last) in (int, float) and math.isfinite(last):
            got.last = float(last)
        index = obj.get("index")
        if isinstance(index, dict):
            for k, v in index.items():
                if isinstance(k, str) and type(v) in (int, float) and math.isfinite(v):
                    got.index[k] = max(-_CLAMP, min(_CLAMP, float(v)))
        return got


def preemption_priority(index: float) -> float:
    """A station's index as a positive priority, lower is better, that keeps ratios
    meaningful: ``2 ** index`` (``RemoteUserPrio > SubmitterUserPrio * 1.2`` then
    reads "the holder's index is more than about 0.26 above the waiting one's")."""
    return 2.0 ** max(-_CLAMP, min(_CLAMP, index))


__all__ = ["UpDown", "UpDownRates", "preemption_priority"]
