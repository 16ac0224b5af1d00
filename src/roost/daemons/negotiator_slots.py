"""The collector's slot ads as a negotiation cycle reads them: the slots offered to
the matchmaker (ClassAds reused while an ad has not changed, promises not yet acted
on subtracted) and the weight and concurrency limits each submitter holds (what fair
share charges). ``SlotAds`` keeps the two caches that make a steady pool cheap: one
ClassAd per offered slot, one SlotWeight per claimed slot with an expression for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from logging import Logger
from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import Literal
from roost.core.concurrency import parse_concurrency_limits
from roost.core.matchmaker import Slot
from roost.core.promises import COUNTER, OFFER, WITHHOLD, PromiseBook
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError
from roost.vocabulary import SlotState

# Attributes that change on every update without meaning anything changed.
_VOLATILE = frozenset(("LastHeardFrom", "MyCurrentTime"))
_PRIVATE = ("ClaimId", "ClaimIds", "Capability", "PreemptClaimId")
#: slot states whose claim counts as usage of its RemoteUser
_BUSY_STATES = frozenset((SlotState.CLAIMED, SlotState.PREEMPTING))


def _version(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _VOLATILE}


def answered(obj: dict[str, Any]) -> int:
    """The claim requests a slot's startd has answered (see ``roost.core.promises``)."""
    n = obj.get(COUNTER)
    return n if type(n) is int else 0


class SlotAds:
    """The slot ads of one negotiator, cycle after cycle."""

    def __init__(self, promises: PromiseBook, log: Logger, use_slot_weights: bool) -> None:
        self.promises = promises
        self.log = log
        self.use_slot_weights = use_slot_weights
        self._slot_cache: dict[str, tuple[dict[str, Any], ClassAd]] = {}
        self._weight_cache: dict[str, tuple[Any, float]] = {}  # slot -> (SlotWeight inputs, weight)

    def offered(self, objs: list[dict[str, Any]], preemption: Any,
                eff_prio: Callable[[str], float]) -> list[Slot]:
        """Slot views for the matchmaker, ClassAds reused while an ad has not changed,
        promises not yet acted on subtracted. Unclaimed slots are offered with their
        ``ClaimId``; with a ``preemption`` policy, Claimed slots too (those that policy
        could preempt at all), with their private ``PreemptClaimId`` and
        ``RemoteUserPrio`` (the claim holder's effective priority)."""
        prio_preemption = preemption is not None and not _never(preemption.requirements)
        now = time.monotonic()
        seen: set[str] = set()
        out: list[Slot] = []
        for obj in objs:
            name = obj.get("Name")
            if not isinstance(name, str):
                continue
            state = obj.get("State")
            if state == SlotState.UNCLAIMED or (state is None and isinstance(obj.get("ClaimId"), str)):
                claim = obj.get("ClaimId")
                claimed = False
            elif (preemption is not None and state == SlotState.CLAIMED and isinstance(obj.get("PreemptClaimId"), str)
                  and (prio_preemption or _rank_may_preempt(obj))):
                claim = obj.get("PreemptClaimId")
                claimed = True
            else:
                continue  # not offered: not even converted to a ClassAd
            seen.add(name)
            if not isinstance(claim, str):
                continue  # nothing a schedd could claim it with
            version = _version(obj)
            cached = self._slot_cache.get(name)
            if cached is not None and cached[0] == version:
                ad = cached[1]
            else:
                try:
                    ad = obj_to_ad(obj)
                except RequestError as e:
                    self.log.warning("ignoring slot %s: %s", name, e)
                    continue
                self._slot_cache[name] = (version, ad)
            heard = obj.get("LastHeardFrom")
            verdict = self.promises.check(name, answered(obj), now, heard if type(heard) in (int, float) else None)
            if verdict == WITHHOLD:
                continue  # a static slot already promised
            if verdict != OFFER:
                assert isinstance(verdict, dict)
                ad = ClassAd(ad)
                for attr, amount in verdict.items():
                    left = ad.eval(attr) if attr in ad else None
                    if type(left) in (int, float):
                        left -= amount
                        ad[attr] = int(left) if float(left).is_integer() else left
            if claimed:
                user = obj.get("RemoteUser")
                ad = ClassAd(ad)
                ad["RemoteUserPrio"] = eff_prio(user if isinstance(user, str) else "")
            address = obj.get("MyAddress") or obj.get("StartdIpAddr")
            public = {k: v for k, v in obj.items() if k not in _PRIVATE}
            out.append(Slot(name, ad, claim, address if isinstance(address, str) else None, public))
        for gone in [n for n in self._slot_cache if n not in seen]:
            del self._slot_cache[gone]
        self.promises.keep_only(seen)
        out.sort(key=lambda s: s.name)
        return out

    def weight(self, obj: dict[str, Any]) -> float:
        """SlotWeight of a slot ad (default Cpus; 1 per slot without slot weights)."""
        if not self.use_slot_weights:
            return 1.0
        cpus = obj.get("Cpus")
        cpus = float(cpus) if type(cpus) in (int, float) else 1.0
        w = obj.get("SlotWeight")
        if type(w) in (int, float):
            return float(w)
        if w is None or (isinstance(w, str) and w.replace(" ", "").lower() == "/expr(cpus)/"):
            return cpus
        # Any other expression needs the whole ad: converted once per version of the ad,
        # not every cycle for every claimed slot.
        name = obj.get("Name")
        version = _version(obj)
        cached = self._weight_cache.get(name) if isinstance(name, str) else None
        if cached is not None and cached[0] == version:
            return cached[1]
        try:
            v = obj_to_ad(obj).eval("SlotWeight")
        except Exception:
            v = None
        weight = float(v) if type(v) in (int, float) else cpus
        if isinstance(name, str):
            self._weight_cache[name] = (version, weight)
        return weight

    def usage(self, objs: list[dict[str, Any]],
               subs: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
        """Weight held per submitter (RemoteUser of claimed slots) and concurrency limits
        in use (the running jobs' ``ConcurrencyLimits``, which the startd copies into the
        slot ad), both with what matches still outstanding will hold."""
        by_owner: dict[str, set[str]] = {}
        for s in subs:
            owner, name = s.get("Owner"), s.get("Name")
            if isinstance(owner, str) and isinstance(name, str):
                by_owner.setdefault(owner, set()).add(name)
        usage: dict[str, float] = {}
        limits: dict[str, float] = {}
        busy: set[str] = set()
        for obj in objs:
            if obj.get("State") not in _BUSY_STATES:
                continue
            name = obj.get("Name")
            if isinstance(name, str):
                busy.add(name)
            user = obj.get("RemoteUser")
            if not isinstance(user, str) or not user:
                user = obj.get("RemoteOwner")
                if not isinstance(user, str) or not user:
                    continue
            if "@" not in user:  # an older startd: the owner only
                names = by_owner.get(user)
                user = next(iter(names)) if names and len(names) == 1 else user
            usage[user] = usage.get(user, 0.0) + self.weight(obj)
            for lim, amount in (parse_concurrency_limits(obj.get("ConcurrencyLimits")) or {}).items():
                limits[lim] = limits.get(lim, 0.0) + amount
        for gone in [n for n in self._weight_cache if n not in busy]:
            del self._weight_cache[gone]
        # matches the startds have not answered yet hold what they will hold: the next
        # cycle, milliseconds away, must not give the same license or group quota again
        counts = {o["Name"]: answered(o) for o in objs if isinstance(o.get("Name"), str)}
        for charge in self.promises.charges(counts, time.monotonic()):
            usage[charge.submitter] = usage.get(charge.submitter, 0.0) + charge.weight
            for lim, amount in charge.limits.items():
                limits[lim] = limits.get(lim, 0.0) + amount
        return usage, limits


def _never(node: Any) -> bool:
    """PREEMPTION_REQUIREMENTS that can never hold (unset, or the literal false)."""
    return node is None or (isinstance(node, Literal) and node.value is False)


def _rank_may_preempt(obj: dict[str, Any]) -> bool:
    """Whether a claimed slot's own ``Rank`` could prefer some other job to the running
    one (rank preemption): not when Rank is a constant no greater than ``CurrentRank``,
    the common case, so such slots need no ClassAd when priority preemption is off."""
    rank = obj.get("Rank", 0)
    if isinstance(rank, str) and rank.startswith("/Expr(") and rank.endswith(")/"):
        text = rank[6:-2].strip()
        try:
            rank = float(text)
        except ValueError:
            return True  # an expression of the job: it may
    if type(rank) not in (int, float):
        return rank is not None
    current = obj.get("CurrentRank", 0)
    current = float(current) if type(current) in (int, float) else 0.0
    return rank > current
