"""Which user actions (condor_rm, condor_hold, ...) apply to a job in which status:
the job state table's (``roost.core.jobstates``)."""

from __future__ import annotations

from roost.core.jobstates import USER_ACTIONS, allows

#: ACT's actions: condor_rm, condor_hold, condor_release, condor_suspend, condor_continue,
#: condor_vacate_job and condor_vacate_job -fast
ACT_ACTIONS = tuple(USER_ACTIONS)

status_allows = allows
