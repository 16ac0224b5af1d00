"""Arguments and environment strings in HTCondor's two syntaxes.

Old (V1) syntax: plain whitespace-separated words (``arguments = a b c``,
``environment = A=1;B=2``). New (V2) syntax: the whole value in double quotes,
words separated by whitespace, single quotes group a word with spaces, ``''``
inside single quotes is a literal ``'`` and ``""`` a literal ``"``.
condor_submit keeps V1 arguments in ``Args`` and V2 arguments in
``Arguments``; environment always lands in ``Environment`` in V2 form.
"""

from __future__ import annotations

from collections.abc import Callable

from roost.classad.func_environ import join_args_v2, split_args_v2


class ArgSyntaxError(ValueError):
    pass


def is_v2_quoted(s: str) -> bool:
    """New syntax: the first non-blank character is a double quote (HTCondor's test; the
    value must then close the quote, see :func:`_unquote_v2`)."""
    return s.lstrip()[:1] == '"'


def _unquote_v2(s: str) -> str:
    """The text inside a new-syntax value: ``""`` is a literal ``"``; after the closing
    quote only blanks may follow."""
    s = s.strip()
    out: list[str] = []
    i, n = 1, len(s)
    while i < n:
        c = s[i]
        if c == '"':
            if i + 1 < n and s[i + 1] == '"':
                out.append('"')
                i += 2
                continue
            if s[i + 1:].strip():
                raise ArgSyntaxError(f"unexpected text after the closing double quote: {s[i:]} "
                                     '(write "" for a literal double quote inside the quotes)')
            return "".join(out)
        out.append(c)
        i += 1
    raise ArgSyntaxError(f"unterminated double quote in: {s}")


def _unwack_v1(value: str) -> str:
    """Old-syntax arguments: ``\\"`` is a literal double quote, a bare one is refused (as
    condor_submit: it usually means a new-syntax value missing its opening quote)."""
    out: list[str] = []
    i, n = 0, len(value)
    while i < n:
        c = value[i]
        if c == '"':
            raise ArgSyntaxError(f"unescaped double quote in old-syntax arguments: {value[i:]} "
                                 '(write \\" for a literal one, or put the whole value in double quotes)')
        if c == "\\" and i + 1 < n and value[i + 1] == '"':
            out.append('"')
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def split_v2_raw(raw: str) -> list[str]:
    """Split V2 raw text into words (single quotes group, '' is a literal '): the
    ClassAd function ``splitArgs``'s splitter, with a submit file's error."""
    words = split_args_v2(raw)
    if words is None:
        raise ArgSyntaxError(f"unterminated single quote in: {raw}")
    return words


def join_v2_raw(words: list[str]) -> str:
    """Words as condor_submit writes ``Arguments``/``Environment`` (V2 raw: only the
    blanks and quotes are quoted, ``two three`` -> ``two' 'three``, '' for an empty
    word), the same text as the ClassAd function ``joinArgs`` makes."""
    return join_args_v2(words)


def parse_arguments(value: str) -> tuple[str, str]:
    """(attribute, value) for an ``arguments`` command: ``Args`` (V1) or ``Arguments`` (V2)."""
    if is_v2_quoted(value):
        return "Arguments", join_v2_raw(split_v2_raw(_unquote_v2(value)))
    # V1: words split on whitespace
    return "Args", " ".join(_unwack_v1(value).split())


def parse_arguments2(value: str) -> str:
    """``arguments2`` (new syntax only: the whole value in double quotes, as condor_submit)."""
    if not is_v2_quoted(value):
        raise ArgSyntaxError(f"expected the new syntax, the whole value in double quotes: {value.strip()}")
    return join_v2_raw(split_v2_raw(_unquote_v2(value)))


def parse_environment(value: str, v1_delim: str = ";") -> list[tuple[str, str]]:
    """Environment assignments from V1 (``A=1;B=2``) or V2 (``"A=1 B='x y'"``) text."""
    if is_v2_quoted(value):
        words = split_v2_raw(_unquote_v2(value))
    else:
        words = split_v1_environment(value, v1_delim)
    out: list[tuple[str, str]] = []
    for w in words:
        name, eq, val = w.partition("=")
        if not eq or not name:
            raise ArgSyntaxError(f"environment entry '{w}' is not NAME=VALUE")
        out.append((name, val))
    return out


def split_v1_environment(value: str, delim: str = ";") -> list[str]:
    """Old-syntax (V1) entries: split at ``delim`` or a newline, leading blanks dropped
    (``A=1 x; B=2`` is ``A=1 x`` and ``B=2``: blanks inside a value are part of it)."""
    out: list[str] = []
    for part in value.replace("\n", delim).split(delim):
        part = part.lstrip(" \t\r")
        if part:
            out.append(part)
    return out


def _merged(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    merged: dict[str, str] = {}
    for k, v in pairs:
        merged[k] = v
    # HTCondor keeps the environment in a map: written sorted by name
    return sorted(merged.items())


def join_environment(pairs: list[tuple[str, str]]) -> str:
    """The V2 raw form HTCondor stores in ``Environment`` (later pairs win)."""
    return join_v2_raw([f"{k}={v}" for k, v in _merged(pairs)])


def join_environment_v1(pairs: list[tuple[str, str]]) -> str:
    """The V1 form HTCondor stores in ``Env`` (with ``EnvDelim = ";"``)."""
    return ";".join(f"{k}={v}" for k, v in _merged(pairs))


def ad_environment(get: Callable[[str], object]) -> list[tuple[str, str]]:
    """A job ad's environment: ``Environment`` (V2), else ``Env`` (V1, split at
    ``EnvDelim``), as the starter reads it."""
    v2 = get("Environment")
    if isinstance(v2, str):
        words = split_v2_raw(v2)
    else:
        v1, delim = get("Env"), get("EnvDelim")
        if not isinstance(v1, str):
            return []
        words = split_v1_environment(v1, delim if isinstance(delim, str) and len(delim) == 1 else ";")
    out: list[tuple[str, str]] = []
    for w in words:
        name, eq, val = w.partition("=")
        if eq and name:
            out.append((name, val))
    return out
