"""What the negotiator has promised of slots whose startds have not yet acted on it.

Negotiation cycles here are milliseconds apart, and a matched slot stays
``Unclaimed`` in the collector until its startd reports the claim. Offering
it again would hand two schedds the same slot. So each match is noted here
against the slot's ad *version* (its attributes minus the volatile ones):

- a static slot is withheld until its ad changes (the startd acted) or the
  promise expires (the schedd never claimed it);
- a partitionable slot offers what is left after the outstanding promises.
  When its ad changes, the resources it lost since the promise count as
  promises kept; the rest stay outstanding.

Pure: time is a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Promise:
    version: Any
    base: dict[str, float]  # the slot's resources when the version was seen
    expires: float
    taken: dict[str, float] = field(default_factory=dict)
    static: bool = True


# What to do with a slot this cycle: offer it as is, withhold it, or offer it
# with these resources outstanding (subtract them).
OFFER = "offer"
WITHHOLD = "withhold"


class PromiseBook:
    def __init__(self, hold: float) -> None:
        self.hold = hold
        self.promises: dict[str, Promise] = {}

    def __len__(self) -> int:
        return len(self.promises)

    def note(self, slot: str, version: Any, resources: Mapping[str, float],
             taken: Mapping[str, float], now: float) -> None:
        """Record one match on ``slot`` (``taken`` empty for a static slot)."""
        p = self.promises.get(slot)
        if p is None or p.version != version:
            p = self.promises[slot] = Promise(version, dict(resources), now + self.hold)
        p.expires = now + self.hold
        if taken:
            p.static = False
            for attr, amount in taken.items():
                p.taken[attr] = p.taken.get(attr, 0.0) + amount

    def check(self, slot: str, version: Any, resources: Mapping[str, float],
              now: float) -> str | dict[str, float]:
        """OFFER, WITHHOLD, or the resources still promised of a partitionable slot."""
        p = self.promises.get(slot)
        if p is None:
            return OFFER
        if p.expires <= now:
            del self.promises[slot]
            return OFFER
        if p.version == version:
            return WITHHOLD if p.static else dict(p.taken)
        if p.static:
            del self.promises[slot]  # the startd has acted on it
            return OFFER
        outstanding = {}
        for attr, amount in p.taken.items():
            kept = p.base.get(attr, 0.0) - resources.get(attr, 0.0)
            left = amount - max(0.0, kept)
            if left > 0:
                outstanding[attr] = left
        if not outstanding or all(v <= 0 for v in outstanding.values()):
            del self.promises[slot]
            return OFFER
        p.version, p.base, p.taken = version, dict(resources), outstanding
        return dict(outstanding)

    def forget(self, slot: str) -> None:
        self.promises.pop(slot, None)

    def keep_only(self, slots: set[str]) -> None:
        """Drop promises on slots no longer Unclaimed (claimed: kept) or gone."""
        for name in [n for n in self.promises if n not in slots]:
            del self.promises[name]
