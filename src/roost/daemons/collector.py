"""The collector: the pool's soft-state directory of ClassAds (``python -m roost.daemons.collector``).

Daemons push their ads (UPDATE_AD); readers QUERY them by type with an
optional constraint and projection. Ads are keyed by (type, Name), Submitter
ads by (type, Name, ScheddName) (one user submits from several schedds: see
``roost.core.submitters``), replaced by each update and forgotten ``ClassAdLifetime`` seconds (ad attribute, else
``CLASSAD_LIFETIME``) after the last one, as HTCondor's collector does: a
daemon that dies silently disappears from the pool on its own.

Ads are kept in their wire form (the JSON dict as received, plus
``LastHeardFrom``) so a query answers without converting anything; the
ClassAd needed to evaluate a constraint is built on first use and cached
until the next update.

Private attributes (``ClaimId`` and the like) are stored apart and returned
only to a query that asks ``private: true``. Who may ask is an authorization
decision (HTCondor: the NEGOTIATOR level) that arrives with security in a
later issue; until then any peer that can reach the collector may, which in
a personal pool means local processes only (it listens on 127.0.0.1).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.evaluate import EvaluationFailed, evaluate
from roost.classad.parser import parse_expr
from roost.core.submitters import ad_key
from roost.daemons.base import Daemon, run
from roost.net.addresses import is_loopback
from roost.net.adwire import obj_to_ad
from roost.net.auth import AuthError, TokenAuthority, challenge_for
from roost.net.errors import RequestError, excerpt
from roost.net.server import Handler, Peer


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


def _lifetime(obj: dict[str, Any], default: float) -> float:
    for k, v in obj.items():
        if k.lower() == "classadlifetime":
            if type(v) in (int, float) and v > 0:
                return float(v)
            break
    return default


def _name_of(obj: dict[str, Any]) -> str | None:
    v = obj.get("Name")
    if v is None:
        for k, val in obj.items():
            if k.lower() == "name":
                v = val
                break
    return v if isinstance(v, str) else None


class AdStore:
    """The collector's table of ads: pure bookkeeping, time passed in."""

    def __init__(self, default_lifetime: float) -> None:
        self.default_lifetime = default_lifetime
        self.ads: dict[tuple[str, str, str], Entry] = {}

    def update(self, ad_type: str, obj: dict[str, Any], private: dict[str, Any] | None,
               mono: float, wall: float) -> Entry:
        name = _name_of(obj)
        if not name:
            raise RequestError("BAD_REQUEST", f"UPDATE_AD: the {ad_type} ad has no string Name")
        obj = dict(obj)
        if not any(k.lower() == "mytype" for k in obj):
            obj["MyType"] = ad_type
        obj["LastHeardFrom"] = int(wall)
        ad = obj_to_ad(obj)  # refuses a malformed ad now, with a clear error
        entry = Entry(ad_type, obj, private or None, mono + _lifetime(obj, self.default_lifetime), ad)
        self.ads[ad_key(ad_type, obj, name)] = entry
        return entry

    def invalidate(self, ad_type: str, name: str, schedd_name: str | None = None) -> int:
        """Forget an ad; for Submitter ads that of ``schedd_name``, or without one every
        schedd's ad of that name. How many went."""
        t, n = ad_type.lower(), name.lower()
        if t == "submitter" and schedd_name is None:
            keys = [k for k in self.ads if k[0] == t and k[1] == n]
        else:
            keys = [ad_key(ad_type, {"ScheddName": schedd_name}, name)]
        return sum(1 for k in keys if self.ads.pop(k, None) is not None)

    def expire(self, mono: float) -> list[tuple[str, str, str]]:
        gone = [key for key, e in self.ads.items() if e.expires <= mono]
        for key in gone:
            del self.ads[key]
        return gone

    def of_type(self, ad_type: str, mono: float) -> list[Entry]:
        t = ad_type.lower()
        return [e for (et, _, _), e in self.ads.items() if et == t and e.expires > mono]


def _project(obj: dict[str, Any], wanted: list[str]) -> dict[str, Any]:
    lower = {k.lower(): k for k in obj}
    out = {}
    for name in wanted:
        k = lower.get(name.lower())
        if k is not None:
            out[k] = obj[k]
    return out


class Collector(Daemon):
    ad_type = "Collector"
    sticky_port = True  # daemons that cached its address keep reaching it after a restart

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("collector", "COLLECTOR", **kwargs)
        lifetime = self.config.get_float("CLASSAD_LIFETIME", 900.0) or 900.0
        self.store = AdStore(lifetime)
        self.updates = 0
        self.queries = 0

    # -- where to listen --------------------------------------------------------------
    def listen_on(self) -> tuple[str, int]:
        """COLLECTOR_HOST's port (bare host: COLLECTOR_PORT). Port 0 means "any", but a
        restarted collector first tries the port it had (``$(RUN)/collector.port``),
        so daemons holding the old address keep reaching it."""
        host = self.config.get("BIND_ADDRESS") or "127.0.0.1"
        chost = (self.config.get("COLLECTOR_HOST") or "").strip()
        _, sep, port = chost.rpartition(":")
        if sep and port.isdigit():
            return host, int(port)
        return host, self.config.get_int("COLLECTOR_PORT", 9618) or 0

    def collector_address(self) -> str | None:
        return self.address

    async def started(self) -> None:
        self.every(min(5.0, self.store.default_lifetime / 4), self._sweep, "expire-ads")

    async def _sweep(self) -> None:
        for ad_type, name, schedd in self.store.expire(time.monotonic()):
            self.log.info("%s ad %r%s expired", ad_type, name, f" of schedd {schedd}" if schedd else "")

    # -- own ad: stored directly ---------------------------------------------------------
    def ad(self) -> dict[str, Any]:
        return {
            "Name": f"roost pool - {self.hostname}",
            "CollectorUpdates": self.updates,
            "CollectorQueries": self.queries,
            "NumAds": len(self.store.ads),
        }

    async def advertise(self) -> bool:
        for ad_type, obj, private in self.ads():
            self.store.update(ad_type, obj, private, time.monotonic(), time.time())
        return True

    async def invalidate(self, ad_type: str, name: str) -> None:
        self.store.invalidate(ad_type, name)

    # -- commands ------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {"UPDATE_AD": self.update_ad, "INVALIDATE_AD": self.invalidate_ad, "QUERY": self.query,
                "TOKEN_CHALLENGE": self.token_challenge}

    async def token_challenge(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """TOKEN_CHALLENGE: the server's half of an IDTOKENS handshake for a daemon of a
        host that holds no pool key (:class:`roost.net.auth.DelegatedAuthority`); the
        signature never leaves this host. Only over TLS (or from this host): the answer
        holds the client proof to expect."""
        if not peer.tls and not is_loopback(peer.host):
            raise RequestError("ENCRYPTION_REQUIRED", "TOKEN_CHALLENGE: only over TLS")
        authority = self.security.authority
        if not isinstance(authority, TokenAuthority):
            raise RequestError("NOT_FOUND", "TOKEN_CHALLENGE: this collector holds no pool signing key")
        # lazy: cryptography (the sealing) loads only on a collector that serves key-less hosts
        from roost.net.certs import seal

        try:
            return challenge_for(req, authority, seal)
        except AuthError as e:
            raise RequestError("AUTH_FAILED", str(e)) from None

    async def update_ad(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        ad_type = req["type"]
        if not ad_type.isidentifier():
            raise RequestError("BAD_REQUEST", f"UPDATE_AD: bad ad type {ad_type!r}")
        entry = self.store.update(ad_type, req["ad"], req.get("private"), time.monotonic(), time.time())
        self.updates += 1
        self.log.debug("update %s %r from %s", ad_type, entry.obj.get("Name"), peer.address)
        return {}

    async def invalidate_ad(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        n = self.store.invalidate(req["type"], req["name"], req.get("schedd_name"))
        if n:
            self.log.info("invalidated %s ad %r (from %s)", req["type"], req["name"], peer.address)
        return {"removed": n}

    async def query(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.queries += 1
        entries = self.store.of_type(req["type"], time.monotonic())
        constraint = req.get("constraint")
        if constraint is not None and constraint.strip() and constraint.strip().lower() != "true":
            node = constraint_fn(constraint)
            entries = [e for e in entries if _holds(node, e)]
        private = bool(req.get("private"))
        projection = req.get("projection")
        out = []
        for e in entries:
            obj = e.obj
            if private and e.private:
                obj = {**obj, **e.private}
            if projection:
                obj = _project(obj, projection)
            out.append(obj)
        return {"ads": out}


def constraint_fn(text: str) -> Any:
    """The parsed constraint (the parser caches trees by text, the evaluator compiles
    each tree once, so repeated queries pay neither again)."""
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as e:
        raise RequestError("BAD_REQUEST", f"QUERY: bad constraint {excerpt(text)!r}: {e}") from None


def _holds(node: Any, entry: Entry) -> bool:
    try:
        v = evaluate(node, entry.classad())
    except EvaluationFailed:
        return False
    if v is True:
        return True
    return type(v) in (int, float) and v != 0


if __name__ == "__main__":
    run(Collector)
