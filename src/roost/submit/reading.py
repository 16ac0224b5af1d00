"""Reading a submit description on this machine, as condor_submit does before the
language runs: the file (or stdin), the environment, the working directory, and the
sizes of files the description names (``RequestDisk``, transfer sizes).

The language itself (``roost.submit.description``) takes these as arguments; the
tools, the Python API and the schedd's SUBMIT_TEXT all read them the same way here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from roost.submit import arglist
from roost.submit.description import SubmitDescription, parse_submit
from roost.submit.queue import CommandFailed


def file_size(path: str) -> int:
    """A file's size for the submit language (``RequestDisk``, transfer sizes); 0 if unreadable."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def run_command(cmd: str, cwd: str) -> str:
    """Run a ``queue ... from COMMAND |`` or ``include : COMMAND |`` command and return
    what it printed.

    As condor_submit: no shell (the command is split into words like ``arguments``,
    old or new syntax), run in the submit directory with the tool's environment, its
    stderr passed through; a non-zero exit status raises CommandFailed (which refuses a
    ``queue ... from``; an ``include`` takes the output anyway).
    """
    try:
        argv = (arglist.split_v2_raw(arglist.parse_arguments2(cmd)) if arglist.is_v2_quoted(cmd)
                else cmd.split())
    except arglist.ArgSyntaxError as e:
        raise ValueError(f"cannot split the command: {e}") from None
    if not argv:
        raise ValueError("no command before '|'")
    try:
        got = subprocess.run(argv, cwd=cwd or None, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             check=False)
    except OSError as e:
        raise ValueError(f"not a valid command: {e.strerror or e}") from None
    out = got.stdout.decode("utf-8", "replace")
    if got.returncode != 0:
        raise CommandFailed(f"command terminated with exit code {got.returncode}", status=got.returncode,
                            output=out)
    return out


def write_text(path: str, text: str) -> None:
    """Write an ``include command into CACHE`` file (mode 0644, as condor_submit)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


class PathChecks:
    """condor_submit's look at the files a description names, before anything is
    queued: what is wrong with a path for its use, or None. One per submit (answers
    are kept for that submit: ``queue 100000`` looks at each path once)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str | None] = {}

    def __call__(self, what: str, path: str) -> str | None:
        key = (what, path)
        if key not in self._seen:
            self._seen[key] = self._check(what, path)
        return self._seen[key]

    @staticmethod
    def _check(what: str, path: str) -> str | None:
        if what == "initialdir":  # the job starts there: it must be a directory we can enter
            if not os.path.isdir(path):
                return f"{path}: {'not a directory' if os.path.exists(path) else 'no such directory'}"
            return None if os.access(path, os.X_OK) else f"{path}: cannot enter that directory"
        if what in ("executable", "input"):
            if not os.path.exists(path):
                return f"{path}: no such file"
            if not os.access(path, os.R_OK):
                return f"{path}: not readable"
            if what == "executable":
                if os.path.isdir(path):
                    return f"{path}: is a directory"
                try:
                    with open(path, "rb") as f:
                        head = f.read(512)
                except OSError as e:
                    return f"{path}: {e.strerror}"
                first = head.split(b"\n", 1)[0]
                if first.startswith(b"#!") and first.endswith(b"\r"):
                    return (f"{path}: a script with DOS line endings (CRLF): its #! line would name "
                            "an interpreter ending in a carriage return (convert it with dos2unix)")
            return None
        # a file the job or the schedd will write: its directory must be there and writable
        parent = os.path.dirname(path) or "."
        if not os.path.isdir(parent):
            return f"{path}: its directory {parent} does not exist"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"{path}: its directory {parent} is not writable"
        return None


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
                        overrides=dict(overrides or {}), append=list(append or []), file_size=file_size,
                        check_path=PathChecks(), run_command=run_command, write_text=write_text)


__all__ = ["PathChecks", "file_size", "parse_file", "parse_text", "run_command", "write_text"]
