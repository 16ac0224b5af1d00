"""Opening a user's file as root without letting the user point root elsewhere.

The startd opens a job's stdin/stdout/stderr and reads its outputs, the schedd writes
a running job's streamed output, and both run as root, in directories the user
controls. A user can swap any component of such a path for a symbolic link (to /etc,
say), put a hard link to a file it cannot read, or a FIFO that blocks whoever opens
it. So a path is resolved once (the links it has then lead where they would lead the
user) and reached one directory at a time from ``/``, never through a link
(``O_NOFOLLOW`` on each component: one swapped in meanwhile is refused); the user's own
rights are checked on what was reached (permission bits as the kernel would judge them
for that user, search permission on each directory walked); the file is looked at
before it is opened (never a device or a FIFO, whose very opening has effects),
opened without blocking, and must be a regular file with one link. Below a trusted top
(a sandbox root made, read as root to send a job's files back) nothing is resolved:
no link at all is followed. A file that does not exist is created
exclusively and given to the user, in a directory the user may write. Truncation
happens only after every check.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from dataclasses import dataclass


@dataclass(frozen=True)
class User:
    """Whose rights apply: uid, primary gid and every group id (root: no checks)."""

    uid: int
    gid: int
    groups: frozenset[int]


_BITS = {"r": (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH), "w": (stat.S_IWUSR, stat.S_IWGRP, stat.S_IWOTH),
         "x": (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)}


def allowed(st: os.stat_result, user: User, what: str) -> bool:
    """Whether ``user`` has every right in ``what`` ("r", "w", "x") by these bits."""
    if user.uid == 0:
        return True
    col = 0 if st.st_uid == user.uid else 1 if st.st_gid in user.groups else 2
    return all(st.st_mode & _BITS[c][col] for c in what)


def _refused(path: str, why: str, code: int = errno.EACCES) -> OSError:
    return OSError(code, why, path)


def open_dir(path: str, user: User, start: str = "/") -> int:
    """A descriptor of directory ``path``, walked from ``start`` (trusted; ``path`` must
    be under it) one component at a time without following a link, each directory
    searchable by ``user``. ``start = "/"`` resolves ``path`` first (symlinks the
    administrator made, /home -> /data/home, are fine: they exist before any job)."""
    if start == "/":
        path = os.path.realpath(path)
    rel = os.path.relpath(path, start)
    if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
        raise _refused(path, f"{path} is not under {start}")
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in ([] if rel == "." else rel.split(os.sep)):
            if not allowed(os.fstat(fd), user, "x"):
                raise _refused(path, "a directory on the way cannot be searched by the job's user")
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise _refused(path, f"{part} is a symbolic link or not a directory: not followed",
                                   errno.ELOOP) from None
                raise
            os.close(fd)
            fd = nfd
        if not allowed(os.fstat(fd), user, "x"):
            raise _refused(path, "the directory cannot be searched by the job's user")
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_as(path: str, user: User, *, write: bool = False, create: bool = False, truncate: bool = False,
            append: bool = False, mode: int = 0o644, start: str = "/") -> int:
    """Open ``path`` (read or write) for ``user`` as described above; OSError naming
    why not. ``create``: a missing file is made (exclusively, owned by ``user``)."""
    parent, name = os.path.split(os.path.abspath(path))
    if not name:
        raise _refused(path, "not a file name")
    dfd = open_dir(parent, user, start)
    try:
        flags = ((os.O_WRONLY | (os.O_APPEND if append else 0)) if write else os.O_RDONLY) \
            | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        created = False
        try:
            # looked at before it is opened: opening a device or a FIFO as root has
            # effects of its own (a tape rewinds, a FIFO blocks)
            before = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISREG(before.st_mode):
                raise _refused(path, "a symbolic link: not followed" if stat.S_ISLNK(before.st_mode)
                               else "not a regular file", errno.ELOOP if stat.S_ISLNK(before.st_mode)
                               else errno.EINVAL)
            fd = os.open(name, flags, dir_fd=dfd)
        except FileNotFoundError:
            if not (write and create):
                raise
            if not allowed(os.fstat(dfd), user, "wx"):
                raise _refused(path, "the job's user may not create files there") from None
            fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, mode, dir_fd=dfd)
            created = True
            if user.uid != 0 and os.geteuid() == 0:
                os.fchown(fd, user.uid, user.gid)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _refused(path, "a symbolic link: not followed", errno.ELOOP) from None
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (not created and (st.st_dev, st.st_ino) != (before.st_dev, before.st_ino)):
            raise _refused(path, "not a regular file (or replaced while it was opened)", errno.EINVAL)
        if not created:
            if st.st_nlink != 1 and user.uid != 0:
                raise _refused(path, "a file with several hard links: refused")
            if not allowed(st, user, "w" if write else "r"):
                raise _refused(path, "the job's user may not " + ("write" if write else "read") + " it")
        if truncate and not created:
            os.ftruncate(fd, 0)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def open_beneath(top: str, path: str) -> int:
    """Read ``path``, which is under directory ``top`` (a sandbox root made): no link
    anywhere below ``top``, a regular file only, never blocking (OSError otherwise).
    No rights are checked: root reads what the job wrote, to send it back."""
    return open_as(path, User(0, 0, frozenset()), start=top)
