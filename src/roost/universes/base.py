"""The shape every universe has (``Universe``) and what its submit hooks may touch.

A universe's submit hooks see the job-ad build only through ``SubmitBuild``, the part of
``roost.submit.builder.Builder`` they need; so this package stays below ``roost.submit``
and a universe module can be read (and tested) without the submit language around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class RunsOn:
    """Where a universe's jobs run, so which runner of the schedd handles them."""

    SLOT = "slot"  # negotiated, then a shadow on a startd's claim; the starter runs it
    SCHEDD = "schedd"  # the schedd runs it itself, at once, as its child (local, scheduler)
    DEDICATED = "dedicated"  # the dedicated scheduler claims its slots (parallel)
    GRID = "grid"  # the schedd's grid manager hands it to another batch system (grid)

    ALL = (SLOT, SCHEDD, DEDICATED, GRID)


class SubmitBuild(Protocol):
    """What a universe's submit hook may do with the job-ad build (``Builder``)."""

    ctx: Any  # BuildContext: arch, opsys, file, cwd ...

    def get(self, *keys: str) -> str | None: ...
    def bool(self, key: str, default: bool, *alts: str) -> bool: ...
    def set(self, attr: str, value: Any) -> None: ...
    def lookup(self, attr: str) -> Any: ...
    def error(self, message: str, key: str | None = None) -> None: ...
    def arguments(self, text: str, key: str, *, v2: bool) -> tuple[str, str]:
        """(attribute, value) of an argument string in HTCondor's old (``Args``) or new
        (``Arguments``) syntax; a syntax error is reported against ``key``."""
        ...


#: (the build, the universe's name as the description wrote it)
Hook = Callable[[SubmitBuild, str], None]
#: (the build, the machine attributes the user's requirements name) -> the clauses that
#: stand for the platform (Arch, OpSys, or what replaces them) in Requirements
PlatformHook = Callable[[SubmitBuild, set[str]], list[str]]
#: reads one attribute of a job (a submit build's lookup, or a ClassAd's eval)
Get = Callable[[str], object]

#: the OpSys attributes a user's requirements may name instead of OpSys itself
OPSYS_ATTRS = frozenset(("opsys", "opsysandver", "opsyslongname", "opsysshortname", "opsysname", "opsyslegacy"))


def arch_clause(b: SubmitBuild, machine: set[str]) -> list[str]:
    """condor_submit's Arch clause, unless the user's requirements name Arch."""
    return [] if "arch" in machine else [f'(TARGET.Arch == "{b.ctx.arch}")']


def native_platform(b: SubmitBuild, machine: set[str]) -> list[str]:
    """Arch and OpSys of the submit host: a program built for it runs where they match."""
    opsys = [] if machine & OPSYS_ATTRS else [f'(TARGET.OpSys == "{b.ctx.opsys}")']
    return arch_clause(b, machine) + opsys


@dataclass(frozen=True)
class Universe:
    """One universe, at every stage. Submit calls the hooks in condor_submit's order:
    ``early`` right after ``JobUniverse`` is set (what later commands read: is it a
    container job, which has no executable of its own), ``shape`` after the executable
    and arguments and before the resource requests (parallel's node counts, which
    ``request_cpus`` may still override), ``late`` after file transfer (java's class
    file and jars as inputs). The flags say where condor_submit treats a universe
    apart; their defaults are vanilla's."""

    name: str
    number: int  # JobUniverse, HTCondor's number
    runs_on: str  # RunsOn.*
    #: the module that starts and stops its jobs where they run (a startd's execute
    #: side, or the schedd's local runner), by dotted path: never imported here
    execute: str
    aliases: tuple[str, ...] = ()
    summary: str = ""
    #: submit commands its hooks read (no "unused" warning for them)
    keys: frozenset[str] = frozenset()
    #: machine attributes a startd advertises when it can run these jobs
    advertises: tuple[str, ...] = ()
    early: Hook | None = None
    shape: Hook | None = None
    late: Hook | None = None
    platform: PlatformHook = native_platform
    #: a job of ``number`` is this universe's when this says so (container: a vanilla
    #: job with an image); universes without it are their number's plain reading
    claims: Callable[[Get], bool] | None = None
    matchmaking: bool = True  # False: Requirements is the user's alone
    transfers_files: bool = True  # the file-transfer (or shared file system) clauses
    checks_executable: bool = True  # the executable is a file on the submit host
    lease: bool = True  # JobLeaseDuration defaults to JOB_DEFAULT_LEASE_DURATION
    kill_sig: str | None = "SIGTERM"  # the KillSig written when kill_sig is not given
    deferral_needs_startd: bool = True  # deferred jobs require TARGET.HasJobDeferral
    disk_by_version: bool = False  # newer startds size the disk themselves (vanilla)
    schedd_channel: bool = False  # the job gets a connection to its schedd (DAGMan)
    node_macro: bool = False  # $(Node) is each node's number, filled in where it runs
    needs_cmd: bool = True  # False: the job may name no executable (an image's own command)

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def __post_init__(self) -> None:
        if self.runs_on not in RunsOn.ALL:
            raise ValueError(f"universe {self.name}: runs_on {self.runs_on!r} is none of {RunsOn.ALL}")
        if not self.name or self.name != self.name.lower() or any(a != a.lower() for a in self.aliases):
            raise ValueError(f"universe {self.name!r}: names are lower case")


def flag(get: Get, attr: str) -> bool:
    """An attribute that is the boolean true (a ClassAd's ``WantDocker = true``)."""
    return get(attr) is True


__all__ = ["OPSYS_ATTRS", "Get", "Hook", "PlatformHook", "RunsOn", "SubmitBuild", "Universe", "arch_clause",
           "flag", "native_platform"]

