"""Master-worker computing on a roost pool (docs/mw.md): a master in this process
hands tasks to worker jobs that join and leave as the pool gives and takes slots.

    from roost.mw import Master
    with Master(evaluate, workers=8) as m:     # evaluate: a top-level function
        results = m.map(grid)                  # JSON payloads in, JSON results out

``Master.events()`` reports workers joining and leaving and tasks finishing, failing
and going back to the queue (``roost.mw.events``).
"""

from __future__ import annotations

from roost.mw.events import (
    Event,
    TaskDone,
    TaskFailed,
    TaskRequeued,
    WorkerJoined,
    WorkerLeft,
    WorkersSubmitted,
)
from roost.mw.master import Master, MWError

__all__ = ["Event", "MWError", "Master", "TaskDone", "TaskFailed", "TaskRequeued", "WorkerJoined",
           "WorkerLeft", "WorkersSubmitted"]
