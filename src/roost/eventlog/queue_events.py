"""Events about a job's place in the queue: submitted, held, released, aborted, its attributes.

Bodies and attribute names follow HTCondor's condor_event.cpp (see events.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from roost.eventlog.errors import EventLogError
from roost.eventlog.events import (
    Attrs,
    Event,
    EventType,
    expect_line,
    flat_ad,
    prop_value,
)
from roost.eventlog.textformat import one_line


@dataclass(eq=True, repr=True)
class SubmitEvent(Event):
    """000: the job entered the queue.

    As in HTCondor, notes are positional: a lone user note with no log note is
    read back as the log note.
    """

    type: ClassVar[EventType] = EventType.SUBMIT
    my_type: ClassVar[str] = "SubmitEvent"
    _WARN: ClassVar[str] = (
        "WARNING: Committed job submission into the queue with the following warning(s): "
    )

    submit_host: str = ""
    log_notes: str = ""
    user_notes: str = ""
    warnings: str = ""

    def body(self) -> str:
        out = f"Job submitted from host: {self.submit_host}\n"
        if self.log_notes:
            out += f"    {one_line(self.log_notes)}\n"
        if self.user_notes:
            out += f"    {one_line(self.user_notes)}\n"
        if self.warnings:
            out += f"    {self._WARN}{one_line(self.warnings)}\n"
        return out

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        host = expect_line(lines, 0, "Job submitted from host: ")
        notes: list[str] = []
        warnings = ""
        for line in lines[1:]:
            s = line.strip()
            if s.startswith(cls._WARN):
                warnings = s[len(cls._WARN) :]
            elif s.startswith("WARNING: "):
                warnings = s[9:]
            else:
                notes.append(s)
        notes += ["", ""]
        return cls(**common, submit_host=host, log_notes=notes[0], user_notes=notes[1], warnings=warnings)

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        if self.submit_host:
            out["SubmitHost"] = self.submit_host
        if self.log_notes:
            out["LogNotes"] = self.log_notes
            if self.log_notes.startswith("DAG Node: "):
                # HTCondor's reader lifts the old DAG note into a nested ad.
                out["StructuredNotes"] = {"DAGNodeName": self.log_notes[10:].strip()}
            elif self.log_notes.startswith("["):
                out["StructuredNotes"] = flat_ad(self.log_notes)
        if self.user_notes:
            out["UserNotes"] = self.user_notes
        if self.warnings:
            out["Warnings"] = self._WARN + self.warnings
        return out


@dataclass(eq=True, repr=True)
class GenericEvent(Event):
    """008: one line of free text."""

    type: ClassVar[EventType] = EventType.GENERIC
    my_type: ClassVar[str] = "GenericEvent"

    info: str = ""

    def body(self) -> str:
        return f"{one_line(self.info)}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        return cls(**common, info=lines[0])

    def _attrs(self) -> Attrs:
        return {"Info": self.info} if self.info else {}


@dataclass(eq=True, repr=True)
class _ReasonEvent(Event):
    """Events whose body is a fixed line and an optional tab-indented reason."""

    _head: ClassVar[str] = ""
    reason: str = ""

    def body(self) -> str:
        if self.reason:
            return f"{self._head}\n\t{one_line(self.reason)}\n"
        return f"{self._head}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, cls._head)
        reason = lines[1].strip() if len(lines) > 1 else ""
        return cls(**common, reason=reason)

    def _attrs(self) -> Attrs:
        return {"Reason": one_line(self.reason)} if self.reason else {}


@dataclass(eq=True, repr=True)
class AbortedEvent(_ReasonEvent):
    """009: the job was removed from the queue."""

    type: ClassVar[EventType] = EventType.JOB_ABORTED
    my_type: ClassVar[str] = "JobAbortedEvent"
    _head: ClassVar[str] = "Job was aborted."


@dataclass(eq=True, repr=True)
class ReleasedEvent(_ReasonEvent):
    """013: a held job was released."""

    type: ClassVar[EventType] = EventType.JOB_RELEASED
    my_type: ClassVar[str] = "JobReleaseEvent"
    _head: ClassVar[str] = "Job was released."


@dataclass(eq=True, repr=True)
class HeldEvent(Event):
    """012: the job was put on hold (``code``/``subcode`` are HoldReasonCode/SubCode)."""

    type: ClassVar[EventType] = EventType.JOB_HELD
    my_type: ClassVar[str] = "JobHeldEvent"

    reason: str = ""
    code: int = 0
    subcode: int = 0

    def body(self) -> str:
        reason = one_line(self.reason) if self.reason else "Reason unspecified"
        return f"Job was held.\n\t{reason}\n\tCode {self.code} Subcode {self.subcode}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job was held.")
        reason = lines[1].strip() if len(lines) > 1 else ""
        if reason == "Reason unspecified":
            reason = ""
        code = subcode = 0
        if len(lines) > 2:
            m = re.match(r"\s*Code (-?\d+) Subcode (-?\d+)", lines[2])
            if m:
                code, subcode = int(m.group(1)), int(m.group(2))
        return cls(**common, reason=reason, code=code, subcode=subcode)

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        if self.reason:
            out["HoldReason"] = one_line(self.reason)
        out["HoldReasonCode"] = self.code
        out["HoldReasonSubCode"] = self.subcode
        return out


@dataclass(eq=True, repr=True)
class JobAdInformationEvent(Event):
    """028: a set of job attributes, kept as ordered name -> expression text.

    Expressions stay text so writing and reading need no ClassAd parser;
    ``classad()`` builds a roost ClassAd when a caller wants to evaluate them.
    """

    type: ClassVar[EventType] = EventType.JOB_AD_INFORMATION
    my_type: ClassVar[str] = "JobAdInformationEvent"

    attributes: dict[str, str] = field(default_factory=dict)

    def body(self) -> str:
        lines = [f"{k} = {one_line(v)}\n" for k, v in self.attributes.items()]
        return "Job ad information event triggered.\n" + "".join(lines)

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job ad information event triggered.")
        attributes: dict[str, str] = {}
        for line in lines[1:]:
            name, eq, value = line.partition("=")
            if not eq:
                raise EventLogError(f"bad job ad line {line!r}")
            attributes[name.strip()] = value.strip()
        return cls(**common, attributes=attributes)

    def classad(self) -> Any:
        """The attributes as a ``roost.classad.ClassAd`` (imported only when asked for)."""
        # lazy: the ClassAd library loads only when someone asks for an event's ad
        from roost.eventlog.jobad import attributes_to_classad

        return attributes_to_classad(self.attributes)

    def _attrs(self) -> Attrs:
        return {k: prop_value(v) for k, v in self.attributes.items()}

    def attrs(self) -> Attrs:
        out = super().attrs()
        out["MyType"] = self.my_type  # as HTCondor: the job's MyType must not win
        return out


@dataclass(eq=True, repr=True)
class AttributeUpdateEvent(Event):
    """033: a job attribute changed; values are expression text.

    HTCondor's reader keeps only the first word of each value (it scans with
    ``%s``); roost's reader keeps the whole value.
    """

    type: ClassVar[EventType] = EventType.ATTRIBUTE_UPDATE
    my_type: ClassVar[str] = "AttributeUpdateEvent"

    attribute: str = ""
    value: str = ""
    old_value: str | None = None

    def body(self) -> str:
        if self.old_value is not None:
            return f"Changing job attribute {self.attribute} from {self.old_value} to {self.value}\n"
        return f"Setting job attribute {self.attribute} to {self.value}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        line = lines[0]
        m = re.fullmatch(r"Changing job attribute (\S+) from (.*) to (.*)", line)
        if m:
            return cls(**common, attribute=m.group(1), old_value=m.group(2), value=m.group(3))
        m = re.fullmatch(r"Setting job attribute (\S+) to (.*)", line)
        if m:
            return cls(**common, attribute=m.group(1), value=m.group(2))
        raise EventLogError(f"bad attribute update line {line!r}")

    def _attrs(self) -> Attrs:
        return {"Attribute": self.attribute, "Value": self.value}
