"""ClassAds on the wire: the ``condor_q -json`` form as decoded JSON objects.

``ad_to_obj`` builds the dict directly from the ad's expression trees (no
JSON text in between, so a frame is encoded once). Literals become JSON
values, ``undefined`` is null, lists and nested ads nest, every other
expression is the string ``"/Expr(<text>)/"`` — what the ``"\\/Expr(...)\\/"``
of HTCondor's JSON decodes to. ``obj_to_ad`` is the reverse
(``roost.classad.jsonform.json_to_ad`` on a decoded dict).

As in HTCondor's JSON form, a string value that itself reads
``/Expr(...)/`` comes back as that expression.
"""

from __future__ import annotations

import math
from typing import Any

from roost.classad import ClassAd, ClassAdSyntaxError
from roost.classad.ast import AdExpr, ListExpr, Literal, Node
from roost.classad.convert import ad_pairs, time_literal
from roost.classad.jsonform import json_to_ad
from roost.classad.unparse import unparse
from roost.classad.values import AbsTime, RelTime, Value
from roost.net.errors import RequestError


def _expr(text: str) -> str:
    return "/Expr(" + text + ")/"


def _value(v: Any) -> Any:
    t = type(v)
    if t is int or t is str or t is bool:
        return v
    if t is float:
        if math.isnan(v):
            return _expr('real("NaN")')
        if math.isinf(v):
            return _expr('real("INF")' if v > 0 else 'real("-INF")')
        return v
    if v is Value.Undefined:
        return None
    if v is Value.Error:
        return _expr("error")
    if t is RelTime:
        return float(v.secs)
    if t is AbsTime:
        return _expr(unparse(Literal(v)))
    raise TypeError(f"not a ClassAd literal value: {v!r}")


def node_to_obj(node: Node) -> Any:
    """One expression as a JSON-ready value."""
    t = type(node)
    if t is Literal:
        return _value(node.value)  # type: ignore[attr-defined]
    if t is ListExpr:
        return [node_to_obj(item) for item in node.items]  # type: ignore[attr-defined]
    if t is AdExpr:
        return {name: node_to_obj(expr) for name, expr in node.attrs}  # type: ignore[attr-defined]
    time = time_literal(node)
    if time is not None:
        return _value(time)
    return _expr(unparse(node))


def ad_to_obj(ad: ClassAd) -> dict[str, Any]:
    """A ClassAd as a JSON-ready dict, attributes in the ad's own order."""
    out: dict[str, Any] = {}
    for name, node in ad_pairs(ad):
        t = type(node)
        if t is Literal:
            v = node.value  # type: ignore[attr-defined]
            tv = type(v)
            out[name] = v if (tv is int or tv is str or tv is bool) else _value(v)
        else:
            out[name] = node_to_obj(node)
    return out


def obj_to_ad(obj: dict[str, Any]) -> ClassAd:
    """A ClassAd from a decoded JSON object; RequestError(BAD_REQUEST) if it is not one
    or an ``/Expr(...)/`` does not parse, so handlers can pass wire input straight in."""
    if type(obj) is not dict:
        raise RequestError("BAD_REQUEST", f"a ClassAd must be a JSON object, not {type(obj).__name__}")
    try:
        return json_to_ad(obj)
    except ClassAdSyntaxError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RequestError("BAD_REQUEST", f"bad expression in ClassAd: {first}") from None
    except (TypeError, OverflowError, ValueError) as e:
        raise RequestError("BAD_REQUEST", f"bad ClassAd: {e}") from None
