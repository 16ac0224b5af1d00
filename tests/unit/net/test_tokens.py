"""IDTOKENS: tokens made and checked, signing key files, tokens.d and revocation."""

from __future__ import annotations

import base64
import json
import os
import threading
from pathlib import Path

import pytest

from roost.config import Config
from roost.net.signing_key import ensure_key, ensure_key_file, load_keys, read_key_file
from roost.net.token_store import (
    Revocation,
    TokenSettings,
    add_revoked,
    find_tokens,
    read_revocation_list,
    write_token_file,
)
from roost.net.tokens import (
    TokenError,
    create_token,
    decode_token,
    hkdf_sha256,
    normalize_authz,
    verify_token,
)

KEY = b"k" * 32
OTHER = b"o" * 32
NOW = 1_700_000_000
ISS = "cm.example.org"


def make(**kw: object) -> str:
    args: dict = {"key": KEY, "kid": "POOL", "issuer": ISS, "subject": "alice@example.org", "now": NOW}
    args.update(kw)
    return create_token(args.pop("key"), args.pop("kid"), args.pop("issuer"), args.pop("subject"), **args)


def verify(token: str, **kw: object):  # type: ignore[no-untyped-def]
    args: dict = {"keys": {"POOL": KEY}, "issuer": ISS, "now": NOW + 10}
    args.update(kw)
    return verify_token(token, args.pop("keys"), **args)


def b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


# -- the token itself -----------------------------------------------------------------


def test_round_trip_carries_identity_scopes_and_expiry() -> None:
    token = make(lifetime=600, scopes=["READ", "WRITE"], jti="abc123")
    c = verify(token)
    assert (c.subject, c.issuer, c.issued_at, c.expires_at, c.jti, c.key_id) == (
        "alice@example.org", ISS, NOW, NOW + 600, "abc123", "POOL")
    assert c.authz == ("READ", "WRITE")
    assert c.payload["scope"] == "condor:/READ condor:/WRITE"  # HTCondor's spelling


def test_shape_is_htcondors() -> None:
    header, claims = decode_token(make())
    assert header == {"alg": "HS256", "kid": "POOL"}
    assert set(claims.payload) == {"iat", "iss", "jti", "sub"}  # no exp, no scope unless asked
    assert len(claims.jti) == 32 and int(claims.jti, 16) >= 0  # 128 random bits, hex


def test_each_token_gets_its_own_id() -> None:
    assert decode_token(make())[1].jti != decode_token(make())[1].jti


def test_hkdf_matches_rfc_5869_test_case_1() -> None:
    okm = hkdf_sha256(b"\x0b" * 22, bytes(range(13)), bytes(range(0xF0, 0xFA)), 42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c"
                         "5db02d56ecc4c5bf34007208d5b887185865")


def test_expired_token_says_when() -> None:
    token = make(lifetime=60)
    assert verify(token, now=NOW + 60).subject  # valid up to and including exp
    with pytest.raises(TokenError, match=r"^token expired at 2023-11-14 22:14:20 UTC \(jti "):
        verify(token, now=NOW + 61)


def test_wrong_key_is_a_signature_mismatch() -> None:
    with pytest.raises(TokenError, match=r"^token signature does not match key 'POOL'$"):
        verify(make(key=OTHER))


def test_unknown_key() -> None:
    with pytest.raises(TokenError, match=r"^token signed with unknown key 'AP'$"):
        verify(make(kid="AP"))


def test_other_pools_issuer() -> None:
    with pytest.raises(TokenError, match=r"^token issuer 'evil.org' is not this pool's 'cm.example.org'$"):
        verify(make(issuer="evil.org"))


def test_changed_claims_break_the_signature() -> None:
    head, _, sig = make().split(".")
    forged = {"iat": NOW, "iss": ISS, "jti": "x", "sub": "root@example.org"}
    with pytest.raises(TokenError, match="signature does not match"):
        verify(f"{head}.{b64(forged)}.{sig}")


def test_unsigned_algorithm_is_refused() -> None:
    _, payload, _ = make().split(".")
    with pytest.raises(TokenError, match=r"^malformed token: algorithm 'none' is not HS256$"):
        verify(f"{b64({'alg': 'none', 'kid': 'POOL'})}.{payload}.x")


@pytest.mark.parametrize("token, why", [
    ("", "not three dot-separated"),
    ("abc.def", "not three dot-separated"),
    ("a.b.c", "not base64url JSON"),
    (f"{b64([1])}.{b64({})}.c", "not JSON objects"),
    (f"{b64({'alg': 'HS256'})}.{b64({'iss': ISS, 'sub': 'a@b', 'iat': 1, 'jti': 'j'})}.c", "names no key"),
    (f"{b64({'alg': 'HS256', 'kid': 'POOL'})}.{b64({'iss': ISS, 'iat': 1, 'jti': 'j'})}.c",
     "claim 'sub' is missing"),
    (f"{b64({'alg': 'HS256', 'kid': 'POOL'})}.{b64({'iss': ISS, 'sub': 'a@b', 'iat': 1, 'jti': ''})}.c",
     "claim 'jti' is missing or not a non-empty string"),
    (f"{b64({'alg': 'HS256', 'kid': 'POOL'})}.{b64({'iss': ISS, 'sub': 'a@b', 'iat': '1', 'jti': 'j'})}.c",
     "claim 'iat' is missing or not a number"),
    ("a." * 9000 + "b", "longer than 16384 bytes"),
    # not finite, or past 64 bits: Python's json reads NaN, Infinity and 1e400 (issue 12's
    # fuzzing: these were an OverflowError, answered INTERNAL to an unauthenticated AUTH)
    *((f"{b64({'alg': 'HS256', 'kid': 'POOL'})}."
       + base64.urlsafe_b64encode(f'{{"iss":"{ISS}","sub":"a@b","iat":1,"jti":"j","exp":{v}}}'.encode())
       .rstrip(b"=").decode() + ".c", "claim 'exp' is missing or not a number")
      for v in ("NaN", "Infinity", "-Infinity", "1e400", str(2**64))),
])
def test_malformed_tokens_say_why_in_one_line(token: str, why: str) -> None:
    with pytest.raises(TokenError, match=r"^malformed token: ") as e:
        verify(token)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_max_age() -> None:
    token = make()
    assert verify(token, now=NOW + 100, max_age=100)
    with pytest.raises(TokenError, match=r"older than SEC_TOKEN_MAX_AGE \(100 s\)"):
        verify(token, now=NOW + 101, max_age=100)


def test_revoked_callable_sees_verified_claims() -> None:
    token = make(jti="deadbeef")
    with pytest.raises(TokenError, match=r"^token revoked \(jti deadbeef\)$"):
        verify(token, revoked=lambda c: c.subject == "alice@example.org")
    assert verify(token, revoked=lambda c: False).jti == "deadbeef"


def test_authz_names_checked_and_upper_cased() -> None:
    assert normalize_authz(["read", "WRITE,advertise_startd", "READ"]) == ["READ", "WRITE", "ADVERTISE_STARTD"]
    with pytest.raises(TokenError, match="unknown authorization level 'REED'"):
        normalize_authz(["REED"])


def test_issuer_must_be_one_word() -> None:
    with pytest.raises(TokenError, match="must be one word"):
        make(issuer="cm1, cm2")


# -- signing keys ---------------------------------------------------------------------------


def test_key_made_owner_only_once(tmp_path: Path) -> None:
    d = tmp_path / "passwords.d"
    key = ensure_key(d, "POOL")
    path = d / "POOL"
    assert len(key) == 32 and path.read_bytes() == key
    assert path.stat().st_mode & 0o777 == 0o600 and d.stat().st_mode & 0o777 == 0o700
    assert ensure_key(d, "POOL") == key
    assert [p.name for p in d.iterdir()] == ["POOL"]  # no temporary file left behind


def test_processes_starting_together_agree_on_one_key(tmp_path: Path) -> None:
    got: list[bytes] = []
    threads = [threading.Thread(target=lambda: got.append(ensure_key_file(tmp_path / "POOL")))
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len(set(got)) == 1


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_key_open_to_others_is_refused_by_name(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "POOL"
    path.write_bytes(KEY)
    path.chmod(mode)
    with pytest.raises(TokenError, match=rf"^signing key file {path} is open to group or others "
                                         rf"\(mode 0{mode:o}\); refusing it"):
        ensure_key_file(path)  # refused, never silently replaced
    assert path.read_bytes() == KEY


def test_short_key_symlink_and_missing_key_are_refused(tmp_path: Path) -> None:
    short = tmp_path / "SHORT"
    short.write_bytes(b"password")
    short.chmod(0o600)
    with pytest.raises(TokenError, match="holds 8 bytes; a key needs at least 32"):
        read_key_file(short)
    link = tmp_path / "LINK"
    link.symlink_to(short)
    with pytest.raises(TokenError, match=f"signing key file {link} cannot be read"):
        read_key_file(link)
    with pytest.raises(TokenError, match="does not exist"):
        read_key_file(tmp_path / "NONE")


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_key_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "POOL"
    path.write_bytes(KEY)
    path.chmod(0o600)
    os.chown(path, 12345, 12345)
    with pytest.raises(TokenError, match="is owned by uid 12345, not by this user"):
        read_key_file(path)


def test_load_keys_skips_bad_files_and_says_which(tmp_path: Path) -> None:
    d = tmp_path / "passwords.d"
    ensure_key(d, "AP")
    (d / "LOOSE").write_bytes(KEY)
    (d / "LOOSE").chmod(0o644)
    pool = tmp_path / "pool_key"
    ensure_key_file(pool)
    warnings: list[str] = []
    keys = load_keys(d, pool_key_file=str(pool), warn=warnings.append)
    assert sorted(keys) == ["AP", "POOL"] and keys["POOL"] == pool.read_bytes()
    assert len(warnings) == 1 and str(d / "LOOSE") in warnings[0]
    assert load_keys(tmp_path / "none", pool_key_file=str(tmp_path / "none" / "POOL"),
                     warn=warnings.append) == {}
    assert len(warnings) == 1  # no key yet is not a fault


# -- tokens.d ---------------------------------------------------------------------------------


def test_find_tokens_in_name_order_skipping_what_cannot_be_used(tmp_path: Path) -> None:
    d = tmp_path / "tokens.d"
    write_token_file(d / "b", make(subject="bob@x"))
    write_token_file(d / "a", make(subject="ann@x"))
    (d / "c").write_text("# a comment\n\nnot-a-token\n" + make(subject="cat@x") + "\n")
    (d / "c").chmod(0o600)
    (d / "open").write_text(make(subject="eve@x"))
    (d / "open").chmod(0o644)
    (d / ".hidden").write_text(make(subject="tmp@x"))
    warnings: list[str] = []
    found = find_tokens(d, warn=warnings.append)
    assert [t.claims.subject for t in found] == ["ann@x", "bob@x", "cat@x"]
    assert found[0].file == str(d / "a")
    assert (d / "a").stat().st_mode & 0o777 == 0o600
    assert len(warnings) == 2
    assert warnings[0].startswith(f"token file {d / 'c'}, line 3: malformed token")
    assert warnings[1].startswith(f"token file {d / 'open'} is open to group or others")
    assert find_tokens(tmp_path / "missing") == []


# -- revocation -----------------------------------------------------------------------------


def claims_of(**kw: object):  # type: ignore[no-untyped-def]
    return decode_token(make(**kw))[1]


def test_revocation_expression_over_the_claims() -> None:
    r = Revocation('sub =?= "alice@example.org" && iat <= 1700000000')
    assert r(claims_of()) is True
    assert r(claims_of(subject="bob@example.org")) is False
    assert r(claims_of(now=NOW + 1)) is False


def test_revocation_expression_that_is_not_boolean_revokes() -> None:
    # HTCondor errs on the side of refusing: UNDEFINED, ERROR or a string revoke.
    assert Revocation("no_such_claim == 1")(claims_of()) is True
    assert Revocation('"yes"')(claims_of()) is True
    assert Revocation("exp =?= undefined && false")(claims_of()) is False


def test_revocation_expression_syntax_error_names_the_knob() -> None:
    with pytest.raises(TokenError, match=r"^SEC_TOKEN_REVOCATION_EXPR = sub == is not a ClassAd expression"):
        Revocation("sub ==")


def test_revocation_list_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "revoked_tokens"
    r = Revocation(list_file=str(path))
    c = claims_of(jti="j1")
    assert r(c) is False  # no file yet
    add_revoked(path, ["j0", "j1"], now=NOW)
    assert r(c) is True and read_revocation_list(path) == {"j0", "j1"}
    assert "# revoked 2023-11-14" in path.read_text()
    with pytest.raises(TokenError, match="is not a token id"):
        add_revoked(path, ["two words"], now=NOW)
    with pytest.raises(TokenError, match=r"^token revoked \(jti j1\)$"):
        verify(make(jti="j1"), revoked=r)


# -- the knobs -------------------------------------------------------------------------------


FACTS = {"ROOST_HOME": "/pool", "FULL_HOSTNAME": "cm.example.org"}


def test_settings_defaults_live_under_the_pool_home() -> None:
    s = TokenSettings.from_config(Config.from_text("", facts=FACTS))
    assert s.trust_domain == "cm.example.org"
    assert (s.token_dir, s.system_token_dir) == ("/pool/tokens.d", "/pool/tokens.d")
    assert (s.password_dir, s.pool_key_file) == ("/pool/passwords.d", "/pool/passwords.d/POOL")
    assert (s.revocation_file, s.revocation_expr, s.max_age) == ("/pool/revoked_tokens", None, None)
    assert s.key_path("AP") == "/pool/passwords.d/AP"


def test_settings_follow_condor_host_and_overrides() -> None:
    cfg = Config.from_text("CONDOR_HOST = central.lab\nSEC_TOKEN_MAX_AGE = 24*3600\n"
                           'SEC_TOKEN_REVOCATION_EXPR = jti =?= "x"\n', facts=FACTS)
    s = TokenSettings.from_config(cfg)
    assert (s.trust_domain, s.max_age, s.revocation_expr) == ("central.lab", 86400, 'jti =?= "x"')


def test_bad_trust_domain_names_where_it_was_set() -> None:
    cfg = Config.from_text("\nTRUST_DOMAIN = a b\n", "/etc/roost_config", facts=FACTS)
    with pytest.raises(TokenError, match=r"^TRUST_DOMAIN \(set at /etc/roost_config:2\): .*one word"):
        TokenSettings.from_config(cfg)
