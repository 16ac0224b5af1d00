"""Appending events to a user log so that concurrent writers never interleave.

Each event (or batch) becomes one ``os.write`` on a descriptor opened with
``O_APPEND``: on a local filesystem the kernel positions and writes it as one
unit, so two jobs or two processes logging to the same file produce whole
events in some order, never a mix.  (Over NFS, O_APPEND is not atomic; HTCondor
adds file locks there, roost does not yet.)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from roost.eventlog.adformats import JsonEventFormatter, XmlEventFormatter
from roost.eventlog.events import Event, event_number
from roost.eventlog.textformat import TimeFormatter


class EventFormatter:
    """Turns events into log text: header, body and the ``...`` line.

    ``utc=False`` writes local time without a zone, as HTCondor does by default
    (``EVENT_LOG_FORMAT_OPTIONS`` unset); ``utc=True`` appends ``Z``;
    ``iso=False`` gives the pre-8.8 ``MM/DD HH:MM:SS`` form.
    """

    __slots__ = ("_time",)

    def __init__(self, *, utc: bool = False, iso: bool = True, sub_second: bool = False) -> None:
        self._time = TimeFormatter(utc=utc, iso=iso, sub_second=sub_second)

    def format(self, event: Event) -> str:
        # %-formatting: measurably faster than an f-string with four format specs.
        return "%03d (%03d.%03d.%03d) %s %s...\n" % (  # noqa: UP031
            event_number(event),
            event.cluster,
            event.proc,
            event.subproc,
            self._time.format(event.timestamp),
            event.body(),
        )

    def format_many(self, events: Iterable[Event]) -> str:
        return "".join(self.format(e) for e in events)

    def alike(self, event: Event) -> tuple[str, str]:
        """The text of ``event`` around its job's ``cluster.proc``: what many jobs' same
        event (a bulk action's 009 at one time, for one reason) shares, so each costs a
        string join rather than a formatting (``head + "%03d.%03d" % job + tail``)."""
        return ("%03d (" % event_number(event),  # noqa: UP031
                ".%03d) %s %s...\n" % (event.subproc, self._time.format(event.timestamp), event.body()))  # noqa: UP031


_DEFAULT = EventFormatter()

#: anything with ``format(event)`` and ``format_many(events)``: text, XML or JSON
Formatter = EventFormatter | XmlEventFormatter | JsonEventFormatter


def parse_format_options(text: str | None, *, form: str | None = None) -> Formatter:
    """The formatter HTCondor's ``EVENT_LOG_FORMAT_OPTIONS`` (or
    ``DEFAULT_USERLOG_FORMAT_OPTIONS``) asks for: words ``XML``, ``JSON``, ``ISO_DATE``,
    ``UTC``, ``SUB_SECOND``, ``LEGACY``, each negated by a leading ``!``; separated by
    commas or spaces, case ignored.  ``form`` ("text", "xml", "json") overrides the form."""
    opts = {"iso": True, "utc": False, "sub_second": False, "xml": False, "json": False}
    for word in (text or "").replace(",", " ").split():
        bang = word.startswith("!")
        w = word.lstrip("!").upper()
        if w == "LEGACY":
            if bang:
                opts["iso"] = True
            else:
                opts.update(iso=False, utc=False, sub_second=False)
        elif w in ("XML", "JSON", "UTC", "SUB_SECOND", "ISO_DATE"):
            opts["iso" if w == "ISO_DATE" else w.lower()] = not bang
    if form is None:
        form = "json" if opts["json"] else "xml" if opts["xml"] else "text"
    if form == "json":
        return JsonEventFormatter(utc=opts["utc"])
    if form == "xml":
        return XmlEventFormatter(utc=opts["utc"])
    return EventFormatter(utc=opts["utc"], iso=opts["iso"], sub_second=opts["sub_second"])


def format_event(event: Event, *, utc: bool = False) -> str:
    """The full text of one event, as it appears in the log."""
    return (EventFormatter(utc=True) if utc else _DEFAULT).format(event)


class EventLogWriter:
    """Appends events to one log file; safe to share a file between processes.

    The descriptor stays open between writes (reopened after ``close()``);
    ``fsync=True`` makes each write durable before ``write`` returns;
    ``formatter`` picks the form (``parse_format_options``; text by default);
    ``flags`` are added to ``open``'s (``os.O_NOFOLLOW``: never through a symlink).
    """

    def __init__(
        self, path: str | os.PathLike[str], *, fsync: bool = False, utc: bool = False, mode: int = 0o644,
        formatter: Any = None, flags: int = 0,
    ) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._mode = mode
        self._formatter: Formatter = formatter if formatter is not None else EventFormatter(utc=utc)
        self._fd: int | None = None
        self._flags = flags

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | self._flags,
                               self._mode)
        return self._fd

    def fileno(self) -> int:
        """The open descriptor, opening (maybe creating) the file first if need be."""
        return self._open()

    def _append(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8", "surrogateescape"))

    def write_bytes(self, data: bytes) -> None:
        """Append events already formatted and encoded, as one write."""
        fd = self._open()
        written = os.write(fd, data)
        while written < len(data):
            # Only a full disk or a signal shortens a regular-file write; finish it.
            written += os.write(fd, data[written:])
        if self.fsync:
            os.fsync(fd)

    def write(self, event: Event) -> None:
        """Append one event as one write."""
        self._append(self._formatter.format(event))

    def write_many(self, events: Iterable[Event]) -> None:
        """Append several events as one write (they land together, in order)."""
        text = self._formatter.format_many(events)
        if text:
            self._append(text)

    def write_text(self, text: str) -> None:
        """Append events already formatted (``EventFormatter.format_many``) as one write."""
        if text:
            self._append(text)

    @property
    def closed(self) -> bool:
        """No descriptor is open (the next write opens, and maybe creates, the file)."""
        return self._fd is None

    def reopen_if_replaced(self) -> None:
        """Close the open descriptor if ``path`` no longer names its file (the user
        deleted, renamed or replaced the log), so the next write lands in the file the
        user will read rather than in an unlinked inode."""
        if self._fd is None:
            return
        try:
            st = os.stat(self.path)
        except OSError:
            self.close()
            return
        fst = os.fstat(self._fd)
        if (st.st_ino, st.st_dev) != (fst.st_ino, fst.st_dev):
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> EventLogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
