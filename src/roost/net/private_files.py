"""Owner-only files written whole: keys, tokens, certificates' private keys.

Written under a fresh, unguessable name opened with O_EXCL (nobody else can have opened
it first), synced, then put in place, so no reader ever sees half a file."""

from __future__ import annotations

import contextlib
import os
import secrets


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
