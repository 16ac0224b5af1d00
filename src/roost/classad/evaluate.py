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
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable
from types import FunctionType as _FunctionType
from typing import Any

from roost.classad.ast import (
    AdExpr,
    AttrRef,
    BinaryOp,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    UnaryOp,
)
from roost.classad.values import (
    INT64_MAX,
    INT64_MIN,
    AbsTime,
    RelTime,
    RelTimeLiteral,
    Value,
    wrap_int,
)

UNDEFINED = Value.Undefined
ERROR = Value.Error

FAST_DEPTH = 60
"""Attribute-reference depth above which evaluation switches to the precise (stack) mode."""

MAX_DEPTH = 200
"""Deepest attribute-reference chain evaluated before the evaluation fails (HTCondor: 400 steps)."""

# Set by roost.classad.classad once the ClassAd class exists (it imports this module):
# the class, and the empty ad that stands for "no scope".
_CA: Any = None
_NO_SCOPE: Any = None

_MISS = object()  # "not in the dict" marker
_BAD = object()  # a && / || operand that is neither boolean-equivalent nor exceptional
_EMPTY: dict[str, Any] = {}


class EvaluationFailed(Exception):
    """The evaluation itself failed (too deep a reference chain), as HTCondor's Evaluate() returning false."""


class _TooDeep(Exception):
    """Internal: the fast mode went too deep; rerun precisely."""


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
    reference chains deeper than HTCondor allows.
    """
    if cur is None:
        cur = _NO_SCOPE
    if tgt is cur:
        tgt = None  # HTCondor evaluates without a match ad when target is scope
    f = node._compiled or compile_node(node)
    try:
        return f(cur, tgt)
    except _TooDeep:
        return _run_precise(f, cur, tgt)


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


# ---------------------------------------------------------------------------
# Operators (generic paths; the compiled code inlines the common cases)
# ---------------------------------------------------------------------------

_ASCII_LOWER = {c: c + 32 for c in range(65, 91)}


def _fold(s: str) -> str:
    """Case folding as C's strcasecmp does it: ASCII letters only."""
    return s.lower() if s.isascii() else s.translate(_ASCII_LOWER)


def _exceptional(a: Any, b: Any) -> Any:
    if a is ERROR or b is ERROR:
        return ERROR
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    return None


_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda x, y: x < y,
    "<=": lambda x, y: x <= y,
    ">": lambda x, y: x > y,
    ">=": lambda x, y: x >= y,
    "==": lambda x, y: x == y,
    "!=": lambda x, y: x != y,
}


def _compare(op: str, a: Any, b: Any) -> Any:
    """<, <=, >, >=, ==, != (strict): numbers promote, strings compare ignoring case."""
    ta, tb = type(a), type(b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return _CMP[op](a, b)
    x = _exceptional(a, b)
    if x is not None:
        return x
    if isinstance(a, _CA) or isinstance(b, _CA) or ta is list or tb is list:
        return ERROR
    if ta is str or tb is str:
        if ta is str and tb is str:
            fa, fb = _fold(a), _fold(b)
            return _CMP[op](fa, fb)
        return ERROR
    if ta is AbsTime or tb is AbsTime:
        if ta is AbsTime and tb is AbsTime:
            return _CMP[op](a.secs, b.secs)
        return ERROR
    if ta is RelTime or tb is RelTime:
        if ta is RelTime and tb is RelTime:
            return _CMP[op](a.secs, b.secs)
        return ERROR
    # booleans promote to integers
    return _CMP[op](int(a) if ta is bool else a, int(b) if tb is bool else b)


def _cmp_lt(a: Any, b: Any) -> Any:
    return _compare("<", a, b)


def _cmp_le(a: Any, b: Any) -> Any:
    return _compare("<=", a, b)


def _cmp_gt(a: Any, b: Any) -> Any:
    return _compare(">", a, b)


def _cmp_ge(a: Any, b: Any) -> Any:
    return _compare(">=", a, b)


def _cmp_eq(a: Any, b: Any) -> Any:
    return _compare("==", a, b)


def _cmp_ne(a: Any, b: Any) -> Any:
    return _compare("!=", a, b)


def _meta_eq(a: Any, b: Any) -> Any:
    """``=?=``: same type and same value, strings case-sensitively; never UNDEFINED."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is Value:
        return a is b
    if ta is str or ta is int or ta is bool or ta is float:
        return a == b
    if ta is AbsTime:
        return a.secs == b.secs and a.offset == b.offset
    if ta is RelTime:
        return a.secs == b.secs
    return ERROR  # lists and records


def _meta_ne(a: Any, b: Any) -> Any:
    r = _meta_eq(a, b)
    return r if r is ERROR else not r


def _arith_types_ok(v: Any) -> bool:
    t = type(v)
    return t is int or t is float or t is bool or t is AbsTime or t is RelTime


def _int_div(a: int, b: int) -> Any:
    if b == 0:
        return ERROR
    if a == INT64_MIN and b == -1:
        return INT64_MAX
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a: int, b: int) -> Any:
    if b == 0:
        return ERROR
    if a == INT64_MIN and b == -1:
        return 0
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _ieee_div(x: float, y: float) -> float:
    """C's double division: x/0 is a signed infinity (or NaN), not an exception."""
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _real(op: str, a: float, b: float) -> Any:
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "/":
        r = _ieee_div(a, b)
    else:  # % on reals is an error in HTCondor
        return ERROR
    if r == math.inf:  # HTCondor checks the result against HUGE_VAL (only +inf)
        return ERROR
    return r


def _time_arith(op: str, a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if op == "+":
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs + int(b.secs), a.offset)
        if ta is RelTime and tb is AbsTime:
            return AbsTime(b.secs + int(a.secs), b.offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(float(a.secs) + b.secs)
    elif op == "-":
        if ta is AbsTime and tb is AbsTime:
            return RelTime(float(a.secs - b.secs))
        if ta is AbsTime and tb is RelTime:
            return AbsTime(a.secs - int(b.secs), a.offset)
        if ta is RelTime and tb is RelTime:
            return RelTime(float(a.secs) - b.secs)
    elif op == "*" or op == "/":
        if ta is RelTime and (tb is int or tb is float):
            if op == "*":
                return RelTime(float(a.secs) * b)
            return RelTime(_ieee_div(float(a.secs), float(b)))
        if (ta is int or ta is float) and tb is RelTime and op == "*":
            return RelTime(a * float(b.secs))
    return ERROR


def _arith(op: str, a: Any, b: Any) -> Any:
    """+ - * / % (strict): 64-bit wrapping integers, reals, time arithmetic."""
    x = _exceptional(a, b)
    if x is not None:
        return x
    if not _arith_types_ok(a) or not _arith_types_ok(b):
        return ERROR
    ta, tb = type(a), type(b)
    if ta is AbsTime or tb is AbsTime or ta is RelTime or tb is RelTime:
        return _time_arith(op, a, b)
    if ta is bool:
        a = int(a)
        ta = int
    if tb is bool:
        b = int(b)
        tb = int
    if ta is int and tb is int:
        if op == "+":
            return wrap_int(a + b)
        if op == "-":
            return wrap_int(a - b)
        if op == "*":
            return wrap_int(a * b)
        if op == "/":
            return _int_div(a, b)
        return _int_mod(a, b)
    return _real(op, float(a), float(b))


def _add(a: Any, b: Any) -> Any:
    return _arith("+", a, b)


def _sub(a: Any, b: Any) -> Any:
    return _arith("-", a, b)


def _mul(a: Any, b: Any) -> Any:
    return _arith("*", a, b)


def _div(a: Any, b: Any) -> Any:
    return _arith("/", a, b)


def _mod(a: Any, b: Any) -> Any:
    return _arith("%", a, b)


def _bitwise(op: str, a: Any, b: Any) -> Any:
    """& | ^ << >> >>> (strict, integers only; shifts behave as on x86-64)."""
    x = _exceptional(a, b)
    if x is not None:
        return x
    if type(a) is not int or type(b) is not int:
        return ERROR
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return wrap_int(a << (b & 63))
    if op == ">>":
        if a >= 0:
            return a >> (b & 63)
        return a >> max(0, min(64, b))
    # >>> logical shift right
    if a >= 0:
        return a >> (b & 63)
    v = (a >> 1) & INT64_MAX
    return v >> ((b - 1) & 63)


def _band(a: Any, b: Any) -> Any:
    return _bitwise("&", a, b)


def _bor(a: Any, b: Any) -> Any:
    return _bitwise("|", a, b)


def _bxor(a: Any, b: Any) -> Any:
    return _bitwise("^", a, b)


def _shl(a: Any, b: Any) -> Any:
    return _bitwise("<<", a, b)


def _shr(a: Any, b: Any) -> Any:
    return _bitwise(">>", a, b)


def _ushr(a: Any, b: Any) -> Any:
    return _bitwise(">>>", a, b)


def _neg(a: Any) -> Any:
    t = type(a)
    if t is int:
        return wrap_int(-a)
    if t is float:
        return -a
    if t is RelTime:
        return RelTime(-a.secs)
    if t is Value:
        return a
    return ERROR


def _pos(a: Any) -> Any:
    t = type(a)
    if t is int or t is float or t is RelTime or t is Value:
        return a
    return ERROR


def _not(a: Any) -> Any:
    t = type(a)
    if t is bool:
        return not a
    if t is int or t is float:
        return a == 0
    if t is Value:
        return a
    return ERROR


def _bnot(a: Any) -> Any:
    t = type(a)
    if t is int:
        return ~a
    if t is Value:
        return a
    return ERROR


def _logic_pre(a: Any) -> Any:
    """Normalise the left operand of && / || (already known not to be a bool)."""
    t = type(a)
    if t is int or t is float:
        return a != 0
    if a is UNDEFINED or a is ERROR:
        return a
    return _BAD


def _and_post(a: Any, b: Any) -> Any:
    """``a && b`` once the right side had to be evaluated; ``a`` is True, UNDEFINED or _BAD."""
    tb = type(b)
    if tb is int or tb is float:
        b = b != 0
    elif tb is not bool and b is not UNDEFINED and b is not ERROR:
        return ERROR
    if a is _BAD:
        return ERROR
    if a is True:
        return b
    if b is True:
        return UNDEFINED
    return b  # False, UNDEFINED or ERROR


def _or_post(a: Any, b: Any) -> Any:
    """``a || b`` once the right side had to be evaluated; ``a`` is False, UNDEFINED or _BAD."""
    tb = type(b)
    if tb is int or tb is float:
        b = b != 0
    elif tb is not bool and b is not UNDEFINED and b is not ERROR:
        return ERROR
    if a is _BAD:
        return ERROR
    if a is False:
        return b
    if b is False:
        return UNDEFINED
    return b  # True, UNDEFINED or ERROR


def _cond(c: Any) -> Any:
    """Normalise a ?: condition that is not a bool: True/False, or the value of the whole."""
    t = type(c)
    if t is int or t is float:
        return c != 0
    if c is UNDEFINED:
        return UNDEFINED
    return ERROR


def _cond_arms(c: Any, cur: Any, tgt: Any, d: int, node: Conditional) -> Any:
    """_cond, plus HTCondor's quirk: a condition that is neither a number nor UNDEFINED
    nor ERROR (a string, list, record or time) makes it evaluate both arms before
    answering ERROR, so a failing arm (random(0)) fails the whole evaluation."""
    v = _cond(c)
    if v is ERROR and c is not ERROR:
        evaluate_in(node.then, cur, tgt, d)  # type: ignore[arg-type]
        evaluate_in(node.else_, cur, tgt, d)
    return v


_BINARY_HELPERS: dict[str, str] = {
    "+": "_add", "-": "_sub", "*": "_mul", "/": "_div", "%": "_mod",
    "<": "_cmp_lt", "<=": "_cmp_le", ">": "_cmp_gt", ">=": "_cmp_ge",
    "==": "_cmp_eq", "!=": "_cmp_ne", "=?=": "_meta_eq", "=!=": "_meta_ne",
    "&": "_band", "|": "_bor", "^": "_bxor", "<<": "_shl", ">>": "_shr", ">>>": "_ushr",
}  # fmt: skip

_BOOLISH_OPS = frozenset(("<", "<=", ">", ">=", "==", "!=", "=?=", "=!="))

_UNARY_HELPERS = {"-": "_neg", "+": "_pos", "!": "_not", "~": "_bnot"}


def binary(op: str, a: Any, b: Any) -> Any:
    """Apply a strict or meta binary operator to two values (not && / ||, which are lazy)."""
    if op == "&&":
        if a is False:
            return False
        if a is not True:
            a = _logic_pre(a)
            if a is False or a is ERROR:
                return a
        return b if (a is True and type(b) is bool) else _and_post(a, b)
    if op == "||":
        if a is True:
            return True
        if a is not False:
            a = _logic_pre(a)
            if a is True or a is ERROR:
                return a
        return b if (a is False and type(b) is bool) else _or_post(a, b)
    return _HELPERS[_BINARY_HELPERS[op]](a, b)


def unary(op: str, a: Any) -> Any:
    """Apply a unary operator to a value."""
    return _HELPERS[_UNARY_HELPERS[op]](a)


# ---------------------------------------------------------------------------
# Built-in functions that need the evaluation context or lazy arguments
# ---------------------------------------------------------------------------

_functions_cache: dict[str, Callable[..., Any]] | None = None


def functions() -> dict[str, Callable[..., Any]]:
    """The table of ordinary built-ins (engineer C's module), loaded on first use."""
    global _functions_cache
    if _functions_cache is None:
        from roost.classad.functions import FUNCTIONS

        _functions_cache = FUNCTIONS
    return _functions_cache


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
        from roost.classad.unparse import unparse_value

        text = unparse_value(arg)
    elif t is list or isinstance(arg, _CA):
        return arg  # HTCondor unparses and re-parses these: the same value
    else:
        return ERROR
    try:
        from roost.classad.parser import parse_expr

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
    from roost.classad.printing import pretty_expr
    from roost.classad.unparse import unparse

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
        import re

        try:
            pattern = re.compile(p, re.IGNORECASE)
        except re.error:
            return ERROR
    from roost.classad.classad import _refs_node

    names = [n[7:] if n[:7].lower() == "target." else n for n in _refs_node(cur, node, True, partial=True) if n]
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
    if type(expr) is AttrRef and expr.base is None and not expr.absolute:
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
            v = _deref_expr(expr, item, tgt, d)
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


# ---------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------

_HELPERS: dict[str, Any] = {
    name: obj
    for name, obj in list(globals().items())
    if name.startswith("_") and callable(obj) and not isinstance(obj, type)
}

_INDENT_LIMIT = 24  # deeper sub-expressions become functions of their own


class _Gen:
    """Generates the source of one function for one expression tree."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: dict[str, Any] = {}
        self.n = 0
        self.uses_l = False
        self.uses_t = False
        self.uses_m = False
        self.boolish: set[str] = set()  # names whose value is a bool, UNDEFINED or ERROR
        self.memo: dict[int, Any] = {}  # _fold_constant results by node id

    def tmp(self) -> str:
        self.n += 1
        return f"v{self.n}"

    def const(self, value: Any) -> str:
        name = f"c{len(self.consts)}"
        if type(value) is str and len(value) <= 64:
            value = sys.intern(value)  # ads intern short strings too: == is then `is`
        self.consts[name] = value
        return name

    def emit(self, ind: int, line: str) -> None:
        self.lines.append("    " * ind + line)

    def literal(self, v: Any) -> str:
        # Numbers and strings become parameters of the generated code, so that
        # expressions differing only in constants share one compiled code object.
        if type(v) is bool:
            return repr(v)
        if v is UNDEFINED:
            return "_U"
        if v is ERROR:
            return "_E"
        return self.const(v)

    # Each gen_* emits statements at indent ``ind`` and returns an expression
    # (a name or a constant) holding the node's value.
    def gen(self, node: Node, ind: int) -> str:
        t = type(node)
        if t is Literal:
            v = node.value
            if type(v) is RelTimeLiteral:
                # HTCondor quirk: a relative-time *literal* (what the parser makes of
                # relTime("1:00")) evaluates to a real, the seconds; computed relative
                # times (relTime(60)) stay relative times.
                v = float(v.secs)
            return self.literal(v)
        if t is Paren:
            return self.gen(node.expr, ind)
        folded = _fold_constant(node, self.memo)
        if folded is not _MISS:
            return self.literal(folded)
        if ind > _INDENT_LIMIT and t is not AttrRef:
            f = node._compiled or compile_node(node)
            r = self.tmp()
            self.emit(ind, f"{r} = {self.const(f)}(cur, tgt, d)")
            return r
        if t is AttrRef:
            return self.gen_attr(node, ind)
        if t is BinaryOp:
            # Walk down the left operands iteratively: parsers build long
            # left-associative chains (a || b || c ...) that would otherwise
            # recurse once per operand.
            spine = [node]
            n = node.left
            while (
                type(n) is BinaryOp
                and _fold_constant(n, self.memo) is _MISS
                and len(spine) < 100000
            ):
                spine.append(n)
                n = n.left
            acc = self.gen(n, ind)
            for s in reversed(spine):
                acc = self.gen_binary(s, ind, acc)
            return acc
        if t is UnaryOp:
            a = self.gen(node.operand, ind)
            r = self.tmp()
            if node.op == "-":
                self.emit(ind, f"{r} = -{a} if _type({a}) is _float else _neg({a})")
            else:
                self.emit(ind, f"{r} = {_UNARY_HELPERS[node.op]}({a})")
            return r
        if t is Conditional:
            return self.gen_cond(node, ind)
        if t is FuncCall:
            return self.gen_call(node, ind)
        if t is ListExpr:
            items = [self.gen(item, ind) for item in node.items]
            r = self.tmp()
            self.emit(ind, f"{r} = [{', '.join(items)}]")
            return r
        if t is AdExpr:
            r = self.tmp()
            self.emit(ind, f"{r} = _make_ad({self.const(node)}, cur)")
            return r
        if t is Subscript:
            a = self.gen(node.base, ind)
            b = self.gen(node.index, ind)
            r = self.tmp()
            self.emit(ind, f"{r} = _subscript({a}, {b}, cur, tgt, d)")
            return r
        raise TypeError(f"cannot evaluate node {node!r}")

    def gen_attr(self, node: AttrRef, ind: int) -> str:
        k = repr(node.lname)
        r = self.tmp()
        if node.absolute:
            self.emit(ind, f"{r} = _absref(cur, tgt, {k}, d)")
            return r
        base = node.base
        while type(base) is Paren:
            base = base.expr
        if base is None:
            # literal in this ad / other expression in this ad / the scope rules
            self.uses_l = True
            self.emit(ind, f"if {k} in L: {r} = L[{k}]")
            self.emit(ind, f"elif {k} in A:")
            self.emit(ind + 1, f"{r} = A[{k}]")
            self.emit(
                ind + 1,
                f"{r} = ({r}._compiled or _compile({r}))(cur, tgt, d + 1) "
                f"if d < {FAST_DEPTH} else _deref_slow({r}, cur, tgt, d)",
            )
            self.emit(ind, f"else: {r} = _bare(cur, tgt, {k}, d)")
            return r
        if type(base) is AttrRef and base.base is None and not base.absolute:
            if base.lname == "target":
                self.uses_t = True
                self.emit(ind, f"if {k} in TL: {r} = TL[{k}]")
                # an expression in the target: evaluated there, with this ad as its target
                self.emit(ind, f"elif TX and {k} in TA:")
                self.emit(ind + 1, f"{r} = TA[{k}]")
                self.emit(
                    ind + 1,
                    f"{r} = ({r}._compiled or _compile({r}))(T, cur, d + 1) "
                    f"if d < {FAST_DEPTH} else _deref_slow({r}, T, cur, d)",
                )
                self.emit(ind, f"else: {r} = _sel(T, {k}, cur, tgt, d)")
                return r
            if base.lname == "my":
                self.uses_m = True
                self.emit(ind, f"if {k} in ML: {r} = ML[{k}]")
                self.emit(ind, f"elif M is cur and {k} in cur._attrs:")
                self.emit(ind + 1, f"{r} = cur._attrs[{k}]")
                self.emit(
                    ind + 1,
                    f"{r} = ({r}._compiled or _compile({r}))(cur, tgt, d + 1) "
                    f"if d < {FAST_DEPTH} else _deref_slow({r}, cur, tgt, d)",
                )
                self.emit(ind, f"else: {r} = _sel(M, {k}, cur, tgt, d)")
                return r
        b = self.gen(base, ind)
        self.emit(ind, f"{r} = _sel({b}, {k}, cur, tgt, d)")
        return r

    def gen_binary(self, node: BinaryOp, ind: int, a: str) -> str:
        """``node`` whose left operand is already generated into ``a``."""
        op = node.op
        if op == "&&" or op == "||":
            return self.gen_logic(node, ind, a)
        rlit = _fold_constant(node.right, self.memo)
        b = self.gen(node.right, ind)
        r = self.tmp()
        helper = _BINARY_HELPERS[op]
        if op in _BOOLISH_OPS:
            self.boolish.add(r)
        if op in ("==", "!=") and type(rlit) is str:
            # attr == "literal": exact match first, then ASCII case folding (which
            # keeps the length, so a length check rules most strings out cheaply)
            lit = self.const(rlit)
            low = self.const(_fold(rlit))
            n = self.const(len(rlit))
            if rlit.isascii():
                eq = f"{a} == {lit} or (_len({a}) == {n} and {a}.lower() == {low} and {a}.isascii())"
            else:
                eq = f"{a} == {lit} or (_len({a}) == {n} and _fold({a}) == {low})"
            if op == "==":
                self.emit(ind, f"if _type({a}) is _str: {r} = {eq}")
            else:
                self.emit(ind, f"if _type({a}) is _str: {r} = not ({eq})")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        if op in ("<", "<=", ">", ">=", "==", "!="):
            if type(rlit) is int:
                cond = f"_type({a}) is _int"
            elif type(rlit) is float:
                cond = f"_type({a}) is _float"
            else:
                cond = f"_type({a}) is _int and _type({b}) is _int"
            self.emit(ind, f"if {cond}: {r} = {a} {op} {b}")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        if op in ("+", "-", "*"):
            if type(rlit) is int:
                cond = f"_type({a}) is _int"
            else:
                cond = f"_type({a}) is _int and _type({b}) is _int"
            self.emit(ind, f"if {cond}:")
            self.emit(ind + 1, f"{r} = {a} {op} {b}")
            self.emit(ind + 1, f"if not {INT64_MIN} <= {r} <= {INT64_MAX}: {r} = _wrap({r})")
            self.emit(ind, f"else: {r} = {helper}({a}, {b})")
            return r
        self.emit(ind, f"{r} = {helper}({a}, {b})")
        return r

    def gen_logic(self, node: BinaryOp, ind: int, a: str) -> str:
        r = self.tmp()
        if node.op == "&&":
            stop, go, post = "False", "True", "_and_post"
        else:
            stop, go, post = "True", "False", "_or_post"
        if a != r:
            self.emit(ind, f"{r} = {a}")
        if a not in self.boolish:
            # numbers count as booleans, strings and lists are errors
            self.emit(ind, f"if {r} is not True and {r} is not False: {r} = _logic_pre({r})")
        self.emit(ind, f"if {r} is not {stop} and {r} is not _E:")
        b = self.gen(node.right, ind + 1)
        if b in self.boolish:
            self.emit(ind + 1, f"{r} = {b} if {r} is {go} else {post}({r}, {b})")
        else:
            self.emit(ind + 1, f"if {r} is {go} and _type({b}) is _bool: {r} = {b}")
            self.emit(ind + 1, f"else: {r} = {post}({r}, {b})")
        self.boolish.add(r)
        return r

    def gen_cond(self, node: Conditional, ind: int) -> str:
        c = self.gen(node.cond, ind)
        r = self.tmp()
        if node.then is None:  # elvis
            self.emit(ind, f"{r} = {c}")
            self.emit(ind, f"if {r} is _U:")
            e = self.gen(node.else_, ind + 1)
            self.emit(ind + 1, f"{r} = {e}")
            return r
        self.emit(ind, f"{r} = {c}")
        self.emit(ind, f"if {r} is not True and {r} is not False: {r} = _cond_arms({r}, cur, tgt, d, {self.const(node)})")
        self.emit(ind, f"if {r} is True:")
        th = self.gen(node.then, ind + 1)
        self.emit(ind + 1, f"{r} = {th}")
        self.emit(ind, f"elif {r} is False:")
        el = self.gen(node.else_, ind + 1)
        self.emit(ind + 1, f"{r} = {el}")
        return r

    def gen_call(self, node: FuncCall, ind: int) -> str:
        name = node.lname
        args = node.args
        r = self.tmp()
        if name == "ifthenelse":
            if len(args) != 3:
                return "_E"
            c = self.gen(args[0], ind)
            self.emit(ind, f"{r} = {c}")
            self.emit(ind, f"if _type({r}) is not _bool: {r} = _ite_cond({r})")
            self.emit(ind, f"if {r} is True:")
            th = self.gen(args[1], ind + 1)
            self.emit(ind + 1, f"{r} = {th}")
            self.emit(ind, f"elif {r} is False:")
            el = self.gen(args[2], ind + 1)
            self.emit(ind + 1, f"{r} = {el}")
            return r
        if name == "eval":
            if len(args) != 1:
                return "_E"
            a = self.gen(args[0], ind)
            self.emit(ind, f"{r} = _fn_eval(cur, tgt, d, {a})")
            return r
        if name == "unparse":
            self.emit(ind, f"{r} = _fn_unparse(cur, {self.const(args)})")
            return r
        if name in ("evalineachcontext", "countmatches"):
            count = name == "countmatches"
            self.emit(ind, f"{r} = _fn_eval_each(cur, tgt, d, {self.const(args)}, {count})")
            return r
        if name == "unresolved":
            self.emit(ind, f"{r} = _fn_unresolved(cur, tgt, d, {self.const(args)})")
            return r
        fn = functions().get(name)
        if fn is None:
            return "_E"
        if name in _MAY_FAIL:
            fn = _failing_call(name, fn)
        vals = [self.gen(a, ind) for a in args]
        if name in _LIST_AS_TEXT:
            # These show a list argument as text; HTCondor's lists are lazy, so the
            # text is that of the list *expression* ("{ 1 + 1,x }"), see _list_text.
            n = len(args)
            for i, a in enumerate(args):
                if type(a) is Literal or (name == "join" and n <= 2 and i == n - 1):
                    continue  # join(sep, list) joins the items
                v = self.tmp()
                self.emit(ind, f"{v} = {vals[i]}")
                self.emit(ind, f"if _type({v}) is list: {v} = _list_text({v}, {self.const(a)}, cur, tgt)")
                vals[i] = v
        self.emit(ind, f"{r} = {self.const(fn)}({', '.join(vals)})")
        return r


# Built-ins for which HTCondor's Evaluate() itself fails (not ERROR) on some
# arguments: userHome with a wrong argument count, random(n <= 0), absTime(n, -1).
# The whole evaluation is then aborted (classad2 raises), see fails_evaluation.
_MAY_FAIL = frozenset(("userhome", "random", "abstime"))


def _failing_call(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` raising :class:`EvaluationFailed` where HTCondor's evaluation fails."""
    from roost.classad.functions import fails_evaluation

    def call(*args: Any) -> Any:
        r = fn(*args)
        if r is ERROR and fails_evaluation(name, args):
            raise EvaluationFailed(f"{name}() failed to evaluate")
        return r

    return call


# Built-ins that turn a list argument into its text (all of them, for join all but
# the list of join(sep, list)/join(list)).
_LIST_AS_TEXT = frozenset((
    "strcat", "string", "toupper", "tolower", "strcmp", "stricmp", "join", "versioncmp",
    "versiongt", "versionge", "versionlt", "versionle", "versioneq", "version_in_range",
))  # fmt: skip


def _list_text(v: list[Any], node: Node, cur: Any, tgt: Any) -> Any:
    """The text HTCondor shows for list ``v``, the value of ``node``: the unparsed list
    expression it comes from (elements unevaluated), else the unparsed values."""
    from roost.classad.classad import list_source
    from roost.classad.unparse import unparse

    try:
        src = list_source(node, cur, tgt)
    except EvaluationFailed:
        src = None
    return unparse(src) if src is not None else v


def _ite_cond(c: Any) -> Any:
    """ifThenElse's condition: like ?: but every non-number, non-undefined value is ERROR."""
    t = type(c)
    if t is int or t is float:
        return c != 0
    if c is UNDEFINED:
        return UNDEFINED
    return ERROR


def _fold_constant(node: Node, memo: dict[int, Any] | None = None) -> Any:
    """The value of an operator tree over scalar literals, or _MISS (folded at compile time).

    Iterative along left operands, so long ``a || b || c ...`` chains do not
    hit Python's recursion limit; ``memo`` (by node id) keeps it linear.
    """
    if memo is None:
        memo = {}
    spine: list[Node] = []
    n = node
    while True:
        if id(n) in memo:
            v = memo[id(n)]
            break
        t = type(n)
        if t is BinaryOp:
            spine.append(n)
            n = n.left
        elif t is Paren:
            spine.append(n)
            n = n.expr
        elif t is UnaryOp:
            spine.append(n)
            n = n.operand
        else:
            if t is Literal and type(n.value) in (int, float, str, bool, Value):
                v = n.value
            else:
                v = _MISS
            memo[id(n)] = v
            break
    for s in reversed(spine):
        if v is not _MISS:
            t = type(s)
            if t is BinaryOp:
                b = _fold_constant(s.right, memo)
                v = _MISS if b is _MISS else binary(s.op, v, b)
            elif t is UnaryOp:
                v = unary(s.op, v)
        memo[id(s)] = v
    return v


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
    g = _Gen()
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


_HELPERS.update(
    _ite_cond=_ite_cond,
    _fn_eval=_fn_eval,
    _fn_unparse=_fn_unparse,
    _fn_unresolved=_fn_unresolved,
    _fn_eval_each=_fn_eval_each,
    _current_time=_current_time,
    _list_text=_list_text,
    _cond_arms=_cond_arms,
)
