"""The words every part of roost shares: job status codes, slot states and activities,
job event numbers. Each is defined here once, with HTCondor's names and values.

The job statuses, states and activities are plain ``int`` and ``str`` constants
grouped in classes, not ``enum`` members, on purpose: they are written into
ClassAds, SQLite rows and wire messages, and read back by code that checks
``type(v) is int``; an enum member there would be a different type. The
``htcondor2`` face builds its ``IntEnum`` classes from these (``JobStatus``,
``JobEventType``), so a user's ``htcondor2.JobStatus.HELD`` is the same number.

``tests/unit/test_layout.py`` checks that no module outside this one writes a job
status as a bare number or a slot state or activity as a bare string.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final


class JobStatus:
    """A job ad's ``JobStatus`` (HTCondor's numbers)."""

    IDLE: Final = 1
    RUNNING: Final = 2
    REMOVED: Final = 3
    COMPLETED: Final = 4
    HELD: Final = 5
    TRANSFERRING_OUTPUT: Final = 6
    SUSPENDED: Final = 7

    #: the words condor_q and the event log use for each status
    WORDS: Final[dict[int, str]] = {
        1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
        6: "Transferring Output", 7: "Suspended",
    }
    #: the key each status is counted under in a schedd's totals (condor_q's summary
    #: line, where a job transferring its output counts as running)
    TOTALS: Final[dict[int, str]] = {
        1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held", 6: "Running", 7: "Suspended",
    }
    #: condor_q's ST column
    LETTERS: Final[dict[int, str]] = {1: "I", 2: "R", 3: "X", 4: "C", 5: "H", 6: ">", 7: "S"}
    #: the statuses in which the job holds a slot (a shadow runs it)
    ON_A_SLOT: Final = frozenset({2, 6, 7})
    #: the statuses a job leaves the queue in
    ENDED: Final = frozenset({3, 4})

    @staticmethod
    def members() -> dict[str, int]:
        """Name to number, in number order (htcondor2's ``JobStatus`` enum is built from it)."""
        return {k: v for k, v in vars(JobStatus).items() if k.isupper() and type(v) is int}

    @staticmethod
    def word(status: object, default: str = "Idle") -> str:
        """The word for ``status`` (``default`` for a value that is not a status)."""
        return JobStatus.WORDS.get(status, default) if type(status) is int else default


class SlotState:
    """A slot ad's ``State`` (HTCondor's startd states)."""

    OWNER: Final = "Owner"
    UNCLAIMED: Final = "Unclaimed"
    MATCHED: Final = "Matched"
    CLAIMED: Final = "Claimed"
    PREEMPTING: Final = "Preempting"
    BACKFILL: Final = "Backfill"
    DRAINED: Final = "Drained"
    #: condor_status's one-letter state of the -compact and -af:h views
    LETTERS: Final[dict[str, str]] = {
        "Owner": "O", "Unclaimed": "U", "Matched": "M", "Claimed": "C", "Preempting": "P",
        "Shutdown": "S", "Delete": "X", "Backfill": "F", "Drained": "D",
    }
    #: states in which a slot is someone's (a claim holds it or is being made or ended)
    TAKEN: Final = frozenset({"Claimed", "Matched", "Preempting"})


class Activity:
    """A slot ad's ``Activity`` (HTCondor's startd activities)."""

    IDLE: Final = "Idle"
    BUSY: Final = "Busy"
    SUSPENDED: Final = "Suspended"
    RETIRING: Final = "Retiring"
    VACATING: Final = "Vacating"
    KILLING: Final = "Killing"
    BENCHMARKING: Final = "Benchmarking"
    LETTERS: Final[dict[str, str]] = {
        "Idle": "i", "Busy": "b", "Retiring": "r", "Vacating": "v", "Suspended": "s",
        "Benchmarking": "e", "Killing": "k",
    }


#: a slot's state -> the states it may move to (HTCondor's startd state diagram)
SLOT_MOVES: Final[dict[str, frozenset[str]]] = {
    SlotState.OWNER: frozenset({SlotState.UNCLAIMED, SlotState.OWNER, SlotState.DRAINED}),
    SlotState.UNCLAIMED: frozenset({SlotState.OWNER, SlotState.MATCHED, SlotState.CLAIMED, SlotState.DRAINED, SlotState.UNCLAIMED}),
    SlotState.MATCHED: frozenset({SlotState.CLAIMED, SlotState.OWNER, SlotState.UNCLAIMED, SlotState.PREEMPTING}),
    SlotState.CLAIMED: frozenset({SlotState.PREEMPTING, SlotState.CLAIMED, SlotState.UNCLAIMED, SlotState.OWNER}),
    SlotState.PREEMPTING: frozenset({SlotState.UNCLAIMED, SlotState.OWNER, SlotState.CLAIMED, SlotState.PREEMPTING}),
    SlotState.DRAINED: frozenset({SlotState.OWNER, SlotState.UNCLAIMED, SlotState.DRAINED}),
}
#: the states of a slot and the activities each allows (HTCondor's startd state machine)
SLOT_ACTIVITIES: Final[dict[str, frozenset[str]]] = {
    SlotState.OWNER: frozenset({Activity.IDLE}),
    SlotState.UNCLAIMED: frozenset({Activity.IDLE, Activity.BENCHMARKING}),
    SlotState.MATCHED: frozenset({Activity.IDLE}),
    SlotState.CLAIMED: frozenset({Activity.IDLE, Activity.BUSY, Activity.SUSPENDED, Activity.RETIRING}),
    SlotState.PREEMPTING: frozenset({Activity.VACATING, Activity.KILLING}),
    SlotState.DRAINED: frozenset({Activity.IDLE, Activity.RETIRING}),
}


class JobEventType(IntEnum):
    """Job event numbers as written in an event log (HTCondor's, which ``htcondor2``
    offers under this name; roost writes a subset). An enum: events carry it as their
    ``type``, and it goes into ads only as ``int(...)``."""

    SUBMIT = 0
    EXECUTE = 1
    EXECUTABLE_ERROR = 2
    CHECKPOINTED = 3
    JOB_EVICTED = 4
    JOB_TERMINATED = 5
    IMAGE_SIZE = 6
    SHADOW_EXCEPTION = 7
    GENERIC = 8
    JOB_ABORTED = 9
    JOB_SUSPENDED = 10
    JOB_UNSUSPENDED = 11
    JOB_HELD = 12
    JOB_RELEASED = 13
    NODE_EXECUTE = 14
    NODE_TERMINATED = 15
    POST_SCRIPT_TERMINATED = 16
    GLOBUS_SUBMIT = 17
    GLOBUS_SUBMIT_FAILED = 18
    GLOBUS_RESOURCE_UP = 19
    GLOBUS_RESOURCE_DOWN = 20
    REMOTE_ERROR = 21
    JOB_DISCONNECTED = 22
    JOB_RECONNECTED = 23
    JOB_RECONNECT_FAILED = 24
    GRID_RESOURCE_UP = 25
    GRID_RESOURCE_DOWN = 26
    GRID_SUBMIT = 27
    JOB_AD_INFORMATION = 28
    JOB_STATUS_UNKNOWN = 29
    JOB_STATUS_KNOWN = 30
    JOB_STAGE_IN = 31
    JOB_STAGE_OUT = 32
    ATTRIBUTE_UPDATE = 33
    PRESKIP = 34
    CLUSTER_SUBMIT = 35
    CLUSTER_REMOVE = 36
    FACTORY_PAUSED = 37
    FACTORY_RESUMED = 38
    NONE = 39
    FILE_TRANSFER = 40
    RESERVE_SPACE = 41
    RELEASE_SPACE = 42
    FILE_COMPLETE = 43
    FILE_USED = 44
    FILE_REMOVED = 45
    DATAFLOW_JOB_SKIPPED = 46
    COMMON_FILES = 47
    EP_STARTUP = 100
    EP_READY = 101
    EP_RECONFIG = 102
    EP_SHUTDOWN = 103
    EP_REQUEST_CLAIM = 104
    EP_RELEASE_CLAIM = 105
    EP_ACTIVATE_CLAIM = 106
    EP_DEACTIVATE_CLAIM = 107
    EP_VACATE_CLAIM = 108
    EP_DRAIN = 109
    EP_RESOURCE_BREAK = 110
    EP_RESOURCE_MEND = 111
