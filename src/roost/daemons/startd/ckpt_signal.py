"""Periodic checkpoint signals: HTCondor's ``WantCheckpointSignal`` for vanilla jobs.

A job that asks for it (``+WantCheckpointSignal = true``, ``+CheckpointSig = "SIGUSR2"``,
and roost's ``+CheckpointInterval = <seconds>``) is sent its checkpoint signal every
interval while it runs; it writes its checkpoint and exits with its checkpoint code, and
the starter's restart-in-place path sends the checkpoint and starts it again. The first
signal goes at the job's phase, ``CheckpointStaggerOffset``, which the schedd chose so
that the jobs of one cluster on the same interval spread across it (their uploads then
do not all arrive at once); without one, one interval after the start, as HTCondor's
``time() - LastPeriodicCheckpoint > interval``. The signal goes to the job's own process
only (HTCondor's ``Send_Signal(JobPid)``): its children keep SIGUSR2's default action
(death) otherwise. A tick that finds the job suspended, leaving or between runs (its
checkpoint on the way) is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable

from roost.core.ckptsched import next_signal
from roost.daemons.startd.jobspec import JobSpec

log = logging.getLogger(__name__)

#: the shortest interval honoured (seconds): a job asking for 1e-6 must not make the
#: startd spin signalling it
MIN_INTERVAL = 1.0


def start(spec: JobSpec, running_pid: Callable[[], int | None],
          run_started: Callable[[], float] = lambda: 0.0) -> asyncio.Task[None] | None:
    """The signal task for ``spec`` (cancel it when the job's run ends); None when the job
    asks for no periodic signal. ``running_pid``: the job's pid while it runs and may be
    signalled, else None; ``run_started``: when its current run (or restart in place)
    began: a run younger than half an interval is not signalled (it may not have set up
    its handler yet, and the signal's default action would kill it)."""
    if spec.checkpoint_signal is None or spec.checkpoint_interval <= 0:
        return None
    return asyncio.get_running_loop().create_task(
        _tick(spec, running_pid, run_started), name=f"checkpoint signal {spec.job_id}")


async def _tick(spec: JobSpec, running_pid: Callable[[], int | None], run_started: Callable[[], float]) -> None:
    sig, offset = spec.checkpoint_signal, spec.checkpoint_stagger_offset
    interval = max(spec.checkpoint_interval, MIN_INTERVAL)
    assert sig is not None
    since = time.time()
    while True:
        at = next_signal(since, interval, offset)
        await asyncio.sleep(max(0.0, at - time.time()))
        pid = running_pid()
        if pid is None or time.time() - run_started() < interval / 2:
            log.debug("job %s: checkpoint signal skipped (the job is not running now, or just began)", spec.job_id)
        else:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                log.info("job %s: checkpoint signal %d sent (every %g s%s)", spec.job_id, sig, interval,
                         "" if offset is None else f", phase {offset:g} s")
        since = max(at, time.time())  # never behind the clock: no burst of late ticks


__all__ = ["start"]
