"""The ClassAd evaluator: compiles each expression tree once into a Python function.

Why compile: a tree-walking interpreter in Python pays a method call per
node; HTCondor's matchmaking evaluates the same few Requirements expressions
millions of times. So each node is turned, the first time it is evaluated,
into the source of one Python function with inline fast paths (int/str
operands, ``TARGET.attr``/``MY.attr`` read straight from the ad's literal
dict) and calls to the generic helpers below for every rare case. The
function is cached in the node's ``_compiled`` slot (nodes are immutable).

A compiled function has the signature ``f(cur, tgt, d=0)``:

- ``cur``: the ClassAd in which bare attribute names are looked up (HTCondor's
  ``curAd``); its ``parent`` chain is the lexical scope.
- ``tgt``: the other ad of a match (``TARGET``), or ``None`` outside a match.
- ``d``: how many attribute references deep this evaluation is.

Scoping follows HTCondor's ``MatchClassAd`` in its default (non-strict,
"old ClassAd semantics") mode: a bare name is looked up in ``cur`` and its
parents; the special names ``MY``/``SELF``, ``PARENT``, ``TOPLEVEL``/``ROOT``
and ``CurrentTime`` resolve where they are first missed; at the top of the
chain ``TARGET``/``OTHER`` name the target ad and ``AD`` the scope ad; a bare
name missing everywhere in a top-level ad is then looked up in the target
(HTCondor's "alternate scope"). An attribute found in the target is evaluated
with the roles swapped, as HTCondor's RIGHT ad sees LEFT as its target.

Cycles (``[a = b; b = a]``) make the reference that closes the cycle
UNDEFINED, exactly like HTCondor's evaluation stack. To keep the common case
cheap, evaluation first runs with only the depth argument ``d``; if it ever
exceeds :data:`FAST_DEPTH` the whole evaluation is rerun in a precise mode
(``d`` set to a huge value) that keeps the stack of (expression, ad) pairs
being evaluated. Evaluation has no side effects, so rerunning is safe. A
reference chain deeper than :data:`MAX_DEPTH` fails the evaluation as
HTCondor's recursion limit does (:class:`EvaluationFailed`).

Constants are parameters of the generated code, so expressions that differ
only in constants (every machine's ``START`` naming its own host, say) share
one compiled code object: compiling costs a code generation pass and a
function object, not a call to Python's compiler.

The precise mode's stack is per thread, so ads can be evaluated from several
threads at once.

Layout: the operators on values are :mod:`roost.classad.operators` and the code
generator :mod:`roost.classad.codegen`. This module is what runs: the entry
points, the depth machinery, the scope rules, the built-ins that need the
evaluation context, and :func:`compile_node`, whose generated code calls them
by name. Each of them can evaluate a sub-expression, which compiles it, so they
and the compiler live together; :func:`list_source` and :func:`refs_node` (what
``strcat({...})`` and ``unresolved()`` show, and what ``ClassAd.externalRefs``
returns) are here for the same reason.

Size: one recursion. Everything here is called from compiled code and can
compile and evaluate again; split, the halves would import each other.

The ClassAd class sits above this module (its methods evaluate) but records are
ClassAds, so it hands itself over when it is imported (:func:`use_classad`).
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from types import FunctionType as _FunctionType
from typing import TYPE_CHECKING, Any

from roost.classad import operators as _operators
from roost.classad import values as _values
from roost.classad.ast import (
    AdExpr,
    AttrRef,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
)
from roost.classad.codegen import _MISS, FAST_DEPTH, _Gen, functions
from roost.classad.errors import ClassAdSyntaxError, EvaluationFailed
from roost.classad.operators import _cond, _fold
from roost.classad.parser import parse_expr
from roost.classad.unparse import pretty_expr, unparse, unparse_value
from roost.classad.values import RelTime, RelTimeLiteral, Value, wrap_int

if TYPE_CHECKING:  # the class itself comes from use_classad at run time
    from roost.classad.classad import ClassAd

UNDEFINED = Value.Undefined
ERROR = Value.Error

MAX_DEPTH = 200
"""Deepest attribute-reference chain evaluated before the evaluation fails (HTCondor: 400 steps)."""

# The ClassAd class and the empty ad that stands for "no scope", from use_classad.
_CA: Any = None
_NO_SCOPE: Any = None

_EMPTY: dict[str, Any] = {}


class _TooDeep(Exception):
    """Internal: the fast mode went too deep; rerun precisely."""


def use_classad(cls: type, no_scope: Any) -> None:
    """Take the ClassAd class, and its empty ad that stands for "no scope", from
    :mod:`roost.classad.classad`, which calls this once, when it is imported.

    Records are ClassAds, so the evaluator, the operators and ``splitTime()``
    make and recognise them; but ClassAd sits above them all (its methods parse
    and evaluate), so they cannot import it. The evaluator and the operators keep
    it in a module global (read on hot paths: no attribute lookup), the rest reads
    :data:`roost.classad.values.RECORD_CLASS`.
    """
    global _CA, _NO_SCOPE
    _CA, _NO_SCOPE = cls, no_scope
    _operators._CA = cls
    _values.RECORD_CLASS = cls


# ---------------------------------------------------------------------------
# Evaluation depth, the stack and the entry points
# ---------------------------------------------------------------------------

_PRECISE = 1 << 40  # the depth argument in precise mode: every dereference checks the stack
_local = threading.local()  # .stack: the (expression, ad) pairs being evaluated, per thread


def _deref(node: Node, ad: Any, tgt: Any, d: int) -> Any:
    """Evaluate an attribute's (non-literal) expression found in ``ad``."""
    if d < FAST_DEPTH:
        return (node._compiled or compile_node(node))(ad, tgt, d + 1)
    return _deref_slow(node, ad, tgt, d)


def _deref_slow(node: Node, ad: Any, tgt: Any, d: int) -> Any:
    if d < _PRECISE:
        raise _TooDeep
    stack = _local.stack
    key = (id(node), id(ad))
    if key in stack:
        return UNDEFINED
    if len(stack) >= MAX_DEPTH:
        raise EvaluationFailed("attribute references nest too deeply")
    stack.add(key)
    try:
        return (node._compiled or compile_node(node))(ad, tgt, d)
    finally:
        stack.discard(key)


def _run_precise(f: Callable[..., Any], cur: Any, tgt: Any) -> Any:
    # Deep chains need more Python frames than the default limit allows. The
    # limit is only ever raised (lowering it again could break another thread).
    if sys.getrecursionlimit() < 5 * MAX_DEPTH + 2000:
        sys.setrecursionlimit(5 * MAX_DEPTH + 2000)
    saved = getattr(_local, "stack", None)
    _local.stack = set()
    try:
        return f(cur, tgt, _PRECISE)
    finally:
        _local.stack = saved


def evaluate(node: Node, cur: Any = None, tgt: Any = None) -> Any:
    """Evaluate ``node`` with bare names looked up in ``cur`` and TARGET being ``tgt``.

    ``cur`` may be None (nothing is defined). Returns a runtime value (see
    :mod:`roost.classad.values`). Raises :class:`EvaluationFailed` only for
    reference chains deeper than HTCondor allows (or a tree too deep to compile).
    """
    if cur is None:
        cur = _NO_SCOPE
    if tgt is cur:
        tgt = None  # HTCondor evaluates without a match ad when target is scope
    try:
        f = node._compiled or compile_node(node)
        try:
            return f(cur, tgt)
        except _TooDeep:
            return _run_precise(f, cur, tgt)
    except RecursionError:
        # a tree deeper than the parser makes (one built in code, or an operand chain
        # the compiler recursed into): a failed evaluation, never a crashed caller
        raise EvaluationFailed("expression nested too deeply to evaluate") from None


def eval_attr(ad: Any, name: str, target: Any = None) -> Any:
    """Value of attribute ``name`` of ``ad`` (UNDEFINED if missing), TARGET being ``target``.

    A failed evaluation (a reference chain too deep) is ERROR here, so a
    daemon never has to catch anything.
    """
    k = name.lower()
    v = ad._lits.get(k, _MISS)
    if v is not _MISS:
        return v
    node = ad._attrs.get(k)
    if node is None:
        return UNDEFINED
    if target is ad:
        target = None
    f = node._compiled or compile_node(node)
    try:
        return f(ad, target)
    except _TooDeep:
        try:
            return _run_precise(f, ad, target)
        except EvaluationFailed:
            return ERROR
    except EvaluationFailed:
        return ERROR


def matches(ad: Any, target: Any) -> bool:
    """True iff ``ad``'s Requirements is true (or a non-zero number) against ``target``.

    UNDEFINED, ERROR, a missing Requirements and other types are False, as in
    classad2's ``ClassAd.matches`` (which tests the other ad's Requirements).
    A failed evaluation is no match (classad2 raises ClassAdException there).
    """
    node = ad._attrs.get("requirements")
    if node is None:
        return False
    if target is ad:
        target = None
    f = node._compiled or compile_node(node)
    try:
        v = f(ad, target)
    except _TooDeep:
        try:
            v = _run_precise(f, ad, target)
        except EvaluationFailed:
            return False
    except EvaluationFailed:
        return False
    if v is True:
        return True
    tv = type(v)
    if tv is int or tv is float:
        return v != 0
    if tv is RelTime:  # HTCondor counts a relative time as its seconds here
        return v.secs != 0
    return False


def symmetric_match(a: Any, b: Any) -> bool:
    """Both ads' Requirements hold against each other (HTCondor's symmetricMatch).

    ``b``'s Requirements is evaluated first, as classad2's ``a.symmetricMatch(b)`` does.
    """
    return matches(b, a) and matches(a, b)


# ---------------------------------------------------------------------------
# Scoping
# ---------------------------------------------------------------------------

_SPECIAL = frozenset(("toplevel", "root", "self", "my", "parent", "currenttime"))
_MATCH_NAMES = frozenset(("target", "other", "ad"))


def _top(ad: Any) -> Any:
    while ad.parent is not None:
        ad = ad.parent
    return ad


def _ctx_for(found: Any, cur: Any, tgt: Any) -> Any:
    """The target to use while evaluating an expression that lives in ``found``."""
    if tgt is None or found is cur:
        return tgt
    r = _top(found)
    c = _top(cur)
    if r is c:
        return tgt
    if r is tgt:
        return c
    return None


def _value_of(found: Any, node: Node, cur: Any, tgt: Any, d: int) -> Any:
    if type(node) is Literal:
        v = node.value
        return float(v.secs) if type(v) is RelTimeLiteral else v
    return _deref(node, found, _ctx_for(found, cur, tgt), d)


def _current_time() -> Any:
    fn = functions().get("time")
    return fn() if fn is not None else UNDEFINED


def _lookup(start: Any, k: str, cur: Any, tgt: Any, alternate: bool, d: int) -> Any:
    """HTCondor's LookupInScope from ``start`` plus the match context and alternate scope."""
    ad = start
    while True:
        n = ad._attrs.get(k)
        if n is not None:
            return _value_of(ad, n, cur, tgt, d)
        sup = ad.parent
        if k in _SPECIAL:
            if k == "self" or k == "my":
                return ad
            if k == "parent":
                if sup is None:
                    # in a match the top ad's parent is HTCondor's context ad
                    return UNDEFINED if tgt is None else _match_context()
                return sup
            if k == "currenttime":
                return _current_time()
            # toplevel / root: in a match the root is HTCondor's match ad, which
            # holds nothing a user can reach by name.
            if tgt is not None:
                return UNDEFINED
            return _root(cur)
        if sup is None:
            break
        ad = sup
    if tgt is not None:
        if k in _MATCH_NAMES:
            c = _top(cur)
            if ad is c:
                return ad if k == "ad" else tgt
            if ad is tgt:
                return ad if k == "ad" else c
            return UNDEFINED
        if alternate and start.parent is None:
            return _lookup(tgt, k, cur, tgt, False, d)
    return UNDEFINED


def _match_context() -> Any:
    """What PARENT of a matched ad shows: HTCondor's context record (for display only)."""
    return _CA._from_pairs(
        [(name, AttrRef(side, absolute=True))
         for name, side in (("ad", "LEFT"), ("my", "LEFT"), ("other", "RIGHT"), ("target", "RIGHT"))],
        None,
    )


def _bare(cur: Any, tgt: Any, k: str, d: int = 0) -> Any:
    """Value of the bare name ``k`` (lower case) evaluated in ``cur``."""
    if cur is _NO_SCOPE:  # evaluated without a scope: every name is UNDEFINED
        return UNDEFINED
    return _lookup(cur, k, cur, tgt, True, d)


def _root(cur: Any) -> Any:
    top = _top(cur)
    if top is _NO_SCOPE:
        # HTCondor has no root ad when an expression is evaluated without a
        # scope, and a reference to it fails the evaluation.
        raise EvaluationFailed("no root ad outside a scope")
    return top


def _absref(cur: Any, tgt: Any, k: str, d: int) -> Any:
    """``.k``: looked up from the root ad (UNDEFINED in a match, whose root is the match ad)."""
    if tgt is not None:
        return UNDEFINED
    return _lookup(_root(cur), k, cur, tgt, False, d)


def _sel(base: Any, k: str, cur: Any, tgt: Any, d: int) -> Any:
    """``base.k`` for an evaluated ``base``: a record, or a list of records (one value each)."""
    if isinstance(base, _CA):
        return _lookup(base, k, cur, tgt, False, d)
    if base is UNDEFINED:
        return UNDEFINED
    if type(base) is list:
        return [_sel_item(item, k, cur, tgt, d) for item in base]
    return ERROR


def _sel_item(item: Any, k: str, cur: Any, tgt: Any, d: int) -> Any:
    if isinstance(item, _CA):
        return _lookup(item, k, cur, tgt, False, d)
    if item is UNDEFINED:
        return UNDEFINED
    if type(item) is list:
        return [_sel_item(x, k, cur, tgt, d) for x in item]
    return ERROR


def _subscript(a: Any, b: Any, cur: Any, tgt: Any, d: int) -> Any:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    if type(a) is list and type(b) is int:
        # HTCondor casts the index to a C int: only its low 32 bits count.
        b = ((b + 0x80000000) & 0xFFFFFFFF) - 0x80000000
        if 0 <= b < len(a):
            return a[b]
        return ERROR
    if type(b) is str and isinstance(a, _CA):
        k = b.lower()
        n = a._attrs.get(k)
        if n is None:
            return UNDEFINED
        return _value_of(a, n, cur, tgt, d)
    return ERROR


def _make_ad(node: AdExpr, cur: Any) -> Any:
    """A record literal's value: a new ClassAd whose lexical parent is the ad it was evaluated in."""
    return _CA._from_pairs(node.attrs, cur)



def _cond_arms(c: Any, cur: Any, tgt: Any, d: int, node: Conditional) -> Any:
    """_cond, plus HTCondor's quirk: a condition that is neither a number nor UNDEFINED
    nor ERROR (a string, list, record or time) makes it evaluate both arms before
    answering ERROR, so a failing arm (random(0)) fails the whole evaluation."""
    v = _cond(c)
    if v is ERROR and c is not ERROR:
        evaluate_in(node.then, cur, tgt, d)  # type: ignore[arg-type]
        evaluate_in(node.else_, cur, tgt, d)
    return v



# ---------------------------------------------------------------------------
# Built-in functions that need the evaluation context or lazy arguments
# ---------------------------------------------------------------------------

def _fn_eval(cur: Any, tgt: Any, d: int, arg: Any) -> Any:
    """eval(s): parse the string and evaluate it where eval() was called."""
    t = type(arg)
    if t is str:
        text = arg
    elif t is bool:
        text = "true" if arg else "false"
    elif t is int:
        text = str(arg)
    elif t is float:
        text = unparse_value(arg)
    elif t is list or isinstance(arg, _CA):
        return arg  # HTCondor unparses and re-parses these: the same value
    else:
        return ERROR
    try:
        node = parse_expr(text)
    except Exception:  # any parse failure is ERROR, as in HTCondor
        return ERROR
    return _deref_expr(node, cur, tgt, d)


def _deref_expr(node: Node, cur: Any, tgt: Any, d: int) -> Any:
    """Evaluate a fresh expression in the current scope, counting depth like a reference."""
    if FAST_DEPTH <= d < _PRECISE:
        raise _TooDeep
    return (node._compiled or compile_node(node))(cur, tgt, d + 1)


def _fn_unparse(cur: Any, args: tuple[Node, ...]) -> Any:
    """unparse(attr): the text of the referenced attribute's expression in the current ad."""
    if len(args) != 1 or type(args[0]) is not AttrRef:
        return ERROR
    name = unparse(args[0])
    node = cur._attrs.get(name.lower())
    return pretty_expr(node) if node is not None else ""


def _fn_unresolved(cur: Any, tgt: Any, d: int, args: tuple[Node, ...]) -> Any:
    """unresolved(attr[, regex]): the external references of attr's expression.

    With one argument, their names joined by commas (``TARGET.`` dropped);
    with a pattern, whether any of them matches it (case-insensitively).
    """
    if not 1 <= len(args) <= 2 or type(args[0]) is not AttrRef:
        return ERROR
    node = _find_ref(cur, tgt, d, args[0])
    if node is None:
        return UNDEFINED
    pattern = None
    if len(args) == 2:
        p = evaluate_in(args[1], cur, tgt, d)
        if type(p) is not str:
            # HTCondor's unresolved() fails the whole evaluation here (classad2 raises)
            raise EvaluationFailed("unresolved(): the pattern is not a string")
        try:
            pattern = re.compile(p, re.IGNORECASE)
        except re.error:
            return ERROR
    names = [n[7:] if n[:7].lower() == "target." else n for n in refs_node(cur, node, True, partial=True) if n]
    if pattern is None:
        return ",".join(names)
    return any(pattern.search(n) for n in names)


def _find_ref(cur: Any, tgt: Any, d: int, ref: AttrRef) -> Node | None:
    """The expression an attribute reference names, without evaluating it (HTCondor's Deref)."""
    base = ref.base
    if ref.absolute:
        return _find_node(_top(cur), ref.lname)
    if base is None:
        n = _find_node(cur, ref.lname)
        if n is None and tgt is not None and cur.parent is None:
            n = _find_node(tgt, ref.lname)
        return n
    ad = evaluate_in(base, cur, tgt, d)
    return _find_node(ad, ref.lname) if isinstance(ad, _CA) else None


def _fn_eval_each(
    cur: Any, tgt: Any, d: int, args: tuple[Node, ...], count: bool
) -> Any:
    """evalInEachContext(expr, ads) / countMatches(expr, ads) (HTCondor's compat layer)."""
    if len(args) != 2:
        return ERROR
    expr, lst = args
    # an attribute reference (bare or MY.) names the expression to evaluate in each ad:
    # countMatches(MY.RequireGPUs, TARGET.AvailableGPUs), as condor_submit writes it
    if type(expr) is AttrRef and not expr.absolute and (
            expr.base is None or (type(expr.base) is AttrRef and expr.base.base is None
                                  and expr.base.lname == "my")):
        found = _find_node(cur, expr.lname)
        if found is not None:
            expr = found
    ads = evaluate_in(lst, cur, tgt, d)
    if ads is UNDEFINED:
        return UNDEFINED if not count else 0
    if type(ads) is not list:
        return ERROR
    results = []
    n = 0
    for item in ads:
        if isinstance(item, _CA):
            # a name the item lacks is looked up in the ad asking (HTCondor makes the
            # asking ad the alternate scope): RequireGPUs' GlobalMemoryMb >= GPUsMinMemory
            # reads the GPU's memory and the job's minimum
            if item.parent is not None:
                item = _CA._from_pairs(((item._names[k], n) for k, n in item._attrs.items()), None)
            v = _deref_expr(expr, item, cur, d)
        else:
            v = ERROR if item is not UNDEFINED else UNDEFINED
        if count:
            if v is True or ((type(v) is int or type(v) is float) and v != 0):
                n += 1
        else:
            results.append(v)
    return n if count else results


def _find_node(cur: Any, k: str) -> Node | None:
    ad = cur
    while ad is not None:
        n = ad._attrs.get(k)
        if n is not None:
            return n
        ad = ad.parent
    return None


def evaluate_in(node: Node, cur: Any, tgt: Any, d: int) -> Any:
    """Evaluate a sub-expression from inside an evaluation (no mode switch)."""
    return (node._compiled or compile_node(node))(cur, tgt, d)



def _list_text(v: list[Any], node: Node, cur: Any, tgt: Any) -> Any:
    """The text HTCondor shows for list ``v``, the value of ``node``: the unparsed list
    expression it comes from (elements unevaluated), else the unparsed values."""
    try:
        src = list_source(node, cur, tgt)
    except EvaluationFailed:
        src = None
    return unparse(src) if src is not None else v


# ---------------------------------------------------------------------------
# References and list sources: walks over trees that evaluate as they go
# ---------------------------------------------------------------------------

class _RefsFailed(Exception):
    """HTCondor's Get*References gives up: a selection from a value that is no record."""


def refs_node(ad: ClassAd, root: Node, external: bool, partial: bool = False) -> list[str]:
    """The references of ``root``; raises _RefsFailed where HTCondor gives up, unless
    ``partial``: then no names (what unresolved() sees)."""
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
            while type(base) is Paren:
                base = base.expr
            self_ref = (
                type(base) is AttrRef
                and base.base is None
                and not base.absolute
                and base.lname in ("my", "self")
                and lookup(scope, base.lname) is None
            )
            if base is None or self_ref:
                start = _top(scope) if node.absolute else scope
                found = lookup(start, node.lname)
                if found is None:
                    if external and node.lname not in _SPECIAL:
                        add(node.name)
                else:
                    follow(found, node.name)
                return
            if not external:
                walk(base, scope)
            try:
                v = evaluate(base, scope, None)
            except EvaluationFailed:
                raise _RefsFailed from None
            if v is Value.Undefined:
                if external:
                    add(unparse(node))  # the whole selection, as HTCondor unparses it
            elif not isinstance(v, _CA):
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


def list_source(node: Node, scope: Any, target: Any) -> Node | None:
    """The list expression (a ListExpr) that ``node``, evaluated in ``scope``, plainly comes from.

    HTCondor keeps list elements unevaluated, so where it shows a list (classad2's
    conversion to Python, string() and strcat()) it shows the expressions; roost
    evaluates lists eagerly and uses this to recover them. None when the list
    comes from somewhere this walk does not follow (a function result, ...).
    """
    for _ in range(50):
        t = type(node)
        if t is Paren:
            node = node.expr
            continue
        if t is ListExpr:
            return node
        if t is FuncCall and node.lname in ("debug", "eval") and len(node.args) == 1:
            is_eval = node.lname == "eval"
            node = node.args[0]  # both hand a list argument back as it is
            if is_eval and type(node) is not ListExpr:
                text = evaluate(node, scope, target)
                if type(text) is str:
                    try:  # eval("{...}"): the list expression in the string
                        node = parse_expr(text)
                    except ClassAdSyntaxError:
                        break
            continue
        if t is Conditional or (t is FuncCall and node.lname == "ifthenelse" and len(node.args) == 3):
            cond, then, other = (
                (node.cond, node.then, node.else_) if t is Conditional else node.args
            )
            c = evaluate(cond, scope, target)
            if then is None:  # elvis: the condition itself unless UNDEFINED
                node = other if c is Value.Undefined else cond
            elif c is True or (type(c) in (int, float) and c != 0):
                node = then
            elif c is False or type(c) in (int, float):
                node = other
            else:
                break
            continue
        if t is Subscript:
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
            scope, target = _CA._from_pairs(base.attrs, scope), None
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
            rec = evaluate(base, scope, target) if scope is not None else None
            if not isinstance(rec, _CA):
                break
            found = rec._attrs.get(node.lname)  # r.l: l of the record r only
            scope = rec
        if found is None:
            break
        node = found
    return None


# ---------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------

_FN_HEADER = (
    "def _f(cur, tgt, d=0, _type=type, _int=int, _float=float, _str=str, _bool=bool, "
    "_M=_MISS, _U=UNDEFINED, _E=ERROR, _wrap=wrap_int, _len=len, _CAt=None):"
)


_MAKERS: dict[str, Callable[..., Any]] = {}
"""Generated functions by source text: structurally equal expressions (differing
only in constants) are compiled once; each node gets a copy with its constants."""
_N_FIXED = _FN_HEADER.count("=")
_MAX_MAKERS = 20000
_NS: dict[str, Any] = {}


def compile_node(node: Node) -> Callable[[Any, Any], Any]:
    """The compiled function of ``node`` (made once, cached on the node)."""
    f = node._compiled
    if f is not None:
        return f
    g = _Gen(compile_node)
    result = g.gen(node, 1)
    params = "".join(f", {name}=None" for name in g.consts)
    lines = [_FN_HEADER.replace("_CAt=None", "_CAt=None" + params)]
    if g.uses_l:
        lines.append("    L = cur._lits")
        lines.append("    A = cur._attrs")
    if g.uses_t:
        lines.append("    T = tgt if (tgt is not None and cur._plain) else _bare(cur, tgt, 'target', d)")
        lines.append("    TL = T._lits if _type(T) is _CAt else _EMPTY")
        lines.append("    TA = T._attrs if _type(T) is _CAt else _EMPTY")
        lines.append("    TX = T is tgt and cur.parent is None")
    if g.uses_m:
        lines.append("    M = cur if cur._plain else _bare(cur, tgt, 'my', d)")
        lines.append("    ML = M._lits if _type(M) is _CAt else _EMPTY")
    lines.extend(g.lines)
    lines.append(f"    return {result}")
    src = "\n".join(lines)
    proto = _MAKERS.get(src)
    if proto is None:
        if not _NS:
            _NS.update(_HELPERS)
            _NS.update(
                _MISS=_MISS, UNDEFINED=UNDEFINED, ERROR=ERROR, wrap_int=wrap_int,
                _EMPTY=_EMPTY, _fold=_fold, _compile=compile_node,
            )
        defined: dict[str, Any] = {}  # a fresh namespace per exec: safe with threads
        exec(compile(src, "<classad>", "exec"), _NS, defined)
        proto = defined["_f"]
        if len(_MAKERS) >= _MAX_MAKERS:
            _MAKERS.clear()
        _MAKERS[src] = proto
    # The constants travel as default arguments (read like locals, and kept in
    # one tuple next to the fixed ones for locality).
    fixed = proto.__defaults__[: _N_FIXED - 1] + (_CA,)
    f = _FunctionType(proto.__code__, _NS, "_f", fixed + tuple(g.consts.values()))
    f.__doc__ = src  # the generated source, for debugging
    node._compiled = f
    return f


_HELPERS: dict[str, Any] = {
    **_operators._HELPERS,
    **{
        name: obj
        for name, obj in list(globals().items())
        if name.startswith("_") and callable(obj) and not isinstance(obj, type)
    },
}
"""What the compiled code calls by name: the operators' helpers and this module's."""
