"""Glide-ins (``roost annex -slurm N``): when a glide-in's startd takes jobs, stops taking
them, lets them retire, vacates them and shuts down; and what state an annex is in.

A glide-in is a startd started by a job of another batch system (Slurm) that joins this
pool for a while. It has two deadlines: its end (``GLIDEIN_ToDie``, glideinWMS's name:
Slurm kills it then) and an idle limit (``STARTD_NOCLAIM_SHUTDOWN``, HTCondor's knob: a
glide-in nobody claims gives its Slurm allocation back). Near the end it must not start a
job it cannot finish, and the jobs it runs must leave (retire within their
``MaxJobRetirementTime``, then vacate, so a checkpointing job checkpoints) before Slurm's
SIGKILL would lose them. :func:`next_step` is that decision; the startd's shell
(``daemons/startd/glidein.py``) applies it with the machinery ``roost drain`` uses.

Pure: the clock and the slot's state are parameters.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "AnnexError",
    "AnnexRecord",
    "GlideinPolicy",
    "GlideinView",
    "Step",
    "annex_state",
    "next_step",
    "parse_duration",
    "slurm_time_limit",
]


class AnnexError(ValueError):
    """A bad ``roost annex`` argument or annex record; the message names it."""


class Action(enum.StrEnum):
    ACCEPT = "accept"      # offer the slots, run jobs
    RETIRE = "retire"      # START false: no new jobs; running ones finish (graceful drain)
    VACATE = "vacate"      # the end is near: evict (checkpoint) what still runs (quick drain)
    SHUTDOWN = "shutdown"  # nothing left to run: leave the pool, end the Slurm job


@dataclass(frozen=True)
class Step:
    action: Action
    reason: str


@dataclass(frozen=True)
class GlideinPolicy:
    """The glide-in's knobs, in seconds.

    ``idle_timeout``: shut down after this long with no claim (``STARTD_NOCLAIM_SHUTDOWN``;
    0 or less: never for idleness). ``retire_lead``: stop taking jobs this long before
    the end (``ANNEX_RETIRE_LEAD``: what a job may still count on when it starts).
    ``vacate_lead``: evict what still runs this long before the end
    (``ANNEX_VACATE_LEAD``: time for a job to checkpoint and its files to go home).
    """

    idle_timeout: float = 300.0
    retire_lead: float = 300.0
    vacate_lead: float = 60.0

    def __post_init__(self) -> None:
        if self.vacate_lead < 0 or self.retire_lead < self.vacate_lead:
            raise AnnexError(f"ANNEX_RETIRE_LEAD ({self.retire_lead:g}) must be at least "
                             f"ANNEX_VACATE_LEAD ({self.vacate_lead:g}), and that at least 0")


@dataclass(frozen=True)
class GlideinView:
    """What the shell sees: the time, the glide-in's end, since when no slot has been
    claimed (None while one is), and how many claims it holds."""

    now: float
    end_time: float
    idle_since: float | None
    claims: int


def next_step(view: GlideinView, policy: GlideinPolicy) -> Step:
    """The glide-in's next step. Once past a deadline the answer never goes back (time
    only moves on, and a glide-in that stopped accepting gets no new claims)."""
    left = view.end_time - view.now
    if view.claims == 0:
        if left <= policy.retire_lead:
            return Step(Action.SHUTDOWN, f"{max(left, 0):.0f} s to the end, nothing running")
        if view.idle_since is not None and policy.idle_timeout > 0:
            idle = view.now - view.idle_since
            if idle >= policy.idle_timeout:
                return Step(Action.SHUTDOWN, f"unclaimed for {idle:.0f} s (STARTD_NOCLAIM_SHUTDOWN "
                                             f"{policy.idle_timeout:g})")
        return Step(Action.ACCEPT, "")
    if left <= 0:
        return Step(Action.SHUTDOWN, "past the end: Slurm kills the job now")
    if left <= policy.vacate_lead:
        return Step(Action.VACATE, f"{left:.0f} s to the end (ANNEX_VACATE_LEAD {policy.vacate_lead:g})")
    if left <= policy.retire_lead:
        return Step(Action.RETIRE, f"{left:.0f} s to the end (ANNEX_RETIRE_LEAD {policy.retire_lead:g})")
    return Step(Action.ACCEPT, "")


# -- durations -----------------------------------------------------------------------

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def parse_duration(text: str, what: str = "-duration") -> float:
    """``90``, ``90s``, ``30m``, ``2h``, ``1d``, ``1h30m`` -> seconds (HTCondor's
    ``condor_annex -duration`` takes hours; a unit says which)."""
    s = text.strip().lower()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not s or pos != len(s):
        raise AnnexError(f"{what} {text!r} is not a duration (seconds, or 30m, 2h, 1h30m, 1d)")
    if total <= 0:
        raise AnnexError(f"{what} must be more than 0")
    return total


def slurm_time_limit(seconds: float) -> str:
    """sbatch's ``--time``, rounded up to whole minutes (Slurm's resolution):
    ``D-HH:MM:SS``."""
    minutes = max(1, -(-int(seconds) // 60))
    d, rest = divmod(minutes * 60, 86400)
    h, rest = divmod(rest, 3600)
    return f"{d}-{h:02d}:{rest // 60:02d}:00"


# -- an annex's state ----------------------------------------------------------------

#: Slurm job states that will not run any more (squeue/scontrol's JobState)
SLURM_ENDED = frozenset({"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                         "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"})


@dataclass(frozen=True)
class AnnexRecord:
    """What ``roost annex`` keeps of one annex (``$(LOCAL_DIR)/annex/NAME.json``)."""

    name: str
    slurm_ids: tuple[str, ...]
    requested: int
    duration: float
    submitted: float
    partition: str = ""
    jti: str = ""  # the glide-ins' token (roost token revoke -jti cuts the annex off)

    @classmethod
    def from_obj(cls, obj: Mapping[str, object], where: str) -> AnnexRecord:
        try:
            ids = obj["slurm_ids"]
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise TypeError("slurm_ids is not a list of strings")
            return cls(str(obj["name"]), tuple(ids), int(obj["requested"]),  # type: ignore[call-overload]
                       float(obj["duration"]), float(obj["submitted"]),  # type: ignore[arg-type]
                       str(obj.get("partition") or ""), str(obj.get("jti") or ""))
        except (KeyError, TypeError, ValueError) as e:
            raise AnnexError(f"{where}: not an annex record ({e})") from None

    def to_obj(self) -> dict[str, object]:
        return {"name": self.name, "slurm_ids": list(self.slurm_ids), "requested": self.requested,
                "duration": self.duration, "submitted": self.submitted, "partition": self.partition,
                "jti": self.jti}


@dataclass(frozen=True)
class AnnexState:
    """One line of ``roost status -annex``."""

    name: str
    state: str  # pending / running / ended (and "starting": running in Slurm, not yet in the pool)
    requested: int
    pending: int
    running: int
    ended: int
    glideins: int  # in the pool now (their slot ads at the collector)
    expires: float | None


def annex_state(record: AnnexRecord, slurm: Mapping[str, str], slot_ads: Iterable[Mapping[str, object]]) -> AnnexState:
    """Slurm's view (job id -> JobState; an id Slurm no longer knows has ended) and the
    collector's (the glide-ins' slot ads, by ``AnnexName``) combined."""
    states = [slurm.get(i, "COMPLETED").split()[0].upper() for i in record.slurm_ids]
    pending = sum(s in ("PENDING", "CONFIGURING", "REQUEUED") for s in states)
    ended = sum(s in SLURM_ENDED for s in states)
    running = len(states) - pending - ended
    ads = [a for a in slot_ads if a.get("AnnexName") == record.name]
    ends = [float(a["GLIDEIN_ToDie"]) for a in ads if isinstance(a.get("GLIDEIN_ToDie"), int | float)]
    # a glide-in advertises a partitionable slot and its dynamic ones: count glide-ins
    glideins = {str(a.get("SlurmJobId") or a.get("Machine") or a.get("Name")) for a in ads}
    if ads:
        state = "running"
    elif running:
        state = "starting"
    elif pending:
        state = "pending"
    else:
        state = "ended"
    return AnnexState(record.name, state, record.requested, pending, running, ended, len(glideins),
                      max(ends) if ends else None)
