"""stream_output / stream_error: a running job's stdout and stderr reach the submit
side while it runs, not only when it ends (issue 15).

HTCondor streams each write through remote system calls; roost's starter looks at
the job's files every STARTER_STREAM_INTERVAL and sends what they grew by
(STREAM_OUTPUT: where it starts, then the bytes), which the schedd writes at that
offset of the job's ``output``/``error`` file. Positional writes make a resend
harmless: a startd that restarted and adopted the job sends everything again from
offset 0, and a chunk whose answer was lost is sent again. A fresh run of the job
starts its files empty, as a run without streaming does (the first chunk truncates).
At the end, what is left is sent before the output transfer, which then leaves the
streamed files out; if that last send fails, the files go with the output as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from roost.daemons.userfiles import open_beneath
from roost.net.client import Connection
from roost.net.errors import RemoteError

log = logging.getLogger(__name__)

MAX_CHUNK = 4 << 20  # bytes per STREAM_OUTPUT: a job writing fast is caught up over several


class OutputStreams:
    """The streamed files of one job: (role, path) each, and how much of each is sent."""

    def __init__(self, job_id: str, files: list[tuple[str, str]], interval: float,
                 connect: Callable[[], Any], header: Callable[[], dict[str, Any]], top: str) -> None:
        self.job_id = job_id
        self.top = top  # the sandbox: the files are read as root, never through a link below it
        self.files = files
        self.interval = interval
        self._connect = connect  # an async context manager: a connection to the job's schedd
        self._header = header  # job and claim, as every starter call names them
        self.sent = {role: 0 for role, _ in files}
        self._truncate = {role: True for role, _ in files}
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    @property
    def roles(self) -> set[str]:
        return {role for role, _ in self.files}

    def start(self, fresh: bool) -> None:
        """The job started; ``fresh``: a new run whose files start empty (else an adopted
        job's: sent again from 0 without truncating)."""
        for role in self.sent:
            self.sent[role] = 0
            self._truncate[role] = fresh
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"stream {self.job_id}")

    async def _loop(self) -> None:
        delay = self.interval
        while True:
            await asyncio.sleep(delay)
            # a schedd that refuses or cannot be reached is asked less often (up to a
            # minute apart): the bytes it did not take would be read and sent again
            delay = self.interval if await self.flush() else min(delay * 2, max(60.0, self.interval))

    def close(self) -> None:
        """Stop the periodic sends (the job was vacated or the starter abandoned)."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def stop(self) -> bool:
        """Stop the periodic sends and send what is left; whether everything is there."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return await self.flush()

    async def flush(self) -> bool:
        """Send what the files grew by since the last send; False if some is not sent."""
        async with self._lock:
            try:
                async with self._connect() as conn:
                    for role, path in self.files:
                        await self._send_file(conn, role, path)
                return True
            except (OSError, ConnectionError, TimeoutError, RemoteError) as e:
                log.debug("job %s: streaming output: %s (sent again later)", self.job_id, e)
                return False

    async def _send_file(self, conn: Connection, role: str, path: str) -> None:
        while True:
            try:
                fd = open_beneath(self.top, path)
            except FileNotFoundError:
                fd = None
            try:
                size = os.fstat(fd).st_size if fd is not None else 0
                data = self._read(fd, role, size)
            finally:
                if fd is not None:
                    os.close(fd)
            if data is None:
                return
            start = self.sent[role]
            await send_chunk(conn, self._header(), role, start, data, self._truncate[role])
            self.sent[role] = start + len(data)
            self._truncate[role] = False
            if len(data) < MAX_CHUNK:
                return

    def _read(self, fd: int | None, role: str, size: int) -> bytes | None:
        """What ``role``'s file grew by since the last send, at most MAX_CHUNK (None:
        nothing to send). A file now shorter than what was sent was truncated by the job:
        it is sent again from 0, truncating the submit side's copy."""
        if size < self.sent[role]:
            self.sent[role], self._truncate[role] = 0, True
        start = self.sent[role]
        if size == start and not self._truncate[role]:
            return None
        n = min(size - start, MAX_CHUNK)
        return os.pread(fd, n, start) if n and fd is not None else b""


async def send_chunk(conn: Connection, header: dict[str, Any], role: str, offset: int, data: bytes,
                     truncate: bool) -> None:
    """One STREAM_OUTPUT: ``data`` to be written at ``offset`` of the job's ``role`` file
    (``truncate``: the file ends there first)."""
    entry = {"name": role, "role": role, "size": len(data), "offset": offset, "truncate": truncate}
    await conn.send({"cmd": "STREAM_OUTPUT", **header, "files": [entry]})
    if data:
        conn.writer.write(data)
    await conn.writer.drain()
    resp = await conn.recv()
    if resp.get("ok") is not True:
        conn.close()  # refused before our bytes were read: the stream may be out of step
        raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "STREAM_OUTPUT refused"))


def streamed_files(stream_out: bool, stream_err: bool, stdout: str | None, stderr: str | None
                   ) -> list[tuple[str, str]]:
    """(role, path in the sandbox) of the files a job asks to stream; stdout and stderr
    written to one file stream once, as stdout."""
    out: list[tuple[str, str]] = []
    if stream_out and stdout is not None:
        out.append(("stdout", stdout))
    if stream_err and stderr is not None and stderr != stdout:
        out.append(("stderr", stderr))
    return out

