"""Waiting on a daemon's own word for a state: its log line (issue 28).

A daemon logs one line per milestone (the startd: ``job launcher ready``, ``job
N.M: started, pid P, record written``, ``job N.M: exited reported``...). A test
takes a mark before it acts and waits for the line after it, instead of sleeping
a guessed time::

    mark = log_mark(start_log)
    submit(...)
    m = wait_log(start_log, r"job 3\\.0: started, pid (\\d+)", after=mark)

The mark matters: the same line from an earlier job must not answer for this one.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

POLL = 0.02  # seconds between reads: a log line is seen within this of being written


def log_mark(path: str | os.PathLike[str]) -> int:
    """Where ``path`` ends now (0 if it does not exist yet): a ``wait_log`` after it sees
    only what is written from now on."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def wait_log(path: str | os.PathLike[str], pattern: str | re.Pattern[str], after: int = 0,
             timeout: float = 30.0) -> re.Match[str]:
    """The first match of ``pattern`` (a regular expression, searched line by line) in
    ``path`` past offset ``after``; AssertionError with the log's tail after ``timeout`` s.

    A file shorter than the mark was rotated or replaced: it is read from its start."""
    rx = re.compile(pattern) if isinstance(pattern, str) else pattern
    path = Path(path)
    deadline = time.monotonic() + timeout
    pos, partial = after, ""
    while True:
        try:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                if size < pos:
                    pos, partial = 0, ""
                f.seek(pos)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        if chunk:
            pos += len(chunk)
            lines = (partial + chunk.decode(errors="replace")).split("\n")
            partial = lines.pop()  # a line not yet ended is read again whole
            for line in lines:
                m = rx.search(line)
                if m:
                    return m
        if time.monotonic() >= deadline:
            break
        time.sleep(POLL)
    raise AssertionError(f"{path.name}: no line matching {rx.pattern!r} within {timeout:g} s "
                         f"(after offset {after}); its tail:\n{_tail(path)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no such file)"
