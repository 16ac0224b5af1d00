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

from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from sys import intern as _intern
from typing import Any

from roost.classad import evaluate as _ev
from roost.classad.ast import AdExpr, AttrRef, Literal, Node
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.values import AbsTime, RelTime, RelTimeLiteral, Value

_MISS = _ev._MISS
_matches = _ev.matches
_PLAIN_TYPES = (bool, int, float, str)


class ClassAdException(Exception):
    """An operation on a ClassAd failed (classad2's exception of the same name)."""


class ClassAdParseError(ClassAdSyntaxError, ClassAdException):
    """Bad ClassAd text given to ClassAd()/ExprTree(): catchable as either exception type."""


def _reraise(e: ClassAdSyntaxError) -> ClassAdParseError:
    return ClassAdParseError(e.message, text=e.text, line=e.line, column=e.column, file=e.file)


def _parse_expr(text: str) -> Node:
    from roost.classad.parser import parse_expr

    try:
        return parse_expr(text)
    except ClassAdSyntaxError as e:
        raise _reraise(e) from None


def _to_node(value: Any) -> Node:
    from roost.classad.convert import to_node

    return to_node(value)


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
    from roost.classad.parser import parse_ad

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
            from roost.classad.parser import parse_ad

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
        from roost.classad.convert import node_to_python

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
            node = _to_node(value)  # an int wider than 64 bits raises OverflowError there
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
        from roost.classad.printing import print_pretty

        return print_pretty(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ClassAd, (repr(self),))

    def __copy__(self) -> ClassAd:
        return ClassAd(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> ClassAd:
        return ClassAd(self)  # nodes are immutable: sharing them is a deep copy

    # -- classad2 API -------------------------------------------------------
    def unparse(self) -> str:
        """The ad in new ClassAd syntax on one line (``[ a = 1; b = x + 1 ]``)."""
        from roost.classad.unparse import unparse_ad

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
            except _ev.EvaluationFailed as e:
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
        from roost.classad.printing import print_old

        return print_old(self)

    formatOld = printOld

    def printJson(self) -> str:  # noqa: N802
        """The ad as a JSON object, as ``condor_q -json`` prints it."""
        from roost.classad.printing import print_json

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
        except _ev.EvaluationFailed:  # e.g. random(0): classad2 raises ValueError here too
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
            except _ev.EvaluationFailed as e:
                raise ClassAdException("failed to evaluate expression") from e
        except _ev.EvaluationFailed as e:
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
        from roost.classad.printing import pretty_expr

        return pretty_expr(self.node)

    def __repr__(self) -> str:
        from roost.classad.unparse import unparse

        return unparse(self.node)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ExprTree, (str(self),))


_NO_SCOPE = ClassAd()
_ev._CA = ClassAd
_ev._NO_SCOPE = _NO_SCOPE


def _same(a: Any, b: Any) -> bool:
    """HTCondor's SameAs: structural equality where attribute and function names
    keep their case (``X`` is not ``x``) but record attribute names do not."""
    from roost.classad import ast as ast_

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
        elif t is ast_.FuncCall:
            if x.name != y.name or len(x.args) != len(y.args):
                return False
            stack.extend(zip(x.args, y.args))
        elif t is ast_.ListExpr:
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
        from roost.classad.convert import to_python

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
        from roost.classad.convert import node_to_python

        return node_to_python(src, ExprTree._wrap)
    return _export(v)


def list_source(node: Node, scope: Any, target: Any) -> Node | None:
    """The list expression (a ListExpr) that ``node``, evaluated in ``scope``, plainly comes from.

    HTCondor keeps list elements unevaluated, so where it shows a list (classad2's
    conversion to Python, string() and strcat()) it shows the expressions; roost
    evaluates lists eagerly and uses this to recover them. None when the list
    comes from somewhere this walk does not follow (a function result, ...).
    """
    from roost.classad import ast as ast_
    from roost.classad.ast import ListExpr, Paren

    for _ in range(50):
        t = type(node)
        if t is Paren:
            node = node.expr
            continue
        if t is ListExpr:
            return node
        if t is ast_.FuncCall and node.lname in ("debug", "eval") and len(node.args) == 1:
            is_eval = node.lname == "eval"
            node = node.args[0]  # both hand a list argument back as it is
            if is_eval and type(node) is not ListExpr:
                text = _ev.evaluate(node, scope, target)
                if type(text) is str:
                    try:  # eval("{...}"): the list expression in the string
                        node = _parse_expr(text)
                    except ClassAdSyntaxError:
                        break
            continue
        if t is ast_.Conditional or (t is ast_.FuncCall and node.lname == "ifthenelse" and len(node.args) == 3):
            cond, then, other = (
                (node.cond, node.then, node.else_) if t is ast_.Conditional else node.args
            )
            c = _ev.evaluate(cond, scope, target)
            if then is None:  # elvis: the condition itself unless UNDEFINED
                node = other if c is Value.Undefined else cond
            elif c is True or (type(c) in (int, float) and c != 0):
                node = then
            elif c is False or type(c) in (int, float):
                node = other
            else:
                break
            continue
        if t is ast_.Subscript:
            b, i = node.base, node.index
            while type(b) is Paren:
                b = b.expr
            if type(b) is ListExpr and type(i) is Literal and type(i.value) is int:
                if 0 <= i.value < len(b.items):
                    node = b.items[i.value]
                    continue
            break
        if t is not AttrRef or node.absolute:
            break
        base = node.base
        while type(base) is Paren:
            base = base.expr
        if type(base) is AdExpr:
            found = None
            for name, n in base.attrs:
                if name.lower() == node.lname:
                    found = n
            if found is None:
                break
            scope, target = ClassAd._from_pairs(base.attrs, scope), None
            node = found
            continue
        if base is None:
            ad: Any = scope
            found = None
            while ad is not None and found is None:
                found = ad._attrs.get(node.lname)
                ad = ad.parent
            if found is None and target is not None:
                found = target._attrs.get(node.lname)
        elif type(base) is AttrRef and base.base is None and not base.absolute and base.lname in (
            "my",
            "self",
            "target",
        ):
            ad = scope if base.lname != "target" else target
            found = None if ad is None else ad._attrs.get(node.lname)
            if base.lname == "target" and found is not None:
                scope, target = target, scope  # type: ignore[assignment]
        else:
            rec = _ev.evaluate(base, scope, target) if scope is not None else None
            if not isinstance(rec, ClassAd):
                break
            found = rec._attrs.get(node.lname)  # r.l: l of the record r only
            scope = rec
        if found is None:
            break
        node = found
    return None


def _value_node(v: Any) -> Node:
    """An expression tree standing for a runtime value."""
    if isinstance(v, ClassAd):
        return AdExpr(tuple((v._names[k], n) for k, n in v._attrs.items()))
    if type(v) is list:
        from roost.classad.ast import ListExpr

        return ListExpr(tuple(_value_node(x) for x in v))
    return Literal(v)


def _refs(ad: ClassAd, expr: Any, external: bool) -> list[str]:
    """HTCondor's Get{External,Internal}References (full names), as classad2 returns them.

    External: names looked up but defined nowhere in scope (``TARGET.x`` kept
    whole); internal: names found in ``ad``, following each found expression.
    classad2 returns the comma-split of the sorted set, so no names is ``['']``.
    """
    if not isinstance(expr, ExprTree):
        raise TypeError("expr must be an ExprTree")
    try:
        return _refs_node(ad, expr.node, external)
    except _RefsFailed:
        kind = "external" if external else "internal"
        raise ValueError(f"Unable to determine {kind} references.") from None


class _RefsFailed(Exception):
    """HTCondor's Get*References gives up: a selection from a value that is no record."""


def _refs_node(ad: ClassAd, root: Node, external: bool, partial: bool = False) -> list[str]:
    """The references of ``root``; raises _RefsFailed where HTCondor gives up, unless
    ``partial``: then no names (what unresolved() sees)."""
    from roost.classad import ast as a
    from roost.classad.unparse import unparse

    refs: dict[str, str] = {}
    seen: set[tuple[int, int]] = set()

    def add(name: str) -> None:
        refs.setdefault(name.lower(), name)

    def lookup(start: ClassAd, k: str) -> tuple[ClassAd, Node] | None:
        cur: ClassAd | None = start
        while cur is not None:
            n = cur._attrs.get(k)
            if n is not None:
                return cur, n
            cur = cur.parent
        return None

    def follow(found: tuple[ClassAd, Node], name: str) -> None:
        where, n = found
        if where is ad and not external:
            add(name)
        key = (id(n), id(where))
        if key in seen:  # a reference cycle: HTCondor runs out of depth and gives up
            raise _RefsFailed
        seen.add(key)
        walk(n, where)
        seen.discard(key)

    def walk(node: Any, scope: ClassAd) -> None:
        t = type(node)
        if t is Literal:
            return
        if t is AttrRef:
            base = node.base
            while type(base) is a.Paren:
                base = base.expr
            self_ref = (
                type(base) is AttrRef
                and base.base is None
                and not base.absolute
                and base.lname in ("my", "self")
                and lookup(scope, base.lname) is None
            )
            if base is None or self_ref:
                start = _ev._top(scope) if node.absolute else scope
                found = lookup(start, node.lname)
                if found is None:
                    if external and node.lname not in _ev._SPECIAL:
                        add(node.name)
                else:
                    follow(found, node.name)
                return
            if not external:
                walk(base, scope)
            try:
                v = _ev.evaluate(base, scope, None)
            except _ev.EvaluationFailed:
                raise _RefsFailed from None
            if v is Value.Undefined:
                if external:
                    add(unparse(node))  # the whole selection, as HTCondor unparses it
            elif not isinstance(v, ClassAd):
                raise _RefsFailed
            else:
                found = lookup(v, node.lname)
                if found is None:
                    if external:
                        add(node.name)
                else:
                    follow(found, node.name)
            return
        if t is AdExpr:
            # HTCondor walks a nested record's expressions in the enclosing scope
            for _, n in node.attrs:
                walk(n, scope)
            return
        if isinstance(node, Node):
            for f in node._fields:
                walk(getattr(node, "name" if f == "lname" else f), scope)
        elif isinstance(node, tuple):
            for x in node:
                walk(x, scope)

    try:
        walk(root, ad)
    except _RefsFailed:
        if not partial:
            raise
        refs.clear()  # unresolved() then sees no names at all
    names = sorted(refs.values(), key=str.lower)
    if any("," in n for n in names):  # classad2 joins the names with commas and splits again
        names = ",".join(names).split(",")
    return names or [""]


def _flatten(ad: ClassAd, node: Node, seen: set[int]) -> tuple[bool, Any]:
    """Partial evaluation: (True, value) when ``node`` has a value in ``ad``, else (False, tree).

    Follows HTCondor's Flatten for the common shapes: defined attributes whose
    value is computable are replaced by it; undefined ones stay; constant parts
    of ``+``/``*`` chains are folded and put first; ``&&``/``||`` with one known
    side simplify where the result no longer depends on the other.
    """
    from roost.classad import ast as a

    t = type(node)
    if t is Literal:
        v = node.value
        return True, (float(v.secs) if type(v) is RelTimeLiteral else v)  # as evaluate.gen does
    if t is AttrRef:
        base = node.base
        if base is None or (
            type(base) is AttrRef and base.base is None and not base.absolute
            and base.lname in ("my", "self") and base.lname not in ad._attrs
        ):
            # a name of this ad: its expression flattened (a missing one stays)
            found = (_ev._top(ad) if node.absolute else ad)._attrs.get(node.lname)
            if found is None or type(found) is AdExpr:
                return False, node
            if id(found) in seen:  # a reference cycle: HTCondor's Flatten fails
                raise _ev.EvaluationFailed("reference cycle")
            seen.add(id(found))
            ok, v = _flatten(ad, found, seen)
            seen.discard(id(found))
            return (True, v) if ok and not isinstance(v, ClassAd) and type(v) is not list else (False, node)
        # a selection from an expression: evaluated; a record, list or UNDEFINED keeps it
        v = _ev.evaluate(node, ad)
        if v is Value.Undefined or type(v) is list or isinstance(v, ClassAd):
            return False, node
        return True, v
    if t is a.Subscript:
        okb, bv = _flatten(ad, node.base, seen)
        oki, iv = _flatten(ad, node.index, seen)
        if okb and oki:
            return True, _ev.evaluate(a.Subscript(_value_node(bv), _value_node(iv)), ad)
        return False, a.Subscript(
            _value_node(bv) if okb else bv, _value_node(iv) if oki else iv
        )
    if t is a.ListExpr:
        items = []
        for x in node.items:
            ok, v = _flatten(ad, x, seen)
            items.append(_value_node(v) if ok else v)
        return False, a.ListExpr(tuple(items))
    if t is AdExpr:
        # flattened in the record's own scope (HTCondor sets curAd to it)
        inner = ClassAd._from_pairs(node.attrs, None)
        pairs = []
        for name, x in node.attrs:
            ok, v = _flatten(inner, x, seen)
            pairs.append((name, _value_node(v) if ok else v))
        return False, AdExpr(tuple(pairs))
    if t is a.Paren:
        ok, v = _flatten(ad, node.expr, seen)
        return (True, v) if ok else (False, a.Paren(v))
    if t is a.UnaryOp:
        ok, v = _flatten(ad, node.operand, seen)
        return (True, _ev.unary(node.op, v)) if ok else (False, a.UnaryOp(node.op, v))
    if t is a.BinaryOp:
        op = node.op
        if op in ("+", "*", "&", "|", "^"):  # commutative and associative: constants folded first
            vals: list[Any] = []
            trees: list[Node] = []
            stack = [node]
            order: list[Node] = []
            while stack:  # the operands of a same-operator chain, left to right
                n = stack.pop()
                if type(n) is a.BinaryOp and n.op == op:
                    stack.append(n.right)
                    stack.append(n.left)
                else:
                    order.append(n)
            for n in order:
                ok, v = _flatten(ad, n, seen)
                (vals if ok else trees).append(v if ok else v)
            acc = None
            for v in vals:
                acc = v if acc is None else _ev.binary(op, acc, v)
            if not trees:
                return True, acc
            tree = trees[0]
            for tr in trees[1:]:
                tree = a.BinaryOp(op, tree, tr)
            if acc is None:
                return False, tree
            return False, a.BinaryOp(op, _value_node(acc), tree)
        okl, lv = _flatten(ad, node.left, seen)
        okr, rv = _flatten(ad, node.right, seen)
        if okl and okr:
            return True, _ev.binary(op, lv, rv)
        if op in ("&&", "||") and okl != okr:
            known = lv if okl else rv
            probe = _ev.binary(op, known, Value.Undefined) if okl else _ev.binary(op, Value.Undefined, known)
            if type(probe) is bool:
                return True, probe
            if op == "&&" and known is True:
                return False, (rv if okl else lv)
            if not okl:  # HTCondor puts the known operand first
                return False, a.BinaryOp(op, _value_node(rv), lv)
        left = _value_node(lv) if okl else lv
        right = _value_node(rv) if okr else rv
        return False, a.BinaryOp(op, left, right)
    if t is a.Conditional:
        okc, c = _flatten(ad, node.cond, seen)
        if node.then is None:  # a ?: b folds only when both sides have values
            oke, e = _flatten(ad, node.else_, seen)
            if okc and oke:
                return True, (e if c is Value.Undefined else c)
            return False, a.Conditional(
                _value_node(c) if okc else c, None, _value_node(e) if oke else e
            )
        if okc and c is Value.Undefined:
            okc, c = False, node.cond  # HTCondor keeps an UNDEFINED selector as written
        if okc:
            b = _ev._cond(c) if type(c) is not bool else c
            if b is True:
                return _flatten(ad, node.then, seen)
            if b is False:
                return _flatten(ad, node.else_, seen)
            return True, b
        parts = []
        for part in (node.then, node.else_):
            if part is None:
                parts.append(None)
                continue
            ok, v = _flatten(ad, part, seen)
            parts.append(_value_node(v) if ok else v)
        return False, a.Conditional(c, parts[0], parts[1])
    if t is a.FuncCall:
        from roost.classad.functions import SPECIAL_FORMS

        if node.lname not in SPECIAL_FORMS and node.lname not in _ev.functions():
            return True, Value.Error  # an unknown function flattens to ERROR, as in HTCondor
        args = []
        all_values = True
        for x in node.args:
            ok, v = _flatten(ad, x, seen)
            all_values = all_values and ok
            args.append(_value_node(v) if ok else v)
        call = a.FuncCall(node.name, tuple(args))
        if all_values:
            return True, _ev.evaluate(call, ad)
        return False, call
    return False, node
