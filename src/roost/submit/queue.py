"""Queue statements: ``queue [N] [vars] [from|in|matching [slice] [files|dirs] source]``.

Each queue statement yields a count and a list of items (dicts of the queue's
variables, ``Item`` by default); every item is queued N times (``$(Step)``
0..N-1) with ``$(ItemIndex)``/``$(Row)`` its index in the whole, unsliced list,
as condor_submit does.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from roost.submit.errors import SubmitError

#: the first of in/from/matching standing alone between blanks (or before "("), any case
_KEYWORD_RE = re.compile(r"(?:^|\s)(from|in|matching)(?=\s|\(|$)", re.IGNORECASE)
_SLICE_RE = re.compile(r"\[\s*(-?\d*)\s*(?::\s*(-?\d*)\s*(?::\s*(-?\d*)\s*)?)?\]")
_VAR_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


@dataclass
class QueueSpec:
    """One parsed queue statement (macros in its line already expanded)."""

    count_expr: str = "1"
    vars: list[str] = field(default_factory=list)
    mode: str = ""  # "", "from", "in", "matching"
    slice: tuple[int | None, int | None, int | None] | None = None
    match_kind: str = ""  # "", "files", "dirs"
    source: str = ""  # file name, inline text or glob patterns
    inline: list[str] | None = None
    #: the items were a one-line ``( ... )`` list (for ``from``: a single row)
    one_line: bool = False
    line: int = 0
    file: str | None = None

    def selected(self, ix: int, n: int) -> bool:
        if self.slice is None:
            return True
        start, stop, step = self.slice
        r = range(n)[slice(start, stop, step)]
        return ix in r


def parse_queue_args(args: str, rows: list[str] | None = None, *, file: str | None = None, line: int = 0) -> QueueSpec:
    """Parse the text after ``queue`` (and any lines its ``(`` swallowed)."""
    spec = QueueSpec(line=line, file=file, inline=rows)
    m = _KEYWORD_RE.search(args)
    head = args[: m.start(1)] if m else args
    tail = args[m.end(1):].strip() if m else ""
    head_tokens = [t for t in re.split(r"[\s,]+", head.strip()) if t]
    if m is None:
        spec.count_expr = head.strip() or "1"
        return spec
    spec.mode = m.group(1).lower()
    # head: [count] var[, var...]
    if head_tokens and not _VAR_RE.match(head_tokens[0]):
        spec.count_expr = head_tokens.pop(0)
    spec.vars = head_tokens or ["Item"]
    for v in spec.vars:
        if not _VAR_RE.match(v):
            raise SubmitError(f"queue: '{v}' is not a valid variable name", file=file, line=line)
    sm = _SLICE_RE.match(tail)
    if sm:
        def num(s: str | None) -> int | None:
            return int(s) if s not in (None, "") else None
        spec.slice = (num(sm.group(1)), num(sm.group(2)), num(sm.group(3)))
        if spec.slice[2] == 0:
            raise SubmitError("queue: a slice step cannot be 0", file=file, line=line)
        tail = tail[sm.end():].strip()
    if spec.mode == "matching":
        km = re.match(r"(files|dirs|any)\b\s*", tail, re.IGNORECASE)
        if km:
            spec.match_kind = km.group(1).lower()
            tail = tail[km.end():]
    if tail.startswith("(") and rows is None:
        close = tail.rfind(")")
        if close < 0:
            raise SubmitError("queue: '(' without ')'", file=file, line=line)
        spec.inline = [tail[1:close]]
        spec.one_line = True
        tail = ""
    spec.source = tail.strip()
    if spec.inline is None and not spec.source:
        raise SubmitError(f"queue ... {spec.mode}: nothing to read items from", file=file, line=line)
    return spec


_SEP = re.compile("[, \t]")
_US_SEP = re.compile("\x1f")
_WS = " \t"


def split_row(row: str, nvars: int) -> list[str]:
    """Split a ``from`` row into at most nvars fields, as condor_submit does.

    The row is trimmed; each split is at the first comma, space or tab (or at the
    0x1F unit separator when the row has one), blanks around it trimmed; the last
    field keeps the rest; missing fields are empty. An empty row gives no fields.
    """
    ws = _WS
    row = row.strip(" \t\r\n")
    if not row:
        return []
    if nvars <= 1:
        return [row]
    sep = _US_SEP if "\x1f" in row else _SEP
    if nvars == 2:  # the common case, without the loop
        m = sep.search(row)
        if m is None:
            return [row, ""]
        return [row[:m.start()].rstrip(ws), row[m.start() + 1:].lstrip(ws)]
    vals = [row]
    while len(vals) < nvars:
        prev = vals[-1]
        m = sep.search(prev)
        if m is None:
            vals.append("")
            continue
        cut = m.start()
        vals[-1] = prev[:cut].rstrip(ws)
        vals.append(prev[cut + 1:].lstrip(ws))
    return vals


def item_lines(text: str) -> list[str]:
    """The rows of an item file (or of ``from -`` or a command's output) as condor_submit
    reads them: every line trimmed, a line ending in ``\\`` continued onto the next,
    blank lines and lines starting with ``#`` kept as rows."""
    out: list[str] = []
    pending: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is not None:
            if line.startswith("#"):
                line = line[-1:] if line.endswith("\\") else ""  # a commented-out continuation
        if line.endswith("\\") and not (pending is None and line.startswith("#")):
            pending = (pending or []) + [line[:-1]]
            continue
        out.append("".join((pending or []) + [line]))
        pending = None
    if pending is not None:
        out.append("".join(pending))
    return out


def rows_to_items(rows: list[str], vars_: list[str]) -> list[dict[str, str]]:
    """One item per row. A row with fewer fields than variables leaves the rest empty;
    an empty row changes nothing, so its proc repeats the previous row's values (empty
    for a first row), exactly as condor_submit queues it."""
    items: list[dict[str, str]] = []
    cur = dict.fromkeys(vars_, "")
    for r in rows:
        vals = split_row(r, len(vars_))
        if vals:
            cur = dict(zip(vars_, vals))
        items.append(cur)
    return items


def _glob(patterns: list[str], kind: str, cwd: str) -> tuple[list[str], list[str]]:
    """(the items, in pattern order, each once; the patterns that matched nothing of the
    kind asked for)."""
    found: list[str] = []
    seen: set[str] = set()
    empty: list[str] = []
    for pat in patterns:
        matched = 0
        d, base = os.path.split(pat)
        root = os.path.join(cwd, d) if cwd else (d or ".")
        try:
            names = sorted(os.listdir(root or "."))
        except OSError:
            names = []
        for name in names:
            if name.startswith(".") and not base.startswith("."):
                continue
            if not fnmatch.fnmatchcase(name, base):
                continue
            is_dir = os.path.isdir(os.path.join(root, name))
            if (kind == "files" and is_dir) or (kind == "dirs" and not is_dir):
                continue
            matched += 1
            item = os.path.join(d, name) + ("/" if is_dir else "")
            if item not in seen:
                seen.add(item)
                found.append(item)
        if not matched:
            empty.append(pat)
    return found, empty


ReadText = Callable[[str], str]


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _inline_lines(spec: QueueSpec) -> list[str]:
    lines = spec.inline or []
    return lines if spec.one_line else [ln for ln in lines if not ln.strip().startswith("#")]


#: runs a command (``queue ... from COMMAND |``, ``include : COMMAND |``) in a directory
#: and returns its output; ValueError when it cannot, CommandFailed when it exits non-zero
RunCommand = Callable[[str, str], str]
#: writes a file (``include command into CACHE``)
WriteText = Callable[[str, str], None]


class CommandFailed(ValueError):
    """A command ran but exited with a non-zero status; ``output`` is what it printed
    (``include : COMMAND |`` uses it anyway, as condor_submit does)."""

    def __init__(self, message: str, *, status: int, output: str) -> None:
        super().__init__(message)
        self.status = status
        self.output = output


class CommandNotAllowed(SubmitError):
    """A description wants a command run (``queue ... from COMMAND |``, ``include :
    COMMAND |``) where no command may run."""


def load_items(
    spec: QueueSpec,
    *,
    cwd: str = "",
    read_text: ReadText = _read_text,
    stdin_text: str | None = None,
    run_command: RunCommand | None = None,
    fail_empty: bool = False,
    warn: Callable[[str], None] | None = None,
) -> list[dict[str, str]] | None:
    """The items of a queue statement, or None for a plain ``queue N``.

    Files are read through ``read_text`` and commands run through ``run_command``
    so that the caller (``roost.submit.reading``) decides how the system is reached;
    ``from -`` reads ``stdin_text``. A ``matching`` pattern that matches nothing is
    no error (its statement may queue no job), only a warning through ``warn``, unless
    ``fail_empty`` (``submit_fail_empty_matches``), as in condor_submit.
    """
    if not spec.mode:
        return None
    if spec.mode == "from":
        if spec.inline is not None:
            # inside the submit file: lines starting with # are comments, blank lines are rows
            rows = [ln.strip() for ln in _inline_lines(spec)]
        else:
            src = spec.source
            if src == "-":
                text = stdin_text or ""
            elif src.endswith("|"):
                cmd = src[:-1].strip()
                if run_command is None:
                    raise CommandNotAllowed(f"queue from {src}: commands cannot be run here",
                                            file=spec.file, line=spec.line)
                try:
                    text = run_command(cmd, cwd)
                except (OSError, ValueError) as e:
                    raise SubmitError(f"queue from {src}: {e}", file=spec.file, line=spec.line) from e
            else:
                path = src if os.path.isabs(src) or not cwd else os.path.join(cwd, src)
                try:
                    text = read_text(path)
                except OSError as e:
                    raise SubmitError(f"queue from {src}: cannot read item file: {e.strerror or e}",
                                      file=spec.file, line=spec.line) from e
            rows = item_lines(text)
        return rows_to_items(rows, spec.vars)
    if spec.mode == "in":
        text = "\n".join(_inline_lines(spec)) if spec.inline is not None else spec.source
        words = [w for w in re.split(r"[\s,]+", text) if w]
        return [{v: (w if i == 0 else "") for i, v in enumerate(spec.vars)} for w in words]
    # matching
    text = "\n".join(_inline_lines(spec)) if spec.inline is not None else spec.source
    pats = [w for w in re.split(r"[\s,]+", text) if w]
    found, empty = _glob(pats, spec.match_kind, cwd)
    if empty and fail_empty:
        raise SubmitError("queue matching: no matches for pattern(s): " + " ".join(f"'{p}'" for p in empty),
                          file=spec.file, line=spec.line)
    for pat in empty if warn is not None else ():
        warn(f"'{pat}' does not match any files")
    return [{v: (w if i == 0 else "") for i, v in enumerate(spec.vars)} for w in found]
