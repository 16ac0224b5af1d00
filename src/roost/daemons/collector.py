"""The collector: the pool's soft-state directory of ClassAds (``python -m roost.daemons.collector``).

Daemons push their ads (UPDATE_AD); readers QUERY them by type with an
optional constraint and projection. Ads are keyed by (type, Name), Submitter
ads by (type, Name, ScheddName) (one user submits from several schedds: see
``roost.core.submitters``), replaced by each update and forgotten ``ClassAdLifetime`` seconds (ad attribute, else
``CLASSAD_LIFETIME``) after the last one, as HTCondor's collector does: a
daemon that dies silently disappears from the pool on its own.

Ads are kept once, in their wire form (``roost.daemons.adstore``), so a query
answers without converting anything; the ClassAd needed to evaluate a
constraint is built on first use and cached until the next update.

A startd sends its slots' ads in one ``UPDATE_ADS`` (a batch of ads of one
type, and the names of ads unchanged since it last sent them, whose lease is
renewed without sending them again). A ``QUERY`` with a projection and
``group`` answers each distinct projected ad once with its count: what
``roost status -totals`` needs of 100,000 slots is a few rows, not 100,000 ads.

Private attributes (``ClaimId`` and the like) are stored apart and returned
only to a query that asks ``private: true``. Who may ask is an authorization
decision (HTCondor: the NEGOTIATOR level) that arrives with security in a
later issue; until then any peer that can reach the collector may, which in
a personal pool means local processes only (it listens on 127.0.0.1).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from roost.classad.errors import ClassAdSyntaxError
from roost.classad.evaluate import EvaluationFailed, evaluate
from roost.classad.parser import parse_expr
from roost.core import glidein_ads
from roost.core.flock import foreign_ad_refusal
from roost.daemons.adstore import AdStore, Entry
from roost.daemons.base import Daemon, run
from roost.daemons.security import uid_domain
from roost.net.addresses import is_loopback
from roost.net.auth import AuthError, TokenAuthority, challenge_for
from roost.net.errors import RequestError, excerpt
from roost.net.server import Handler, Peer


def _project(obj: dict[str, Any], wanted: list[str]) -> dict[str, Any]:
    lower = {k.lower(): k for k in obj}
    out = {}
    for name in wanted:
        k = lower.get(name.lower())
        if k is not None:
            out[k] = obj[k]
    return out


def _projector(names: list[tuple[str, list[str]]]) -> Any:
    """A function projecting an ad onto the wanted names, trying only the spellings
    ads of its type have used (no lowering of every key of every ad)."""
    names = [(w, sp) for w, sp in names if sp]  # a name no ad of the type has is in none
    if all(len(sp) == 1 for _, sp in names):
        keys = [sp[0] for _, sp in names]

        def one(obj: dict[str, Any]) -> dict[str, Any]:
            return {k: obj[k] for k in keys if k in obj}
        return one

    def many(obj: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for _, spellings in names:
            for k in spellings:
                if k in obj:
                    out[k] = obj[k]
                    break
        return out
    return many


def _count_distinct(objs: list[dict[str, Any]], names: list[tuple[str, list[str]]]) -> dict[str, Any] | None:
    """QUERY's ``group`` answer at C speed where every wanted name has one spelling and
    every value is hashable (None: take the general way). An attribute that is null
    and one that is missing are one group: both are UNDEFINED, and the answer's ad
    leaves them out."""
    if any(len(sp) > 1 for _, sp in names):
        return None
    keys = [sp[0] for _, sp in names if sp]
    try:
        counted = Counter([tuple(map(o.get, keys)) for o in objs])
    except TypeError:  # a list or nested ad among the values
        return None
    ads = [{k: v for k, v in zip(keys, key) if v is not None} for key in counted]
    return {"ads": ads, "counts": list(counted.values())}


def _group(ads: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[int]]:
    """Projected ads folded: each distinct one once, with how many there were."""
    index: dict[Any, int] = {}
    out: list[dict[str, Any]] = []
    counts: list[int] = []
    for a in ads:
        try:
            key: Any = tuple(a.items())
            i = index.get(key)
        except TypeError:  # a list or nested ad among the values
            key = repr(sorted(a.items()))
            i = index.get(key)
        if i is None:
            index[key] = len(out)
            out.append(a)
            counts.append(1)
        else:
            counts[i] += 1
    return out, counts


class Collector(Daemon):
    ad_type = "Collector"
    sticky_port = True  # daemons that cached its address keep reaching it after a restart

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("collector", "COLLECTOR", **kwargs)
        lifetime = self.config.get_float("CLASSAD_LIFETIME", 900.0) or 900.0
        self.store = AdStore(lifetime)
        self.updates = 0
        self.queries = 0
        # flocking (docs/flocking.md): other pools' schedds advertise only their own users
        self._flock_home = uid_domain(self.config) if any(
            (self.config.get(k) or "").strip() for k in ("FLOCK_FROM", "FLOCK_AGREEMENTS")) else None

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
            "NumAds": len(self.store),
        }

    async def advertise(self) -> bool:
        for ad_type, obj, private in self.ads():
            self.store.update(ad_type, obj, private, time.monotonic(), time.time())
        return True

    async def invalidate(self, ad_type: str, name: str) -> None:
        self.store.invalidate(ad_type, name)

    # -- commands ------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {"UPDATE_AD": self.update_ad, "UPDATE_ADS": self.update_ads, "INVALIDATE_AD": self.invalidate_ad,
                "QUERY": self.query, "TOKEN_CHALLENGE": self.token_challenge}

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
        if self._flock_home is not None:
            self._check_foreign("UPDATE_AD", ad_type, req["ad"].get("Name"), peer)
        if _glidein(peer):
            self._check_glidein("UPDATE_AD", ad_type, req["ad"], _token_annex(peer))
        entry = self.store.update(ad_type, req["ad"], req.get("private"), time.monotonic(), time.time())
        self.updates += 1
        self.log.debug("update %s %r from %s", ad_type, entry.obj.get("Name"), peer.address)
        return {}

    async def update_ads(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """UPDATE_ADS: many ads of one type in one frame (a startd's slots), and the names
        of ads unchanged since last sent (``refresh``). A bad ad is refused alone (its
        index and why in ``errors``); the names not held come back in ``missing``."""
        ad_type = req["type"]
        if not ad_type.isidentifier():
            raise RequestError("BAD_REQUEST", f"UPDATE_ADS: bad ad type {ad_type!r}")
        mono, wall = time.monotonic(), time.time()
        errors: list[dict[str, Any]] = []
        n = 0
        glidein = _glidein(peer)
        for i, item in enumerate(req.get("ads") or []):
            private = item.get("private")
            try:
                if private is not None and type(private) is not dict:
                    raise RequestError("BAD_REQUEST", "private must be a JSON object")
                if self._flock_home is not None:
                    ad = item.get("ad")
                    self._check_foreign("UPDATE_ADS", ad_type, ad.get("Name") if isinstance(ad, dict) else None, peer)
                if glidein and isinstance(item.get("ad"), dict):
                    self._check_glidein("UPDATE_ADS", ad_type, item["ad"], _token_annex(peer))
                self.store.update(ad_type, item.get("ad"), private, mono, wall)
                n += 1
            except RequestError as e:
                errors.append({"index": i, "error": e.message})
        refresh = req.get("refresh") or []
        if glidein:  # a glide-in refreshes its own ads only (a note may set attributes)
            refresh = [r for r in refresh if self._glidein_may_touch(ad_type, r, _token_annex(peer))]
        missing = self.store.refresh(ad_type, refresh, mono, wall)
        self.updates += n
        self.log.debug("UPDATE_ADS: %d %s ads, %d refreshed, from %s", n, ad_type,
                       len(req.get("refresh") or []) - len(missing), peer.address)
        out: dict[str, Any] = {"updated": n, "missing": missing}
        if errors:
            out["errors"] = errors
        return out

    def _check_foreign(self, cmd: str, ad_type: str, name: Any, peer: Peer) -> None:
        assert self._flock_home is not None
        why = foreign_ad_refusal(ad_type, name, peer.identity.name if peer.identity else None, self._flock_home)
        if why is not None:
            raise RequestError("PERMISSION_DENIED", f"{cmd}: {why}")

    def _check_glidein(self, cmd: str, ad_type: str, ad: dict[str, Any], token_annex: str) -> None:
        """A glide-in's token (startd-only) puts and replaces glide-in ads of its annex only."""
        name = ad.get("Name")
        old = self.store.get(ad_type, name) if isinstance(name, str) else None
        why = glidein_ads.update_refusal(ad_type, ad, old.obj if old is not None else None, token_annex)
        if why is not None:
            raise RequestError("PERMISSION_DENIED", f"{cmd}: {why}")

    def _glidein_may_touch(self, ad_type: str, item: Any, token_annex: str) -> bool:
        name = item.get("Name") if isinstance(item, dict) else item
        if not isinstance(name, str) or ad_type.lower() != "machine":
            return False
        old = self.store.get(ad_type, name)
        return old is None or glidein_ads.replace_refusal(old.obj, None, token_annex) is None

    async def invalidate_ad(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        if self._flock_home is not None:
            self._check_foreign("INVALIDATE_AD", req["type"], req["name"], peer)
        if _glidein(peer) and not self._glidein_may_touch(req["type"], req["name"], _token_annex(peer)):
            raise RequestError("PERMISSION_DENIED", "INVALIDATE_AD: a glide-in's token cannot withdraw "
                                                    "an ad that is not a glide-in's")
        n = self.store.invalidate(req["type"], req["name"], req.get("schedd_name"))
        if n:
            self.log.info("invalidated %s ad %r (from %s)", req["type"], req["name"], peer.address)
        return {"removed": n}

    async def query(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.queries += 1
        mono = time.monotonic()
        if self.store.due(mono):
            await self._sweep()  # what has expired goes first: the tallies count only live ads
        constraint = req.get("constraint")
        if req.get("group") and req.get("projection") and not req.get("private") and \
                (constraint is None or not constraint.strip() or constraint.strip().lower() == "true"):
            got = self.store.grouped(req["type"], self.store.names_for(req["type"], req["projection"]), mono)
            if got is not None:
                return got
        entries = self.store.of_type(req["type"], mono)
        if constraint is not None and constraint.strip() and constraint.strip().lower() != "true":
            node = constraint_fn(constraint)
            entries = [e for e in entries if _holds(node, e)]
        private = bool(req.get("private"))
        projection = req.get("projection")
        if req.get("group") and not projection:
            raise RequestError("BAD_REQUEST", "QUERY: group needs a projection")
        if private:
            out = []
            for e in entries:
                obj = {**e.obj, **e.private} if e.private else e.obj
                out.append(_project(obj, projection) if projection else obj)
        elif projection:
            names = self.store.names_for(req["type"], projection)
            if req.get("group"):
                fast = _count_distinct([e.obj for e in entries], names)
                if fast is not None:
                    return fast
            project = _projector(names)
            out = [project(e.obj) for e in entries]
        else:
            out = [e.obj for e in entries]
        if req.get("group"):
            ads, counts = _group(out)
            return {"ads": ads, "counts": counts}
        return {"ads": out}


def constraint_fn(text: str) -> Any:
    """The parsed constraint (the parser caches trees by text, the evaluator compiles
    each tree once, so repeated queries pay neither again)."""
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as e:
        raise RequestError("BAD_REQUEST", f"QUERY: bad constraint {excerpt(text)!r}: {e}") from None


def _glidein(peer: Peer) -> bool:
    """The peer holds a glide-in's token (limited to advertising a startd)."""
    ident = peer.identity
    return ident is not None and glidein_ads.startd_only(ident.scopes)


def _token_annex(peer: Peer) -> str:
    """The annex the peer's glide-in token is for ("" when it names none)."""
    return peer.identity.annex if peer.identity is not None else ""


def _holds(node: Any, entry: Entry) -> bool:
    try:
        v = evaluate(node, entry.classad())
    except (EvaluationFailed, RequestError):
        return False
    if v is True:
        return True
    return type(v) in (int, float) and v != 0


if __name__ == "__main__":
    run(Collector)
