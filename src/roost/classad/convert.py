"""Conversion between ClassAd values and Python objects, as HTCondor's ``classad2`` does it.

- value -> Python (:func:`to_python`): absolute times become timezone-aware
  UTC ``datetime`` objects, relative times become ``float`` seconds;
  :func:`datetime_to_abstime` is the way back (whole seconds, UTC).
- what counts as a literal (:func:`literal_value`, :func:`time_literal`):
  ``absTime("...")``/``relTime("...")`` with a constant string too, as
  HTCondor's parser folds them.
- the pieces other modules take apart: an ad's (name, expression) pairs
  (:func:`ad_pairs`), the tree inside an ExprTree (:func:`expr_node`).

Python -> expression (``to_node``) and expression -> Python (``node_to_python``)
make and recognise ClassAds and ExprTrees, so they live in
:mod:`roost.classad.classad`.

One deliberate deviation, fixing a classad2 bug: an aware ``datetime`` is
converted using its offset (classad2 ignores it).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from roost.classad.ast import FuncCall, Literal, Node
from roost.classad.values import AbsTime, RelTime, RelTimeLiteral

_UTC = _dt.UTC


def datetime_to_abstime(when: _dt.datetime) -> AbsTime:
    """An absolute time for ``when``, in UTC and whole seconds as HTCondor stores it.

    A naive datetime is local time, as in classad2.
    """
    secs = when.timestamp()
    return AbsTime(int(secs // 1), 0)


def abstime_to_datetime(value: AbsTime) -> _dt.datetime:
    """HTCondor's bindings always hand absolute times back in UTC, whatever offset they carry."""
    return _dt.datetime.fromtimestamp(int(value.secs // 1), _UTC)


def ad_pairs(ad: Any) -> list[tuple[str, Node]]:
    """The (name, expression) pairs of a roost ClassAd, in its own order."""
    names = ad._names
    return [(names[k], node) for k, node in ad._attrs.items()]


def expr_node(expr: Any) -> Node:
    """The tree node inside an ExprTree (or a node passed as is)."""
    if isinstance(expr, Node):
        return expr
    node = getattr(expr, "node", None)
    if isinstance(node, Node):
        return node
    raise TypeError(f"not a ClassAd expression: {type(expr).__name__}")


def to_python(value: Any) -> Any:
    """The Python object classad2 returns for an evaluated value."""
    t = type(value)
    if t is AbsTime:
        return abstime_to_datetime(value)
    if t is RelTime or t is RelTimeLiteral:
        return float(value.secs)
    if t is list:
        return [to_python(item) for item in value]
    return value


def literal_value(node: Node) -> Any:
    """The constant a literal node stands for, or raise ``ValueError`` if it is not one.

    ``absTime("...")``/``relTime("...")`` with a constant string are literals
    to HTCondor (its parser folds them), so they count here too.
    """
    if type(node) is Literal:
        return node.value
    time = time_literal(node)
    if time is not None:
        return time
    raise ValueError(f"not a literal: {node!r}")


def time_literal(node: Node) -> AbsTime | RelTime | None:
    """The time value of an ``absTime("...")``/``relTime("...")`` call with a constant string.

    HTCondor's parser turns exactly these calls into literals; everything that
    prints or converts "literals only" must agree with it.
    """
    if type(node) is Literal and type(node.value) in (AbsTime, RelTime, RelTimeLiteral):
        return node.value
    if (
        type(node) is FuncCall
        and node.lname in ("abstime", "reltime")
        and len(node.args) == 1
        and type(node.args[0]) is Literal
        and type(node.args[0].value) is str
    ):
        # lazy: the evaluator (~15 ms); the JSON writer (submit's wire form) must not load it
        from roost.classad.evaluate import evaluate

        value = evaluate(node)
        if type(value) in (AbsTime, RelTime, RelTimeLiteral):
            return value
    return None
