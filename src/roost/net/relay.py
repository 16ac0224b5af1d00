"""The byte relay of ``roost ssh_to_job``: what crosses a connection once its
``SSH_TO_JOB``/``JOB_SHELL`` answer has been sent (docs/protocol.md, *Watching a
running job*).

After that answer a connection carries packets, not frames: one byte saying what the
packet is, a 4-byte big-endian length, then that many bytes. The tool sends stdin,
its end, window sizes and a first ``GO`` (the startd sends nothing before it, so the
tool can switch from its buffered frame reader to the raw socket without losing a
byte); the startd sends stdout, stderr, and last the exit status or an error. The
schedd in between copies bytes both ways without reading them (:func:`splice`).

Pure byte work plus two asyncio helpers; shared by the startd, the schedd and the
tools (which import no asyncio: it costs a command tens of milliseconds).
"""

from __future__ import annotations

import contextlib
import json
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

HEADER = struct.Struct(">cI")
HEADER_SIZE = HEADER.size
#: the largest packet either side sends (a bigger announced length is a broken peer)
MAX_PACKET = 1 << 20
#: how much output one packet carries at most
CHUNK = 64 * 1024

# tool -> startd
GO = b"g"  # start sending output (empty)
STDIN = b"i"  # bytes for the session's stdin
STDIN_EOF = b"I"  # stdin is at its end (empty); a terminal session gets ^D instead
WINDOW = b"w"  # the terminal's size: rows, columns (two unsigned 16-bit numbers)
# startd -> tool
STDOUT = b"o"
STDERR = b"e"
EXIT = b"x"  # JSON: {"exit_code": n} or {"exit_signal": n}; the last packet
ERROR = b"!"  # a one-line reason (UTF-8) the session ended without an exit status; the last packet

_WINDOW = struct.Struct(">HH")


class RelayError(Exception):
    """The other end broke the packet format."""


def pack(kind: bytes, data: bytes | bytearray | memoryview = b"") -> bytes:
    return HEADER.pack(kind, len(data)) + bytes(data)


def window(rows: int, cols: int) -> bytes:
    return pack(WINDOW, _WINDOW.pack(max(0, min(rows, 0xFFFF)), max(0, min(cols, 0xFFFF))))


def parse_window(data: bytes) -> tuple[int, int]:
    if len(data) != _WINDOW.size:
        raise RelayError(f"a window-size packet of {len(data)} bytes")
    rows, cols = _WINDOW.unpack(data)
    return rows, cols


def exit_packet(exit_code: int | None = None, exit_signal: int | None = None) -> bytes:
    body: dict[str, Any] = {"exit_signal": exit_signal} if exit_signal else {"exit_code": exit_code or 0}
    return pack(EXIT, json.dumps(body).encode())


def parse_exit(data: bytes) -> tuple[int | None, int | None]:
    """(exit code, signal) of an EXIT packet."""
    try:
        body = json.loads(data)
    except ValueError:
        raise RelayError("an exit packet that is not JSON") from None
    code, sig = body.get("exit_code"), body.get("exit_signal")
    return (code if isinstance(code, int) else None), (sig if isinstance(sig, int) else None)


def body_length(header: bytes) -> tuple[bytes, int]:
    kind, n = HEADER.unpack(header)
    if n > MAX_PACKET:
        raise RelayError(f"a packet announces {n} bytes, over {MAX_PACKET}")
    return kind, n


class Parser:
    """Packets out of a byte stream read in pieces of any size (the tool's side)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[tuple[bytes, bytes]]:
        self._buf += data
        out = []
        while len(self._buf) >= HEADER_SIZE:
            kind, n = body_length(bytes(self._buf[:HEADER_SIZE]))
            if len(self._buf) < HEADER_SIZE + n:
                break
            out.append((kind, bytes(self._buf[HEADER_SIZE:HEADER_SIZE + n])))
            del self._buf[:HEADER_SIZE + n]
        return out


async def read_packet(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One packet; IncompleteReadError when the peer closed."""
    kind, n = body_length(await reader.readexactly(HEADER_SIZE))
    return kind, (await reader.readexactly(n) if n else b"")


async def splice(a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                 b: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    """Copy bytes both ways between two connections until either side ends, then close
    both (the other side then sees its end: a tool that went away ends the session,
    a session that ended ends the tool's connection)."""
    # lazy: the tools import this module for its packets and never run a loop
    import asyncio

    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while True:
            data = await src.read(CHUNK)
            if not data:
                return
            dst.write(data)
            await dst.drain()

    tasks = [asyncio.ensure_future(copy(a[0], b[1])), asyncio.ensure_future(copy(b[0], a[1]))]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        for w in (a[1], b[1]):
            w.close()
