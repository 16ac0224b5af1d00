"""Authorization: may this peer send this command to this daemon?

Pure: the configuration comes in as a ``get(name) -> str | None`` function, the peer
as an identity string and an address; no socket, DNS or clock. Daemons call
:meth:`Policy.decide` from the one place they dispatch commands.

Levels and what implies what (HTCondor's ``DCpermissionHierarchy``,
``condor_perms.cpp``, and the manual's *Access Level Descriptions*): being allowed
WRITE also grants READ; ADMINISTRATOR and DAEMON each grant WRITE (so READ too);
NEGOTIATOR, CONFIG and the three ADVERTISE levels each grant READ. Nothing implies
ADMINISTRATOR, DAEMON, NEGOTIATOR, CONFIG or an ADVERTISE level. ALLOW is open to
everyone and reads no list.

Which list a level reads (HTCondor's ``SecMan::getSecSetting``): for level L on
daemon D, the first of ``ALLOW_L_D``, ``ALLOW_L``, then the same for the level L
falls back to, that is set and not empty. An ADVERTISE level falls back to DAEMON,
every level then to DEFAULT (``ALLOW_DEFAULT_D``, ``ALLOW_DEFAULT``); with
``LEGACY_ALLOW_SEMANTICS`` true, DAEMON falls back to WRITE before DEFAULT, as it did
before HTCondor 9. ``DENY_*`` is looked up the same way, on its own.

How a level is judged (HTCondor's ``IpVerify::Verify``): a matching DENY entry
refuses, whatever else matches; else a matching ALLOW entry grants; else the level
is granted when a level that implies it is (checked the same way, recursively);
else it is refused. So no list at all means nobody: the secure default, and
HTCondor's. Entries are read as :mod:`roost.core.authz_patterns` describes.

Three rules beyond the lists, all HTCondor's:

- A job-management command (submit, remove, hold, release) is never allowed to an
  identity ``*@unmapped`` (unauthenticated, or authenticated without a mapping).
- A token limited to some levels (its ``condor:/LEVEL`` scopes) opens only those
  and what they imply (HTCondor's authorization bounding set), whatever the lists say.
- A level whose ``SEC_<LEVEL>_AUTHENTICATION`` (same fallback as the lists, to
  ``SEC_DEFAULT_AUTHENTICATION``) is ``REQUIRED`` refuses an unauthenticated peer.
  Where nothing sets it roost requires authentication for every level but READ
  (HTCondor's ``use security:recommended`` does the same; its built-in default
  ``PREFERRED`` would let an unauthenticated peer through wherever a list holds
  ``*`` or a bare host name, so roost does not use it).

What HTCondor does that roost does not: netgroups (``+group``), DNS lookups inside
the policy (pass ``resolve``), the ``condor@``/``condor_pool@`` equivalence, and
holes punched at run time for a claim's startd (roost's claim commands carry the
claim id instead).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roost.core.authz_patterns import (
    UNAUTHENTICATED,
    AuthzConfigError,
    Entry,
    Peer,
    compile_entries,
    local_addresses,
    make_peer,
    wildcard_matcher,
)

__all__ = [
    "COMMAND_LEVELS",
    "DAEMONS",
    "AuthzConfigError",
    "ByArg",
    "CommandLevel",
    "Decision",
    "Level",
    "Policy",
    "UNAUTHENTICATED",
    "bounding_set",
    "granted_by",
    "markdown_table",
]


class Level(enum.StrEnum):
    ALLOW = "ALLOW"
    READ = "READ"
    WRITE = "WRITE"
    NEGOTIATOR = "NEGOTIATOR"
    ADMINISTRATOR = "ADMINISTRATOR"
    CONFIG = "CONFIG"
    DAEMON = "DAEMON"
    ADVERTISE_STARTD = "ADVERTISE_STARTD"
    ADVERTISE_SCHEDD = "ADVERTISE_SCHEDD"
    ADVERTISE_MASTER = "ADVERTISE_MASTER"


L = Level
_ADVERTISE = (L.ADVERTISE_STARTD, L.ADVERTISE_SCHEDD, L.ADVERTISE_MASTER)

#: the level a grant of each level directly implies (HTCondor's ``aImpliedNext``)
IMPLIES: dict[Level, Level] = {
    L.WRITE: L.READ,
    L.NEGOTIATOR: L.READ,
    L.ADMINISTRATOR: L.WRITE,
    L.CONFIG: L.READ,
    L.DAEMON: L.WRITE,
    **{a: L.READ for a in _ADVERTISE},
}
#: the levels whose grant directly implies each level, in HTCondor's order
IMPLIED_BY: dict[Level, tuple[Level, ...]] = {
    level: tuple(p for p in Level if IMPLIES.get(p) is level) for level in Level
}

#: the daemons whose lists :meth:`Policy.from_config` reads at once (``ALLOW_<L>_<D>``)
DAEMONS = ("MASTER", "COLLECTOR", "NEGOTIATOR", "SCHEDD", "STARTD")


def granted_by(level: Level) -> frozenset[Level]:
    """Every level a grant of ``level`` gives: itself and what it implies, transitively."""
    out = {level}
    while level in IMPLIES:
        level = IMPLIES[level]
        out.add(level)
    return frozenset(out)


def _config_chain(level: Level, legacy: bool) -> tuple[str, ...]:
    """The level names whose knobs are read for ``level``, in order, ending in DEFAULT."""
    chain = [str(level)]
    if level in _ADVERTISE:
        chain.append("DAEMON")
    if legacy and chain[-1] == "DAEMON":
        chain.append("WRITE")
    chain.append("DEFAULT")
    return tuple(chain)


# -- the command table ------------------------------------------------------------------

Levels = tuple[Level, ...]


@dataclass(frozen=True)
class ByArg:
    """A level that depends on one argument of the request (an ad's ``type``, ``private``).

    ``cases`` pairs a value as the docs spell it with the levels it needs (any one of
    them suffices); string values compare without regard to case, ``True`` as
    ``"true"``. Any other value, or none, needs ``default``.
    """

    arg: str
    cases: tuple[tuple[str, Levels], ...]
    default: Levels

    def levels(self, args: Mapping[str, Any] | None) -> Levels:
        value = (args or {}).get(self.arg)
        key = value.casefold() if isinstance(value, str) else ("true" if value is True else None)
        for shown, levels in self.cases:
            if shown.casefold() == key:
                return levels
        return self.default


@dataclass(frozen=True)
class CommandLevel:
    """The level(s) a command needs (any one suffices), the daemon that serves it, and
    the HTCondor command it stands for (where its level comes from)."""

    daemon: str
    rule: Levels | ByArg
    htcondor: str
    manages_jobs: bool = False

    def levels(self, args: Mapping[str, Any] | None = None) -> Levels:
        return self.rule.levels(args) if isinstance(self.rule, ByArg) else self.rule


def _ad_type_rule() -> ByArg:
    """UPDATE_AD / INVALIDATE_AD: the level HTCondor's collector asks for that ad type."""
    return ByArg(
        "type",
        (
            ("Machine", (L.ADVERTISE_STARTD,)),
            ("Scheduler", (L.ADVERTISE_SCHEDD,)),
            ("Submitter", (L.ADVERTISE_SCHEDD,)),
            ("Master", (L.ADVERTISE_MASTER,)),
            ("Negotiator", (L.NEGOTIATOR,)),
        ),
        (L.DAEMON,),
    )


#: a starter's calls to the schedd: a pool daemon, or a startd (a glide-in's token holds
#: ADVERTISE_STARTD only) naming the claim id and job it runs, which each handler checks
#: (HTCondor's shadow grants its starter DAEMON through the claim's session)
_STARTER = (L.DAEMON, L.ADVERTISE_STARTD)


def _c(daemon: str, level: Level | Levels | ByArg, htcondor: str, jobs: bool = False) -> CommandLevel:
    rule = (level,) if isinstance(level, Level) else level
    return CommandLevel(daemon, rule, htcondor, jobs)


#: every command of every roost daemon → the level it needs (docs/protocol.md, *Authorization*)
COMMAND_LEVELS: dict[str, CommandLevel] = {
    # collector
    "UPDATE_AD": _c("collector", _ad_type_rule(), "`UPDATE_STARTD_AD`, `UPDATE_SCHEDD_AD`, ... (one per type)"),
    "UPDATE_ADS": _c("collector", _ad_type_rule(), "`UPDATE_STARTD_AD`, ... (one per type; roost's batch of them)"),
    "INVALIDATE_AD": _c("collector", _ad_type_rule(), "`INVALIDATE_STARTD_ADS`, ... (one per type)"),
    "TOKEN_CHALLENGE": _c("collector", (L.DAEMON, L.ADVERTISE_STARTD), "none (HTCondor's hosts hold a session with the central manager; roost's key-less hosts have it run their side of a token handshake; a glide-in's startd, which holds `ADVERTISE_STARTD` only, checks who claims it this way)"),
    "QUERY": _c(
        "collector",
        ByArg("private", (("true", (L.NEGOTIATOR, L.ADMINISTRATOR)),), (L.READ,)),
        "`QUERY_STARTD_ADS`, ...; private: `QUERY_STARTD_PVT_ADS`",
    ),
    # negotiator
    "RESCHEDULE": _c("negotiator", (L.DAEMON, L.ADVERTISE_STARTD), "`RESCHEDULE` (at the negotiator; roost's startds ask for a cycle when a slot frees, a glide-in's too)"),
    "CYCLE_STATS": _c("negotiator", L.READ, "`QUERY_NEGOTIATOR_ADS`"),
    "USERPRIO": _c("negotiator", L.READ, "`GET_PRIORITY`"),
    "LIMITS": _c("negotiator", L.READ, "`GET_RESLIST`"),
    "FLOCK_STATUS": _c("negotiator", L.READ, "none (roost: the connected pools, what is lent and borrowed, the ledger)"),
    "SET_FACTOR": _c("negotiator", L.ADMINISTRATOR, "`SET_PRIORITYFACTOR` (see below)"),
    "SET_PRIORITY": _c("negotiator", L.ADMINISTRATOR, "`SET_PRIORITY`"),
    "RESET_USAGE": _c("negotiator", L.ADMINISTRATOR, "`RESET_USAGE`, `RESET_ALL_USAGE`"),
    "SET_FLOOR": _c("negotiator", L.ADMINISTRATOR, "`SET_FLOOR`"),
    "SET_CEILING": _c("negotiator", L.ADMINISTRATOR, "`SET_CEILING`"),
    # schedd
    "NEW_CLUSTER": _c("schedd", L.WRITE, "`QMGMT_WRITE_CMD` (NewCluster)", jobs=True),
    "SUBMIT": _c("schedd", L.WRITE, "`QMGMT_WRITE_CMD` (NewProc, SetAttribute)", jobs=True),
    "SUBMIT_TEXT": _c("schedd", L.WRITE, "`QMGMT_WRITE_CMD`", jobs=True),
    "ACT": _c("schedd", L.WRITE, "`ACT_ON_JOBS`", jobs=True),
    "EDIT": _c("schedd", L.WRITE, "`QMGMT_WRITE_CMD` (SetAttribute, condor_qedit)", jobs=True),
    "RESERVE": _c("schedd", ByArg("op", (("list", (L.READ,)),), (L.ADMINISTRATOR,)),
                  "none (roost's `roost reserve`: dedicated resources held for a window; listing is READ)"),
    "QUERY_JOBS": _c("schedd", L.READ, "`QUERY_JOB_ADS`, `QUERY_SCHEDD_HISTORY`"),
    "WAIT_JOBS": _c("schedd", L.READ, "`QMGMT_READ_CMD`"),
    "GET_REQUESTS": _c("schedd", L.NEGOTIATOR, "`NEGOTIATE`"),
    "FLOCK_WHY": _c("schedd", L.READ, "none (roost: q -analyze's where a job runs or why it does or does not flock)"),
    "MATCHES": _c("schedd", L.NEGOTIATOR, "`NEGOTIATE` (its matches)"),
    "JOB_UPDATE": _c("schedd", _STARTER, "the starter's updates to the shadow"),
    "GET_FILES": _c("schedd", _STARTER, "file transfer (the shadow grants the starter `DAEMON`)"),
    "PUT_FILES": _c("schedd", _STARTER, "file transfer (the shadow grants the starter `DAEMON`)"),
    "PUT_CHECKPOINT": _c("schedd", _STARTER, "a self-checkpointing job's checkpoint (as `PUT_FILES`)"),
    "STREAM_OUTPUT": _c("schedd", _STARTER, "stream_output/stream_error: a running job's stdout/stderr as it grows"),
    "CHIRP_ATTR": _c("schedd", _STARTER, "Chirp through the starter: `CONDOR_get_job_attr`, `CONDOR_set_job_attr`, `CONDOR_ulog` and delayed updates"),
    "CHIRP_IO": _c("schedd", _STARTER, "Chirp through the starter: the shadow's remote system calls (`CONDOR_open`, ...), done as the job's owner"),
    "SPOOL_FILES": _c("schedd", L.WRITE, "`SPOOL_JOB_FILES_WITH_PERMS` (condor_submit -spool; the job's owner or a queue super user)", jobs=True),
    "TRANSFER_DATA": _c("schedd", L.WRITE, "`TRANSFER_DATA_WITH_PERMS` (condor_transfer_data; the job's owner or a queue super user)", jobs=True),
    "TAIL_JOB": _c("schedd", L.WRITE, "`CREATE_JOB_OWNER_SEC_SESSION` (condor_tail; the job's owner or a queue super user)", jobs=True),
    "SSH_TO_JOB": _c("schedd", L.WRITE, "`CREATE_JOB_OWNER_SEC_SESSION` (condor_ssh_to_job; the job's owner or a queue super user)", jobs=True),
    "REASSIGN_SLOT": _c("schedd", L.WRITE, "`REASSIGN_SLOT` (condor_now; the jobs' owner or a queue super user)", jobs=True),
    # startd
    "REQUEST_CLAIM": _c("startd", L.DAEMON, "`REQUEST_CLAIM`"),
    "ACTIVATE_CLAIM": _c("startd", L.DAEMON, "`ACTIVATE_CLAIM`"),
    "KEEPALIVE": _c("startd", L.DAEMON, "`ALIVE`"),
    "RECONNECT": _c("startd", L.DAEMON, "`CA_RECONNECT_JOB` (with the claim id)"),
    "DEACTIVATE_CLAIM": _c("startd", L.DAEMON, "`DEACTIVATE_CLAIM`"),
    "RELEASE_CLAIM": _c("startd", L.DAEMON, "`RELEASE_CLAIM`"),
    "SUSPEND_CLAIM": _c("startd", L.DAEMON, "`SUSPEND_CLAIM` (condor_suspend, through the schedd)"),
    "CONTINUE_CLAIM": _c("startd", L.DAEMON, "`CONTINUE_CLAIM` (condor_continue, through the schedd)"),
    "DRAIN": _c("startd", L.ADMINISTRATOR, "`DRAIN_JOBS`"),
    "CANCEL_DRAIN": _c("startd", L.ADMINISTRATOR, "`CANCEL_DRAIN_JOBS`"),
    "VACATE": _c("startd", L.ADMINISTRATOR, "`VACATE_ALL_CLAIMS`"),
    "SET_OFF": _c("startd", L.ADMINISTRATOR, "`DAEMON_OFF` (`condor_off -startd`, at the master)"),
    "SET_ON": _c("startd", L.ADMINISTRATOR, "`DAEMON_ON` (at the master)"),
    "PEEK_JOB": _c("startd", L.DAEMON, "`STARTER_PEEK` (with the claim id)"),
    "JOB_SHELL": _c("startd", L.DAEMON, "`START_SSHD` (with the claim id; no sshd, no port of its own)"),
    # master
    "STATUS": _c("master", L.READ, "`DC_QUERY_READY`"),
    "SHUTDOWN": _c("master", L.ADMINISTRATOR, "`DAEMONS_OFF`"),
    "RESTART_DAEMON": _c("master", L.ADMINISTRATOR, "`RESTART`"),
    "DAEMON_OFF": _c("master", L.ADMINISTRATOR, "`DAEMON_OFF`, `DAEMON_OFF_FAST`"),
    "DAEMON_ON": _c("master", L.ADMINISTRATOR, "`DAEMON_ON`"),
    # every daemon
    "AUTH": _c("every daemon", L.ALLOW, "`DC_AUTHENTICATE` (the security handshake)"),
    "AUTH_PROOF": _c("every daemon", L.ALLOW, "`DC_AUTHENTICATE` (its second step)"),
    "STARTTLS": _c("every daemon", L.ALLOW, "`DC_AUTHENTICATE` (its encryption; roost runs TLS)"),
    "RECONFIG": _c("every daemon", L.ADMINISTRATOR, "`DC_RECONFIG`"),
    "CONFIG_VAL": _c("every daemon", L.READ, "`DC_CONFIG_VAL` (condor_config_val -name; htcondor2.RemoteParam)"),
}


def _levels_text(rule: Levels | ByArg) -> str:
    def alts(levels: Levels) -> str:
        return " or ".join(f"`{level}`" for level in levels)

    if not isinstance(rule, ByArg):
        return alts(rule)
    cases = "; ".join(f"{shown}: {alts(levels)}" for shown, levels in rule.cases)
    return f"by `{rule.arg}`: {cases}; otherwise {alts(rule.default)}"


def markdown_table(table: Mapping[str, CommandLevel] = COMMAND_LEVELS) -> str:
    """The command → level table as docs/protocol.md shows it (a test keeps them equal)."""
    lines = ["| command | daemon | level | HTCondor's command |", "|---|---|---|---|"]
    for cmd, entry in table.items():
        level = _levels_text(entry.rule)
        if entry.manages_jobs:
            level += " (never `*@unmapped`)"
        lines.append(f"| `{cmd}` | {entry.daemon} | {level} | {entry.htcondor} |")
    return "\n".join(lines) + "\n"


# -- the policy -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """The answer: allowed or not, the level that decided, and one line saying why."""

    allowed: bool
    level: str
    reason: str


@dataclass(frozen=True)
class _Lists:
    allow: tuple[Entry, ...]
    deny: tuple[Entry, ...]
    allow_knob: str | None  # the knob the ALLOW list came from (None: nothing set)
    auth_required: bool
    auth_knob: str


_UNMAPPED = wildcard_matcher("*@unmapped")
_CACHE_LIMIT = 8192  # answers kept (per daemon, level, peer); cleared when full


class Policy:
    """The ``ALLOW_*``/``DENY_*`` policy of one configuration, compiled.

    Build one per (re)configuration with :meth:`from_config`. Answers are cached by
    (daemon, level, identity, address, names, scopes): a pool has few of each, and
    the cache is bounded so a flood of new addresses cannot grow it without end.
    """

    def __init__(
        self,
        get: Callable[[str], str | None],
        *,
        resolve: Callable[[str], Sequence[str]] | None = None,
        local_ips: Iterable[str] = (),
        table: Mapping[str, CommandLevel] = COMMAND_LEVELS,
    ) -> None:
        self._get = get
        self._resolve = resolve
        self._local_ips = local_addresses(local_ips)
        self._legacy = _truthy(get("LEGACY_ALLOW_SEMANTICS"))
        self.table = table
        self._lists: dict[tuple[str, Level], _Lists] = {}
        self._cache: dict[tuple[Any, ...], Decision] = {}

    @classmethod
    def from_config(
        cls,
        get: Callable[[str], str | None],
        *,
        resolve: Callable[[str], Sequence[str]] | None = None,
        local_ips: Iterable[str] = (),
        daemons: Iterable[str] = DAEMONS,
    ) -> Policy:
        """Read and compile every list for ``daemons`` now, so that a bad entry is an
        :class:`AuthzConfigError` at start-up, not at the first request."""
        policy = cls(get, resolve=resolve, local_ips=local_ips)
        for daemon in daemons:
            for level in Level:
                if level is not L.ALLOW:
                    policy._lists_for(daemon.upper(), level)
        return policy

    # -- reading the configuration ---------------------------------------------------
    def _lookup(self, prefix: str, level: Level, daemon: str) -> tuple[str | None, str | None]:
        """(knob, value) of the first ``PREFIX_<L>[_<D>]`` set, HTCondor's order."""
        for name in _config_chain(level, self._legacy):
            for knob in (f"{prefix}_{name}_{daemon}", f"{prefix}_{name}"):
                value = self._get(knob)
                if value is not None and value.strip():
                    return knob, value
        return None, None

    def _lists_for(self, daemon: str, level: Level) -> _Lists:
        key = (daemon, level)
        lists = self._lists.get(key)
        if lists is None:
            allow_knob, allow = self._lookup("ALLOW", level, daemon)
            deny_knob, deny = self._lookup("DENY", level, daemon)
            auth_knob, auth = self._auth(level, daemon)
            lists = self._lists[key] = _Lists(
                compile_entries(allow_knob, allow, self._resolve) if allow_knob and allow else (),
                compile_entries(deny_knob, deny, self._resolve) if deny_knob and deny else (),
                allow_knob,
                auth == "REQUIRED",
                auth_knob,
            )
        return lists

    def _auth(self, level: Level, daemon: str) -> tuple[str, str]:
        """(knob, value) of ``SEC_<L>_AUTHENTICATION``, or roost's default for ``level``."""
        for name in _config_chain(level, self._legacy):
            for knob in (f"SEC_{name}_AUTHENTICATION_{daemon}", f"SEC_{name}_AUTHENTICATION"):
                value = self._get(knob)
                if value is not None and value.strip():
                    return knob, value.strip().upper()
        default = "OPTIONAL" if level is L.READ else "REQUIRED"
        return f"SEC_{level}_AUTHENTICATION (unset; roost's default {default})", default

    # -- deciding ---------------------------------------------------------------------
    def verify(
        self, identity: str | None, host: str, level: Level | str, daemon: str,
        hostnames: Iterable[str] = (), scopes: Iterable[str] = (),
    ) -> Decision:
        """Is the peer granted ``level`` on ``daemon``? For checks a handler makes
        beyond its command's level (HTCondor's ``daemonCore->Verify``)."""
        return self._decision(identity, host, tuple(hostnames), Level(level), daemon.upper(), tuple(scopes))

    def decide(
        self, identity: str | None, host: str, command: str, daemon: str,
        args: Mapping[str, Any] | None = None, hostnames: Iterable[str] = (),
        scopes: Iterable[str] = (),
    ) -> Decision:
        """May the peer send ``command`` (with ``args``) to ``daemon``?

        ``identity`` is the authenticated ``user@domain`` (None: not authenticated);
        ``host`` the peer's IP address (a Unix-socket peer is local: pass
        ``127.0.0.1``); ``hostnames`` the peer's names where the caller knows them;
        ``scopes`` the levels the peer's token is limited to (empty: no limit).
        A command missing from the table is refused.
        """
        entry = self.table.get(command)
        if entry is None:
            return Decision(False, "", f"{command} has no authorization level, so nobody may send it")
        levels = entry.levels(args)
        if entry.manages_jobs and _UNMAPPED(identity or UNAUTHENTICATED):
            return Decision(
                False, str(levels[0]),
                f"{command} manages jobs, which an unmapped identity "
                f"({identity or UNAUTHENTICATED}) may never do",
            )
        names, scope_names, daemon = tuple(hostnames), tuple(scopes), daemon.upper()
        reasons = []
        for level in levels:
            decision = self._decision(identity, host, names, level, daemon, scope_names)
            if decision.allowed:
                return decision
            reasons.append(decision.reason)
        return Decision(False, str(levels[0]), "; ".join(reasons))

    def _decision(
        self, identity: str | None, host: str, names: tuple[str, ...], level: Level, daemon: str,
        scopes: tuple[str, ...],
    ) -> Decision:
        """:meth:`_check`, cached by its raw inputs (parsing the address costs more
        than the lookup)."""
        key = (daemon, level, identity, host, names, scopes)
        hit = self._cache.get(key)
        if hit is None:
            peer = make_peer(identity, host, names)
            hit = self._check(peer, level, daemon, bounding_set(scopes))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _check(self, peer: Peer, level: Level, daemon: str, bound: frozenset[Level] | None) -> Decision:
        if level is L.ALLOW:
            return Decision(True, str(level), "ALLOW: open to everyone")
        if bound is not None and level not in bound:
            limits = ", ".join(str(b) for b in Level if b in bound) or "nothing roost knows"
            return Decision(
                False, str(level), f"{level} is outside what {peer.text}'s token allows ({limits})"
            )
        lists = self._lists_for(daemon, level)
        if lists.auth_required and peer.identity == UNAUTHENTICATED:
            return Decision(
                False, str(level),
                f"{level} requires an authenticated peer ({lists.auth_knob} = REQUIRED) "
                f"and {peer.text} did not authenticate",
            )
        allowed, reason = self._judge(peer, level, daemon)
        return Decision(allowed, str(level), reason)

    def _judge(self, peer: Peer, level: Level, daemon: str) -> tuple[bool, str]:
        """HTCondor's ``IpVerify::Verify`` for one level: deny, allow, implied, refused."""
        lists = self._lists_for(daemon, level)
        local = self._local_ips
        for e in lists.deny:
            if e.matches(peer, local):
                return False, f"{level} denied to {peer.text} by {e.knob} entry {e.text}"
        for e in lists.allow:
            if e.matches(peer, local):
                return True, f"{level} authorization policy allows {peer.text} ({e.knob} entry {e.text})"
        for parent in IMPLIED_BY[level]:
            allowed, why = self._judge(peer, parent, daemon)
            if allowed:
                return True, f"{level} is implied by {parent}; {why}"
        unset = "" if lists.allow_knob else f" (no ALLOW_{level} or ALLOW_DEFAULT is set)"
        return False, f"{level} authorization policy contains no matching ALLOW entry for {peer.text}{unset}"


def bounding_set(scopes: Iterable[str]) -> frozenset[Level] | None:
    """The levels a token's scopes (``WRITE`` or ``condor:/WRITE``) leave open: each
    one and what it implies (HTCondor's authorization bounding set). No scopes, no
    limit (None); scopes naming no level leave nothing open."""
    names = [s.removeprefix("condor:/").upper() for s in scopes]
    if not names:
        return None
    return frozenset(g for n in names if n in Level.__members__ for g in granted_by(Level[n]))


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("true", "yes", "1", "t", "y", "on")


if __name__ == "__main__":  # regenerate docs/protocol.md's table: python -m roost.core.authz
    print(markdown_table(), end="")
