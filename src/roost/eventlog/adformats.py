"""The ClassAd forms of the event log: XML (``log_xml = true``) and JSON.

HTCondor writes an event in these forms as the ClassAd its reader exposes
(``MyType``, ``EventTypeNumber``, ``EventTime``, ``Cluster`` ... the names
``Event.attrs()`` gives), unparsed by its XML unparser with indentation (one
``<c>`` element per event, closed by ``</c>`` at column 0, no ``...`` line) or
by its JSON unparser (one object per event, closed by ``}`` at column 0).

Reading gives ``ClassAdEvent``: the event's number, job id and time, and the
ad as a mapping, which is what ``htcondor2.JobEvent`` offers too.  Typed
fields (``return_value`` ...) exist only for events read from the text form.
"""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from roost.classad.jsonform import escape_string, format_real
from roost.eventlog.errors import EventLogError
from roost.eventlog.events import Attrs, Event, EventType
from roost.eventlog.textformat import TimeParser

# ---------------------------------------------------------------- writing

_XML_ESC = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_CLASSAD_ESC = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                "\v": "\\v", "\\": "\\\\"}


def _classad_string(text: str) -> str:
    """A string's body as HTCondor's unparser writes it (C escapes, octal for the rest)."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    out = []
    for c in text:
        esc = _CLASSAD_ESC.get(c)
        if esc is not None:
            out.append(esc)
        elif c.isascii() and c.isprintable():
            out.append(c)
        else:
            out.extend(f"\\{b:03o}" for b in c.encode("utf-8", "surrogateescape"))
    return "".join(out)


def _xml_value(value: Any, indent: int, out: list[str]) -> None:
    t = type(value)
    if t is bool:
        out.append('<b v="t"/>' if value else '<b v="f"/>')
    elif t is int:
        out.append(f"<i>{value}</i>")
    elif t is float:
        out.append("<r>" + ("0.0" if value == 0.0 else f"{value:1.15E}") + "</r>")
    elif t is str:
        out.append("<s>" + _classad_string(value).translate(_XML_ESC) + "</s>")
    elif isinstance(value, dict):
        _xml_ad(value, indent, out)
    elif isinstance(value, list | tuple):
        out.append("<l>")
        for v in value:
            _xml_value(v, indent, out)
        out.append("</l>")
    elif value is None:
        out.append("<u/>")
    else:
        _xml_value(str(value), indent, out)


def _xml_ad(attrs: Attrs, indent: int, out: list[str]) -> None:
    out.append("<c>\n")
    pad = " " * (indent + 4)
    for name, value in attrs.items():
        out.append(f'{pad}<a n="{_classad_string(name).translate(_XML_ESC)}">')
        _xml_value(value, indent + 4, out)
        out.append("</a>\n")
    out.append(" " * indent + "</c>")


def _json_value(value: Any, level: int) -> str:
    t = type(value)
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if t is float:
        text = format_real(value)
        return text if text is not None else '"\\/Expr(real(\\"NaN\\"))\\/"'
    if t is str:
        if value.isprintable() and '"' not in value and "\\" not in value:
            return '"' + value + '"'  # nothing to escape (the common case, and 4x faster)
        return '"' + escape_string(value) + '"'
    if isinstance(value, dict):
        return _json_ad(value, level)
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        pad = "\n" + " " * (level + 2)
        return "[" + ",".join(pad + _json_value(v, level + 2) for v in value) + "\n" + " " * level + "]"
    if value is None:
        return "null"
    return _json_value(str(value), level)


def _json_ad(attrs: Attrs, level: int) -> str:
    pad = "\n" + " " * (level + 2)
    body = ",".join(f'{pad}"{k}": {_json_value(v, level + 2)}' if k.isidentifier()
                    else f'{pad}"{escape_string(k)}": {_json_value(v, level + 2)}' for k, v in attrs.items())
    return "{" + body + "\n" + " " * level + "}"


def event_ad(event: Event, *, utc: bool = False) -> Attrs:
    """The event's ClassAd (name -> Python value), as HTCondor's ``toClassAd`` builds it."""
    ad = event.attrs()
    if utc:
        ad["EventTime"] = _iso_utc(event.timestamp)
    return ad


def _iso_utc(ts: float) -> str:
    tm = time.gmtime(int(ts // 1))
    return time.strftime("%Y-%m-%dT%H:%M:%S", tm) + "Z"


class XmlEventFormatter:
    """Events as HTCondor's XML user log holds them (``log_xml = true``)."""

    __slots__ = ("utc",)
    suffix: ClassVar[str] = "xml"

    def __init__(self, *, utc: bool = False) -> None:
        self.utc = utc

    def format(self, event: Event) -> str:
        out: list[str] = []
        _xml_ad(event_ad(event, utc=self.utc), 0, out)
        out.append("\n")
        return "".join(out)

    def format_many(self, events: Any) -> str:
        return "".join(self.format(e) for e in events)


class JsonEventFormatter:
    """Events as HTCondor's JSON event log holds them (``EVENT_LOG_FORMAT_OPTIONS = JSON``)."""

    __slots__ = ("utc",)
    suffix: ClassVar[str] = "json"

    def __init__(self, *, utc: bool = False) -> None:
        self.utc = utc

    def format(self, event: Event) -> str:
        return _json_ad(event_ad(event, utc=self.utc), 0) + "\n"

    def format_many(self, events: Any) -> str:
        return "".join(self.format(e) for e in events)


# ---------------------------------------------------------------- reading


@dataclass(eq=True, repr=True)
class ClassAdEvent(Event):
    """An event read from an XML or JSON log: its number and its ad (the mapping view)."""

    my_type: ClassVar[str] = "ClassAdEvent"

    event_number: int = -1
    ad: dict[str, Any] = field(default_factory=dict)

    @property  # type: ignore[override]
    def _number(self) -> int:
        return self.event_number

    @property  # type: ignore[override]
    def type(self) -> EventType | int:
        try:
            return EventType(self.event_number)
        except ValueError:
            return self.event_number

    def body(self) -> str:
        raise EventLogError("a ClassAd-form event has no text body; format it as XML or JSON")

    def attrs(self) -> Attrs:
        return dict(self.ad)


_XML_UNESC = re.compile(r"\\([abfnrtv\\'\"]|[0-7]{1,3})")
_UNESC = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    raw = bytearray()
    pos = 0
    for m in _XML_UNESC.finditer(text):
        raw += text[pos : m.start()].encode("utf-8", "surrogateescape")
        g = m.group(1)
        if g[0] in "01234567":
            raw.append(int(g, 8) & 0xFF)
        else:
            raw += _UNESC.get(g, g).encode()
        pos = m.end()
    raw += text[pos:].encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "surrogateescape")


def _xml_to_value(el: ET.Element) -> Any:
    tag, text = el.tag, el.text or ""
    if tag == "s":
        return _unescape(text)
    if tag == "i":
        return int(text)
    if tag == "r":
        return float(text)
    if tag == "b":
        return el.get("v") == "t"
    if tag == "c":
        return _xml_to_ad(el)
    if tag == "l":
        return [_xml_to_value(c) for c in el]
    if tag == "u":
        return None
    return text  # <e/>, <e>expr</e>, <at>, <rt>: kept as their text


def _xml_to_ad(el: ET.Element) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in el:
        if a.tag == "a" and len(a):
            out[a.get("n", "")] = _xml_to_value(a[0])
    return out


def _json_expr(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _json_expr(v) for k, v in value.items()}
    if isinstance(value, str) and value.startswith("/Expr(") and value.endswith(")/"):
        return value[6:-2]
    return value


_TIMES = TimeParser()


def ad_event(ad: dict[str, Any]) -> ClassAdEvent:
    """The event an ad read from a log describes (EventTypeNumber, Cluster, Proc, EventTime)."""
    num = ad.get("EventTypeNumber")
    if type(num) is not int:
        raise EventLogError("event ad without an integer EventTypeNumber")
    when = ad.get("EventTime")
    ts = _TIMES.parse(when) if isinstance(when, str) and when else 0.0
    cluster, proc, sub = ad.get("Cluster", -1), ad.get("Proc", -1), ad.get("Subproc", -1)
    return ClassAdEvent(
        cluster if type(cluster) is int else -1,
        proc if type(proc) is int else -1,
        ts,
        sub if type(sub) is int else -1,
        event_number=num,
        ad=ad,
    )


class AdEventParser:
    """Parses complete XML or JSON event texts (the ``EventParser`` interface)."""

    __slots__ = ("kind", "file", "strict")

    def __init__(self, kind: str, *, file: str | None = None, strict: bool = True) -> None:
        self.kind = kind
        self.file = file
        self.strict = strict

    def _chunks(self, text: str) -> Iterator[tuple[str, int]]:
        end = "\n</c>\n" if self.kind == "xml" else "\n}\n"
        line, pos = 1, 0
        while True:
            idx = text.find(end, pos)
            if idx < 0:
                return
            chunk = text[pos : idx + len(end)]
            yield chunk, line
            line += chunk.count("\n")
            pos = idx + len(end)

    def parse_event(self, chunk: str, line: int = 1) -> Event:
        try:
            if self.kind == "xml":
                start = chunk.find("<c>")
                if start < 0:
                    raise EventLogError("no <c> element in XML event")
                ad = _xml_to_ad(ET.fromstring(chunk[start:]))
            else:
                obj = json.loads(chunk)
                if not isinstance(obj, dict):
                    raise EventLogError("a JSON event must be an object")
                ad = _json_expr(obj)
            return ad_event(ad)
        except EventLogError as e:
            raise EventLogError(e.message, self.file, line) from None
        except (ValueError, ET.ParseError) as e:
            raise EventLogError(f"malformed {self.kind.upper()} event: {e}", self.file, line) from None

    def parse_complete(self, text: str, first_line: int = 1) -> Iterator[Event]:
        for chunk, line in self._chunks(text):
            try:
                yield self.parse_event(chunk, first_line + line - 1)
            except EventLogError:
                if self.strict:
                    raise


def ad_complete_prefix(data: bytes, kind: str) -> int:
    """Length of the part of ``data`` made of whole XML or JSON events."""
    end = b"\n</c>\n" if kind == "xml" else b"\n}\n"
    idx = data.rfind(end)
    return idx + len(end) if idx >= 0 else 0


def detect_kind(head: bytes) -> str | None:
    """``"xml"``, ``"json"`` or ``"text"`` from a log's first bytes; None while it is empty."""
    s = head.lstrip()
    if not s:
        return None
    if s[:1] == b"<":
        return "xml"
    if s[:1] == b"{":
        return "json"
    return "text"
