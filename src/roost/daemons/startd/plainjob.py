"""The execute side of universes whose job is its own program (vanilla, parallel nodes):
the starter execs it as the job's user; it needs nothing of the host to advertise."""

from __future__ import annotations

from typing import TYPE_CHECKING

from roost.daemons.startd.execside import Command
from roost.daemons.startd.jobspec import JobSpec

if TYPE_CHECKING:
    from roost.daemons.startd.jobcommand import Universes


def ad(universes: Universes) -> dict[str, object]:
    return {}


def command(spec: JobSpec, universes: Universes, *, exe: str, **_: object) -> Command:
    return Command([exe, *spec.args], exe, True)
