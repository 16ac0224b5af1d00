"""Self-checkpointing jobs' checkpoints, kept in the schedd's spool (issue 15).

A job that exits with its ``checkpoint_exit_code`` has its checkpoint files sent here
(PUT_CHECKPOINT) while its starter restarts it in place; any later start of the job
(after an eviction, a lost startd, a schedd restart) receives the latest good one
with its input (GET_FILES). A checkpoint is stored transactionally, so a failure at
any point (a full disk, a cut connection, a kill) leaves the previous one whole:
the files go to a new directory, are fsynced, the directory is renamed into place and
the ``current`` link switched atomically; only then is the older one removed.

Layout: ``$(SPOOL)/checkpoints/<cluster>/<proc>/ckpt.<n>/`` and ``current`` -> ``ckpt.<n>``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

from roost.daemons.sandbox_paths import sandbox_relpath


class CheckpointError(Exception):
    """A checkpoint could not be stored (the previous one, if any, is still there)."""


class CheckpointStore:
    def __init__(self, spool: str) -> None:
        self.root = os.path.join(spool, "checkpoints")

    def job_dir(self, cluster: int, proc: int) -> str:
        return os.path.join(self.root, str(cluster), str(proc))

    def current(self, cluster: int, proc: int) -> str | None:
        """The directory of the job's latest good checkpoint, or None."""
        link = os.path.join(self.job_dir(cluster, proc), "current")
        try:
            target = os.readlink(link)
        except OSError:
            return None
        path = os.path.join(self.job_dir(cluster, proc), target)
        return path if os.path.isdir(path) else None

    def files(self, cluster: int, proc: int) -> Iterator[tuple[str, str]]:
        """(name in the sandbox, path here) of every file of the latest checkpoint."""
        top = self.current(cluster, proc)
        if top is None:
            return
        for root, dirs, names in os.walk(top):
            dirs.sort()
            for name in sorted(names):
                full = os.path.join(root, name)
                yield os.path.relpath(full, top), full

    def begin(self, cluster: int, proc: int) -> PendingCheckpoint:
        d = self.job_dir(cluster, proc)
        try:
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            raise CheckpointError(f"cannot make {d}: {e.strerror or e}") from None
        n = 1 + max((int(x[5:]) for x in _listdir(d) if x.startswith("ckpt.") and x[5:].isdigit()), default=0)
        return PendingCheckpoint(d, n)

    def remove(self, cluster: int, proc: int) -> None:
        """The job left the queue: its checkpoints go (and an empty cluster directory)."""
        d = self.job_dir(cluster, proc)
        shutil.rmtree(d, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(d))

    def sweep_partial(self) -> None:
        """At start: half-written checkpoints of a schedd that died while storing them."""
        for cluster in _listdir(self.root):
            for proc in _listdir(os.path.join(self.root, cluster)):
                d = os.path.join(self.root, cluster, proc)
                for name in _listdir(d):
                    if name.startswith("tmp."):
                        shutil.rmtree(os.path.join(d, name), ignore_errors=True)


class PendingCheckpoint:
    """One checkpoint being received: files under ``tmp.<n>.<random>``, then :meth:`commit`."""

    def __init__(self, job_dir: str, number: int) -> None:
        self.job_dir = job_dir
        self.number = number
        # a name of its own: two uploads of one job (a retry while the first waits for
        # its turn) never write into, or remove, each other's files
        self.tmp = tempfile.mkdtemp(prefix=f"tmp.{number}.", dir=job_dir)
        self.size = 0

    def open(self, name: str) -> int:
        rel = sandbox_relpath(name, CheckpointError, "checkpoint file")
        path = os.path.join(self.tmp, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)

    def commit(self) -> None:
        """fsync everything, rename into place, switch ``current``, drop the old one."""
        for root, dirs, names in os.walk(self.tmp):
            for name in names + dirs:
                _fsync(os.path.join(root, name))
            _fsync(root)
        final = os.path.join(self.job_dir, f"ckpt.{self.number}")
        os.rename(self.tmp, final)
        link_tmp = os.path.join(self.job_dir, f"current.{self.number}")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(link_tmp)
        os.symlink(f"ckpt.{self.number}", link_tmp)
        os.replace(link_tmp, os.path.join(self.job_dir, "current"))
        _fsync(self.job_dir)
        for name in _listdir(self.job_dir):
            if name.startswith("ckpt.") and name != f"ckpt.{self.number}":
                shutil.rmtree(os.path.join(self.job_dir, name), ignore_errors=True)

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
