"""Test-wide settings.

Hypothesis runs derandomized everywhere so CI on a clean clone sees the same
examples as the developer did; a failure found once is found again.

The order of the files, for ``pytest -n 2`` (``make test``): pyproject's addopts
send whole files to the workers (``--dist loadfile``: a module's pool starts on one
worker, once) in the order this conftest sorts them to (``--no-loadscope-reorder``):
the known-slow files first, slowest first, then the other system and integration
files, then the unit tests, which fill in at the end. Load scheduling (xdist's
default) sent the first quarter of the collection, every integration and system
test, to one worker, which ran them alone for most of the run while the other,
done with the unit tests, idled.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "roost",
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("roost")

#: Files under tests/ by their tests' total time (setup, call and teardown), slowest
#: first: ``pytest -n 2 --durations=0`` per directory on a loaded 2-core machine, sums
#: per file (Dec 2026: 99 s down to 16 s). A file not listed runs after these; one
#: that grows slow belongs here, at its place.
SLOW_FIRST = (
    "system/test_faults_hosts.py",
    "system/test_chaos.py",
    "integration/test_annex_slurm.py",
    "system/test_flocking.py",
    "integration/test_grid_sge.py",
    "integration/test_fairshare.py",
    "integration/test_dagman.py",
    "system/test_slurm_hosts.py",
    "integration/test_owner_policy.py",
    "system/test_flocking_three.py",
    "integration/test_recovery.py",
    "integration/test_grid_slurm_faults.py",
    "integration/test_web.py",
    "integration/test_fuzz_ports.py",
    "system/test_parallel_hosts.py",
    "system/test_multihost.py",
    "integration/test_eventlog_reconnect.py",
    "unit/daemons/test_schedd_run.py",
    "system/test_security_hosts.py",
    "unit/daemons/test_startd.py",
    "integration/test_watch.py",
    "integration/test_parallel.py",
    "system/test_fairshare_hosts.py",
    "integration/test_master.py",
    "integration/test_job_commands.py",
    "integration/test_htcondor2_face.py",
    "integration/test_grid_condorc.py",
    "integration/test_local_users.py",
    "integration/test_reserve.py",
    "integration/test_grid_slurm.py",
    "integration/test_execute_shortage.py",
    "integration/test_checkpoint_faults.py",
    "integration/test_spool_transfer.py",
    "integration/test_compat_commands.py",
    "integration/test_condor_cli_fidelity.py",
    "integration/test_bulk_actions.py",
)
_RANK = {name: i for i, name in enumerate(SLOW_FIRST)}
#: after the listed files: the other files of these directories, in this order
_DIRS = ("system", "integration", "unit")


def _order(item: pytest.Item) -> tuple[int, int]:
    rel = item.nodeid.split("::", 1)[0].removeprefix("tests/")
    top = rel.split("/", 1)[0]
    return _RANK.get(rel, len(SLOW_FIRST)), _DIRS.index(top) if top in _DIRS else len(_DIRS)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow files first (see the module docstring); a file's own tests keep their order
    (the sort is stable), which some modules rely on."""
    items.sort(key=_order)
