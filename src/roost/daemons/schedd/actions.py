"""Which user actions (condor_rm, condor_hold, ...) apply to a job in which status."""

from __future__ import annotations

from roost.core.jobpolicy import COMPLETED, HELD, IDLE, REMOVED, RUNNING

#: ACT's actions: condor_rm, condor_hold, condor_release, condor_suspend, condor_continue,
#: condor_vacate_job and condor_vacate_job -fast
ACT_ACTIONS = ("remove", "hold", "release", "suspend", "continue", "vacate", "vacate_fast")


def status_allows(action: str, status: int) -> bool:
    """Whether a user action applies to a job in ``status`` (HTCondor's rules)."""
    if action == "remove":
        return status != REMOVED and status != COMPLETED
    if action == "hold":
        return status in (IDLE, RUNNING, 6, 7)
    if action == "release":
        return status == HELD
    if action == "suspend":
        return status == RUNNING
    if action == "continue":
        return status == 7
    if action in ("vacate", "vacate_fast"):
        return status in (RUNNING, 7)
    return False
