"""``roost ssh_to_job``: a shell beside a running job, as the job's user, in its sandbox
and with its environment (HTCondor's condor_ssh_to_job).

``roost ssh_to_job [-name SCHEDD] [-pool CM] [-auto-retry] JOB [COMMAND ...]``:
without a COMMAND, an interactive shell on a terminal of its own (the local terminal
in raw mode, its size passed on as it changes); with one, the words joined by spaces
and run by ``/bin/sh -c`` there, as ssh runs a remote command, stdin passed on,
stdout and stderr kept apart. The exit status is the command's (128 + a signal that
killed it); 255 when no session could be had or it broke (the job ended, say), as
ssh does. Nothing but the daemons' own connections is used: no sshd, no new port.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from typing import Any

from roost.api.connection import RefusedError
from roost.api.errors import PoolError
from roost.api.jobids import is_job_id
from roost.api.schedd import Schedd
from roost.cli.options import FLAG, Parser, UsageError, pool_spec
from roost.cli.restrict import error_line
from roost.cli.tail_cmd import job_idle
from roost.net import relay

PROG = "roost ssh_to_job"
FAILED = 255  # ssh's status for "no session"
RETRY_INTERVAL = 2.0

SPEC = {
    "auto-retry": (FLAG, "while the job is not yet running, try again every 2 seconds"),
    "debug": (FLAG, "accepted for condor_ssh_to_job's sake; does nothing"),
    **pool_spec(),
}
_VALUED = ("name", "pool")  # the options that take a value


def split_argv(argv: list[str]) -> tuple[list[str], str, list[str]]:
    """(options, job id, command words): options come before the job id, and every
    word after it is the command's, dashes included (``id -un``)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        word = a.lstrip("-")
        if a.startswith("-") and word and any(v.startswith(word) for v in _VALUED):  # -name X, -pool X (or -na X)
            i += 2
            continue
        if a.startswith("-") and a != "-":
            i += 1
            continue
        return argv[:i], a, argv[i + 1:]
    raise UsageError("name a job: CLUSTER.PROC")


def main(argv: list[str]) -> int:
    parser = Parser(PROG, "[-auto-retry] [-name SCHEDD] [-pool CM] JOB [COMMAND ...]", SPEC)
    try:
        if any(a in ("-h", "-help", "--help") for a in argv[:1]):
            parser.parse(argv[:1])
        options, job, command = split_argv(argv)
        opts = parser.parse(options)
        if not is_job_id(job):
            raise UsageError(f"{job!r} is not a job id (CLUSTER.PROC)")
    except UsageError as e:
        print(f"{PROG}: {e}\n{parser.help_text()}", file=sys.stderr)
        return 2
    schedd = Schedd(name=opts.name, pool=opts.pool)  # type: ignore[arg-type]
    interactive = not command and os.isatty(0)
    try:
        shell = _open(schedd, job, " ".join(command) or None, interactive, bool(opts.values["auto-retry"]))
    except PoolError as e:
        print(error_line(PROG, e), file=sys.stderr)
        return FAILED
    finally:
        schedd.close()
    try:
        _relay(shell, interactive)
    finally:
        shell.close()
    if shell.error is not None and shell.exit_code is None and shell.exit_signal is None:
        print(f"{PROG}: {shell.error}", file=sys.stderr)
    return shell.returncode


def _open(schedd: Schedd, job: str, command: str | None, interactive: bool, retry: bool) -> Any:
    rows = cols = 0
    if interactive:
        with contextlib.suppress(OSError):
            cols, rows = os.get_terminal_size(0)
    while True:
        try:
            return schedd.ssh_to_job(job, command, pty=interactive, term=os.environ.get("TERM"),
                                     rows=rows, cols=cols)
        except RefusedError as e:
            if not (retry and e.code == "NOT_RUNNING" and job_idle(schedd, job)):
                raise
        time.sleep(RETRY_INTERVAL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            select.select([], [fd], [])
            continue
        view = view[n:]


def _relay(shell: Any, interactive: bool) -> None:
    """Local stdin to the session, its output to ours, until it ends (one thread)."""
    # lazy: a terminal's modes matter only to an interactive session
    import termios
    import tty

    saved = None
    wake_r = wake_w = -1
    old_wakeup = None
    old_winch: Any = None
    if interactive:
        saved = termios.tcgetattr(0)
        tty.setraw(0)
        # SIGWINCH wakes the select through a pipe: the new size goes to the session
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        old_winch = signal.signal(signal.SIGWINCH, lambda *_: None)
    stdin_open = True
    try:
        while not shell.done:
            wanted = [shell.fileno()] + ([0] if stdin_open else []) + ([wake_r] if wake_r >= 0 else [])
            ready = [shell.fileno()] if shell.buffered() else select.select(wanted, [], [])[0]
            if shell.fileno() in ready:
                for kind, data in shell.read():
                    _write_all(1 if kind == relay.STDOUT else 2, data)
            if 0 in ready and not shell.done:
                data = os.read(0, relay.CHUNK)
                if data:
                    shell.send_stdin(data)
                else:
                    shell.close_stdin()
                    stdin_open = False
            if wake_r >= 0 and wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
                with contextlib.suppress(OSError):
                    cols, rows = os.get_terminal_size(0)
                    shell.resize(rows, cols)
    finally:
        if saved is not None:
            termios.tcsetattr(0, termios.TCSADRAIN, saved)
            signal.set_wakeup_fd(old_wakeup if old_wakeup is not None else -1)
            signal.signal(signal.SIGWINCH, old_winch)
            os.close(wake_r)
            os.close(wake_w)
