"""What starters ask of the schedd while they run a job: JOB_UPDATE, GET_FILES, PUT_FILES.

Each call names its claim and job; it is served by that claim's shadow (in HTCondor
the starter talks to the shadow). Input files go out in one write when the sandbox
is small (the common case), streamed in chunks otherwise; output files are written
as the job's owner may write them (transfer.py), and a refused transfer is kept on
the shadow so the job is held with the reason.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.access import open_read, owner_user
from roost.daemons.schedd.checkpoints import CheckpointError, CheckpointStore
from roost.daemons.schedd.ckpt_admission import CheckpointAdmission
from roost.daemons.schedd.shadow import Shadows
from roost.daemons.schedd.transfer import (
    InputFile,
    OutputWriter,
    TransferError,
    input_files,
    output_destination,
)
from roost.daemons.userfiles import open_as
from roost.eventlog import CheckpointedEvent, FileTransferEvent, FileTransferType
from roost.net import framing
from roost.net.errors import RequestError, bad_request
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

CHUNK = 1 << 20
SMALL_TRANSFER = 4 << 20  # input sandboxes up to this size are sent in one write
STALL_TIMEOUT = 60.0  # seconds a checkpoint upload may send nothing before it is dropped


class StarterCalls:
    """Handlers of the starters' commands."""

    def __init__(self, shadows: Shadows, checkpoints: CheckpointStore | None = None,
                 admission: CheckpointAdmission | None = None) -> None:
        self.shadows = shadows
        self.checkpoints = checkpoints
        self.admission = admission if admission is not None else CheckpointAdmission()

    async def h_job_update(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        state = req["state"]
        if state not in ("running", "suspended", "resumed", "exited", "failed", "vacated"):
            raise bad_request(f"JOB_UPDATE: unknown state {state!r}")
        sh, _job = self.shadows.serving(req["claim_id"], req["job"])
        sh.report(req)
        return {}

    async def h_get_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any] | None:
        sh, job = self.shadows.serving(req["claim_id"], req["job"])
        try:
            files = input_files(job.get, job.owner)
            if self.checkpoints is not None and job.get("LastCheckpointTime") is not None:
                # the latest good checkpoint comes back with the input, over it
                ckpt = {}
                for name, path in self.checkpoints.files(job.cluster.id, job.proc):
                    st = os.stat(path)
                    ckpt[name] = InputFile(name, path, st.st_size, 0o600 | (st.st_mode & 0o100))
                files = [f for f in files if f.name not in ckpt] + list(ckpt.values())
        except TransferError as e:
            sh.transfer_error = (jp.HOLD_TRANSFER_INPUT_ERROR, f"Error transferring input files: {e}")
            raise RequestError("NOT_FOUND", str(e)) from None
        sh.bytes_sent += sum(f.size for f in files)
        self._transfer_event(sh, job, FileTransferType.IN_STARTED)
        sh.input_open = not hasattr(job, "of")
        try:
            return await self._send_inputs(job, files, peer)
        finally:
            if not hasattr(job, "of") and job.cluster.holds(job):
                sh.input_finished(job)

    def _transfer_event(self, sh: Any, job: Any, kind: FileTransferType) -> None:
        """A 040 event, as HTCondor's shadow writes around each sandbox transfer (the
        started-input one names the execute side it goes to)."""
        if hasattr(job, "of") or not job.cluster.holds(job):
            return  # a parallel job's node (its job logs its own start and end), or gone
        if kind == FileTransferType.OUT_STARTED:
            sh.output_started(job)
        host = f"<{sh.startd_address}>" if kind == FileTransferType.IN_STARTED else ""
        self.shadows.jobs.write_events(job, [FileTransferEvent(job.cluster.id, job.proc, time.time(),
                                                               transfer_type=kind, host=host)])

    async def _send_inputs(self, job: Any, files: list[InputFile], peer: Peer) -> None:
        if sum(f.size for f in files) <= SMALL_TRANSFER:
            # Small sandboxes (the common case) go out as one write: answer and bytes.
            parts = [framing.encode({"ok": True, "files": [f.entry() for f in files]})]
            for f in files:
                parts.append(_read_exactly(job.owner, f.path, f.size))
            peer.responded = True
            peer.writer.write(b"".join(parts))
            await peer.writer.drain()
            return None
        await self._transferring(job, "TransferringInput", True)
        try:
            await peer.respond({"files": [f.entry() for f in files]})
            for f in files:
                remaining = f.size
                try:
                    with open_read(job.owner, f.path) as fh:
                        while remaining > 0:
                            data = fh.read(min(CHUNK, remaining))
                            if not data:
                                break
                            await peer.send_bytes(data)
                            remaining -= len(data)
                except OSError as e:
                    log.warning("job %s: reading input %s: %s", job.id, f.path, e)
                while remaining > 0:  # the file shrank: keep the stream's promise with zeros
                    n = min(CHUNK, remaining)
                    await peer.send_bytes(bytes(n))
                    remaining -= n
        finally:
            await self._transferring(job, "TransferringInput", False)
        return None

    async def _transferring(self, job: Any, attr: str, on: bool) -> None:
        """``roost q -io``'s transfer state (TransferringInput/TransferringOutput), kept
        only for transfers big enough to be seen: a small sandbox moves in milliseconds,
        and a queue write for it would cost more than the move."""
        if not job.cluster.holds(job) or bool(job.get(attr)) == on:
            return
        jobs = self.shadows.jobs
        try:
            await jobs.report(job, jobs.set_ops(job, {attr: on}), [])
        except Exception as e:  # shown state only: the transfer goes on
            log.warning("job %s: cannot record %s: %s", job.id, attr, e)

    async def _serving_or_drain(self, req: dict[str, Any], peer: Peer, *, parallel_ok: bool = True) -> tuple[Any, Any]:
        """The shadow and job a PUT_* names; if none (a restarted schedd not yet
        reconnected), or ``parallel_ok`` is false and it is a parallel job's node, the
        announced bytes are read first, so that the connection stays in step and the
        starter's retry is not read as a frame of file data."""
        entries = req["files"]
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("size"), int) or e["size"] < 0:
                raise bad_request(f"{req.get('cmd', 'PUT_FILES')}: each file needs a size")
        try:
            got = self.shadows.serving(req["claim_id"], req["job"])
            if not parallel_ok and hasattr(got[1], "of"):
                # one node's checkpoint is no checkpoint of the job (no coordinated checkpoint)
                raise RequestError("CHECKPOINT_FAILED", "parallel jobs do not checkpoint")
            return got
        except RequestError:
            remaining = sum(e["size"] for e in entries)
            while remaining > 0:
                remaining -= len(await peer.read_exactly(min(CHUNK, remaining)))
            raise

    async def h_put_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        sh, job = await self._serving_or_drain(req, peer)
        entries = req["files"]
        big = sum(e["size"] for e in entries) > SMALL_TRANSFER
        self._transfer_event(sh, job, FileTransferType.OUT_STARTED)
        if big:
            await self._transferring(job, "TransferringOutput", True)
        try:
            error = await self._receive_outputs(job, entries, peer)
        finally:
            if big:
                await self._transferring(job, "TransferringOutput", False)
            self._transfer_event(sh, job, FileTransferType.OUT_FINISHED)
        sh.bytes_recvd += sum(e["size"] for e in entries)
        if error is not None:
            sh.transfer_error = (jp.HOLD_TRANSFER_OUTPUT_ERROR, f"Error transferring output files: {error}")
            raise RequestError("BAD_REQUEST", error)
        return {"count": len(entries)}

    async def _receive_outputs(self, job: Any, entries: list[dict[str, Any]], peer: Peer) -> str | None:
        """Each announced output file written where it belongs; what went wrong, if anything."""
        error: str | None = None
        for e in entries:
            size = e["size"]
            writer = None
            if error is None:
                try:
                    writer = OutputWriter(output_destination(job.get, e), e.get("mode", 0o644), job.owner)
                except TransferError as exc:
                    error = str(exc)
            remaining = size
            try:
                while remaining > 0:
                    data = await peer.read_exactly(min(CHUNK, remaining))
                    remaining -= len(data)
                    if writer is not None:
                        writer.write(data)
                if writer is not None:
                    writer.finish()
            except OSError as exc:
                if writer is not None:
                    writer.abort()
                error = error or f"writing output: {exc}"
            except BaseException:
                if writer is not None:
                    writer.abort()
                raise
        return error


    async def h_stream_output(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """stream_output / stream_error: bytes of a running job's stdout or stderr, written
        at their offset of its Out/Err file (as its owner may write it). A refusal is the
        job's fault only at the end: the output transfer then says so and holds it."""
        sh, job = await self._serving_or_drain(req, peer)
        entries = req["files"]
        error: str | None = None
        for e in entries:
            role, offset = e.get("role"), e.get("offset")
            fd = None
            if error is None:
                if role not in ("stdout", "stderr") or type(offset) is not int or offset < 0:
                    error = "STREAM_OUTPUT: each chunk needs a role (stdout or stderr) and an offset"
                else:
                    try:
                        fd = _open_streamed(output_destination(job.get, {"role": role}), job.owner)
                        if fd is not None and e.get("truncate") is True:
                            os.ftruncate(fd, offset)
                    except (TransferError, OSError) as exc:
                        if fd is not None:
                            os.close(fd)
                            fd = None
                        error = f"{role}: {exc}"
            remaining, at = e["size"], offset if type(offset) is int else 0
            try:
                while remaining > 0:
                    data = await peer.read_exactly(min(CHUNK, remaining))
                    remaining -= len(data)
                    if fd is not None:
                        try:
                            at += _pwrite_all(fd, data, at)
                        except OSError as exc:
                            error = f"{role}: {exc.strerror or exc}"
                            os.close(fd)
                            fd = None
            finally:
                if fd is not None:
                    os.close(fd)
        sh.bytes_recvd += sum(e["size"] for e in entries)
        if error is not None:
            raise RequestError("BAD_REQUEST", error)
        return {}

    async def h_put_checkpoint(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """A self-checkpointing job's checkpoint files (it exited with its
        checkpoint_exit_code and runs again in place): stored transactionally, then the
        job's CommittedTime advances and its log gets a checkpointed event. Refused
        (CHECKPOINT_FAILED) with the previous checkpoint intact when they cannot be kept."""
        sh, job = await self._serving_or_drain(req, peer, parallel_ok=False)
        entries = req["files"]
        for e in entries:
            if not isinstance(e.get("name"), str):
                raise bad_request("PUT_CHECKPOINT: each file needs a name")
        ckpt_id = req.get("checkpoint_id")
        if ckpt_id is not None and (not isinstance(ckpt_id, str) or not 0 < len(ckpt_id) <= 64):
            raise bad_request("PUT_CHECKPOINT: checkpoint_id must be a short string")
        # the starter's try again of a checkpoint this schedd kept but died before
        # answering (or whose answer was lost): its bytes are read and dropped, not
        # counted a second time
        again = ckpt_id is not None and job.get("RoostCheckpointId") == ckpt_id
        error: str | None = None
        pending = None
        # its turn among the checkpoint uploads (ckpt_admission.py); the starter's write
        # waits. A vacated job's (``urgent``) goes at once: its claim waits for it.
        size = sum(e["size"] for e in entries)
        ticket = None if req.get("urgent") is True or again else \
            await self.admission.admit(job.id, self.shadows.submitter_of(job.cluster), size)
        try:
            self.shadows.serving(req["claim_id"], req["job"])  # still this run's, after the wait
        except RequestError as exc:
            error = exc.message
        if error is None and again:
            pass
        elif error is None and self.checkpoints is None:
            error = "this schedd keeps no checkpoints"
        elif error is None:
            try:
                pending = self.checkpoints.begin(job.cluster.id, job.proc)
            except (CheckpointError, OSError) as exc:
                error = str(exc)
        total = 0
        try:
            for e in entries:
                fd = None
                if error is None and pending is not None:
                    try:
                        fd = pending.open(e["name"])
                    except (CheckpointError, OSError) as exc:
                        error = f"{e['name']}: {exc}"
                remaining = e["size"]
                while remaining > 0:
                    if ticket is not None:
                        await ticket.pace(min(CHUNK, remaining))
                    async with asyncio.timeout(STALL_TIMEOUT):  # a stalled starter frees its place
                        data = await peer.read_exactly(min(CHUNK, remaining))
                    remaining -= len(data)
                    if fd is not None:
                        try:
                            _write_all(fd, data)
                        except OSError as exc:
                            error = f"{e['name']}: {exc.strerror or exc}"
                            os.close(fd)
                            fd = None
                if fd is not None:
                    os.close(fd)
                total += e["size"]
            if error is None and pending is not None:
                try:
                    await asyncio.to_thread(pending.commit)
                except OSError as exc:
                    error = f"storing it: {exc.strerror or exc}"
        finally:
            if ticket is not None:
                ticket.release(ok=error is None and total == size)
            if error is not None and pending is not None:
                pending.abort()
        sh.bytes_recvd += total
        if error is not None:
            log.warning("job %s: checkpoint not kept (the previous one stays): %s", job.id, error)
            raise RequestError("CHECKPOINT_FAILED", f"checkpoint not kept: {error}")
        if again:
            log.info("job %s: checkpoint %s sent again; kept once", job.id, job.get("CheckpointNumber"))
            return {"count": len(entries), "number": job.get("CheckpointNumber")}
        now = time.time()
        get = job.get
        started = get("JobCurrentStartDate")
        last = get("LastCheckpointTime")
        # wall time since this run started, or since its last checkpoint
        since = max((x for x in (started, last) if isinstance(x, (int, float)) and x <= now), default=now)
        committed = float(get("CommittedTime") or 0) + max(0.0, now - since)
        cpus = get("RequestCpus")
        attrs = {"LastCheckpointTime": int(now), "CommittedTime": int(committed),
                 "CommittedSlotTime": int(committed * (cpus if isinstance(cpus, (int, float)) else 1)),
                 "NumCkpts": int(get("NumCkpts") or 0) + 1, "CheckpointSizeKB": total // 1024,
                 "CheckpointNumber": pending.number if pending is not None else 0}
        if ckpt_id is not None:
            attrs["RoostCheckpointId"] = ckpt_id
        jobs = self.shadows.jobs
        await jobs.report(job, jobs.set_ops(job, attrs),
                          [CheckpointedEvent(job.cluster.id, job.proc, now, sent_bytes=float(total))])
        log.info("job %s: checkpoint %d kept (%d bytes)", job.id, attrs["CheckpointNumber"], total)
        return {"count": len(entries), "number": attrs["CheckpointNumber"]}


def _open_streamed(dest: str, owner: str) -> int | None:
    """The job's Out/Err file opened for streamed writes, in place, as its owner could:
    never through a link anywhere on the path, a regular file of one link the owner may
    write, or a new one made for the owner (userfiles.py); None for /dev/null."""
    if dest == os.devnull:
        return None
    user = owner_user(owner)
    try:
        return open_as(dest, user, write=True, create=True)
    except OSError as e:
        raise TransferError(f"cannot write {dest}: {e.strerror or e}") from None


def _pwrite_all(fd: int, data: bytes, offset: int) -> int:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n
    return len(data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exactly(owner: str, path: str, size: int) -> bytes:
    """A file's first ``size`` bytes, read for ``owner``, zero-padded if it shrank (the
    listing promised size)."""
    try:
        with open_read(owner, path) as fh:
            data = fh.read(size)
    except OSError as e:
        log.warning("reading input %s: %s", path, e)
        data = b""
    return data + bytes(size - len(data)) if len(data) < size else data


__all__ = ["StarterCalls"]
