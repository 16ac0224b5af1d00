"""SPOOL_FILES and TRANSFER_DATA: condor_submit -spool and condor_transfer_data.

A job submitted with -spool waits held (HoldReasonCode 16) while its submitter sends
its input over the connection (SPOOL_FILES); the schedd stores it in the job's spool
directory (spool_area.py), points the job's Iwd and input paths there (keeping the
submitted values as SUBMIT_*, core/spooling.py) and releases it itself. Once the job
has completed (it stays in the queue: its LeaveJobInQueue), TRANSFER_DATA sends the
output it left in that directory back to the tool, which writes it where the job
was submitted from; when the tool says it has everything, StageOutFinish is set and
the job leaves the queue, its spool directory with it.

Only the job's owner (or a queue super user) may do either. Sizes are announced and
bounded before a byte is read; each chunk must come within STALL_TIMEOUT; the bytes
move in 1 MiB chunks between awaits, so the event loop keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from typing import Any

from roost.core import jobpolicy as jp
from roost.core.spooling import (
    SPOOLED_REASON,
    SPOOLING_HOLD_CODE,
    SpoolError,
    input_names,
    job_spool_dir,
    spool_edits,
    spool_name,
)
from roost.daemons.schedd.access import QueueRights, identity, owner_user
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.spool_area import Incoming, OutputTooBig, open_output, output_files
from roost.net import framing
from roost.net.errors import ProtocolError, RequestError, bad_request
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

CHUNK = 1 << 20
STALL_TIMEOUT = 60.0  # seconds a transfer may send nothing before it is dropped
ACK_TIMEOUT = 600.0  # seconds the tool may take to write fetched output before it says so
ACK_LIMIT = 64 << 10


class SpoolCalls:
    """Handlers of SPOOL_FILES and TRANSFER_DATA."""

    def __init__(self, jobs: JobLifecycle, rights: QueueRights, spool: str, *, max_bytes: int,
                 max_files: int) -> None:
        self.jobs = jobs
        self.rights = rights
        self.spool = spool
        self.max_bytes = max_bytes
        self.max_files = max_files
        self._busy: set[tuple[int, int]] = set()  # jobs with a transfer under way
        jobs.spool_busy = self._busy  # the periodic LeaveJobInQueue check leaves them be

    def _job(self, req: dict[str, Any], peer: Peer, cmd: str) -> tuple[Job, str]:
        user = self.rights.user(peer, cmd)
        try:
            cid, proc = self.jobs.queue.parse_id(req["job"])
        except ValueError:
            raise bad_request(f"{cmd}: bad job id {req['job']!r}: want C.P") from None
        proc = 0 if proc is None else proc
        job = self.jobs.queue.job(cid, proc)
        if job is None:
            raise RequestError("NOT_FOUND", f"{cmd}: job {cid}.{proc} is not in the queue")
        if job.owner != user and not self.rights.is_super(user):
            raise RequestError("DENIED", f"{cmd}: user {user} may not transfer files of job {job.id}, "
                               f"which is {job.owner}'s")
        if job.key in self._busy:
            raise RequestError("BUSY", f"{cmd}: job {job.id} has a file transfer under way")
        return job, user

    # -- SPOOL_FILES ------------------------------------------------------------------------
    def _entries(self, req: dict[str, Any]) -> list[tuple[str, int, int]]:
        files = req["files"]
        if len(files) > self.max_files:
            raise RequestError("TOO_BIG", f"SPOOL_FILES: {len(files)} files, more than this schedd "
                               f"takes for one job ({self.max_files}, SPOOL_MAX_INPUT_FILES)")
        out, seen, total = [], set(), 0
        for e in files:
            size, mode = (e.get("size"), e.get("mode", 0o644)) if isinstance(e, dict) else (None, None)
            if type(size) is not int or size < 0 or type(mode) is not int:
                raise bad_request("SPOOL_FILES: each file needs a name, a size (bytes) and an integer mode")
            try:
                name = spool_name(e.get("name"))
            except SpoolError as exc:
                raise RequestError("BAD_PATH", f"SPOOL_FILES: {exc}") from None
            if name in seen:
                raise RequestError("BAD_PATH", f"SPOOL_FILES: {name!r} named twice")
            seen.add(name)
            total += size
            out.append((name, size, mode))
        if total > self.max_bytes:
            raise RequestError("TOO_BIG", f"SPOOL_FILES: {total} bytes, more than this schedd takes for "
                               f"one job ({self.max_bytes}, SPOOL_MAX_INPUT_MB)")
        return out

    async def h_spool_files(self, req: dict[str, Any], peer: Peer) -> None:
        job, user = self._job(req, peer, "SPOOL_FILES")
        if job.status != jp.HELD or job.get("HoldReasonCode") != SPOOLING_HOLD_CODE or \
                job.get("StageInFinish") is not None:
            raise RequestError("NOT_SPOOLING", f"SPOOL_FILES: job {job.id} is not waiting for its input "
                               "(held with HoldReasonCode 16, submitted with -spool)")
        entries = self._entries(req)
        final = job_spool_dir(self.spool, job.cluster.id, job.proc)
        self._busy.add(job.key)
        try:
            await self.jobs.report(job, self.jobs.set_ops(job, {"StageInStart": int(time.time())}), [])
            try:
                incoming = await asyncio.to_thread(Incoming, final)
            except OSError as exc:
                raise RequestError("SPOOL_FAILED", f"SPOOL_FILES: cannot make {final}: {exc.strerror or exc}") from None
            try:
                await peer.respond({"go": True})
                error = await self._receive(incoming, entries, peer)
                if error is None and (self.jobs.queue.job(job.cluster.id, job.proc) is not job
                                      or job.status != jp.HELD):
                    error = f"job {job.id} was removed or released while its input came"
                if error is None:
                    # the owner's, or nobody's for an owner with no account here (whose
                    # jobs run as nobody, access.identity): root's 0700 tree would lock them out
                    ident = identity(job.owner)
                    ids = (ident[0], ident[1]) if ident is not None else None
                    try:
                        await asyncio.to_thread(incoming.commit, ids)
                    except OSError as exc:
                        error = f"storing it: {exc.strerror or exc}"
                    if error is None and (self.jobs.queue.job(job.cluster.id, job.proc) is not job
                                          or job.status != jp.HELD):
                        # removed while the files were moved into place: its removal may
                        # have swept the directory before the rename, so sweep it here
                        await asyncio.to_thread(shutil.rmtree, final, True)
                        error = f"job {job.id} was removed or released while its input was stored"
            except BaseException:
                incoming.abort()
                raise
            if error is not None:
                incoming.abort()
                log.warning("job %s: spooled input not kept: %s", job.id, error)
                await _frame(peer, {"ok": False, "code": "SPOOL_FAILED", "error": f"SPOOL_FILES: {error}"})
                return None
            received = {name.split("/", 1)[0] for name, _, _ in entries}
            attrs = spool_edits(job.get, final, received)
            attrs["StageInFinish"] = int(time.time())
            await self.jobs.report(job, self.jobs.set_ops(job, job.spelled(attrs)), [])
            await self.jobs.release(job, SPOOLED_REASON)
            log.info("job %s: %d input files spooled by %s into %s", job.id, len(entries), user, final)
            await _frame(peer, {"ok": True, "count": len(entries), "iwd": final})
        finally:
            self._busy.discard(job.key)
        return None

    async def _receive(self, incoming: Incoming, entries: list[tuple[str, int, int]], peer: Peer) -> str | None:
        """Every announced byte read (a refused or failing file's too, so the stream
        stays in step); what went wrong writing, if anything."""
        error: str | None = None
        for name, size, mode in entries:
            fd = None
            if error is None:
                try:
                    fd = await asyncio.to_thread(incoming.open, name, mode)
                except (SpoolError, OSError) as exc:
                    error = str(exc)
            remaining = size
            try:
                while remaining > 0:
                    data = await _read_chunk(peer, min(CHUNK, remaining))
                    remaining -= len(data)
                    if fd is not None:
                        try:  # off the event loop: a slow spool disk holds up this transfer only
                            await asyncio.to_thread(_write_all, fd, data)
                        except OSError as exc:
                            error = f"{name}: {exc.strerror or exc}"
                            os.close(fd)
                            fd = None
            finally:
                if fd is not None:
                    os.close(fd)
        return error

    # -- TRANSFER_DATA ----------------------------------------------------------------------
    async def h_transfer_data(self, req: dict[str, Any], peer: Peer) -> None:
        job, user = self._job(req, peer, "TRANSFER_DATA")
        top = job_spool_dir(self.spool, job.cluster.id, job.proc)
        if job.get("StageInFinish") is None or job.get("Iwd") != top:
            raise RequestError("NOT_SPOOLED", f"TRANSFER_DATA: job {job.id} was not submitted with -spool: "
                               "its output is where it was submitted from")
        if job.status != jp.COMPLETED:
            raise RequestError("NOT_COMPLETED", f"TRANSFER_DATA: job {job.id} has not completed "
                               f"({jp.STATUS_NAMES.get(job.status, job.status)})")
        self._busy.add(job.key)
        try:
            await self.jobs.report(job, self.jobs.set_ops(job, {"StageOutStart": int(time.time())}), [])
            who = owner_user(job.owner)
            try:
                files = await asyncio.to_thread(output_files, top, who, input_names(job.get))
            except OutputTooBig as e:
                raise RequestError("TOO_BIG", f"TRANSFER_DATA: job {job.id}: {e}") from None
            await peer.respond({"files": [{"name": n, "size": s, "mode": m} for n, s, m in files]})
            for name, size, _mode in files:
                await self._send(top, name, size, who, peer, job)
            ack = await _read_frame(peer)
            if ack.get("received") is not True:
                await _frame(peer, {"ok": False, "code": "NOT_RECEIVED",
                                    "error": "TRANSFER_DATA: the tool did not keep the files; the job stays"})
                return None
            ops = self.jobs.set_ops(job, {"StageOutFinish": int(time.time())})
            ops += self.jobs.finish_ops(job)  # LeaveJobInQueue is false now: to the history
            left = self.jobs.queue.job(job.cluster.id, job.proc) is None
            await self.jobs.report(job, ops, [])
            log.info("job %s: %d output files sent to %s%s", job.id, len(files), user,
                     "; it left the queue" if left else "")
            await _frame(peer, {"ok": True, "count": len(files), "left_queue": left})
        finally:
            self._busy.discard(job.key)
        return None

    async def _send(self, top: str, name: str, size: int, who: Any, peer: Peer, job: Job) -> None:
        """``size`` bytes of ``name`` (zeros where it is no longer what was listed)."""
        remaining = size
        try:
            fd = await asyncio.to_thread(open_output, top, name, who)
        except OSError as e:
            log.warning("job %s: output %s not sent: %s", job.id, name, e)
            fd = None
        try:
            while remaining > 0 and fd is not None:
                data = await asyncio.to_thread(os.read, fd, min(CHUNK, remaining))
                if not data:
                    break
                await _send_chunk(peer, data)
                remaining -= len(data)
        finally:
            if fd is not None:
                os.close(fd)
        while remaining > 0:
            n = min(CHUNK, remaining)
            await _send_chunk(peer, bytes(n))
            remaining -= n


async def _send_chunk(peer: Peer, data: bytes) -> None:
    """A tool that stops reading is dropped, as one that stops sending is."""
    try:
        async with asyncio.timeout(STALL_TIMEOUT):
            await peer.send_bytes(data)
    except TimeoutError:
        raise ConnectionError(f"the tool read nothing for {STALL_TIMEOUT:g} s") from None


async def _read_chunk(peer: Peer, n: int) -> bytes:
    try:
        async with asyncio.timeout(STALL_TIMEOUT):
            return await peer.read_exactly(n)
    except TimeoutError:
        raise ConnectionError(f"nothing came for {STALL_TIMEOUT:g} s") from None


async def _read_frame(peer: Peer) -> dict[str, Any]:
    """One small frame from the tool (its word that it has the files)."""
    try:
        async with asyncio.timeout(ACK_TIMEOUT):
            header = await peer.read_exactly(framing.HEADER_SIZE)
            n = framing.body_length(header, ACK_LIMIT, "an acknowledgement's limit")
            return framing.decode_body(await peer.read_exactly(n))
    except TimeoutError:
        raise ConnectionError(f"no word from the tool in {ACK_TIMEOUT:g} s") from None
    except ProtocolError as e:
        raise ConnectionError(f"a bad acknowledgement: {e}") from None


async def _frame(peer: Peer, obj: dict[str, Any]) -> None:
    peer.writer.write(framing.encode(obj))
    await peer.writer.drain()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


__all__ = ["SpoolCalls"]
