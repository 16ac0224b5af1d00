"""Which user actions (condor_rm, condor_hold, ...) apply to a job in which status."""

from __future__ import annotations

from roost.vocabulary import JobStatus

#: ACT's actions: condor_rm, condor_hold, condor_release, condor_suspend, condor_continue,
#: condor_vacate_job and condor_vacate_job -fast
ACT_ACTIONS = ("remove", "hold", "release", "suspend", "continue", "vacate", "vacate_fast")


def status_allows(action: str, status: int) -> bool:
    """Whether a user action applies to a job in ``status`` (HTCondor's rules)."""
    if action == "remove":
        return status not in JobStatus.ENDED
    if action == "hold":
        return status == JobStatus.IDLE or status in JobStatus.ON_A_SLOT
    if action == "release":
        return status == JobStatus.HELD
    if action == "suspend":
        return status == JobStatus.RUNNING
    if action == "continue":
        return status == JobStatus.SUSPENDED
    if action in ("vacate", "vacate_fast"):
        return status in (JobStatus.RUNNING, JobStatus.SUSPENDED)
    return False
