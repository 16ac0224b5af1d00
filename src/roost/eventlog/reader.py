"""Reading user logs: a whole file at once, or a growing file as it is written.

The form (text, XML or JSON, see adformats.py) is told by the file's first
bytes, as HTCondor's reader does.

Events end with a line holding only ``...``.  Text after the last such line is
an event still being written (or torn by a crash): it is never returned, and a
follower picks it up once its terminator arrives.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from typing import Any

from roost.eventlog.adformats import AdEventParser, ad_complete_prefix, detect_kind
from roost.eventlog.errors import EventLogError
from roost.eventlog.events import Event, UnknownEvent
from roost.eventlog.registry import EVENT_CLASSES
from roost.eventlog.textformat import TimeParser

_SYNC = "\n...\n"
# NNN (cluster.proc.subproc) date: ISO with a space or a T, or the legacy MM/DD form.
_HEADER = re.compile(
    r"(\d\d\d) \((-?\d+)\.(-?\d+)\.(-?\d+)\) "
    r"((?:\d{4}-\d\d-\d\d|\d\d/\d\d)[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) ?"
).match
_HEADER_ANYWHERE = re.compile(r"\d\d\d \(-?\d+\.-?\d+\.-?\d+\) ")
log = logging.getLogger(__name__)


class EventParser:
    """Parses complete event texts; holds the date cache that makes reading fast."""

    __slots__ = ("_time", "file", "strict")

    def __init__(self, *, file: str | None = None, strict: bool = True) -> None:
        self._time = TimeParser()
        self.file = file
        self.strict = strict

    def parse_event(self, chunk: str, line: int = 1) -> Event:
        """One event's text without its ``...`` line; ``line`` is its first line number (for errors)."""
        m = _HEADER(chunk)
        try:
            if m is None:
                raise EventLogError(f"bad event header {chunk.partition(chr(10))[0]!r}")
            num, cluster, proc, subproc, date = m.groups()
            num = int(num)
            common: dict[str, Any] = {
                "cluster": int(cluster),
                "proc": int(proc),
                "subproc": int(subproc),
                "timestamp": self._time.parse(date),
            }
            lines = chunk[m.end() :].split("\n")
            cls = EVENT_CLASSES.get(num)
            if cls is None:
                return UnknownEvent(**common, event_number=num, lines=lines)
            return cls.from_body(common, lines)
        except EventLogError as e:
            raise EventLogError(e.message, self.file, line) from None
        except (ValueError, IndexError, KeyError, TypeError, AttributeError) as e:
            raise EventLogError(f"malformed event: {e}", self.file, line) from None

    def _salvage(self, chunk: str, line: int) -> Event | None:
        """After a torn write, a whole event may follow the fragment: find its header."""
        starts = [m.start() for m in _HEADER_ANYWHERE.finditer(chunk, 1)]
        for start in reversed(starts):
            try:
                return self.parse_event(chunk[start:], line + chunk.count("\n", 0, start))
            except EventLogError:
                continue
        return None

    def parse_complete(self, text: str, first_line: int = 1) -> Iterator[Event]:
        """Events from text that ends right after a ``...`` line (or is empty)."""
        if not text:
            return
        if "\r" in text:
            text = text.replace("\r\n", "\n")
        chunks = ("\n" + text).split(_SYNC)
        line = first_line
        last = len(chunks) - 1
        for i, chunk in enumerate(chunks):
            if i == 0:
                chunk = chunk[1:]
            if i == last:
                if chunk.strip():
                    raise EventLogError("event without its '...' terminator", self.file, line)
                return
            try:
                event = self.parse_event(chunk, line)
            except EventLogError as e:
                if self.strict:
                    raise
                log.warning("skipping bad event: %s", e)
                event = self._salvage(chunk, line)
            if event is not None:
                yield event
            line += chunk.count("\n") + 2


def complete_prefix(data: bytes) -> int:
    """Length of the part of ``data`` made of whole events (ending with a ``...`` line)."""
    end = 4 if data.startswith(b"...\n") else 5 if data.startswith(b"...\r\n") else 0
    idx = data.rfind(b"\n...\n")
    if idx >= 0:
        end = max(end, idx + 5)
    idx = data.rfind(b"\n...\r\n")
    if idx >= 0:
        end = max(end, idx + 6)
    return end


def _parser(kind: str, file: str | None, strict: bool) -> EventParser | AdEventParser:
    return EventParser(file=file, strict=strict) if kind == "text" else AdEventParser(kind, file=file, strict=strict)


def _prefix(data: bytes, kind: str) -> int:
    return complete_prefix(data) if kind == "text" else ad_complete_prefix(data, kind)


def parse_events(text: str, *, strict: bool = True) -> list[Event]:
    """Events of a complete log text (any form); a trailing partial event is ignored."""
    data = text.encode("utf-8", "surrogateescape")
    kind = detect_kind(data[:64]) or "text"
    end = _prefix(data, kind)
    return list(_parser(kind, None, strict).parse_complete(data[:end].decode("utf-8", "surrogateescape")))


def read_events(
    path: str | os.PathLike[str], *, strict: bool = True, block_size: int = 1 << 22
) -> Iterator[Event]:
    """All complete events of a log file, in order, reading it in blocks (memory stays bounded)."""
    parser: EventParser | AdEventParser | None = None
    kind = "text"
    line = 1
    pending = b""
    with open(path, "rb") as f:
        while block := f.read(block_size):
            pending += block
            if parser is None:
                kind = detect_kind(pending) or "text"
                parser = _parser(kind, os.fspath(path), strict)
            end = _prefix(pending, kind)
            if end:
                text = pending[:end].decode("utf-8", "surrogateescape")
                pending = pending[end:]
                yield from parser.parse_complete(text, line)
                line += text.count("\n")


class EventLogFollower:
    """Tails a growing log: each ``poll()`` returns the events completed since the last.

    ``offset`` is the byte position after the last returned event; save it and
    pass it back to resume in another process.  A file that shrank below the
    offset, or was replaced by another file, is read again from the start.
    Unlike ``read_events``, a follower is lenient by default: a damaged event
    is logged and skipped (a whole event written after a torn one is kept), so
    one bad write cannot stop a daemon that tails the log.
    """

    def __init__(self, path: str | os.PathLike[str], offset: int = 0, *, strict: bool = False) -> None:
        self.path = os.fspath(path)
        self.offset = offset
        self._line = 1 if offset == 0 else 0  # line numbers are only known from the start
        self._strict = strict
        self._parser: EventParser | AdEventParser | None = None
        self._kind = "text"
        self._ino: int | None = None

    def poll(self) -> list[Event]:
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return []
        with f:
            st = os.fstat(f.fileno())
            if (self._ino is not None and st.st_ino != self._ino) or st.st_size < self.offset:
                self.offset, self._line, self._parser = 0, 1, None
            self._ino = st.st_ino
            if st.st_size == self.offset:
                return []
            if self._parser is None:
                kind = detect_kind(f.read(64))
                if kind is None:
                    return []
                self._kind, self._parser = kind, _parser(kind, self.path, self._strict)
            f.seek(self.offset)
            data = f.read()
        end = _prefix(data, self._kind)
        if end == 0:
            return []
        text = data[:end].decode("utf-8", "surrogateescape")
        events = list(self._parser.parse_complete(text, max(self._line, 1)))
        self.offset += end
        if self._line:
            self._line += text.count("\n")
        return events

    def __iter__(self) -> Iterator[Event]:
        """The events available now (non-blocking), like ``JobEventLog.events(stop_after=0)``."""
        return iter(self.poll())
