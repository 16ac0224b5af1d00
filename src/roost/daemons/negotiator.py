"""The negotiator: matches idle jobs to free slots (``python -m roost.daemons.negotiator``).

Event-driven with a periodic safety net: RESCHEDULE starts a cycle at once
unless one ran less than ``NEGOTIATOR_MIN_INTERVAL`` ago (then as soon as
that has passed); RESCHEDULEs that arrive during a cycle coalesce into one
more cycle. Every ``NEGOTIATOR_INTERVAL`` a cycle runs anyway, repairing
whatever a lost message missed.

A cycle: query the collector for Unclaimed ``Machine`` ads (with private
attributes: the ``ClaimId`` handed to the schedd) and ``Submitter`` ads;
ask each submitter's schedd (``ScheddAddress``) GET_REQUESTS; run the pure
``roost.core.matchmaker``; send each schedd its MATCHES.

Slots just matched stay Unclaimed in the collector until their startd
reports the claim, and cycles here are milliseconds apart, so the
negotiator remembers what it promised (``roost.core.promises``): a static
slot is not offered again until its startd's count of answered claim
requests moves (it has acted) or ``NEGOTIATOR_MATCH_HOLD`` seconds pass
(the schedd never claimed it); a partitionable slot offers only what is
left after outstanding promises. When a promise lapses with jobs still
waiting, a cycle runs then rather than at the next periodic one.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd
from roost.core.matchmaker import Match, Request, Slot, negotiate
from roost.core.promises import COUNTER, OFFER, WITHHOLD, PromiseBook
from roost.daemons.base import Daemon, run
from roost.net.adwire import obj_to_ad
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import Handler, Peer

# Attributes that change on every update without meaning anything changed.
_VOLATILE = frozenset(("LastHeardFrom", "MyCurrentTime"))
_PRIVATE = ("ClaimId", "ClaimIds", "Capability")


def _version(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in _VOLATILE}


@dataclass
class CycleStats:
    start: float
    duration: float = 0.0
    slots: int = 0
    submitters: int = 0
    requests: int = 0
    jobs_wanted: int = 0
    matches: int = 0
    rejected: int = 0
    evaluations: int = 0
    per_submitter: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    trigger: str = "periodic"

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "duration": round(self.duration, 6),
            "slots": self.slots,
            "submitters": self.submitters,
            "requests": self.requests,
            "jobs_wanted": self.jobs_wanted,
            "matches": self.matches,
            "rejected": self.rejected,
            "evaluations": self.evaluations,
            "per_submitter": self.per_submitter,
            "errors": self.errors,
            "trigger": self.trigger,
        }


def _answered(obj: dict[str, Any]) -> int:
    """The claim requests a slot's startd has answered (see ``roost.core.promises``)."""
    n = obj.get(COUNTER)
    return n if type(n) is int else 0


class Negotiator(Daemon):
    ad_type = "Negotiator"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("negotiator", "NEGOTIATOR", **kwargs)
        cfg = self.config
        self.interval = cfg.get_float("NEGOTIATOR_INTERVAL", 60.0) or 60.0
        self.min_interval = max(0.0, cfg.get_float("NEGOTIATOR_MIN_INTERVAL", 0.05) or 0.0)
        self.timeout = cfg.get_float("NEGOTIATOR_TIMEOUT", 10.0) or 10.0
        self.match_hold = cfg.get_float("NEGOTIATOR_MATCH_HOLD", 20.0) or 20.0
        self.update_interval = cfg.get_float("NEGOTIATOR_UPDATE_INTERVAL", self.update_interval) or 300.0
        self.pre_job_rank = self._expr("NEGOTIATOR_PRE_JOB_RANK")
        self.post_job_rank = self._expr("NEGOTIATOR_POST_JOB_RANK")
        self._wake: asyncio.Event | None = None
        self._trigger = "periodic"
        self._last_start = 0.0
        self.cycles = 0
        self.stats: deque[CycleStats] = deque(maxlen=20)
        self._schedds: dict[str, AsyncClient] = {}
        self._slot_cache: dict[str, tuple[dict[str, Any], ClassAd]] = {}
        self.promises = PromiseBook(self.match_hold)

    def _expr(self, knob: str) -> Any:
        text = (self.config.get(knob) or "").strip()
        if not text:
            return None
        from roost.classad.parser import parse_expr

        try:
            return parse_expr(text)
        except Exception as e:  # a bad knob must not stop the pool: log and ignore it
            self.log.error("ignoring %s = %r: %s", knob, text, e)
            return None

    # -- commands ----------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {"RESCHEDULE": self.h_reschedule, "CYCLE_STATS": self.h_cycle_stats}

    async def h_reschedule(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.reschedule(f"RESCHEDULE from {peer.address}")
        return {}

    async def h_cycle_stats(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "last": [s.as_dict() for s in reversed(self.stats)],
            "pending_slots": len(self.promises),
        }

    def reschedule(self, why: str = "reschedule") -> None:
        """Ask for a cycle as soon as the throttle allows (coalesces)."""
        self._trigger = why
        if self._wake is not None:
            self._wake.set()

    # -- the own ad ----------------------------------------------------------------------
    def ad(self) -> dict[str, Any]:
        ad: dict[str, Any] = {"NegotiatorIpAddr": self.address, "NumNegotiationCycles": self.cycles}
        if self.stats:
            last = self.stats[-1]
            ad["LastNegotiationCycleTime0"] = int(last.start)
            ad["LastNegotiationCycleDuration0"] = last.duration
            ad["LastNegotiationCycleMatches0"] = last.matches
            ad["LastNegotiationCycleNumSchedulers0"] = last.submitters
        return ad

    # -- the cycle loop -----------------------------------------------------------------------
    async def started(self) -> None:
        self._wake = asyncio.Event()
        self._wake.set()  # a first cycle at start-up
        self._trigger = "startup"
        self.spawn(self._loop(), "negotiation-loop")

    async def _loop(self) -> None:
        assert self._wake is not None
        while True:
            timeout, why = self.interval, "periodic"
            lapse = self.promises.next_expiry()
            if lapse is not None and lapse - time.monotonic() < timeout:
                timeout, why = max(0.0, lapse - time.monotonic()) + 0.001, "a promise lapsed"
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
            except TimeoutError:
                self._trigger = why
            wait = self._last_start + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()  # requests from here on get one more cycle
            trigger, self._trigger = self._trigger, "periodic"
            self._last_start = time.monotonic()
            try:
                await self.cycle(trigger)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.exception("negotiation cycle failed")
                failed = CycleStats(start=time.time(), trigger=trigger)
                failed.errors.append(f"internal: {type(e).__name__}: {e}")
                self._finish(failed, time.perf_counter())

    async def cycle(self, trigger: str = "manual") -> CycleStats:
        """One negotiation cycle; its statistics."""
        t0 = time.perf_counter()
        stats = CycleStats(start=time.time(), trigger=trigger)
        try:
            machines, submitters = await asyncio.gather(
                self.collector_call("QUERY", type="Machine", constraint='State =?= "Unclaimed"', private=True),
                self.collector_call("QUERY", type="Submitter"),
            )
        except (ConnectionError, RequestError) as e:
            stats.errors.append(f"collector: {e}")
            self.log.warning("cycle skipped: collector: %s", e)
            return self._finish(stats, t0)
        slots = self._slots(machines.get("ads") or [])
        stats.slots = len(slots)
        subs = [s for s in submitters.get("ads") or [] if isinstance(s.get("ScheddAddress"), str)]
        subs = [s for s in subs if not isinstance(s.get("IdleJobs"), int) or s["IdleJobs"] > 0]
        subs.sort(key=lambda s: str(s.get("Name")))
        stats.submitters = len(subs)
        if not subs or not slots:
            return self._finish(stats, t0)
        answers = await asyncio.gather(*(self._get_requests(s) for s in subs), return_exceptions=True)
        requests: dict[str, list[Request]] = {}
        order: list[str] = []
        for sub, answer in zip(subs, answers):
            name = str(sub.get("Name"))
            if isinstance(answer, BaseException):
                stats.errors.append(f"{name}: {answer}")
                self.log.warning("GET_REQUESTS for %s failed: %s", name, answer)
                continue
            reqs = self._requests(sub, answer, stats)
            if reqs:
                requests[name] = reqs
                order.append(name)
        stats.requests = sum(len(r) for r in requests.values())
        stats.jobs_wanted = sum(r.count for rs in requests.values() for r in rs)
        if not order:
            return self._finish(stats, t0)
        plan = negotiate(slots, requests, order, time.time(),
                         pre_job_rank=self.pre_job_rank, post_job_rank=self.post_job_rank)
        stats.evaluations = plan.evaluations
        stats.per_submitter = {k: v for k, v in plan.by_submitter.items() if v}
        stats.matches = len(plan.matches)
        self._remember(plan.matches)
        await self._send_matches(plan.matches, stats)
        return self._finish(stats, t0)

    def _finish(self, stats: CycleStats, t0: float) -> CycleStats:
        stats.duration = time.perf_counter() - t0
        self.cycles += 1
        self.stats.append(stats)
        if stats.matches or stats.errors:
            self.log.info(
                "cycle %d (%s): %d slots, %d submitters, %d requests (%d jobs), %d matches in %.1f ms%s",
                self.cycles, stats.trigger, stats.slots, stats.submitters, stats.requests,
                stats.jobs_wanted, stats.matches, stats.duration * 1e3,
                f"; errors: {stats.errors}" if stats.errors else "",
            )
        return stats

    # -- slots ----------------------------------------------------------------------------
    def _slots(self, objs: list[dict[str, Any]]) -> list[Slot]:
        """Slot views for the matchmaker, ClassAds reused while an ad has not changed,
        promises not yet acted on subtracted."""
        now = time.monotonic()
        seen: set[str] = set()
        out: list[Slot] = []
        for obj in objs:
            name = obj.get("Name")
            if not isinstance(name, str):
                continue
            seen.add(name)
            claim = obj.get("ClaimId")
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
            verdict = self.promises.check(name, _answered(obj), now)
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
            address = obj.get("MyAddress") or obj.get("StartdIpAddr")
            public = {k: v for k, v in obj.items() if k not in _PRIVATE}
            out.append(Slot(name, ad, claim, address if isinstance(address, str) else None, public))
        for gone in [n for n in self._slot_cache if n not in seen]:
            del self._slot_cache[gone]
        self.promises.keep_only(seen)
        out.sort(key=lambda s: s.name)
        return out

    def _remember(self, matches: list[Match]) -> None:
        now = time.monotonic()
        for m in matches:
            self.promises.note(m.slot.name, _answered(m.slot.extra), m.resources, now)

    # -- schedds -------------------------------------------------------------------------------
    def _schedd(self, address: str) -> AsyncClient:
        client = self._schedds.get(address)
        if client is None:
            client = self._schedds[address] = AsyncClient(address, timeout=self.timeout)
        return client

    async def _get_requests(self, sub: dict[str, Any]) -> dict[str, Any]:
        owner = sub.get("Owner")
        if not isinstance(owner, str):
            owner = str(sub.get("Name"))
        return await self._schedd(sub["ScheddAddress"]).call("GET_REQUESTS", owner=owner)

    def _requests(self, sub: dict[str, Any], answer: dict[str, Any], stats: CycleStats) -> list[Request]:
        name = str(sub.get("Name"))
        out = []
        items = answer.get("requests")
        if not isinstance(items, list):
            stats.errors.append(f"{name}: GET_REQUESTS answer has no requests list")
            return out
        for item in items:
            if not isinstance(item, dict):
                stats.rejected += 1
                continue
            count, ad_obj = item.get("count"), item.get("ad")
            if type(count) is not int or count <= 0 or not isinstance(ad_obj, dict):
                stats.rejected += 1
                continue
            try:
                ad = obj_to_ad(ad_obj)
            except RequestError as e:
                stats.rejected += 1
                self.log.warning("bad request ad from %s: %s", name, e)
                continue
            out.append(Request(name, item.get("autocluster"), count, ad, sub["ScheddAddress"]))
        return out

    async def _send_matches(self, matches: list[Match], stats: CycleStats) -> None:
        by_schedd: dict[str, list[dict[str, Any]]] = {}
        for m in matches:
            slot = m.slot
            entry = {
                "autocluster": m.request.autocluster,
                "submitter": m.request.submitter,
                "slot_name": slot.name,
                "claim_id": slot.claim_id,
                "startd_address": slot.address,
                "slot_ad": slot.extra,
            }
            if m.resources:
                entry["resources"] = m.resources
            by_schedd.setdefault(m.request.extra, []).append(entry)

        async def send(address: str, items: list[dict[str, Any]]) -> None:
            try:
                await self._schedd(address).call("MATCHES", matches=items)
            except (ConnectionError, RequestError) as e:
                stats.errors.append(f"MATCHES to {address}: {e}")
                for item in items:  # never claimed: offer those slots again
                    self.promises.forget(item["slot_name"])

        await asyncio.gather(*(send(a, items) for a, items in by_schedd.items()))

    async def stop(self) -> None:
        for client in self._schedds.values():
            await client.close()


__all__ = ["CycleStats", "Negotiator"]

if __name__ == "__main__":
    run(Negotiator)
