"""Flocking between pools under their owners' agreements (issue 29): the decisions.

Each pool stays its own authority. A schedd sends idle jobs to other pools' central
managers (HTCondor's ``FLOCK_TO``) and claims their slots directly; the other pool
decides whether, when and how much it lends. HTCondor has only allow-lists for that
(``FLOCK_FROM``); roost adds bilateral agreements, one per connected pool::

    FLOCK_AGREEMENTS = physics, chem
    FLOCK_AGREEMENT_physics = collector = cm.physics.example; direction = both; \\
        domain = physics.example; users = alice, group_hep; share = 25%; \\
        idle_above = 2; hours = 20-7; balance = 500; owner_consent = true

- ``direction``: ``send`` (our jobs there), ``take`` (their jobs here) or ``both``.
- ``users``: accounting users (``alice`` or ``alice@domain``) or groups (``group_x``)
  whose jobs cross, in both directions; empty: everyone.
- The lending side's conditions (``take``): ``hours`` (local hours, ``20-7`` crosses
  midnight), ``idle_above`` (only while more than N of our slots stay idle for our own
  jobs), ``share`` (a count of slots, or a percentage of ours), ``owner_consent`` (only
  on machines whose owner set ``AllowForeignJobs = True``), ``balance`` (the most
  slot-hours the other pool may be ahead of the exchange before it must lend again).
- ``domain``: the other pool's ``UID_DOMAIN``: its schedds authenticate as
  ``condor@domain``, its users are ``user@domain``; ``trust_domain`` the issuer of its
  tokens (what a host that holds tokens of both presents to it).

The pieces, each a function of state (time is a parameter):

- :func:`parse_agreements`: the configuration above plus HTCondor's plain ``FLOCK_TO``
  and ``FLOCK_FROM``, errors naming the knob.
- :func:`outbound_plan` (the schedd): which waiting jobs may leave home this cycle and
  to which pools. Home first: a job flocks only after ``FLOCK_AFTER`` seconds idle, or
  when no machine at home could ever run it, and never while other pools' jobs hold
  slots at home that it could use (those are taken back first; two pools never lend
  to each other at the same time). The flock level grows by ``FLOCK_INCREMENT`` pools
  every ``FLOCK_AFTER`` seconds of unmet need, as HTCondor's does per cycle.
- :func:`admission` (the lending pool's negotiator): whether a foreign submitter is
  served now and how many more slots it may have, with the reason when not.
- :class:`FlockLedger`: slot-hours given to and received from each pool, decaying
  with a half-life, their reciprocity, and how far a pool is ahead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

SEND, TAKE, BOTH = "send", "take", "both"
_DIRECTIONS = {SEND: (True, False), TAKE: (False, True), BOTH: (True, True)}
_HOUR = 3600.0


class FlockConfigError(ValueError):
    """A flocking knob that cannot be used: ``knob`` names it, the message says why."""

    def __init__(self, knob: str, message: str) -> None:
        super().__init__(f"{knob}: {message}")
        self.knob = knob


@dataclass(frozen=True)
class Hours:
    """Hours of the local day, ``start`` included, ``end`` not; start > end crosses
    midnight (``20-7`` is the night)."""

    start: int
    end: int

    def contains(self, hour: int) -> bool:
        if self.start <= self.end:
            return self.start <= hour < self.end
        return hour >= self.start or hour < self.end

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"


@dataclass(frozen=True)
class Agreement:
    """One connected pool and what crosses between us (see the module's docstring)."""

    name: str
    collector: str = ""
    send: bool = True
    take: bool = False
    domain: str = ""
    trust_domain: str = ""
    users: frozenset[str] = frozenset()
    schedds: frozenset[str] = frozenset()
    hours: Hours | None = None
    idle_above: int = 0
    share: float | None = None  # < 1: a fraction of our slots; >= 1: a count
    owner_consent: bool = False
    balance: float | None = None  # slot-hours

    def admits_user(self, user: str, groups: Sequence[str] = ()) -> bool:
        """Whether ``user``'s jobs (``name@domain``, or with accounting ``groups``) cross."""
        if not self.users:
            return True
        bare = user.split("@", 1)[0]
        return user in self.users or bare in self.users or any(g in self.users for g in groups)

    def share_slots(self, total_slots: int) -> int | None:
        """The most of our ``total_slots`` this pool's jobs may hold; None: no limit."""
        if self.share is None:
            return None
        if self.share < 1:
            return int(math.floor(self.share * total_slots))
        return int(self.share)


# -- the configuration -----------------------------------------------------------------


def _words(text: str | None) -> list[str]:
    return [w for w in (text or "").replace(",", " ").split() if w]


def _hours(knob: str, text: str) -> Hours:
    try:
        a, b = (int(x) for x in text.split("-"))
    except ValueError:
        raise FlockConfigError(knob, f"hours = {text!r}: expected START-END in hours of the day, e.g. 20-7") from None
    if not (0 <= a <= 23 and 0 <= b <= 24) or a == b:
        raise FlockConfigError(knob, f"hours = {text!r}: hours run 0-23 (end 24) and must not be equal")
    return Hours(a, b % 24 if b == 24 and a > 0 else b)


def _share(knob: str, text: str) -> float:
    try:
        if text.endswith("%"):
            v = float(text[:-1]) / 100
            if not 0 < v < 1:
                raise ValueError
            return v
        v = float(text)
        if v < 1 or v != int(v):
            raise ValueError
        return v
    except ValueError:
        raise FlockConfigError(knob, f"share = {text!r}: expected a count of slots (e.g. 40) "
                                     "or a percentage below 100 (e.g. 25%)") from None


def _bool(knob: str, key: str, text: str) -> bool:
    low = text.lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise FlockConfigError(knob, f"{key} = {text!r}: expected true or false")


def _number(knob: str, key: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if v < 0:
        raise FlockConfigError(knob, f"{key} = {text!r}: expected a number of 0 or more")
    return v


_KEYS = ("collector", "direction", "domain", "trust_domain", "users", "schedds", "hours", "idle_above",
         "share", "owner_consent", "balance")


def parse_agreement(name: str, text: str, knob: str | None = None) -> Agreement:
    """One ``FLOCK_AGREEMENT_<name>`` value: ``key = value`` pairs separated by ``;``."""
    knob = knob or f"FLOCK_AGREEMENT_{name}"
    fields: dict[str, Any] = {}
    seen: set[str] = set()
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or key not in _KEYS:
            raise FlockConfigError(knob, f"{part!r}: expected KEY = VALUE with KEY one of {', '.join(_KEYS)}")
        if key in seen:
            raise FlockConfigError(knob, f"{key} is given twice")
        seen.add(key)
        if key == "direction":
            if value.lower() not in _DIRECTIONS:
                raise FlockConfigError(knob, f"direction = {value!r}: expected send, take or both")
            fields["send"], fields["take"] = _DIRECTIONS[value.lower()]
        elif key in ("users", "schedds"):
            fields[key] = frozenset(_words(value))
        elif key == "hours":
            fields[key] = _hours(knob, value)
        elif key == "idle_above":
            fields[key] = int(_number(knob, key, value))
        elif key == "share":
            fields[key] = _share(knob, value)
        elif key == "owner_consent":
            fields[key] = _bool(knob, key, value)
        elif key == "balance":
            fields[key] = _number(knob, key, value)
        else:
            fields[key] = value
    agreement = Agreement(name=name, **fields)
    if agreement.send and not agreement.collector:
        raise FlockConfigError(knob, "an agreement that sends our jobs there needs that pool's collector = HOST[:PORT]")
    return replace(agreement, domain=agreement.domain or name, trust_domain=agreement.trust_domain or agreement.domain or name)


def parse_agreements(get: Callable[[str], str | None]) -> list[Agreement]:
    """Every connected pool, in the order the schedd tries them: ``FLOCK_TO``'s order
    (HTCondor's), then agreements not in it. A ``FLOCK_TO`` host without an agreement
    is HTCondor's plain flocking (our jobs there, the other pool decides); a
    ``FLOCK_FROM`` host one whose schedds' jobs run here, on no further condition."""
    out: dict[str, Agreement] = {}
    for name in _words(get("FLOCK_AGREEMENTS")):
        if name in out:
            raise FlockConfigError("FLOCK_AGREEMENTS", f"{name} is listed twice")
        text = get(f"FLOCK_AGREEMENT_{name}")
        if text is None or not text.strip():
            raise FlockConfigError(f"FLOCK_AGREEMENT_{name}", "not set, yet FLOCK_AGREEMENTS names it")
        out[name] = parse_agreement(name, text)
    by_collector = {a.collector: a for a in out.values() if a.collector}
    ordered: list[Agreement] = []
    for host in _words(get("FLOCK_TO")):
        a = by_collector.get(host) or out.get(host)
        if a is None:
            a = Agreement(name=host, collector=host, domain=host, trust_domain=host)
            out[host] = a
        if a in ordered:
            continue
        if not a.send:
            raise FlockConfigError("FLOCK_TO", f"{host}: its agreement ({a.name}) does not send our jobs there")
        ordered.append(a)
    ordered += [a for a in out.values() if a not in ordered]
    hosts = _words(get("FLOCK_FROM"))
    if hosts:
        ordered.append(Agreement(name="FLOCK_FROM", send=False, take=True, schedds=frozenset(hosts)))
    return ordered


# -- the schedd: which jobs leave home, and where --------------------------------------


@dataclass(frozen=True)
class Waiting:
    """Idle jobs of one autocluster (or submitter) at the schedd, as flocking sees them."""

    key: str
    user: str  # the accounting name, user@domain
    idle: int
    waited: float  # seconds the longest-idle of them has waited
    groups: tuple[str, ...] = ()
    never_home: bool = False  # no machine at home could ever run them (q -analyze's verdict)
    want_flocking: bool | None = None  # the job's WantFlocking; None: unset


@dataclass
class FlockLevel:
    """The schedd's memory between cycles: how many pools of FLOCK_TO it uses now."""

    level: int = 0
    raised_at: float | None = None


@dataclass
class OutboundPlan:
    """Which pools each waiting key is offered to this cycle, and why a key stays home."""

    level: int
    targets: dict[str, list[str]] = field(default_factory=dict)  # pool name -> keys
    home: dict[str, str] = field(default_factory=dict)  # key -> why it does not flock
    at_once: set[str] = field(default_factory=set)  # keys no home machine could ever run

    def pools_of(self, key: str) -> list[str]:
        return [pool for pool, keys in self.targets.items() if key in keys]


def outbound_plan(waiting: Iterable[Waiting], agreements: Sequence[Agreement], memory: FlockLevel, *,
                  now: float, after: float, increment: int = 1, by_default: bool = True,
                  foreign_here: int = 0) -> OutboundPlan:
    """This cycle's flocking of a schedd's waiting jobs (see the module's docstring).

    ``memory`` is updated in place (the flock level); ``foreign_here`` is how many of
    the home pool's slots other pools' jobs hold now."""
    senders = [a for a in agreements if a.send]
    waiting = list(waiting)
    plan = OutboundPlan(level=memory.level)
    due: list[Waiting] = []
    for w in waiting:
        if w.idle <= 0:
            continue
        wants = by_default if w.want_flocking is None else w.want_flocking
        if not senders:
            plan.home[w.key] = "no FLOCK_TO pool"
        elif not wants:
            plan.home[w.key] = "WantFlocking is false" if w.want_flocking is False else \
                "the job does not set WantFlocking (FLOCK_BY_DEFAULT is false)"
        elif not w.never_home and w.waited < after:
            plan.home[w.key] = f"home first: waited {w.waited:.0f} s of FLOCK_AFTER {after:.0f} s"
        elif not w.never_home and foreign_here > 0:
            plan.home[w.key] = (f"home first: {foreign_here} of our slots run other pools' jobs, "
                                "which ours take back before they leave")
        else:
            due.append(w)
    if not due:
        memory.level, memory.raised_at = 0, None
        plan.level = 0
        return plan
    step = max(1, increment)
    if memory.level == 0:
        memory.level, memory.raised_at = min(step, len(senders)), now
    elif memory.raised_at is None or now - memory.raised_at >= after:
        memory.level, memory.raised_at = min(memory.level + step, len(senders)), now
    plan.level = memory.level
    reach = senders[:memory.level]
    for w in due:
        pools = [a for a in reach if a.admits_user(w.user, w.groups)]
        if w.never_home:
            plan.at_once.add(w.key)
        if not pools:
            names = ", ".join(a.name for a in reach)
            plan.home[w.key] = f"no agreement with {names} lets {w.user}'s jobs go" + (
                " (and no machine at home could ever run it)" if w.never_home else "")
            continue
        for a in pools:
            plan.targets.setdefault(a.name, []).append(w.key)
    return plan


def never_home(job: Any, slots: Sequence[Any]) -> bool:
    """q -analyze's verdict that no machine at home could ever run ``job`` (a ClassAd):
    no slot of ``slots`` (the home pool's slot ads, any state) matches it both ways, a
    partitionable slot judged at its whole size. Such a job flocks at once instead of
    waiting FLOCK_AFTER. No slots at all is no verdict (a collector that just started
    lists none), so the job waits as any other. Stops at the first slot that could run
    it: a job that fits at home costs one or a few evaluations."""
    # lazy: the matchmaking code, only when asked
    from roost.core.condor_analysis import could_ever_run

    return bool(slots) and not any(could_ever_run(job, slot) for slot in slots)


# -- the lending pool: whose foreign jobs run here, how many ---------------------------


@dataclass(frozen=True)
class Admission:
    """A foreign submitter this cycle: served or not, at most ``limit`` more slots (None:
    no limit), the agreement it came under, and the reason when refused."""

    allowed: bool
    limit: int | None = None
    agreement: str | None = None
    reason: str = ""
    owner_consent: bool = False


def agreement_for(agreements: Iterable[Agreement], *, domain: str, schedd_host: str = "") -> Agreement | None:
    """The lending agreement a foreign schedd comes under: by its pool's domain (its
    ``condor@domain`` identity), else by its host in a FLOCK_FROM-style list."""
    takers = [a for a in agreements if a.take]
    for a in takers:
        if a.domain == domain and a.name != "FLOCK_FROM":
            return a
    for a in takers:
        if schedd_host and schedd_host in a.schedds:
            return a
    return None


def admission(*, user: str, domain: str, agreements: Sequence[Agreement], hour: int, total_slots: int,
              idle_slots: int, used_by_pool: Mapping[str, int], ledger: FlockLedger | None = None,
              groups: Sequence[str] = (), schedd_host: str = "") -> Admission:
    """Whether the lending pool serves ``user`` (of the pool whose domain is ``domain``)
    this cycle. ``idle_slots`` is how many of our slots no job of ours wants now,
    ``used_by_pool`` the slots each agreement's jobs hold here."""
    a = agreement_for(agreements, domain=domain, schedd_host=schedd_host)
    if a is None:
        return Admission(False, reason=f"no agreement lends this pool's machines to {domain}")
    refuse = lambda why: Admission(False, 0, a.name, why, a.owner_consent)  # noqa: E731
    if not a.admits_user(user, groups):
        return refuse(f"agreement {a.name} does not cover {user}")
    if a.hours is not None and not a.hours.contains(hour):
        return refuse(f"agreement {a.name} lends only at hours {a.hours} (now {hour})")
    if ledger is not None and a.balance is not None:
        ahead = ledger.ahead(a.name)
        if ahead > a.balance:
            return refuse(f"{a.name} is {ahead:.0f} slot-hours ahead of the exchange (balance {a.balance:.0f}): "
                          "it lends before it borrows more")
    limits: list[int] = []
    if a.idle_above:
        spare = idle_slots - a.idle_above
        if spare <= 0:
            return refuse(f"agreement {a.name} lends only while more than {a.idle_above} of our slots are idle "
                          f"({idle_slots} are)")
        limits.append(spare)
    cap = a.share_slots(total_slots)
    if cap is not None:
        left = cap - used_by_pool.get(a.name, 0)
        if left <= 0:
            return refuse(f"{a.name} holds its share of {cap} slots")
        limits.append(left)
    return Admission(True, min(limits) if limits else None, a.name, "", a.owner_consent)


# -- accounting between pools ----------------------------------------------------------


@dataclass
class FlockLedger:
    """Slot-hours this pool gave each connected pool (their jobs on our slots) and
    received from it (our jobs on theirs), fading with ``halflife`` seconds as the
    accountant's priorities do, so an old exchange matters less than this week's."""

    given: dict[str, float] = field(default_factory=dict)
    received: dict[str, float] = field(default_factory=dict)
    halflife: float = 7 * 86400.0
    last: float | None = None

    def advance(self, now: float, *, giving: Mapping[str, float], receiving: Mapping[str, float]) -> None:
        """Account the time since the last call at the rates seen now: ``giving`` the
        slots each pool's jobs hold here, ``receiving`` the slots ours hold there. The
        first call only starts the clock; time running backwards counts as none."""
        dt = 0.0 if self.last is None else max(0.0, now - self.last)
        self.last = now
        if dt <= 0:
            return
        fade = 0.5 ** (dt / self.halflife) if self.halflife > 0 else 1.0
        for book, rates in ((self.given, giving), (self.received, receiving)):
            for pool in set(book) | set(rates):
                book[pool] = book.get(pool, 0.0) * fade + max(0.0, rates.get(pool, 0.0)) * dt / _HOUR

    def ahead(self, pool: str) -> float:
        """Slot-hours ``pool`` has taken from us beyond what it gave (negative: we owe)."""
        return self.given.get(pool, 0.0) - self.received.get(pool, 0.0)

    def reciprocity(self, pool: str) -> float:
        """1.0 for an even exchange, towards 0 the more one side only takes; 1.0 with none."""
        g, r = self.given.get(pool, 0.0), self.received.get(pool, 0.0)
        return 1.0 if max(g, r) <= 0 else min(g, r) / max(g, r)

    def to_json(self) -> dict[str, Any]:
        return {"given": self.given, "received": self.received, "halflife": self.halflife, "last": self.last}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FlockLedger:
        def book(v: Any) -> dict[str, float]:
            return {str(k): float(x) for k, x in dict(v or {}).items()
                    if isinstance(x, (int, float)) and math.isfinite(x)}
        last = data.get("last")
        return cls(book(data.get("given")), book(data.get("received")),
                   float(data.get("halflife") or 7 * 86400.0),
                   float(last) if isinstance(last, (int, float)) else None)


# -- who may speak for a connected pool here (the ALLOW_* lists) -----------------------

#: (daemon, level) a connected pool's daemons need here, by the direction of the
#: agreement. Pools we send to: their negotiator asks our schedd for requests and
#: sends matches (NEGOTIATOR), their starters send updates and files (DAEMON).
#: Pools we take from: their schedds advertise submitters to our collector
#: (ADVERTISE_SCHEDD) and claim and activate our slots (DAEMON at the startd); they
#: send our negotiator nothing (it finds their ads each cycle).
SENDER_LEVELS = (("SCHEDD", "NEGOTIATOR"), ("SCHEDD", "DAEMON"))
TAKER_LEVELS = (("COLLECTOR", "ADVERTISE_SCHEDD"), ("STARTD", "DAEMON"))


def daemon_identity(domain: str) -> str:
    """How a pool's daemons authenticate to another pool: ``condor@<its UID_DOMAIN>``."""
    return f"condor@{domain}"


def flock_allow_entries(agreements: Iterable[Agreement], *, negotiator_hosts: Iterable[str] = ()
                        ) -> dict[tuple[str, str], list[str]]:
    """The entries flocking adds to ``ALLOW_<level>_<daemon>`` (HTCondor's
    ``ALLOW_NEGOTIATOR_SCHEDD = ..., $(FLOCK_NEGOTIATOR_HOSTS)``, ``ALLOW_WRITE_COLLECTOR
    = ..., $(FLOCK_FROM)``), written for the admin in one place: the other pool's daemon
    identity for an agreement, its hosts for HTCondor's plain ``FLOCK_FROM`` and
    ``FLOCK_NEGOTIATOR_HOSTS``."""
    out: dict[tuple[str, str], list[str]] = {}

    def add(levels: Iterable[tuple[str, str]], entries: Iterable[str]) -> None:
        for key in levels:
            have = out.setdefault(key, [])
            have += [e for e in entries if e and e not in have]

    for a in agreements:
        if a.name == "FLOCK_FROM":
            add(TAKER_LEVELS, sorted(a.schedds))
            continue
        who = [daemon_identity(a.domain)] if a.domain else []
        if a.send and a.collector and a.domain == a.collector:
            # HTCondor's plain FLOCK_TO host: its domain is not known, its central
            # manager's host is (its negotiator). Their starters need an ALLOW_DAEMON
            # entry from the admin, or an agreement naming the domain.
            add((("SCHEDD", "NEGOTIATOR"),), [collector_host(a.collector)])
        elif a.send:
            add(SENDER_LEVELS, who)
        if a.take:
            add(TAKER_LEVELS, who + sorted(a.schedds))
    add((("SCHEDD", "NEGOTIATOR"),), list(negotiator_hosts))
    return out


_FALLBACK = {"ADVERTISE_SCHEDD": ("ADVERTISE_SCHEDD", "DAEMON", "DEFAULT")}


def with_flock_entries(get: Callable[[str], str | None],
                       entries: Mapping[tuple[str, str], Sequence[str]]) -> Callable[[str], str | None]:
    """``get`` with the flocking entries appended to ``ALLOW_<level>_<daemon>``: the
    list that level would read without flocking (the daemon's own, the level's, its
    fallbacks) plus the connected pools'. Every other knob reads as before, so a pool
    without agreements decides exactly as it did."""
    if not entries:
        return get
    extra = {f"ALLOW_{level}_{daemon}": (daemon, level, list(e)) for (daemon, level), e in entries.items() if e}

    def flocked(name: str) -> str | None:
        hit = extra.get(name.upper())
        if hit is None:
            return get(name)
        daemon, level, more = hit
        base = None
        for lv in _FALLBACK.get(level, (level, "DEFAULT")):
            for knob in (f"ALLOW_{lv}_{daemon}", f"ALLOW_{lv}"):
                v = get(knob)
                if v is not None and v.strip():
                    base = v.strip()
                    break
            if base is not None:
                break
        return ", ".join([base, *more] if base else more)

    return flocked


def foreign_ad_refusal(ad_type: str, name: Any, identity: str | None, home_domain: str) -> str | None:
    """Why the collector refuses an ad from another pool's daemon, None to take it. A
    foreign schedd (its identity of another domain) may advertise only Submitter ads,
    each of its own domain's users: it must not speak for ours, nor for a third pool."""
    if identity is None:
        return None
    domain = name_domain(identity)
    if not domain or domain.lower() == home_domain.lower():
        return None
    if ad_type != "Submitter":
        return f"{identity} is another pool's daemon: it may advertise only Submitter ads, not {ad_type}"
    if not isinstance(name, str) or name_domain(name).lower() != domain.lower():
        return f"{identity} may advertise only submitters of {domain}, not {name!r}"
    return None


def collector_host(address: str) -> str:
    """The host of a ``host[:port]`` collector address (``[v6]:port`` too)."""
    a = address.strip()
    if a.startswith("["):
        return a[1:a.index("]")] if "]" in a else a
    host, sep, port = a.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else a


def name_domain(name: str) -> str:
    """The domain of an accounting name (``alice@physics.example``, ``group.alice@...``)."""
    return name.rpartition("@")[2] if "@" in name else ""


__all__ = [
    "SEND", "TAKE", "BOTH", "Admission", "Agreement", "FlockConfigError", "FlockLedger", "FlockLevel", "Hours",
    "OutboundPlan", "Waiting", "admission", "agreement_for", "outbound_plan", "parse_agreement",
    "parse_agreements", "daemon_identity", "flock_allow_entries", "with_flock_entries", "name_domain",
    "foreign_ad_refusal", "collector_host", "never_home",
    "SENDER_LEVELS", "TAKER_LEVELS",
]
