"""``roost token``: create, list and revoke against a temporary ROOST_HOME, through
the ``roost`` command's own dispatch table."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from roost.cli.main import main as roost
from roost.config import Config
from roost.net.token_store import TokenSettings
from roost.net.tokens import TokenError, verify_token


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "roost_config").write_text("CONDOR_HOST = cm.example.org\n")
    monkeypatch.setenv("ROOST_HOME", str(tmp_path))
    monkeypatch.delenv("ROOST_CONFIG", raising=False)
    for k in [k for k in os.environ if k.upper().startswith("_ROOST_")]:
        monkeypatch.delenv(k)
    return tmp_path


def settings() -> TokenSettings:
    return TokenSettings.from_config(Config.load(env=os.environ))


def check(token: str, *, now: float | None = None):  # type: ignore[no-untyped-def]
    s = settings()
    return verify_token(token, s.keys(), issuer=s.trust_domain,
                        now=time.time() if now is None else now,
                        revoked=s.revocation())


def test_create_prints_a_token_the_pool_accepts(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert roost(["token", "create", "-identity", "alice@example.org", "-authz", "read",
                  "-authz", "WRITE", "-lifetime", "600"]) == 0
    token = capsys.readouterr().out.strip()
    claims = check(token)
    assert (claims.subject, claims.issuer, claims.authz) == ("alice@example.org", "cm.example.org",
                                                             ("READ", "WRITE"))
    assert claims.expires_at == claims.issued_at + 600
    key = home / "passwords.d" / "POOL"  # made at first use, owner-only
    assert key.stat().st_mode & 0o777 == 0o600
    with pytest.raises(TokenError, match="expired"):
        check(token, now=claims.expires_at + 1)


def test_create_into_token_dir_then_list(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert roost(["token", "create", "-id", "bob@example.org", "-token", "bob"]) == 0
    assert capsys.readouterr().out == ""
    path = home / "tokens.d" / "bob"
    assert path.stat().st_mode & 0o777 == 0o600
    token = path.read_text().strip()
    jti = check(token).jti
    assert roost(["token", "list"]) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()
    assert header.split() == ["IDENTITY", "ISSUER", "AUTHZ", "EXPIRES", "JTI", "FILE", "NOTE"]
    assert row.split() == ["bob@example.org", "cm.example.org", "-", "never", jti, str(path)]
    assert token.split(".")[2] not in out  # never the signature
    assert roost(["token", "list", "-long"]) == 0
    long = capsys.readouterr().out
    assert long.startswith('Header: {"alg":"HS256","kid":"POOL"} Payload: {"iat":')
    assert long.rstrip().endswith(f"File: {path}") and token.split(".")[2] not in long
    assert roost(["token", "list", "-json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["payload"]["sub"] == "bob@example.org"


def test_create_to_file(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "elsewhere" / "t"
    assert roost(["token", "create", "-identity", "c@d", "-file", str(target)]) == 0
    assert check(target.read_text()).subject == "c@d" and target.stat().st_mode & 0o777 == 0o600


def test_revoke_then_the_pool_refuses_it(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert roost(["token", "create", "-identity", "eve@example.org", "-token", "eve"]) == 0
    token = (home / "tokens.d" / "eve").read_text().strip()
    jti = check(token).jti
    assert roost(["token", "revoke", "-jti", jti]) == 0
    assert capsys.readouterr().out == f"revoked: {jti} (in {home / 'revoked_tokens'})\n"
    with pytest.raises(TokenError, match=rf"^token revoked \(jti {jti}\)$"):
        check(token)
    assert roost(["token", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[1].endswith("revoked")
    assert roost(["token", "revoke", "-jti", jti]) == 0
    assert capsys.readouterr().out.startswith("already revoked")


def test_list_warns_about_unusable_files_by_name(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = home / "tokens.d"
    d.mkdir()
    (d / "junk").write_text("not a token\n")
    (d / "junk").chmod(0o600)
    assert roost(["token", "list"]) == 0
    err = capsys.readouterr().err
    assert f"token file {d / 'junk'}, line 1: malformed token" in err
    assert f"no tokens in {d}" in err


@pytest.mark.parametrize("argv, rc, message", [
    (["create"], 2, "create needs -identity USER@DOMAIN"),
    (["create", "-identity", "alice"], 2, "-identity 'alice' is not USER@DOMAIN"),
    (["create", "-identity", "a@b", "-lifetime", "soon"], 2, "is not a number of seconds"),
    (["create", "-identity", "a@b", "-authz", "SUPERUSER"], 1, "unknown authorization level 'SUPERUSER'"),
    (["create", "-identity", "a@b", "-token", "../x"], 2, "must be a plain file name"),
    (["create", "-identity", "a@b", "-key", "NOPE"], 1, "passwords.d/NOPE does not exist"),
    (["create", "-identity", "a@b", "-bogus"], 2, "unknown option -bogus"),
    (["revoke"], 2, "revoke needs -jti ID"),
    (["frobnicate"], 2, "unknown action 'frobnicate'"),
])
def test_mistakes_say_what_is_wrong(home: Path, capsys: pytest.CaptureFixture[str],
                                    argv: list[str], rc: int, message: str) -> None:
    assert roost(["token", *argv]) == rc
    assert message in capsys.readouterr().err


def test_key_open_to_others_is_refused(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert roost(["token", "create", "-identity", "a@b"]) == 0
    key = home / "passwords.d" / "POOL"
    key.chmod(0o644)
    capsys.readouterr()
    assert roost(["token", "create", "-identity", "a@b"]) == 1
    assert capsys.readouterr().err.startswith(f"roost token create: signing key file {key} is open "
                                              "to group or others (mode 0644); refusing it")
