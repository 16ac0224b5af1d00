"""The tool's half of condor_submit -spool and condor_transfer_data.

:func:`spool_job` sends one held job's input over the schedd connection
(SPOOL_FILES), read with this process's own rights, so it works for a user who cannot
write the schedd's spool and from another host; the schedd releases the job once it
has it. :func:`fetch_job` asks for a completed spooled job's output (TRANSFER_DATA)
and writes each file where the job was submitted from (core/spooling.py says where),
each under a temporary name renamed into place once whole; the schedd is told the
files are kept only when every one was, and the job then leaves the queue.
"""

from __future__ import annotations

import os
import secrets
import stat
from typing import Any

from roost.api.connection import RefusedError
from roost.api.errors import PoolError
from roost.core.spooling import SpoolError, fetch_destination, input_plan, spool_name

CHUNK = 1 << 20
#: what a spooled job's transfers need of its ad
ATTRS = ["ClusterId", "ProcId", "Iwd", "Cmd", "In", "TransferInput", "TransferExecutable", "TransferIn",
         "Out", "Err", "TransferOutputRemaps", "JobStatus", "StageInFinish", "StageOutFinish",
         "SUBMIT_Iwd", "SUBMIT_Out", "SUBMIT_Err", "SUBMIT_TransferOutputRemaps", "Owner"]


def _files(src: str, name: str) -> list[tuple[str, str, int, int]]:
    """(name in the spool, path here, size, mode) of ``src``, a directory walked."""
    try:
        st = os.stat(src)
    except OSError as e:
        raise SpoolError(f"cannot spool {src}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        out: list[tuple[str, str, int, int]] = []
        for root, dirs, names in os.walk(src):
            dirs.sort()
            rel = os.path.relpath(root, src)
            for f in sorted(names):
                out += _files(os.path.join(root, f), f"{name}/{f}" if rel == "." else f"{name}/{rel}/{f}")
        return out
    if not stat.S_ISREG(st.st_mode):
        raise SpoolError(f"cannot spool {src}: not a regular file")
    return [(spool_name(name), src, st.st_size, stat.S_IMODE(st.st_mode))]


def _raise(resp: dict[str, Any]) -> None:
    if resp.get("ok") is not True:
        raise RefusedError(str(resp.get("code") or "ERROR"), str(resp.get("error") or "refused"))


def spool_job(schedd: Any, ad: dict[str, Any]) -> int:
    """Send the input of the job ``ad`` describes (as submitted, held with
    HoldReasonCode 16); the number of files. SpoolError for a file that cannot be read
    here, RefusedError when the schedd refuses, PoolError when the connection fails."""
    files: list[tuple[str, str, int, int]] = []
    for item in input_plan(ad.get):
        files += _files(item.src, item.name)
    job = f"{ad['ClusterId']}.{ad['ProcId']}"
    client = schedd._conn._open()
    try:
        client.send({"cmd": "SPOOL_FILES", "job": job,
                     "files": [{"name": n, "size": s, "mode": m} for n, _p, s, m in files]})
        _raise(client.recv())
        for _name, path, size, _mode in files:
            remaining = size
            try:
                with open(path, "rb") as fh:
                    while remaining > 0:
                        data = fh.read(min(CHUNK, remaining))
                        if not data:
                            break
                        client.send_bytes(data)
                        remaining -= len(data)
            except OSError:
                pass  # keep the stream's promise below; the job gets zeros where it shrank
            while remaining > 0:
                n = min(CHUNK, remaining)
                client.send_bytes(bytes(n))
                remaining -= n
        _raise(client.recv())
    except ConnectionError as e:
        schedd._conn.close()
        raise PoolError(f"lost the connection to the schedd while spooling job {job}: {e}") from None
    return len(files)


class _Target:
    """One fetched file being written: a temporary name beside it, renamed when whole."""

    def __init__(self, dest: str, mode: int) -> None:
        self.dest = dest
        parent = os.path.dirname(dest) or "."
        os.makedirs(parent, exist_ok=True)
        # a fresh name, made exclusively: in a directory others may write, a name known in
        # advance could be theirs already (a file, or a link to one), and ours would land in it
        self.tmp = os.path.join(parent, f".{os.path.basename(dest)}.roost-fetch.{secrets.token_hex(8)}")
        self.fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                          (mode & 0o777) | 0o600)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def finish(self) -> None:
        os.close(self.fd)
        self.fd = -1
        os.replace(self.tmp, self.dest)

    def abort(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


def fetch_job(schedd: Any, ad: dict[str, Any]) -> tuple[list[str], bool]:
    """Fetch the output of the completed spooled job ``ad`` describes: (the paths
    written, whether the job left the queue). RefusedError when the schedd refuses (or
    a file could not be written here: then the job stays, its output in the spool)."""
    job = f"{ad['ClusterId']}.{ad['ProcId']}"
    client = schedd._conn._open()
    written: list[str] = []
    errors: list[str] = []
    try:
        client.send({"cmd": "TRANSFER_DATA", "job": job})
        resp = client.recv()
        _raise(resp)
        for entry in resp.get("files") or []:
            size = entry.get("size")
            if type(size) is not int or size < 0:
                raise PoolError(f"the schedd announced a bad file for job {job}: {entry!r}")
            target = None
            try:
                dest = fetch_destination(ad.get, entry.get("name"))
                mode = entry.get("mode")
                target = _Target(dest, mode if type(mode) is int else 0o644)
            except (SpoolError, OSError) as e:
                errors.append(f"{entry.get('name')!r}: {e}")
            remaining = size
            try:
                while remaining > 0:
                    data = client.read_exactly(min(CHUNK, remaining))
                    remaining -= len(data)
                    if target is not None:
                        target.write(data)
                if target is not None:
                    target.finish()
                    written.append(target.dest)
            except OSError as e:
                if target is not None:
                    target.abort()
                errors.append(f"{target.dest if target else entry.get('name')}: {e.strerror or e}")
            except BaseException:
                if target is not None:
                    target.abort()
                raise
        client.send({"received": not errors})
        final = client.recv()
    except ConnectionError as e:
        schedd._conn.close()
        raise PoolError(f"lost the connection to the schedd while fetching job {job}'s output: {e}") from None
    if errors:
        raise RefusedError("NOT_RECEIVED", f"job {job}: could not write " + "; ".join(errors))
    _raise(final)
    return written, bool(final.get("left_queue"))


__all__ = ["ATTRS", "fetch_job", "spool_job"]
