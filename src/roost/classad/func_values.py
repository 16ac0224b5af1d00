"""Value coercions, printing and comparison used by the built-in functions.

HTCondor's built-ins lean on a handful of helpers in its ClassAd library
(string/int/real conversion, the value printer, the comparison and addition
operators).  These are re-implemented here with the same quirks, because the
functions' results depend on them bit for bit: reals print as ``%.15E``,
strings convert to numbers through C ``strtod``, comparisons promote booleans
to integers and compare strings case-insensitively, and so on.
"""

from __future__ import annotations

import math
import re
import time as _time
from collections.abc import Callable

from roost.classad.values import (
    ERROR,
    INT64_MAX,
    INT64_MIN,
    UNDEFINED,
    AbsTime,
    RelTime,
    Value,
    wrap_int,
)

INT32_MIN = -(1 << 31)


def is_classad(v: object) -> bool:
    """A record: anything that is not one of the scalar or list representations."""
    return not (
        v is None
        or type(v) in (int, float, bool, str, list, AbsTime, RelTime)
        or isinstance(v, Value)
    )


def is_number(v: object) -> bool:
    """HTCondor's ``IsNumber``: integer, real, or boolean."""
    return type(v) in (int, float, bool)


def to_int32(n: int) -> int:
    """Truncate a 64-bit integer to a C ``int`` as ``IsIntegerValue(int&)`` does."""
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n & 0x80000000 else n


def double_to_int64(x: float) -> int:
    """C ``(long long) double``: truncation; out of range or NaN gives INT64_MIN (x86)."""
    if math.isnan(x) or math.isinf(x):
        return INT64_MIN
    n = int(x)
    if n < INT64_MIN or n > INT64_MAX:
        return INT64_MIN
    return n


def double_to_int32(x: float) -> int:
    """C ``(int) double``: truncation; out of range or NaN gives INT32_MIN (x86)."""
    if math.isnan(x) or math.isinf(x):
        return INT32_MIN
    n = int(x)
    if n < INT32_MIN or n > (1 << 31) - 1:
        return INT32_MIN
    return n


# --- C strtod -------------------------------------------------------------

_STRTOD_RE = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)"
    r"(?:"
    r"(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|([iI][nN][fF](?:[iI][nN][iI][tT][yY])?)"
    r"|([nN][aA][nN](?:\([0-9A-Za-z_]*\))?)"
    r")"
)
_HEX_PREFIX_ONLY = re.compile(r"[ \t\n\v\f\r]*[+-]?0[xX]")


def strtod(s: str) -> tuple[float, bool]:
    """Parse a leading number as C ``strtod``; return (value, consumed_anything)."""
    m = _STRTOD_RE.match(s)
    if m is None:
        return 0.0, False
    sign, hexpart, dec, inf, nan = m.groups()
    neg = sign == "-"
    if hexpart is not None:
        body = hexpart[2:]
        if "p" not in body.lower():
            body += "p0"
        try:
            val = float.fromhex(body)
        except (ValueError, OverflowError):
            val = math.inf
    elif dec is not None:
        try:
            val = float(dec)
        except (ValueError, OverflowError):
            val = math.inf
    elif inf is not None:
        val = math.inf
    else:
        val = math.nan
    return (-val if neg else val), True


# --- conversions (convertValueTo*Value) -----------------------------------


def convert_to_real(v: object) -> object:
    """``real()`` semantics; returns a float, UNDEFINED or ERROR."""
    t = type(v)
    if t is float:
        return v
    if t is int:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    if t is str:
        val, ok = strtod(v)
        if not ok and val == 0.0:
            return ERROR
        return val
    if t is AbsTime:
        return float(abs_secs(v))  # type: ignore[arg-type]
    if t is RelTime:
        return float(_trunc_time(v.secs))
    if v is UNDEFINED:
        return UNDEFINED
    return ERROR


def convert_to_int(v: object) -> object:
    """``int()`` semantics; returns an int, UNDEFINED or ERROR."""
    t = type(v)
    if t is int:
        return v
    if t is bool:
        return 1 if v else 0
    if t is float:
        return double_to_int64(v)
    if t is str:
        val, ok = strtod(v)
        n = double_to_int64(val)
        if not ok and n == 0:
            return ERROR
        return n
    if t is AbsTime:
        return abs_secs(v)  # type: ignore[arg-type]
    if t is RelTime:
        return _trunc_time(v.secs)
    if v is UNDEFINED:
        return UNDEFINED
    return ERROR


def _trunc_time(secs: float) -> int:
    """A relative time read as an integer: HTCondor converts the double through a C ``int``."""
    return double_to_int32(float(secs))


def abs_secs(t: AbsTime) -> int:
    """The seconds of an absolute time as the 64-bit ``time_t`` HTCondor keeps."""
    secs = t.secs
    return double_to_int64(secs) if type(secs) is float else int(secs)


def convert_to_string(v: object) -> object:
    """``string()`` semantics; returns a str, UNDEFINED or ERROR."""
    t = type(v)
    if t is str:
        return v
    if v is UNDEFINED:
        return UNDEFINED
    if v is ERROR:
        return ERROR
    if t is AbsTime:
        return abstime_text(v)
    if t is RelTime:
        return reltime_text(_trunc_time(v.secs))
    return unparse_value(v)


# --- printing -------------------------------------------------------------


def real_text(x: float) -> str:
    """The ClassAd printer's form of a real."""
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if math.isnan(x):
        return 'real("NaN")'
    if math.isinf(x):
        return 'real("-INF")' if x < 0 else 'real("INF")'
    return f"{x:.15E}"


_STRING_ESCAPES = {
    7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v",
    92: "\\\\", 34: '\\"',
}


def string_literal(s: str) -> str:
    """Quote a string as the ClassAd printer does (octal for unprintable bytes)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for b in s.encode("utf-8", "surrogateescape"):
        esc = _STRING_ESCAPES.get(b)
        if esc is not None:
            out.append(esc)
        elif 32 <= b < 127:
            out.append(chr(b))
        else:
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


def abstime_text(t: AbsTime) -> str:
    """``absTimeToString``: local wall time of the offset, then ``+hh:mm``."""
    off = int(t.offset)
    secs = abs_secs(t) + off
    try:
        tm = _time.gmtime(secs)
        stamp = _time.strftime("%Y-%m-%dT%H:%M:%S", tm)
    except (OverflowError, OSError, ValueError):
        stamp = "?"
    sign = "+" if off > 0 else "-"
    off = abs(off)
    return f"{stamp}{sign}{_c_div(off, 3600):02d}:{_c_mod(_c_div(off, 60), 60):02d}"


def _c_div(a: int, b: int) -> int:
    """C integer division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _c_mod(a: int, b: int) -> int:
    """C remainder (sign follows the dividend)."""
    return a - b * _c_div(a, b)


def reltime_text(rsecs: float) -> str:
    """``relTimeToString``: ``[-][D+]HH:MM:SS`` dropping leading zero fields.

    Like HTCondor, the whole seconds go through a C ``int``, so durations beyond
    2**31 seconds print HTCondor's wrapped nonsense rather than raising.
    """
    rsecs = float(rsecs)
    sign = ""
    if rsecs < 0:
        sign = "-"
        rsecs = -rsecs
    frac = rsecs - math.floor(rsecs) if math.isfinite(rsecs) else math.nan
    whole = double_to_int32(rsecs)
    hrs = _c_mod(whole, 86400)
    mins = _c_mod(hrs, 3600)
    secs = _c_mod(mins, 60) + frac
    days = _c_div(whole, 86400)
    hrs = _c_div(hrs, 3600)
    mins = _c_div(mins, 60)
    sec_txt = "%02d" % int(secs) if frac == 0 else "%02g" % secs  # noqa: UP031 - C printf
    if days:
        body = "%d+%02d:%02d:%s" % (days, hrs, mins, sec_txt)  # noqa: UP031
    elif hrs:
        body = "%02d:%02d:%s" % (hrs, mins, sec_txt)  # noqa: UP031
    elif mins:
        body = "%02d:%s" % (mins, sec_txt)  # noqa: UP031
    else:
        body = sec_txt
    return sign + body


def unparse_value(v: object) -> str:
    """Print a value as ClassAd text (what ``string()`` gives for non-strings)."""
    t = type(v)
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return real_text(v)
    if t is str:
        return string_literal(v)
    if v is UNDEFINED:
        return "undefined"
    if v is ERROR:
        return "error"
    if t is list:
        if not v:
            return "{  }"
        return "{ " + ",".join(unparse_value(x) for x in v) + " }"
    if t is AbsTime:
        return f'absTime("{abstime_text(v)}")'
    if t is RelTime:
        return f'relTime("{reltime_text(v.secs)}")'
    return _unparse_record(v)


def _unparse_record(ad: object) -> str:
    """Print a record: roost's ClassAd prints itself; anything else falls back to its values."""
    unparse = getattr(ad, "unparse", None)
    if unparse is not None:
        try:
            return str(unparse())
        except Exception:  # noqa: BLE001 - printing must never raise
            pass
    try:
        keys = list(ad)  # type: ignore[call-overload]
    except Exception:  # noqa: BLE001
        return "[  ]"
    if not keys:
        return "[  ]"
    parts = []
    for k in keys:
        try:
            val = ad[k]  # type: ignore[index]
        except Exception:  # noqa: BLE001
            val = UNDEFINED
        parts.append(f"{k} = {unparse_value(val) if _is_value(val) else val}")
    return "[ " + "; ".join(parts) + " ]"


def _is_value(v: object) -> bool:
    return type(v) in (int, float, bool, str, list, AbsTime, RelTime) or isinstance(v, Value)


# --- operators ------------------------------------------------------------

LT, LE, EQ, NE, GT, GE, IS, ISNT = "<", "<=", "==", "!=", ">", ">=", "is", "isnt"

_CMP: dict[str, Callable[[object, object], bool]] = {
    LT: lambda a, b: a < b,  # type: ignore[operator]
    LE: lambda a, b: a <= b,  # type: ignore[operator]
    EQ: lambda a, b: a == b,
    NE: lambda a, b: a != b,
    GT: lambda a, b: a > b,  # type: ignore[operator]
    GE: lambda a, b: a >= b,  # type: ignore[operator]
    IS: lambda a, b: a == b,
    ISNT: lambda a, b: a != b,
}


def _type_tag(v: object) -> object:
    if isinstance(v, Value):
        return v
    if is_classad(v):
        return "classad"
    return type(v)


def promote(a: object, b: object) -> tuple[object, object]:
    """``coerceToNumber`` for two numbers: booleans become ints, int+real become reals."""
    if type(a) is bool:
        a = int(a)
    if type(b) is bool:
        b = int(b)
    if type(a) is float and type(b) is int:
        b = float(b)
    elif type(a) is int and type(b) is float:
        a = float(a)
    return a, b


def compare(op: str, a: object, b: object) -> object:
    """A ClassAd comparison operator applied to two values (True/False/UNDEFINED/ERROR)."""
    meta = op in (IS, ISNT)
    if meta:
        ta, tb = _type_tag(a), _type_tag(b)
        if ta != tb:
            return op == ISNT
        if a is UNDEFINED or a is ERROR:
            return op == IS
    else:
        if a is ERROR or b is ERROR:
            return ERROR
        if a is UNDEFINED or b is UNDEFINED:
            return UNDEFINED
    ta = type(a)
    tb = type(b)
    if is_classad(a) or is_classad(b) or ta is list or tb is list:
        return ERROR
    if ta is str or tb is str:
        if ta is not str or tb is not str:
            return ERROR
        if meta:
            return _CMP[op](a, b)
        ca, cb = _casefold_c(a), _casefold_c(b)
        return _CMP[op](ca, cb)
    if ta is AbsTime or tb is AbsTime:
        if ta is not AbsTime or tb is not AbsTime:
            return ERROR
        if op == IS:
            return a.secs == b.secs and a.offset == b.offset  # type: ignore[union-attr]
        if op == ISNT:
            return a.secs != b.secs or a.offset != b.offset  # type: ignore[union-attr]
        return _CMP[op](a.secs, b.secs)  # type: ignore[union-attr]
    if ta is RelTime or tb is RelTime:
        if ta is not RelTime or tb is not RelTime:
            return ERROR
        return _CMP[op](a.secs, b.secs)  # type: ignore[union-attr]
    if not meta:
        a, b = promote(a, b)
    return _CMP[op](a, b)


def _casefold_c(s: str) -> bytes:
    """Key for C ``strcasecmp``: ASCII lower-case of the UTF-8 bytes."""
    return s.encode("utf-8", "surrogateescape").lower()


def add(a: object, b: object) -> object:
    """The ``+`` operator for two numbers (ints wrap; a +inf real sum is ERROR)."""
    a, b = promote(a, b)
    if type(a) is int and type(b) is int:
        return wrap_int(a + b)
    r = float(a) + float(b)  # type: ignore[arg-type]
    return ERROR if r == math.inf else r


def divide_real(a: object, n: float) -> object:
    """``a / n`` with ``n`` real, as ``avg`` uses it."""
    a, _ = promote(a, n)
    try:
        r = float(a) / n  # type: ignore[arg-type]
    except ZeroDivisionError:
        return ERROR
    return ERROR if r == math.inf else r
