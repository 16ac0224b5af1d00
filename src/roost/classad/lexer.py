"""ClassAd tokenizer, following the rules of HTCondor's own lexer.

Quirks kept on purpose because real ClassAd text relies on them:

- ``-`` directly followed by a digit (or ``.digit``) is part of a negative
  number literal unless the previous token ends an operand (a value, a name,
  ``)``, ``]``, ``}`` or ``.``).  So ``-1`` and ``a - -1`` hold the literal
  ``-1`` while ``- 1`` and ``a -1`` use the minus operator.
- Integers with a leading zero (``010``, ``0x1F``) are errors, as in HTCondor's
  default (non-strict) mode; reals may start with zeros (``09.5``).  An integer
  too large for 64 bits reads as 0, as HTCondor's ``from_chars`` leaves it.
- Adjacent string literals separated only by white space are one literal
  (``"a" "b"`` is ``"ab"``); the same holds for quoted names.
- Escapes: ``\\n \\t \\\\ \\" \\'`` and friends, octal ``\\ooo`` (three digits only
  when the first is 0-3); any other escaped character stands for itself; an
  escape producing NUL is an error.  Octal escapes yield bytes, so strings are
  decoded as UTF-8 with ``surrogateescape`` (``"\\303\\251"`` is ``"é"``).
- ``is``/``isnt`` are the operators ``=?=``/``=!=``; ``true``, ``false``,
  ``undefined`` and ``error`` are case-insensitive keywords; a quoted name
  such as ``'true'`` is always a plain name.
- ``?`` and ``:`` separated only by white space form the elvis operator ``?:``.

A token is a tuple ``(kind, value, offset)``.  ``kind`` is the operator text
for punctuation (``"+"``, ``"=?="``, ``"?:"``...) or one of ``int real str id
bool undef err end``.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ClassAdSyntaxError
from .values import INT64_MAX, INT64_MIN

Token = tuple[str, Any, int]


_WS = "[ \\t\\n\\r\\f\\v]"

# The first alternative is a quirk: "0x1.5" is a hexadecimal real (HTCondor hands the
# lexeme to strtod), while a hexadecimal integer ("0x1F") is an error.
_NUMBER = (
    r"-?(?:0[xX][0-9A-Fa-f]+\.[0-9]+(?:[eE][+-]?[0-9]+)?"
    r"|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
)
_HEX_PREFIX = re.compile(r"-?0[xX][0-9A-Fa-f]*\.?[0-9A-Fa-f]*")
# "/" only when it does not open a comment (comments are matched after operators)
# ".." is one selection token, an HTCondor lexer quirk ("a..b" is "a.b").
_OPS = rf""">>>|>>|>=|<<|<=|==|=\?=|=!=|!=|&&|\|\||\?{_WS}*:|\.\.(?![0-9])|[-.*%+~^?:;,\[\](){{}}&|<>=!]|/(?![/*])"""


def _master(string: str, name: str) -> re.Pattern[str]:
    # White space, then one alternative per token class, most frequent first;
    # the group number picks the handler.  Group 7 catches any other
    # character, so matches follow each other without gaps and finditer sees
    # the whole text.
    return re.compile(
        rf"{_WS}*+(?:"
        r"([A-Za-z_][A-Za-z0-9_]*+)"  # 1 name or keyword
        rf"|({_NUMBER})"  # 2 number (before operators: "-1", ".5")
        rf"|({_OPS})"  # 3 operator
        rf"|({string})"  # 4 string
        r"|(//[^\n]*|/\*.*?(?:\*/|\Z))"  # 5 comment
        rf"|({name})"  # 6 quoted name
        r"|([^ \t\n\r\f\v]))",  # 7 anything else: an error
        re.DOTALL,
    )


# New syntax: backslash escapes anything; adjacent literals concatenate.
_MASTER = _master(
    rf'"[^"\\]*(?:\\.[^"\\]*)*"(?:{_WS}*"[^"\\]*(?:\\.[^"\\]*)*")*',
    rf"'(?:[^'\\]|\\.)*'(?:{_WS}*'(?:[^'\\]|\\.)*')*",
)
# Old syntax (old-format ads): only \" is special, and not at the very end;
# every other backslash is an ordinary character.
_OLD_MASTER = _master(
    r'"(?:[^"\\]|\\(?!")|\\"(?!\Z))*(?:\\"\Z|")',
    r"'(?:[^'\\]|\\(?!')|\\'(?!\Z))*(?:\\'\Z|')",
)

# After these token kinds a '-' is the minus operator, never a sign.
_ENDS_OPERAND = frozenset(
    ["int", "real", "bool", "str", "undef", "err", "id", ".", "]", ")", "}"]
)

_KEYWORDS: dict[str, tuple[str, Any]] = {
    "true": ("bool", True),
    "false": ("bool", False),
    "undefined": ("undef", None),
    "error": ("err", None),
    "is": ("=?=", None),
    "isnt": ("=!=", None),
}

_SIMPLE_ESCAPES = {
    ord('"'): ord('"'), ord("'"): ord("'"), ord("?"): ord("?"), ord("a"): 7, ord("b"): 8,
    ord("f"): 12, ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("v"): 11, ord("\\"): ord("\\"),
}
_STR_PIECE = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_NAME_PIECE = re.compile(r"'((?:[^'\\]|\\.)*)'", re.DOTALL)


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of ``offset`` in ``text``."""
    line = text.count("\n", 0, offset) + 1
    start = text.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def syntax_error(message: str, text: str, offset: int) -> ClassAdSyntaxError:
    line, column = position(text, offset)
    return ClassAdSyntaxError(message, text=text, line=line, column=column)


def convert_escapes(raw: str) -> str | None:
    """Turn the escapes of a string literal body into characters; None if one yields NUL."""
    if "\\" not in raw:
        return None if "\0" in raw else raw
    try:
        data = raw.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        data = raw.encode("utf-8", "surrogatepass")
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        c = data[i]
        if c == 0x5C and i < n - 1:  # backslash, not the last character
            i += 1
            c = data[i]
            if c in _SIMPLE_ESCAPES:
                c = _SIMPLE_ESCAPES[c]
            elif 0x30 <= c <= 0x37:
                num = c - 0x30
                if i + 1 < n and 0x30 <= data[i + 1] <= 0x37:
                    i += 1
                    num = (num << 3) + data[i] - 0x30
                    if num < 0x20 and i + 1 < n and 0x30 <= data[i + 1] <= 0x37:
                        i += 1
                        num = (num << 3) + data[i] - 0x30
                c = num & 0xFF
                if c == 0:
                    return None
        elif c == 0:
            return None
        out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _number(text: str, s: str, offset: int) -> Token:
    """Classify a number lexeme the way HTCondor's tokenizeNumber does."""
    digits = s[1:] if s[0] == "-" else s
    if "." in s or "e" in s or "E" in s:
        if "x" in s or "X" in s:  # what C's strtod reads of it: "0x1.5E+3" is 0x1.5E
            return ("real", float.fromhex(_HEX_PREFIX.match(s).group()), offset)  # type: ignore[union-attr]
        return ("real", float(s), offset)
    if digits[0] == "0" and len(digits) > 1:
        # HTCondor reads 0-leading digits as octal-looking; an 8 or 9 makes it
        # an unfinished real, and an unsigned 0-leading integer is rejected.
        if "8" in digits or "9" in digits or s[0] != "-":
            raise syntax_error(f"invalid number {s!r}", text, offset)
    v = int(s)
    if v > INT64_MAX or v < INT64_MIN:
        v = 0
    return ("int", v, offset)


def tokenize(text: str, old: bool = False) -> list[Token]:
    """Split ``text`` into tokens, ending with an ``end`` token; raise ClassAdSyntaxError.

    ``old`` selects old-format string rules (for values in old-format ads).
    """
    toks: list[Token] = []
    append = toks.append
    n = len(text)
    prev = ""
    for m in (_OLD_MASTER if old else _MASTER).finditer(text):
        g = m.lastindex
        s = m.group(g)  # type: ignore[arg-type]
        pos = m.start(g)  # type: ignore[arg-type]
        if g == 3:
            if len(s) > 1 and (s[0] == "?" or s[0] == "."):
                s = "?:" if s[0] == "?" else "."
            tok: Token = (s, None, pos)
        elif g == 1:
            kw = _KEYWORDS.get(s.lower()) if len(s) in (2, 4, 5, 9) else None
            tok = (kw[0], kw[1], pos) if kw else ("id", s, pos)
        elif g == 2:
            if s[0] == "-" and prev in _ENDS_OPERAND:
                append(("-", None, pos))
                s = s[1:]
                pos += 1
            end = m.end()
            if end < n and "." not in s and "e" not in s and "E" not in s:
                c = text[end]
                if c == ".":
                    # "5." or "5.e3": HTCondor rejects a dot with no digits after it
                    raise syntax_error(f"invalid number {text[pos:end + 1]!r}", text, pos)
                if c == "e" or c == "E":
                    # "1e", "1e+", "1else": an exponent with no digits
                    raise syntax_error("invalid exponent in number", text, pos)
            tok = _number(text, s, pos)
        elif g == 5:
            if s[1] == "*" and (len(s) < 4 or not s.endswith("*/")):
                raise syntax_error("unterminated /* comment", text, pos)
            continue
        elif g == 4:
            if old:
                val: str | None = _old_string(s)
            else:
                raw = "".join(_STR_PIECE.findall(s)) if s.count('"') > 2 else s[1:-1]
                val = convert_escapes(raw)
                if val is None:
                    raise syntax_error("string contains a NUL character", text, pos)
            tok = ("str", val, pos)
        elif g == 6:
            if old:
                val = _old_string(s)
            else:
                raw = "".join(_NAME_PIECE.findall(s)) if s.count("'") > 2 else s[1:-1]
                val = convert_escapes(raw)
                if val is None:
                    raise syntax_error("quoted name contains a NUL character", text, pos)
            tok = ("id", val, pos)
        else:
            _bad_token(text, pos)
        append(tok)
        prev = tok[0]
    append(("end", None, n))
    return toks


def _old_string(s: str) -> str:
    """Body of an old-syntax string: ``\\"`` stands for ``"``, other backslashes are literal."""
    body = s[1:-1]
    if "\\" not in body:
        return body
    q = s[0]
    if body.endswith("\\"):
        # only a backslash-quote ending the line can close the string this way
        return body[:-1].replace("\\" + q, q) + "\\"
    return body.replace("\\" + q, q)


def _bad_token(text: str, pos: int) -> None:
    c = text[pos]
    if c == '"':
        raise syntax_error("unterminated string literal", text, pos)
    if c == "'":
        raise syntax_error("unterminated quoted name", text, pos)
    if c == "=" and text.startswith("=?", pos):
        raise syntax_error("'=?' must be followed by '=' (the =?= operator)", text, pos)
    if text.startswith("/*", pos):
        raise syntax_error("unterminated /* comment", text, pos)
    raise syntax_error(f"unexpected character {c!r}", text, pos)
