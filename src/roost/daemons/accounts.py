"""Local accounts by name, looked up once: the schedd, run as root, asks for a job
owner's uid, gid and groups before each file it touches on the owner's behalf, and
the password database (NSS: files, LDAP, sssd) is slow to ask thousands of times.

A name without an account is remembered as such too. Each table is bounded (a
hostile submitter can invent owner names): past ``LIMIT`` names it starts again.
"""

from __future__ import annotations

import os
import pwd

LIMIT = 4096

_accounts: dict[str, pwd.struct_passwd | None] = {}
_groups: dict[str, frozenset[int]] = {}


def account(name: str) -> pwd.struct_passwd | None:
    """``name``'s password entry, or None when this machine has no such user."""
    try:
        return _accounts[name]
    except KeyError:
        pass
    try:
        got: pwd.struct_passwd | None = pwd.getpwnam(name)
    except (KeyError, TypeError, ValueError):  # no such user; not a name at all
        got = None
    if len(_accounts) >= LIMIT:
        _accounts.clear()
    _accounts[name] = got
    return got


def groups(entry: pwd.struct_passwd) -> frozenset[int]:
    """The groups ``entry``'s user is in (its primary group and the supplementary ones)."""
    got = _groups.get(entry.pw_name)
    if got is None:
        got = frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
        if len(_groups) >= LIMIT:
            _groups.clear()
        _groups[entry.pw_name] = got
    return got
