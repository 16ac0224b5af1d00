"""Job events: the base class, event numbers, and helpers the event modules share.

The concrete events live in queue_events.py, run_events.py and exit_events.py.
Each event class knows three things: how its body is written (``body()``), how
it is read back (``from_body()``), and the attributes HTCondor's reader exposes
for it (``attrs()``, the names ``htcondor2.JobEvent`` uses: ``ReturnValue``,
``HoldReasonCode``, ``RunRemoteUsage`` ...).  An event is also a read-only
mapping over those attributes, so code written against htcondor2 events works
on roost events.

Event numbers, body texts and attribute names follow HTCondor's
condor_event.cpp; where HTCondor's own reader loses information (values with
spaces in attribute-update events, notes order in submit events) roost's
reader keeps it and says so in the class docstring.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from roost.eventlog.errors import EventLogError
from roost.eventlog.textformat import parse_number
from roost.vocabulary import JobEventType

#: event numbers (the one list, roost.vocabulary's; the log holds a subset)
EventType = JobEventType


Attrs = dict[str, Any]


def _iso_local(ts: float) -> str:
    tm = time.localtime(int(ts // 1))
    text = (
        f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d}T"
        f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
    )
    frac = int(round((ts - int(ts // 1)) * 1000))
    if frac:
        text += f".{frac:03d}"
    return text


@dataclass(eq=True, repr=True)
class Event(Mapping[str, Any]):
    """Fields every event has: job id and time (Unix seconds, float)."""

    cluster: int
    proc: int
    timestamp: float = 0.0
    subproc: int = 0

    type: ClassVar[EventType]
    my_type: ClassVar[str]
    _number: ClassVar[int]  # the header's number as a plain int (Enum lookups are slow)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type" in cls.__dict__ and "_number" not in cls.__dict__:
            cls._number = int(cls.type)

    # ---- to be provided by subclasses
    def body(self) -> str:
        """The event's text after the header date, each line ending in a newline."""
        raise NotImplementedError

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        """Build the event from its body lines (``lines[0]`` is the rest of the header line)."""
        raise NotImplementedError

    def _attrs(self) -> Attrs:
        return {}

    # ---- mapping view, as htcondor2 exposes events
    def attrs(self) -> Attrs:
        """The event as HTCondor's reader presents it: attribute name to Python value."""
        out: Attrs = {
            "MyType": self.my_type,
            "EventTypeNumber": int(self.type),
            "EventTime": _iso_local(self.timestamp),
            "Cluster": self.cluster,
        }
        if self.proc >= 0:
            out["Proc"] = self.proc
        if self.subproc >= 0:
            out["Subproc"] = self.subproc
        out.update(self._attrs())
        return out

    def __getitem__(self, key: str) -> Any:
        a = self.attrs()
        if key in a:
            return a[key]
        low = key.lower()
        for k, v in a.items():
            if k.lower() == low:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.attrs())

    def __len__(self) -> int:
        return len(self.attrs())

    __hash__ = None  # type: ignore[assignment]


def expect_line(lines: list[str], i: int, prefix: str) -> str:
    """The rest of line ``i`` after ``prefix``; an error naming what was expected otherwise."""
    if i < len(lines) and lines[i].startswith(prefix):
        return lines[i][len(prefix) :]
    got = lines[i] if i < len(lines) else "end of event"
    raise EventLogError(f"expected {prefix.strip()!r}, got {got!r}")


def format_props(slot_name: str, props: dict[str, str]) -> str:
    out = f"\tSlotName: {slot_name}\n" if slot_name else ""
    for k in sorted(props, key=str.lower):
        out += f"\t{k} = {props[k]}\n"
    return out


def parse_props(lines: list[str], start: int) -> tuple[str, dict[str, str]]:
    slot = ""
    props: dict[str, str] = {}
    for line in lines[start:]:
        s = line.strip()
        if s.startswith("SlotName:"):
            slot = s[9:].strip().strip('"')
        elif " = " in s:
            k, v = s.split(" = ", 1)
            props[k.strip()] = v.strip()
    return slot, props


def prop_value(text: str) -> Any:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return text[1:-1]
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    return parse_number(text)


def flat_ad(text: str) -> dict[str, Any]:
    """A one-level ``[ a = 1; b = "x" ]`` as a dict (structured submit notes need no more)."""
    body = text.strip()[1:-1]
    out: dict[str, Any] = {}
    for part in re.findall(r'(?:[^;"]|"(?:[^"\\]|\\.)*")+', body):
        name, eq, value = part.partition("=")
        if eq:
            out[name.strip()] = prop_value(value.strip())
    return out


@dataclass(eq=True, repr=True)
class UnknownEvent(Event):
    """An event number roost does not model; its text is kept so nothing is lost."""

    type: ClassVar[EventType] = EventType.GENERIC  # replaced per instance by event_number
    my_type: ClassVar[str] = "FutureEvent"

    event_number: int = -1
    lines: list[str] = field(default_factory=list)

    @property  # type: ignore[override]
    def _number(self) -> int:
        return self.event_number

    def body(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def attrs(self) -> Attrs:
        out = super().attrs()
        out["EventTypeNumber"] = self.event_number
        return out


def event_number(event: Event) -> int:
    """The number written in the header (``UnknownEvent`` carries its own)."""
    return event._number
