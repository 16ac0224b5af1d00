"""The accountant: who used how much, and what priority that earns them.

HTCondor's user priority, kept pure (time is a parameter, no files):

- the *real* priority follows the slot weight a submitter holds, with a
  half-life: ``prio = beta*prio + (1-beta)*in_use``, ``beta = 0.5**(dt/halflife)``,
  never below ``min_priority`` (0.5). Someone who holds 10 slots for a long
  time settles at 10; someone who stops halves towards 0.5 every half-life.
- accumulated usage (weighted slot-seconds) grows by ``in_use*dt`` and decays
  by the same ``beta``, so old usage fades as the priority does.
- the *effective* priority is ``real * factor`` (``nice_factor`` for nice-user
  jobs). Lower is better; shares go in inverse proportion to it.

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

STATE_VERSION = 1


@dataclass
class UserRecord:
    """One submitter (``user@domain``) or accounting group (``physics.theory``)."""

    name: str
    priority: float = 0.5  # real priority
    usage: float = 0.0  # decayed weighted slot-seconds
    factor: float = 1000.0
    floor: float | None = None
    ceiling: float | None = None
    resources_used: float = 0.0  # slot weight held at the last update
    begin_usage_time: float | None = None
    last_usage_time: float | None = None
    group: str | None = None


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
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"not a number: {v!r}")
    return float(v)


class Accountant:
    """Usage and priorities of every submitter and group seen."""

    def __init__(
        self,
        halflife: float = 86400.0,
        default_factor: float = 1000.0,
        nice_factor: float = 1e10,
        min_priority: float = 0.5,
    ) -> None:
        if halflife <= 0:
            raise ValueError("halflife must be positive")
        self.halflife = float(halflife)
        self.default_factor = float(default_factor)
        self.nice_factor = float(nice_factor)
        self.min_priority = float(min_priority)
        self.last_update: float | None = None
        self._users: dict[str, UserRecord] = {}

    # --- records -----------------------------------------------------------
    def _record(self, name: str) -> UserRecord:
        rec = self._users.get(name)
        if rec is None:
            rec = UserRecord(name, priority=self.min_priority, factor=self.default_factor,
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
            used = max(0.0, float(in_use.get(name, 0.0)))
            rec.priority = max(self.min_priority, beta * rec.priority + (1.0 - beta) * used)
            rec.usage = beta * rec.usage + used * dt
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

    def factor(self, name: str) -> float:
        rec = self._users.get(name)
        return self.default_factor if rec is None else rec.factor

    def effective_priority(self, name: str, nice: bool = False) -> float:
        """``real * factor``; nice-user jobs use ``nice_factor`` so they only get what nobody else wants."""
        return self.real_priority(name) * (self.nice_factor if nice else self.factor(name))

    # --- administration ----------------------------------------------------
    def set_factor(self, name: str, factor: float) -> None:
        if not (isinstance(factor, (int, float)) and math.isfinite(factor) and factor > 0):
            raise ValueError(f"priority factor must be a positive number, not {factor!r}")
        self._record(name).factor = float(factor)

    def reset_usage(self, name: str) -> None:
        """Forget past usage: priority back to the minimum, usage to 0. ``"*"`` resets everyone."""
        recs = list(self._users.values()) if name == "*" else [self._record(name)]
        for rec in recs:
            rec.priority = self.min_priority
            rec.usage = 0.0
            rec.begin_usage_time = None

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
        for entry in users:
            rec = acct._parse(entry)
            if rec is not None:
                acct._users[rec.name] = rec
        return acct

    def _parse(self, entry: Any) -> UserRecord | None:
        if not isinstance(entry, dict):
            return None
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            return None
        try:
            factor = _number(entry.get("factor", self.default_factor))
            group = entry.get("group", group_of(name))
            return UserRecord(
                name=name,
                priority=max(self.min_priority, _number(entry.get("priority", self.min_priority))),  # type: ignore[arg-type]
                usage=max(0.0, _number(entry.get("usage", 0.0))),  # type: ignore[arg-type]
                factor=factor if factor and factor > 0 else self.default_factor,
                floor=_number(entry.get("floor"), optional=True),
                ceiling=_number(entry.get("ceiling"), optional=True),
                resources_used=max(0.0, _number(entry.get("resources_used", 0.0))),  # type: ignore[arg-type]
                begin_usage_time=_number(entry.get("begin_usage_time"), optional=True),
                last_usage_time=_number(entry.get("last_usage_time"), optional=True),
                group=group if isinstance(group, str) or group is None else None,
            )
        except ValueError:
            return None
