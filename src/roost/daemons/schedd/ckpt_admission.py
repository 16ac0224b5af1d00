"""The schedd's checkpoint traffic scheduler at work (issue 15; docs/reliability.md).

PUT_CHECKPOINT waits here for admission before it reads a byte (the starter's write
blocks meanwhile, and the job waits for its upload, as in HTCondor), reads each chunk
when the bandwidth budget allows, and gives its place back however it ends. The
decisions are ``roost.core.ckptsched``'s; this module holds the futures, the clock and
the knobs, and writes one log line per upload (queued, start and end times, bytes),
which is the record the bench and the tests read.

It also gives each job that asks for periodic checkpoint signals its phase
(``CheckpointStaggerOffset`` in the activation ad): the middle of the widest gap left
by the running jobs of its cluster on the same ``CheckpointInterval``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from roost.config import Config
from roost.core.ckptsched import UploadScheduler, stagger_offset
from roost.daemons.schedd.jobqueue import Job

log = logging.getLogger("roost.schedd")

MB = 1_000_000  # CHECKPOINT_UPLOAD_BANDWIDTH is in MB/s, as HTCondor's transfer knobs


class Ticket:
    """One admitted upload: ``pace`` before each read, ``release`` at the end."""

    def __init__(self, admission: CheckpointAdmission, uid: int, job_id: str, queued: float) -> None:
        self.admission = admission
        self.uid = uid
        self.job_id = job_id
        self.queued = queued
        self.started = time.time()
        self.bytes = 0
        self._released = False

    async def pace(self, nbytes: int) -> None:
        """Wait until the bandwidth budget allows the next ``nbytes``."""
        self.bytes += nbytes
        delay = self.admission.sched.pace(nbytes, time.monotonic())
        if delay > 0:
            await asyncio.sleep(delay)

    def release(self, ok: bool) -> None:
        if self._released:
            return
        self._released = True
        self.admission._release(self.uid)
        log.info("job %s: checkpoint upload queued %.6f start %.6f end %.6f bytes %d %s",
                 self.job_id, self.queued, self.started, time.time(), self.bytes, "ok" if ok else "failed")


class CheckpointAdmission:
    """Admission and pacing of PUT_CHECKPOINT uploads, and the signal phases."""

    def __init__(self, max_concurrent: int = 0, bandwidth_mb: float = 0.0, stagger: bool = True) -> None:
        self.sched = UploadScheduler(max_concurrent, bandwidth_mb * MB)
        self.stagger = stagger
        self._waiting: dict[int, asyncio.Future[None]] = {}
        #: job id -> (cluster, interval, offset) of the jobs given a phase
        self._phases: dict[str, tuple[int, float, float]] = {}

    @classmethod
    def from_config(cls, cfg: Config) -> CheckpointAdmission:
        a = cls()
        a.configure(cfg)
        return a

    def configure(self, cfg: Config) -> None:
        """The knobs (at start and on RECONFIG)."""
        limit = cfg.get_int("MAX_CONCURRENT_CHECKPOINT_UPLOADS", 10)
        bandwidth = cfg.get_float("CHECKPOINT_UPLOAD_BANDWIDTH", 0.0)
        self.sched.configure(max(0, limit or 0), max(0.0, bandwidth or 0.0) * MB)
        self.stagger = cfg.get_bool("CHECKPOINT_STAGGER", True) is not False
        self._dispatch()

    async def admit(self, job_id: str, user: str, size: int) -> Ticket:
        """Wait for this upload's turn. Cancelled (the connection went), it leaves the queue."""
        queued = time.time()
        uid = self.sched.request(job_id, user, size, time.monotonic())
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting[uid] = fut
        self._dispatch()
        if not fut.done():
            log.debug("job %s: checkpoint upload waits (%d in flight, %d queued)",
                      job_id, self.sched.running, self.sched.queued)
        try:
            await fut
        except BaseException:
            self._release(uid)
            raise
        finally:
            self._waiting.pop(uid, None)
        return Ticket(self, uid, job_id, queued)

    def _release(self, uid: int) -> None:
        self.sched.release(uid, time.monotonic())
        self._dispatch()

    def _dispatch(self) -> None:
        for uid in self.sched.admit(time.monotonic()):
            fut = self._waiting.get(uid)
            if fut is not None and not fut.done():
                fut.set_result(None)

    # -- staggered checkpoint signals ----------------------------------------------------------
    def activation_attrs(self, job: Job, live: Callable[[tuple[int, int]], bool]) -> dict[str, Any]:
        """What the activation ad adds for ``job``: its phase, when it asks for periodic
        checkpoint signals (``WantCheckpointSignal`` and a numeric ``CheckpointInterval``)
        and staggering is on. ``live``: whether a job (cluster, proc) still runs or is
        being started (the jobs of one match cycle are activated together: none of them
        is Running yet when the next asks)."""
        interval = job.get("CheckpointInterval")
        if not self.stagger or job.get("WantCheckpointSignal") is not True \
                or isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval <= 0:
            return {}
        phases = self._phases
        for jid, (cluster, _i, _o) in list(phases.items()):  # jobs no longer running leave their gap
            if not live((cluster, int(jid.partition(".")[2]))) and jid != job.id:
                del phases[jid]
        taken = [o for jid, (c, i, o) in phases.items()
                 if c == job.cluster.id and i == float(interval) and jid != job.id]
        offset = round(stagger_offset(taken, float(interval)), 3)
        phases[job.id] = (job.cluster.id, float(interval), offset)
        return {"CheckpointStaggerOffset": offset}


__all__ = ["CheckpointAdmission", "Ticket"]
