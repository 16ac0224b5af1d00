"""Small text pieces of HTCondor's user-log format: dates, rusage lines, resource tables.

Kept apart from the event classes because both the writer and the reader need
them, and because they hold the format's quirks (local time without a zone,
``%.0f`` byte counts, the column-aligned "Partitionable Resources" table).
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass
from datetime import datetime

from roost.eventlog.errors import EventLogError

# ---------------------------------------------------------------- dates


class TimeFormatter:
    """Formats event times as HTCondor does (ISO ``YYYY-MM-DD HH:MM:SS`` by default).

    HTCondor writes local time with no zone unless the UTC option is set, in
    which case a ``Z`` follows.  Formatting a struct_time per event is the
    writer's hottest step, so the text of the last whole second is cached.
    """

    __slots__ = ("utc", "iso", "sub_second", "_cache")

    def __init__(self, *, utc: bool = False, iso: bool = True, sub_second: bool = False) -> None:
        self.utc = utc
        self.iso = iso
        self.sub_second = sub_second
        self._cache: dict[int, str] = {}

    def format(self, timestamp: float) -> str:
        sec = timestamp if type(timestamp) is int else int(timestamp // 1)
        text = self._cache.get(sec)
        if text is None:
            tm = time.gmtime(sec) if self.utc else time.localtime(sec)
            if self.iso:
                text = (
                    f"{tm.tm_year:04d}-{tm.tm_mon:02d}-{tm.tm_mday:02d} "
                    f"{tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
                )
            else:
                text = f"{tm.tm_mon:02d}/{tm.tm_mday:02d} {tm.tm_hour:02d}:{tm.tm_min:02d}:{tm.tm_sec:02d}"
            if not self.sub_second and self.utc:
                text += "Z"
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[sec] = text
        if self.sub_second:
            text += f".{int(round((timestamp - sec) * 1e6)) // 1000:03d}"  # truncated ms, as HTCondor
            if self.utc:
                text += "Z"
        return text


_DATE_RE = re.compile(
    r"(?:(\d{4})-(\d\d)-(\d\d)|(\d\d)/(\d\d))[ T](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?"
)


class TimeParser:
    """Turns a header's date text back into a Unix timestamp.

    Accepts ISO dates (with optional fraction and ``Z``) and the legacy
    ``MM/DD HH:MM:SS`` form, which has no year: like HTCondor, it assumes the
    current year.  Results are cached per distinct text since a log holds many
    events per second.
    """

    __slots__ = ("_cache",)

    def __init__(self) -> None:
        self._cache: dict[str, float] = {}

    def parse(self, text: str) -> float:
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        m = _DATE_RE.fullmatch(text)
        if m is None:
            raise EventLogError(f"bad event date {text!r}")
        year, mon, day, lmon, lday, hh, mm, ss, frac, zone = m.groups()
        if year is None:
            year, mon, day = str(time.localtime().tm_year), lmon, lday
        fields = (int(year), int(mon), int(day), int(hh), int(mm), int(ss), 0, 0, -1)
        if zone == "Z":
            value = float(calendar.timegm(fields))
        elif zone:
            sign = -1 if zone[0] == "-" else 1
            z = zone[1:].replace(":", "")
            offset = sign * (int(z[:2]) * 3600 + int(z[2:]) * 60)
            value = float(calendar.timegm(fields) - offset)
        else:
            # Local time: in the repeated hour of a DST change take the first
            # occurrence, as htcondor2 does (a naive datetime's fold=0).
            value = datetime(*fields[:6]).timestamp()
        if frac:
            value += int(frac) / 10 ** len(frac)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[text] = value
        return value


# ---------------------------------------------------------------- rusage


@dataclass(frozen=True, slots=True)
class Usage:
    """CPU time as a user log records it: whole seconds of user and system time."""

    user: int = 0
    system: int = 0

    def __str__(self) -> str:
        key = (self.user, self.system)
        text = _USAGE_TEXT.get(key)
        if text is None:
            text = f"Usr {_dhms(self.user)}, Sys {_dhms(self.system)}"
            if len(_USAGE_TEXT) > 65536:
                _USAGE_TEXT.clear()
            _USAGE_TEXT[key] = text
        return text


# Most usages repeat (zeros above all), so their text is remembered.
_USAGE_TEXT: dict[tuple[int, int], str] = {}
_USAGE_PARSED: dict[str, Usage] = {}


def _dhms(secs: int) -> str:
    days, rest = divmod(int(secs), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{days} {hours:02d}:{minutes:02d}:{seconds:02d}"


_RUSAGE_RE = re.compile(r"\s*Usr (\d+) (\d+):(\d+):(\d+), Sys (\d+) (\d+):(\d+):(\d+)")


def parse_usage(text: str) -> Usage:
    """Parse a line starting with ``Usr d hh:mm:ss, Sys d hh:mm:ss`` (the label after it is ignored)."""
    usage = _USAGE_PARSED.get(text)
    if usage is not None:
        return usage
    m = _RUSAGE_RE.match(text)
    if m is None:
        raise EventLogError(f"bad usage line {text!r}")
    g = [int(x) for x in m.groups()]
    user = g[0] * 86400 + g[1] * 3600 + g[2] * 60 + g[3]
    system = g[4] * 86400 + g[5] * 3600 + g[6] * 60 + g[7]
    usage = Usage(user, system)
    if len(_USAGE_PARSED) > 65536:
        _USAGE_PARSED.clear()
    _USAGE_PARSED[text] = usage
    return usage


# ---------------------------------------------------------------- values


def format_bytes(value: float) -> str:
    """``%.0f`` as C prints it: round half to even, like Python's format."""
    return f"{value:.0f}"


def parse_number(text: str) -> int | float | str:
    """A table cell or attribute value as the Python value htcondor2 would give for a literal."""
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def one_line(text: str) -> str:
    """HTCondor folds newlines in reasons to ``|`` and drops carriage returns to spaces."""
    if "\n" in text or "\r" in text:
        return text.replace("\n", "|").replace("\r", " ")
    return text


# ---------------------------------------------------------------- resource table

Cell = int | float | str | None

_LABEL_SUFFIX = {
    "Memory": " (MB)",
    "Disk": " (KB)",
    "Gpus": " (Average)",
    "GpusMemory": " (MB)",
    "TimeExecute": " (s)",
    "TimeSlotBusy": " (s)",
}


@dataclass(frozen=True, slots=True)
class Resource:
    """One row of the "Partitionable Resources" table of terminated/evicted events."""

    name: str
    usage: Cell = None
    request: Cell = None
    allocated: Cell = None
    assigned: Cell = None

    def attrs(self) -> dict[str, Cell]:
        """The attributes HTCondor's reader puts in the event ad for this row.

        Cells hold expression text or numbers; a quoted string cell becomes
        the Python string, as htcondor2 shows it.
        """
        out: dict[str, Cell] = {}
        for key, value in (
            (self.name + "Usage", self.usage),
            ("Request" + self.name, self.request),
            (self.name, self.allocated),
            ("Assigned" + self.name, self.assigned),
        ):
            if value is not None:
                out[key] = _literal(value)
        return out


def _literal(value: Cell) -> Cell:
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def _cell(value: Cell) -> tuple[str, bool]:
    if value is None:
        return "", False
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, float):
        if value != int(value):
            return f"{value:.2f}", True
        return str(int(value)), False
    return str(value), False


def format_resources(rows: tuple[Resource, ...]) -> str:
    """The column-aligned table HTCondor prints; widths and padding follow its rules."""
    if not rows:
        return ""
    cells = []
    frac = [False, False, False, False]
    for r in sorted(rows, key=lambda r: r.name.lower()):
        row = []
        for i, v in enumerate((r.usage, r.request, r.allocated, r.assigned)):
            text, f = _cell(v)
            frac[i] |= f
            row.append(text)
        cells.append((r.name, row))
    w_res, widths = 12, [8, 8, 0, 0]
    for name, row in cells:
        for i in range(4):
            if frac[i] and row[i].isdigit():
                row[i] += "   "
            widths[i] = max(widths[i], len(row[i]))
        w_res = max(w_res, len(name))
    wu, wq, wa = widths[0], widths[1], max(widths[2], 9)
    parts = [
        f"\tPartitionable Resources : {'Usage':>{wu}} {'Request':>{wq}} "
        f"{'Allocated' if widths[2] else '':>{wa}} {'Assigned' if widths[3] else ''}\n"
    ]
    for name, row in cells:
        label = name + _LABEL_SUFFIX.get(name, "")
        parts.append(
            f"\t   {label:<{w_res + 8}} : {row[0]:>{wu}} {row[1]:>{wq}} {row[2]:>{wa}} {row[3]}\n"
        )
    return "".join(parts)


class ResourceTableParser:
    """Reads table rows using the column edges found in the table's header line.

    Cells are right-aligned under their heading, so the heading's right edge is
    the cell's right edge; an empty cell stays ``None``.
    """

    def __init__(self, header: str) -> None:
        colon = header.find(":")
        table = header[colon + 1 :]
        i = _skip_word(table, 0)  # "Usage"
        self.use_end = i + 1
        i = _skip_word(table, i)  # "Request"
        self.req_end = i + 1
        self.alloc_end = -1
        self.assigned_start = -1
        a = table.find("Allocated", i)
        if a >= 0:
            self.alloc_end = a + 9
            b = table.find("Assigned", a)
            if b >= 0:
                self.assigned_start = b

    def parse(self, line: str) -> Resource | None:
        stripped = line.lstrip(" \t")
        end = 0
        while end < len(stripped) and stripped[end] not in " :":
            end += 1
        name = stripped[:end]
        colon = stripped.find(":", end)
        if not name or colon < 0:
            return None
        table = stripped[colon + 1 :]
        usage = _opt(table[: self.use_end])
        request = _opt(table[self.use_end : self.req_end])
        allocated = assigned = None
        if self.alloc_end > 0:
            allocated = _opt(table[self.req_end : self.alloc_end])
        if self.assigned_start > 0:
            assigned = _opt(table[self.assigned_start :])
        return Resource(name, usage, request, allocated, assigned)


def _skip_word(text: str, i: int) -> int:
    while i < len(text) and text[i] == " ":
        i += 1
    while i < len(text) and text[i] != " ":
        i += 1
    return i


def _opt(text: str) -> Cell:
    t = text.strip()
    return parse_number(t) if t else None
