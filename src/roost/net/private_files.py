"""Owner-only files: keys, tokens and certificates' private keys, written whole; the
job queue database, the accountant and the reservations, made closed to group and
others before anything is in them (docs/security.md, *Secrets at rest*).

``write_private`` writes under a fresh, unguessable name opened with O_EXCL (nobody
else can have opened it first), synced, then put in place, so no reader ever sees half
a file."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat


def write_private(path: str | os.PathLike[str], data: bytes, *, replace: bool) -> None:
    """Write ``data`` to ``path``, mode 0600. ``replace``: over whatever is there;
    else linked into place, FileExistsError when ``path`` exists (another process
    was first: two starting at once agree on one file)."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, mode=0o700, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.new.{os.getpid()}.{secrets.token_hex(8)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):  # gone already when it replaced the file
            os.unlink(tmp)


#: group and other permission bits: a private file has none
_OPEN_BITS = 0o077


def close_to_others(path: str | os.PathLike[str]) -> bool:
    """Take group and other bits off an existing regular file (one an older roost made
    0644); True when its mode changed. A missing file, a link or anything not a regular
    file is left alone: a link would lead the chmod elsewhere."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(st.st_mode) or not st.st_mode & _OPEN_BITS:
        return False
    os.chmod(path, stat.S_IMODE(st.st_mode) & ~_OPEN_BITS)
    return True


def create_private(path: str | os.PathLike[str]) -> None:
    """Make ``path`` an empty file, mode 0600, unless it exists (then only close it to
    others). For files another library opens afterwards, SQLite above all: it creates
    a database under the umask, and its -wal and -shm files with the database's mode,
    so a database made 0600 first keeps all three private."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        close_to_others(path)
        return
    os.close(fd)


def open_private(path: str | os.PathLike[str]) -> int:
    """A new or truncated file for writing, mode 0600 whatever the umask (a temporary
    file renamed over a private one); its descriptor."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)  # a leftover temporary file keeps its old mode otherwise
    return fd
