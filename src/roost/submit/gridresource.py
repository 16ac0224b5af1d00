"""What ``grid_resource`` names (issue 30): the grid universe's destinations roost
sends jobs to, checked at submit (an unsupported one refused naming what is
supported) and read again by the schedd's grid manager.

HTCondor's forms: ``batch slurm`` (a batch system the submit host submits to; roost
has tested Slurm, so only Slurm is offered), ``condor <schedd name> <pool's central
manager>`` (another pool's schedd: HTCondor's Condor-C) is read and refused: not built yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: grid_resource types roost sends jobs to, each with what follows the type
SUPPORTED = {"batch": "batch slurm"}
#: batch systems behind ``batch`` (HTCondor's BLAHP names more; these are tested here)
BATCH_SYSTEMS = ("slurm",)
_UNTESTED_BATCH = ("pbs", "sge", "lsf", "condor")

class GridResourceError(ValueError):
    """``grid_resource`` names nothing roost can send a job to; the message lists what it can."""


@dataclass(frozen=True)
class GridResource:
    kind: str  # "batch" or "condor"
    system: str = ""  # batch: "slurm"
    schedd: str = ""  # condor: the remote schedd's name
    pool: str = ""  # condor: the remote pool's central manager

    def __str__(self) -> str:
        if self.kind == "batch":
            return f"batch {self.system}"
        return f"condor {self.schedd} {self.pool}"


def supported_text() -> str:
    return "; ".join(f"'{v}'" for v in SUPPORTED.values())


def parse_grid_resource(text: Any) -> GridResource:
    """``grid_resource``'s value; GridResourceError naming what is supported."""
    words = str(text or "").split()
    if not words:
        raise GridResourceError(f"universe = grid needs grid_resource; supported: {supported_text()}")
    kind = words[0].lower()
    if kind == "batch":
        if len(words) < 2:
            raise GridResourceError(f"grid_resource = {text}: batch names its system; supported: batch slurm")
        system = words[1].lower()
        if system in BATCH_SYSTEMS:
            if len(words) > 2:
                raise GridResourceError(f"grid_resource = {text}: remote batch hosts (user@host) are not supported; "
                                        "the schedd's host must be a Slurm submit host: batch slurm")
            return GridResource("batch", system=system)
        untested = " (not tested here, so not offered)" if system in _UNTESTED_BATCH else ""
        raise GridResourceError(f"grid_resource = {text}: batch system {system!r} is not supported{untested}; "
                                f"supported: {', '.join('batch ' + s for s in BATCH_SYSTEMS)}")
    if kind == "condor":
        if len(words) != 3:
            raise GridResourceError(f"grid_resource = {text}: expected 'condor <schedd name> <pool's central manager>'")
        raise GridResourceError(f"grid_resource = {text}: handing jobs to another pool's schedd (Condor-C) is "
                                f"not supported yet; supported: {supported_text()}")
    raise GridResourceError(f"grid_resource = {text}: type {words[0]!r} is not supported; supported: {supported_text()}")



__all__ = ["BATCH_SYSTEMS", "SUPPORTED", "GridResource", "GridResourceError", "parse_grid_resource", "supported_text"]
