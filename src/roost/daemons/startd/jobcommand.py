"""The command a starter runs for a job, by universe: the registry (``roost.universes``)
says which universe a job is and names its execute-side module (``execside.py`` says
what such a module provides: ``plainjob``, ``container``, ``javajob``). What this host
has for them is ``Universes``, found once by the startd (``detect_all``)."""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from roost.daemons.startd.execside import Command, CommandError, DetectHost
from roost.daemons.startd.jobspec import Identity, JobSpec
from roost.daemons.userfiles import User
from roost.universes import registry
from roost.universes.base import RunsOn

if TYPE_CHECKING:
    from roost.classad import ClassAd
    from roost.daemons.startd.container import Runtime
    from roost.daemons.startd.javajob import Jvm


@dataclass
class Universes:
    """The runtimes this host has (None: none works here; the startd says why in its log).
    A universe added later keeps what its ``detect`` found in ``found``."""

    runtime: Runtime | None = None  # the container universe's podman or docker
    jvm: Jvm | None = None  # the java universe's JVM
    docker_extra: list[str] = field(default_factory=list)  # DOCKER_EXTRA_ARGUMENTS
    execute_dir: str = ""
    found: dict[str, Any] = field(default_factory=dict)

    def ad(self) -> dict[str, object]:
        """What the slots advertise for the universes this host runs (HasContainer ...)."""
        out: dict[str, object] = {}
        for side in execute_sides():
            out.update(side.ad(self))
        return out

    def container_name(self, sandbox_name: str) -> str:
        """Unique per execute directory: two startds on one host never touch each
        other's containers."""
        tag = hashlib.sha256(self.execute_dir.encode()).hexdigest()[:8]
        return f"roost-{tag}-{sandbox_name}"


_modules: dict[str, ModuleType] = {}


def _side(path: str) -> ModuleType:
    side = _modules.get(path)
    if side is None:
        side = _modules[path] = importlib.import_module(path)
    return side


#: where a universe's jobs run on a startd's slots (local, scheduler and grid jobs are
#: the schedd's own: their execute modules are the schedd's, never loaded here)
_ON_EXECUTE_HOSTS = (RunsOn.SLOT, RunsOn.DEDICATED)


def execute_sides() -> list[ModuleType]:
    """The execute-side module of every universe a startd runs, each once."""
    paths = dict.fromkeys(u.execute for u in registry.all_universes() if u.runs_on in _ON_EXECUTE_HOSTS)
    return [_side(p) for p in paths]


def side_for(ad: ClassAd | None) -> ModuleType:
    """The execute-side module of the job's universe; a job ad without one, or with a
    ``JobUniverse`` no universe has, runs as its plain program (as condor_starter does)."""
    u = registry.for_job(lambda a: ad.eval(a) if a in ad else None) if ad is not None else None
    if u is None:
        return _side(registry.DEFAULT.execute)
    if u.runs_on not in _ON_EXECUTE_HOSTS:
        raise CommandError(f"a {u.name} universe job runs beside its schedd, not on an execute host")
    return _side(u.execute)


def detect_all(host: DetectHost) -> list[tuple[str, Coroutine[Any, Any, None]]]:
    """(what, coroutine) for each execute side that finds its runtime at start."""
    return [(f"{side.__name__.rpartition('.')[2]} check", side.detect(host))
            for side in execute_sides() if hasattr(side, "detect")]


async def prepare(spec: JobSpec, universes: Universes | None, user: User) -> None:
    """What must be on this host before the job starts (a container job's image, pulled
    off the event loop; CommandError says why it cannot be had)."""
    side = side_for(spec.job_ad)
    if universes is not None and hasattr(side, "prepare"):
        await side.prepare(spec, universes, user)


def command(spec: JobSpec, universes: Universes | None, *, exe: str, sandbox: str, sandbox_name: str,
            identity: Identity, user: User, env: dict[str, str], memory_mib: int | None, cpus: int,
            stdin: bool) -> Command:
    """What to exec for the job; ``exe`` is its program as found on this machine."""
    cmd: Command = side_for(spec.job_ad).command(
        spec, universes or Universes(), exe=exe, sandbox=sandbox, sandbox_name=sandbox_name, identity=identity,
        user=user, env=env, memory_mib=memory_mib, cpus=cpus, stdin=stdin)
    return cmd


__all__ = ["Command", "CommandError", "Universes", "command", "detect_all", "execute_sides", "prepare",
           "side_for"]
