"""``getenv``: which of the submitter's environment variables a job takes with it.

As condor_submit (10+): ``getenv`` is either a boolean (``true``/``false``/``1``/``0``,
or a ClassAd expression that evaluates to one; ``yes`` and ``no`` are *not* booleans
here, they are variable names) or a list of name patterns split on commas, semicolons
and blanks. A pattern starting with ``!`` excludes the names it matches; with no plain
pattern every other name is taken. Names match case-insensitively, with HTCondor's
``*`` wildcard (see :func:`wildcard_match`). The variables the description sets itself
(``environment``) win over imported ones.

A value holding a newline is never imported (the job ad could not carry it); one
holding ``;`` is not imported either when the description uses ``environment``/``env``
rather than ``environment2``, whatever syntax that value is written in: HTCondor keeps
such an environment expressible in the old ``;``-separated syntax.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_SEPARATORS = re.compile(r"[,; \t\r\n]+")


def wildcard_match(pattern: str, name: str) -> bool:
    """HTCondor's ``matches_withwildcard`` (case-insensitive): one ``*`` at the start or
    in the middle, plus optionally one at the very end; any other ``*`` is a literal."""
    p, s = pattern.lower(), name.lower()
    star = p.find("*")
    if star < 0:
        return p == s
    anywhere = False  # the part after the star may be found anywhere, not only at the end
    if star == 0:
        start, end = "", p[1:]
    elif star == len(p) - 1:
        start, end, anywhere = p[:-1], "", True
    else:
        start, end = p[:star], p[star + 1:]
    if end.endswith("*"):
        end, anywhere = end[:-1], True
    if not s.startswith(start):
        return False
    tail = s[len(start):]
    if not end:
        return True
    return end in tail if anywhere else tail.endswith(end)


def as_boolean(value: str) -> bool | None:
    """``getenv`` read as condor_submit's ``string_is_boolean_param``: True/False, or
    None when it is not a boolean (then it is a list of patterns)."""
    s = value.strip()
    low = s.lower()
    for word, result in (("true", True), ("1", True), ("false", False), ("0", False)):
        if low.startswith(word) and not low[len(word):].strip():
            return result
    # lazy: the ClassAd library only for a getenv that is neither a literal nor a plain list
    from roost.classad import ExprTree

    try:
        got = ExprTree(s).eval()
    except Exception:  # not an expression (``PATH, HOME``): a pattern list
        return None
    if type(got) is bool:
        return got
    if type(got) in (int, float):
        return got != 0
    return None


def patterns(value: str) -> tuple[list[str], list[str]]:
    """(names to take, names to leave) from a pattern list such as ``*, !SECRET*``."""
    take: list[str] = []
    leave: list[str] = []
    for word in _SEPARATORS.split(value):
        if word.startswith("!"):
            if word[1:].strip():
                leave.append(word[1:].strip())
        elif word:
            take.append(word)
    return take, leave


def imported(env: Mapping[str, str], value: str, *, v1_safe: bool) -> list[tuple[str, str]]:
    """The (name, value) pairs ``getenv = value`` takes from ``env``, sorted by name."""
    flag = as_boolean(value)
    if flag is False:
        return []
    take, leave = ([], []) if flag else patterns(value)
    out: list[tuple[str, str]] = []
    for name, val in sorted(env.items()):
        if not name or "\n" in val or (v1_safe and ";" in val):
            continue
        if leave and any(wildcard_match(p, name) for p in leave):
            continue
        if take and not any(wildcard_match(p, name) for p in take):
            continue
        out.append((name, val))
    return out
