"""Reading a submit description on this machine, as condor_submit does before the
language runs: the file (or stdin), the environment, the working directory, and the
sizes of files the description names (``RequestDisk``, transfer sizes).

The language itself (``roost.submit.description``) takes these as arguments; the
tools, the Python API and the schedd's SUBMIT_TEXT all read them the same way here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from roost.submit.description import SubmitDescription, parse_submit


def file_size(path: str) -> int:
    """A file's size for the submit language (``RequestDisk``, transfer sizes); 0 if unreadable."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def parse_file(
    path: str,
    *,
    overrides: Mapping[str, str] | None = None,
    append: list[str] | None = None,
    cwd: str | None = None,
) -> SubmitDescription:
    """Read and parse a submit file (``-`` for stdin); SubmitError on a bad description."""
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return parse_text(text, file="<stdin>" if path == "-" else path, overrides=overrides,
                      append=append, cwd=cwd)


def parse_text(
    text: str,
    *,
    file: str | None = None,
    overrides: Mapping[str, str] | None = None,
    append: list[str] | None = None,
    cwd: str | None = None,
) -> SubmitDescription:
    return parse_submit(text, file=file, cwd=cwd or os.getcwd(), env=dict(os.environ),
                        overrides=dict(overrides or {}), append=list(append or []), file_size=file_size)


__all__ = ["file_size", "parse_file", "parse_text"]
