"""The pool's token signing keys: one file per key name in ``SEC_PASSWORD_DIRECTORY``.

As HTCondor's ``passwords.d``: the file's name is the key's name (the token
header's ``kid``); ``POOL``, the default, lives at
``SEC_TOKEN_POOL_SIGNING_KEY_FILE``. Whoever holds a key can mint any identity,
so a key file is used only when it is a regular file owned by this user and
closed to group and others; anything else is refused with the file's name
rather than trusted. The central manager makes the POOL key at first start
(``ensure_key_file``), 32 random bytes, created under a temporary name and
linked into place, so no reader ever sees a half-written key and two daemons
starting at once agree on one key.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections.abc import Callable

from roost.net.private_files import write_private
from roost.net.tokens import TokenError

log = logging.getLogger(__name__)

KEY_BYTES = 32
#: shorter keys are refused: a guessable key is everyone's key
MIN_KEY_BYTES = 32


def check_key_name(name: str) -> str:
    """A key name is a plain file name (it comes from a token's header)."""
    if not name or "/" in name or name.startswith(".") or "\0" in name:
        raise TokenError(f"key name {name!r} is not a plain file name")
    return name


def read_key_file(path: str | os.PathLike[str]) -> bytes:
    """The key in ``path``; TokenError naming the file if it is missing, not this
    user's, open to group or others, or too short."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TokenError(f"signing key file {path} does not exist") from None
    except OSError as e:
        raise TokenError(f"signing key file {path} cannot be read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise TokenError(f"signing key file {path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise TokenError(f"signing key file {path} is owned by uid {st.st_uid}, "
                             f"not by this user (uid {os.geteuid()}); refusing it")
        if st.st_mode & 0o077:
            raise TokenError(f"signing key file {path} is open to group or others "
                             f"(mode {stat.S_IMODE(st.st_mode):04o}); refusing it: chmod 600 {path}")
        key = os.read(fd, 65536)
    finally:
        os.close(fd)
    if len(key) < MIN_KEY_BYTES:
        raise TokenError(f"signing key file {path} holds {len(key)} bytes; "
                         f"a key needs at least {MIN_KEY_BYTES}")
    return key


def ensure_key_file(path: str | os.PathLike[str]) -> bytes:
    """The key in ``path``, made first if there is none (owner-only, 32 random bytes)."""
    path = os.fspath(path)
    if os.path.lexists(path):  # whatever is there is the key, or an error naming it
        return read_key_file(path)
    try:
        write_private(path, secrets.token_bytes(KEY_BYTES), replace=False)
        log.info("made signing key %s", path)
    except FileExistsError:
        pass  # another process made the key first: use theirs
    return read_key_file(path)


def ensure_key(directory: str | os.PathLike[str], name: str) -> bytes:
    """``directory/name``'s key, made first if there is none."""
    return ensure_key_file(os.path.join(os.fspath(directory), check_key_name(name)))


def load_keys(directory: str | os.PathLike[str], *, pool_key_file: str | None = None,
              warn: Callable[[str], None] = log.warning) -> dict[str, bytes]:
    """Every usable key: name -> bytes. A file that cannot be used is left out and
    ``warn`` says which and why; a missing directory is no keys.

    ``pool_key_file`` (``SEC_TOKEN_POOL_SIGNING_KEY_FILE``) is the ``POOL`` key
    wherever it lives, as in HTCondor.
    """
    directory = os.fspath(directory)
    paths: dict[str, str] = {}
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        names = []
    except OSError as e:
        warn(f"signing key directory {directory} cannot be read: {e.strerror}")
        names = []
    for name in names:
        if not name.startswith("."):
            paths[name] = os.path.join(directory, name)
    if pool_key_file:
        paths["POOL"] = pool_key_file
    keys: dict[str, bytes] = {}
    for name, path in paths.items():
        try:
            keys[name] = read_key_file(path)
        except TokenError as e:
            if name == "POOL" and pool_key_file and not os.path.lexists(path):
                continue  # no POOL key (yet) is no key, not a fault
            warn(str(e))
    return keys
