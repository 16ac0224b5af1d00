"""CERTIFICATE_MAPFILE: from an authenticated principal (a certificate's subject DN,
a Kerberos principal) to a pool identity, in HTCondor's map-file format.

One rule a line, ``METHOD PRINCIPAL CANONICAL``; ``#`` starts a comment. PRINCIPAL is
a literal, double-quoted when it holds spaces or starts with a slash (a DN:
``"/O=pool/CN=alice"``), or ``/regex/`` (``\\/`` for a slash,
an ``i`` after the closing slash ignores case), matched against the whole
principal (``re.search``, as HTCondor's PCRE: anchor it with ^ and $); CANONICAL may use ``\\1``…
for the regex's groups. The first rule of the connection's method that matches
wins; no match is no identity (the method fails and says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_GROUP = re.compile(r"\\(\d)")


class MapFileError(Exception):
    """A line of the map file does not read: ``path:line: what`` (``path``, ``line``:
    0 for the whole file, ``what``)."""

    def __init__(self, path: str, line: int, what: str) -> None:
        super().__init__(f"{path}:{line}: {what}" if line else f"{path}: {what}")
        self.path, self.line, self.what = path, line, what


@dataclass(frozen=True)
class Rule:
    method: str
    pattern: re.Pattern[str] | str
    canonical: str
    where: str

    def apply(self, principal: str) -> str | None:
        if isinstance(self.pattern, str):
            return self.canonical if principal == self.pattern else None
        m = self.pattern.search(principal)
        if m is None:
            return None
        groups = m.groups()

        def group(g: re.Match[str]) -> str:
            i = int(g.group(1))
            if i == 0:
                return m.group(0)
            return (groups[i - 1] or "") if i <= len(groups) else ""

        return _GROUP.sub(group, self.canonical)


def _fields(line: str, where: tuple[str, int]) -> list[str]:
    """Split a rule into its three fields, keeping a quoted or /regex/ field whole."""
    out: list[str] = []
    i, n = 0, len(line)
    while i < n:
        if line[i].isspace():
            i += 1
            continue
        if line[i] in "\"/" and len(out) == 1:
            close = line[i]
            j = i + 1
            while j < n and line[j] != close:
                j += 2 if line[j] == "\\" else 1
            if j >= n:
                raise MapFileError(*where, f"unterminated {close}…{close} in the principal")
            j += 1
            while j < n and not line[j].isspace():  # regex flags
                j += 1
            out.append(line[i:j])
            i = j
            continue
        j = i
        while j < n and not line[j].isspace():
            j += 1
        out.append(line[i:j])
        i = j
    return out


def parse(text: str, path: str = "<map>") -> list[Rule]:
    rules = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = (path, lineno)
        fields = _fields(line, where)
        if len(fields) != 3:
            raise MapFileError(*where, f"expected METHOD PRINCIPAL CANONICAL, found {len(fields)} field(s)")
        method, principal, canonical = fields
        pattern: re.Pattern[str] | str
        if principal.startswith("/"):
            end = principal.rfind("/")
            if end == 0:
                raise MapFileError(*where, "unterminated /regex/")
            flags = principal[end + 1:]
            if flags.strip("i"):
                raise MapFileError(*where, f"unknown regex flag(s) {flags!r} (only i)")
            body = principal[1:end].replace("\\/", "/")
            try:
                pattern = re.compile(body, re.IGNORECASE if "i" in flags else 0)
            except re.error as e:
                raise MapFileError(*where, f"bad regular expression {body!r}: {e}") from None
        elif principal.startswith('"'):
            pattern = principal[1:-1].replace('\\"', '"')
        else:
            pattern = principal
        rules.append(Rule(method.upper(), pattern, canonical, f"{path}:{lineno}"))
    return rules


def load(path: str) -> list[Rule]:
    try:
        with open(path, encoding="utf-8") as f:
            return parse(f.read(), path)
    except OSError as e:
        raise MapFileError(path, 0, f"cannot be read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise MapFileError(path, 0, "not UTF-8 text") from None


def map_principal(rules: list[Rule], method: str, principal: str) -> str | None:
    """The canonical identity of ``principal`` under ``method``, or None."""
    for rule in rules:
        if rule.method == method:
            out = rule.apply(principal)
            if out is not None:
                return out
    return None
