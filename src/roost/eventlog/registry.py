"""Which class reads each event number."""

from __future__ import annotations

from roost.eventlog.events import Event
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
from roost.eventlog.run_events import (
    DisconnectedEvent,
    ExecutableErrorEvent,
    ExecuteEvent,
    FileTransferEvent,
    ImageSizeEvent,
    NodeExecuteEvent,
    ReconnectedEvent,
    ReconnectFailedEvent,
    RemoteErrorEvent,
    SuspendedEvent,
    UnsuspendedEvent,
)

EVENT_CLASSES: dict[int, type[Event]] = {
    cls.type: cls
    for cls in (
        SubmitEvent,
        ExecuteEvent,
        ExecutableErrorEvent,
        CheckpointedEvent,
        EvictedEvent,
        TerminatedEvent,
        ImageSizeEvent,
        ShadowExceptionEvent,
        GenericEvent,
        AbortedEvent,
        SuspendedEvent,
        UnsuspendedEvent,
        HeldEvent,
        ReleasedEvent,
        NodeExecuteEvent,
        NodeTerminatedEvent,
        PostScriptTerminatedEvent,
        RemoteErrorEvent,
        DisconnectedEvent,
        ReconnectedEvent,
        ReconnectFailedEvent,
        JobAdInformationEvent,
        AttributeUpdateEvent,
        FileTransferEvent,
        GridSubmitEvent,
        GridResourceUpEvent,
        GridResourceDownEvent,
    )
}
