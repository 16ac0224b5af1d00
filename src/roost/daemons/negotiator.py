"""The negotiator: matches idle jobs to free slots (``python -m roost.daemons.negotiator``).

Event-driven with a periodic safety net: RESCHEDULE starts a cycle at once
unless one ran less than ``NEGOTIATOR_MIN_INTERVAL`` ago (then as soon as
that has passed); RESCHEDULEs that arrive during a cycle coalesce into one
more cycle. Every ``NEGOTIATOR_INTERVAL`` a cycle runs anyway, repairing
whatever a lost message missed.

A cycle: query the collector for Unclaimed ``Machine`` ads (with private
attributes: the ``ClaimId`` handed to the schedd) and ``Submitter`` ads;
ask each submitter's schedd (``ScheddAddress``) GET_REQUESTS; run the pure
``roost.core.matchmaker``; send each schedd its MATCHES. A user who submits from
several schedds has a Submitter ad at each, all of one name (``user@UID_DOMAIN``):
each schedd is asked for its own requests and gets its own matches, but the name is
one submitter to the pie and the accountant (``roost.core.submitters``).

Slots just matched stay Unclaimed in the collector until their startd
reports the claim, and cycles here are milliseconds apart, so the
negotiator remembers what it promised (``roost.core.promises``): a static
slot is not offered again until its startd's count of answered claim
requests moves (it has acted) or ``NEGOTIATOR_MATCH_HOLD`` seconds pass
(the schedd never claimed it); a partitionable slot offers only what is
left after outstanding promises. When a promise lapses with jobs still
waiting, a cycle runs then rather than at the next periodic one.

Fair share (docs/policy.md): every cycle the slot ads of all states feed the
accountant (``roost.core.accountant``: usage per submitter = the SlotWeight
of the slots claimed in its name), whose state lives in
``$(SPOOL)/accountant.json`` (written atomically, at most every
``ACCOUNTANT_SAVE_INTERVAL`` seconds and at shutdown; a corrupt file is set
aside, never fatal). The plan comes from ``roost.core.fairshare.negotiate_fair``
(pie spins by effective priority, group quotas, concurrency limits, and,
with ``NEGOTIATOR_CONSIDER_PREEMPTION``, claimed slots offered through their
private ``PreemptClaimId``).

This module is the cycle: the collector's ads in, the slot views, usage and policy
knobs, the pure plan, promises out. Beside it, ``negotiator_schedds`` talks to schedds
(GET_REQUESTS, MATCHES) and ``negotiator_priorities`` keeps ``accountant.json`` and
answers the commands that change priorities, and ``negotiator_slots`` reads the slot
ads (the slots offered, the weight each submitter holds).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from roost.classad.parser import parse_expr
from roost.config.errors import ConfigError
from roost.core.accountant import Accountant, UserRecord
from roost.core.concurrency import (
    DEFAULT_CONCURRENCY_LIMIT,
    ConcurrencyLimits,
    parse_concurrency_limits,
)
from roost.core.fairshare import NONE_GROUP, GroupConfig, Submitter, negotiate_fair
from roost.core.matchmaker import Match, Request, Slot, negotiate
from roost.core.preemption import PreemptionPolicy
from roost.core.promises import Charge, PromiseBook
from roost.core.submitters import merge_requests
from roost.core.updown import UpDown, UpDownRates, preemption_priority
from roost.daemons.backoff import Backoff
from roost.daemons.base import Daemon, run
from roost.daemons.negotiator_flock import FlockCalls, FlockLending
from roost.daemons.negotiator_priorities import (
    AccountantFile,
    PriorityCommands,
    is_nice,
    record_obj,
)
from roost.daemons.negotiator_schedds import Schedds
from roost.daemons.negotiator_slots import SlotAds, answered
from roost.daemons.security import uid_domain
from roost.net.errors import RequestError
from roost.net.server import Handler, Peer

_NAME_LIST = re.compile(r"[\s,]+")
ACCOUNTANT_FILE = "accountant.json"


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
        self.promises = PromiseBook(self.match_hold)
        self.schedds = Schedds(self.timeout, self.promises, self.log, self.client)
        # -- Up-Down (NEGOTIATOR_ALGORITHM = updown): submit machines, not users ------
        algorithm = (cfg.get("NEGOTIATOR_ALGORITHM") or "fairshare").strip().lower()
        if algorithm not in ("fairshare", "updown"):
            self.log.error("ignoring NEGOTIATOR_ALGORITHM = %r (fairshare or updown): fair share", algorithm)
            algorithm = "fairshare"
        self.updown_mode = algorithm == "updown"
        self.updown = UpDown()
        self.updown_rates = UpDownRates(
            up=max(0.0, cfg.get_float("UPDOWN_UP_RATE", 1.0) or 0.0),
            down=max(0.0, cfg.get_float("UPDOWN_DOWN_RATE", 1.0) or 0.0),
            decay=max(0.0, cfg.get_float("UPDOWN_DECAY_RATE", 1.0) or 0.0),
        )
        self._station_of: dict[str, set[str]] = {}  # submitter name -> its schedds (ScheddName)
        # -- fair share ---------------------------------------------------------------
        self.halflife = cfg.get_float("PRIORITY_HALFLIFE", 86400.0) or 86400.0
        self.default_factor = cfg.get_float("DEFAULT_PRIO_FACTOR", 1000.0) or 1000.0
        self.nice_factor = cfg.get_float("NICE_USER_PRIO_FACTOR", 1e10) or 1e10
        self.save_interval = max(0.0, cfg.get_float("ACCOUNTANT_SAVE_INTERVAL", 5.0) or 0.0)
        self.consider_preemption = cfg.get_bool("NEGOTIATOR_CONSIDER_PREEMPTION", True) is not False
        self.use_slot_weights = cfg.get_bool("NEGOTIATOR_USE_SLOT_WEIGHTS", True) is not False
        self.accountant_path = self.spool_dir / ACCOUNTANT_FILE
        self.accountant_file = AccountantFile(self.accountant_path, self.log)
        self.priority_commands = PriorityCommands(self)
        # replaced by the saved state in start(); a fresh one until then
        self._policy_warned: set[str] = set()
        self.accountant = Accountant(**self._accountant_kw())
        self._acct_dirty = False
        self._acct_saved = 0.0
        self._last_usage: dict[str, float] = {}  # weight held per submitter, last cycle
        self._last_limits_used: dict[str, float] = {}  # concurrency limits in use, last cycle
        self._usage_at: float | None = None  # when the two above were taken
        self._group_quota: dict[str, float] = {}  # the last plan's, keys lower case
        self.slot_ads = SlotAds(self.promises, self.log, self.use_slot_weights)
        # flocking (negotiator_flock.py): other pools' submitters under their agreements
        self.flock = FlockLending(cfg, uid_domain=uid_domain(cfg), spool=self.spool_dir, log=self.log) \
            if FlockLending.wanted(cfg) else None
        self.flock_calls = FlockCalls(self.flock)

    def _expr(self, knob: str) -> Any:
        text = (self.config.get(knob) or "").strip()
        if not text:
            return None
        try:
            return parse_expr(text)
        except Exception as e:  # a bad knob must not stop the pool: log and ignore it
            self.log.error("ignoring %s = %r: %s", knob, text, e)
            return None

    # -- commands ----------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {
            "RESCHEDULE": self.h_reschedule,
            "CYCLE_STATS": self.h_cycle_stats,
            "USERPRIO": self.h_userprio,
            **self.priority_commands.handlers(),
            "LIMITS": self.h_limits,
            "FLOCK_STATUS": self.flock_calls.h_flock_status,
        }

    async def h_reschedule(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        # a schedd names matched slots whose startd it could not connect to: their
        # promises end once those startds are heard from again (promises.unreachable)
        unclaimed = req.get("unclaimed")
        if isinstance(unclaimed, list):
            wall = time.time()
            for name in unclaimed[:1000]:
                if isinstance(name, str):
                    self.promises.unreachable(name, wall)
        self.reschedule(f"RESCHEDULE from {peer.address}")
        return {}

    async def h_cycle_stats(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        return {
            "cycles": self.cycles,
            "last": [s.as_dict() for s in reversed(self.stats)],
            "pending_slots": len(self.promises),
        }

    async def h_userprio(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        acct = self.accountant
        acct.update(self._last_usage, time.time())  # fresh figures, not those of the last cycle
        self._acct_dirty = True
        out: dict[str, Any] = {"users": [record_obj(r, acct) for r in acct.records()]}
        if self.updown_mode:
            out["stations"] = [{"name": s, "index": self.updown.index.get(s, 0.0)}
                               for s in self.updown.order(set(self.updown.index).union(*self._station_of.values()))]
        return out

    async def h_limits(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """Concurrency limits and accounting groups (``q -analyze``): what is in use from
        the collector's slot ads now (the last cycle's figures when it cannot answer); a
        group's allocation is the last cycle's."""
        try:
            machines, submitters = await asyncio.gather(
                self.collector_call("QUERY", type="Machine", private=True),
                self.collector_call("QUERY", type="Submitter"),
            )
            objs = [o for o in machines.get("ads") or [] if isinstance(o, dict)]
            subs = [s for s in submitters.get("ads") or [] if isinstance(s, dict)]
            (usage, used), as_of = self._usage(objs, subs), time.time()
        except (ConnectionError, RequestError) as e:
            self.log.warning("LIMITS: collector: %s (answering with the last cycle's figures)", e)
            usage, used, as_of = self._last_usage, self._last_limits_used, self._usage_at
        cl = self._concurrency(used)
        groups = self._groups()
        held: dict[str, float] = {}
        for name, w in usage.items():
            g = self._group_of(name, groups) or NONE_GROUP
            held[g.lower()] = held.get(g.lower(), 0.0) + w
        return {
            "as_of": as_of,
            "concurrency": {"limits": cl.limits, "default": cl.default, "group_defaults": cl.group_defaults,
                            "in_use": cl.in_use},
            "groups": [{"name": g.name, "quota": g.quota, "dynamic": g.dynamic, "accept_surplus": g.accept_surplus,
                        "allocation": self._group_quota.get(g.name.lower()), "held": held.get(g.name.lower(), 0.0)}
                       for g in groups],
        }

    def accountant_changed(self) -> None:
        """A command changed the accountant: save it now and run a cycle by the new priorities."""
        self._acct_dirty = True
        self.save_accountant(force=True)
        self.reschedule("user priorities changed")

    # -- the accountant's state ------------------------------------------------------------
    def _accountant_kw(self) -> dict[str, Any]:
        """The accountant's configuration: half-life and factors, with HTCondor's
        ``GROUP_PRIO_FACTOR_<group>`` (groups of GROUP_NAMES) and ``REMOTE_PRIO_FACTOR``
        (default 10000, for names outside ``ACCOUNTANT_LOCAL_DOMAIN`` when that is set)."""
        group_factors = {}
        for g in self._groups():
            f = self._knob("get_float", f"GROUP_PRIO_FACTOR_{g.name}", None)
            if f is not None:
                group_factors[g.name] = f
        return {"halflife": self.halflife, "default_factor": self.default_factor, "nice_factor": self.nice_factor,
                "group_factors": group_factors,
                "remote_factor": self._knob("get_float", "REMOTE_PRIO_FACTOR", 10000.0),
                "local_domain": (self.config.get("ACCOUNTANT_LOCAL_DOMAIN") or "").strip() or None}

    def load_accountant(self) -> None:
        """Read $(SPOOL)/accountant.json; a corrupt file is renamed aside and logged."""
        self.accountant, updown = self.accountant_file.load(**self._accountant_kw())
        if updown is not None:
            self.updown = updown

    def save_accountant(self, force: bool = False) -> bool:
        """Write the accountant's state (temp file + rename) if it changed and the last
        write is ``ACCOUNTANT_SAVE_INTERVAL`` old (or ``force``). Whether it wrote."""
        if not self._acct_dirty:
            return False
        now = time.monotonic()
        if not force and now - self._acct_saved < self.save_interval:
            return False
        if not self.accountant_file.write(self.accountant, self.updown):
            return False
        self._acct_dirty = False
        self._acct_saved = now
        return True

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
    async def start(self) -> None:
        self.load_accountant()

    async def started(self) -> None:
        self._wake = asyncio.Event()
        self._wake.set()  # a first cycle at start-up
        self._trigger = "startup"
        self.spawn(self._loop(), "negotiation-loop")

    async def _loop(self) -> None:
        assert self._wake is not None
        # a cycle cut short by a fault (the collector or a schedd unreachable) is tried
        # again soon, 1 s doubling up to the interval, rather than at the next periodic
        # cycle: after a collector restart idle jobs waited a whole interval by free slots
        retry = Backoff(constant=1.0, factor=2.0, ceiling=self.interval, recover=float("inf"))
        faulted = False
        while True:
            timeout, why = self.interval, "periodic"
            if faulted:
                retry.ceiling = self.interval  # RECONFIG may have changed it
                timeout, why = min(timeout, retry.died(time.monotonic())), "retry after a fault"
            lapse = self.promises.next_expiry()
            if lapse is not None and lapse - time.monotonic() < timeout:
                timeout, why = max(0.0, lapse - time.monotonic()) + 0.001, "a promise lapsed"
            try:
                async with asyncio.timeout(timeout):  # not wait_for: see Daemon._shutdown
                    await self._wake.wait()
            except TimeoutError:
                self._trigger = why
            wait = self._last_start + self.min_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()  # requests from here on get one more cycle
            trigger, self._trigger = self._trigger, "periodic"
            self._last_start = time.monotonic()
            try:
                faulted = bool((await self.cycle(trigger)).errors)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self.log.exception("negotiation cycle failed")
                failed = CycleStats(start=time.time(), trigger=trigger)
                failed.errors.append(f"internal: {type(e).__name__}: {e}")
                self._finish(failed, time.perf_counter())
                faulted = True
            if not faulted:
                retry.reset()

    async def cycle(self, trigger: str = "manual") -> CycleStats:
        """One negotiation cycle; its statistics."""
        t0 = time.perf_counter()
        stats = CycleStats(start=time.time(), trigger=trigger)
        self.promises.drop_lapsed(time.monotonic())  # else a lapsed one wakes us at once, forever
        try:
            machines, submitters = await asyncio.gather(
                self.collector_call("QUERY", type="Machine", private=True),
                self.collector_call("QUERY", type="Submitter"),
            )
        except (ConnectionError, RequestError) as e:
            stats.errors.append(f"collector: {e}")
            self.log.warning("cycle skipped: collector: %s", e)
            return self._finish(stats, t0)
        now = time.time()
        objs = [o for o in machines.get("ads") or [] if isinstance(o, dict)]
        all_subs = [s for s in submitters.get("ads") or [] if isinstance(s, dict)]
        usage, limits_used = self._usage(objs, all_subs)
        self._last_usage, self._last_limits_used, self._usage_at = usage, limits_used, now
        self.accountant.update(usage, now)
        if self.updown_mode:
            self._advance_updown(all_subs, now)
        self._acct_dirty = True
        self.save_accountant()
        preemption = self._preemption_policy() if self.consider_preemption else None
        subs = [s for s in all_subs if isinstance(s.get("ScheddAddress"), str)]
        subs = [s for s in subs if not isinstance(s.get("IdleJobs"), int) or s["IdleJobs"] > 0]
        if self.flock is not None:  # foreign submitters only under their agreements
            subs = await self.flock.admit_cycle(subs, objs, self.collector_call, now)
        subs.sort(key=lambda s: str(s.get("Name")))
        stats.submitters = len(subs)
        if not subs:  # nobody waits: no slot needs to be looked at, let alone converted
            return self._finish(stats, t0)
        prios = {str(s.get("Name")): self._eff_prio(str(s.get("Name"))) for s in subs}
        slots = self._slots(objs, preemption)
        stats.slots = len(slots)
        if not slots:
            return self._finish(stats, t0)
        answers = await asyncio.gather(*(self.schedds.get_requests(s) for s in subs), return_exceptions=True)
        per_ad: list[tuple[str, list[Request]]] = []
        for sub, answer in zip(subs, answers):
            name = str(sub.get("Name"))
            if isinstance(answer, BaseException):
                stats.errors.append(f"{name} at {sub.get('ScheddName')}: {answer}")
                self.log.warning("GET_REQUESTS for %s at %s failed: %s", name, sub.get("ScheddName"), answer)
                continue
            per_ad.append((name, self.schedds.requests(sub, answer, stats, prios.get(name))))
        if self.flock is not None:
            per_ad = self.flock.cap(per_ad)
        # one submitter however many schedds it submits from; each request keeps its schedd
        requests, order = merge_requests(per_ad)
        stats.requests = sum(len(r) for r in requests.values())
        stats.jobs_wanted = sum(r.count for rs in requests.values() for r in rs)
        if not order:
            return self._finish(stats, t0)
        order.sort(key=lambda n: (prios.get(n, 0.0), self._user_prio(n), n))
        plan = self._plan(slots, requests, order, prios, usage, limits_used, preemption, now)
        self._group_quota = plan.group_quota
        stats.evaluations = plan.evaluations
        stats.per_submitter = {k: v for k, v in plan.by_submitter.items() if v}
        stats.matches = len(plan.matches)
        self._remember(plan.matches)
        await self.schedds.send_matches(plan.matches, stats)
        return self._finish(stats, t0)

    # -- fair share -------------------------------------------------------------------------
    def _eff_prio(self, name: str) -> float:
        """The submitter's effective priority (lower is better): its own, or under Up-Down
        its submit machine's index (:func:`preemption_priority`), which then decides the
        order, ``SubmitterUserPrio`` and the ``RemoteUserPrio`` preemption compares."""
        if self.updown_mode:  # a user at several submit machines: the best of them
            stations = self._station_of.get(name)
            index = min((self.updown.index.get(st, 0.0) for st in stations), default=0.0) if stations else 0.0
            return preemption_priority(index)
        return self._user_prio(name)

    def _user_prio(self, name: str) -> float:
        """The accountant's effective priority of ``name`` (real × factor)."""
        return self.accountant.effective_priority(name, nice=is_nice(name))

    def _advance_updown(self, subs: list[dict[str, Any]], now: float) -> None:
        """Each submit machine's weight in use and whether it waits, from the Submitter
        ads its schedd sends; then the indexes move (``roost.core.updown``)."""
        held: dict[str, float] = {}
        waiting: set[str] = set()
        station_of: dict[str, set[str]] = {}
        for s in subs:
            name, station = s.get("Name"), s.get("ScheddName")
            if not isinstance(station, str) or not station:
                station = s.get("ScheddAddress")
            if not isinstance(name, str) or not isinstance(station, str) or not station:
                continue
            station_of.setdefault(name, set()).add(station)
            w = s.get("WeightedRunningJobs")
            if type(w) in (int, float) and w > 0:
                held[station] = held.get(station, 0.0) + float(w)
            idle = s.get("IdleJobs")
            if type(idle) is int and idle > 0:
                waiting.add(station)
        self._station_of = station_of
        self.updown.advance(held, waiting, now, self.updown_rates)

    def _groups(self) -> list[Any]:
        names = [g for g in _NAME_LIST.split(self.config.get("GROUP_NAMES") or "") if g]
        if not names:
            return []
        surplus_all = self._knob("get_bool", "GROUP_ACCEPT_SURPLUS", False) is True
        out = []
        for g in names:
            quota = self._knob("get_float", f"GROUP_QUOTA_{g}", None)
            dynamic = self._knob("get_float", f"GROUP_QUOTA_DYNAMIC_{g}", None)
            surplus = self._knob("get_bool", f"GROUP_ACCEPT_SURPLUS_{g}", None)
            out.append(GroupConfig(name=g, quota=quota, dynamic=dynamic,
                                   accept_surplus=surplus_all if surplus is None else bool(surplus)))
        return out

    def _knob(self, getter: str, name: str, default: Any) -> Any:
        """A typed policy knob read every cycle; a bad value is logged once and counts
        as unset (``default``), so one typo does not stop every cycle."""
        try:
            return getattr(self.config, getter)(name, default)
        except ConfigError as e:
            self._warn_once(f"knob:{name}", f"ignoring {name}: {e}")
            return default

    @staticmethod
    def _group_of(name: str, groups: list[Any]) -> str | None:
        """The configured accounting group a submitter belongs to: the longest
        GROUP_NAMES entry its name (before ``@``) starts with, followed by a dot."""
        base = name.split("@", 1)[0]
        best = None
        for g in groups:
            gname = g.name
            if base.lower().startswith(gname.lower() + ".") and (best is None or len(gname) > len(best)):
                best = gname
        return best

    def _record(self, name: str) -> UserRecord | None:
        """The accountant's record of ``name`` (floor, ceiling, usage), or None."""
        return self.accountant.get(name)

    def _concurrency(self, used: dict[str, float]) -> ConcurrencyLimits:
        """``<NAME>_LIMIT`` knobs, ``CONCURRENCY_LIMIT_DEFAULT`` and its per-prefix
        ``CONCURRENCY_LIMIT_DEFAULT_<PREFIX>`` (for names ``prefix.rest``), with ``used``."""
        limits: dict[str, float] = {}
        group_defaults: dict[str, float] = {}
        prefix = "CONCURRENCY_LIMIT_DEFAULT_"
        for knob in self.config.names():
            upper = knob.upper()
            if upper.startswith(prefix) and len(knob) > len(prefix):
                v = self._knob("get_float", knob, None)
                if v is not None:
                    group_defaults[knob[len(prefix):].lower()] = v
            elif upper.endswith("_LIMIT") and len(knob) > 6:
                v = self.config.get_float(knob, None) if _is_number(self.config.get(knob)) else None
                if v is not None:
                    limits[knob[:-6].lower()] = v
        default = self._knob("get_float", "CONCURRENCY_LIMIT_DEFAULT", DEFAULT_CONCURRENCY_LIMIT)
        return ConcurrencyLimits(limits=limits, default=DEFAULT_CONCURRENCY_LIMIT if default is None else default,
                                 in_use=dict(used), group_defaults=group_defaults)

    def _preemption_policy(self) -> Any:
        """PreemptionPolicy from PREEMPTION_REQUIREMENTS/PREEMPTION_RANK (built once)."""
        if not hasattr(self, "_preempt_policy"):
            self._preempt_policy = self._build_preemption_policy()
        return self._preempt_policy

    def _build_preemption_policy(self) -> PreemptionPolicy | None:
        req = (self.config.get("PREEMPTION_REQUIREMENTS") or "").strip() or None
        rank = (self.config.get("PREEMPTION_RANK") or "").strip() or None
        try:
            return PreemptionPolicy.from_config(requirements=req, rank=rank, consider=True)
        except Exception as e:
            self._warn_once("preemption-config", f"no preemption: bad policy: {e}")
            return None

    def _warn_once(self, key: str, msg: str) -> None:
        if key not in self._policy_warned:
            self._policy_warned.add(key)
            self.log.warning("%s", msg)

    def _plan(self, slots: list[Slot], requests: dict[str, list[Request]], order: list[str],
              prios: dict[str, float], usage: dict[str, float],
              limits_used: dict[str, float], preemption: Any, now: float) -> Any:
        if self.updown_mode:  # strict order of submit machines: no pie, groups or floors
            return negotiate(slots, requests, order, now, pre_job_rank=self.pre_job_rank,
                             post_job_rank=self.post_job_rank, concurrency=self._concurrency(limits_used),
                             preemption=preemption, submitter_prio=prios)
        groups = self._groups()
        names = list(order)
        if groups:  # what a group's members run counts against its quota, idle jobs or not
            names += sorted(n for n, w in usage.items()
                            if w > 0 and n not in requests and self._group_of(n, groups) is not None)
        entries = []
        dedicated = _dedicated_weights(slots, self.slot_ads.weight) if any(
            n.startswith(DEDICATED_PREFIX) for n in names) else {}
        for name in names:
            rec = self._record(name)
            prio = prios[name] if name in prios else self._eff_prio(name)
            floor = rec.floor if rec else None
            if name in dedicated:
                # the slots whose owners gave them to this dedicated scheduler are its floor:
                # a wide parallel job is not held to a slice of a pool busy with others' jobs
                floor = max(floor or 0.0, dedicated[name])
            entries.append(Submitter(name=name, eff_prio=prio, running_weight=usage.get(name, 0.0),
                                     group=self._group_of(name, groups),
                                     floor=floor, ceiling=rec.ceiling if rec else None,
                                     usage=rec.usage if rec else 0.0))
        return negotiate_fair(slots, requests, entries, now, groups=groups,
                              pre_job_rank=self.pre_job_rank, post_job_rank=self.post_job_rank,
                              concurrency=self._concurrency(limits_used), preemption=preemption)

    def _finish(self, stats: CycleStats, t0: float) -> CycleStats:
        stats.duration = time.perf_counter() - t0
        self.cycles += 1
        self.stats.append(stats)
        # a cycle that matched nothing for someone waiting says so too: that it ran is
        # what "nothing runs" means (and what a test waits for instead of sleeping)
        if stats.matches or stats.errors or stats.submitters:
            self.log.info(
                "cycle %d (%s): %d slots, %d submitters, %d requests (%d jobs), %d matches in %.1f ms%s",
                self.cycles, stats.trigger, stats.slots, stats.submitters, stats.requests,
                stats.jobs_wanted, stats.matches, stats.duration * 1e3,
                f"; errors: {stats.errors}" if stats.errors else "",
            )
        return stats

    def _slots(self, objs: list[dict[str, Any]], preemption: Any = None) -> list[Slot]:
        """The slots offered this cycle (``negotiator_slots.SlotAds.offered``)."""
        return self.slot_ads.offered(objs, preemption, self._eff_prio)

    def _usage(self, objs: list[dict[str, Any]],
               subs: list[dict[str, Any]]) -> tuple[dict[str, float], dict[str, float]]:
        """Weight held per submitter and concurrency limits in use (``SlotAds.usage``)."""
        return self.slot_ads.usage(objs, subs)

    def _remember(self, matches: list[Match]) -> None:
        now = time.monotonic()  # promises and promised concurrency limits
        for m in matches:
            text = m.request.ad.eval("ConcurrencyLimits") if "ConcurrencyLimits" in m.request.ad else None
            charge = Charge(m.submitter, m.weight, parse_concurrency_limits(text) or {})
            self.promises.note(m.slot.name, answered(m.slot.extra), m.resources, now, charge)

    async def stop(self) -> None:
        self.save_accountant(force=True)
        if self.flock is not None:
            self.flock.close()
        await self.schedds.close()


def _is_number(text: str | None) -> bool:
    try:
        float(text or "")
    except ValueError:
        return False
    return True



DEDICATED_PREFIX = "DedicatedScheduler@"


def _dedicated_weights(slots: list[Slot], weight: Any) -> dict[str, float]:
    """Per dedicated scheduler (a slot's ``DedicatedScheduler``), the weight of its slots."""
    out: dict[str, float] = {}
    for slot in slots:
        obj = slot.extra if isinstance(slot.extra, dict) else {}
        name = obj.get("DedicatedScheduler")
        if isinstance(name, str) and name.startswith(DEDICATED_PREFIX):
            out[name] = out.get(name, 0.0) + weight(obj)
    return out

__all__ = ["CycleStats", "Negotiator"]

if __name__ == "__main__":
    run(Negotiator)
