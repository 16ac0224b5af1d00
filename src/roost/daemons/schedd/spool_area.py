"""A spooled job's directory on disk: input received into it, output read out of it.

Input arrives into a fresh directory of root's (``<job dir>.tmp.<random>``, 0700)
where every file is created exclusively and never through a link; only once every
byte is in and fsynced is the tree given to the job's owner and renamed to the job's
directory, so a transfer cut halfway leaves nothing that looks complete (the partial
directory is removed, and any left by a killed schedd is swept at start).

Output is read as root from a directory the owner controls (a local owner can put a
link or a FIFO there), so it is walked from the job directory's descriptor, no link
followed at any depth, and only regular files with one link that the owner may read
by their bits are sent (userfiles.py's rules).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile

from roost.core.spooling import SpoolError, spool_name
from roost.daemons.userfiles import User, allowed

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Incoming:
    """One job's input being received; :meth:`commit` makes it the job's directory."""

    def __init__(self, final: str) -> None:
        self.final = final
        parent = os.path.dirname(final)
        os.makedirs(parent, mode=0o755, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix=os.path.basename(final) + ".tmp.", dir=parent)  # 0700, root's
        self._top = os.open(self.tmp, _DIR_FLAGS)

    def open(self, name: str, mode: int) -> int:
        """A new file ``name`` (checked) for writing; its directories made on the way."""
        parts = spool_name(name).split("/")
        fd = os.dup(self._top)
        try:
            for part in parts[:-1]:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=fd)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = nxt
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                          (mode & 0o700) | 0o600, dir_fd=fd)
        except FileExistsError:
            raise SpoolError(f"spool file {name!r} sent twice (or inside a file sent before)") from None
        except NotADirectoryError:
            raise SpoolError(f"spool file {name!r} lies inside a file sent before") from None
        finally:
            os.close(fd)
        return out

    def commit(self, ids: tuple[int, int] | None) -> None:
        """fsync, give the tree to ``ids`` (uid, gid; None: stay ours), rename into place.
        Blocking: run on a worker thread."""
        for root, dirs, files in os.walk(self.tmp):
            for name in files + dirs:
                path = os.path.join(root, name)
                if ids is not None:
                    os.chown(path, ids[0], ids[1], follow_symlinks=False)
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        if ids is not None:
            os.chown(self.tmp, ids[0], ids[1], follow_symlinks=False)
        os.chmod(self.tmp, 0o700)  # the job's input is its owner's alone
        os.fsync(self._top)
        if os.path.lexists(self.final):  # a leftover of an earlier cluster with this id
            shutil.rmtree(self.final, ignore_errors=True)
        os.rename(self.tmp, self.final)
        parent = os.open(os.path.dirname(self.final), _DIR_FLAGS)
        try:
            os.fsync(parent)
        finally:
            os.close(parent)
        self.close()

    def abort(self) -> None:
        self.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def close(self) -> None:
        if self._top >= 0:
            os.close(self._top)
            self._top = -1


def sweep_partial(root: str) -> int:
    """Half-received input left by a schedd killed mid-transfer: removed at start."""
    n = 0
    for a in _listdir(root):
        if not a.isdigit():
            continue
        for p in _listdir(os.path.join(root, a)):
            d = os.path.join(root, a, p)
            for name in _listdir(d):
                if ".tmp." in name and name.startswith("cluster"):
                    shutil.rmtree(os.path.join(d, name), ignore_errors=True)
                    n += 1
    return n


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


#: the most directory levels and files one job's spooled output may have: the job's owner
#: shapes that tree, and the schedd walks it holding a descriptor per level
MAX_OUTPUT_DEPTH = 64
MAX_OUTPUT_FILES = 100_000


class OutputTooBig(Exception):
    """The job's spool directory is deeper or holds more files than one fetch takes."""


def output_files(top: str, user: User, skip: set[str]) -> list[tuple[str, int, int]]:
    """(name, size, mode) of every file of the job directory ``top`` to send back:
    regular, one link, readable by ``user``, reached without a link; top-level names in
    ``skip`` (the job's input) left out. Anything else is passed over. OutputTooBig past
    MAX_OUTPUT_DEPTH levels or MAX_OUTPUT_FILES files."""
    out: list[tuple[str, int, int]] = []
    try:
        fd = os.open(top, _DIR_FLAGS)
    except OSError:
        return out

    def walk(dfd: int, prefix: str, depth: int) -> None:
        if depth > MAX_OUTPUT_DEPTH:
            raise OutputTooBig(f"its output is more than {MAX_OUTPUT_DEPTH} directories deep ({prefix[:100]}...)")
        entries: list[os.DirEntry[str]] = []
        with os.scandir(dfd) as it:
            for e in it:  # read no further than the bound (a directory of millions)
                entries.append(e)
                if len(out) + len(entries) > MAX_OUTPUT_FILES * 2:
                    raise OutputTooBig(f"its output holds more than {MAX_OUTPUT_FILES} files")
        entries.sort(key=lambda e: e.name)
        for e in entries:
            name = prefix + e.name
            if not prefix and e.name in skip:
                continue
            try:
                st = os.stat(e.name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if not allowed(st, user, "rx"):
                    continue
                try:
                    sub = os.open(e.name, _DIR_FLAGS, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    walk(sub, name + "/", depth + 1)
                finally:
                    os.close(sub)
            elif stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and allowed(st, user, "r"):
                out.append((name, st.st_size, stat.S_IMODE(st.st_mode)))
                if len(out) > MAX_OUTPUT_FILES:
                    raise OutputTooBig(f"its output holds more than {MAX_OUTPUT_FILES} files")

    try:
        walk(fd, "", 0)
    finally:
        os.close(fd)
    return out


def open_output(top: str, name: str, user: User) -> int:
    """``name`` under ``top`` opened for reading by the same rules as :func:`output_files`
    (checked again: the owner may have swapped it meanwhile)."""
    parts = spool_name(name).split("/")
    fd = os.open(top, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
        # looked at before it is opened: a device's or FIFO's very opening may act
        before = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if not stat.S_ISREG(before.st_mode):
            raise OSError(f"{name}: not a regular file")
        out = os.open(parts[-1], _READ_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    st = os.fstat(out)
    if (not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or not allowed(st, user, "r")
            or (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino)):
        os.close(out)
        raise OSError(f"{name}: not a regular file of one link its owner may read")
    return out

