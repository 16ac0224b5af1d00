"""A session beside a running job (``Schedd.ssh_to_job``, ``Schedd.run_in_job``):
the tool's end of the relay of :mod:`roost.net.relay`.

Blocking and single-threaded, like the rest of the API: the caller reads packets when
``fileno()`` is readable (or ``buffered()``), and sends stdin, its end and window
sizes. ``roost ssh_to_job`` drives one with the local terminal in raw mode;
``run_in_job`` runs one command to its end and returns what it printed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from roost.api.errors import PoolError
from roost.net import relay
from roost.net.syncclient import SyncClient


class CommandResult(NamedTuple):
    """What a command run in a job's sandbox did: its exit code (or, killed, the signal
    in ``exit_signal`` and 128 + it in ``returncode``), its stdout and stderr."""

    returncode: int
    stdout: bytes
    stderr: bytes
    exit_signal: int | None = None


class JobShell:
    """One session: a shell or a command beside a running job, as the job's user.

    After the last packet (``EXIT`` or ``ERROR``) ``done`` is true and ``exit_code`` /
    ``exit_signal`` / ``error`` say how it ended.
    """

    def __init__(self, client: SyncClient, info: dict[str, Any]) -> None:
        self._client = client
        self.info = info  # the answer: pid, cwd, pty
        self.sock = client.raw_socket()
        self._parser = relay.Parser()
        self.done = False
        self.exit_code: int | None = None
        self.exit_signal: int | None = None
        self.error: str | None = None
        self._send(relay.pack(relay.GO))  # the startd sends output only from now on

    def fileno(self) -> int:
        return self.sock.fileno()

    def buffered(self) -> bool:
        """Bytes already read from the network (TLS) that a select() would not show."""
        pending = getattr(self.sock, "pending", None)
        return bool(pending()) if pending is not None else False

    def _send(self, packet: bytes) -> None:
        try:
            self.sock.sendall(packet)
        except OSError as e:
            raise PoolError(f"the session's connection broke: {e.strerror or e}") from None

    def send_stdin(self, data: bytes) -> None:
        for i in range(0, len(data), relay.CHUNK):
            self._send(relay.pack(relay.STDIN, data[i:i + relay.CHUNK]))

    def close_stdin(self) -> None:
        self._send(relay.pack(relay.STDIN_EOF))

    def resize(self, rows: int, cols: int) -> None:
        self._send(relay.window(rows, cols))

    def read(self) -> list[tuple[bytes, bytes]]:
        """The packets of one read (blocking until something comes): ``(kind, data)``,
        kinds ``relay.STDOUT`` and ``relay.STDERR``; the end sets ``done``."""
        if self.done:
            return []
        try:
            data = self.sock.recv(relay.CHUNK)
        except TimeoutError:
            raise
        except OSError as e:
            self.done, self.error = True, f"the session's connection broke: {e.strerror or e}"
            return []
        if not data:
            self.done = True
            if self.exit_code is None and self.exit_signal is None and self.error is None:
                self.error = "the connection closed before the session's exit status came"
            return []
        try:
            packets = self._parser.feed(data)
        except relay.RelayError as e:
            self.done, self.error = True, f"the session sent a broken packet: {e}"
            return []
        out = []
        for kind, body in packets:
            if kind == relay.EXIT:
                self.done = True
                try:
                    self.exit_code, self.exit_signal = relay.parse_exit(body)
                except relay.RelayError as e:
                    self.error = str(e)
            elif kind == relay.ERROR:
                self.done, self.error = True, body.decode("utf-8", "replace")
            elif kind in (relay.STDOUT, relay.STDERR):
                out.append((kind, body))
        return out

    @property
    def returncode(self) -> int:
        """ssh's convention: the exit code, 128 + a signal, 255 when the session broke."""
        if self.exit_signal:
            return 128 + self.exit_signal
        return self.exit_code if self.exit_code is not None else 255

    def close(self) -> None:
        """End the session (its processes are killed if they still run)."""
        self._client.close()

    def __enter__(self) -> JobShell:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_to_end(shell: JobShell, stdin: bytes = b"", timeout: float | None = None) -> CommandResult:
    """Feed ``stdin`` (all of it first: a command that prints much before it reads much
    input wants a session of its own), then collect the output until the end."""
    shell.sock.settimeout(timeout)
    out, err = bytearray(), bytearray()
    try:
        try:
            if stdin:
                shell.send_stdin(stdin)
            shell.close_stdin()
        except PoolError:
            # a command that never reads its input (printf) can end, and the session close
            # its side, before its stdin's end is sent: what it printed and its exit status
            # are still to read; a session that broke for another reason says so below
            pass
        while not shell.done:
            for kind, data in shell.read():
                (out if kind == relay.STDOUT else err).extend(data)
    except TimeoutError:
        raise TimeoutError(f"the command in the job ran past {timeout:g} s") from None
    finally:
        shell.close()
    if shell.error is not None and shell.exit_code is None and shell.exit_signal is None:
        raise PoolError(shell.error)
    return CommandResult(shell.returncode, bytes(out), bytes(err), shell.exit_signal)


__all__ = ["CommandResult", "JobShell", "run_to_end"]
