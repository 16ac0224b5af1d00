"""``-format FMT EXPR``: HTCondor's printf over ClassAd values (condor_status, condor_q).

Each ``-format`` prints one conversion of its expression's value for every ad;
several ``-format`` pairs print side by side, and nothing adds a newline unless a
format holds one (``"%s\\n"``). ``%v`` prints a value as ``-af`` does, ``%V`` as
ClassAd text (strings quoted); ``%d``/``%f``/``%s``/``%x``/``%e``/``%g`` are C's.
An undefined value prints ``undefined`` through ``%v``/``%s``; a typed numeric
conversion of a value that is no number prints nothing (the literal text still does).
"""

from __future__ import annotations

import re
from typing import Any

from roost.cli import adtext

_CONV = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:l{0,2}|h)?([sdixXoeEfgGcvV%])")


def unescape(fmt: str) -> str:
    """``\\n``, ``\\t`` and ``\\\\`` as a shell passes them literally."""
    return fmt.replace("\\\\", "\0").replace("\\n", "\n").replace("\\t", "\t").replace("\0", "\\")


def _value(obj: dict[str, Any], expr: str) -> Any:
    """The evaluated value (a Python value, adtext's JSON form), ``None`` for undefined."""
    if adtext._ATTR.match(expr):
        low = expr.lower()
        v = next((val for k, val in obj.items() if k.lower() == low), None)
        if not adtext.is_expr(v):
            return v
    # lazy: the ClassAd library only for expressions (~25 ms)
    from roost.classad import ExprTree, Value

    try:
        v = ExprTree(expr).eval(adtext.to_classad(obj))
    except Exception:
        return None
    return None if v is Value.Undefined or v is Value.Error else v


def apply(fmt: str, obj: dict[str, Any], expr: str) -> str:
    """One ``-format`` for one ad."""
    value = _value(obj, expr)

    def conv(m: re.Match[str]) -> str:
        flags, kind = m.group(1), m.group(2)
        if kind == "%":
            return "%"
        if kind in "vV":
            if kind == "V" and isinstance(value, str):
                # lazy: quoting needs the ClassAd library (~4 ms)
                from roost.classad.unparse import quote

                s = quote(value)
            else:
                s = adtext.value_text(value)
            return ("%" + flags + "s") % s
        if kind == "s":
            return ("%" + flags + "s") % (adtext.value_text(value) if not isinstance(value, str) else value)
        if isinstance(value, bool):
            num: Any = int(value)
        elif isinstance(value, (int, float)):
            num = value
        else:
            return ""
        if kind in "dixXoc":
            num = int(num)
            kind = "d" if kind == "i" else kind
        else:
            num = float(num)
        return ("%" + flags + kind) % num

    return _CONV.sub(conv, unescape(fmt))


def text(pairs: list[tuple[str, str]], ads: list[dict[str, Any]]) -> str:
    return "".join("".join(apply(f, a, e) for f, e in pairs) for a in ads)
