"""The ClassAd operators on values: what ``a + b``, ``a < b``, ``a && b``, ``-a`` give.

HTCondor's strict operators (numbers promote, strings compare ignoring case,
64-bit integers wrap, UNDEFINED and ERROR propagate), ``=?=``/``=!=``, and the
halves of the lazy ``&&``/``||``/``?:`` that the compiled code calls once the
fast path is off. Pure functions of values: no scope, no evaluation, so constant
folding (:mod:`roost.classad.codegen`) and ``flatten`` can call them too.

The compiled code inlines the common cases (int and string operands) and calls
these helpers by name for everything else (:data:`_HELPERS`);
:func:`binary`/:func:`unary` apply an operator given as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from roost.classad.values import INT64_MAX, INT64_MIN, AbsTime, RelTime, Value, wrap_int

UNDEFINED = Value.Undefined
ERROR = Value.Error

# The ClassAd class (records compare as ERROR), handed over by roost.classad.classad
# through roost.classad.evaluate.use_classad: it sits above this module.
_CA: Any = None

_BAD = object()  # a && / || operand that is neither boolean-equivalent nor exceptional

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



def _ite_cond(c: Any) -> Any:
    """ifThenElse's condition: like ?: but every non-number, non-undefined value is ERROR."""
    t = type(c)
    if t is int or t is float:
        return c != 0
    if c is UNDEFINED:
        return UNDEFINED
    return ERROR



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


_HELPERS: dict[str, Any] = {
    name: obj
    for name, obj in list(globals().items())
    if name.startswith("_") and callable(obj) and not isinstance(obj, type)
}
"""The helpers above by name: the compiled code calls them by these names."""
