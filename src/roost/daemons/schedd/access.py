"""File access on a job owner's behalf: the schedd runs as root, its jobs' owners do not.

HTCondor's shadow switches to the job owner before touching the owner's files. A
Python process cannot switch one task's identity without switching every thread's,
so the schedd checks permission bits as the kernel would for the owner (owner,
group and other bits, search permission on parent directories) before reading an
input file, writing an output file or appending to a user log. Owners without an
account here are treated as ``nobody``. When the schedd is not root it can only
reach what its own user may anyway, and nothing is checked.

:class:`QueueRights` is the other half of acting for an owner: who may change which
jobs. The command's level (WRITE) is checked before any handler runs
(:mod:`roost.daemons.security`); here, which jobs: a user's own, or every job for a
queue super user (``QUEUE_SUPER_USERS``) and the schedd's own account.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from typing import Any

from roost.core.accounting_user import accounting_user_problem
from roost.daemons.accounts import account, groups
from roost.daemons.security import peer_user
from roost.daemons.userfiles import User, allowed
from roost.net.errors import RequestError
from roost.net.server import Peer

_NOBODY = (65534, 65534, frozenset({65534}))


def identity(owner: str) -> tuple[int, int, frozenset[int]] | None:
    """(uid, gid, groups) whose rights apply to ``owner``'s files; None: unrestricted."""
    if os.geteuid() != 0:
        return None
    pw = account(owner)
    if pw is None:
        return _NOBODY
    return (pw.pw_uid, pw.pw_gid, groups(pw)) if pw.pw_uid != 0 else None


def owner_user(owner: str) -> User:
    """``owner``'s rights as userfiles.py checks them (root's, unchecked, when
    ``identity`` says unrestricted)."""
    ident = identity(owner)
    return User(*ident) if ident is not None else User(0, 0, frozenset())


def _allowed(st: os.stat_result, ident: tuple[int, int, frozenset[int]], what: str) -> bool:
    return allowed(st, User(*ident), what)


def _searchable(path: str, ident: tuple[int, int, frozenset[int]]) -> bool:
    """Every directory above ``path`` can be searched by the identity."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            if not _allowed(os.stat(d), ident, "x"):
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
    return _allowed(st, ident, "x" if stat.S_ISDIR(st.st_mode) else "r") and _searchable(path, ident)


def open_read(owner: str, path: str) -> Any:
    """``path`` opened for reading on ``owner``'s behalf (a binary file object), as the
    kernel would let the owner: links followed, as the owner's own open would, and what
    was opened checked after the open (its mode bits and the directories above its
    real path), so a file swapped for a link between ``may_read`` and this open (to
    /etc/shadow, say) is refused, not read as root. OSError when not allowed."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        ident = identity(owner)
        if ident is not None:
            st = os.fstat(fd)
            real = os.readlink(f"/proc/self/fd/{fd}")
            if not stat.S_ISREG(st.st_mode) or not _allowed(st, ident, "r") or not _searchable(real, ident):
                raise PermissionError(13, f"{owner} may not read it (it is {real} now)", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


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
        if not _allowed(st, ident, "w"):
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
    if not _allowed(dst, ident, "wx"):
        return False
    return _searchable(os.path.join(d, "x"), ident)


class QueueRights:
    """Who may change which jobs, from the peer's authenticated identity."""

    def __init__(self, uid_domain: str, super_users: Iterable[str], schedd_user: str) -> None:
        self.uid_domain = uid_domain
        self.schedd_user = schedd_user
        self.super_users = frozenset(super_users) | {schedd_user}
        self.root = os.geteuid() == 0
        #: SCHEDD_ALLOW_OTHER_ACCOUNTING_USER: anyone may charge any accounting user
        self.allow_other_accounting_user = False

    def set_super_users(self, super_users: Iterable[str]) -> None:
        """QUEUE_SUPER_USERS again (RECONFIG); the schedd's own account stays one."""
        self.super_users = frozenset(super_users) | {self.schedd_user}

    def user(self, peer: Peer, cmd: str) -> str:
        """The local account the peer speaks for; DENIED when it is no user of this
        UID_DOMAIN (unauthenticated, or from another domain)."""
        user = peer_user(peer, self.uid_domain)
        if user is None:
            who = peer.identity.name if peer.identity else "an unauthenticated peer"
            raise RequestError(
                "DENIED", f"{cmd}: {who} is no user of UID_DOMAIN {self.uid_domain}, so it may own no jobs here"
            )
        return user

    def is_super(self, user: str) -> bool:
        return user in self.super_users

    def check_accounting_user(self, user: str, owner: str, get: Callable[[str], Any], cmd: str) -> None:
        """May ``user`` give a job of ``owner``'s the accounting user it names (``get``
        reads the job's attributes)? DENIED with the rule, on one line, when not."""
        if self.allow_other_accounting_user or self.is_super(user):
            return
        problem = accounting_user_problem(owner, get)
        if problem is not None:
            raise RequestError("DENIED", f"{cmd}: {problem}")

    def check_owner(self, user: str, owner: str, cmd: str) -> None:
        """May ``user`` queue a job that runs as ``owner``?"""
        if owner != user and not self.is_super(user):
            raise RequestError("DENIED", f"{cmd}: user {user} may not submit jobs owned by {owner!r}")
        if not self.root and owner != self.schedd_user:
            raise RequestError(
                "DENIED", f"{cmd}: this schedd runs as {self.schedd_user}, not root, so it can run only "
                f"{self.schedd_user}'s jobs, not {owner!r}'s",
            )
