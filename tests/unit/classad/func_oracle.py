"""Oracle for the built-in function tests: call a roost built-in directly with
Python values and the same function in HTCondor's ``classad2`` through a
ClassAd expression, and reduce both results to comparable, type-aware tokens.

``htcondor2`` is imported before ``classad2`` so classad2 runs in HTCondor's
default (non-strict) mode.  classad2 hands absolute times back as
``datetime`` (dropping the offset) and relative times as ``float``; the oracle
asks ``isAbsTime``/``isRelTime``/``string`` to tell them apart exactly.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

import htcondor2  # noqa: F401  (selects non-strict mode; must precede classad2)

# isort: split
import classad2

from roost.classad.func_values import abstime_text, reltime_text, string_literal
from roost.classad.functions import FUNCTIONS
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, Value


class Record(dict):
    """Stand-in record for calling functions directly (roost's ClassAd is another engineer's)."""

    def eval(self, name: str) -> object:  # noqa: A003 - mirrors classad2.ClassAd.eval
        for k, v in self.items():
            if k.lower() == name.lower():
                return v
        raise KeyError(name)


def render(v: object, runtime_strings: bool = False, in_list: bool = False) -> str:
    """ClassAd source text for a Python value.

    ``runtime_strings`` wraps strings in ``strcat()`` so they reach a function at
    run time: the parser itself converts ``absTime("...")``/``relTime("...")``
    with a literal string.  ``in_list`` writes list elements as literals (a
    negative number without parentheses, times in their string form) because
    classad2 keeps list elements as unevaluated expressions and prints them so.
    """
    t = type(v)
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if t is bool:
        return "true" if v else "false"
    if t is int:
        if v == -(1 << 63):
            return "(-9223372036854775807 - 1)"
        return str(v) if v >= 0 or in_list else f"(-{-v})"  # type: ignore[operator]
    if t is float:
        if math.isnan(v):  # type: ignore[arg-type]
            return 'real("NaN")'
        if math.isinf(v):  # type: ignore[arg-type]
            return 'real("INF")' if v > 0 else 'real("-INF")'  # type: ignore[operator]
        if v == 0.0 and math.copysign(1.0, v) < 0:  # type: ignore[arg-type]
            return "-0.0" if in_list else "(-0.0)"
        return repr(v) if v >= 0 or in_list else f"(-{-v!r})"  # type: ignore[operator]
    if t is str:
        lit = string_literal(v)  # type: ignore[arg-type]
        return f"strcat({lit})" if runtime_strings else lit
    if t is list:
        return "{" + ", ".join(render(x, runtime_strings, True) for x in v) + "}"  # type: ignore[union-attr]
    if t is AbsTime and in_list:
        return f'absTime("{abstime_text(v)}")'  # type: ignore[arg-type]
    if t is RelTime and in_list:
        return f'relTime("{reltime_text(v.secs)}")'  # type: ignore[union-attr]
    if t is AbsTime:
        return f"absTime({render(v.secs)}, {render(v.offset)})"  # type: ignore[union-attr]
    if t is RelTime:
        return f"relTime({render(v.secs)})"  # type: ignore[union-attr]
    if isinstance(v, Record):
        return "[" + "; ".join(f"{k} = {render(x)}" for k, x in v.items()) + "]"
    raise TypeError(f"cannot render {v!r}")


def _real_token(x: float) -> tuple[Any, ...]:
    if math.isnan(x):
        return ("real", "nan")
    return ("real", x, math.copysign(1.0, x))


def token(v: object) -> Any:
    """Token for a roost value."""
    t = type(v)
    if isinstance(v, Value):
        return ("undef",) if v is UNDEFINED else ("error",)
    if t is bool:
        return ("bool", v)
    if t is int:
        return ("int", v)
    if t is float:
        return _real_token(v)  # type: ignore[arg-type]
    if t is str:
        try:
            v.encode("utf-8")  # type: ignore[union-attr]
        except UnicodeEncodeError:
            return ("not-utf8",)
        return ("str", v)
    if t is list:
        return ("list", tuple(token(x) for x in v))  # type: ignore[union-attr]
    if t is AbsTime:
        return ("abs", abstime_text(v))  # type: ignore[arg-type]
    if t is RelTime:
        return ("rel", _real_token(float(v.secs)))  # type: ignore[union-attr]
    return ("ad", tuple(sorted((str(k).lower(), token(x)) for k, x in v.items())))  # type: ignore[attr-defined]


def _ref_token(v: Any) -> Any:
    if isinstance(v, classad2.Value):
        return ("undef",) if v == classad2.Value.Undefined else ("error",)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return _real_token(v)
    if isinstance(v, str):
        return ("str", v)
    if isinstance(v, list):
        return ("list", tuple(_ref_token(x) for x in v))
    if isinstance(v, classad2.ClassAd):
        return ("ad", tuple(sorted((k.lower(), _ref_token(v.eval(k))) for k in v.keys())))
    if isinstance(v, datetime.datetime):
        return ("abs?", v)
    if isinstance(v, classad2.ExprTree):  # a list item classad2 kept unevaluated
        return _ref_token(v.eval())
    return ("other", repr(v))


RUNTIME_STRING_FUNCTIONS = {"abstime", "reltime"}


def call_text(name: str, args: tuple[object, ...]) -> str:
    rt = name.lower() in RUNTIME_STRING_FUNCTIONS
    return f"{name}({', '.join(render(a, rt) for a in args)})"


def reference(name: str, args: tuple[object, ...]) -> Any:
    """Token for classad2's answer to ``name(args)``.

    Where HTCondor's function reports an evaluation *failure* (e.g. ``random(-1)``,
    ``userHome()``), classad2 raises; roost answers ERROR there, so the failure
    is tokenised as ERROR.
    """
    text = call_text(name, args)
    try:
        r = classad2.ExprTree(text).eval()
    except classad2.ClassAdException:
        return ("error",)
    except UnicodeDecodeError:  # HTCondor made a string that is not UTF-8 (e.g. cut inside a character)
        return ("not-utf8",)
    tok = _ref_token(r)
    if tok[0] == "abs?" or tok[0] == "real":
        if classad2.ExprTree(f"isAbsTime({text})").eval() is True:
            return ("abs", classad2.ExprTree(f"string({text})").eval())
        if classad2.ExprTree(f"isRelTime({text})").eval() is True:
            return ("rel", tok)
    return tok


def mine(name: str, args: tuple[object, ...]) -> Any:
    """Token for roost's answer."""
    return token(FUNCTIONS[name.lower()](*args))


def mismatches(name: str, cases: list[tuple[object, ...]]) -> list[str]:
    """Human-readable lines for every case where roost and classad2 differ."""
    bad = []
    for args in cases:
        want = reference(name, args)
        got = mine(name, args)
        if want != got:
            bad.append(f"{call_text(name, args)}: classad2 {want!r}, roost {got!r}")
    return bad
