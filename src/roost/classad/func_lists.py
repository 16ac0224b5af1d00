"""List built-ins: member, identicalMember, size, sum, avg, min, max, anyCompare, allCompare.

Arguments arrive already evaluated; list elements are values.  Results follow
HTCondor's quirks, e.g. ``avg({})`` is ``0`` (an integer, not UNDEFINED) and
``min``/``max`` return the promoted type of the last comparison made.
"""

from __future__ import annotations

from roost.classad.func_values import (
    EQ,
    GT,
    IS,
    LT,
    add,
    compare,
    divide_real,
    is_classad,
    is_number,
    promote,
)
from roost.classad.values import ERROR, UNDEFINED


def _member(identical: bool, args: tuple[object, ...]) -> object:
    if len(args) != 2:
        return ERROR
    item, lst = args
    if lst is UNDEFINED or (not identical and item is UNDEFINED):
        return UNDEFINED
    if type(lst) is not list or type(item) is list or is_classad(item):
        return ERROR
    if not identical and item is ERROR:
        return ERROR
    op = IS if identical else EQ
    for elem in lst:
        if compare(op, elem, item) is True:
            return True
    return False


def member(*args: object) -> object:
    """``member(x, list)``: true if some element ``== x``."""
    return _member(False, args)


def identical_member(*args: object) -> object:
    """``identicalMember(x, list)``: true if some element ``=?= x``."""
    return _member(True, args)


def size(*args: object) -> object:
    """Length of a list, record (attribute count) or string (bytes)."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    if v is UNDEFINED:
        return UNDEFINED
    t = type(v)
    if t is list:
        return len(v)
    if t is str:
        return len(v) if v.isascii() else len(v.encode("utf-8", "surrogateescape"))
    if is_classad(v):
        try:
            return len(v)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001 - a foreign record must not crash evaluation
            return ERROR
    return ERROR


def _list_arg(args: tuple[object, ...]) -> object:
    """The single list argument, or UNDEFINED/ERROR to return."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    if v is UNDEFINED:
        return UNDEFINED
    if type(v) is not list:
        return ERROR
    return v


def _sum_avg(avg: bool, args: tuple[object, ...]) -> object:
    lst = _list_arg(args)
    if type(lst) is not list:
        return lst
    result: object = 0
    count = 0
    first = True
    for elem in lst:
        if elem is UNDEFINED:
            continue
        if not is_number(elem):
            return ERROR
        count += 1
        if first:
            result = elem
            first = False
        else:
            result = add(result, elem)
            if result is ERROR:
                return ERROR
    if avg and count > 0:
        return divide_real(result, float(count))
    return result


def sum_(*args: object) -> object:
    """Sum of the numeric elements, skipping UNDEFINED ones; ``sum({})`` is 0."""
    return _sum_avg(False, args)


def avg(*args: object) -> object:
    """Average of the numeric elements, skipping UNDEFINED ones; ``avg({})`` is 0."""
    return _sum_avg(True, args)


def _min_max(op: str, args: tuple[object, ...]) -> object:
    lst = _list_arg(args)
    if type(lst) is not list:
        return lst
    result: object = UNDEFINED
    first = True
    for elem in lst:
        if elem is UNDEFINED:
            continue
        if not is_number(elem):
            return ERROR
        if first:
            result = elem
            first = False
            continue
        # HTCondor promotes both operands in place before comparing, so the
        # kept value takes the promoted type even when it wins.
        e, result = promote(elem, result)
        if (e < result) if op == LT else (e > result):  # type: ignore[operator]
            result = e
    return result


def min_(*args: object) -> object:
    """Smallest numeric element (UNDEFINED elements skipped; empty list is UNDEFINED)."""
    return _min_max(LT, args)


def max_(*args: object) -> object:
    """Largest numeric element (UNDEFINED elements skipped; empty list is UNDEFINED)."""
    return _min_max(GT, args)


_OPS = {"<", "<=", "!=", "==", ">", ">=", "is", "isnt"}


def _list_compare(need_all: bool, args: tuple[object, ...]) -> object:
    if len(args) != 3:
        return ERROR
    op, lst, target = args
    if op is UNDEFINED:
        return UNDEFINED
    if type(op) is not str or op not in _OPS:
        return ERROR
    if lst is UNDEFINED:
        return UNDEFINED
    if type(lst) is not list:
        return ERROR
    for elem in lst:
        r = compare(op, elem, target)
        if r is True:
            if not need_all:
                return True
        elif r is False:
            if need_all:
                return False
        elif r is UNDEFINED:
            # Both forms stop at the first undefined comparison and answer false.
            return False
        else:
            return ERROR
    return need_all


def any_compare(*args: object) -> object:
    """``anyCompare(op, list, x)``: some element ``op`` x."""
    return _list_compare(False, args)


def all_compare(*args: object) -> object:
    """``allCompare(op, list, x)``: every element ``op`` x."""
    return _list_compare(True, args)
