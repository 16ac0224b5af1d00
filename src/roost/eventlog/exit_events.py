"""Events that end or interrupt a run and carry its resource usage: terminated, evicted, checkpointed.

Bodies and attribute names follow HTCondor's condor_event.cpp (see events.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from roost.eventlog.errors import EventLogError
from roost.eventlog.events import (
    Attrs,
    Event,
    EventType,
    expect_line,
)
from roost.eventlog.textformat import (
    Resource,
    ResourceTableParser,
    Usage,
    format_bytes,
    format_resources,
    one_line,
    parse_usage,
)

_BYTE_FIELDS = ("sent_bytes", "received_bytes", "total_sent_bytes", "total_received_bytes")


_BYTES_RE = re.compile(r"\t(\S+)  -  (Run|Total) Bytes (Sent|Received) By (\w+)")


def _usage_line(u: Usage, label: str, indent: str = "\t") -> str:
    return f"{indent}{u}  -  {label}\n"


def _termination_lines(return_value: int | None, signal: int | None, core_file: str) -> str:
    if return_value is not None:
        return f"\t(1) Normal termination (return value {return_value})\n"
    out = f"\t(0) Abnormal termination (signal {signal if signal is not None else -1})\n"
    out += f"\t(1) Corefile in: {core_file}\n" if core_file else "\t(0) No core file\n"
    return out


_TERMINATION = re.compile(
    r"\s*\((\d)\) (?:Normal termination \(return value (-?\d+)\)|Abnormal termination \(signal (-?\d+)\))"
).match


def _parse_termination(lines: list[str], i: int) -> tuple[int | None, int | None, str, int]:
    """Read ``(1) Normal termination`` or ``(0) Abnormal termination`` (+ core line)."""
    m = _TERMINATION(lines[i])
    if m is None:
        raise EventLogError(f"bad termination line {lines[i]!r}")
    if m.group(2) is not None:
        return int(m.group(2)), None, "", i + 1
    core = ""
    s = lines[i + 1].strip() if i + 1 < len(lines) else ""
    if s.startswith("(1) Corefile in: "):
        core = s[len("(1) Corefile in: ") :]
        i += 1
    elif s.startswith("(0)"):
        i += 1
    return None, int(m.group(3)), core, i + 1


def _parse_resources(lines: list[str], i: int) -> tuple[tuple[Resource, ...], int]:
    if i >= len(lines) or not (
        lines[i].startswith("\tPartitionable ") or lines[i].startswith("\tResources")
    ):
        return (), i
    parser = ResourceTableParser(lines[i])
    rows = []
    i += 1
    while i < len(lines) and ":" in lines[i]:
        row = parser.parse(lines[i])
        if row is not None:
            rows.append(row)
        i += 1
    return tuple(rows), i


@dataclass(eq=True, repr=True)
class CheckpointedEvent(Event):
    """003: the job was checkpointed."""

    type: ClassVar[EventType] = EventType.CHECKPOINTED
    my_type: ClassVar[str] = "CheckpointedEvent"

    run_remote_usage: Usage = Usage()
    run_local_usage: Usage = Usage()
    sent_bytes: float = 0.0

    def body(self) -> str:
        return (
            "Job was checkpointed.\n"
            + _usage_line(self.run_remote_usage, "Run Remote Usage")
            + _usage_line(self.run_local_usage, "Run Local Usage")
            + f"\t{format_bytes(self.sent_bytes)}  -  Run Bytes Sent By Job For Checkpoint\n"
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job was checkpointed.")
        remote = parse_usage(lines[1])
        local = parse_usage(lines[2])
        sent = 0.0
        if len(lines) > 3:
            sent = float(lines[3].split()[0])
        return cls(**common, run_remote_usage=remote, run_local_usage=local, sent_bytes=sent)

    def _attrs(self) -> Attrs:
        return {
            "RunLocalUsage": str(self.run_local_usage),
            "RunRemoteUsage": str(self.run_remote_usage),
            "SentBytes": float(self.sent_bytes),
        }


@dataclass(eq=True, repr=True)
class TerminatedEvent(Event):
    """005: the job exited: give ``return_value`` for a normal exit or ``signal`` for a kill.

    ``resources`` is the optional "Partitionable Resources" table (usage,
    request, allocation per resource) that HTCondor appends.
    """

    type: ClassVar[EventType] = EventType.JOB_TERMINATED
    my_type: ClassVar[str] = "JobTerminatedEvent"
    _who: ClassVar[str] = "Job"
    _byte_labels: ClassVar[tuple[str, ...]] = tuple(
        f"{r} Bytes {d} By Job" for r, d in (("Run", "Sent"), ("Run", "Received"), ("Total", "Sent"), ("Total", "Received"))
    )

    return_value: int | None = None
    signal: int | None = None
    core_file: str = ""
    run_remote_usage: Usage = Usage()
    run_local_usage: Usage = Usage()
    total_remote_usage: Usage = Usage()
    total_local_usage: Usage = Usage()
    sent_bytes: float = 0.0
    received_bytes: float = 0.0
    total_sent_bytes: float = 0.0
    total_received_bytes: float = 0.0
    resources: tuple[Resource, ...] = ()

    def __post_init__(self) -> None:
        if self.return_value is None and self.signal is None:
            self.return_value = 0
        elif self.return_value is not None and self.signal is not None:
            raise ValueError("a job ends normally (return_value) or by a signal, not both")

    @property
    def terminated_normally(self) -> bool:
        return self.return_value is not None

    def _head(self) -> str:
        return "Job terminated.\n"

    def body(self) -> str:
        w = self._who
        term = _termination_lines(self.return_value, self.signal, self.core_file)
        # HTCondor's first usage line rides on the tab left after the termination lines.
        return (
            self._head()
            + term
            + _usage_line(self.run_remote_usage, "Run Remote Usage", "\t\t")
            + _usage_line(self.run_local_usage, "Run Local Usage", "\t\t")
            + _usage_line(self.total_remote_usage, "Total Remote Usage", "\t\t")
            + _usage_line(self.total_local_usage, "Total Local Usage", "\t\t")
            + f"\t{format_bytes(self.sent_bytes)}  -  Run Bytes Sent By {w}\n"
            + f"\t{format_bytes(self.received_bytes)}  -  Run Bytes Received By {w}\n"
            + f"\t{format_bytes(self.total_sent_bytes)}  -  Total Bytes Sent By {w}\n"
            + f"\t{format_bytes(self.total_received_bytes)}  -  Total Bytes Received By {w}\n"
            + format_resources(self.resources)
        )

    @classmethod
    def _parse_tail(cls, lines: list[str], i: int) -> dict[str, Any]:
        rv, sig, core, i = _parse_termination(lines, i)
        usages = []
        for _ in range(4):
            u = parse_usage(lines[i])
            usages.append(u)
            i += 1
        kw: dict[str, Any] = {
            "return_value": rv,
            "signal": sig,
            "core_file": core,
            "run_remote_usage": usages[0],
            "run_local_usage": usages[1],
            "total_remote_usage": usages[2],
            "total_local_usage": usages[3],
        }
        labels = cls._byte_labels
        if len(lines) >= i + 4 and all(lines[i + k].endswith(labels[k]) for k in range(4)):
            # The usual layout: the four byte counts in HTCondor's order.
            for k, name in enumerate(_BYTE_FIELDS):
                kw[name] = float(lines[i + k].split(None, 1)[0])
            i += 4
        names = {
            ("Run", "Sent"): "sent_bytes",
            ("Run", "Received"): "received_bytes",
            ("Total", "Sent"): "total_sent_bytes",
            ("Total", "Received"): "total_received_bytes",
        }
        while i < len(lines):
            m = _BYTES_RE.match(lines[i])
            if m is None:
                break
            kw[names[(m.group(2), m.group(3))]] = float(m.group(1))
            i += 1
        kw["resources"], i = _parse_resources(lines, i)
        return kw

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job terminated.")
        return cls(**common, **cls._parse_tail(lines, 1))

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        for r in self.resources:
            out.update(r.attrs())
        out["TerminatedNormally"] = self.return_value is not None
        if self.return_value is not None:
            out["ReturnValue"] = self.return_value
        if self.signal is not None:
            out["TerminatedBySignal"] = self.signal
        if self.core_file:
            out["CoreFile"] = self.core_file
        out["RunLocalUsage"] = str(self.run_local_usage)
        out["RunRemoteUsage"] = str(self.run_remote_usage)
        out["TotalLocalUsage"] = str(self.total_local_usage)
        out["TotalRemoteUsage"] = str(self.total_remote_usage)
        out["SentBytes"] = float(self.sent_bytes)
        out["ReceivedBytes"] = float(self.received_bytes)
        out["TotalSentBytes"] = float(self.total_sent_bytes)
        out["TotalReceivedBytes"] = float(self.total_received_bytes)
        return out


@dataclass(eq=True, repr=True)
class NodeTerminatedEvent(TerminatedEvent):
    """015: one node of a parallel-universe job exited."""

    type: ClassVar[EventType] = EventType.NODE_TERMINATED
    my_type: ClassVar[str] = "NodeTerminatedEvent"
    _who: ClassVar[str] = "Node"
    _byte_labels: ClassVar[tuple[str, ...]] = tuple(
        f"{r} Bytes {d} By Node" for r, d in (("Run", "Sent"), ("Run", "Received"), ("Total", "Sent"), ("Total", "Received"))
    )

    node: int = 0

    def _head(self) -> str:
        return f"Node {self.node} terminated.\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        m = re.match(r"Node (-?\d+) terminated\.", lines[0])
        if m is None:
            raise EventLogError(f"bad node terminated line {lines[0]!r}")
        return cls(**common, node=int(m.group(1)), **cls._parse_tail(lines, 1))

    def _attrs(self) -> Attrs:
        out = super()._attrs()
        # HTCondor always sets both for node events, -1 meaning "not this way".
        out["ReturnValue"] = self.return_value if self.return_value is not None else -1
        out["TerminatedBySignal"] = self.signal if self.signal is not None else -1
        if self.node >= 0:
            out["Node"] = self.node
        return out


@dataclass(eq=True, repr=True)
class EvictedEvent(Event):
    """004: the job left its machine (vacated, preempted); maybe checkpointed or requeued."""

    type: ClassVar[EventType] = EventType.JOB_EVICTED
    my_type: ClassVar[str] = "JobEvictedEvent"

    checkpointed: bool = False
    run_remote_usage: Usage = Usage()
    run_local_usage: Usage = Usage()
    sent_bytes: float = 0.0
    received_bytes: float = 0.0
    terminated_and_requeued: bool = False
    return_value: int | None = None
    signal: int | None = None
    core_file: str = ""
    reason: str = ""
    reason_code: int = 0
    reason_subcode: int = 0
    resources: tuple[Resource, ...] = ()

    def body(self) -> str:
        if self.reason_code:
            out = f"Job was evicted. Code {self.reason_code} Subcode {self.reason_subcode}\n"
        else:
            out = "Job was evicted.\n"
        if self.terminated_and_requeued:
            out += "\t(0) Job terminated and was requeued\n"
        elif self.checkpointed:
            out += "\t(1) Job was checkpointed.\n"
        else:
            out += "\t(0) CPU times\n"
        out += _usage_line(self.run_remote_usage, "Run Remote Usage", "\t\t")
        out += _usage_line(self.run_local_usage, "Run Local Usage", "\t\t")
        out += f"\t{format_bytes(self.sent_bytes)}  -  Run Bytes Sent By Job\n"
        out += f"\t{format_bytes(self.received_bytes)}  -  Run Bytes Received By Job\n"
        if self.terminated_and_requeued:
            rv = self.return_value
            if rv is None and self.signal is None:
                rv = 0
            out += _termination_lines(rv, self.signal, self.core_file)
        if self.reason:
            prefix = "" if self.terminated_and_requeued else "Reason: "
            out += f"\t{prefix}{one_line(self.reason)}\n"
        return out + format_resources(self.resources)

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        head = expect_line(lines, 0, "Job was evicted.")
        kw: dict[str, Any] = {}
        m = re.match(r"\s*Code (-?\d+) Subcode (-?\d+)", head)
        if m:
            kw["reason_code"], kw["reason_subcode"] = int(m.group(1)), int(m.group(2))
        how = lines[1].strip()
        kw["terminated_and_requeued"] = how.startswith("(0) Job terminated and was requeued")
        kw["checkpointed"] = how.startswith("(1)")
        kw["run_remote_usage"] = parse_usage(lines[2])
        kw["run_local_usage"] = parse_usage(lines[3])
        i = 4
        while i < len(lines):
            m2 = _BYTES_RE.match(lines[i])
            if m2 is None:
                break
            key = "sent_bytes" if m2.group(3) == "Sent" else "received_bytes"
            kw[key] = float(m2.group(1))
            i += 1
        if kw["terminated_and_requeued"] and i < len(lines) and "termination" in lines[i]:
            kw["return_value"], kw["signal"], kw["core_file"], i = _parse_termination(lines, i)
        if i < len(lines) and not lines[i].startswith("\tPartitionable "):
            text = lines[i].strip()
            kw["reason"] = text[8:] if text.startswith("Reason: ") else text
            i += 1
        kw["resources"], i = _parse_resources(lines, i)
        return cls(**common, **kw)

    def _attrs(self) -> Attrs:
        # Unlike 005, HTCondor does not lift an eviction's resource table into the ad.
        out: Attrs = {"Checkpointed": self.checkpointed}
        out["RunLocalUsage"] = str(self.run_local_usage)
        out["RunRemoteUsage"] = str(self.run_remote_usage)
        out["SentBytes"] = float(self.sent_bytes)
        out["ReceivedBytes"] = float(self.received_bytes)
        out["TerminatedAndRequeued"] = self.terminated_and_requeued
        normal = self.terminated_and_requeued and self.signal is None
        out["TerminatedNormally"] = normal
        if self.terminated_and_requeued:
            if normal:
                out["ReturnValue"] = self.return_value or 0
            elif self.signal is not None:
                out["TerminatedBySignal"] = self.signal
        if self.reason:
            out["Reason"] = one_line(self.reason)
        if self.reason_code:
            out["ReasonCode"] = self.reason_code
        if self.reason_subcode:
            out["ReasonSubCode"] = self.reason_subcode
        if self.core_file:
            out["CoreFile"] = self.core_file
        return out


@dataclass(eq=True, repr=True)
class PostScriptTerminatedEvent(Event):
    """016: a DAG node's POST script exited."""

    type: ClassVar[EventType] = EventType.POST_SCRIPT_TERMINATED
    my_type: ClassVar[str] = "PostScriptTerminatedEvent"

    return_value: int | None = None
    signal: int | None = None
    dag_node_name: str = ""

    def __post_init__(self) -> None:
        if self.return_value is None and self.signal is None:
            self.return_value = 0

    def body(self) -> str:
        out = "POST Script terminated.\n"
        if self.return_value is not None:
            out += f"\t(1) Normal termination (return value {self.return_value})\n"
        else:
            out += f"\t(0) Abnormal termination (signal {self.signal})\n"
        if self.dag_node_name:
            out += f"    DAG Node: {self.dag_node_name}\n"
        return out

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "POST Script terminated.")
        m = _TERMINATION(lines[1])
        if m is None:
            raise EventLogError(f"bad termination line {lines[1]!r}")
        rv = int(m.group(2)) if m.group(2) is not None else None
        sig = int(m.group(3)) if m.group(3) is not None else None
        name = ""
        for line in lines[2:]:
            s = line.strip()
            if s.startswith("DAG Node: "):
                name = s[10:]
        return cls(**common, return_value=rv, signal=sig, dag_node_name=name)

    def _attrs(self) -> Attrs:
        out: Attrs = {"TerminatedNormally": self.return_value is not None}
        if self.return_value is not None:
            out["ReturnValue"] = self.return_value
        if self.signal is not None:
            out["TerminatedBySignal"] = self.signal
        if self.dag_node_name:
            out["DAGNodeName"] = self.dag_node_name
        return out


@dataclass(eq=True, repr=True)
class ShadowExceptionEvent(Event):
    """007: the shadow (the schedd's side of a running job) failed."""

    type: ClassVar[EventType] = EventType.SHADOW_EXCEPTION
    my_type: ClassVar[str] = "ShadowExceptionEvent"

    message: str = ""
    sent_bytes: float = 0.0
    received_bytes: float = 0.0

    def body(self) -> str:
        return (
            f"Shadow exception!\n\t{one_line(self.message)}\n"
            f"\t{format_bytes(self.sent_bytes)}  -  Run Bytes Sent By Job\n"
            f"\t{format_bytes(self.received_bytes)}  -  Run Bytes Received By Job\n"
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Shadow exception!")
        message = lines[1].strip() if len(lines) > 1 else ""
        kw: dict[str, Any] = {}
        for line in lines[2:]:
            m = _BYTES_RE.match(line)
            if m:
                kw["sent_bytes" if m.group(3) == "Sent" else "received_bytes"] = float(m.group(1))
        return cls(**common, message=message, **kw)

    def _attrs(self) -> Attrs:
        return {
            "Message": self.message,
            "SentBytes": float(self.sent_bytes),
            "ReceivedBytes": float(self.received_bytes),
        }
