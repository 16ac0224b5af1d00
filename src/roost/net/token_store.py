"""Tokens on disk: a host's ``tokens.d``, the revocation list, and the knobs that
say where they are.

``SEC_TOKEN_DIRECTORY`` holds one token per file as HTCondor's ``tokens.d``
does (a file may hold several, one per line; blank and ``#`` lines are
skipped); files are read in name order, as HTCondor searches them. A token is
a credential, so a file open to group or others is skipped with a warning, as
is one that cannot be read or parsed: one bad file never hides the rest.

Revocation is HTCondor's ``SEC_TOKEN_REVOCATION_EXPR`` (a ClassAd expression
over the token's claims; true, or anything that is not a boolean, revokes, as
HTCondor errs on the side of refusing) plus roost's revocation list
(``SEC_TOKEN_REVOCATION_FILE``, one ``jti`` a line, what ``roost token revoke``
appends to), reread whenever the file changes so a revocation needs no restart.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

import roost.classad as classad
from roost.net.private_files import write_private
from roost.net.signing_key import load_keys
from roost.net.tokens import Claims, TokenError, check_issuer, decode_token, utc

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from roost.config import Config

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FoundToken:
    """A token read from a file, with its claims decoded but NOT verified."""

    token: str
    file: str
    header: dict
    claims: Claims


def _open_to_others(path: str) -> int | None:
    """The file's mode when group or others may read or write it, else None."""
    mode = os.stat(path).st_mode
    return stat.S_IMODE(mode) if mode & 0o077 else None


def find_tokens(directory: str | os.PathLike[str], *,
                warn: Callable[[str], None] = log.warning) -> list[FoundToken]:
    """Every well-formed token in ``directory``'s files, in file-name order; what
    is skipped is named through ``warn``. A missing directory holds no tokens."""
    directory = os.fspath(directory)
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return []
    except OSError as e:
        warn(f"token directory {directory} cannot be read: {e.strerror}")
        return []
    found: list[FoundToken] = []
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") or name.endswith("~") or not os.path.isfile(path):
            continue
        try:
            mode = _open_to_others(path)
            if mode is not None:
                warn(f"token file {path} is open to group or others (mode {mode:04o}); "
                     f"skipping it: chmod 600 {path}")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read(1 << 20)
        except (OSError, UnicodeDecodeError) as e:
            warn(f"token file {path} cannot be read: {getattr(e, 'strerror', None) or e}")
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                header, claims = decode_token(line)
            except TokenError as e:
                warn(f"token file {path}, line {lineno}: {e}; skipping it")
                continue
            found.append(FoundToken(line, path, header, claims))
    return found


def write_token_file(path: str | os.PathLike[str], token: str) -> None:
    """Write one token to ``path``, owner-only, replacing it whole (never half-written)."""
    write_private(path, (token.strip() + "\n").encode("ascii"), replace=True)


# -- revocation -----------------------------------------------------------------------


def read_revocation_list(path: str | os.PathLike[str]) -> frozenset[str]:
    """The revoked ``jti``s in ``path`` (first word of each line; ``#`` comments);
    no file is nothing revoked."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return frozenset()
    return frozenset(line.split()[0] for line in text.splitlines()
                     if line.strip() and not line.lstrip().startswith("#"))


def add_revoked(path: str | os.PathLike[str], jtis: list[str], *, now: float) -> None:
    """Append ``jtis`` to the revocation list (one write, so concurrent appends
    do not interleave within a line)."""
    for jti in jtis:
        if not jti or any(c.isspace() for c in jti) or jti.startswith("#"):
            raise TokenError(f"{jti!r} is not a token id (jti)")
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    text = "".join(f"{jti}  # revoked {utc(now)}\n" for jti in jtis)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class Revocation:
    """``revoked(claims)`` for ``verify_token``: the expression, then the list."""

    def __init__(self, expr: str | None = None, list_file: str | None = None) -> None:
        self.expr_text = (expr or "").strip() or None
        self.list_file = list_file
        self._expr = None
        if self.expr_text:
            try:
                self._expr = classad.ExprTree(self.expr_text)
            except classad.ClassAdSyntaxError as e:
                first = str(e).splitlines()[0]
                raise TokenError(f"SEC_TOKEN_REVOCATION_EXPR = {self.expr_text} "
                                 f"is not a ClassAd expression: {first}") from None
        self._seen: tuple[int, int, int] | None = None
        self._jtis: frozenset[str] = frozenset()

    def _list(self) -> frozenset[str]:
        if not self.list_file:
            return frozenset()
        try:
            st = os.stat(self.list_file)
        except FileNotFoundError:
            self._seen, self._jtis = None, frozenset()
            return self._jtis
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if seen != self._seen:
            self._jtis = read_revocation_list(self.list_file)
            self._seen = seen
        return self._jtis

    def expr_revokes(self, claims: Claims) -> bool:
        """HTCondor's reading: the claims (scalars only) as a ClassAd; anything but
        a boolean-like true-or-false result counts as revoked."""
        if self._expr is None:
            return False
        ad = classad.ClassAd({k: v for k, v in claims.payload.items()
                              if isinstance(v, (bool, int, float, str))})
        value = self._expr.eval(ad)
        if isinstance(value, classad.Value):
            return True  # UNDEFINED or ERROR
        if isinstance(value, (bool, int, float)):
            return bool(value)
        return True

    def __call__(self, claims: Claims) -> bool:
        return self.expr_revokes(claims) or claims.jti in self._list()


# -- where things are ------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSettings:
    """The IDTOKENS knobs of one configuration, read once."""

    trust_domain: str
    token_dir: str
    system_token_dir: str
    password_dir: str
    pool_key_file: str
    revocation_expr: str | None
    revocation_file: str | None
    max_age: int | None

    @classmethod
    def from_config(cls, cfg: Config) -> TokenSettings:
        trust = (cfg.get("TRUST_DOMAIN") or "").strip()
        try:
            check_issuer(trust)
        except TokenError as e:
            where = cfg.source("TRUST_DOMAIN")
            at = f" (set at {where[0]}:{where[1]})" if where and where[1] else ""
            raise TokenError(f"TRUST_DOMAIN{at}: {e}") from None
        password_dir = cfg.get("SEC_PASSWORD_DIRECTORY") or ""
        token_dir = cfg.get("SEC_TOKEN_DIRECTORY") or ""
        return cls(
            trust_domain=trust,
            token_dir=token_dir,
            system_token_dir=cfg.get("SEC_TOKEN_SYSTEM_DIRECTORY") or token_dir,
            password_dir=password_dir,
            pool_key_file=cfg.get("SEC_TOKEN_POOL_SIGNING_KEY_FILE") or os.path.join(password_dir, "POOL"),
            revocation_expr=(cfg.get("SEC_TOKEN_REVOCATION_EXPR") or "").strip() or None,
            revocation_file=(cfg.get("SEC_TOKEN_REVOCATION_FILE") or "").strip() or None,
            max_age=cfg.get_int("SEC_TOKEN_MAX_AGE"),
        )

    def key_path(self, name: str) -> str:
        """Where key ``name`` lives: POOL at its own knob, the rest in the directory."""
        return self.pool_key_file if name == "POOL" else os.path.join(self.password_dir, name)

    def keys(self, warn: Callable[[str], None] = log.warning) -> dict[str, bytes]:
        return load_keys(self.password_dir, pool_key_file=self.pool_key_file, warn=warn)

    def revocation(self) -> Revocation:
        return Revocation(self.revocation_expr, self.revocation_file)
