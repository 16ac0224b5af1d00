"""The JSON form of ClassAds, as ``condor_q -json`` and classad2's ``printJson()`` write it.

Literals become JSON scalars, lists arrays, nested ads objects; ``undefined``
is ``null``; every other expression (``error``, absolute times, NaN and
infinities included) is the string ``"\\/Expr(<expression>)\\/"``. Relative
times print as their seconds, a real, so they come back as reals: HTCondor
loses that distinction too. Reals print as HTCondor's ``%.16G`` except where
16 digits would not read back as the same float: there 17 are printed, so a
JSON round trip is exact (HTCondor loses the last bit). Attributes print in
the ad's own order.

The one codec of ads on the wire too: the same form as decoded JSON objects
(:func:`ad_to_obj`, what a frame of roost's protocol carries) is written here,
next to the text, so that the two cannot drift apart.

Reading it back is :mod:`roost.classad.jsonparse`: reading builds ClassAds, and
ClassAd's ``printJson()`` writes through this module, so the two halves sit on
either side of :mod:`roost.classad.classad`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from roost.classad.ast import AdExpr, ListExpr, Literal, Node
from roost.classad.convert import ad_pairs, time_literal
from roost.classad.unparse import format_real_old, unparse
from roost.classad.values import AbsTime, RelTime, RelTimeLiteral, Value

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def escape_string(text: str) -> str:
    """Escape as HTCondor's JSON writer does: short escapes, ``\\u00XX`` for other
    controls, everything else (``/``, DEL, non-ASCII) written as is."""
    out = []
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif "\x00" < ch < " ":
            out.append(f"\\u00{ord(ch):02X}")
        else:
            out.append(ch)
    return "".join(out)


def format_real(x: float) -> str | None:
    """A finite real as HTCondor's JSON writer prints it (``%.16G``, ``.0`` added when
    it would look like an integer); None for NaN and infinities.

    Deviation: where 16 digits would not read back as the same float, 17 are
    printed, so that JSON round trips are exact (HTCondor drops the last bit).
    """
    if math.isnan(x) or math.isinf(x):
        return None
    text = format_real_old(x)
    if float(text) != x:
        text = f"{x:.17G}"
        if not any(c in text for c in ".E"):
            text += ".0"
    return text


def _quote_expr(text: str) -> str:
    return '"\\/Expr(' + escape_string(text) + ')\\/"'


def _nonfinite(x: float) -> str:
    """The expression JSON has for a real it cannot write: NaN and the infinities."""
    if math.isnan(x):
        return 'real("NaN")'
    return 'real("INF")' if x > 0 else 'real("-INF")'


def value_to_json(value: Any) -> str:
    """The JSON text of a literal value."""
    t = type(value)
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if t is str:
        return '"' + escape_string(value) + '"'
    if t is float:
        text = format_real(value)
        return text if text is not None else _quote_expr(_nonfinite(value))
    if value is Value.Undefined:
        return "null"
    if value is Value.Error:
        return _quote_expr("error")
    if t is RelTime or t is RelTimeLiteral:
        return value_to_json(float(value.secs))
    if t is AbsTime:
        return _quote_expr(unparse(Literal(value)))
    raise TypeError(f"not a ClassAd literal value: {value!r}")


class _Writer:
    def __init__(self, oneline: bool) -> None:
        self.oneline = oneline
        self.level = 0
        self.out: list[str] = []

    def node(self, node: Node) -> None:
        t = type(node)
        if t is Literal:
            self.out.append(value_to_json(node.value))
        elif t is ListExpr:
            self.items(node.items)
        elif t is AdExpr:
            self.attrs(node.attrs)
        else:
            time = time_literal(node)
            if time is not None:
                self.out.append(value_to_json(time))
            else:
                self.out.append(_quote_expr(unparse(node)))

    def _open(self, first: bool) -> None:
        if not first:
            self.out.append(",")
        if not self.oneline:
            self.out.append("\n" + " " * self.level)

    def _close(self, bracket: str) -> None:
        self.level -= 2
        if self.oneline:
            self.out.append(bracket)
        else:
            self.out.append("\n" + " " * self.level + bracket)

    def items(self, items: Iterable[Node]) -> None:
        self.out.append("[")
        self.level += 2
        for i, item in enumerate(items):
            self._open(i == 0)
            self.node(item)
        self._close("]")

    def attrs(self, attrs: Iterable[tuple[str, Node]]) -> None:
        self.out.append("{")
        self.level += 2
        for i, (name, expr) in enumerate(attrs):
            self._open(i == 0)
            self.out.append('"' + escape_string(name) + '": ')
            self.node(expr)
        self._close("}")


def node_to_json(node: Node, indent: bool = True) -> str:
    """The JSON text of one expression (a nested ad or list prints as an object or array)."""
    w = _Writer(oneline=not indent)
    w.node(node)
    return "".join(w.out)


def ad_to_json(ad: Any, indent: bool = True) -> str:
    """One ad as classad2's ``printJson()`` prints it (no trailing newline).

    ``indent=False`` gives HTCondor's one-line form, as in ``-jsonl`` output.
    """
    w = _Writer(oneline=not indent)
    w.attrs(ad_pairs(ad))
    return "".join(w.out)


def ads_to_json(ads: Iterable[Any]) -> str:
    """Several ads as ``condor_q -json`` prints them: a JSON array, one ad per element.

    Like condor_q, no ads at all prints nothing.
    """
    parts = [ad_to_json(ad) for ad in ads]
    if not parts:
        return ""
    return "[\n" + "\n,\n".join(parts) + "\n]\n"


def ads_to_jsonl(ads: Iterable[Any]) -> str:
    """Several ads one per line (``-jsonl``)."""
    return "".join(ad_to_json(ad, indent=False) + "\n" for ad in ads)


# ---------------------------------------------------------------------------
# The same form as decoded JSON objects: what travels in a frame of the wire
# protocol (roost.net.frames encodes the frame once, so no JSON text in between).
# An expression is the string ``"/Expr(<text>)/"``, which is what HTCondor's
# ``"\\/Expr(...)\\/"`` decodes to; roost.classad.jsonparse reads both forms.


def _obj_expr(text: str) -> str:
    return "/Expr(" + text + ")/"


def value_to_obj(value: Any) -> Any:
    """A literal value as a JSON-ready Python value."""
    t = type(value)
    if t is int or t is str or t is bool:
        return value
    if t is float:
        return value if math.isfinite(value) else _obj_expr(_nonfinite(value))
    if value is Value.Undefined:
        return None
    if value is Value.Error:
        return _obj_expr("error")
    if t is RelTime or t is RelTimeLiteral:
        return float(value.secs)
    if t is AbsTime:
        return _obj_expr(unparse(Literal(value)))
    raise TypeError(f"not a ClassAd literal value: {value!r}")


def node_to_obj(node: Node) -> Any:
    """One expression as a JSON-ready value: lists and nested ads nest."""
    t = type(node)
    if t is Literal:
        return value_to_obj(node.value)  # type: ignore[attr-defined]
    if t is ListExpr:
        return [node_to_obj(item) for item in node.items]  # type: ignore[attr-defined]
    if t is AdExpr:
        return {name: node_to_obj(expr) for name, expr in node.attrs}  # type: ignore[attr-defined]
    time = time_literal(node)
    if time is not None:
        return value_to_obj(time)
    return _obj_expr(unparse(node))


def ad_to_obj(ad: Any) -> dict[str, Any]:
    """A ClassAd as a JSON-ready dict, attributes in the ad's own order."""
    out: dict[str, Any] = {}
    for name, node in ad_pairs(ad):
        if type(node) is Literal:
            v = node.value  # type: ignore[attr-defined]
            tv = type(v)
            out[name] = v if (tv is int or tv is str or tv is bool) else value_to_obj(v)
        else:
            out[name] = node_to_obj(node)
    return out
