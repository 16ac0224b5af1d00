"""The grid universe (9, issue 30): a job the schedd's grid manager hands to another
batch system (``roost.daemons.schedd.gridmanager``) and mirrors in the user's queue.
Never negotiated: ``grid_resource`` says where it goes, and that is checked here at
submit, an unsupported one refused naming what is supported.

HTCondor's forms of ``grid_resource``: ``batch slurm`` and ``batch sge`` (a batch
system the submit host submits to; roost has tested Slurm and Grid Engine, so only
those are offered: PBS/Torque has no package here to test against) and ``condor <schedd
name> <pool's central manager>`` (another roost pool's schedd: HTCondor's Condor-C). ``batch_queue``, ``batch_runtime`` and ``batch_project``
become HTCondor's ``BatchQueue``/``BatchRuntime``/``BatchProject``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roost.universes.base import RunsOn, SubmitBuild, Universe

#: grid_resource types roost sends jobs to, each with what follows the type
SUPPORTED = {"batch": "batch slurm|sge", "condor": "condor <schedd name> <pool's central manager>"}
#: batch systems behind ``batch`` (HTCondor's BLAHP names more; these are tested here)
BATCH_SYSTEMS = ("slurm", "sge")
_UNTESTED_BATCH = ("pbs", "lsf", "condor")

class GridResourceError(ValueError):
    """``grid_resource`` names nothing roost can send a job to; the message lists what it can."""


@dataclass(frozen=True)
class GridResource:
    kind: str  # "batch" or "condor"
    system: str = ""  # batch: "slurm" or "sge"
    schedd: str = ""  # condor: the remote schedd's name
    pool: str = ""  # condor: the remote pool's central manager

    def __str__(self) -> str:
        if self.kind == "batch":
            return f"batch {self.system}"
        return f"condor {self.schedd} {self.pool}"


def supported_text() -> str:
    forms = [f"batch {s}" for s in BATCH_SYSTEMS] + [v for k, v in SUPPORTED.items() if k != "batch"]
    return "; ".join(f"'{v}'" for v in forms)


def parse_grid_resource(text: Any) -> GridResource:
    """``grid_resource``'s value; GridResourceError naming what is supported."""
    words = str(text or "").split()
    if not words:
        raise GridResourceError(f"universe = grid needs grid_resource; supported: {supported_text()}")
    kind = words[0].lower()
    if kind == "batch":
        if len(words) < 2:
            raise GridResourceError(f"grid_resource = {text}: batch names its system; supported: "
                                    f"{', '.join('batch ' + s for s in BATCH_SYSTEMS)}")
        system = words[1].lower()
        if system in BATCH_SYSTEMS:
            if len(words) > 2:
                raise GridResourceError(f"grid_resource = {text}: remote batch hosts (user@host) are not supported; "
                                        f"the schedd's host must be a submit host: batch {system}")
            return GridResource("batch", system=system)
        untested = " (not tested here, so not offered)" if system in _UNTESTED_BATCH else ""
        raise GridResourceError(f"grid_resource = {text}: batch system {system!r} is not supported{untested}; "
                                f"supported: {', '.join('batch ' + s for s in BATCH_SYSTEMS)}")
    if kind == "condor":
        if len(words) != 3:
            raise GridResourceError(f"grid_resource = {text}: expected 'condor <schedd name> <pool's central manager>'")
        return GridResource("condor", schedd=words[1], pool=words[2])
    raise GridResourceError(f"grid_resource = {text}: type {words[0]!r} is not supported; supported: {supported_text()}")




def _early(b: SubmitBuild, universe: str) -> None:
    """``universe = grid`` (issue 30): ``grid_resource`` names where the job goes (checked
    here: an unsupported one is an error naming what is), ``batch_queue`` (the partition),
    ``batch_runtime`` (wall time, seconds) and ``batch_project`` as HTCondor's
    ``BatchQueue``/``BatchRuntime``/``BatchProject``."""
    resource = b.get("grid_resource")
    try:
        parsed = parse_grid_resource(resource)
    except GridResourceError as e:
        b.error(str(e), "grid_resource")
        return
    b.set("GridResource", str(parsed))
    queue = b.get("batch_queue")
    if queue is not None and queue.strip():
        b.set("BatchQueue", queue.strip())
    project = b.get("batch_project")
    if project is not None and project.strip():
        b.set("BatchProject", project.strip())
    runtime = b.get("batch_runtime")
    if runtime is not None and runtime.strip():
        try:
            seconds = int(runtime.strip())
            if seconds <= 0:
                raise ValueError
        except ValueError:
            b.error(f"batch_runtime = {runtime}: expected a positive number of seconds", "batch_runtime")
            return
        b.set("BatchRuntime", seconds)



UNIVERSE = Universe(
    name="grid", number=9, runs_on=RunsOn.GRID, execute="roost.daemons.schedd.gridmanager",
    summary="the job handed to another batch system (grid_resource = batch slurm|sge) or another pool's schedd "
            "(grid_resource = condor <schedd> <pool>) and mirrored here",
    keys=frozenset("grid_resource batch_queue batch_runtime batch_project".split()), early=_early,
    matchmaking=False, checks_executable=False, lease=False, deferral_needs_startd=False,
)

__all__ = ["BATCH_SYSTEMS", "SUPPORTED", "UNIVERSE", "GridResource", "GridResourceError", "parse_grid_resource",
           "supported_text"]
