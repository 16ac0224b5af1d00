"""String built-ins: strcat, join, substr, case, comparisons, versions, splitting, string lists.

HTCondor works on the UTF-8 bytes of a string: ``size`` and ``substr`` count
bytes and case changes touch ASCII letters only.  The string-list functions
parse comma/space separated lists the way HTCondor's ``StringTokenIterator``
does (separators from a set, surrounding white space trimmed, empty items
dropped).
"""

from __future__ import annotations

from roost.classad.func_values import (
    convert_to_string,
    double_to_int64,
    strtod,
    to_int32,
)
from roost.classad.values import ERROR, UNDEFINED

_C_SPACE = " \t\n\v\f\r"


def _b(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def _rejoin(s: str) -> str:
    """``s`` with escaped bytes that now form UTF-8 sequences decoded (HTCondor's strings are bytes:
    ``strcat("\\303", "\\251")`` is ``"é"``, while each half alone is a lone escaped byte)."""
    if s.isascii():
        return s
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte: leave it
        return s


# --- concatenation --------------------------------------------------------


def strcat(*args: object) -> object:
    """Concatenate the string forms of all arguments; any UNDEFINED makes it UNDEFINED."""
    parts = []
    for v in args:
        s = v if type(v) is str else convert_to_string(v)
        if s is UNDEFINED:
            return UNDEFINED
        if type(s) is not str:
            return ERROR
        parts.append(s)
    return _rejoin("".join(parts))


def join(*args: object) -> object:
    """``join(sep, a, b, ...)``, ``join(sep, list)`` or ``join(list)``; UNDEFINED items are skipped."""
    items: list[object] = list(args)
    if 0 < len(args) <= 2 and type(args[-1]) is list:
        sep_arg: object = args[0] if len(args) == 2 else ""
        items = [sep_arg, *args[-1]]
    sep = ""
    buf: list[str] = []
    nonempty = False
    undef = False
    defined = False
    for i, v in enumerate(items):
        s = v if type(v) is str else convert_to_string(v)
        if s is UNDEFINED:
            undef = True
            continue
        if type(s) is not str:
            return ERROR
        if i == 0:
            sep = s
            continue
        # HTCondor only inserts the separator once the output is non-empty.
        if nonempty:
            buf.append(sep)
        defined = True
        buf.append(s)
        nonempty = nonempty or s != ""
    if undef and not defined:
        return UNDEFINED
    return _rejoin("".join(buf))


def _change_case(upper: bool, args: tuple[object, ...]) -> object:
    if len(args) != 1:
        return ERROR
    s = args[0] if type(args[0]) is str else convert_to_string(args[0])
    if type(s) is not str:
        return s if s is UNDEFINED else ERROR
    if s.isascii():
        return s.upper() if upper else s.lower()
    b = _b(s)
    return _s(b.upper() if upper else b.lower())


def to_upper(*args: object) -> object:
    """ASCII upper case of the string form of the argument."""
    return _change_case(True, args)


def to_lower(*args: object) -> object:
    """ASCII lower case of the string form of the argument."""
    return _change_case(False, args)


def substr(*args: object) -> object:
    """Perl-like ``substr(s, offset[, length])``; negatives count from the end."""
    if len(args) < 2 or len(args) > 3:
        return ERROR
    if any(a is UNDEFINED for a in args):
        return UNDEFINED
    s, off = args[0], args[1]
    if type(s) is not str or type(off) is not int:
        return ERROR
    has_len = len(args) == 3
    if has_len and type(args[2]) is not int:
        return ERROR
    length = to_int32(args[2]) if has_len else 0  # type: ignore[arg-type]
    offset = to_int32(off)
    data = s if s.isascii() else _b(s)
    alen = len(data)
    if offset < 0:
        offset = max(alen + offset, 0)
    elif offset >= alen:
        offset = alen
    if length <= 0:
        length = max(alen - offset + length, 0)
    elif length > alen - offset:
        length = alen - offset
    if has_len and to_int32(args[2]) == 0:  # type: ignore[arg-type]
        length = 0  # an explicit length of 0 always gives ""
    piece = data[offset : offset + length]
    return piece if type(piece) is str else _s(piece)


def _cmp_strings(insensitive: bool, args: tuple[object, ...]) -> object:
    if len(args) != 2:
        return ERROR
    a, b = args
    if a is UNDEFINED or b is UNDEFINED:
        return UNDEFINED
    sa = convert_to_string(a)
    sb = convert_to_string(b)
    if type(sa) is not str or type(sb) is not str:
        return ERROR
    ba, bb = _b(sa), _b(sb)
    if insensitive:
        ba, bb = ba.lower(), bb.lower()
    return (ba > bb) - (ba < bb)


def strcmp(*args: object) -> object:
    """-1, 0 or 1 comparing the string forms byte by byte."""
    return _cmp_strings(False, args)


def stricmp(*args: object) -> object:
    """As ``strcmp`` but ignoring ASCII case."""
    return _cmp_strings(True, args)


# --- versions -------------------------------------------------------------


def _sc(b: int) -> int:
    """A byte read as C ``char`` (signed)."""
    return b - 256 if b >= 128 else b


def natural_cmp(s1: bytes, s2: bytes) -> int:
    """Version-aware comparison in the manner of ``strverscmp(3)``; returns a signed difference."""
    a = s1 + b"\0"
    b = s2 + b"\0"
    i = 0
    while a[i] != 0 and i < len(b) and a[i] == b[i]:
        i += 1
    if a[i] == b[i]:
        return 0
    n_beg = i
    while n_beg > 0 and 48 <= a[n_beg - 1] <= 57:
        n_beg -= 1
    ndig = i - n_beg

    def dig(x: int) -> bool:
        return 48 <= x <= 57

    if ndig == 0 and (not dig(a[i]) or not dig(b[i])):
        return _sc(a[i]) - _sc(b[i])
    n1, n2 = n_beg, n_beg
    z1 = n1
    while a[z1] == 48:
        z1 += 1
    z2 = n2
    while b[z2] == 48:
        z2 += 1
    if z1 > n1 and not dig(a[z1]):
        z1 -= 1
    if z2 > n2 and not dig(b[z2]):
        z2 -= 1
    if z1 - n1 != z2 - n2:
        return (z2 - n2) - (z1 - n1)
    if z1 > n1:
        return _sc(a[i]) - _sc(b[i])
    e1 = z1
    while dig(a[e1]):
        e1 += 1
    e2 = z2
    while dig(b[e2]):
        e2 += 1
    if e1 - n1 != e2 - n2:
        return (e1 - n1) - (e2 - n2)
    return _sc(a[i]) - _sc(b[i])


def _version_args(args: tuple[object, ...]) -> object:
    strs = []
    for v in args:
        s = convert_to_string(v)
        if type(s) is not str:
            return ERROR
        strs.append(_b(s))
    return strs


def _version(test: str, args: tuple[object, ...]) -> object:
    if len(args) != 2:
        return ERROR
    if args[0] is UNDEFINED or args[1] is UNDEFINED:
        return UNDEFINED
    strs = _version_args(args)
    if type(strs) is not list:
        return strs
    r = natural_cmp(strs[0], strs[1])
    if test == "cmp":
        return r
    return {
        "le": r <= 0, "lt": r < 0, "ge": r >= 0, "gt": r > 0, "eq": r == 0,
    }[test]


def versioncmp(*args: object) -> object:
    """Natural (version-aware) comparison; negative, zero or positive."""
    return _version("cmp", args)


def version_le(*args: object) -> object:
    return _version("le", args)


def version_lt(*args: object) -> object:
    return _version("lt", args)


def version_ge(*args: object) -> object:
    return _version("ge", args)


def version_gt(*args: object) -> object:
    return _version("gt", args)


def version_eq(*args: object) -> object:
    return _version("eq", args)


def version_in_range(*args: object) -> object:
    """``version_in_range(v, lo, hi)``: lo <= v <= hi by natural comparison."""
    if len(args) != 3:
        return ERROR
    if args[1] is UNDEFINED or args[2] is UNDEFINED:
        return UNDEFINED
    strs = _version_args(args)
    if type(strs) is not list:
        return strs
    t, lo, hi = strs
    return natural_cmp(lo, t) <= 0 and natural_cmp(t, hi) <= 0


# --- splitting ------------------------------------------------------------


def _split_at(slot: bool, args: tuple[object, ...]) -> object:
    if len(args) != 1 or type(args[0]) is not str:
        return ERROR
    s = args[0]
    first, at, second = s.partition("@")
    if not at:
        return ["", s] if slot else [s, ""]
    return [first, second]


def splitusername(*args: object) -> object:
    """``user@domain`` -> ``{user, domain}`` (domain empty without ``@``)."""
    return _split_at(False, args)


def splitslotname(*args: object) -> object:
    """``slot@machine`` -> ``{slot, machine}`` (slot empty without ``@``)."""
    return _split_at(True, args)


def split(*args: object) -> object:
    """``split(s[, seps])``: runs of white space collapse, repeated non-space separators yield empty items."""
    if len(args) not in (1, 2):
        return ERROR
    s = args[0]
    seps: object = args[1] if len(args) == 2 else ", \t"
    if type(s) is not str or type(seps) is not str:
        return ERROR
    out: list[object] = []
    last = 0
    if seps:
        prev = ""
        n = len(s)
        ix = _find_first_of(s, seps, 0)
        while ix < n:
            if ix > last:
                out.append(s[last:ix])
            elif not _isspace(prev) and prev == s[ix]:
                out.append("")
            if not _isspace(s[ix]):
                prev = s[ix]
            last = ix + 1
            ix = _find_first_of(s, seps, last)
    if len(s) > last:
        out.append(s[last:])
    return out


def _isspace(c: str) -> bool:
    return c != "" and c in _C_SPACE


def _find_first_of(s: str, chars: str, start: int) -> int:
    for i in range(start, len(s)):
        if s[i] in chars:
            return i
    return len(s)


def tokens(s: str, delims: str) -> list[str]:
    """HTCondor's ``StringTokenIterator``: split on any delimiter, trim C white space, drop empties."""
    out = []
    i, n = 0, len(s)
    while i < n:
        while i < n and (s[i] in delims or s[i] in _C_SPACE):
            i += 1
        start = i
        end = i - 1
        while i < n and s[i] not in delims:
            if s[i] not in _C_SPACE:
                end = i
            i += 1
        if i <= start:
            break
        out.append(s[start : end + 1])
    return out


def _trimmed(items: list[str]) -> list[str]:
    return [t.strip(_C_SPACE) for t in items if t.strip(_C_SPACE)]


def string_list_size(*args: object) -> object:
    """Number of items in a string list."""
    if len(args) not in (1, 2):
        return ERROR
    s = args[0]
    delims = args[1] if len(args) == 2 else ", "
    if type(s) is not str or type(delims) is not str:
        return ERROR
    return len(tokens(s, delims))


_FLT_MAX = 3.4028234663852886e38
_FLT_MIN = 1.1754943508222875e-38


def _summarize(kind: str, args: tuple[object, ...]) -> object:
    if len(args) not in (1, 2):
        return ERROR
    s = args[0]
    delims = args[1] if len(args) == 2 else ", "
    if type(s) is not str or type(delims) is not str:
        return ERROR
    # min and max start from FLT_MAX / FLT_MIN (the smallest positive float!), as HTCondor does.
    acc = {"sum": 0.0, "avg": 0.0, "min": _FLT_MAX, "max": _FLT_MIN}[kind]
    is_real = False
    items = tokens(s, delims)
    for entry in items:
        val, ok = strtod(entry)
        if not ok:
            return ERROR
        if entry.strip("+-0123456789"):
            is_real = True
        if kind in ("sum", "avg"):
            acc = val + acc
        elif kind == "min":
            acc = val if val < acc else acc
        else:
            acc = val if val > acc else acc
    if not items:
        return 0.0 if kind in ("sum", "avg") else UNDEFINED
    if kind == "avg":
        acc /= len(items)
    if is_real:
        return acc
    return double_to_int64(acc)


def string_list_sum(*args: object) -> object:
    return _summarize("sum", args)


def string_list_avg(*args: object) -> object:
    return _summarize("avg", args)


def string_list_min(*args: object) -> object:
    return _summarize("min", args)


def string_list_max(*args: object) -> object:
    return _summarize("max", args)


def _string_list_member(insensitive: bool, subset: bool, args: tuple[object, ...]) -> object:
    if len(args) not in (2, 3):
        return ERROR
    item, lst = args[0], args[1]
    delims: object = ", \t\r\n"
    for v in args:
        if v is not UNDEFINED and type(v) is not str:
            return ERROR
    if len(args) == 3 and type(args[2]) is str:
        delims = args[2]
    if item is UNDEFINED and lst is UNDEFINED:
        return UNDEFINED
    item_s = item if type(item) is str else ""
    list_s = lst if type(lst) is str else ""
    assert type(delims) is str
    fold = (lambda x: _b(x).lower()) if insensitive else (lambda x: x)
    if not subset:
        wanted = fold(item_s)
        return any(fold(t) == wanted for t in tokens(list_s, delims))
    if item_s == "":
        return True
    have = {fold(t) for t in _trimmed(tokens(list_s, delims))}
    found = False
    for t in _trimmed(tokens(item_s, delims)):
        found = fold(t) in have
        if not found:
            break
    return found


def string_list_member(*args: object) -> object:
    """``stringListMember(x, list[, delims])``: exact membership."""
    return _string_list_member(False, False, args)


def string_list_imember(*args: object) -> object:
    """``stringListIMember``: case-insensitive membership."""
    return _string_list_member(True, False, args)


def string_list_subset_match(*args: object) -> object:
    """``stringListSubsetMatch(a, b[, delims])``: every item of ``a`` is in ``b``."""
    return _string_list_member(False, True, args)


def string_list_isubset_match(*args: object) -> object:
    """``stringListISubsetMatch``: case-insensitive subset test."""
    return _string_list_member(True, True, args)


def _split_no_trim(s: str, delims: str) -> list[str]:
    out = []
    i, n = 0, len(s)
    while i < n:
        j = i
        while j < n and s[j] not in delims:
            j += 1
        if j > i:
            out.append(s[i:j])
        i = j + 1
    return out


def string_lists_intersect(*args: object) -> object:
    """``stringListsIntersect(a, b[, delims])``: the lists share an item (no trimming)."""
    if len(args) not in (2, 3):
        return ERROR
    if any(a is ERROR for a in args):
        return ERROR
    if any(a is UNDEFINED for a in args):
        return UNDEFINED
    delims: object = " ,"
    if len(args) == 3:
        if type(args[2]) is not str:
            return ERROR
        delims = args[2] or " ,"
    if type(args[0]) is not str or type(args[1]) is not str:
        return ERROR
    assert type(delims) is str
    second = set(_split_no_trim(args[1], delims))
    return any(t in second for t in _split_no_trim(args[0], delims))

