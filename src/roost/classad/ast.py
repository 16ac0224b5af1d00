"""The ClassAd expression tree: the contract between parser, unparser and evaluator.

Nodes are immutable after construction and compare structurally (so a parsed,
unparsed and re-parsed expression compares equal to the original). Every node
has a ``_compiled`` slot the evaluator may fill with a cached compiled form;
it is not part of equality. Sequence fields are tuples so nodes hash.

Attribute references follow HTCondor's model: ``MY.x`` is ``AttrRef("x",
base=AttrRef("MY"))``; ``.x`` (absolute, from the root ad) is
``AttrRef("x", absolute=True)``. The names MY, TARGET and PARENT are not
keywords; the evaluator gives them meaning when they are the base of a
selection and are not attributes of the ad.
"""

from __future__ import annotations

import math
from typing import Any


class Node:
    __slots__ = ("_compiled",)
    _fields: tuple[str, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._key()))

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({args})"

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_compiled" and hasattr(self, "_compiled"):
            raise AttributeError(f"{type(self).__name__} is immutable")
        object.__setattr__(self, name, value)

    def _done(self) -> None:
        object.__setattr__(self, "_compiled", None)


class Literal(Node):
    """A constant: int, float, str, bool, UNDEFINED, ERROR, AbsTime or RelTime.

    ``absTime("...")``/``relTime("...")`` calls stay FuncCall nodes; Literal holds
    the time types only when a parsed or converted value needs one.
    """

    __slots__ = ("value",)
    _fields = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value
        self._done()

    def _key(self) -> tuple[Any, ...]:
        v = self.value
        # True != 1 and 1 != 1.0 here: the type is part of the literal. NaN equals NaN.
        if type(v) is float and math.isnan(v):
            return (float, "nan")
        return (type(v), v)


class AttrRef(Node):
    """A reference to attribute ``name``; ``base`` is the expression selected from, if any."""

    __slots__ = ("name", "base", "absolute")
    _fields = ("lname", "base", "absolute")

    def __init__(self, name: str, base: Node | None = None, absolute: bool = False) -> None:
        self.name = name
        self.base = base
        self.absolute = absolute
        self._done()

    @property
    def lname(self) -> str:
        return self.name.lower()


class Subscript(Node):
    """``base[index]``: list element or record attribute by string."""

    __slots__ = ("base", "index")
    _fields = ("base", "index")

    def __init__(self, base: Node, index: Node) -> None:
        self.base = base
        self.index = index
        self._done()


class UnaryOp(Node):
    """``op`` is one of ``-``, ``+``, ``!``, ``~``."""

    __slots__ = ("op", "operand")
    _fields = ("op", "operand")

    def __init__(self, op: str, operand: Node) -> None:
        self.op = op
        self.operand = operand
        self._done()


BINARY_OPS = (
    "*", "/", "%", "+", "-", "<<", ">>", ">>>",
    "<", "<=", ">", ">=", "==", "!=", "=?=", "=!=",
    "&", "^", "|", "&&", "||",
)


class BinaryOp(Node):
    """``op`` is one of :data:`BINARY_OPS`; ``is``/``isnt`` parse as ``=?=``/``=!=``."""

    __slots__ = ("op", "left", "right")
    _fields = ("op", "left", "right")

    def __init__(self, op: str, left: Node, right: Node) -> None:
        self.op = op
        self.left = left
        self.right = right
        self._done()


class Conditional(Node):
    """``cond ? then : else_``; ``then`` is None for the elvis form ``cond ?: else_``."""

    __slots__ = ("cond", "then", "else_")
    _fields = ("cond", "then", "else_")

    def __init__(self, cond: Node, then: Node | None, else_: Node) -> None:
        self.cond = cond
        self.then = then
        self.else_ = else_
        self._done()


class Paren(Node):
    """Parentheses as written, kept so unparse reproduces them (HTCondor does the same)."""

    __slots__ = ("expr",)
    _fields = ("expr",)

    def __init__(self, expr: Node) -> None:
        self.expr = expr
        self._done()


class FuncCall(Node):
    """A call of a built-in function; ``name`` keeps the spelling written, lookup is case-insensitive."""

    __slots__ = ("name", "args")
    _fields = ("lname", "args")

    def __init__(self, name: str, args: tuple[Node, ...]) -> None:
        self.name = name
        self.args = tuple(args)
        self._done()

    @property
    def lname(self) -> str:
        return self.name.lower()


class ListExpr(Node):
    """``{a, b, c}``."""

    __slots__ = ("items",)
    _fields = ("items",)

    def __init__(self, items: tuple[Node, ...]) -> None:
        self.items = tuple(items)
        self._done()


class AdExpr(Node):
    """A nested record ``[a = 1; b = 2]``: ordered (name, expr) pairs as written."""

    __slots__ = ("attrs",)
    _fields = ("attrs",)

    def __init__(self, attrs: tuple[tuple[str, Node], ...]) -> None:
        self.attrs = tuple(attrs)
        self._done()

    def _key(self) -> tuple[Any, ...]:
        return tuple((n.lower(), e) for n, e in self.attrs)
