"""What the negotiator has promised of slots whose startds have not yet acted on it.

Negotiation cycles here are milliseconds apart, and a matched slot stays
``Unclaimed`` in the collector until its startd reports the claim. Offering
it again would hand two schedds the same slot. So each match is noted here
against the slot's ``NumClaimRequests``: the startd counts every claim
request it has answered on the slot (granted or denied) and advertises the
count. A promise is settled once that count has moved past it, whatever
else the ad shows. (Comparing whole ads is not enough: a short job can be
claimed, run and released between two cycles, leaving an ad identical to the
one the match was made against, and the promise would never be seen kept.)

- a static slot is withheld until its count moves (the startd acted) or the
  promise expires (the schedd never asked);
- a partitionable slot offers what is left after the outstanding promises;
  each step of its count settles the oldest one;
- what a match will hold (its submitter's slot weight, its concurrency limits)
  counts as held while the promise is outstanding (:meth:`PromiseBook.charges`):
  the next cycle, milliseconds later, must not hand the same submitter, group
  or license out again.

Pure: time is a parameter.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

# The slot-ad attribute the startd counts answered claim requests in.
COUNTER = "NumClaimRequests"


@dataclass(frozen=True)
class Charge:
    """What one promised match will hold once claimed."""

    submitter: str
    weight: float
    limits: Mapping[str, float] = field(default_factory=dict)  # concurrency limit -> amount


@dataclass
class Promise:
    seen: int  # the slot's NumClaimRequests when last looked at
    expires: float
    pending: deque[dict[str, float]] = field(default_factory=deque)  # oldest first; {} for a static slot
    static: bool = True
    charges: deque[Charge | None] = field(default_factory=deque)  # one per pending entry
    lapses: deque[float] = field(default_factory=deque)  # when each pending entry lapses (oldest first)
    #: per pending entry: when its schedd said it could not reach the startd (wall
    #: clock), else None; such an entry ends once the slot's ad is heard after that
    unreached: deque[float | None] = field(default_factory=deque)


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

    def note(self, slot: str, answered: int, taken: Mapping[str, float], now: float,
             charge: Charge | None = None) -> None:
        """Record one match on ``slot`` made while it showed ``answered`` claim
        requests (``taken`` empty for a static slot); ``charge``: what it will hold."""
        p = self.promises.get(slot)
        if p is None:
            p = self.promises[slot] = Promise(answered, now + self.hold)
        self._settle(p, answered, now)
        p.expires = now + self.hold
        p.pending.append(dict(taken))
        p.charges.append(charge)
        p.lapses.append(now + self.hold)
        p.unreached.append(None)
        if taken:
            p.static = False

    @staticmethod
    def _settle(p: Promise, answered: int, now: float, heard: float | None = None) -> None:
        """Entries that lapsed go first (each its own: a match whose claim request never
        reached the startd must not live on with a later match's time, and then be
        settled by that match's request, leaving the kept one withheld for a whole
        hold), and those its schedd could not claim once the slot's ad is ``heard``
        (``LastHeardFrom``) after it said so (the startd is back, the request is not
        coming); then each step of the startd's count settles the oldest left."""
        while p.lapses and p.lapses[0] <= now:
            p.lapses.popleft()
            p.pending.popleft()
            p.charges.popleft()
            p.unreached.popleft()
        if heard is not None and any(t is not None and heard > t for t in p.unreached):
            for i in reversed(range(len(p.unreached))):
                t = p.unreached[i]
                if t is not None and heard > t:
                    del p.pending[i], p.charges[i], p.lapses[i], p.unreached[i]
        if answered > p.seen:
            for _ in range(min(answered - p.seen, len(p.pending))):
                p.pending.popleft()
                p.charges.popleft()
                p.lapses.popleft()
                p.unreached.popleft()
            p.seen = answered
        elif answered < p.seen:  # the startd restarted: its old promises mean nothing now
            p.pending.clear()
            p.charges.clear()
            p.lapses.clear()
            p.unreached.clear()
            p.seen = answered

    def charges(self, answered: Mapping[str, int], now: float) -> list[Charge]:
        """The charges of matches still outstanding, given each slot's claim-request
        count now (``answered``; a slot not in it is gone: nothing is charged). An
        answered match is charged by its slot ad instead (Claimed, ``RemoteUser``)."""
        out: list[Charge] = []
        for slot, p in self.promises.items():
            if p.expires <= now or slot not in answered:
                continue
            self._settle(p, answered[slot], now)
            out += [c for c in p.charges if c is not None]
        return out

    def check(self, slot: str, answered: int, now: float, heard: float | None = None) -> str | dict[str, float]:
        """OFFER, WITHHOLD, or the resources still promised of a partitionable slot;
        ``heard``: the slot ad's ``LastHeardFrom`` (see :meth:`unreachable`)."""
        p = self.promises.get(slot)
        if p is None:
            return OFFER
        if p.expires <= now:
            del self.promises[slot]
            return OFFER
        self._settle(p, answered, now, heard)
        if not p.pending:
            del self.promises[slot]
            return OFFER
        if p.static:
            return WITHHOLD
        outstanding: dict[str, float] = {}
        for taken in p.pending:
            for attr, amount in taken.items():
                outstanding[attr] = outstanding.get(attr, 0.0) + amount
        return outstanding

    def next_expiry(self) -> float | None:
        """When the earliest outstanding promise lapses (a cycle then may offer it again)."""
        return min((p.expires for p in self.promises.values()), default=None)

    def drop_lapsed(self, now: float) -> None:
        """Forget promises that lapsed by ``now``: a lapsed promise already counts as
        none (``check`` offers its slot, ``charges`` skips it), but one kept on a slot
        no cycle looks at (claimed meanwhile, or a cycle with nobody waiting) made
        ``next_expiry`` lie in the past forever, and the negotiator cycled without pause."""
        for name in [n for n, p in self.promises.items() if p.expires <= now]:
            del self.promises[name]

    def unreachable(self, slot: str, wall: float) -> None:
        """One match on ``slot`` will not be claimed: its schedd could not connect to
        the startd (at ``wall``, the wall clock). The entry stays while the host is still
        cut off (its ad, unchanged, would have the slot matched and refused again, over
        and over) and ends once the slot's ad is heard after ``wall``: the host is back,
        and its CPU is not withheld for the rest of the hold. Which of several entries
        is marked does not matter: each step of the startd's count settles the oldest."""
        p = self.promises.get(slot)
        if p is None:
            return
        for i, t in enumerate(p.unreached):
            if t is None:
                p.unreached[i] = wall
                return

    def forget(self, slot: str) -> None:
        self.promises.pop(slot, None)

    def keep_only(self, slots: set[str]) -> None:
        """Drop promises on slots no longer Unclaimed (claimed: kept) or gone."""
        for name in [n for n in self.promises if n not in slots]:
            del self.promises[name]
