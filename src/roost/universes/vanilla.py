"""The vanilla universe (5): the job's own program, run by a startd's starter as a plain
process (``roost.daemons.startd.plainjob``). A vanilla job that names an image is a
container job (as with condor_submit): the image commands are read here too, and the
registry hands such a job to the container universe (its ``claims``)."""

from __future__ import annotations

from roost.universes import container
from roost.universes.base import RunsOn, SubmitBuild, Universe


def _early(b: SubmitBuild, universe: str) -> None:
    container.read_images(b, universe)


UNIVERSE = Universe(
    name="vanilla", number=5, runs_on=RunsOn.SLOT, execute="roost.daemons.startd.plainjob",
    summary="the job's own program on an execute host",
    keys=container.KEYS, early=_early, kill_sig=None, disk_by_version=True,
)
