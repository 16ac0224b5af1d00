"""PEEK_JOB: the tail of a running job's stdout, stderr or another file of its sandbox
(``roost tail``, HTCondor's condor_tail and its starter's STARTER_PEEK).

The startd reads as root what a job wrote, and a job may plant anything in its
sandbox: a symbolic link to /etc/shadow, a hard link to a file it cannot read, a
FIFO that blocks whoever opens it. So a name is one entry of the job's directory
(no ``/``, no ``..``), opened relative to a descriptor of that directory without
following a link (``O_NOFOLLOW``, ``O_NONBLOCK``); what is opened must be a regular
file the job's own user could read (its owner, group and other bits, as the kernel
would judge them for that user); and an answer carries at most ``PEEK_MAX_BYTES``.
"""

from __future__ import annotations

import base64
import errno
import os
from typing import Any, Protocol

from roost.daemons.startd.jobspec import job_file
from roost.daemons.startd.starter import Starter
from roost.daemons.userfiles import User, open_as
from roost.net.errors import RequestError
from roost.net.server import Peer

#: the most bytes one PEEK_JOB answer carries (condor_tail's -maxbytes defaults to 1024)
PEEK_MAX_BYTES = 1 << 20
DEFAULT_BYTES = 1024


class PeekError(Exception):
    """A file that may not be shown, or cannot be read (one line a user can act on)."""


class StarterTable(Protocol):
    """What the job-watching commands need of the claims (``claims.Claims``)."""

    starters: dict[str, Starter]
    reporting: dict[str, list[Starter]]


def entry_name(name: Any) -> str:
    """``name`` as one entry of a job's directory; PeekError for anything that could
    name something else (empty, ``.``, ``..``, a ``/``, a NUL)."""
    if not isinstance(name, str) or not name:
        raise PeekError(f"bad file name {name!r}")
    if "/" in name or "\x00" in name or name in (".", ".."):
        raise PeekError(f"file name {name!r} is not a plain name in the job's sandbox (no '/' or '..')")
    return name


def open_entry(directory: str, name: str, reader: User | None) -> int:
    """A read descriptor of ``directory/name``, never through a link; ``reader`` (the
    job's user) must be allowed to reach and read it (None: no check). PeekError
    naming why not."""
    name = entry_name(name)
    user = reader if reader is not None else User(0, 0, frozenset())
    try:
        # never through a link, anywhere on the path; the job's user must be able to
        # reach and read it; a device or FIFO is refused before it is opened
        return open_as(os.path.join(directory, name), user)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise PeekError(f"{name} is a symbolic link: not followed") from None
        if e.errno == errno.ENOENT:
            raise PeekError(f"{name}: no such file in the job's sandbox (yet)") from None
        if e.errno == errno.EINVAL:
            raise PeekError(f"{name} is not a regular file") from None
        if e.errno == errno.EACCES:
            raise PeekError(f"{name} is not readable by the job's user ({e.strerror})") from None
        raise PeekError(f"{name}: {e.strerror}") from None


def read_tail(fd: int, offset: int | None, maxbytes: int) -> tuple[bytes, int, int]:
    """(bytes, where they start, the file's size): the last ``maxbytes`` bytes, or with
    ``offset`` those from there on (at most ``maxbytes``; a file now shorter than
    ``offset`` was truncated, and its last bytes are read instead)."""
    size = os.fstat(fd).st_size
    if offset is None or offset > size or offset < 0:
        start = max(0, size - maxbytes)
    else:
        start = offset
    data = os.pread(fd, min(maxbytes, size - start), start) if size > start else b""
    return data, start, size


def resolve(starter: Starter, name: str | None, stream: str | None) -> tuple[str, str]:
    """(directory, entry) of what PEEK_JOB names: the job's stdout or stderr (where the
    starter writes it: the sandbox, or the job's Iwd without file transfer), else a
    plain name in the job's working directory."""
    spec = starter.spec
    if stream is not None:
        if stream not in ("stdout", "stderr"):
            raise PeekError(f"stream must be stdout or stderr, not {stream!r}")
        path = job_file(spec, spec.stdout if stream == "stdout" else spec.stderr, starter.sandbox)
        if path is None:
            what = "output" if stream == "stdout" else "error"
            raise PeekError(f"job {spec.job_id} has no {stream} file (its submit file sets no {what})")
        return os.path.dirname(path), os.path.basename(path)
    if name is None:
        raise PeekError("name a file or a stream")
    return (starter.sandbox if spec.transfer else spec.iwd), entry_name(name)


def find_starter(table: StarterTable, claim_id: str, job: str, *, ended_too: bool) -> Starter:
    """The starter of ``job`` on ``claim_id``; ``ended_too``: also one whose job ended and
    whose report is pending (its sandbox is still there)."""
    starter = table.starters.get(claim_id)
    if starter is not None and starter.spec.job_id == job:
        return starter
    if ended_too:
        for s in reversed(table.reporting.get(claim_id) or []):
            if s.spec.job_id == job and s.state == "exited":
                return s
    raise RequestError("NOT_FOUND", f"job {job} is not running on this claim")


class PeekCalls:
    """The startd's PEEK_JOB handler."""

    def __init__(self, table: StarterTable) -> None:
        self.table = table

    async def h_peek_job(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        starter = find_starter(self.table, req["claim_id"], req["job"], ended_too=True)
        maxbytes = req.get("maxbytes")
        maxbytes = DEFAULT_BYTES if maxbytes is None else maxbytes
        offset = req.get("offset")
        if maxbytes < 0 or (offset is not None and offset < 0):
            raise RequestError("BAD_REQUEST", "PEEK_JOB: offset and maxbytes must not be negative")
        entry = req.get("name") or req.get("stream")
        try:
            directory, entry = resolve(starter, req.get("name"), req.get("stream"))
            fd = open_entry(directory, entry, starter.job_user() if starter.identity.switch else None)
            try:
                data, start, size = read_tail(fd, offset, min(maxbytes, PEEK_MAX_BYTES))
            finally:
                os.close(fd)
        except PeekError as e:
            raise RequestError("FILE_REFUSED", f"job {starter.spec.job_id}: {e}") from None
        except OSError as e:
            raise RequestError("FILE_REFUSED", f"job {starter.spec.job_id}: {entry}: {e.strerror}") from None
        return {"name": entry, "data": base64.b64encode(data).decode("ascii"), "offset": start,
                "end": start + len(data), "size": size, "running": starter.state == "running"}


__all__ = ["PEEK_MAX_BYTES", "PeekCalls", "PeekError", "entry_name", "find_starter",
           "open_entry", "read_tail", "resolve"]
