"""File access on a job owner's behalf: the schedd runs as root, its jobs' owners do not.

HTCondor's shadow switches to the job owner before touching the owner's files. A
Python process cannot switch one task's identity without switching every thread's,
so the schedd checks permission bits as the kernel would for the owner (owner,
group and other bits, search permission on parent directories) before reading an
input file, writing an output file or appending to a user log. Owners without an
account here are treated as ``nobody``. When the schedd is not root it can only
reach what its own user may anyway, and nothing is checked.

``require_user`` is the other half of acting for an owner: who may change the queue.
"""

from __future__ import annotations

import os
import pwd
import stat

from roost.net.errors import RequestError
from roost.net.server import Peer

_NOBODY = (65534, 65534, frozenset({65534}))
_identities: dict[str, tuple[int, int, frozenset[int]] | None] = {}


def identity(owner: str) -> tuple[int, int, frozenset[int]] | None:
    """(uid, gid, groups) whose rights apply to ``owner``'s files; None: unrestricted."""
    if os.geteuid() != 0:
        return None
    if owner in _identities:
        return _identities[owner]
    try:
        pw = pwd.getpwnam(owner)
        got: tuple[int, int, frozenset[int]] | None = (
            (pw.pw_uid, pw.pw_gid, frozenset(os.getgrouplist(pw.pw_name, pw.pw_gid))) if pw.pw_uid != 0 else None
        )
    except (KeyError, TypeError):
        got = _NOBODY
    if len(_identities) > 4096:
        _identities.clear()
    _identities[owner] = got
    return got


def _allowed(st: os.stat_result, ident: tuple[int, int, frozenset[int]], bits: tuple[int, int, int]) -> bool:
    uid, _gid, groups = ident
    if st.st_uid == uid:
        return bool(st.st_mode & bits[0])
    if st.st_gid in groups:
        return bool(st.st_mode & bits[1])
    return bool(st.st_mode & bits[2])


_R = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)
_W = (stat.S_IWUSR, stat.S_IWGRP, stat.S_IWOTH)
_X = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)


def _searchable(path: str, ident: tuple[int, int, frozenset[int]]) -> bool:
    """Every directory above ``path`` can be searched by the identity."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            if not _allowed(os.stat(d), ident, _X):
                return False
        except OSError:
            return False
        parent = os.path.dirname(d)
        if parent == d:
            return True
        d = parent


def may_read(owner: str, path: str) -> bool:
    ident = identity(owner)
    if ident is None:
        return True
    try:
        st = os.stat(path)
    except OSError:
        return True  # the read itself reports the error
    return _allowed(st, ident, _X if stat.S_ISDIR(st.st_mode) else _R) and _searchable(path, ident)


def may_write(owner: str, path: str, *, replace: bool = True) -> bool:
    """Whether the owner could write ``path``: replace it (``replace``: the nearest
    existing directory above must be writable) or append to it (an existing file
    must be writable; a new one needs a writable directory)."""
    ident = identity(owner)
    if ident is None:
        return True
    target = os.path.abspath(path)
    try:
        st = os.lstat(target)
        if stat.S_ISLNK(st.st_mode):
            st = os.stat(target)
            if replace:
                return False  # never replace a link as root
        if not _allowed(st, ident, _W):
            return False
        if not replace:
            return _searchable(target, ident)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    d = os.path.dirname(target)
    while not os.path.isdir(d):
        parent = os.path.dirname(d)
        if parent == d:
            return False
        d = parent
    try:
        dst = os.stat(d)
    except OSError:
        return False
    if not (_allowed(dst, ident, _W) and _allowed(dst, ident, _X)):
        return False
    return _searchable(os.path.join(d, "x"), ident)


def require_user(peer: Peer, cmd: str) -> None:
    """Changing the queue needs an authenticated user: the Unix socket's peer. A root
    schedd runs jobs as their owners, so an unauthenticated TCP peer must not name
    one (token/SSL authentication comes with the security issue)."""
    if peer.user is None and os.geteuid() == 0:
        raise RequestError(
            "DENIED", f"{cmd} needs an authenticated user: use the schedd's Unix socket (run/schedd.sock)"
        )
