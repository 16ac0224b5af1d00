"""What every universe's execute-side module on the startd provides (issue 28).

A universe (``roost.universes``) names by dotted path the module that starts its jobs
on an execute host: ``plainjob`` (the program itself: vanilla, parallel nodes),
``container`` (podman or docker), ``javajob`` (the host's JVM). ``jobcommand`` imports
the module a job's universe names and calls, at module level:

- ``ad(universes) -> dict``: the machine attributes its jobs need, from what was found
  here (``HasContainer``, ``HasJava`` ...); ``{}`` until then. Required.
- ``command(spec, universes, *, exe, sandbox, sandbox_name, identity, user, env,
  memory_mib, cpus, stdin) -> Command``: what the starter execs. Required.
- ``async detect(host: DetectHost) -> None``: find the runtime once, at the startd's
  start, keep it on ``host.universes`` and call ``host.changed(*host.slots)`` so the
  slots advertise it; the log says why not where it fails. Optional.
- ``async prepare(spec, universes, user) -> None``: what must be on this host before
  the job starts (an image pulled). Optional.

Stopping is the starter's signals to the ``Command``'s process group; a ``Command``
with a ``container`` name is also removed by name (the runtime cannot pass SIGKILL on).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Command:
    argv: list[str]
    executable: str
    as_job_user: bool  # False: started as the startd's user (the runtime switches inside)
    container: str | None = None  # the container's name, for removal


class CommandError(Exception):
    """This host cannot run the job as its ad asks (the job's report says why)."""


class DetectHost(Protocol):
    """What an execute side's ``detect`` sees of the startd."""

    config: Any  # the daemon's configuration: get, get_bool, get_list
    log: logging.Logger
    universes: Any  # jobcommand.Universes: where what was found is kept
    claims: Any  # the claims table: ``starters`` (the jobs adopted from a previous startd)
    slots: Any  # the slot names, for ``changed``

    def changed(self, *names: str) -> None: ...
