"""Printing ads the way HTCondor's tools do: ``-long``, ``-json``, ``-af``.

Ads arrive as JSON-form dicts (``roost.net.adwire``); plain values print
straight from them, and only expressions or ``-af`` expressions that are not
attribute names pay for building a ClassAd. The ClassAd library is imported
on first use, so listings that need none of this stay fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_ATTR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_expr(v: Any) -> bool:
    return type(v) is str and v.startswith("/Expr(") and v.endswith(")/")


def to_classad(obj: dict[str, Any]) -> Any:
    # lazy: the ClassAd library (~25 ms) only when a view needs an ad (module docstring)
    from roost.net.adwire import obj_to_ad

    return obj_to_ad(obj)


def value_text(v: Any) -> str:
    """A value as ``-af`` prints it: strings bare, reals and the rest as ClassAd text."""
    t = type(v)
    if t is str:
        return v[6:-2] if is_expr(v) else v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if v is None:
        return "undefined"
    if t is float:
        # lazy: the ClassAd library only when a value needs it (module docstring)
        from roost.classad.unparse import format_real_old

        return format_real_old(v)
    # lists and nested ads
    # lazy: the ClassAd library only when a value needs it (module docstring)
    from roost.classad.convert import ad_pairs
    from roost.classad.jsonparse import json_to_ad
    from roost.classad.unparse import unparse

    return unparse(ad_pairs(json_to_ad({"v": v}))[0][1])


class AutoFormat:
    """``-af[:jlhtr,] ATTR|EXPR ...``: one line per ad, values separated by spaces.

    Flags as in HTCondor: ``j`` prefix the job id, ``l`` label each value
    (``Name = value``), ``h`` print a heading line, ``t`` tab-separate, ``,``
    comma-separate, ``r`` raw (ClassAd text, strings quoted).
    """

    def __init__(self, exprs: list[str], flags: str = "") -> None:
        self.exprs = exprs
        self.flags = flags
        self.sep = "\t" if "t" in flags else ("," if "," in flags else " ")
        self._plain = [bool(_ATTR.match(e)) for e in exprs]

    def heading(self) -> str | None:
        if "h" not in self.flags:
            return None
        names = (["ID"] if "j" in self.flags else []) + self.exprs
        return self.sep.join(names)

    def _value(self, obj: dict[str, Any], expr: str, plain: bool, ad: list[Any]) -> str:
        if plain:
            # Attribute names are case-insensitive; most requests hit the exact spelling.
            v = obj.get(expr, _MISSING)
            if v is _MISSING:
                low = expr.lower()
                v = next((val for k, val in obj.items() if k.lower() == low), None)
            if not is_expr(v):
                return _raw(v) if "r" in self.flags else value_text(v)
        if not ad:
            ad.append(to_classad(obj))
        # lazy: the ClassAd library only for expressions (module docstring)
        from roost.classad import ExprTree

        try:
            result = ExprTree(expr).eval(ad[0])
        except Exception:
            return "error"
        return _eval_text(result, "r" in self.flags)

    def line(self, obj: dict[str, Any]) -> str:
        ad: list[Any] = []
        vals = [self._value(obj, e, p, ad) for e, p in zip(self.exprs, self._plain)]
        if "l" in self.flags:
            vals = [f"{e} = {v}" for e, v in zip(self.exprs, vals)]
        if "j" in self.flags:
            vals.insert(0, f"{obj.get('ClusterId')}.{obj.get('ProcId')}")
        return self.sep.join(vals)


_MISSING = object()


def _raw(v: Any) -> str:
    if type(v) is str and not is_expr(v):
        # lazy: the ClassAd library only when a value needs it (module docstring)
        from roost.classad.unparse import quote

        return quote(v)
    return value_text(v)


def _eval_text(result: Any, raw: bool) -> str:
    # lazy: adtext loads the ClassAd library only for expressions (module docstring)
    from roost.classad import Value

    if result is Value.Undefined:
        return "undefined"
    if result is Value.Error:
        return "error"
    if isinstance(result, str):
        if raw:
            # lazy: adtext loads the ClassAd library only for expressions (module docstring)
            from roost.classad.unparse import quote

            return quote(result)
        return result
    if isinstance(result, bool):
        return "true" if result else "false"
    if isinstance(result, (int, float)):
        return value_text(result)
    return str(result)



def long_text(objs: Iterable[dict[str, Any]]) -> str:
    """``-long``: each ad as ``Name = value`` lines, sorted by name, a blank line after each."""
    # lazy: the ClassAd library (~25 ms) only when a view needs it (module docstring)
    from roost.classad.convert import ad_pairs
    from roost.classad.unparse import unparse_old

    out = []
    for obj in objs:
        pairs = sorted(ad_pairs(to_classad(obj)), key=lambda p: p[0].lower())
        out.append(unparse_old(pairs).rstrip("\n") + "\n\n")
    return "".join(out)


def json_text(objs: Iterable[dict[str, Any]]) -> str:
    """``-json``: the ``condor_q -json`` array (nothing at all for no ads)."""
    # lazy: the ClassAd library (~25 ms) only when a view needs it (module docstring)
    from roost.classad.jsonform import ads_to_json

    return ads_to_json(to_classad(o) for o in objs)


def ads_text(ads: list[dict[str, Any]], *, json: bool, long: bool, af: Any, af_flags: str) -> str:
    """The raw-ad views shared by q, status and history: ``-json``, ``-long``, or ``-af`` columns.

    With neither ``-json`` nor ``-af`` (e.g. ``-attributes`` alone) the long form is printed.
    """
    if json:
        return json_text(ads)
    if long or not af:
        return long_text(ads)
    fmt = AutoFormat(af, af_flags)
    head = fmt.heading()
    return "".join(ln + "\n" for ln in ([head] if head else []) + [fmt.line(a) for a in ads])
