"""Type predicates, conversions and arithmetic built-ins.

``isUndefined`` and friends are ordinary (eager) functions in HTCondor: the
argument is evaluated first, so they need no special form.
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable

from roost.classad.func_values import (
    INT64_MAX,
    INT64_MIN,
    _c_div,
    _trunc_time,
    convert_to_int,
    convert_to_real,
    convert_to_string,
    double_to_int64,
    is_classad,
    to_int32,
)
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, wrap_int


def _predicate(test: Callable[[object], bool]) -> Callable[..., object]:
    def fn(*args: object) -> object:
        if len(args) != 1:
            return ERROR
        return test(args[0])

    return fn


is_undefined = _predicate(lambda v: v is UNDEFINED)
is_error = _predicate(lambda v: v is ERROR)
is_string = _predicate(lambda v: type(v) is str)
is_integer = _predicate(lambda v: type(v) is int)
is_real = _predicate(lambda v: type(v) is float)
is_list = _predicate(lambda v: type(v) is list)
is_classad_value = _predicate(is_classad)
is_boolean = _predicate(lambda v: type(v) is bool)
is_abstime = _predicate(lambda v: type(v) is AbsTime)
is_reltime = _predicate(lambda v: type(v) is RelTime)


def _unary(conv: Callable[[object], object]) -> Callable[..., object]:
    def fn(*args: object) -> object:
        if len(args) != 1:
            return ERROR
        return conv(args[0])

    return fn


int_ = _unary(convert_to_int)
real = _unary(convert_to_real)
string = _unary(convert_to_string)


def bool_(*args: object) -> object:
    """``bool()``: numbers by non-zero, strings only "true"/"false" (else UNDEFINED)."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    t = type(v)
    if t is bool:
        return v
    if t is int or t is float:
        return v != 0
    if t is str:
        low = v.lower()
        if low == "false":
            return False
        if low == "true":
            return True
        return UNDEFINED
    if t is RelTime:
        return _trunc_time(v.secs) != 0
    if v is UNDEFINED:
        return UNDEFINED
    return ERROR


def _rounder(how: Callable[[float], float]) -> Callable[..., object]:
    def fn(*args: object) -> object:
        if len(args) != 1:
            return ERROR
        (v,) = args
        if type(v) is int:
            return v
        r = convert_to_real(v)
        if type(r) is not float:
            return ERROR
        if math.isnan(r) or math.isinf(r):
            return INT64_MIN
        return double_to_int64(how(r))

    return fn


floor = _rounder(math.floor)
ceiling = _rounder(math.ceil)
# rint() rounds halves to even in the default rounding mode, as Python's round() does.
round_ = _rounder(round)


def pow_(*args: object) -> object:
    """``pow(x, y)``: integer when both are integers and ``y >= 0`` (C rounding quirk kept)."""
    if len(args) != 2:
        return ERROR
    x, y = args
    if type(x) is int and type(y) is int and y >= 0:
        try:
            p = math.pow(float(x), float(y))
        except OverflowError:
            p = math.inf if x > 0 or y % 2 == 0 else -math.inf
        return double_to_int64(p + 0.5)
    rx = convert_to_real(x)
    ry = convert_to_real(y)
    if type(rx) is not float or type(ry) is not float:
        return ERROR
    return _c_pow(rx, ry)


def _c_pow(x: float, y: float) -> float:
    """C ``pow`` without Python's exceptions."""
    try:
        return math.pow(x, y)
    except OverflowError:
        if x < 0 and y == int(y) and int(y) % 2 == 1:
            return -math.inf
        return math.inf
    except ValueError:
        if x == 0.0 and y < 0:
            # pole: sign follows x for odd integer exponents
            if y == int(y) and int(y) % 2 == 1 and math.copysign(1.0, x) < 0:
                return -math.inf
            return math.inf
        return math.nan


def quantize(*args: object) -> object:
    """``quantize(x, q)``: round ``x`` up to a multiple of ``q``, or to the first list item >= x."""
    if len(args) != 2:
        return ERROR
    arg, arg2 = args
    rval = convert_to_real(arg)
    if type(rval) is not float:
        return ERROR
    if type(arg2) is list:
        base: object = 0.0
        rbase = 0.0
        for elem in arg2:
            rb = convert_to_real(elem)
            if type(rb) is not float:
                return ERROR
            base, rbase = elem, rb
            if rbase >= rval:
                return elem
        arg2 = base
    else:
        rb = convert_to_real(arg2)
        if type(rb) is not float:
            return ERROR
        rbase = rb
    if type(arg2) is int:
        ibase = arg2
        if ibase == 0:
            return arg
        if type(arg) is int:
            return wrap_int(_c_div(wrap_int(arg + ibase - 1), ibase) * ibase)
        return _c_ceil(rval / ibase) * float(ibase)
    if -1e-8 <= rbase <= 1e-8:
        return arg
    return _c_ceil(rval / rbase) * rbase


def _c_ceil(x: float) -> float:
    """C ``ceil``: a float, keeping infinities, NaN and the sign of zero."""
    if not math.isfinite(x):
        return x
    r = float(math.ceil(x))
    return math.copysign(0.0, x) if r == 0.0 else r


def random(*args: object) -> object:
    """``random([max])``: uniform integer in [0, max) or real in [0, max)."""
    if len(args) > 1:
        return ERROR
    v: object = args[0] if args else 1.0
    if type(v) is int:
        n = to_int32(v)
        if n <= 0:
            return ERROR
        return _random.randrange(n)
    if type(v) is float:
        if not v > 0:
            return ERROR if v <= 0 else v * _random.random()
        return v * _random.random()
    return ERROR


def debug(*args: object) -> object:
    """``debug(x)``: evaluates to ``x`` (HTCondor also logs it; roost does not)."""
    if len(args) != 1:
        return ERROR
    return args[0]


__all__ = [
    "INT64_MAX",
    "bool_",
    "ceiling",
    "debug",
    "floor",
    "int_",
    "pow_",
    "quantize",
    "random",
    "real",
    "round_",
    "string",
]
