"""Arguments and environment strings in HTCondor's two syntaxes.

Old (V1) syntax: plain whitespace-separated words (``arguments = a b c``,
``environment = A=1;B=2``). New (V2) syntax: the whole value in double quotes,
words separated by whitespace, single quotes group a word with spaces, ``''``
inside single quotes is a literal ``'`` and ``""`` a literal ``"``.
condor_submit keeps V1 arguments in ``Args`` and V2 arguments in
``Arguments``; environment always lands in ``Environment`` in V2 form.
"""

from __future__ import annotations


class ArgSyntaxError(ValueError):
    pass


def is_v2_quoted(s: str) -> bool:
    s = s.strip()
    return len(s) >= 2 and s[0] == '"' and s[-1] == '"'


def _unquote_v2(s: str) -> str:
    s = s.strip()
    inner = s[1:-1]
    # a lone " inside is an error; "" is a literal "
    out = []
    i = 0
    while i < len(inner):
        c = inner[i]
        if c == '"':
            if i + 1 < len(inner) and inner[i + 1] == '"':
                out.append('"')
                i += 2
                continue
            raise ArgSyntaxError(f'unexpected " in {s}: write "" for a literal double quote')
        out.append(c)
        i += 1
    return "".join(out)


def split_v2_raw(raw: str) -> list[str]:
    """Split V2 raw text into words (single quotes group, '' is a literal ')."""
    words: list[str] = []
    cur: list[str] = []
    have = False
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c in " \t\r\n":
            if have:
                words.append("".join(cur))
                cur, have = [], False
            i += 1
        elif c == "'":
            have = True
            i += 1
            while True:
                if i >= n:
                    raise ArgSyntaxError(f"unterminated single quote in: {raw}")
                if raw[i] == "'":
                    if i + 1 < n and raw[i + 1] == "'":
                        cur.append("'")
                        i += 2
                        continue
                    i += 1
                    break
                cur.append(raw[i])
                i += 1
        else:
            cur.append(c)
            have = True
            i += 1
    if have:
        words.append("".join(cur))
    return words


def _append_v2_word(w: str, out: list[str]) -> None:
    """One word in HTCondor's canonical V2 raw form: only the blanks and quotes are quoted
    (``two three`` -> ``two' 'three``), neighbouring quoted runs merged, '' for an empty word."""
    if not w:
        out.append("''")
        return
    for c in w:
        if c in " \t\n\r'":
            if out and out[-1] == "'":
                out.pop()  # extend the quoted run just closed instead of opening another
            else:
                out.append("'")
            out.append("''" if c == "'" else c)
            out.append("'")
        else:
            out.append(c)


def join_v2_raw(words: list[str]) -> str:
    """Words as condor_submit writes ``Arguments``/``Environment`` (V2 raw)."""
    out: list[str] = []
    for i, w in enumerate(words):
        if i:
            out.append(" ")
        _append_v2_word(w, out)
    return "".join(out)


def parse_arguments(value: str) -> tuple[str, str]:
    """(attribute, value) for an ``arguments`` command: ``Args`` (V1) or ``Arguments`` (V2)."""
    if is_v2_quoted(value):
        return "Arguments", join_v2_raw(split_v2_raw(_unquote_v2(value)))
    # V1: words split on whitespace; \" is a literal double quote
    words = value.replace('\\"', '"').split()
    return "Args", " ".join(words)


def parse_arguments2(value: str) -> str:
    """``arguments2`` (always V2, quoted or not)."""
    raw = _unquote_v2(value) if is_v2_quoted(value) else value
    return join_v2_raw(split_v2_raw(raw))


def parse_environment(value: str, v1_delim: str = ";") -> list[tuple[str, str]]:
    """Environment assignments from V1 (``A=1;B=2``) or V2 (``"A=1 B='x y'"``) text."""
    if is_v2_quoted(value):
        words = split_v2_raw(_unquote_v2(value))
    else:
        words = [w.strip() for w in value.split(v1_delim) if w.strip()] if v1_delim in value else value.split()
        if v1_delim not in value and len(words) > 1:
            # V1 with a single assignment may not contain spaces outside the value
            words = [value.strip()]
    out: list[tuple[str, str]] = []
    for w in words:
        name, eq, val = w.partition("=")
        if not eq or not name:
            raise ArgSyntaxError(f"environment entry '{w}' is not NAME=VALUE")
        out.append((name, val))
    return out


def join_environment(pairs: list[tuple[str, str]]) -> str:
    """The V2 raw form HTCondor stores in ``Environment``."""
    merged: dict[str, str] = {}
    for k, v in pairs:
        merged[k] = v
    # HTCondor keeps the environment in a map: written sorted by name
    return join_v2_raw([f"{k}={merged[k]}" for k in sorted(merged)])
