"""Authorization (roost.core.authz): HTCondor's levels, ALLOW/DENY lists and patterns.

Most policies here are plain dicts, so that roost's own defaults do not take part;
one test reads a real roost configuration. Expected behaviour is HTCondor's
(condor_perms.cpp's hierarchy, condor_ipverify.cpp's matching, the manual's
*Authorization* section).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from roost.config import Config
from roost.core import authz
from roost.core.authz import (
    COMMAND_LEVELS,
    AuthzConfigError,
    Level,
    Policy,
    bounding_set,
    granted_by,
    markdown_table,
)
from roost.core.authz_patterns import split_entry, wildcard_matcher
from roost.net.protocol import SCHEMAS

ROOT = Path(__file__).resolve().parents[3]
L = Level
BOB = "bob@example.org"
ALICE = "alice@example.org"


def policy(**knobs: str) -> Policy:
    return Policy.from_config(knobs.get, local_ips=["192.168.1.5", "127.0.0.1"])


def ok(p: Policy, level: Level, identity: str | None = BOB, host: str = "10.0.0.3",
       daemon: str = "SCHEDD", **kw) -> bool:
    return p.verify(identity, host, level, daemon, **kw).allowed


# -- the hierarchy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "level, grants",
    [
        (L.READ, {L.READ}),
        (L.WRITE, {L.WRITE, L.READ}),
        (L.ADMINISTRATOR, {L.ADMINISTRATOR, L.WRITE, L.READ}),
        (L.DAEMON, {L.DAEMON, L.WRITE, L.READ}),
        (L.NEGOTIATOR, {L.NEGOTIATOR, L.READ}),
        (L.CONFIG, {L.CONFIG, L.READ}),
        (L.ADVERTISE_STARTD, {L.ADVERTISE_STARTD, L.READ}),
        (L.ADVERTISE_SCHEDD, {L.ADVERTISE_SCHEDD, L.READ}),
        (L.ADVERTISE_MASTER, {L.ADVERTISE_MASTER, L.READ}),
    ],
)
def test_a_grant_implies_htcondors_levels_and_no_others(level: Level, grants: set[Level]) -> None:
    assert granted_by(level) == grants
    p = policy(**{f"ALLOW_{level}": BOB})
    if level is L.DAEMON:  # not implied, but their lists fall back to ALLOW_DAEMON
        grants = grants | {L.ADVERTISE_STARTD, L.ADVERTISE_SCHEDD, L.ADVERTISE_MASTER}
    for other in Level:
        if other is not L.ALLOW:
            assert ok(p, other) is (other in grants), other


def test_deny_of_an_implying_level_does_not_block_another_path() -> None:
    p = policy(ALLOW_WRITE=BOB, DENY_WRITE=BOB, ALLOW_NEGOTIATOR=BOB)
    assert not ok(p, L.WRITE)
    assert ok(p, L.READ)  # through NEGOTIATOR
    assert p.verify(BOB, "10.0.0.3", L.READ, "SCHEDD").reason.startswith("READ is implied by NEGOTIATOR; ")


def test_deny_at_a_level_wins_over_a_grant_that_implies_it() -> None:
    p = policy(ALLOW_ADMINISTRATOR=BOB, DENY_READ=BOB)
    assert ok(p, L.WRITE)
    assert not ok(p, L.READ)


def test_no_list_at_all_allows_nobody() -> None:
    p = policy()
    for level in Level:
        assert ok(p, level) is (level is L.ALLOW)


# -- which knobs -------------------------------------------------------------------------


def test_advertise_levels_fall_back_to_daemon_lists() -> None:
    p = policy(ALLOW_DAEMON="condor@example.org", DENY_DAEMON="condor@example.org/10.9.9.9")
    assert ok(p, L.ADVERTISE_STARTD, "condor@example.org", daemon="COLLECTOR")
    assert not ok(p, L.ADVERTISE_STARTD, "condor@example.org", "10.9.9.9", daemon="COLLECTOR")
    own = policy(ALLOW_DAEMON="condor@example.org", ALLOW_ADVERTISE_STARTD="startd@example.org")
    assert ok(own, L.ADVERTISE_STARTD, "startd@example.org", daemon="COLLECTOR")
    assert not ok(own, L.ADVERTISE_STARTD, "condor@example.org", daemon="COLLECTOR")
    assert ok(own, L.ADVERTISE_SCHEDD, "condor@example.org", daemon="COLLECTOR")


def test_default_lists_and_empty_values() -> None:
    p = policy(ALLOW_DEFAULT=BOB, ALLOW_WRITE="", DENY_DEFAULT="*/10.6.6.6")
    assert ok(p, L.WRITE) and ok(p, L.ADMINISTRATOR)
    assert not ok(p, L.WRITE, host="10.6.6.6")
    # a list that is set but holds no entry is not unset: no fallback to DEFAULT
    assert not ok(policy(ALLOW_DEFAULT=BOB, ALLOW_DAEMON=" , "), L.DAEMON)
    assert ok(policy(ALLOW_DEFAULT=BOB, ALLOW_DAEMON=""), L.DAEMON)


def test_per_daemon_lists_come_first() -> None:
    p = policy(ALLOW_READ="*", ALLOW_WRITE=ALICE, ALLOW_WRITE_SCHEDD=BOB, DENY_READ_COLLECTOR=BOB)
    assert ok(p, L.WRITE, BOB, daemon="SCHEDD") and not ok(p, L.WRITE, ALICE, daemon="schedd")
    assert ok(p, L.WRITE, ALICE, daemon="STARTD") and not ok(p, L.WRITE, BOB, daemon="STARTD")
    assert ok(p, L.READ, BOB, daemon="STARTD") and not ok(p, L.READ, BOB, daemon="COLLECTOR")
    assert "ALLOW_WRITE_SCHEDD entry" in p.verify(BOB, "10.0.0.3", L.WRITE, "SCHEDD").reason


def test_legacy_allow_semantics_lets_daemon_read_the_write_list() -> None:
    assert not ok(policy(ALLOW_WRITE=BOB), L.DAEMON)
    legacy = policy(ALLOW_WRITE=BOB, LEGACY_ALLOW_SEMANTICS="True")
    assert ok(legacy, L.DAEMON) and ok(legacy, L.ADVERTISE_STARTD)


def test_a_real_roost_configuration_with_macros() -> None:
    cfg = Config.from_text(
        "CONDOR_HOST = cm.example.org\n"
        "UID_DOMAIN = example.org\n"
        "ALLOW_ADMINISTRATOR = admin@$(UID_DOMAIN)/$(CONDOR_HOST)\n"
    )
    p = Policy.from_config(cfg.get)
    assert p.decide("admin@example.org", "10.0.0.1", "DRAIN", "STARTD", hostnames=["cm.example.org"]).allowed
    assert not p.decide("admin@example.org", "10.0.0.2", "DRAIN", "STARTD", hostnames=["ws.example.org"]).allowed


# -- entries -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry, split",
    [
        ("bob@example.org/10.0.0.3", ("bob@example.org", "10.0.0.3")),
        ("bob@example.org", ("bob@example.org", "*")),
        ("node1.example.org", ("*", "node1.example.org")),
        ("*", ("*", "*")),
        ("*/*", ("*", "*")),
        ("10.0.0.0/8", ("*", "10.0.0.0/8")),
        ("*/10.0.0.0/8", ("*", "10.0.0.0/8")),
        ("bob@x/10.0.0.0/255.0.0.0", ("bob@x", "10.0.0.0/255.0.0.0")),
        ("bob/node1", ("bob", "node1")),
    ],
)
def test_entries_split_as_htcondor_splits_them(entry: str, split: tuple[str, str]) -> None:
    assert split_entry(entry) == split


@pytest.mark.parametrize(
    "pattern, yes, no",
    [
        ("*", ["", "anything"], []),
        ("bob@example.org", ["bob@example.org", "BOB@Example.ORG"], ["bob@example.org.evil", "xbob@example.org"]),
        ("*@example.org", ["bob@example.org", "@example.org"], ["bob@example.org.evil", "bob@other.org"]),
        ("bob@*", ["bob@x", "bob@"], ["rob@x"]),
        ("condor@*.example.org", ["condor@cm.example.org"], ["condor@example.org", "condor@cm.example.com"]),
        ("*example*", ["bob@example.org", "example"], ["bob@exmple.org"]),
        ("a*b*", ["ab", "axxbyy"], ["a", "xab"]),
    ],
)
def test_wildcards_match_like_htcondors(pattern: str, yes: list[str], no: list[str]) -> None:
    match = wildcard_matcher(pattern)
    assert all(match(s) for s in yes)
    assert not any(match(s) for s in no)


@pytest.mark.parametrize(
    "entry, identity, host, names, expected",
    [
        ("bob@example.org/10.0.0.3", BOB, "10.0.0.3", (), True),
        ("bob@example.org/10.0.0.3", BOB, "10.0.0.4", (), False),
        ("bob@example.org/10.0.0.3", ALICE, "10.0.0.3", (), False),
        ("bob@example.org", BOB, "203.0.113.9", (), True),
        ("10.0.0.3", ALICE, "10.0.0.3", (), True),
        ("10.0.0.3", None, "10.0.0.3", (), True),
        ("*", None, "203.0.113.9", (), True),
        ("*/*", ALICE, "2001:db8::1", (), True),
        ("*@example.org/*", BOB, "10.0.0.3", (), True),
        ("*@example.org/*", None, "10.0.0.3", (), False),
        ("unauthenticated@unmapped", None, "10.0.0.3", (), True),
        ("unauthenticated@unmapped", BOB, "10.0.0.3", (), False),
        ("*/10.0.*", BOB, "10.0.200.1", (), True),
        ("*/10.0.*", BOB, "10.1.0.1", (), False),
        ("10.0.", BOB, "10.0.7.7", (), True),
        ("10.*", BOB, "10.200.0.1", (), True),
        ("10.0.0.0/8", BOB, "10.99.0.1", (), True),
        ("10.0.0.0/8", BOB, "11.0.0.1", (), False),
        ("bob@example.org/192.168.0.0/255.255.0.0", BOB, "192.168.7.1", (), True),
        ("bob@example.org/192.168.0.0/255.255.0.0", BOB, "192.169.0.1", (), False),
        ("10.0.0.3", BOB, "::ffff:10.0.0.3", (), True),
        ("2001:db8::1", BOB, "2001:db8::1", (), True),
        ("2001:db8:*", BOB, "2001:db8:5::9", (), True),
        ("2001:db8:*", BOB, "2001:db9::1", (), False),
        ("*/2001:db8::/32", BOB, "2001:db8:ffff::1", (), True),
        ("10.0.0.0/8", BOB, "2001:db8::1", (), False),
        ("*.example.org", BOB, "10.0.0.3", ("node1.example.org",), True),
        ("*.example.org", BOB, "10.0.0.3", ("node1.example.com",), False),
        ("bob@example.org/NODE1.example.org", BOB, "10.0.0.3", ("node1.Example.org",), True),
        ("node1.example.org", BOB, "10.0.0.3", (), False),
        ("*.example.org", BOB, "node2.example.org", (), True),
        ("{:local_ips:}", BOB, "192.168.1.5", (), True),
        ("{:local_ips:}", BOB, "192.168.1.6", (), False),
    ],
)
def test_entry_forms(entry: str, identity: str | None, host: str, names: tuple[str, ...], expected: bool) -> None:
    p = policy(ALLOW_READ=entry)
    assert ok(p, L.READ, identity, host, hostnames=names) is expected


def test_host_names_in_lists_match_the_addresses_a_resolver_gives() -> None:
    table = {"node1.example.org": ["10.0.0.7", "2001:db8::7"]}
    p = Policy.from_config({"ALLOW_READ": "node1.example.org"}.get, resolve=lambda h: table.get(h, []))
    assert ok(p, L.READ, BOB, "10.0.0.7") and ok(p, L.READ, BOB, "2001:db8::7")
    assert not ok(p, L.READ, BOB, "10.0.0.8")


def test_several_entries_commas_or_blanks() -> None:
    p = policy(ALLOW_WRITE=f"{ALICE}, {BOB}/10.0.0.3  carol@example.org")
    assert ok(p, L.WRITE, ALICE) and ok(p, L.WRITE, BOB) and ok(p, L.WRITE, "carol@example.org")
    assert not ok(p, L.WRITE, BOB, "10.0.0.4")


@pytest.mark.parametrize(
    "value, problem",
    [
        ("+admins", "netgroups"),
        ("bob@example.org/", "empty"),
        ("bob@example.org/10.0.0.0/33", "not a network"),
        ("bob@example.org/10.0.0.0/255.0.255.0", "not a network"),
    ],
)
def test_entries_roost_cannot_read_are_errors_naming_the_knob(value: str, problem: str) -> None:
    with pytest.raises(AuthzConfigError, match=problem) as info:
        Policy.from_config({"DENY_WRITE": value}.get)
    assert info.value.knob == "DENY_WRITE" and info.value.entry == value


# -- deny, unauthenticated, scopes, reasons -----------------------------------------------


def test_deny_beats_allow_with_the_entry_in_the_reason() -> None:
    p = policy(ALLOW_WRITE="*", DENY_WRITE="bob@*")
    d = p.decide(BOB, "10.0.0.3", "ACT", "SCHEDD")
    assert not d.allowed and d.level == "WRITE"
    assert d.reason == "WRITE denied to bob@example.org/10.0.0.3 by DENY_WRITE entry bob@*"
    assert p.decide(ALICE, "10.0.0.3", "ACT", "SCHEDD").allowed


def test_deny_everyone() -> None:
    p = policy(ALLOW_READ="*", DENY_READ="*")
    assert not ok(p, L.READ) and not ok(p, L.READ, None)


def test_no_matching_allow_entry_reason() -> None:
    p = policy(ALLOW_WRITE=ALICE)
    d = p.decide(BOB, "10.0.0.3", "SUBMIT", "SCHEDD")
    assert d.reason == (
        "WRITE authorization policy contains no matching ALLOW entry for bob@example.org/10.0.0.3"
    )
    d = policy().decide(BOB, "10.0.0.3", "DRAIN", "STARTD")
    assert d.reason.endswith("(no ALLOW_ADMINISTRATOR or ALLOW_DEFAULT is set)")


def test_allow_and_implied_reasons() -> None:
    p = policy(ALLOW_ADMINISTRATOR="bob@*/10.0.0.0/8")
    d = p.decide(BOB, "10.0.0.3", "QUERY_JOBS", "SCHEDD")
    assert d.allowed and d.level == "READ"
    assert d.reason == (
        "READ is implied by WRITE; WRITE is implied by ADMINISTRATOR; ADMINISTRATOR "
        "authorization policy allows bob@example.org/10.0.0.3 (ALLOW_ADMINISTRATOR entry bob@*/10.0.0.0/8)"
    )


def test_an_unauthenticated_peer_reads_but_does_nothing_else_by_default() -> None:
    p = policy(ALLOW_READ="*", ALLOW_WRITE="*", ALLOW_DAEMON="*", ALLOW_ADMINISTRATOR="*")
    assert p.decide(None, "10.0.0.3", "QUERY", "COLLECTOR", {"type": "Machine"}).allowed
    for cmd in ("REQUEST_CLAIM", "ACTIVATE_CLAIM", "DRAIN", "SET_FACTOR", "SHUTDOWN"):
        d = p.decide(None, "10.0.0.3", cmd, "STARTD")
        assert not d.allowed, cmd
        assert "did not authenticate" in d.reason and "unauthenticated@unmapped/10.0.0.3" in d.reason
    assert p.decide(BOB, "10.0.0.3", "REQUEST_CLAIM", "STARTD").allowed


def test_sec_authentication_settings_decide_who_must_authenticate() -> None:
    p = policy(ALLOW_WRITE="*", ALLOW_READ="*", SEC_DEFAULT_AUTHENTICATION="OPTIONAL",
               SEC_READ_AUTHENTICATION="REQUIRED")
    assert p.decide(None, "10.0.0.3", "RESCHEDULE", "NEGOTIATOR").allowed is False  # no DAEMON list
    assert ok(p, L.WRITE, None)
    d = p.verify(None, "10.0.0.3", L.READ, "SCHEDD")
    assert not d.allowed and "SEC_READ_AUTHENTICATION = REQUIRED" in d.reason


def test_unmapped_identities_never_manage_jobs() -> None:
    p = policy(ALLOW_WRITE="*", SEC_DEFAULT_AUTHENTICATION="OPTIONAL")
    for identity in (None, "bob@unmapped", "x@UNMAPPED"):
        for cmd in ("NEW_CLUSTER", "SUBMIT", "SUBMIT_TEXT", "ACT"):
            d = p.decide(identity, "127.0.0.1", cmd, "SCHEDD")
            assert not d.allowed and "unmapped" in d.reason
    assert p.decide(None, "127.0.0.1", "QUERY_JOBS", "SCHEDD").allowed  # WRITE implies READ
    assert p.decide(BOB, "127.0.0.1", "SUBMIT", "SCHEDD").allowed


def test_token_scopes_bound_the_levels() -> None:
    p = policy(ALLOW_WRITE="*", ALLOW_ADMINISTRATOR=BOB)
    assert p.decide(BOB, "10.0.0.3", "SUBMIT", "SCHEDD", scopes=["condor:/READ"]).allowed is False
    assert p.decide(BOB, "10.0.0.3", "QUERY_JOBS", "SCHEDD", scopes=["condor:/READ"]).allowed
    assert p.decide(BOB, "10.0.0.3", "SUBMIT", "SCHEDD", scopes=["ADMINISTRATOR"]).allowed
    d = p.decide(BOB, "10.0.0.3", "DRAIN", "STARTD", scopes=["WRITE"])
    assert not d.allowed and d.reason == (
        "ADMINISTRATOR is outside what bob@example.org/10.0.0.3's token allows (READ, WRITE)"
    )
    assert p.decide(BOB, "10.0.0.3", "AUTH", "STARTD", scopes=["READ"]).allowed
    assert bounding_set([]) is None and bounding_set(["condor:/other"]) == frozenset()


# -- commands ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ad_type, level",
    [
        ("Machine", "ADVERTISE_STARTD"),
        ("machine", "ADVERTISE_STARTD"),
        ("Scheduler", "ADVERTISE_SCHEDD"),
        ("Submitter", "ADVERTISE_SCHEDD"),
        ("Master", "ADVERTISE_MASTER"),
        ("Negotiator", "NEGOTIATOR"),
        ("Collector", "DAEMON"),
        ("SomethingNew", "DAEMON"),
        (None, "DAEMON"),
    ],
)
def test_ad_commands_need_the_level_of_their_ad_type(ad_type: str | None, level: str) -> None:
    for cmd in ("UPDATE_AD", "INVALIDATE_AD"):
        assert COMMAND_LEVELS[cmd].levels({"type": ad_type}) == (Level(level),)


def test_a_fake_startd_cannot_advertise() -> None:
    p = policy(ALLOW_ADVERTISE_STARTD="condor@example.org/10.0.0.*", ALLOW_WRITE="*")
    assert p.decide("condor@example.org", "10.0.0.8", "UPDATE_AD", "COLLECTOR", {"type": "Machine"}).allowed
    assert not p.decide(BOB, "10.0.0.8", "UPDATE_AD", "COLLECTOR", {"type": "Machine"}).allowed
    assert not p.decide(BOB, "10.0.0.8", "INVALIDATE_AD", "COLLECTOR", {"type": "Machine"}).allowed
    assert not p.decide("condor@example.org", "10.0.0.8", "UPDATE_AD", "COLLECTOR", {"type": "Scheduler"}).allowed


def test_private_attributes_need_negotiator_or_administrator() -> None:
    p = policy(ALLOW_READ="*", ALLOW_NEGOTIATOR="negotiator@example.org", ALLOW_ADMINISTRATOR=ALICE)
    args = {"type": "Machine", "private": True}
    assert p.decide(BOB, "10.0.0.3", "QUERY", "COLLECTOR", {"type": "Machine", "private": False}).allowed
    d = p.decide(BOB, "10.0.0.3", "QUERY", "COLLECTOR", args)
    assert not d.allowed and d.level == "NEGOTIATOR"
    assert "NEGOTIATOR authorization" in d.reason and "; ADMINISTRATOR authorization" in d.reason
    assert p.decide("negotiator@example.org", "10.0.0.3", "QUERY", "COLLECTOR", args).level == "NEGOTIATOR"
    assert p.decide(ALICE, "10.0.0.3", "QUERY", "COLLECTOR", args).level == "ADMINISTRATOR"


def test_unknown_commands_are_refused() -> None:
    d = policy(ALLOW_READ="*", ALLOW_WRITE="*").decide(BOB, "10.0.0.3", "NO_SUCH", "SCHEDD")
    assert not d.allowed and "no authorization level" in d.reason


def test_answers_are_cached_but_the_cache_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(authz, "_CACHE_LIMIT", 16)
    p = policy(ALLOW_READ="10.0.0.0/8")
    first = p.decide(BOB, "10.0.0.3", "QUERY_JOBS", "SCHEDD")
    assert p.decide(BOB, "10.0.0.3", "QUERY_JOBS", "SCHEDD") == first
    for i in range(100):
        assert p.decide(BOB, f"10.0.1.{i}", "QUERY_JOBS", "SCHEDD").allowed
    assert len(p._cache) <= 16


# -- the table covers every command, and the docs show it ---------------------------------

COMMAND = re.compile(r"[A-Z][A-Z0-9_]+")


@functools.cache
def _handler_tables() -> dict[str, set[str]]:
    """Commands every daemon serves, read from the source: dict literals whose keys are
    all command-like string constants and whose values are all bound methods (how
    each daemon writes its ``handlers``), ``handlers["X"] = ...`` assignments, and
    commands the server itself answers (``cmd == "X"`` in roost/net/server.py)."""
    found: dict[str, set[str]] = {}
    src = ROOT / "src" / "roost"
    for path in sorted((src / "daemons").rglob("*.py")) + [src / "net" / "server.py"]:
        name = str(path.relative_to(src))
        for node in ast.walk(ast.parse(path.read_text())):
            keys: list[str] = []
            if isinstance(node, ast.Dict):
                pairs = [(k, v) for k, v in zip(node.keys, node.values) if k is not None]
                if pairs and all(
                    isinstance(k, ast.Constant) and isinstance(k.value, str) and COMMAND.fullmatch(k.value)
                    and isinstance(v, ast.Attribute)
                    for k, v in pairs
                ):
                    keys = [k.value for k, _ in pairs]  # type: ignore[union-attr]
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                            and isinstance(target.slice.value, str) and "handler" in ast.unparse(target.value)):
                        keys.append(target.slice.value)
            elif isinstance(node, ast.Compare) and ast.unparse(node.left) == "cmd":
                keys = [c.value for c in node.comparators
                        if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            if keys:
                found.setdefault(name, set()).update(keys)
    return found


def test_every_command_of_every_daemon_has_a_level() -> None:
    tables = _handler_tables()
    for daemon in ("master.py", "collector.py", "negotiator.py", "negotiator_priorities.py",
                   "schedd/daemon.py", "startd/daemon.py"):
        assert tables.get(f"daemons/{daemon}"), f"no handler table found in {daemon}: fix the scan"
    served = set().union(*tables.values()) | set(SCHEMAS)
    missing = sorted(served - set(COMMAND_LEVELS))
    assert not missing, f"commands with no authorization level (add them to COMMAND_LEVELS): {missing}"


def test_every_table_entry_is_a_real_command() -> None:
    planned = {"RECONFIG"}  # issue 12's remote administration; drop once a daemon serves it
    served = set().union(*_handler_tables().values()) | set(SCHEMAS) | planned
    assert set(COMMAND_LEVELS) <= served


def test_the_protocol_doc_shows_the_table_of_the_code() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text()
    start = text.index("<!-- generated by `python -m roost.core.authz`")
    start = text.index("\n", start) + 1
    end = text.index("<!-- end of the generated table -->", start)
    assert text[start:end] == markdown_table(), "regenerate with: python -m roost.core.authz"


def test_a_glidein_token_opens_what_a_startd_needs_and_nothing_else() -> None:
    """roost annex's token: condor@domain limited to ADVERTISE_STARTD and READ (docs/annex.md)."""
    daemons = "condor@pool.org"
    p = policy(ALLOW_DAEMON=daemons, ALLOW_ADVERTISE_STARTD=daemons, ALLOW_ADVERTISE_SCHEDD=daemons,
               ALLOW_NEGOTIATOR=daemons, ALLOW_ADMINISTRATOR=daemons, ALLOW_WRITE="*", ALLOW_READ="*")
    scopes = ["condor:/ADVERTISE_STARTD", "condor:/READ"]

    def allowed(cmd: str, daemon: str, **args: object) -> bool:
        return p.decide(daemons, "10.0.0.9", cmd, daemon, args, scopes=scopes).allowed

    assert allowed("UPDATE_ADS", "COLLECTOR", type="Machine") and allowed("TOKEN_CHALLENGE", "COLLECTOR")
    assert allowed("QUERY", "COLLECTOR", type="Machine") and allowed("RESCHEDULE", "NEGOTIATOR")
    for cmd in ("JOB_UPDATE", "GET_FILES", "PUT_FILES", "PUT_CHECKPOINT", "STREAM_OUTPUT", "CHIRP_ATTR", "CHIRP_IO"):
        assert allowed(cmd, "SCHEDD"), cmd  # each names its claim id, which the schedd checks
    assert not allowed("QUERY", "COLLECTOR", type="Machine", private=True)  # claim ids
    assert not allowed("UPDATE_AD", "COLLECTOR", type="Scheduler")
    assert not allowed("UPDATE_AD", "COLLECTOR", type="Negotiator")
    assert not allowed("SUBMIT", "SCHEDD") and not allowed("ACT", "SCHEDD")
    assert not allowed("GET_REQUESTS", "SCHEDD") and not allowed("REQUEST_CLAIM", "STARTD")
    assert not allowed("SET_FACTOR", "NEGOTIATOR") and not allowed("SHUTDOWN", "MASTER")
    # the same commands without a scope still need DAEMON for anyone else
    assert not p.decide("bob@pool.org", "10.0.0.9", "JOB_UPDATE", "SCHEDD").allowed
