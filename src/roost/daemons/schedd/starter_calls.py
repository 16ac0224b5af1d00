"""What starters ask of the schedd while they run a job: JOB_UPDATE, GET_FILES, PUT_FILES.

Each call names its claim and job; it is served by that claim's shadow (in HTCondor
the starter talks to the shadow). Input files go out in one write when the sandbox
is small (the common case), streamed in chunks otherwise; output files are written
as the job's owner may write them (transfer.py), and a refused transfer is kept on
the shadow so the job is held with the reason.
"""

from __future__ import annotations

import logging
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.shadow import Shadows
from roost.daemons.schedd.transfer import (
    OutputWriter,
    TransferError,
    input_files,
    output_destination,
)
from roost.net import framing
from roost.net.errors import RequestError, bad_request
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

CHUNK = 1 << 20
SMALL_TRANSFER = 4 << 20  # input sandboxes up to this size are sent in one write


class StarterCalls:
    """Handlers of the starters' commands."""

    def __init__(self, shadows: Shadows) -> None:
        self.shadows = shadows

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
        except TransferError as e:
            sh.transfer_error = (jp.HOLD_TRANSFER_INPUT_ERROR, f"Error transferring input files: {e}")
            raise RequestError("NOT_FOUND", str(e)) from None
        sh.bytes_sent += sum(f.size for f in files)
        if sum(f.size for f in files) <= SMALL_TRANSFER:
            # Small sandboxes (the common case) go out as one write: answer and bytes.
            parts = [framing.encode({"ok": True, "files": [f.entry() for f in files]})]
            for f in files:
                parts.append(_read_exactly(f.path, f.size))
            peer.responded = True
            peer.writer.write(b"".join(parts))
            await peer.writer.drain()
            return None
        await peer.respond({"files": [f.entry() for f in files]})
        for f in files:
            remaining = f.size
            try:
                with open(f.path, "rb") as fh:
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
        return None

    async def h_put_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        sh, job = self.shadows.serving(req["claim_id"], req["job"])
        entries = req["files"]
        for e in entries:
            if not isinstance(e.get("size"), int) or e["size"] < 0:
                raise bad_request("PUT_FILES: each file needs a size")
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
        sh.bytes_recvd += sum(e["size"] for e in entries)
        if error is not None:
            sh.transfer_error = (jp.HOLD_TRANSFER_OUTPUT_ERROR, f"Error transferring output files: {error}")
            raise RequestError("BAD_REQUEST", error)
        return {"count": len(entries)}


def _read_exactly(path: str, size: int) -> bytes:
    """A file's first ``size`` bytes, zero-padded if it shrank (the listing promised size)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
    except OSError as e:
        log.warning("reading input %s: %s", path, e)
        data = b""
    return data + bytes(size - len(data)) if len(data) < size else data


__all__ = ["StarterCalls"]
