"""The scheduler universe (7): like local, the schedd runs the job as its child at once;
the job also gets a connection to its schedd (``$ROOST_SCHEDD_FD``), over which a DAG's
manager submits its nodes as the job's owner (docs/dagman.md)."""

from __future__ import annotations

from roost.universes.base import RunsOn, Universe

UNIVERSE = Universe(
    name="scheduler", number=7, runs_on=RunsOn.SCHEDD, execute="roost.daemons.schedd.localuniverse",
    summary="a manager (DAGMan) run by the schedd, with a connection to it",
    transfers_files=False, lease=False, schedd_channel=True,
)
