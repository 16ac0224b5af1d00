"""MPI under roost's parallel universe: ``openmpiscript``, the job executable that runs
an Open MPI program across a job's nodes (docs/parallel.md). ``python -m roost.mpi``
prints where it is."""

from __future__ import annotations

from pathlib import Path

#: the launcher a parallel job names as its executable (stdlib Python 3 only)
OPENMPI_SCRIPT = str(Path(__file__).with_name("openmpiscript"))

__all__ = ["OPENMPI_SCRIPT"]
