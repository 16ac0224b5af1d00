"""Regular-expression built-ins: regexp, regexpMember, regexps, replace, replaceall, stringList_regexpMember.

HTCondor uses PCRE2.  Patterns are translated to Python ``re`` syntax where
the two differ (``\\z``/``\\Z``, ``\\h``, ``\\Q..\\E``, ``\\x{..}``, ``(?<name>``,
POSIX bracket classes); a pattern neither can compile gives ERROR.  Option
letters: ``i`` caseless, ``m`` multiline, ``s`` dotall, ``x`` extended; for
substitution ``f`` returns the whole target with replacements made in place
and ``g`` replaces every match.  Global replacement reproduces PCRE2's
empty-match stepping, including its ERROR when an empty match sits at the
very end of the target.
"""

from __future__ import annotations

import functools
import re
import warnings

from roost.classad.func_strings import tokens
from roost.classad.values import ERROR, UNDEFINED

_POSIX = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
    "lower": "a-z", "space": " \\t\\n\\r\\f\\v", "blank": " \\t", "punct": "!-/:-@\\[-`{-~",
    "xdigit": "0-9A-Fa-f", "word": "\\w", "cntrl": "\\x00-\\x1f\\x7f", "print": " -~",
    "graph": "!-~", "ascii": "\\x00-\\x7f",
}


_POSIX_NEGATED = {"digit": "\\D", "space": "\\S", "word": "\\W"}

# PCRE escapes that Python spells differently (8-bit, non-UTF mode), outside and inside [...].
_ESCAPES = {
    "z": "\\Z",
    "Z": "(?=\\n?\\Z)",
    "h": "[ \\t\\xa0]",
    "H": "[^ \\t\\xa0]",
    "v": "[\\n\\x0b\\f\\r\\x85]",
    "V": "[^\\n\\x0b\\f\\r\\x85]",
    "R": "(?:\\r\\n|[\\n\\x0b\\f\\r\\x85])",
    "N": "[^\\n]",
    "e": "\\x1b",
}
_ESCAPES_IN_CLASS = {
    "h": " \\t\\xa0",
    "v": "\\n\\x0b\\f\\r\\x85",
    "e": "\\x1b",
}


def _posix_end(p: str, i: int) -> int:
    """PCRE's ``check_posix_syntax`` at ``p[i] == '['``: index of the closing ``:]``/``.]``/``=]``, or -1."""
    if i + 1 >= len(p) or p[i + 1] not in ":.=":
        return -1
    term = p[i + 1]
    j = i + 2
    n = len(p)
    while j < n:
        ch = p[j]
        if ch == "\\" and j + 1 < n and p[j + 1] in "]\\":
            j += 2
            continue
        if (ch == "[" and j + 1 < n and p[j + 1] == term) or ch == "]":
            return -1
        if ch == term and j + 1 < n and p[j + 1] == "]":
            return j
        j += 1
    return -1


def _translate(p: str) -> str:
    """Rewrite the PCRE-only constructs of a pattern into Python ``re`` syntax."""
    out: list[str] = []
    i, n = 0, len(p)
    in_class = False
    while i < n:
        c = p[i]
        if c == "\\" and i + 1 < n:
            d = p[i + 1]
            if d == "Q":
                end = p.find("\\E", i + 2)
                lit = p[i + 2 :] if end < 0 else p[i + 2 : end]
                out.append(re.escape(lit))
                i = n if end < 0 else end + 2
                continue
            if d == "E":
                i += 2
                continue
            if d in "kg" and not in_class and i + 2 < n and p[i + 2] in "<{'":
                close = {"<": ">", "{": "}", "'": "'"}[p[i + 2]]
                end = p.find(close, i + 3)
                if end < 0:
                    raise re.error("bad back reference")
                ref = p[i + 3 : end]
                if d == "g" and p[i + 2] == "<":
                    raise re.error("subroutine calls unsupported")
                out.append(f"(?:\\{int(ref)})" if ref.isdigit() else f"(?P={ref})")
                i = end + 1
                continue
            simple = _ESCAPES_IN_CLASS.get(d) if in_class else _ESCAPES.get(d)
            if simple is not None:
                out.append(simple)
            elif d in "xo" and i + 2 < n and p[i + 2] == "{":
                end = p.find("}", i + 3)
                if end < 0:
                    raise re.error("bad \\x{ or \\o{")
                code = int(p[i + 3 : end] or "0", 16 if d == "x" else 8)
                if code > 255:
                    raise re.error("code point too large without UTF mode")
                out.append(re.escape(chr(code)))
                i = end + 1
                continue
            elif d == "c" and i + 2 < n:
                out.append(re.escape(chr(ord(p[i + 2].upper()) ^ 0x40)))
                i += 3
                continue
            elif d in "KGpPX" or (d == "g" and i + 2 < n and p[i + 2] in "+-0123456789"):
                raise re.error("PCRE escape without a Python equivalent")
            else:
                out.append(c + d)
            i += 2
            continue
        if in_class:
            end = _posix_end(p, i) if c == "[" else -1
            if end >= 0:
                if p[i + 1] != ":":
                    raise re.error("POSIX collating elements are not supported")
                name = p[i + 2 : end]
                rng = _POSIX_NEGATED.get(name[1:]) if name.startswith("^") else _POSIX.get(name)
                if rng is None:
                    raise re.error("unknown POSIX class")
                out.append(rng)
                i = end + 2
                continue
            if c == "[":
                out.append("\\[")
                i += 1
                continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            if _posix_end(p, i) >= 0:
                raise re.error("POSIX class syntax outside a class")
            in_class = True
            out.append(c)
            i += 1
            # a ']' right after '[' or '[^' is a literal in PCRE
            if i < n and p[i] == "^":
                out.append("^")
                i += 1
            if i < n and p[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "(" and p.startswith("(?<", i) and i + 3 < n and p[i + 3] not in "=!":
            out.append("(?P<")
            i += 3
            continue
        if c == "(" and p.startswith("(?'", i):
            end = p.find("'", i + 3)
            if end > 0:
                out.append(f"(?P<{p[i + 3:end]}>")
                i = end + 1
                continue
        if c == "(" and p.startswith("(?)", i):
            i += 3  # an empty option setting
            continue
        if c == "(" and p.startswith("(?P>", i):
            raise re.error("recursion unsupported")
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def compile_pcre(pattern: str, options: str) -> re.Pattern[str] | None:
    """Compile a PCRE pattern with HTCondor option letters; None if it does not compile."""
    flags = 0
    if "i" in options:
        flags |= re.IGNORECASE
    if "m" in options:
        flags |= re.MULTILINE
    if "s" in options:
        flags |= re.DOTALL
    if "x" in options:
        flags |= re.VERBOSE
    # PCRE without UTF mode works on bytes: \w, \d and case folding are ASCII-only.
    flags |= re.ASCII
    try:
        with warnings.catch_warnings():
            # Python warns about "[[", "--", "&&" in classes (future set syntax); PCRE reads them plainly.
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(_translate(to_bytes_str(pattern)), flags)
    except (re.error, ValueError, OverflowError, RecursionError, IndexError):
        return None


def to_bytes_str(s: str) -> str:
    """A string whose characters are the UTF-8 bytes of ``s``: PCRE without UTF mode sees bytes."""
    return s if s.isascii() else s.encode("utf-8", "surrogateescape").decode("latin-1")


def from_bytes_str(s: str) -> str:
    """Inverse of :func:`to_bytes_str`."""
    return s if s.isascii() else s.encode("latin-1").decode("utf-8", "surrogateescape")


_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))*")


@functools.lru_cache(maxsize=256)
def _nonempty_at(rx: re.Pattern[str], idx: int) -> re.Pattern[str] | None:
    """``rx`` constrained so that a match starting at ``idx`` cannot end there."""
    lead = _LEADING_FLAGS.match(rx.pattern)
    head = lead.group(0) if lead else ""
    body = rx.pattern[len(head) :]
    newline = "\n" if rx.flags & re.VERBOSE else ""  # keep a trailing comment from eating the ')'
    try:
        return re.compile(f"{head}(?:{body}{newline})(?<!\\A[\\s\\S]{{{idx}}})", rx.flags)
    except (re.error, OverflowError, RecursionError):
        return None


def _expand(m: re.Match[str], replace: str) -> str | None:
    """Apply HTCondor's ``\\N`` replacement syntax; None when a group number is out of range."""
    # pcre2 reports 1 + the highest group that took part in the match.
    ngroups = 1
    for g in range(m.re.groups, 0, -1):
        if m.start(g) >= 0:
            ngroups = g + 1
            break
    out: list[str] = []
    i, n = 0, len(replace)
    while i < n:
        c = replace[i]
        if c == "\\" and i + 1 < n and replace[i + 1].isdigit() and replace[i + 1].isascii():
            k = ord(replace[i + 1]) - 48
            if k >= ngroups:
                return None
            out.append(m.group(k) or "")
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def regexp_helper(pattern: str, target: str, replace: str | None, options: str | None) -> object:
    """Match, or substitute when ``replace`` is given; HTCondor's ``regexp_helper``."""
    opts = options or ""
    rx = compile_pcre(pattern, opts)
    if rx is None:
        return ERROR
    target = to_bytes_str(target)
    if replace is None:
        return rx.search(target) is not None
    replace = to_bytes_str(replace)
    full = "f" in opts
    find_all = "g" in opts
    out: list[str] = []
    idx = 0
    empty_match = False
    n = len(target)
    while True:
        if idx > n:
            return ERROR  # pcre2 rejects a start offset past the end
        if empty_match:
            # PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED: the first non-empty match starting here.
            nonempty = _nonempty_at(rx, idx)
            m = nonempty.match(target, idx) if nonempty is not None else None
        else:
            m = rx.search(target, idx)
        if empty_match and m is None:
            out.append(target[idx] if idx < n else "\0")
            idx += 1
            empty_match = False
            if not find_all:
                break
            continue
        if m is None:
            break
        if full:
            out.append(target[idx : m.start()])
        piece = _expand(m, replace)
        if piece is None:
            return ERROR
        out.append(piece)
        idx = m.end()
        if m.start() == m.end():
            empty_match = True
        if not find_all:
            break
    if full:
        out.append(target[idx:])
    return from_bytes_str("".join(out))


def _options_arg(args: tuple[object, ...], nfixed: int) -> tuple[object, str | None]:
    """Common argument screening: ERROR beats UNDEFINED; options must be a string."""
    if any(a is ERROR for a in args):
        return ERROR, None
    if any(a is UNDEFINED for a in args):
        return UNDEFINED, None
    if len(args) > nfixed:
        opt = args[nfixed]
        if type(opt) is not str:
            return ERROR, None
        return None, opt
    return None, None


def regexp(*args: object) -> object:
    """``regexp(pattern, target[, options])``: true if the pattern matches somewhere."""
    if len(args) not in (2, 3):
        return ERROR
    bad, opts = _options_arg(args, 2)
    if bad is not None:
        return bad
    pattern, target = args[0], args[1]
    if type(pattern) is not str or type(target) is not str:
        return ERROR
    return regexp_helper(pattern, target, None, opts)


def _subst(extra: str, args: tuple[object, ...]) -> object:
    if len(args) not in (3, 4):
        return ERROR
    bad, opts = _options_arg(args, 3)
    if bad is not None:
        return bad
    pattern, target, replace = args[0], args[1], args[2]
    opts = (opts or "") + extra if extra or opts is not None else None
    if type(pattern) is not str or type(target) is not str or type(replace) is not str:
        return ERROR
    return regexp_helper(pattern, target, replace, opts)


def regexps(*args: object) -> object:
    """``regexps(pattern, target, replacement[, options])``: the substituted text."""
    return _subst("", args)


def replace(*args: object) -> object:
    """``replace(pattern, target, replacement[, options])``: first match replaced in place."""
    return _subst("f", args)


def replaceall(*args: object) -> object:
    """``replaceAll(pattern, target, replacement[, options])``: every match replaced."""
    return _subst("fg", args)


def regexp_member(*args: object) -> object:
    """``regexpMember(pattern, list[, options])``: some string in the list matches."""
    if len(args) not in (2, 3):
        return ERROR
    bad, opts = _options_arg(args, 2)
    if bad is not None:
        return bad
    pattern, lst = args[0], args[1]
    if type(pattern) is not str or type(lst) is not list:
        return ERROR
    maybe_undefined = False
    for elem in lst:
        if type(elem) is not str:
            if elem is UNDEFINED:
                maybe_undefined = True
                continue
            return ERROR
        # HTCondor ignores the helper's ERROR here: a pattern that does not
        # compile simply matches nothing.
        if regexp_helper(pattern, elem, None, opts) is True:
            return True
    return UNDEFINED if maybe_undefined else False


def string_list_regexp_member(*args: object) -> object:
    """``stringList_regexpMember(pattern, list[, delims[, options]])``; an empty list is UNDEFINED."""
    if len(args) < 2 or len(args) > 4:
        return ERROR
    if any(type(a) is not str for a in args):
        return ERROR
    pattern, lst = args[0], args[1]
    delims = args[2] if len(args) >= 3 else ", "
    opts = "".join(ch for ch in str(args[3]).lower() if ch in "imsx") if len(args) == 4 else ""
    assert type(pattern) is str and type(lst) is str and type(delims) is str
    rx = compile_pcre(pattern, opts)
    if rx is None:
        return ERROR
    items = tokens(lst, delims)
    if not items:
        return UNDEFINED
    return any(rx.search(to_bytes_str(t)) is not None for t in items)
