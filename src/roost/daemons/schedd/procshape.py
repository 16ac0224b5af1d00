"""Procs that all differ from their cluster alike, kept compact (issue 27).

``arguments = $(Process)`` gives each of a million procs a dict of its own (~250
bytes with its string) that differs from the next only in the number. A cluster whose
procs all differ in the same attributes has a *shape* instead: per attribute, either a
template (prefix and suffix around the ProcId: nothing kept per proc) or None (each
proc keeps its value, in a tuple, ~60 bytes). ``Job.diff`` turns the tuple back into
the dict on demand (jobqueue.py), so readers see the same job either way.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

#: ``shaped_value``'s answer for an attribute outside the shape
ABSENT = object()
#: a cluster's shape: (attribute, (prefix, suffix) of its value around the ProcId, or None
#: where each proc holds its own value), in the order the procs' differences list them
Shape = tuple[tuple[str, tuple[str, str] | None], ...]


def own_of(shape: Shape, proc: int, values: tuple[Any, ...]) -> dict[str, Any]:
    """A shaped proc's differences: each attribute from its template, or the next of
    the proc's ``values``."""
    out: dict[str, Any] = {}
    i = 0
    for k, t in shape:
        if t is None:
            out[k] = values[i]
            i += 1
        else:
            out[k] = f"{t[0]}{proc}{t[1]}"
    return out


def shaped_value(shape: Shape, proc: int, values: tuple[Any, ...], attr: str) -> Any:
    """``own_of(...).get(attr, ABSENT)`` without making the dict."""
    i = 0
    for k, t in shape:
        if k == attr:
            return values[i] if t is None else f"{t[0]}{proc}{t[1]}"
        if t is None:
            i += 1
    return ABSENT


def template(column: list[Any], lo: int) -> tuple[str, str] | None:
    """(prefix, suffix) such that proc ``lo + i``'s value ``column[i]`` is prefix + its
    ProcId + suffix (``arguments = $(Process)``, ``output = out.$(Process)``), if any."""
    v0, last = column[0], column[-1]
    if type(v0) is not str or type(last) is not str:
        return None
    p0, p_last = str(lo), str(lo + len(column) - 1)
    at = v0.find(p0)
    while at >= 0:
        a, b = v0[:at], v0[at + len(p0):]
        if last == f"{a}{p_last}{b}" and column == [f"{a}{p}{b}" for p in range(lo, lo + len(column))]:
            return (a, b)
        at = v0.find(p0, at + 1)
    return None


def shape_of(diffs: list[dict[str, Any]], lo: int) -> tuple[Shape, list[tuple[Any, ...]] | None] | None:
    """The shape of procs ``lo``.. (``diffs``, ProcIds checked) that all differ from their
    cluster in the same attributes, and each proc's values outside the templates (None:
    every value is a template); None when they do not share one."""
    first = diffs[0]
    keys = [k for k in first if k != "ProcId"]
    if not keys or "JobStatus" in first or set(map(len, diffs)) != {len(first)}:
        return None
    shape: list[tuple[str, tuple[str, str] | None]] = []
    columns: list[list[Any]] = []
    try:
        for k in keys:  # (same length, every key present: the same attributes)
            column = list(map(itemgetter(k), diffs))
            t = template(column, lo)
            shape.append((k, t))
            if t is None:
                columns.append(column)
    except KeyError:
        return None
    return tuple(shape), (list(zip(*columns)) if columns else None)
