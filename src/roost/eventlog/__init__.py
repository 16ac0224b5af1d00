"""HTCondor's job event log (user log) text format: typed events, a writer, a reader.

Writing: ``EventLogWriter(path).write(SubmitEvent(12, 0, time.time(), submit_host=...))``.
Reading: ``read_events(path)`` or ``EventLogFollower(path).poll()``, in any of
the three forms (text, XML, JSON: adformats.py).  Events expose
the attribute names ``htcondor2.JobEvent`` uses (``event["ReturnValue"]``).
"""

from roost.eventlog.adformats import ClassAdEvent, JsonEventFormatter, XmlEventFormatter
from roost.eventlog.errors import EventLogError
from roost.eventlog.events import Event, EventType, UnknownEvent
from roost.eventlog.exit_events import (
    CheckpointedEvent,
    EvictedEvent,
    NodeTerminatedEvent,
    PostScriptTerminatedEvent,
    ShadowExceptionEvent,
    TerminatedEvent,
)
from roost.eventlog.grid_events import GridResourceDownEvent, GridResourceUpEvent, GridSubmitEvent
from roost.eventlog.queue_events import (
    AbortedEvent,
    AttributeUpdateEvent,
    GenericEvent,
    HeldEvent,
    JobAdInformationEvent,
    ReleasedEvent,
    SubmitEvent,
)
from roost.eventlog.reader import EventLogFollower, EventParser, parse_events, read_events
from roost.eventlog.registry import EVENT_CLASSES
from roost.eventlog.run_events import (
    DisconnectedEvent,
    ExecutableErrorEvent,
    ExecuteEvent,
    FileTransferEvent,
    FileTransferType,
    ImageSizeEvent,
    NodeExecuteEvent,
    ReconnectedEvent,
    ReconnectFailedEvent,
    RemoteErrorEvent,
    SuspendedEvent,
    UnsuspendedEvent,
)
from roost.eventlog.textformat import Resource, Usage
from roost.eventlog.writer import EventFormatter, EventLogWriter, format_event, parse_format_options

__all__ = [
    "EVENT_CLASSES",
    "AbortedEvent",
    "AttributeUpdateEvent",
    "CheckpointedEvent",
    "ClassAdEvent",
    "DisconnectedEvent",
    "Event",
    "EventFormatter",
    "EventLogError",
    "EventLogFollower",
    "EventLogWriter",
    "EventParser",
    "EventType",
    "EvictedEvent",
    "ExecutableErrorEvent",
    "ExecuteEvent",
    "FileTransferEvent",
    "FileTransferType",
    "GenericEvent",
    "GridResourceDownEvent",
    "GridResourceUpEvent",
    "GridSubmitEvent",
    "HeldEvent",
    "JsonEventFormatter",
    "ImageSizeEvent",
    "JobAdInformationEvent",
    "NodeExecuteEvent",
    "NodeTerminatedEvent",
    "PostScriptTerminatedEvent",
    "ReconnectFailedEvent",
    "ReconnectedEvent",
    "ReleasedEvent",
    "RemoteErrorEvent",
    "Resource",
    "ShadowExceptionEvent",
    "SubmitEvent",
    "SuspendedEvent",
    "TerminatedEvent",
    "UnknownEvent",
    "UnsuspendedEvent",
    "Usage",
    "XmlEventFormatter",
    "format_event",
    "parse_format_options",
    "parse_events",
    "read_events",
]
