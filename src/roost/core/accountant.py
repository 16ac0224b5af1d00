"""The accountant: who used how much, and what priority that earns them.

HTCondor's user priority, kept pure (time is a parameter, no files):

- the *real* priority follows the slot weight a submitter holds, with a
  half-life: ``prio = beta*prio + (1-beta)*in_use``, ``beta = 0.5**(dt/halflife)``,
  never below ``min_priority`` (0.5). Someone who holds 10 slots for a long
  time settles at 10; someone who stops halves towards 0.5 every half-life.
- ``accumulated_usage`` is HTCondor's AccumulatedUsage: weighted slot-seconds
  since ``begin_usage_time``, never decayed; ``reset_usage`` (condor_userprio
  -resetusage) zeroes it and restarts the clock, and leaves the priority alone.
  ``usage`` is roost's own *recent* usage, the same sum decayed by ``beta``,
  which fair share uses to break ties between equal priorities.
- the *effective* priority is ``real * factor``. Lower is better; shares go in
  inverse proportion to it. A name seen for the first time gets its factor
  then, as HTCondor does: ``nice_factor`` (NICE_USER_PRIO_FACTOR) for a
  ``nice-user.`` submitter, else ``default_factor`` (DEFAULT_PRIO_FACTOR); it
  is kept from then on, so ``set_factor`` works on nice users too. A factor is
  never below 1.

The negotiator owns one :class:`Accountant`, calls :meth:`Accountant.update`
each cycle with what is claimed, and persists :meth:`Accountant.to_json`.
:meth:`Accountant.from_json` never raises on a damaged file: bad entries are
skipped, so a negotiator always starts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

STATE_VERSION = 2  # 2: nice users keep their own factor; accumulated_usage
MIN_FACTOR = 1.0  # HTCondor's MIN_PRIORITY_FACTOR: a smaller factor is invalid
NICE_PREFIX = "nice-user."  # submit's NICE_USER_ACCOUNTING_GROUP_NAME, then "."


@dataclass
class UserRecord:
    """One submitter (``user@domain``) or accounting group (``physics.theory``)."""

    name: str
    priority: float = 0.5  # real priority
    usage: float = 0.0  # recent usage: weighted slot-seconds decayed with the half-life
    factor: float = 1000.0
    floor: float | None = None
    ceiling: float | None = None
    resources_used: float = 0.0  # slot weight held at the last update
    begin_usage_time: float | None = None
    last_usage_time: float | None = None
    group: str | None = None
    accumulated_usage: float = 0.0  # weighted slot-seconds since begin_usage_time, not decayed


def is_nice(name: str) -> bool:
    """A nice_user submitter (``nice-user.alice@h``)."""
    return name.lower().startswith(NICE_PREFIX)


def group_of(name: str) -> str | None:
    """The accounting group a record belongs to.

    ``group.sub.user@domain`` → ``group.sub``; a group record (no ``@``) is its
    own group; a plain ``user@domain`` has none. A user name with a dot in it
    cannot be told from a group user here; callers that know better pass the
    group to :meth:`Accountant.set_group`.
    """
    if "@" not in name:
        return name or None
    local = name.rsplit("@", 1)[0]
    return local.rsplit(".", 1)[0] if "." in local else None


def _number(v: Any, *, optional: bool = False) -> float | None:
    """A finite float from JSON, or raise ValueError (None allowed when ``optional``)."""
    if v is None and optional:
        return None
    try:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError
        return float(v)
    except (ValueError, OverflowError):  # OverflowError: an int too big for a float
        raise ValueError(f"not a number: {str(v)[:40]}") from None


class Accountant:
    """Usage and priorities of every submitter and group seen."""

    def __init__(
        self,
        halflife: float = 86400.0,
        default_factor: float = 1000.0,
        nice_factor: float = 1e10,
        min_priority: float = 0.5,
        group_factors: Mapping[str, float] | None = None,
        remote_factor: float | None = None,
        local_domain: str | None = None,
    ) -> None:
        if halflife <= 0:
            raise ValueError("halflife must be positive")
        self.halflife = float(halflife)
        self.default_factor = float(default_factor)
        self.nice_factor = float(nice_factor)
        self.min_priority = float(min_priority)
        # GROUP_PRIO_FACTOR_<group> (keys lower case), REMOTE_PRIO_FACTOR for names
        # outside ACCOUNTANT_LOCAL_DOMAIN: the factors new names get
        self.group_factors = {k.lower(): float(v) for k, v in (group_factors or {}).items() if v >= MIN_FACTOR}
        self.remote_factor = remote_factor if remote_factor is not None and remote_factor >= MIN_FACTOR else None
        self.local_domain = local_domain.lower() if local_domain else None
        self.last_update: float | None = None
        self._users: dict[str, UserRecord] = {}

    # --- records -----------------------------------------------------------
    def new_factor(self, name: str, nice: bool = False) -> float:
        """The factor a name gets when first seen, as HTCondor picks it: a nice user's;
        its accounting group's ``GROUP_PRIO_FACTOR_<group>`` (the longest group its
        name starts with, then a dot); ``REMOTE_PRIO_FACTOR`` for a domain other than
        ``ACCOUNTANT_LOCAL_DOMAIN``; else the default."""
        if nice or is_nice(name):
            return self.nice_factor
        local, at, domain = name.rpartition("@") if "@" in name else (name, "", "")
        low = local.lower()
        groups = [g for g in self.group_factors if low.startswith(g + ".")]
        if groups:
            return self.group_factors[max(groups, key=len)]
        if at and self.remote_factor is not None and self.local_domain and domain.lower() != self.local_domain:
            return self.remote_factor
        return self.default_factor

    def _record(self, name: str, nice: bool = False) -> UserRecord:
        rec = self._users.get(name)
        if rec is None:
            rec = UserRecord(name, priority=self.min_priority, factor=self.new_factor(name, nice),
                             group=group_of(name))
            self._users[name] = rec
        return rec

    def get(self, name: str) -> UserRecord | None:
        """A copy of the record, or None when the name was never seen."""
        rec = self._users.get(name)
        return None if rec is None else replace(rec)

    def records(self) -> list[UserRecord]:
        """Copies of all records, best effective priority first (as ``roost userprio`` lists them)."""
        recs = sorted(self._users.values(), key=lambda r: (r.priority * r.factor, r.name))
        return [replace(r) for r in recs]

    # --- time --------------------------------------------------------------
    def update(self, in_use: Mapping[str, float], now: float) -> None:
        """Age every record to ``now`` with the slot weight each holds now.

        Names not in ``in_use`` hold nothing, so their priority decays. The first
        call only records what is held (no interval has passed yet); a clock that
        went backwards counts as no time passing.
        """
        dt = 0.0 if self.last_update is None else max(0.0, now - self.last_update)
        beta = 0.5 ** (dt / self.halflife)
        for name in in_use:
            self._record(name)
        for name, rec in self._users.items():
            used = float(in_use.get(name, 0.0))
            used = used if math.isfinite(used) and used > 0 else 0.0
            rec.priority = max(self.min_priority, beta * rec.priority + (1.0 - beta) * used)
            rec.usage = beta * rec.usage + used * dt
            rec.accumulated_usage += used * dt
            rec.resources_used = used
            if used > 0:
                if rec.begin_usage_time is None:
                    rec.begin_usage_time = now
                rec.last_usage_time = now
        if self.last_update is None or now > self.last_update:
            self.last_update = now

    # --- priorities --------------------------------------------------------
    def real_priority(self, name: str) -> float:
        rec = self._users.get(name)
        return self.min_priority if rec is None else rec.priority

    def factor(self, name: str, nice: bool = False) -> float:
        rec = self._users.get(name)
        return self.new_factor(name, nice) if rec is None else rec.factor

    def effective_priority(self, name: str, nice: bool = False) -> float:
        """``real * factor``. ``nice`` only picks the factor of a name never seen
        (``nice_factor``, so nice-user jobs get only what nobody else wants); a
        known name keeps its own factor, which ``set_factor`` may have changed."""
        return self.real_priority(name) * self.factor(name, nice)

    # --- administration ----------------------------------------------------
    def set_factor(self, name: str, factor: float) -> None:
        """condor_userprio -setfactor; HTCondor refuses a factor below 1."""
        if isinstance(factor, bool) or not (isinstance(factor, (int, float)) and math.isfinite(factor)
                                            and factor >= MIN_FACTOR):
            raise ValueError(f"priority factor must be a number >= {MIN_FACTOR:g}, not {factor!r}")
        self._record(name).factor = float(factor)

    def set_priority(self, name: str, priority: float) -> None:
        """condor_userprio -setprio: set the real priority (at least ``min_priority``)."""
        if isinstance(priority, bool) or not (isinstance(priority, (int, float)) and math.isfinite(priority)):
            raise ValueError(f"priority must be a number, not {priority!r}")
        self._record(name).priority = max(self.min_priority, float(priority))

    def reset_usage(self, name: str, now: float | None = None) -> None:
        """condor_userprio -resetusage: accumulated (and recent) usage to 0, usage
        counted again from ``now`` (None: from the next use). The priority is not
        touched, as in HTCondor (that is :meth:`set_priority`). ``"*"``: everyone."""
        recs = list(self._users.values()) if name == "*" else [self._record(name)]
        for rec in recs:
            rec.usage = 0.0
            rec.accumulated_usage = 0.0
            rec.begin_usage_time = now

    def set_floor(self, name: str, floor: float | None) -> None:
        self._record(name).floor = self._limit(floor, "floor")

    def set_ceiling(self, name: str, ceiling: float | None) -> None:
        self._record(name).ceiling = self._limit(ceiling, "ceiling")

    def set_group(self, name: str, group: str | None) -> None:
        self._record(name).group = group

    @staticmethod
    def _limit(v: float | None, what: str) -> float | None:
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"{what} must be a non-negative number or None, not {v!r}")
        return float(v)

    # --- persistence -------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "last_update": self.last_update,
            "users": [asdict(r) for r in sorted(self._users.values(), key=lambda r: r.name)],
        }

    @classmethod
    def from_json(cls, obj: Any, **kw: Any) -> Accountant:
        """Rebuild from :meth:`to_json`'s output; ``kw`` are the constructor's (configuration wins).

        Anything malformed (a non-dict, a user entry without a string name, a
        non-numeric priority) is skipped, never raised: a damaged state file
        costs some history, not a negotiator.
        """
        acct = cls(**kw)
        if not isinstance(obj, dict):
            return acct
        try:
            acct.last_update = _number(obj.get("last_update"), optional=True)
        except ValueError:
            acct.last_update = None
        users = obj.get("users")
        if not isinstance(users, list):
            return acct
        old = obj.get("version") in (None, 1)
        for entry in users:
            rec = acct._parse(entry)
            if rec is not None:
                if old and is_nice(rec.name):
                    rec.factor = acct.nice_factor  # version 1 always used nice_factor for them
                acct._users[rec.name] = rec
        return acct

    def _parse(self, entry: Any) -> UserRecord | None:
        if not isinstance(entry, dict):
            return None
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            return None
        try:
            factor = _number(entry.get("factor", self.new_factor(name)))
            floor, ceiling = (_number(entry.get(k), optional=True) for k in ("floor", "ceiling"))
            group = entry.get("group", group_of(name))
            return UserRecord(
                name=name,
                priority=max(self.min_priority, _number(entry.get("priority", self.min_priority))),  # type: ignore[arg-type]
                usage=max(0.0, _number(entry.get("usage", 0.0))),  # type: ignore[arg-type]
                factor=factor if factor is not None and factor >= MIN_FACTOR else self.new_factor(name),
                floor=None if floor is None or floor < 0 else floor,
                ceiling=None if ceiling is None or ceiling < 0 else ceiling,
                resources_used=max(0.0, _number(entry.get("resources_used", 0.0))),  # type: ignore[arg-type]
                begin_usage_time=_number(entry.get("begin_usage_time"), optional=True),
                last_usage_time=_number(entry.get("last_usage_time"), optional=True),
                group=group if isinstance(group, str) or group is None else None,
                accumulated_usage=max(0.0, _number(entry.get("accumulated_usage", 0.0))),  # type: ignore[arg-type]
            )
        except ValueError:
            return None
