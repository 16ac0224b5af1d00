"""``roost token``: make, list and revoke IDTOKENS (condor_token_create, condor_token_list).

``create`` signs with a key from ``SEC_PASSWORD_DIRECTORY`` on this host (the
central manager's, or a personal pool's under ``ROOST_HOME``): whoever can read
the key can mint any identity, which is why the key files are owner-only. The
POOL key is made if it is missing, as the central manager does at first start.
``list`` decodes the tokens in ``SEC_TOKEN_DIRECTORY`` without checking their
signatures (a submit host has no key to check them with) and never prints a
signature. ``revoke`` appends to ``SEC_TOKEN_REVOCATION_FILE`` on this host.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from roost.config import Config, ConfigError
from roost.net.signing_key import check_key_name, ensure_key_file, read_key_file
from roost.net.token_store import (
    FoundToken,
    TokenSettings,
    add_revoked,
    find_tokens,
    read_revocation_list,
    write_token_file,
)
from roost.net.tokens import DEFAULT_KEY, TokenError, create_token, normalize_authz, utc

USAGE = """usage: roost token create -identity USER@DOMAIN [-authz LEVEL ...] [-lifetime SECONDS]
                          [-key NAME] [-token NAME | -file PATH]
       roost token list [-dir DIR] [-long | -json]
       roost token revoke -jti ID [-jti ID ...]

create   sign a token for USER@DOMAIN with this host's key NAME (default POOL,
         made if missing) and print it, or write it owner-only to -token NAME
         (in SEC_TOKEN_DIRECTORY) or -file PATH. -authz limits the token to
         authorization levels (repeat it: -authz READ -authz WRITE); -lifetime
         makes it expire.
list     show the tokens in SEC_TOKEN_DIRECTORY (or -dir): identity, issuer,
         levels, expiry, id (jti) and file; -long prints HTCondor's
         Header/Payload/File lines. Signatures are neither checked nor shown.
revoke   add token ids to SEC_TOKEN_REVOCATION_FILE: this host's daemons refuse
         those tokens from the next connection on."""

#: option -> takes a value; a unique prefix is enough (-id, -life), as condor's tools allow
_OPTIONS = {
    "create": {"identity": True, "authz": True, "lifetime": True, "key": True,
               "token": True, "file": True},
    "list": {"dir": True, "long": False, "json": False},
    "revoke": {"jti": True},
}
_REPEATED = {"authz", "jti"}


class _Usage(Exception):
    pass


def parse(action: str, argv: list[str]) -> dict[str, object]:
    spec = _OPTIONS[action]
    opts: dict[str, object] = {name: ([] if name in _REPEATED else None) for name in spec}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        word = arg.lstrip("-").lower()
        if not arg.startswith("-") or not word:
            raise _Usage(f"unexpected argument {arg!r}")
        if word in ("h", "help"):
            raise _Usage("")
        hits = [n for n in spec if n == word] or [n for n in spec if n.startswith(word)]
        if len(hits) != 1:
            raise _Usage(f"unknown option {arg}" if not hits else
                         f"option {arg} is ambiguous ({', '.join('-' + h for h in hits)})")
        name = hits[0]
        if not spec[name]:
            opts[name] = True
            continue
        if i >= len(argv):
            raise _Usage(f"option -{name} needs a value")
        value = argv[i]
        i += 1
        if name in _REPEATED:
            opts[name].append(value)  # type: ignore[union-attr]
        else:
            opts[name] = value
    return opts


def _settings() -> TokenSettings:
    cfg = Config.load(env=os.environ, subsys="TOOL")
    for warning in cfg.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return TokenSettings.from_config(cfg)


def _warn(message: str) -> None:
    print(f"roost token: warning: {message}", file=sys.stderr)


def _create(opts: dict[str, object]) -> int:
    identity = opts["identity"]
    if not isinstance(identity, str):
        raise _Usage("create needs -identity USER@DOMAIN")
    user, at, domain = identity.partition("@")
    if not (user and at and domain) or any(c.isspace() for c in identity):
        raise _Usage(f"-identity {identity!r} is not USER@DOMAIN")
    lifetime = None
    if opts["lifetime"] is not None:
        try:
            lifetime = int(str(opts["lifetime"]))
        except ValueError:
            raise _Usage(f"-lifetime {opts['lifetime']!r} is not a number of seconds") from None
        if lifetime <= 0:
            raise _Usage("-lifetime must be a positive number of seconds")
    if opts["token"] is not None and opts["file"] is not None:
        raise _Usage("give -token NAME or -file PATH, not both")
    levels = normalize_authz(opts["authz"])  # type: ignore[arg-type]
    settings = _settings()
    key_name = check_key_name(str(opts["key"] or DEFAULT_KEY))
    path = settings.key_path(key_name)
    key = ensure_key_file(path) if key_name == DEFAULT_KEY else read_key_file(path)
    token = create_token(key, key_name, settings.trust_domain, identity, now=time.time(),
                         lifetime=lifetime, scopes=levels)
    if opts["token"] is not None:
        name = str(opts["token"])
        if not name or "/" in name or name.startswith("."):
            raise _Usage(f"-token {name!r} must be a plain file name (it goes in "
                         f"{settings.token_dir}); use -file PATH for a path")
        write_token_file(os.path.join(settings.token_dir, name), token)
    elif opts["file"] is not None:
        write_token_file(str(opts["file"]), token)
    else:
        print(token)
    return 0


def _list(opts: dict[str, object]) -> int:
    if opts["long"] and opts["json"]:
        raise _Usage("give -long or -json, not both")
    settings = _settings()
    directory = str(opts["dir"] or settings.token_dir)
    found = find_tokens(directory, warn=_warn)
    if opts["json"]:
        print(json.dumps([{"header": t.header, "payload": dict(t.claims.payload), "file": t.file}
                          for t in found], indent=2))
        return 0
    if opts["long"]:
        for t in found:
            print(f"Header: {json.dumps(t.header, separators=(',', ':'))} "
                  f"Payload: {json.dumps(dict(t.claims.payload), separators=(',', ':'))} File: {t.file}")
        return 0
    if not found:
        print(f"no tokens in {directory}", file=sys.stderr)
        return 0
    revoked = _revocation_note(settings)
    now = time.time()
    rows = [("IDENTITY", "ISSUER", "AUTHZ", "EXPIRES", "JTI", "FILE", "NOTE")]
    for t in found:
        c = t.claims
        expires = "never" if c.expires_at is None else utc(c.expires_at)
        note = "expired" if c.expires_at is not None and now > c.expires_at else ""
        note = revoked(t) or note
        rows.append((c.subject, c.issuer, ",".join(c.authz) or "-", expires, c.jti, t.file, note))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)) + ("  " + r[-1] if r[-1] else ""))
    return 0


def _revocation_note(settings: TokenSettings) -> Callable[[FoundToken], str]:
    """A function saying "revoked" for a token this host's daemons would refuse."""
    try:
        revocation = settings.revocation()
    except TokenError as e:
        _warn(str(e))
        return lambda t: ""

    def note(t: FoundToken) -> str:
        return "revoked" if revocation(t.claims) else ""

    return note


def _revoke(opts: dict[str, object]) -> int:
    jtis: list[str] = opts["jti"]  # type: ignore[assignment]
    if not jtis:
        raise _Usage("revoke needs -jti ID (`roost token list` shows each token's JTI)")
    settings = _settings()
    if not settings.revocation_file:
        print("roost token: SEC_TOKEN_REVOCATION_FILE is not set; set it, or revoke with "
              f'SEC_TOKEN_REVOCATION_EXPR = jti =?= "{jtis[0]}"', file=sys.stderr)
        return 1
    already = read_revocation_list(settings.revocation_file)
    new = [j for j in dict.fromkeys(jtis) if j not in already]
    if new:
        add_revoked(settings.revocation_file, new, now=time.time())
    for jti in dict.fromkeys(jtis):
        state = "revoked" if jti in new else "already revoked"
        print(f"{state}: {jti} (in {settings.revocation_file})")
    return 0


_ACTIONS = {"create": _create, "list": _list, "revoke": _revoke}


def main(argv: list[str]) -> int:
    """Entry point: ``argv`` excludes the program and subcommand names."""
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    if argv[0].lstrip("-") in ("h", "help"):
        print(USAGE)
        return 0
    action = argv[0]
    if action not in _ACTIONS:
        print(f"roost token: unknown action {action!r}\n{USAGE}", file=sys.stderr)
        return 2
    try:
        return _ACTIONS[action](parse(action, argv[1:]))
    except _Usage as e:
        if str(e):
            print(f"roost token {action}: {e}\n{USAGE}", file=sys.stderr)
            return 2
        print(USAGE)
        return 0
    except (TokenError, ConfigError) as e:
        print(f"roost token {action}: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        raise  # roost's main treats a closed pipe as a normal end
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"roost token {action}: {where}{e.strerror or e}", file=sys.stderr)
        return 1
