"""The collector's table of ads: pure bookkeeping (time passed in), no sockets.

Ads are kept once, in their wire form (the JSON dict as received, plus
``LastHeardFrom``), so a query answers without converting anything. The
ClassAd a constraint needs is built on first use and cached until the next
update, not at every update: 100,000 slot ads held twice (dict and ClassAd)
cost the collector twice the memory, and most queries (the negotiator's, the
totals of ``roost status``) carry no constraint. An update is still checked
as thoroughly as building the ClassAd would (every ``/Expr(...)/`` parses:
the parser caches trees by text, so a startd's ads, which repeat the same
expressions, cost a dictionary look-up each).

Each type has a table of its own, so a query of one type never walks the
others, and attribute spellings are remembered per type (``spellings``), so a
projection finds ``memory`` under ``Memory`` without lowering every key of
every ad.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any

from roost.classad import ClassAd
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import parse_expr
from roost.core.submitters import ad_key
from roost.daemons.adtally import Tally, Uncountable
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError

Key = tuple[str, str, str]

#: grouped projections a type keeps tallies for (the views of ``roost status -totals``)
MAX_TALLIES = 8

#: strings up to this long are interned (a slot's name, its machine's, its state ...)
_INTERN_MAX = 100

#: how deep a value may nest (lists in ads in lists ...) before the update is refused
MAX_NESTING = 200


@dataclass(slots=True)
class Entry:
    """One stored ad."""

    type: str
    obj: dict[str, Any]
    private: dict[str, Any] | None
    expires: float  # monotonic seconds
    ad: ClassAd | None = field(default=None)  # built on first constraint evaluation

    def classad(self) -> ClassAd:
        if self.ad is None:
            self.ad = obj_to_ad(self.obj)
        return self.ad


def _lifetime(obj: dict[str, Any], lower: dict[str, str], default: float) -> float:
    v = obj.get("ClassAdLifetime")
    if v is None:
        k = lower.get("classadlifetime")
        v = obj.get(k) if k is not None else None
    return float(v) if type(v) in (int, float) and v > 0 else default


def _check(value: Any, depth: int = 0) -> None:
    """Refuse what ``obj_to_ad`` would refuse: an expression that does not parse, or a
    value nested past :data:`MAX_NESTING` (BAD_REQUEST either way)."""
    t = type(value)
    if t is str:
        if value[:6].lower() == "/expr(" and value.endswith(")/"):
            try:
                parse_expr(value[6:-2])
            except ClassAdSyntaxError as e:
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise RequestError("BAD_REQUEST", f"bad expression in ClassAd: {first}") from None
        return
    if t is dict or t is list:
        if depth >= MAX_NESTING:
            raise RequestError("BAD_REQUEST", f"ClassAd value nested more than {MAX_NESTING} levels deep")
        for v in (value.values() if t is dict else value):
            if type(v) in (dict, list, str):
                _check(v, depth + 1)


class AdStore:
    """Every ad the collector holds, by type."""

    def __init__(self, default_lifetime: float) -> None:
        self.default_lifetime = default_lifetime
        self.tables: dict[str, dict[Key, Entry]] = {}
        #: per type: lower-case attribute name -> the spellings ads of that type used
        self.spellings: dict[str, dict[str, set[str]]] = {}
        #: per type: the tallies of grouped queries asked before (keys: their spellings)
        self.tallies: dict[str, dict[tuple[str, ...], Tally]] = {}
        #: no ad expires before this (monotonic): a query before it need not sweep
        self.soonest = float("inf")

    # -- tallies ---------------------------------------------------------------------
    def _tally(self, t: str, op: str, obj: dict[str, Any]) -> None:
        """Count ``obj`` in (``add``) or out of (``remove``) every tally of type ``t``."""
        tallies = self.tallies.get(t)
        if not tallies:
            return
        for keys, tally in list(tallies.items()):
            try:
                getattr(tally, op)(obj)
            except Uncountable:
                del tallies[keys]

    def grouped(self, ad_type: str, names: list[tuple[str, list[str]]], mono: float) -> dict[str, Any] | None:
        """The grouped answer from the tally of these names (made now, by one pass over
        the ads, if there is none); None where a name has several spellings or a value
        cannot be counted (the caller groups the projected ads itself)."""
        if any(len(sp) > 1 for _, sp in names):
            return None
        t = ad_type.lower()
        keys = tuple(sp[0] for _, sp in names if sp)
        tallies = self.tallies.setdefault(t, {})
        tally = tallies.get(keys)
        if tally is None:
            tally = Tally(keys)
            try:
                for e in self.tables.get(t, {}).values():
                    tally.add(e.obj)
            except Uncountable:
                return None
            if len(tallies) >= MAX_TALLIES:
                del tallies[next(iter(tallies))]
            tallies[keys] = tally
        return tally.answer()

    def due(self, mono: float) -> bool:
        """Whether some ad may have expired (a query sweeps first, so tallies are exact)."""
        return mono >= self.soonest

    def __len__(self) -> int:
        return sum(len(t) for t in self.tables.values())

    def _learn(self, t: str, obj: dict[str, Any]) -> dict[str, str]:
        """Remember the spellings of ``obj``'s names; its lower-case names -> spellings."""
        seen = self.spellings.setdefault(t, {})
        lower: dict[str, str] = {}
        for k in obj:
            low = k.lower()
            lower[low] = k
            s = seen.get(low)
            if s is None:
                seen[low] = {k}
            elif k not in s:
                s.add(k)
                for keys in [ks for ks in self.tallies.get(t, {}) if any(x.lower() == low for x in ks)]:
                    del self.tallies[t][keys]  # a second spelling: the tally no longer sees them all
        return lower

    def update(self, ad_type: str, obj: dict[str, Any], private: dict[str, Any] | None,
               mono: float, wall: float) -> Entry:
        if type(obj) is not dict:
            raise RequestError("BAD_REQUEST", f"a ClassAd must be a JSON object, not {type(obj).__name__}")
        t = ad_type.lower()
        # names and short strings shared by every ad that holds them ("LINUX", "Claimed",
        # each startd's version string ...): 100,000 slot ads repeat the same few thousand
        obj = {intern(k): intern(v) if type(v) is str and len(v) <= _INTERN_MAX else v for k, v in obj.items()}
        lower = self._learn(t, obj)
        name = obj.get("Name")
        if name is None and "name" in lower:
            name = obj[lower["name"]]
        if not isinstance(name, str) or not name:
            raise RequestError("BAD_REQUEST", f"UPDATE_AD: the {ad_type} ad has no string Name")
        _check(obj)
        if "mytype" not in lower:
            obj["MyType"] = ad_type
        if "lastheardfrom" in lower and lower["lastheardfrom"] != "LastHeardFrom":
            del obj[lower["lastheardfrom"]]
        obj["LastHeardFrom"] = int(wall)
        if "mytype" not in lower or lower.get("lastheardfrom") != "LastHeardFrom":
            self._learn(t, {"MyType": None, "LastHeardFrom": None})
        entry = Entry(ad_type, obj, private or None, mono + _lifetime(obj, lower, self.default_lifetime))
        table = self.tables.setdefault(t, {})
        key = ad_key(ad_type, obj, name)
        old = table.get(key)
        if old is not None:
            self._tally(t, "remove", old.obj)
        table[key] = entry
        self._tally(t, "add", obj)
        self.soonest = min(self.soonest, entry.expires)
        return entry

    def refresh(self, ad_type: str, items: Iterable[Any], mono: float, wall: float) -> list[str]:
        """Renew the lease of ads that have not changed but for a few attributes (a startd's
        periodic round: its slots' idle times, loads and clock) without sending them whole:
        each item is a name, or ``{"Name": name, attr: value ...}`` whose attributes are
        set in the stored ad; ``LastHeardFrom`` becomes now. The names this store does not
        hold (the collector restarted, or the ad expired): their owner sends them whole.
        An item with a bad value (an expression that does not parse) is not applied and
        counts as missing, so the whole ad follows."""
        t = ad_type.lower()
        table = self.tables.get(t, {})
        missing = []
        for item in items:
            attrs: dict[str, Any] = {}
            if type(item) is dict:
                name = item.get("Name")
                # (the name, however spelled, is the key: a note does not rename an ad)
                attrs = {k: v for k, v in item.items() if type(k) is str and k.lower() not in ("name", "mytype")}
            else:
                name = item
            if not isinstance(name, str):
                continue
            e = table.get((t, name.lower(), ""))
            if e is None or e.expires <= mono:
                missing.append(name)
                continue
            self._tally(t, "remove", e.obj)
            if attrs:
                try:
                    _check(attrs)
                except RequestError:
                    self._tally(t, "add", e.obj)
                    missing.append(name)
                    continue
                obj = e.obj
                lower = None
                for k, v in attrs.items():
                    if k not in obj:
                        lower = lower or {x.lower(): x for x in obj}
                        old = lower.get(k.lower())
                        if old is not None:
                            del obj[old]
                        self._learn(t, {k: None})
                    obj[k] = v
                e.ad = None  # rebuilt from the new values when a constraint needs it
            e.obj["LastHeardFrom"] = int(wall)
            if e.ad is not None:
                e.ad["LastHeardFrom"] = int(wall)
            e.expires = mono + _lifetime(e.obj, {}, self.default_lifetime)
            self.soonest = min(self.soonest, e.expires)
            self._tally(t, "add", e.obj)
        return missing

    def get(self, ad_type: str, name: str) -> Entry | None:
        """The ad of that type and name (not Submitter ads, which are per schedd)."""
        return self.tables.get(ad_type.lower(), {}).get(ad_key(ad_type, {}, name))

    def invalidate(self, ad_type: str, name: str, schedd_name: str | None = None) -> int:
        """Forget an ad; for Submitter ads that of ``schedd_name``, or without one every
        schedd's ad of that name. How many went."""
        t, n = ad_type.lower(), name.lower()
        table = self.tables.get(t)
        if not table:
            return 0
        if t == "submitter" and schedd_name is None:
            keys = [k for k in table if k[1] == n]
        else:
            keys = [ad_key(ad_type, {"ScheddName": schedd_name}, name)]
        n = 0
        for k in keys:
            e = table.pop(k, None)
            if e is not None:
                self._tally(t, "remove", e.obj)
                n += 1
        return n

    def expire(self, mono: float) -> list[Key]:
        gone = []
        soonest = float("inf")
        for t, table in self.tables.items():
            dead = []
            for key, e in table.items():
                if e.expires <= mono:
                    dead.append(key)
                elif e.expires < soonest:
                    soonest = e.expires
            for key in dead:
                self._tally(t, "remove", table.pop(key).obj)
            gone.extend(dead)
        self.soonest = soonest
        return gone

    def of_type(self, ad_type: str, mono: float) -> list[Entry]:
        return [e for e in self.tables.get(ad_type.lower(), {}).values() if e.expires > mono]

    def names_for(self, ad_type: str, wanted: Iterable[str]) -> list[tuple[str, list[str]]]:
        """Each wanted attribute with the spellings ads of ``ad_type`` have used for it."""
        seen = self.spellings.get(ad_type.lower(), {})
        return [(w, sorted(seen.get(w.lower(), ()))) for w in wanted]
