"""The ``include`` statement: submit text from a file or from a command's output.

The forms of HTCondor's reader (the same for configuration and submit files):

- ``include : FILE`` reads FILE; ``include ifexist : FILE`` skips a FILE that is not
  there.
- ``include : COMMAND |`` (a ``|`` at the end) and ``include command : COMMAND`` run
  COMMAND and read its output. As for ``queue ... from COMMAND |`` there is no shell:
  the command line is split into words like ``arguments`` (old or new syntax). condor_submit
  does not look at its exit status here: a command that fails still has its output read
  (roost warns). One that cannot start is an error, or skipped with ``ifexist``.
- ``include command into CACHE : COMMAND`` reads CACHE when it exists; otherwise runs
  COMMAND, and only when it exits 0 writes its output to CACHE and reads that. A failure
  is an error, or includes nothing with ``ifexist``.

Running and writing belong to the caller (``roost.submit.reading``): without
``run_command`` a description that needs a command raises CommandNotAllowed, so the
schedd hands it back to the submitting tool.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from roost.submit import lexer
from roost.submit.errors import SubmitError, SubmitWarning
from roost.submit.queue import CommandFailed, CommandNotAllowed, ReadText, RunCommand, WriteText


def included_text(
    st: lexer.Include,
    expand: Callable[[str], str],
    *,
    cwd: str,
    read_text: ReadText,
    run_command: RunCommand | None,
    write_text: WriteText | None,
    warnings: list[SubmitWarning],
) -> tuple[str, str] | None:
    """(the name its lines are reported under, the text) an include brings in, or None
    when it brings in nothing (``ifexist``)."""
    target = expand(st.path).strip()
    here = {"file": st.file, "line": st.line}
    if not st.command and "|" not in target:
        full = target if os.path.isabs(target) else os.path.join(cwd, target)
        try:
            return target, read_text(full)
        except OSError as e:
            if st.ifexist:
                return None
            raise SubmitError(f"include : {target}: cannot read ({e.strerror or e})", **here) from e
    cmd = target.rstrip("| ") if target.endswith("|") else target
    if "|" in cmd or not cmd:
        raise SubmitError(f"include : {target}: not a valid command (a '|' may only end it)", **here)
    if st.into is not None:
        return _cached(st, cmd, expand(st.into).strip(), cwd=cwd, read_text=read_text,
                       run_command=run_command, write_text=write_text)
    if run_command is None:
        raise CommandNotAllowed(f"include : {cmd} |: commands cannot be run here", **here)
    try:
        return f"{cmd} |", run_command(cmd, cwd)
    except CommandFailed as e:
        warnings.append(SubmitWarning(f"include : {cmd} |: the command exited with status {e.status}; "
                                      "its output was read all the same (as condor_submit does)", **here))
        return f"{cmd} |", e.output
    except (OSError, ValueError) as e:
        if st.ifexist:
            return None
        raise SubmitError(f"include : {cmd} |: {e}", **here) from e


def _cached(st: lexer.Include, cmd: str, cache: str, *, cwd: str, read_text: ReadText,
            run_command: RunCommand | None, write_text: WriteText | None) -> tuple[str, str] | None:
    here = {"file": st.file, "line": st.line}
    if not cache:
        raise SubmitError("include command into: the cache file name expanded to ''", **here)
    if cache.endswith("|"):
        raise SubmitError(f"include command into {cache}: the cache may not be a command", **here)
    full = cache if os.path.isabs(cache) else os.path.join(cwd, cache)
    try:
        return f"{cmd} |", read_text(full)
    except OSError:
        pass  # not made yet: run the command
    if run_command is None or write_text is None:
        raise CommandNotAllowed(f"include command into {cache} : {cmd}: commands cannot be run here", **here)
    try:
        text = run_command(cmd, cwd)
    except (OSError, ValueError) as e:
        if st.ifexist:
            return None
        raise SubmitError(f"include command into {cache} : {cmd}: {e}", **here) from e
    try:
        write_text(full, text)
    except OSError as e:
        if st.ifexist:
            return None
        raise SubmitError(f"include command into {cache}: cannot write it ({e.strerror or e})", **here) from e
    return f"{cmd} |", text
