"""Time built-ins: time, currentTime, timeZoneOffset, dayTime, get*, splitTime, formatTime,
absTime, relTime, interval.

Only ``time()``, ``currentTime()``, ``dayTime()``, ``timeZoneOffset()``, argument-less
``absTime()`` and ``formatTime()`` read the clock, exactly where HTCondor does.  Local
time follows the process time zone (``TZ``), as HTCondor's ``localtime`` does.
``formatTime`` carries its own C-locale ``strftime`` so out-of-range fields print the
way glibc prints them instead of raising.
"""

from __future__ import annotations

import math
import re
import time as _time
from collections.abc import Callable

from roost.classad import values as _values
from roost.classad.func_values import (
    _c_div,
    _c_mod,
    _trunc_time,
    abs_secs,
    convert_to_int,
    double_to_int32,
    is_classad,
    strtod,
    to_int32,
)
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTime

# --- local time zone --------------------------------------------------------


def local_offset(secs: int) -> int:
    """Seconds east of UTC of the local zone at ``secs`` (HTCondor's ``timezone_offset``)."""
    try:
        return int(_time.localtime(secs).tm_gmtoff)
    except (OverflowError, OSError, ValueError):
        return 0


def _now() -> int:
    return int(_time.time())


def time_(*args: object) -> object:
    """``time()``: seconds since the epoch, as an integer."""
    if args:
        return ERROR
    return _now()


def current_time(*args: object) -> object:
    """``currentTime()``: now as an absolute time in the local zone."""
    if args:
        return ERROR
    now = _now()
    return AbsTime(now, local_offset(now))


def time_zone_offset(*args: object) -> object:
    """``timeZoneOffset()``: the local zone's offset as a relative time."""
    if args:
        return ERROR
    return RelTime(local_offset(_now()))


def day_time(*args: object) -> object:
    """``dayTime()``: seconds since local midnight as a relative time."""
    if args:
        return ERROR
    lt = _time.localtime(_now())
    return RelTime(lt.tm_hour * 3600 + lt.tm_min * 60 + lt.tm_sec)


# --- fields -----------------------------------------------------------------

_ABS_FIELDS: dict[str, Callable[[_time.struct_time], int]] = {
    "getyear": lambda t: t.tm_year,
    "getmonth": lambda t: t.tm_mon,
    "getdayofyear": lambda t: t.tm_yday - 1,
    "getdayofmonth": lambda t: t.tm_mday,
    "getdayofweek": lambda t: (t.tm_wday + 1) % 7,
    "gethours": lambda t: t.tm_hour,
    "getminutes": lambda t: t.tm_min,
    "getseconds": lambda t: t.tm_sec,
}

_REL_FIELDS: dict[str, Callable[[int], int]] = {
    "getdays": lambda r: _c_div(r, 86400),
    "gethours": lambda r: _c_div(_c_mod(r, 86400), 3600),
    "getminutes": lambda r: _c_div(_c_mod(r, 3600), 60),
    "getseconds": lambda r: _c_mod(r, 60),
}


def _get_field(name: str) -> Callable[..., object]:
    def fn(*args: object) -> object:
        if len(args) != 1:
            return ERROR
        (v,) = args
        if type(v) is AbsTime:
            getter = _ABS_FIELDS.get(name)
            if getter is None:
                return ERROR
            try:
                return getter(_time.localtime(abs_secs(v)))
            except (OverflowError, OSError, ValueError):
                return ERROR
        if type(v) is RelTime:
            rgetter = _REL_FIELDS.get(name)
            if rgetter is None:
                return ERROR
            return rgetter(_trunc_time(v.secs))
        return ERROR

    fn.__name__ = name
    fn.__doc__ = f"``{name}(t)``: a field of an absolute (local time) or relative time."
    return fn


get_year = _get_field("getyear")
get_month = _get_field("getmonth")
get_day_of_year = _get_field("getdayofyear")
get_day_of_month = _get_field("getdayofmonth")
get_day_of_week = _get_field("getdayofweek")
get_days = _get_field("getdays")
get_hours = _get_field("gethours")
get_minutes = _get_field("getminutes")
get_seconds = _get_field("getseconds")


# --- splitTime ---------------------------------------------------------------


def _abs_fields(secs: int, offset: int) -> list[tuple[str, object]]:
    try:
        tm = _time.gmtime(secs + offset)
    except (OverflowError, OSError, ValueError):
        # C gmtime fails here and HTCondor goes on with an unset struct tm
        # (garbage); roost uses zeros so a format without fields still prints.
        tm = _time.struct_time((0, 0, 0, 0, 0, 0, 0, 0, 0))
    return [
        ("Type", "AbsoluteTime"),
        ("Year", tm.tm_year),
        ("Month", tm.tm_mon),
        ("Day", tm.tm_mday),
        ("Hours", tm.tm_hour),
        ("Minutes", tm.tm_min),
        ("Seconds", tm.tm_sec),
        ("Offset", offset),
    ]


def _rel_fields(rsecs: float) -> list[tuple[str, object]]:
    neg = rsecs < 0
    if neg:
        rsecs = -rsecs
    whole = double_to_int32(rsecs)
    hrs = _c_mod(whole, 86400)
    mins = _c_mod(hrs, 3600)
    frac = rsecs - math.floor(rsecs) if math.isfinite(rsecs) else math.nan
    secs = float(_c_mod(mins, 60)) + frac
    days = _c_div(whole, 86400)
    hrs = _c_div(hrs, 3600)
    mins = _c_div(mins, 60)
    if neg:
        if days > 0:
            days = -days
        elif hrs > 0:
            hrs = -hrs
        elif mins > 0:
            mins = -mins
        else:
            secs = -secs
    return [("Type", "RelativeTime"), ("Days", days), ("Hours", hrs), ("Minutes", mins), ("Seconds", secs)]


def _split_fields(v: object) -> list[tuple[str, object]] | None:
    """The attributes ``splitTime`` gives for a value, or None if it cannot split it."""
    t = type(v)
    if t is int:
        return _abs_fields(v, local_offset(v))  # type: ignore[arg-type]
    if t is float:
        secs = double_to_int32(v)  # type: ignore[arg-type]
        return _abs_fields(secs, local_offset(secs))
    if t is AbsTime:
        return _abs_fields(abs_secs(v), int(v.offset))  # type: ignore[arg-type, union-attr]
    if t is RelTime:
        return _rel_fields(float(v.secs))  # type: ignore[union-attr]
    return None


def make_record(fields: list[tuple[str, object]]) -> object:
    """Build a roost ClassAd from (name, value) pairs (the class is values.RECORD_CLASS:
    roost.classad.classad sits above the built-ins)."""
    ad = _values.RECORD_CLASS()
    for name, value in fields:
        ad[name] = value
    return ad


def split_time(*args: object) -> object:
    """``splitTime(t)``: a record of the time's calendar fields."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    if v is UNDEFINED:
        return UNDEFINED
    fields = _split_fields(v)
    if fields is None:
        return ERROR
    try:
        return make_record(fields)
    except Exception:  # noqa: BLE001 - no record class available: report an error, never raise
        return ERROR


# --- formatTime ---------------------------------------------------------------


def record_int(ad: object, name: str) -> int | None:
    """An integer attribute of a record, as ``EvaluateAttrInt`` reads it (None if absent/not int)."""
    for meth in ("evaluate_attr", "eval"):
        fn = getattr(ad, meth, None)
        if fn is None:
            continue
        try:
            v = fn(name)
        except Exception:  # noqa: BLE001
            return None
        return v if type(v) is int else None
    try:
        v = ad[name]  # type: ignore[index]
    except Exception:  # noqa: BLE001
        return None
    return v if type(v) is int else None


def _is_leap(y: int) -> bool:
    return _c_mod(y, 4) == 0 and _c_mod(y, 400) not in (100, 200, 300)


def _fixed_from_gregorian(y: int, m: int, d: int) -> int:
    adj = 0 if m <= 2 else (-1 if _is_leap(y) else -2)
    return (
        365 * (y - 1) + _c_div(y - 1, 4) - _c_div(y - 1, 100) + _c_div(y - 1, 400)
        + _c_div(367 * m - 362, 12) + adj + d
    )


class _Tm:
    """A C ``struct tm`` (fields may be out of range, as formatTime allows)."""

    __slots__ = ("sec", "min", "hour", "mday", "mon", "year", "wday", "yday", "gmtoff")

    def __init__(self) -> None:
        self.sec = self.min = self.hour = self.mday = self.mon = self.year = 0
        self.wday = self.yday = self.gmtoff = 0


def _tm_from_fields(get: Callable[[str], int | None]) -> _Tm:
    tm = _Tm()
    tm.sec = get("Seconds") or 0
    tm.min = get("Minutes") or 0
    tm.hour = get("Hours") or 0
    tm.mday = get("Day") or 0
    month = get("Month")
    tm.mon = month - 1 if month is not None else 0
    year = get("Year")
    tm.year = year - 1900 if year is not None else 0
    y = tm.year + 1900
    fixed = _fixed_from_gregorian(y, tm.mon + 1, tm.mday)
    tm.wday = _c_mod(fixed, 7)
    tm.yday = fixed - _fixed_from_gregorian(y, 1, 1)
    return tm


_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
]


def _name(table: list[str], i: int, abbrev: bool) -> str:
    if 0 <= i < len(table):
        return table[i][:3] if abbrev else table[i]
    return "?"


def _iso_week_days(yday: int, wday: int) -> int:
    big = (366 // 7 + 2) * 7  # a multiple of 7 that keeps the modulus positive, as glibc does
    return yday - _c_mod(yday - wday + 4 + big, 7) + 3


def _iso_year_week(tm: _Tm) -> tuple[int, int]:
    year = tm.year + 1900
    days = _iso_week_days(tm.yday, tm.wday)
    if days < 0:
        year -= 1
        days = _iso_week_days(tm.yday + (366 if _is_leap(year) else 365), tm.wday)
    else:
        d = _iso_week_days(tm.yday - (366 if _is_leap(year) else 365), tm.wday)
        if d >= 0:
            year += 1
            days = d
    return year, _c_div(days, 7) + 1


def _mktime(tm: _Tm) -> int:
    try:
        return int(_time.mktime((tm.year + 1900, tm.mon + 1, tm.mday, tm.hour, tm.min, tm.sec, 0, 0, -1)))
    except (OverflowError, OSError, ValueError):
        return -1


# Conversions glibc refuses with an E or O modifier (the directive is then copied as written).
_E_BAD = frozenset("aAbBdDeFgGhHIjklmMSUVwW")
_O_BAD = frozenset("aAcDFxXY")


def strftime(fmt: str, tm: _Tm) -> str:
    """glibc ``strftime`` in the C locale, flags (``-_0^#``), widths and ``E``/``O`` modifiers included."""
    out: list[str] = []
    i, n = 0, len(fmt)
    while i < n:
        c = fmt[i]
        if c != "%" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        j = i + 1
        pad = ""
        upper = swap = False
        while j < n and fmt[j] in "-_0^#":
            if fmt[j] == "^":
                upper = True
            elif fmt[j] == "#":
                swap = True
            else:
                pad = fmt[j]
            j += 1
        width = 0
        while j < n and fmt[j].isdigit():
            width = width * 10 + int(fmt[j])
            j += 1
        modifier = ""
        if j < n and fmt[j] in "EO":
            modifier = fmt[j]
            j += 1
        if j >= n:
            out.append(fmt[i:])
            break
        conv = fmt[j]
        piece = None
        if not modifier or conv not in (_E_BAD if modifier == "E" else _O_BAD):
            piece = _conversion(conv, tm)
        if piece is None:
            out.append(fmt[i : j + 1])  # unknown conversions are copied as written
        else:
            out.append(_pad(piece, conv, pad, width, upper, swap))
        i = j + 1
    result = "".join(out)
    # HTCondor formats into a 1024-byte buffer; strftime fails (returns 0) beyond it.
    return result if len(result.encode("utf-8", "surrogateescape")) < 1023 else ""


def _pad(piece: str | tuple[int, int, bool], conv: str, pad: str, width: int, upper: bool, swap: bool) -> str:
    """Apply glibc's flag and width rules to one converted field."""
    if isinstance(piece, tuple):
        value, digits, spacepad = piece
        eff = pad or ("_" if spacepad else "0")
        text = str(abs(value))
        if eff != "-":
            text = text.rjust(digits - (1 if value < 0 else 0), "0" if eff == "0" else " ")
        if value < 0:
            text = "-" + text
        fill = "0" if eff == "0" else " "
    else:
        text = piece
        if upper or (swap and conv in "aAbBh"):
            text = text.upper()
        elif swap and conv in "pZ":
            text = text.lower()
        fill = "0" if pad == "0" else " "
        if conv == "z":
            return text
    if width > len(text):
        if fill == "0" and text[:1] in "+-":
            return text[0] + text[1:].rjust(width - 1, "0")
        return text.rjust(width, fill)
    return text


def _conversion(conv: str, tm: _Tm) -> str | tuple[int, int, bool] | None:
    """One conversion: text, or (number, digits, space-padded by default); None if unknown."""
    hour12 = _c_mod(tm.hour, 12) or 12
    year = tm.year + 1900
    simple: dict[str, tuple[int, int, bool]] = {
        "d": (tm.mday, 2, False), "e": (tm.mday, 2, True), "H": (tm.hour, 2, False),
        "I": (hour12, 2, False), "j": (tm.yday + 1, 3, False), "k": (tm.hour, 2, True),
        "l": (hour12, 2, True), "m": (tm.mon + 1, 2, False), "M": (tm.min, 2, False),
        "S": (tm.sec, 2, False), "u": ((tm.wday - 1 + 7) % 7 + 1, 1, False),
        "U": (_c_div(tm.yday - tm.wday + 7, 7), 2, False), "w": (tm.wday, 1, False),
        "W": (_c_div(tm.yday - _c_mod(tm.wday - 1 + 7, 7) + 7, 7), 2, False),
        "y": (_c_mod(_c_mod(year, 100) + 100, 100), 2, False), "Y": (year, 1, False),
        "C": (_c_div(year, 100) - (1 if year < 0 and _c_mod(year, 100) else 0), 2, False),
    }
    if conv in simple:
        return simple[conv]
    text = {
        "%": "%", "n": "\n", "t": "\t",
        "p": "PM" if tm.hour >= 12 else "AM", "P": "pm" if tm.hour >= 12 else "am",
    }.get(conv)
    if text is not None:
        return text
    if conv in "aA":
        return _name(_DAYS, tm.wday, conv == "a")
    if conv in "bhB":
        return _name(_MONTHS, tm.mon, conv != "B")
    composite = {
        "c": "%a %b %e %H:%M:%S %Y", "D": "%m/%d/%y", "x": "%m/%d/%y", "F": "%Y-%m-%d",
        "r": "%I:%M:%S %p", "R": "%H:%M", "T": "%H:%M:%S", "X": "%H:%M:%S",
    }.get(conv)
    if composite is not None:
        return strftime(composite, tm)
    if conv == "s":
        return (_mktime(tm), 1, False)
    if conv in "GgV":
        iso_year, week = _iso_year_week(tm)
        if conv == "G":
            return (iso_year, 1, False)
        if conv == "g":
            return (_c_mod(_c_mod(iso_year, 100) + 100, 100), 2, False)
        return (week, 2, False)
    if conv == "z":
        off = tm.gmtoff
        sign = "-" if off < 0 else "+"
        off = abs(off)
        return f"{sign}{off // 3600:02d}{(off // 60) % 60:02d}"
    if conv == "Z":
        return _time.tzname[0]
    return None


def format_time(*args: object) -> object:
    """``formatTime([t[, format]])``: strftime of the time in its own offset (default ``%c``)."""
    if not args:
        now = _now()
        lt = _time.localtime(now)
        tm = _Tm()
        tm.sec, tm.min, tm.hour = lt.tm_sec, lt.tm_min, lt.tm_hour
        tm.mday, tm.mon, tm.year = lt.tm_mday, lt.tm_mon - 1, lt.tm_year - 1900
        tm.wday, tm.yday, tm.gmtoff = (lt.tm_wday + 1) % 7, lt.tm_yday - 1, lt.tm_gmtoff
        return strftime("%c", tm)
    if len(args) > 2:
        return ERROR
    v = args[0]
    if type(v) is RelTime:
        return ERROR
    if is_classad(v):
        tm = _tm_from_fields(lambda name: record_int(v, name))
    else:
        fields = _split_fields(v)
        if fields is None:
            return ERROR
        values = dict(fields)
        tm = _tm_from_fields(lambda name: values.get(name) if type(values.get(name)) is int else None)
    if len(args) == 1:
        return strftime("%c", tm)
    fmt = args[1]
    if type(fmt) is not str:
        return ERROR
    return strftime(fmt, tm)


# --- absTime / relTime / interval ------------------------------------------------


def abs_time(*args: object) -> object:
    """``absTime([x[, offset]])``: an absolute time from seconds, a relative time or an absolute time.

    A string argument written literally is converted by the parser; a computed
    string reaches this function and, as in HTCondor, comes back unchanged.
    """
    if not args:
        return current_time()
    if len(args) > 2:
        return ERROR
    v = args[0]
    second = len(args) == 2
    off = 0
    if second:
        o = args[1]
        if type(o) is int:
            off = to_int32(o)
        elif type(o) is float:
            off = double_to_int32(o)
        elif type(o) is RelTime:
            off = to_int32(_trunc_time(o.secs))
        else:
            return ERROR
    t = type(v)
    if v is UNDEFINED:
        return UNDEFINED
    if t is int:
        secs = to_int32(v)  # type: ignore[arg-type]
        offset = off if second else local_offset(secs)
        # HTCondor reserves an offset of -1 as "illegal" here.
        return ERROR if offset == -1 else AbsTime(secs, offset)
    if t is float:
        secs = double_to_int32(v)  # type: ignore[arg-type]
        return AbsTime(secs, off if second else local_offset(secs))
    if t is str or t is AbsTime:
        return v
    if t is RelTime:
        secs = _trunc_time(v.secs)  # type: ignore[union-attr]
        return AbsTime(secs, off if second else local_offset(secs))
    return ERROR


def rel_time(*args: object) -> object:
    """``relTime(x)``: a relative time from seconds or an absolute time."""
    if len(args) != 1:
        return ERROR
    (v,) = args
    t = type(v)
    if v is UNDEFINED:
        return UNDEFINED
    if t is int:
        return RelTime(to_int32(v))  # type: ignore[arg-type]
    if t is float:
        return RelTime(v)  # type: ignore[arg-type]
    if t is str:
        return RelTime(0)
    if t is AbsTime:
        return RelTime(abs_secs(v))  # type: ignore[arg-type]
    if t is RelTime:
        return v
    return ERROR


def interval(*args: object) -> object:
    """``interval(secs)``: ``[D+]H:MM:SS`` text for a number of seconds."""
    if len(args) != 1:
        return ERROR
    n = convert_to_int(args[0])
    if type(n) is not int:
        return ERROR
    tot = to_int32(n)
    days = _c_div(tot, 86400)
    tot = _c_mod(tot, 86400)
    hours = _c_div(tot, 3600)
    tot = _c_mod(tot, 3600)
    mins = _c_div(tot, 60)
    secs = _c_mod(tot, 60)
    if days:
        return f"{days}+{abs(hours):02d}:{abs(mins):02d}:{abs(secs):02d}"
    if hours:
        return f"{hours}:{abs(mins):02d}:{abs(secs):02d}"
    if mins:
        return f"{mins}:{abs(secs):02d}"
    return f"{secs}"


# --- time strings written literally: absTime("...") and relTime("...") -------------
#
# HTCondor's parser turns absTime/relTime applied to a *literal* string into a time
# literal while parsing (a computed string reaches the functions above instead).
# These two helpers give the parser HTCondor's reading of such strings.

_C_SPACE = " \t\n\v\f\r"


def _atoi(s: str) -> int:
    """C ``atoi``: optional space and sign, then leading digits (0 if none)."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?\d+)", s)
    return int(m.group(1)) if m else 0


def _tz_suffix(text: str) -> tuple[str, int | None]:
    """Strip a trailing zone (``Z``, ``+hhmm``, ``+hh:mm``); return (rest, offset seconds or None)."""
    i = len(text) - 1
    while i >= 0 and text[i] in _C_SPACE:
        i -= 1
    n = len(text)
    if i > 0 and text[i] in "zZ":
        return text[:i] + text[i + 1 :], 0
    if n > 5 and text[n - 5] in "+-":
        return _extract_zone(text)
    if n > 6 and text[n - 6] in "+-" and text[n - 3] == ":":
        return _extract_zone(text[: n - 3] + text[n - 2 :])
    return text, None


def _extract_zone(text: str) -> tuple[str, int | None]:
    off = text[-5:]
    if off[0] in "+-" and all("0" <= ch <= "9" for ch in off[1:]):
        hours, mins = int(off[1:3]), int(off[3:5])
        if off[0] == "-":
            hours, mins = -hours, -mins
        return text[:-5], hours * 3600 + mins * 60
    return text, None


def parse_abstime_literal(text: str) -> AbsTime | None:
    """HTCondor's reading of ``absTime("<text>")``: ``D* dddd [D* dd ...] [zone]``; None if invalid.

    Fields after the year are two digits each (month, day, hour, minute, second),
    separated by anything that is not a digit; out-of-range fields normalise as
    C ``mktime`` does; without a zone the local one applies.
    """
    rest, offset = _tz_suffix(text)
    n = len(rest)
    i = 0

    def next_digit(j: int) -> int:
        while j < n and not rest[j].isdigit():
            j += 1
        return j

    i = next_digit(i)
    if i > n - 4:
        return None
    fields = [_atoi(rest[i : i + 4]) - 1900, 1, 0, 0, 0, 0]  # month stays 1-based here
    i += 4
    for k in range(1, 6):
        i = next_digit(i)
        if i <= n - 2:
            fields[k] = _atoi(rest[i : i + 2])
            i += 2
    i = next_digit(i)
    if i <= n - 1 and rest[i].isdigit():
        return None
    year, mon, mday, hour, minute, sec = fields
    try:
        # struct tm months count from 0 (the month field read above is 1-based).
        secs = int(_time.mktime((year + 1900, mon, mday, hour, minute, sec, 0, 0, 0)))
    except (OverflowError, OSError, ValueError):
        return None
    if secs == -1:
        return None
    if offset is None:
        offset = local_offset(secs)
    secs += _standard_offset(secs)
    return AbsTime(secs - offset, offset)


def _standard_offset(secs: int) -> int:
    """``timezone_offset(t, no_dst=true)``: the local offset less an hour when DST is on."""
    try:
        lt = _time.localtime(secs)
    except (OverflowError, OSError, ValueError):
        return 0
    return int(lt.tm_gmtoff) - (3600 if lt.tm_isdst > 0 else 0)


def parse_reltime_literal(text: str) -> float | None:
    """HTCondor's reading of ``relTime("<text>")``: ``[-][[[D+|d]HH:|h]MM:|m]SS[.sss][s]``; None if invalid.

    Note that HTCondor 25's parser makes the result a *real* literal, not a relative time.
    """
    i = len(text) - 1

    def skip_space(j: int) -> int:
        while j >= 0 and text[j] in _C_SPACE:
            j -= 1
        return j

    def digits_back(j: int) -> tuple[int, str]:
        k = j
        while k >= 0 and "0" <= text[k] <= "9":
            k -= 1
        return k, text[k + 1 : j + 1]

    secs = 0.0
    i = skip_space(i)
    if i >= 0 and (text[i] in "sS" or "0" <= text[i] <= "9"):
        if text[i] in "sS":
            i -= 1
        i = skip_space(i)
        end = i
        i, _ = digits_back(i)
        if i >= 0 and text[i] == ".":
            i, _ = digits_back(i - 1)
        secs = strtod_prefix(text[i + 1 : end + 1])
    parts = []
    for marks in ("mM:", "hH:", "dD+"):
        i = skip_space(i)
        value = 0
        if i >= 0 and text[i] in marks:
            i = skip_space(i - 1)
            i, num = digits_back(i)
            value = int(num) if num else 0
            if value > 0x7FFFFFFF:
                value = 0  # std::from_chars leaves 0 behind on overflow
        parts.append(value)
    mins, hrs, days = parts
    i = skip_space(i)
    negative = i >= 0 and text[i] == "-"
    if negative:
        i -= 1
    i = skip_space(i)
    if i >= 0:
        return None
    total = days * 86400 + hrs * 3600 + mins * 60 + secs
    return -total if negative else total


def strtod_prefix(s: str) -> float:
    """C ``strtod`` ignoring what follows the number (0.0 when there is none)."""
    return strtod(s)[0]
