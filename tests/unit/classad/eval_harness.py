"""Shared helpers for the evaluator tests: run one expression in either library."""

from __future__ import annotations

import math

import htcondor2  # noqa: F401  -- before classad2: HTCondor's default (non-strict) mode

# isort: split
import classad2

import roost.classad as rc
from roost.classad.values import Value

U = "UNDEF"
E = "ERROR"


def norm(v: object) -> object:
    """A library-independent token for a result."""
    if isinstance(v, (classad2.Value, Value)):
        return U if int(v) == 2 else E
    if isinstance(v, float) and math.isnan(v):
        return ("nan",)
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, (classad2.ClassAd, rc.ClassAd)):
        return ("ad", sorted((k.lower(), norm(v.eval(k))) for k in v.keys()))
    if isinstance(v, (classad2.ExprTree, rc.ExprTree)):
        return ("expr", str(v))
    return (type(v).__name__, v)


def run(lib: object, text: str, scope: str | None = None, target: str | None = None) -> object:
    try:
        e = lib.ExprTree(text)  # type: ignore[attr-defined]
        sc = lib.ClassAd(scope) if scope else None  # type: ignore[attr-defined]
        tg = lib.ClassAd(target) if target else None  # type: ignore[attr-defined]
        return norm(e.eval(sc, tg))
    except Exception:  # both libraries raise on failed evaluation; only "raised" matters
        return ("raised",)


