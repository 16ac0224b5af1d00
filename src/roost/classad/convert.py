"""Conversion between Python objects and ClassAd expressions/values.

The rules follow HTCondor's Python bindings (``classad2``) so code written
against them behaves the same here:

- Python -> expression (:func:`to_node`): ``None`` becomes ``undefined``,
  tuples/sets become lists, dicts become nested ads, ``bytes`` are decoded as
  UTF-8, ``datetime`` becomes an absolute-time literal in UTC (whole seconds).
- value -> Python (:func:`to_python`): absolute times become timezone-aware
  UTC ``datetime`` objects, relative times become ``float`` seconds.
- expression -> Python (:func:`node_to_python`): what ``classad2``'s
  ``ad[key]`` returns: literals, lists and nested ads convert; any other
  expression stays an expression object.

Two deliberate deviations, both fixing classad2 bugs: an aware ``datetime`` is
converted using its offset (classad2 ignores it), and integers outside 64 bits
raise ``OverflowError`` (classad2 raises ``SystemError``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping
from typing import Any

from roost.classad.ast import AdExpr, FuncCall, ListExpr, Literal, Node
from roost.classad.values import INT64_MAX, INT64_MIN, AbsTime, RelTime, RelTimeLiteral, Value

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


def _ad_types() -> tuple[type, type]:
    # Imported lazily: classad.py imports this module.
    from roost.classad.classad import ClassAd, ExprTree

    return ClassAd, ExprTree


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


def to_node(value: Any) -> Node:
    """The expression tree for a Python value, as classad2 converts on assignment.

    Raises ``TypeError`` for objects with no ClassAd meaning.
    """
    if isinstance(value, Node):
        return value
    if isinstance(value, Value):  # before int: Value is an IntEnum
        return Literal(Value.Undefined if value is Value.Undefined else Value.Error)
    if value is None:
        return Literal(Value.Undefined)
    if isinstance(value, bool):
        return Literal(bool(value))
    if isinstance(value, int):
        n = int(value)
        if not INT64_MIN <= n <= INT64_MAX:
            raise OverflowError(f"integer {n} does not fit in a ClassAd integer (64 bits)")
        return Literal(n)
    if isinstance(value, str):
        return Literal(str(value))
    if isinstance(value, float):
        return Literal(float(value))
    if isinstance(value, (bytes, bytearray)):
        return Literal(bytes(value).decode("utf-8"))
    if isinstance(value, _dt.datetime):
        return Literal(datetime_to_abstime(value))
    if isinstance(value, (AbsTime, RelTime)):
        return Literal(value)
    ClassAd, ExprTree = _ad_types()
    if isinstance(value, ExprTree):
        return expr_node(value)
    if isinstance(value, ClassAd):
        return AdExpr(tuple(ad_pairs(value)))
    if isinstance(value, Mapping):
        # Names are case-insensitive: a repeated one keeps its first spelling and last value.
        attrs: dict[str, tuple[str, Node]] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(
                    f"ClassAd attribute names must be strings, not {type(key).__name__} ({key!r})"
                )
            k = key.lower()
            attrs[k] = (attrs[k][0] if k in attrs else key, to_node(item))
        return AdExpr(tuple(attrs.values()))
    if isinstance(value, (list, tuple, set, frozenset, range)):
        return ListExpr(tuple(to_node(item) for item in value))
    raise TypeError(
        f"cannot convert {type(value).__name__} to a ClassAd expression "
        "(use int, float, str, bool, None, list, dict, datetime, ClassAd or ExprTree)"
    )


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
        from roost.classad.evaluate import evaluate

        value = evaluate(node)
        if type(value) in (AbsTime, RelTime, RelTimeLiteral):
            return value
    return None


def node_to_python(node: Node, make_expr: Callable[[Node], Any] | None = None) -> Any:
    """What classad2's ``ad[key]`` returns for an attribute's expression.

    Literals, lists and nested ads convert to Python (list items that are not
    literals stay expressions); any other expression comes back as
    ``make_expr(node)`` (an ExprTree by default) for the caller to evaluate.
    """
    ClassAd, ExprTree = _ad_types()
    wrap: Callable[[Node], Any] = make_expr or ExprTree
    t = type(node)
    if t is Literal:
        return to_python(node.value)
    if t is ListExpr:
        return [node_to_python(item, wrap) for item in node.items]
    if t is AdExpr:
        return ClassAd(node)
    time = time_literal(node)
    if time is not None:
        return to_python(time)
    return wrap(node)

