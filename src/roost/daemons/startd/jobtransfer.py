"""A starter's file transfers: the job's input pulled from the schedd (GET_FILES), its
outputs and checkpoints pushed back (PUT_FILES, PUT_CHECKPOINT), by HTCondor's rules
of which files go back.

Every file is written or read as root in a sandbox the job's user controls: never
through a link (``userfiles.open_beneath``), only regular files, names refused if
they could leave the sandbox. ``FileTransfer`` is one of the parts of ``Starter``
(starter.py): it reads the starter's spec, sandbox, identity, peers and claim.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Any

from roost.daemons import userfiles
from roost.daemons.sandbox_paths import sandbox_relpath
from roost.daemons.startd import chirp, startfault
from roost.daemons.startd.jobspec import Identity, JobSpec
from roost.daemons.startd.peers import CALL_TIMEOUT, Peers
from roost.daemons.startd.sandboxfiles import is_plain_file, write_all
from roost.net.client import Connection
from roost.net.errors import RemoteError

CHUNK = 1 << 20
INTERNAL_FILES = (".job.ad", ".machine.ad", chirp.CONFIG_NAME)
#: how long one checkpoint upload may take, its wait for the schedd's admission included
#: (MAX_CONCURRENT_CHECKPOINT_UPLOADS: it queues behind others; the job waits anyway)
CHECKPOINT_UPLOAD_TIMEOUT = 3600.0


class TransferError(Exception):
    """Input or output files could not be moved. ``transient``: the infrastructure's
    fault (a connection cut, a schedd restarting), not the job's: the job runs again
    rather than being held."""

    def __init__(self, message: str, *, transient: bool = False, machine: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.machine = machine  # a shortage here (out of descriptors...): never held


def _safe_relpath(name: Any) -> str:
    """A transferred file's name, refused if it could leave the sandbox."""
    return sandbox_relpath(name, TransferError)


class FileTransfer:
    """The starter's input and output transfers (a part of ``Starter``)."""

    spec: JobSpec
    sandbox: str
    identity: Identity
    peers: Peers
    claim_id: str
    vacating: bool
    address_of: Any
    _inputs: dict[str, tuple[int, int]]
    _streamed: set[str]
    output_problems: list[str]

    def _chown(self, path: str) -> None:
        if self.identity.switch:
            os.chown(path, self.identity.uid, self.identity.gid, follow_symlinks=False)

    async def _get_files(self) -> None:
        address = self.address_of()
        if not address:
            raise TransferError("no schedd address for this claim")
        exe = os.path.basename(self.spec.cmd) if self.spec.transfer_executable else None
        try:
            async with self.peers.connection(address) as conn, asyncio.timeout(CALL_TIMEOUT * 10):
                resp = await conn.request("GET_FILES", job=self.spec.job_id, claim_id=self.claim_id)
                files = resp.get("files") or []
                if not isinstance(files, list):
                    raise TransferError("GET_FILES answer has no file list")
                for entry in files:
                    await self._receive(conn, entry, exe)
        except RemoteError as e:
            # NOT_FOUND: the schedd does not (yet) serve this job on this claim (it restarted
            # and is reconnecting, or requeued the job): its state, not the job's fault
            raise TransferError(f"schedd refused GET_FILES: {e.message}", transient=e.code == "NOT_FOUND") from None
        except (ConnectionError, TimeoutError) as e:  # the link or the schedd, not the job
            raise TransferError(f"GET_FILES from {address}: {e or 'timed out'}", transient=True,
                                machine=startfault.is_shortage(e)) from None
        for entry in os.scandir(self.sandbox):
            st = entry.stat(follow_symlinks=False)
            self._inputs[entry.name] = (st.st_size, st.st_mtime_ns)

    async def _receive(self, conn: Connection, entry: Any, exe: str | None) -> None:
        if not isinstance(entry, dict):
            raise TransferError("GET_FILES entry is not an object")
        name = _safe_relpath(entry.get("name"))
        size = entry.get("size")
        if type(size) is not int or size < 0:
            raise TransferError(f"bad size for {name!r}")
        mode = entry.get("mode")
        mode = (mode & 0o777) if type(mode) is int else 0o644
        if name == exe or entry.get("role") == "executable":
            mode |= 0o755
        path = os.path.join(self.sandbox, name)
        parent = os.path.dirname(path)
        if parent != self.sandbox:
            self._make_dirs(parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            left = size
            while left:
                chunk = await conn.read_exactly(min(left, CHUNK))
                write_all(fd, chunk)
                left -= len(chunk)
            os.fchmod(fd, mode)
            if self.identity.switch:
                os.fchown(fd, self.identity.uid, self.identity.gid)
        finally:
            os.close(fd)

    def _make_dirs(self, path: str) -> None:
        rel = os.path.relpath(path, self.sandbox)
        cur = self.sandbox
        for part in rel.split(os.sep):
            cur = os.path.join(cur, part)
            try:
                os.mkdir(cur, 0o755)
                self._chown(cur)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(cur).st_mode):
                    raise TransferError(f"{rel!r} is not a directory") from None

    def _outputs(self, checkpoint: bool = False) -> list[tuple[str, str, str]]:
        """(name on the wire, path here, role) of every file to send back, HTCondor's rules;
        ``checkpoint``: the checkpoint's files instead (transfer_checkpoint_files, else
        the outputs but stdout and stderr)."""
        spec, box = self.spec, self.sandbox
        out: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for std, role in ((spec.stdout, "stdout"), (spec.stderr, "stderr")):
            if checkpoint or role in self._streamed:
                if std is not None:
                    seen.add(os.path.basename(std))
                continue
            if std is not None:
                name = os.path.basename(std)
                path = os.path.join(box, name)
                if name not in seen and is_plain_file(path):
                    out.append((name, path, role))
                    seen.add(name)
        if checkpoint and spec.checkpoint_files is not None:
            wanted = spec.checkpoint_files
        elif spec.transfer_output is not None:
            wanted = spec.transfer_output
        else:
            wanted = []
            for entry in os.scandir(box):
                if entry.name in seen or entry.name in INTERNAL_FILES:
                    continue
                st = entry.stat(follow_symlinks=False)
                if self._inputs.get(entry.name) == (st.st_size, st.st_mtime_ns):
                    continue
                if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                    wanted.append(entry.name)
        for item in wanted:
            try:
                rel = _safe_relpath(item)
            except TransferError:
                self.output_problems.append(f"output {item!r} is outside the job's sandbox")
                continue
            path = os.path.join(box, rel)
            # preserve_relative_paths: a relative entry comes back under its own path
            base = rel if spec.preserve_relative_paths else os.path.basename(rel)
            if os.path.isdir(path) and not os.path.islink(path):
                for root, _dirs, files in os.walk(path):
                    for f in sorted(files):
                        full = os.path.join(root, f)
                        if is_plain_file(full):
                            out.append((os.path.join(base, os.path.relpath(full, path)), full, ""))
            elif is_plain_file(path):
                if base not in seen:
                    out.append((base, path, ""))
                    seen.add(base)
            elif spec.transfer_output is not None and not checkpoint:
                # named in transfer_output_files: HTCondor holds a job that did not make it
                self.output_problems.append(f"{item}: the job did not create it (No such file or directory)")
        return out

    async def _put_files(self, address: str, cmd: str = "PUT_FILES",
                         entries: list[tuple[str, str, str]] | None = None, checkpoint_id: str = "") -> None:
        files = []
        listing = []
        for name, path, role in self._outputs() if entries is None else entries:
            # read as root: never through a link the job put anywhere on the way
            # (userfiles.open_beneath), only regular files, never blocking on a FIFO
            try:
                fd = userfiles.open_beneath(self.sandbox, path)
                try:
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
            except FileNotFoundError:
                continue
            except OSError as e:
                if startfault.is_shortage(e):
                    raise  # the machine's (out of descriptors...): _deliver tries again later
                self.output_problems.append(f"{name}: {e.strerror or e}")
                continue
            files.append((path, st.st_size))
            entry = {"name": name, "size": st.st_size, "mode": st.st_mode & 0o777}
            if role:
                entry["role"] = role
            listing.append(entry)
        if not files and cmd == "PUT_FILES":
            return
        limit = CHECKPOINT_UPLOAD_TIMEOUT if cmd == "PUT_CHECKPOINT" else CALL_TIMEOUT * 10
        # a checkpoint may wait long for the schedd's admission: it holds no turn of others'
        async with self.peers.connection(address, bounded=cmd == "PUT_FILES") as conn, asyncio.timeout(limit):
            head = {"cmd": cmd, "job": self.spec.job_id, "claim_id": self.claim_id, "files": listing}
            if checkpoint_id:
                head["checkpoint_id"] = checkpoint_id  # the same on each try: kept once
            if cmd == "PUT_CHECKPOINT" and self.vacating:
                head["urgent"] = True  # the claim waits for it: not queued behind others
            await conn.send(head)
            for path, size in files:
                with self._open_output(path) as f:
                    left = size
                    while left:
                        chunk = f.read(min(left, CHUNK)) or b"\0" * min(left, CHUNK)
                        conn.writer.write(chunk)
                        left -= len(chunk)
                        if conn.writer.transport.get_write_buffer_size() > CHUNK:
                            await conn.writer.drain()
            await conn.writer.drain()
            resp = await conn.recv()
            if resp.get("ok") is not True:
                # a refusal may have come before the schedd read our bytes: the stream may
                # be out of step, so this connection is not used again
                conn.close()
                raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or f"{cmd} refused"))

    def _open_output(self, path: str) -> Any:
        try:
            return os.fdopen(userfiles.open_beneath(self.sandbox, path), "rb")
        except OSError:
            return open(os.devnull, "rb")  # vanished or replaced since it was listed: zeros

