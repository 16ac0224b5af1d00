"""ClassAd and ExprTree: the Python-facing objects, shaped like HTCondor's ``classad2``.

Code written against ``classad2`` should work by changing the import.

Internal layout of :class:`ClassAd` (stable; other roost.classad modules may
READ these, but must change an ad only through its methods or
:meth:`ClassAd._set_node` / :meth:`ClassAd._del`):

- ``_attrs: dict[str, Node]`` -- lower-cased name -> expression tree (the truth);
  the keys are interned strings (see ``_KEYS``);
- ``_names: dict[str, str]`` -- lower-cased name -> the spelling first assigned
  (classad2 keeps it when an attribute is replaced); iteration order is the
  insertion order of ``_names``, which is also the order of ``_attrs``;
- ``_lits: dict[str, value]`` -- lower-cased name -> value, only for attributes
  whose tree is a :class:`~roost.classad.ast.Literal` (the evaluator reads it
  to skip a call for plain values such as ``Memory = 2048``);
- ``parent: ClassAd | None`` -- lexical enclosing ad (set on record values made
  while evaluating ``[ ... ]`` inside another ad; None for top-level ads and for
  every ad handed back to Python, as classad2 returns detached copies);
- ``_plain: bool`` -- ``parent is None`` and no attribute is named ``TARGET``
  or ``MY`` (lets compiled code resolve ``TARGET.x``/``MY.x`` without a lookup).

Fast internal API for roost itself: :func:`roost.classad.evaluate.evaluate`,
:func:`~roost.classad.evaluate.eval_attr`, :func:`~roost.classad.evaluate.matches`,
:func:`~roost.classad.evaluate.symmetric_match` (values, not Python conversions).

Deliberate differences from classad2: lists are evaluated eagerly (classad2
keeps list elements unevaluated; ``ExprTree.eval``/``ClassAd.eval`` hide this
by returning the list *expression* whenever the result plainly comes from
one, but ``eval({x})``-style results inside evaluation differ); attribute
order is insertion order, where classad2's follows its hash table; bad text
raises :class:`ClassAdParseError`, which is both classad2's
:class:`ClassAdException` and roost's :class:`ClassAdSyntaxError`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from sys import intern as _intern
from typing import Any

from roost.classad import evaluate as _ev
from roost.classad.ast import AdExpr, AttrRef, FuncCall, ListExpr, Literal, Node
from roost.classad.codegen import _MISS
from roost.classad.convert import ad_pairs, datetime_to_abstime, expr_node, time_literal, to_python
from roost.classad.errors import ClassAdSyntaxError, EvaluationFailed
from roost.classad.evaluate import _RefsFailed, list_source, refs_node
from roost.classad.flatten import _flatten, _value_node
from roost.classad.parser import parse_ad, parse_expr
from roost.classad.printing import print_json, print_old, print_pretty
from roost.classad.unparse import pretty_expr, unparse, unparse_ad
from roost.classad.values import INT64_MAX, INT64_MIN, AbsTime, RelTime, RelTimeLiteral, Value

_matches = _ev.matches
_PLAIN_TYPES = (bool, int, float, str)


class ClassAdException(Exception):
    """An operation on a ClassAd failed (classad2's exception of the same name)."""


class ClassAdParseError(ClassAdSyntaxError, ClassAdException):
    """Bad ClassAd text given to ClassAd()/ExprTree(): catchable as either exception type."""


def _reraise(e: ClassAdSyntaxError) -> ClassAdParseError:
    return ClassAdParseError(e.message, text=e.text, line=e.line, column=e.column, file=e.file)


def _parse_expr(text: str) -> Node:
    try:
        return parse_expr(text)
    except ClassAdSyntaxError as e:
        raise _reraise(e) from None


# Attribute spelling -> interned lower-case key. Interned keys compare by
# identity with the names compiled into expressions, so lookups never touch an
# ad's own copy of a name; the table also saves lower() on every parse.
_KEYS: dict[str, str] = {}


def _new_key(name: str) -> str:
    k = _intern(name.lower())
    if len(_KEYS) > 200_000:
        _KEYS.clear()
    _KEYS[name] = k
    return k


def _parse_expr_like_classad2(text: str) -> Node:
    """An expression as classad2's ExprTree(str) reads it.

    classad2 parses ``[expression = <text>]`` and takes that attribute, so a
    ``//`` comment swallows the closing bracket and ``1; b = 2`` is accepted
    as ``1``. Texts without ``/``, ``;`` or ``]`` cannot tell the difference
    and take the (cached) expression parser.
    """
    if "/" not in text and ";" not in text and "]" not in text:
        return _parse_expr(text)
    try:
        pairs = parse_ad(f"[expression = {text}]")
    except ClassAdSyntaxError as e:
        raise _reraise(e) from None
    found = [node for name, node in pairs if name.lower() == "expression"]
    if not found:
        raise ClassAdParseError("no expression", text=text)
    return found[-1]


class ClassAd(MutableMapping):
    """A ClassAd: a mutable mapping from case-insensitive names to expressions.

    ``ad[key]`` returns the Python value of a literal (lists and nested ads
    converted) and an :class:`ExprTree` for any other expression, as classad2
    does; :meth:`eval` evaluates.
    """

    __slots__ = ("_attrs", "_names", "_lits", "parent", "_plain")

    def __init__(self, input: str | Mapping[str, Any] | AdExpr | None = None) -> None:
        self._attrs: dict[str, Node] = {}
        self._names: dict[str, str] = {}
        self._lits: dict[str, Any] = {}
        self.parent: ClassAd | None = None
        self._plain = True
        if input is None:
            return
        if isinstance(input, str):
            try:
                pairs: Iterable[tuple[str, Node]] = parse_ad(input)
            except ClassAdSyntaxError as e:
                raise _reraise(e) from None
            self._fill(pairs)
        elif isinstance(input, AdExpr):
            self._fill(input.attrs)
        elif isinstance(input, ClassAd):
            for k, node in input._attrs.items():
                self._set_node(input._names[k], node)
        elif isinstance(input, Mapping):
            for name, value in input.items():
                self[name] = value
        else:
            raise TypeError("input must be None, str, or dict")

    @classmethod
    def _from_pairs(cls, pairs: Iterable[tuple[str, Node]], parent: ClassAd | None) -> ClassAd:
        """A new ad from (name, node) pairs with the given lexical parent (used by the evaluator)."""
        ad = cls.__new__(cls)
        ad._attrs = {}
        ad._names = {}
        ad._lits = {}
        ad.parent = parent
        ad._fill(pairs)
        return ad

    def _fill(self, pairs: Iterable[tuple[str, Node]]) -> None:
        """Add many attributes at once (what _set_node does, without a call per attribute)."""
        attrs, names, lits = self._attrs, self._names, self._lits
        keys = _KEYS
        for name, node in pairs:
            k = keys.get(name) or _new_key(name)
            if k in attrs:
                attrs[k] = node
                if type(node) is Literal:
                    v = node.value
                    lits[k] = float(v.secs) if type(v) is RelTimeLiteral else v
                else:
                    lits.pop(k, None)
                continue
            attrs[k] = node
            names[k] = name
            if type(node) is Literal:
                v = node.value
                lits[k] = float(v.secs) if type(v) is RelTimeLiteral else v  # see _set_node
        self._plain = self.parent is None and "target" not in attrs and "my" not in attrs

    # -- the one place attributes change -----------------------------------
    def _set_node(self, name: str, node: Node) -> None:
        k = _KEYS.get(name) or _new_key(name)
        self._attrs[k] = node
        if k not in self._names:  # classad2 keeps the first spelling and the position
            self._names[k] = name
        if type(node) is Literal:
            v = node.value
            # A relative-time literal evaluates to a real in HTCondor (see evaluate.gen).
            self._lits[k] = float(v.secs) if type(v) is RelTimeLiteral else v
        else:
            self._lits.pop(k, None)
        if k == "target" or k == "my":
            self._plain = False

    def _del(self, k: str) -> None:
        del self._attrs[k]
        del self._names[k]
        self._lits.pop(k, None)
        self._plain = self.parent is None and "target" not in self._attrs and "my" not in self._attrs

    # -- mapping protocol -------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        if type(key) is not str:
            if not isinstance(key, str):
                raise TypeError("ClassAd keys are strings")
        k = key.lower()
        v = self._lits.get(k, _MISS)
        if v is not _MISS:
            if type(v) in _PLAIN_TYPES or type(v) is Value:
                return v
            return _export(v)
        node = self._attrs.get(k)
        if node is None:
            raise KeyError(key)
        return node_to_python(node, ExprTree._wrap)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError("ClassAd keys are strings")
        if isinstance(value, ExprTree):
            node = value.node
        elif type(value) in _PLAIN_TYPES and (
            type(value) is not int or -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF
        ):
            node = Literal(value)
        else:
            node = to_node(value)  # an int wider than 64 bits raises OverflowError there
        self._set_node(key, node)

    def __delitem__(self, key: str) -> None:
        if not isinstance(key, str):
            raise TypeError("ClassAd keys are strings")
        k = key.lower()
        if k not in self._attrs:
            raise KeyError(key)
        self._del(k)

    def update(self, other: Any = (), /, **kwds: Any) -> None:
        """MutableMapping.update, copying expressions directly from another ClassAd."""
        if isinstance(other, ClassAd):
            names = other._names
            self._fill([(names[k], node) for k, node in other._attrs.items()])
        else:
            super().update(other)
        if kwds:
            super().update(kwds)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names.values()))

    def __len__(self) -> int:
        return len(self._attrs)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._attrs

    def __eq__(self, other: object) -> bool:
        if type(self) is not type(other):
            return NotImplemented
        mine, theirs = self._attrs, other._attrs  # type: ignore[attr-defined]
        return mine.keys() == theirs.keys() and all(_same(n, theirs[k]) for k, n in mine.items())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return self.unparse()

    def __str__(self) -> str:
        return print_pretty(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ClassAd, (repr(self),))

    def __copy__(self) -> ClassAd:
        if type(self) is not ClassAd or self.parent is not None:
            return ClassAd(self)
        ad = ClassAd.__new__(ClassAd)  # nodes are immutable: the three tables copied whole
        ad._attrs, ad._names, ad._lits = self._attrs.copy(), self._names.copy(), self._lits.copy()
        ad.parent, ad._plain = None, self._plain
        return ad

    def __deepcopy__(self, memo: dict[int, Any]) -> ClassAd:
        return ClassAd(self)  # nodes are immutable: sharing them is a deep copy

    # -- classad2 API -------------------------------------------------------
    def unparse(self) -> str:
        """The ad in new ClassAd syntax on one line (``[ a = 1; b = x + 1 ]``)."""
        return unparse_ad([(self._names[k], node) for k, node in self._attrs.items()])

    def lookup(self, attr: str) -> ExprTree:
        """The expression of ``attr`` (KeyError if absent)."""
        if not isinstance(attr, str):
            raise TypeError("ClassAd keys are strings")
        node = self._attrs.get(attr.lower())
        if node is None:
            raise KeyError(attr)
        return ExprTree._wrap(node)

    def eval(self, attr: str) -> Any:
        """Evaluate ``attr`` in this ad (KeyError if absent) and return the Python value."""
        if not isinstance(attr, str):
            raise TypeError("ClassAd keys are strings")
        k = attr.lower()
        v = self._lits.get(k, _MISS)
        if v is _MISS:
            node = self._attrs.get(k)
            if node is None:
                raise KeyError(attr)
            try:
                v = _ev.evaluate(node, self, None)
            except EvaluationFailed as e:
                raise ClassAdException("failed to evaluate expression") from e
            if type(v) is list:
                return _export_list(v, node, self, None)
        if type(v) in _PLAIN_TYPES or type(v) is Value:
            return v
        return _export(v)

    def matches(self, ad: ClassAd) -> bool:
        """``ad``'s Requirements evaluated in ``ad`` with this ad as TARGET (classad2's semantics)."""
        if not isinstance(ad, ClassAd):
            raise TypeError("ad must be a ClassAd")
        return _ev.matches(ad, self)

    def symmetricMatch(self, ad: ClassAd) -> bool:  # noqa: N802 (classad2 name)
        """Both ads' Requirements hold, each evaluated against the other."""
        if type(ad) is not ClassAd and not isinstance(ad, ClassAd):
            raise TypeError("ad must be a ClassAd")
        return _matches(ad, self) and _matches(self, ad)

    def printOld(self) -> str:  # noqa: N802
        """The ad in the old (``condor_q -long``) format."""
        return print_old(self)

    formatOld = printOld

    def printJson(self) -> str:  # noqa: N802
        """The ad as a JSON object, as ``condor_q -json`` prints it."""
        return print_json(self)

    formatJson = printJson

    def externalRefs(self, expr: ExprTree) -> list[str]:  # noqa: N802
        """Attributes ``expr`` references that this ad does not define."""
        return _refs(self, expr, external=True)

    def internalRefs(self, expr: ExprTree) -> list[str]:  # noqa: N802
        """Attributes ``expr`` references that this ad defines."""
        return _refs(self, expr, external=False)

    def flatten(self, expr: ExprTree) -> Any:
        """Partially evaluate ``expr`` in this ad: a value if it has one, else a simpler ExprTree."""
        if not isinstance(expr, ExprTree):
            raise TypeError("expr must be an ExprTree")
        try:
            ok, v = _flatten(self, expr.node, set())
        except EvaluationFailed:  # e.g. random(0): classad2 raises ValueError here too
            raise ValueError("Unable to flatten expression.") from None
        if ok:
            return v if type(v) in _PLAIN_TYPES or type(v) is Value else _export(v)
        return ExprTree._wrap(v)


class ExprTree:
    """An expression in the ClassAd language (immutable; wraps a parsed tree)."""

    __slots__ = ("node",)

    def __init__(self, expr: str | ExprTree | Node | None = None) -> None:
        if expr is None:
            self.node: Node = Literal(Value.Undefined)
        elif isinstance(expr, str):
            self.node = _parse_expr_like_classad2(expr)
        elif isinstance(expr, ExprTree):
            self.node = expr.node
        elif isinstance(expr, Node):
            self.node = expr
        else:
            self.node = _parse_expr(str(expr))

    @classmethod
    def _wrap(cls, node: Node) -> ExprTree:
        e = cls.__new__(cls)
        e.node = node
        return e

    def eval(self, scope: ClassAd | None = None, target: ClassAd | None = None) -> Any:
        """Evaluate with bare names looked up in ``scope`` and ``TARGET`` being ``target``."""
        node = self.node
        if scope is None:
            if target is not None and not isinstance(target, ClassAd):
                raise TypeError("target must be a ClassAd")
            # classad2 ignores the target when there is no scope
            scope, target = _NO_SCOPE, None
        elif type(scope) is not ClassAd and not isinstance(scope, ClassAd):
            raise TypeError("scope must be a ClassAd")
        if target is not None:
            if type(target) is not ClassAd and not isinstance(target, ClassAd):
                raise TypeError("target must be a ClassAd")
            if target is scope:
                target = None
        f = node._compiled or _ev.compile_node(node)
        try:
            v = f(scope, target)
        except _ev._TooDeep:
            try:
                v = _ev._run_precise(f, scope, target)
            except EvaluationFailed as e:
                raise ClassAdException("failed to evaluate expression") from e
        except EvaluationFailed as e:
            raise ClassAdException("failed to evaluate expression") from e
        if type(v) in _PLAIN_TYPES or type(v) is Value:
            return v
        if type(v) is list:
            return _export_list(v, node, scope, target)
        return _export(v)

    def simplify(self, scope: ClassAd | None = None, target: ClassAd | None = None) -> ExprTree:
        """Evaluate and return the value as an expression (classad2's ``simplify``)."""
        v = _ev.evaluate(self.node, scope, target)
        return ExprTree._wrap(_value_node(v))

    def sameAs(self, other: ExprTree) -> bool:  # noqa: N802
        """Structural equality (classad2's ``==`` on expressions)."""
        return isinstance(other, ExprTree) and _same(self.node, other.node)

    def __eq__(self, other: object) -> bool:
        if type(self) is type(other):
            return _same(self.node, other.node)  # type: ignore[attr-defined]
        return False

    def __hash__(self) -> int:
        return hash(self.node)

    def __str__(self) -> str:
        return pretty_expr(self.node)

    def __repr__(self) -> str:
        return unparse(self.node)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExprTree, (str(self),))


_NO_SCOPE = ClassAd()
_ev.use_classad(ClassAd, _NO_SCOPE)  # the engine below makes records: see use_classad


def _same(a: Any, b: Any) -> bool:
    """HTCondor's SameAs: structural equality where attribute and function names
    keep their case (``X`` is not ``x``) but record attribute names do not."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        t = type(x)
        if t is not type(y):
            return False
        if t is Literal:
            if x != y:
                return False
        elif t is AttrRef:
            if x.name != y.name or x.absolute != y.absolute or (x.base is None) != (y.base is None):
                return False
            if x.base is not None:
                stack.append((x.base, y.base))
        elif t is AdExpr:
            dx = {n.lower(): e for n, e in x.attrs}
            dy = {n.lower(): e for n, e in y.attrs}
            if dx.keys() != dy.keys():
                return False
            stack.extend((e, dy[k]) for k, e in dx.items())
        elif t is FuncCall:
            if x.name != y.name or len(x.args) != len(y.args):
                return False
            stack.extend(zip(x.args, y.args))
        elif t is ListExpr:
            if len(x.items) != len(y.items):
                return False
            stack.extend(zip(x.items, y.items))
        elif isinstance(x, Node):
            for f in x._fields:
                u, v = getattr(x, f), getattr(y, f)
                if isinstance(u, Node) or isinstance(v, Node):
                    if u is None or v is None:
                        return False
                    stack.append((u, v))
                elif u != v:
                    return False
        elif x != y:
            return False
    return True


def _export(v: Any) -> Any:
    """A runtime value as classad2 hands it to Python (records detached from their scope)."""
    t = type(v)
    if t is list:
        return [_export(x) for x in v]
    if isinstance(v, ClassAd):
        if v.parent is None:
            return v
        return ClassAd(v)
    if t is AbsTime or t is RelTime or t is RelTimeLiteral:
        return to_python(v)
    return v


def _export_list(v: list[Any], node: Node, scope: ClassAd, target: ClassAd | None) -> Any:
    """A list result as classad2 returns it.

    HTCondor evaluates list elements lazily, so classad2 hands back the
    elements of a list *expression* unevaluated (ExprTree for anything but a
    literal). roost evaluates lists eagerly; when the result plainly comes
    from a list expression (directly or through attribute references) that
    expression is converted instead, so Python sees what classad2 shows.
    """
    src = list_source(node, scope, target)
    if src is not None:
        return node_to_python(src, ExprTree._wrap)
    return _export(v)


# ---------------------------------------------------------------------------
# Python values <-> expressions (classad2's rules; values -> Python is convert.to_python)


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


def node_to_python(node: Node, make_expr: Callable[[Node], Any] | None = None) -> Any:
    """What classad2's ``ad[key]`` returns for an attribute's expression.

    Literals, lists and nested ads convert to Python (list items that are not
    literals stay expressions); any other expression comes back as
    ``make_expr(node)`` (an ExprTree by default) for the caller to evaluate.
    """
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


def _refs(ad: ClassAd, expr: Any, external: bool) -> list[str]:
    """HTCondor's Get{External,Internal}References (full names), as classad2 returns them.

    External: names looked up but defined nowhere in scope (``TARGET.x`` kept
    whole); internal: names found in ``ad``, following each found expression.
    classad2 returns the comma-split of the sorted set, so no names is ``['']``.
    """
    if not isinstance(expr, ExprTree):
        raise TypeError("expr must be an ExprTree")
    try:
        return refs_node(ad, expr.node, external)
    except _RefsFailed:
        kind = "external" if external else "internal"
        raise ValueError(f"Unable to determine {kind} references.") from None
