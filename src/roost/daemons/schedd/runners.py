"""Which of the schedd's runners handles a job, as its universe says (``roost.universes``,
``Universe.runs_on``): a shadow on a negotiated claim (slot universes), the schedd
itself (``localuniverse.py``: local, scheduler), the dedicated scheduler
(``dedicated.py``: parallel), or the grid manager (``gridmanager.py``: grid). The schedd asks here, never tests universe numbers.

The questions take a ``JobUniverse`` value as a job holds it (None when unset: vanilla).
"""

from __future__ import annotations

from roost.universes import registry
from roost.universes.base import RunsOn


def beside_schedd(universe: object) -> bool:
    """Run by the schedd itself, at once: never negotiated."""
    return universe in registry.numbers(RunsOn.SCHEDD)


def dedicated(universe: object) -> bool:
    """Run by the dedicated scheduler, which claims its slots itself."""
    return universe in registry.numbers(RunsOn.DEDICATED)


def grid_managed(universe: object) -> bool:
    """Handed by the schedd's grid manager to another batch system (gridmanager.py)."""
    return universe in registry.numbers(RunsOn.GRID)


def negotiated(universe: object) -> bool:
    """Matched by the negotiator, job by job (a JobUniverse of no universe too: it waits,
    visible to ``q -analyze``, rather than being run by something it never asked for)."""
    return not beside_schedd(universe) and not dedicated(universe) and not grid_managed(universe)


def wants_channel(universe: object) -> bool:
    """The job gets a connection to its schedd (a scheduler-universe DAG manager)."""
    u = registry.by_number(universe)
    return u is not None and u.schedd_channel


def dedicated_number() -> int:
    """The JobUniverse of the dedicated scheduler's own requests (a reserved node's)."""
    return next(u.number for u in registry.all_universes() if u.runs_on == RunsOn.DEDICATED)
