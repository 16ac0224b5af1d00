"""The local universe (12): the schedd runs the job itself, at once, as its child on the
submit host (``roost.daemons.schedd.localuniverse``), never negotiated. No container:
an image is refused here (read by the container universe's image reading)."""

from __future__ import annotations

from roost.universes import container
from roost.universes.base import RunsOn, SubmitBuild, Universe


def _early(b: SubmitBuild, universe: str) -> None:
    container.read_images(b, universe)


UNIVERSE = Universe(
    name="local", number=12, runs_on=RunsOn.SCHEDD, execute="roost.daemons.schedd.localuniverse",
    summary="the job's program run by the schedd on the submit host",
    keys=container.KEYS, early=_early, transfers_files=False, lease=False, deferral_needs_startd=False,
)
