"""Events while a job runs: started, resized, suspended, transferring files, losing and regaining contact.

Bodies and attribute names follow HTCondor's condor_event.cpp (see events.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, ClassVar

from roost.eventlog.errors import EventLogError
from roost.eventlog.events import (
    Attrs,
    Event,
    EventType,
    expect_line,
    format_props,
    parse_props,
    prop_value,
)
from roost.eventlog.textformat import one_line


@dataclass(eq=True, repr=True)
class ExecuteEvent(Event):
    """001: the job started on an execute host; ``execute_props`` are name -> expression text."""

    type: ClassVar[EventType] = EventType.EXECUTE
    my_type: ClassVar[str] = "ExecuteEvent"

    execute_host: str = ""
    slot_name: str = ""
    execute_props: dict[str, str] = field(default_factory=dict)

    def body(self) -> str:
        return f"Job executing on host: {self.execute_host}\n" + format_props(
            self.slot_name, self.execute_props
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        host = expect_line(lines, 0, "Job executing on host: ")
        slot, props = parse_props(lines, 1)
        return cls(**common, execute_host=host, slot_name=slot, execute_props=props)

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        if self.execute_host:
            out["ExecuteHost"] = self.execute_host
        if self.slot_name:
            out["SlotName"] = self.slot_name
        if self.execute_props:
            out["ExecuteProps"] = {k: prop_value(v) for k, v in self.execute_props.items()}
        return out


@dataclass(eq=True, repr=True)
class NodeExecuteEvent(Event):
    """014: one node of a parallel-universe job started."""

    type: ClassVar[EventType] = EventType.NODE_EXECUTE
    my_type: ClassVar[str] = "NodeExecuteEvent"

    node: int = 0
    execute_host: str = ""
    slot_name: str = ""
    execute_props: dict[str, str] = field(default_factory=dict)

    def body(self) -> str:
        return f"Node {self.node} executing on host: {self.execute_host}\n" + format_props(
            self.slot_name, self.execute_props
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        m = re.match(r"Node (-?\d+) executing on host: ?(.*)", lines[0])
        if m is None:
            raise EventLogError(f"bad node execute line {lines[0]!r}")
        slot, props = parse_props(lines, 1)
        return cls(
            **common,
            node=int(m.group(1)),
            execute_host=m.group(2).strip(),
            slot_name=slot,
            execute_props=props,
        )

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        if self.execute_host:
            out["ExecuteHost"] = self.execute_host
        out["Node"] = self.node
        if self.slot_name:
            out["SlotName"] = self.slot_name
        if self.execute_props:
            out["ExecuteProps"] = {k: prop_value(v) for k, v in self.execute_props.items()}
        return out


@dataclass(eq=True, repr=True)
class ExecutableErrorEvent(Event):
    """002: the executable could not be run (0: not executable, 1: badly linked)."""

    type: ClassVar[EventType] = EventType.EXECUTABLE_ERROR
    my_type: ClassVar[str] = "ExecutableErrorEvent"
    NOT_EXECUTABLE: ClassVar[int] = 0
    BAD_LINK: ClassVar[int] = 1

    error_type: int = 0

    def body(self) -> str:
        text = {0: "Job file not executable.", 1: "Job not properly linked for Condor."}
        return f"({self.error_type}) {text.get(self.error_type, '[Bad error number.]')}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        m = re.match(r"\((-?\d+)\)", lines[0])
        if m is None:
            raise EventLogError(f"bad executable error line {lines[0]!r}")
        return cls(**common, error_type=int(m.group(1)))

    def _attrs(self) -> Attrs:
        return {"ExecuteErrorType": self.error_type} if self.error_type >= 0 else {}


_IMAGE_KEYS = {
    "MemoryUsage": "memory_usage",
    "ResidentSetSize": "resident_set_size",
    "ProportionalSetSize": "proportional_set_size",
}


@dataclass(eq=True, repr=True)
class ImageSizeEvent(Event):
    """006: memory footprint update; ``size`` is the image size in KiB."""

    type: ClassVar[EventType] = EventType.IMAGE_SIZE
    my_type: ClassVar[str] = "JobImageSizeEvent"

    size: int = 0
    memory_usage: int | None = None
    resident_set_size: int | None = 0  # HTCondor always writes it, 0 when unknown
    proportional_set_size: int | None = None

    def body(self) -> str:
        out = f"Image size of job updated: {self.size}\n"
        if self.memory_usage is not None:
            out += f"\t{self.memory_usage}  -  MemoryUsage of job (MB)\n"
        if self.resident_set_size is not None:
            out += f"\t{self.resident_set_size}  -  ResidentSetSize of job (KB)\n"
        if self.proportional_set_size is not None:
            out += f"\t{self.proportional_set_size}  -  ProportionalSetSize of job (KB)\n"
        return out

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        size = int(expect_line(lines, 0, "Image size of job updated: ").strip())
        kw: dict[str, Any] = {"resident_set_size": None}
        for line in lines[1:]:
            parts = line.split(None, 3)
            if len(parts) >= 3:
                key = _IMAGE_KEYS.get(parts[2])
                if key is not None:
                    kw[key] = int(parts[0])
        return cls(**common, size=size, **kw)

    def _attrs(self) -> Attrs:
        out: Attrs = {"Size": self.size}
        if self.memory_usage is not None:
            out["MemoryUsage"] = self.memory_usage
        if self.resident_set_size is not None:
            out["ResidentSetSize"] = self.resident_set_size
        if self.proportional_set_size is not None:
            out["ProportionalSetSize"] = self.proportional_set_size
        return out


@dataclass(eq=True, repr=True)
class SuspendedEvent(Event):
    """010: the job's processes were stopped."""

    type: ClassVar[EventType] = EventType.JOB_SUSPENDED
    my_type: ClassVar[str] = "JobSuspendedEvent"

    num_pids: int = 0

    def body(self) -> str:
        return f"Job was suspended.\n\tNumber of processes actually suspended: {self.num_pids}\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job was suspended.")
        n = expect_line(lines, 1, "\tNumber of processes actually suspended: ")
        return cls(**common, num_pids=int(n))

    def _attrs(self) -> Attrs:
        return {"NumberOfPIDs": self.num_pids}


@dataclass(eq=True, repr=True)
class UnsuspendedEvent(Event):
    """011: the job's processes were continued."""

    type: ClassVar[EventType] = EventType.JOB_UNSUSPENDED
    my_type: ClassVar[str] = "JobUnsuspendedEvent"

    def body(self) -> str:
        return "Job was unsuspended.\n"

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job was unsuspended.")
        return cls(**common)


@dataclass(eq=True, repr=True)
class RemoteErrorEvent(Event):
    """021: a daemon on the execute side (usually the starter) reported an error."""

    type: ClassVar[EventType] = EventType.REMOTE_ERROR
    my_type: ClassVar[str] = "RemoteErrorEvent"

    daemon: str = ""
    execute_host: str = ""
    error_msg: str = ""
    critical: bool = True
    hold_reason_code: int = 0
    hold_reason_subcode: int = 0

    def body(self) -> str:
        kind = "Error" if self.critical else "Message"
        out = f"{kind} from {self.daemon} on {self.execute_host}:\n"
        for line in self.error_msg.split("\n") if self.error_msg else ():
            out += f"\t{line}\n"
        if self.hold_reason_code:
            out += f"\tCode {self.hold_reason_code} Subcode {self.hold_reason_subcode}\n"
        return out

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        m = re.match(r"(Error|Message) from (\S*) on (.*):$", lines[0])
        if m is None:
            raise EventLogError(f"bad remote error line {lines[0]!r}")
        msg: list[str] = []
        code = subcode = 0
        for line in lines[1:]:
            c = re.fullmatch(r"\tCode (-?\d+) Subcode (-?\d+)", line)
            if c:
                code, subcode = int(c.group(1)), int(c.group(2))
            else:
                msg.append(line[1:] if line.startswith("\t") else line)
        return cls(
            **common,
            daemon=m.group(2),
            execute_host=m.group(3),
            error_msg="\n".join(msg),
            critical=m.group(1) == "Error",
            hold_reason_code=code,
            hold_reason_subcode=subcode,
        )

    def _attrs(self) -> Attrs:
        out: Attrs = {}
        if self.daemon:
            out["Daemon"] = self.daemon
        if self.execute_host:
            out["ExecuteHost"] = self.execute_host
        if self.error_msg:
            out["ErrorMsg"] = self.error_msg
        if not self.critical:
            out["CriticalError"] = 0
        if self.hold_reason_code:
            out["HoldReasonCode"] = self.hold_reason_code
            out["HoldReasonSubCode"] = self.hold_reason_subcode
        return out


@dataclass(eq=True, repr=True)
class DisconnectedEvent(Event):
    """022: the shadow lost contact with the execute side and will try to reconnect."""

    type: ClassVar[EventType] = EventType.JOB_DISCONNECTED
    my_type: ClassVar[str] = "JobDisconnectedEvent"

    startd_name: str = ""
    startd_addr: str = ""
    reason: str = ""

    def body(self) -> str:
        return (
            "Job disconnected, attempting to reconnect\n"
            f"    {one_line(self.reason)}\n"
            f"    Trying to reconnect to {self.startd_name} {self.startd_addr}\n"
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job disconnected, attempting to reconnect")
        reason = lines[1].strip() if len(lines) > 1 else ""
        rest = expect_line(lines, 2, "    Trying to reconnect to ").strip()
        name, _, addr = rest.partition(" ")
        return cls(**common, startd_name=name, startd_addr=addr, reason=reason)

    def _attrs(self) -> Attrs:
        return {
            "StartdAddr": self.startd_addr,
            "StartdName": self.startd_name,
            "DisconnectReason": one_line(self.reason),
            "EventDescription": "Job disconnected, attempting to reconnect",
        }


@dataclass(eq=True, repr=True)
class ReconnectedEvent(Event):
    """023: the shadow found the job still running after a disconnect."""

    type: ClassVar[EventType] = EventType.JOB_RECONNECTED
    my_type: ClassVar[str] = "JobReconnectedEvent"

    startd_name: str = ""
    startd_addr: str = ""
    starter_addr: str = ""

    def body(self) -> str:
        return (
            f"Job reconnected to {self.startd_name}\n"
            f"    startd address: {self.startd_addr}\n"
            f"    starter address: {self.starter_addr}\n"
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        name = expect_line(lines, 0, "Job reconnected to ").strip()
        addr = expect_line(lines, 1, "    startd address: ").strip()
        starter = expect_line(lines, 2, "    starter address: ").strip()
        return cls(**common, startd_name=name, startd_addr=addr, starter_addr=starter)

    def _attrs(self) -> Attrs:
        return {
            "StartdAddr": self.startd_addr,
            "StartdName": self.startd_name,
            "StarterAddr": self.starter_addr,
            "EventDescription": "Job reconnected",
        }


@dataclass(eq=True, repr=True)
class ReconnectFailedEvent(Event):
    """024: the job's lease ran out before the shadow reached it again; it will run anew."""

    type: ClassVar[EventType] = EventType.JOB_RECONNECT_FAILED
    my_type: ClassVar[str] = "JobReconnectFailedEvent"

    startd_name: str = ""
    reason: str = ""

    def body(self) -> str:
        return (
            "Job reconnection failed\n"
            f"    {one_line(self.reason)}\n"
            f"    Can not reconnect to {self.startd_name}, rescheduling job\n"
        )

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        expect_line(lines, 0, "Job reconnection failed")
        reason = expect_line(lines, 1, "    ")
        rest = expect_line(lines, 2, "    Can not reconnect to ")
        name, comma, _ = rest.rpartition(", rescheduling job")
        return cls(**common, startd_name=name if comma else rest, reason=reason)

    def _attrs(self) -> Attrs:
        return {
            "StartdName": self.startd_name,
            "Reason": one_line(self.reason),
            "EventDescription": "Job reconnect impossible: rescheduling job",
        }


class FileTransferType(IntEnum):
    """The ``Type`` of a 040 event (``htcondor2.FileTransferEventType``)."""

    IN_QUEUED = 1
    IN_STARTED = 2
    IN_FINISHED = 3
    OUT_QUEUED = 4
    OUT_STARTED = 5
    OUT_FINISHED = 6


_FILE_TRANSFER_TEXT = {
    FileTransferType.IN_QUEUED: "Entered queue to transfer input files",
    FileTransferType.IN_STARTED: "Started transferring input files",
    FileTransferType.IN_FINISHED: "Finished transferring input files",
    FileTransferType.OUT_QUEUED: "Entered queue to transfer output files",
    FileTransferType.OUT_STARTED: "Started transferring output files",
    FileTransferType.OUT_FINISHED: "Finished transferring output files",
}


_FILE_TRANSFER_BY_TEXT = {v: k for k, v in _FILE_TRANSFER_TEXT.items()}


@dataclass(eq=True, repr=True)
class FileTransferEvent(Event):
    """040: input/output sandbox transfer queued, started or finished."""

    type: ClassVar[EventType] = EventType.FILE_TRANSFER
    my_type: ClassVar[str] = "FileTransferEvent"

    transfer_type: FileTransferType = FileTransferType.IN_QUEUED
    queueing_delay: int | None = None
    host: str = ""

    def body(self) -> str:
        out = _FILE_TRANSFER_TEXT[FileTransferType(self.transfer_type)] + "\n"
        if self.queueing_delay is not None:
            out += f"\tSeconds spent in queue: {self.queueing_delay}\n"
        if self.host:
            out += f"\tTransferring to host: {self.host}\n"
        return out

    @classmethod
    def from_body(cls, common: dict[str, Any], lines: list[str]) -> Event:
        kind = _FILE_TRANSFER_BY_TEXT.get(lines[0].strip())
        if kind is None:
            raise EventLogError(f"bad file transfer line {lines[0]!r}")
        delay: int | None = None
        host = ""
        for line in lines[1:]:
            s = line.strip()
            if s.startswith("Seconds spent in queue: "):
                delay = int(s[24:])
            elif s.startswith("Transferring to host: "):
                host = s[22:]
        return cls(**common, transfer_type=kind, queueing_delay=delay, host=host)

    def _attrs(self) -> Attrs:
        out: Attrs = {"Type": int(self.transfer_type)}
        if self.queueing_delay is not None:
            out["QueueingDelay"] = self.queueing_delay
        if self.host:
            out["Host"] = self.host
        return out
