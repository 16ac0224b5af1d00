"""The lending pool's negotiator under flocking (issue 29, docs/flocking.md): a thin
shell over ``roost.core.flock``.

A Submitter ad whose name is of another ``UID_DOMAIN`` (``alice@a.example``; its
schedd authenticated to our collector as ``condor@a.example``, which the collector
let advertise only under an agreement) is a foreign submitter. Each cycle it is served
only where :func:`roost.core.flock.admission` says so (the agreement's hours,
idle_above, share, balance), its requests cut to the slots it may still have; what it
uses is charged by the accountant to its own ``user@their-domain`` name (the startd's
``RemoteUser``), and counted per connected pool in a :class:`FlockLedger` kept in
``$(SPOOL)/flock_ledger.json`` beside the accountant's file.

What our jobs receive from other pools comes from our own schedds' ads
(``FlockRunning``, the count each schedd has running in each pool), so the ledger
holds both directions and ``roost status -flock`` reads them through FLOCK_STATUS.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.config import Config
from roost.core.flock import (
    Admission,
    Agreement,
    FlockLedger,
    admission,
    agreement_for,
    name_domain,
    parse_agreements,
)
from roost.core.matchmaker import Request
from roost.net.errors import RequestError
from roost.net.private_files import write_private
from roost.net.server import Peer
from roost.vocabulary import SlotState

LEDGER_FILE = "flock_ledger.json"
#: seconds between reads of our schedds' ads (what our jobs hold in other pools)
SCHEDD_ADS_EVERY = 5.0
_BUSY = frozenset((SlotState.CLAIMED, SlotState.PREEMPTING))


def slot_counts(objs: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """(all our slots, those free now) from the collector's Machine ads, in cores for a
    partitionable slot (``TotalSlotCpus``, of which ``Cpus`` are left); its dynamic
    slots are inside that total already."""
    total = idle = 0
    for o in objs:
        if o.get("DynamicSlot") is True:
            continue
        free = o.get("State") == SlotState.UNCLAIMED
        if o.get("PartitionableSlot") is True:
            cpus, whole = o.get("Cpus"), o.get("TotalSlotCpus")
            left = int(cpus) if type(cpus) in (int, float) else 0
            total += int(whole) if type(whole) in (int, float) else left
            idle += left if free else 0
            continue
        total += 1
        idle += 1 if free else 0
    return total, idle


def foreign_usage(objs: Iterable[dict[str, Any]], agreements: list[Agreement], home: str) -> dict[str, int]:
    """Slots each connected pool's jobs hold here (by the domain of ``RemoteUser``)."""
    out: dict[str, int] = {}
    for o in objs:
        user = o.get("RemoteUser")
        if o.get("State") not in _BUSY or not isinstance(user, str):
            continue
        domain = name_domain(user)
        if not domain or domain.lower() == home.lower():
            continue
        a = agreement_for(agreements, domain=domain)
        if a is not None:
            out[a.name] = out.get(a.name, 0) + 1
    return out


def received_from(schedd_ads: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Our jobs running in each other pool now: the sum of our schedds' ``FlockRunning``
    (``pool=count, ...``)."""
    out: dict[str, int] = {}
    for ad in schedd_ads:
        text = ad.get("FlockRunning")
        if not isinstance(text, str):
            continue
        for part in text.split(","):
            pool, _, n = part.strip().partition("=")
            if pool and n.strip().isdigit():
                out[pool] = out.get(pool, 0) + int(n)
    return out


def cap_requests(requests: list[Request], limit: int | None) -> list[Request]:
    """A submitter's requests cut so that together they ask for at most ``limit`` slots."""
    if limit is None:
        return requests
    out = []
    left = max(0, limit)
    for r in requests:
        if left <= 0:
            break
        n = min(r.count, left)
        out.append(r if n == r.count else Request(r.submitter, r.autocluster, n, r.ad, r.extra))
        left -= n
    return out


def consent_only(ad: ClassAd) -> None:
    """A foreign request under ``owner_consent``: only slots whose owner set
    ``AllowForeignJobs = True`` may take it (the request's Requirements say so)."""
    old = ad.lookup("Requirements") if "Requirements" in ad else None
    ad["Requirements"] = ExprTree(f"({old if old is not None else 'true'}) && (TARGET.AllowForeignJobs =?= true)")


class FlockLending:
    """The negotiator's flocking state: the agreements, this cycle's admissions, the ledger."""

    def __init__(self, config: Config, *, uid_domain: str, spool: Path, log: logging.Logger) -> None:
        self.uid_domain = uid_domain
        self.log = log
        self.path = spool / LEDGER_FILE
        self.save_interval = max(1.0, config.get_float("ACCOUNTANT_SAVE_INTERVAL", 5.0) or 5.0)
        self._saved = 0.0
        self.ledger = self._load()
        self.admitted: dict[str, Admission] = {}  # submitter name -> this cycle's admission
        self._schedds: list[dict[str, Any]] = []  # our schedds' FlockRunning, read every few seconds
        self._schedds_at = -SCHEDD_ADS_EVERY
        self.lent: dict[str, int] = {}
        self.borrowed: dict[str, int] = {}
        self.configure(config)

    def configure(self, config: Config) -> None:
        self.agreements = parse_agreements(config.get)

    @staticmethod
    def wanted(config: Config) -> bool:
        """Whether this pool has any connected pool (else the negotiator skips all this)."""
        return any((config.get(k) or "").strip() for k in ("FLOCK_TO", "FLOCK_FROM", "FLOCK_AGREEMENTS"))

    def is_foreign(self, sub: dict[str, Any]) -> bool:
        domain = name_domain(str(sub.get("Name") or ""))
        return bool(domain) and domain.lower() != self.uid_domain.lower()

    async def admit_cycle(self, subs: list[dict[str, Any]], objs: list[dict[str, Any]],
                          query: Callable[..., Awaitable[dict[str, Any]]], now: float) -> list[dict[str, Any]]:
        """:meth:`admit`, with our schedds' ads (what runs in other pools) asked first."""
        mono = time.monotonic()
        if mono - self._schedds_at >= SCHEDD_ADS_EVERY:  # cycles can be 50 ms apart: not each one
            try:
                got = await query("QUERY", type="Scheduler", projection=["Name", "FlockRunning"])
                self._schedds = [a for a in got.get("ads") or [] if isinstance(a, dict)]
                self._schedds_at = mono
            except (ConnectionError, RequestError) as e:
                self.log.debug("flocking: schedd ads not read: %s", e)
        return self.admit(subs, objs, self._schedds, now)

    def admit(self, subs: list[dict[str, Any]], objs: list[dict[str, Any]],
              schedds: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        """The submitters served this cycle: ours all, foreign ones under admission.
        Advances the ledger at the rates seen now."""
        self.lent = foreign_usage(objs, self.agreements, self.uid_domain)
        self.borrowed = received_from(schedds)
        self.ledger.advance(now, giving=self.lent, receiving=self.borrowed)
        self._save(now)
        total, idle = slot_counts(objs)
        hour = time.localtime(now).tm_hour
        self.admitted = {}
        used = dict(self.lent)
        out = []
        for s in subs:
            if not self.is_foreign(s):
                out.append(s)
                continue
            name = str(s.get("Name"))
            group = name.rsplit("@", 1)[0]
            groups = [group.split(".", 1)[0]] if "." in group else []
            got = admission(user=name, domain=name_domain(name), agreements=self.agreements, hour=hour,
                            total_slots=total, idle_slots=idle, used_by_pool=used, ledger=self.ledger,
                            groups=groups, schedd_host=str(s.get("ScheddName") or "").rpartition("@")[2])
            self.admitted[name] = got
            if got.allowed:
                out.append(s)
            else:
                self.log.info("foreign submitter %s not served: %s", name, got.reason)
        return out

    def cap(self, per_ad: list[tuple[str, list[Request]]]) -> list[tuple[str, list[Request]]]:
        """Each admitted foreign submitter's requests cut to its admission's limit."""
        if not self.admitted:
            return per_ad
        left = {n: a.limit for n, a in self.admitted.items()}
        out = []
        for name, reqs in per_ad:
            if name in left:
                reqs = cap_requests(reqs, left[name])
                if self.admitted[name].owner_consent:
                    for r in reqs:
                        consent_only(r.ad)
                limit = left[name]
                if limit is not None:
                    left[name] = max(0, limit - sum(r.count for r in reqs))
            out.append((name, reqs))
        return out

    def status(self) -> list[dict[str, Any]]:
        """FLOCK_STATUS: one entry per connected pool."""
        out = []
        for a in self.agreements:
            direction = "both" if a.send and a.take else "send" if a.send else "take"
            out.append({
                "pool": a.name, "direction": direction, "domain": a.domain, "collector": a.collector,
                "lent": self.lent.get(a.name, 0), "borrowed": self.borrowed.get(a.name, 0),
                "given_hours": round(self.ledger.given.get(a.name, 0.0), 6),
                "received_hours": round(self.ledger.received.get(a.name, 0.0), 6),
                "reciprocity": round(self.ledger.reciprocity(a.name), 6),
                "refused": sorted({adm.reason for adm in self.admitted.values()
                                   if adm.agreement == a.name and not adm.allowed}),
            })
        return out

    # -- the ledger on disk ------------------------------------------------------------
    def _load(self) -> FlockLedger:
        try:
            return FlockLedger.from_json(json.loads(self.path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return FlockLedger()
        except (OSError, ValueError, TypeError, AttributeError) as e:
            self.log.error("%s cannot be read (%s): the flock ledger starts empty", self.path, e)
            return FlockLedger()

    def _save(self, now: float, force: bool = False) -> None:
        if not force and time.monotonic() - self._saved < self.save_interval:
            return
        try:
            write_private(self.path, json.dumps(self.ledger.to_json(), sort_keys=True).encode(), replace=True)
            self._saved = time.monotonic()
        except (OSError, ValueError) as e:
            self.log.error("cannot write %s: %s", self.path, e)

    def close(self) -> None:
        self._save(time.time(), force=True)


class FlockCalls:
    """The negotiator's flocking command, served whether flocking is on or off."""

    def __init__(self, lending: FlockLending | None) -> None:
        self.lending = lending

    async def h_flock_status(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """FLOCK_STATUS (``roost status -flock``): the connected pools; none where flocking is off."""
        return {"pools": self.lending.status() if self.lending is not None else []}


__all__ = ["FlockCalls", "consent_only", "FlockLending", "cap_requests", "foreign_usage", "received_from", "slot_counts"]
