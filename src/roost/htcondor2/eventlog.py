"""``JobEventLog`` and ``JobEvent``: htcondor2's reader of job event logs over roost's
(:class:`roost.eventlog.EventLogFollower`): blocking, polling or timed iteration,
resumable by pickling."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

from roost.eventlog import Event, EventLogFollower
from roost.eventlog.writer import format_event
from roost.htcondor2.enums import JobEventType
from roost.htcondor2.errors import HTCondorException

#: how often a blocked iterator looks at the file again (seconds)
POLL_INTERVAL = 0.1
#: the line that closes each event in a text log
_END_LINE = "...\n"


class JobEvent(Mapping[str, Any]):
    """One event: ``type``, ``cluster``, ``proc``, ``timestamp`` (Unix seconds, int) and
    its attributes by htcondor2's names (``event["ReturnValue"]``)."""

    def __init__(self, event: Event) -> None:
        self._event = event
        self._attrs = event.attrs()

    @property
    def type(self) -> JobEventType:
        return JobEventType(int(self._event.type))

    @property
    def cluster(self) -> int:
        return self._event.cluster

    @property
    def proc(self) -> int:
        return self._event.proc if self._event.proc >= 0 else -1

    @property
    def timestamp(self) -> int:
        return int(self._event.timestamp)

    def __getitem__(self, key: str) -> Any:
        return self._event[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)

    def __repr__(self) -> str:
        return f"JobEvent(type={self.type}, cluster={self.cluster}, proc={self.proc}, timestamp={self.timestamp})"

    def __str__(self) -> str:
        """The event's text as the log holds it, without the ``...`` line that ends
        each event there: htcondor2 prints header and body only."""
        text = format_event(self._event)
        return text[: -len(_END_LINE)] if text.endswith(_END_LINE) else text


class JobEventLog:
    """The events of the job event log ``filename``, in order. Iterating blocks for
    the next event; ``events(stop_after=0)`` only returns those written already,
    ``events(stop_after=N)`` waits for events until N seconds from now."""

    def __init__(self, filename: str) -> None:
        if not isinstance(filename, str):
            raise TypeError("filename must be a string")
        if not filename:
            raise ValueError("filename must not be empty")
        if not os.path.exists(filename):
            raise HTCondorException(f"Could not initialize JobEventLog: No such file or directory: {filename!r}.")
        self._filename = filename
        self._deadline = 0.0
        self._follower: EventLogFollower | None = EventLogFollower(filename)
        self._pending: list[Event] = []

    def events(self, stop_after: int | None = None) -> JobEventLog:
        """This log as an iterator that waits for events until ``stop_after`` seconds
        from now (None: forever; 0: not at all), then stops (it can be resumed)."""
        if stop_after is None:
            self._deadline = 0.0
        elif isinstance(stop_after, int):
            self._deadline = time.time() + stop_after
        else:
            raise TypeError("deadline must be an integer")
        return self

    def close(self) -> None:
        """Stop reading: the iterator yields no more events."""
        self._follower = None
        self._pending = []

    def __iter__(self) -> JobEventLog:
        return self

    def __next__(self) -> JobEvent:
        while not self._pending:
            if self._follower is None:
                raise StopIteration
            self._pending = self._follower.poll()
            if self._pending:
                break
            if self._deadline and time.time() >= self._deadline:
                raise StopIteration
            time.sleep(POLL_INTERVAL)
        return JobEvent(self._pending.pop(0))

    def __enter__(self) -> JobEventLog:
        self._deadline = 0.0
        return self

    def __exit__(self, *exc: object) -> bool:
        self.close()
        return False

    def __getstate__(self) -> dict[str, Any]:
        """Where reading stands: the byte offset after the events read, and those read
        but not yet returned."""
        offset = self._follower.offset if self._follower is not None else 0
        return {"filename": self._filename, "offset": offset, "deadline": self._deadline,
                "pending": list(self._pending)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._filename = state["filename"]
        self._deadline = state["deadline"]
        self._follower = EventLogFollower(self._filename, state["offset"])
        self._pending = list(state.get("pending") or [])
