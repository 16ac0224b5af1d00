"""Reading the JSON form of ClassAds (``condor_q -json``, classad2's ``printJson()``);
:mod:`roost.classad.jsonform` writes it.

Reading is the reverse of writing. A string is an expression only when written with the
escaped slashes, ``"\\/Expr(...)\\/"``; ``"/Expr(a)/"`` is an ordinary string,
as in HTCondor. Deviations from HTCondor's reader, all where it misbehaves:
``\\uXXXX`` escapes (surrogate pairs included) decode to the right characters,
an integer too wide for 64 bits reads as a real (HTCondor makes it 0), a
top-level JSON array of ads is accepted, and an empty object is an empty ad.
Like HTCondor, ``true``/``false``/``null`` may be in any case and an object
may end with a comma; its other lexer quirks (comments, ``.5``, ``"a" "b"``)
are not JSON and are refused.

Apart from the writer because it builds ClassAds: it sits above
:mod:`roost.classad.classad`, whose ``printJson()`` uses the writer below it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from roost.classad.ast import AdExpr, ListExpr, Literal, Node
from roost.classad.classad import ClassAd, to_node
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import parse_expr
from roost.classad.values import INT64_MAX, INT64_MIN, Value


class _Reader:
    """A JSON reader that keeps what HTCondor needs and ``json`` hides: whether a
    string was written with ``\\/`` escapes, integer vs real, and key order."""

    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.pos = 0
        self.file = file

    def error(self, message: str, pos: int | None = None) -> ClassAdSyntaxError:
        p = self.pos if pos is None else pos
        line = self.text.count("\n", 0, p) + 1
        column = p - (self.text.rfind("\n", 0, p) + 1) + 1
        return ClassAdSyntaxError(message, text=self.text, line=line, column=column, file=self.file)

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at_end(self) -> bool:
        self.skip_ws()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        text = self.text
        p = self.pos = _WS.match(text, self.pos).end()  # type: ignore[union-attr]
        return text[p] if p < len(text) else ""

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            found = repr(self.text[self.pos]) if self.pos < len(self.text) else "end of input"
            raise self.error(f"expected '{ch}' in JSON, found {found}")
        self.pos += 1

    def value(self) -> Node:
        ch = self.peek()
        if ch == "{":
            return AdExpr(tuple(self.object()))
        if ch == "[":
            return ListExpr(tuple(self.array()))
        if ch == '"':
            return self.string_value()
        if ch == "-" or ch.isdigit():
            return self.number()
        m = _SCALAR.match(self.text, self.pos)
        if m is not None and m.group(5) is not None:
            return self.scalar(m)
        raise self.error("expected a JSON value" if ch else "unexpected end of JSON input")

    def object(self) -> list[tuple[str, Node]]:
        self.expect("{")
        attrs: dict[str, tuple[str, Node]] = {}
        text = self.text
        while True:
            # Fast path: an escape-free "name": and a plain scalar value.
            m = _KEY.match(text, self.pos)
            if m is not None and m.group(1):
                name = m.group(1)
                vm = _SCALAR.match(text, m.end())
                if vm is not None:
                    node = self.scalar(vm)
                else:
                    self.pos = m.end()
                    node = self.value()
            else:
                if self.peek() == "}" and not attrs:
                    break
                start = self.pos
                if self.peek() != '"':
                    raise self.error("expected a quoted attribute name")
                name, _ = self.string()
                if not name:
                    raise self.error("empty attribute name", start)
                self.expect(":")
                node = self.value()
            key = name.lower()
            # A repeated name (in any case) keeps its first spelling and last value.
            attrs[key] = (attrs[key][0] if key in attrs else name, node)
            c = self.peek()
            if c == "}":
                break
            self.expect(",")
            if self.peek() == "}":  # HTCondor accepts a trailing comma in objects
                break
        self.pos += 1
        return list(attrs.values())

    def scalar(self, m: re.Match[str]) -> Node:
        """The value matched by :data:`_SCALAR` (a plain string, number or word)."""
        self.pos = m.end()
        plain, number, word = m.group(1, 2, 5)
        if plain is not None:  # escape-free, so never an expression
            return Literal(plain)
        if number is not None:
            if m.group(3) is None and m.group(4) is None:
                value = int(number)
                if INT64_MIN <= value <= INT64_MAX:
                    return Literal(value)
            return Literal(float(number))
        return _WORDS[word.lower()]

    def array(self) -> list[Node]:
        self.expect("[")
        items: list[Node] = []
        while self.peek() != "]":
            if items:
                self.expect(",")
            items.append(self.value())
        self.pos += 1
        return items

    def string(self) -> tuple[str, str]:
        """(decoded, raw) text of the string at pos."""
        start = self.pos
        m = _PLAIN_STRING.match(self.text, start)
        if m is not None:  # the common case: no escapes at all
            self.pos = m.end()
            raw = m.group(1)
            return raw, raw
        m = _STRING.match(self.text, start)
        if m is None:
            end = self.text.find("\n", start)
            if end >= 0 and '"' not in self.text[start + 1 : end]:
                raise self.error("newline inside a JSON string", end)
            raise self.error("unterminated string", start)
        self.pos = m.end()
        try:
            return json.loads(m.group(), strict=False), m.group(1)
        except ValueError as e:
            raise self.error(f"bad string escape ({e.msg})", start) from None

    def string_value(self) -> Node:
        start = self.pos
        value, raw = self.string()
        if (
            len(raw) >= 4
            and raw.startswith("\\/")
            and raw.endswith("\\/")
            and value[:6].lower() == "/expr("
            and value.endswith(")/")
        ):
            return self.expression(value[6:-2], start)
        return Literal(value)

    def expression(self, source: str, start: int) -> Node:
        try:
            return parse_expr(source)
        except ClassAdSyntaxError as e:
            raise self.error(f"bad expression in \\/Expr()\\/ string: {e.message}", start) from None

    def number(self) -> Node:
        start = self.pos
        m = _NUMBER.match(self.text, start)
        if m is None or (self.text[m.end() : m.end() + 1].isalnum()):
            raise self.error("bad JSON number", start)
        self.pos = m.end()
        token = m.group()
        if m.group(1) is None and m.group(2) is None:
            value = int(token)
            if INT64_MIN <= value <= INT64_MAX:
                return Literal(value)
        return Literal(float(token))


_WS = re.compile(r"[ \t\r\n]*")
_PLAIN_STRING = re.compile(r'"([^"\\\n]*)"')
_STRING = re.compile(r'"((?:[^"\\\n]|\\[^\n])*)"')
_KEY = re.compile(r'[ \t\r\n]*"([^"\\\n]*)"[ \t\r\n]*:[ \t\r\n]*')
# A value that needs no further work; a number must not run on into more digits or letters.
_SCALAR = re.compile(
    r'(?:"([^"\\\n]*)"|(-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)(?![0-9A-Za-z.])|(null|true|false)\b)',
    re.IGNORECASE,  # as HTCondor's reader, which lexes JSON with its ClassAd lexer
)
_WORDS = {"null": Literal(Value.Undefined), "true": Literal(True), "false": Literal(False)}
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


def _new_ad(attrs: list[tuple[str, Node]]) -> Any:
    return ClassAd(AdExpr(tuple(attrs)))


def _object_from_python(obj: Any) -> Node:
    """A decoded JSON value (from ``json.load``) as an expression.

    The ``\\/`` escapes are gone once decoded, so here any string of the form
    ``/Expr(...)/`` is taken as an expression.
    """
    if isinstance(obj, str) and obj[:6].lower() == "/expr(" and obj.endswith(")/"):
        return parse_expr(obj[6:-2])
    if obj is None:
        return Literal(Value.Undefined)
    if isinstance(obj, dict):
        return AdExpr(tuple((str(k), _object_from_python(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return ListExpr(tuple(_object_from_python(v) for v in obj))
    return to_node(obj)


def json_to_ad(source: Any, file: str | None = None) -> Any:
    """One ad from JSON text (a single object) or from an already decoded dict."""
    if not isinstance(source, str):
        if not isinstance(source, dict):
            raise TypeError(f"json_to_ad wants JSON text or a dict, not {type(source).__name__}")
        return _new_ad(list(_object_from_python(source).attrs))
    r = _Reader(source, file)
    if r.peek() != "{":
        raise r.error("a JSON ClassAd must be an object ('{')")
    attrs = r.object()
    if not r.at_end():
        raise r.error("unexpected text after the JSON ad")
    return _new_ad(attrs)


def iter_json_ads(text: str, file: str | None = None) -> Iterable[tuple[Any, int]]:
    """Ads from JSON text with the offset just past each: a JSON array of objects
    (``condor_q -json``) or objects one after another (``-jsonl``)."""
    r = _Reader(text, file)
    if r.peek() == "[":
        r.pos += 1
        first = True
        while r.peek() != "]":
            if not first:
                r.expect(",")
            first = False
            if r.peek() != "{":
                raise r.error("expected a JSON object ('{') for each ad")
            yield _new_ad(r.object()), r.pos
        r.pos += 1
        if not r.at_end():
            raise r.error("unexpected text after the JSON array of ads")
        return
    while not r.at_end():
        if r.peek() != "{":
            raise r.error("expected a JSON object ('{') for each ad")
        yield _new_ad(r.object()), r.pos


def json_to_ads(text: str, file: str | None = None) -> list[Any]:
    """All ads in JSON text: an array of objects or concatenated objects."""
    return [ad for ad, _ in iter_json_ads(text, file)]
