"""The parallel universe (11): one job on ``machine_count`` hosts at once, its slots
claimed by the schedd's dedicated scheduler (never negotiated job by job) and each node
run by a startd as a plain process (docs/parallel.md)."""

from __future__ import annotations

from roost.universes.base import RunsOn, SubmitBuild, Universe


def _shape(b: SubmitBuild, universe: str) -> None:
    """machine_count hosts, one CPU each unless request_cpus (read after this) says otherwise."""
    key = next((k for k in ("machine_count", "node_count", "NodeCount") if b.get(k) is not None), None)
    if key is None:
        b.error("universe = parallel needs machine_count", "universe")
        return
    text = b.get(key) or ""
    try:
        n = int(text.strip())
    except ValueError:
        b.error(f"machine_count = {text}: expected an integer", "machine_count")
        return
    b.set("MinHosts", n)
    b.set("MaxHosts", n)
    b.set("RequestCpus", 1)
    b.set("WantIOProxy", True)
    b.set("JobRequiresSandbox", True)


UNIVERSE = Universe(
    name="parallel", number=11, runs_on=RunsOn.DEDICATED, execute="roost.daemons.startd.plainjob",
    summary="one job on machine_count hosts at once (MPI), through the dedicated scheduler",
    keys=frozenset(("machine_count", "node_count", "nodecount")), shape=_shape, node_macro=True,
)
