"""Split a submit description into statements (assignments, queue, include, if...).

The submit language is line-based: ``name = value``, ``+Attr = expr``,
``MY.Attr = expr``, ``queue ...`` (whose ``from (`` / ``in (`` forms swallow
the following lines up to a closing ``)``), ``include`` (a file or a command's
output), and
``if``/``elif``/``else``/``endif``. A trailing backslash continues a line and
``name @=tag`` starts a value that runs until a line ``@tag``. Comments are
whole lines starting with ``#``; a ``#`` later in a line is part of the value,
as in HTCondor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from roost.submit.errors import SubmitError

_QUEUE_RE = re.compile(r"queue(?:\s+|$)(.*)$", re.IGNORECASE | re.DOTALL)
_INCLUDE_RE = re.compile(r"include((?:\s+[^\s:=]+)*)\s*:\s*(.*)$", re.IGNORECASE)
_IF_RE = re.compile(r"(if|elif|else|endif)\b\s*(.*)$", re.IGNORECASE)
_KEY_RE = re.compile(r"([+]?[A-Za-z_][A-Za-z0-9_.]*)\s*(@?=)\s*(.*)$", re.DOTALL)
# the keyword that starts a queue's item list, and an optional slice / files|dirs
_QSRC_RE = re.compile(r"\b(from|in|matching)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Assign:
    key: str
    value: str
    line: int
    file: str | None = None


@dataclass(frozen=True)
class Queue:
    args: str
    line: int
    file: str | None = None
    rows: list[str] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Include:
    """``include [ifexist] [command [into CACHE]] : TARGET``; TARGET is a file, or a
    command line when ``command`` is given or it ends in ``|``."""

    path: str
    line: int
    file: str | None = None
    ifexist: bool = False
    command: bool = False
    into: str | None = None


def _include(options: str, target: str, line: int, file: str | None) -> Include:
    """The options between ``include`` and ``:``, as HTCondor's config and submit reader
    takes them: ``[ifexist|ifexists] [command|output [into FILE]]``."""
    words = options.split()
    ifexist = command = False
    into: str | None = None
    i = 0
    if i < len(words) and words[i].lower() in ("ifexist", "ifexists"):
        ifexist, i = True, i + 1
    if i < len(words) and words[i].lower() in ("command", "output"):
        command, i = True, i + 1
        if i < len(words) and words[i].lower() == "into":
            if i + 1 >= len(words):
                raise SubmitError("expected a file name after 'include command into'", file=file, line=line)
            into, i = words[i + 1], i + 2
    if i < len(words):
        raise SubmitError(f"unexpected keyword(s) '{' '.join(words[i:])}' after include (expected "
                          "'include [ifexist] : FILE', 'include : COMMAND |' or "
                          "'include [ifexist] command [into CACHE] : COMMAND')", file=file, line=line)
    return Include(target, line, file, ifexist, command, into)


@dataclass(frozen=True)
class Conditional:
    word: str  # if, elif, else, endif
    condition: str
    line: int
    file: str | None = None


Statement = Assign | Queue | Include | Conditional


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; return (first line number, text) pairs."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if pending:
            if line.lstrip().startswith("#"):
                continue  # comment lines inside a continuation are skipped
            line = line.lstrip()
        else:
            start = n
        if line.rstrip().endswith("\\"):
            pending.append(line.rstrip()[:-1])
            continue
        pending.append(line)
        out.append((start, "".join(pending)))
        pending = []
    if pending:
        out.append((start, "".join(pending)))
    return out


def _needs_block(args: str) -> bool:
    """True when a queue line opens a ``(`` item list it does not close."""
    m = _QSRC_RE.search(args)
    if not m:
        return False
    rest = args[m.end():]
    i = rest.find("(")
    if i < 0:
        return False
    return ")" not in rest[i:]


def is_queue_statement(line: str) -> bool:
    """Whether one line is a queue statement as :func:`lex` reads it (``queue_name = x``
    is an assignment, not a queue)."""
    s = line.strip()
    return bool(s) and _QUEUE_RE.match(s) is not None and "=" not in s.split(None, 1)[0]


def lex(text: str, file: str | None = None) -> list[Statement]:
    """Turn submit text into statements; raise SubmitError on a line it cannot read."""
    out: list[Statement] = []
    lines = _logical_lines(text)
    i = 0
    while i < len(lines):
        n, line = lines[i]
        i += 1
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = _QUEUE_RE.match(s) if is_queue_statement(s) else None
        if m:
            args = m.group(1).strip()
            rows: list[str] | None = None
            if _needs_block(args):
                rows = []
                closed = False
                while i < len(lines):
                    _, body = lines[i]
                    i += 1
                    if body.strip().startswith(")"):
                        closed = True
                        break
                    rows.append(body)
                if not closed:
                    raise SubmitError("queue item list opened with '(' is never closed", file=file, line=n)
                cut = args.rfind("(")
                first = args[cut + 1:].strip()
                if first:  # text after "(" on the queue line is the first row
                    rows.insert(0, first)
                args = args[:cut].rstrip()
            out.append(Queue(args, n, file, rows))
            continue
        m = _INCLUDE_RE.match(s)
        if m and "=" not in s[: s.find(":")]:
            out.append(_include(m.group(1) or "", m.group(2).strip(), n, file))
            continue
        m = _IF_RE.match(s)
        if m and not re.match(r"(if|elif|else|endif)\s*@?=", s, re.IGNORECASE):
            out.append(Conditional(m.group(1).lower(), m.group(2).strip(), n, file))
            continue
        m = _KEY_RE.match(s)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3).strip()
            if op == "@=":
                tag = value
                body: list[str] = []
                closed = False
                while i < len(lines):
                    _, b = lines[i]
                    i += 1
                    if b.strip() == "@" + tag:
                        closed = True
                        break
                    body.append(b.strip())
                if not closed:
                    raise SubmitError(f"'{key} @={tag}' is never closed by '@{tag}'", file=file, line=n)
                value = "\n".join(body)
            out.append(Assign(key, value, n, file))
            continue
        raise SubmitError(f"syntax error: cannot read '{s}' (expected 'name = value' or 'queue')", file=file, line=n)
    return out
