"""Checkpoint traffic scheduling (issue 15): which checkpoint uploads the schedd lets in
now, how fast they may read, and when each job's periodic checkpoint signal goes.

Many jobs of one cluster that checkpoint on the same interval would otherwise all send
their checkpoints at once: the schedd's disk and network see a burst of N uploads every
interval and nothing in between. Three levers flatten it:

- admission: at most ``max_concurrent`` uploads read at once; the others wait (their
  starters' writes block, as the job waits for its upload anyway). The next one is the
  oldest upload of the user with the fewest uploads in flight, ties going to the user
  admitted least recently, so one user's thousand jobs cannot hold the queue against
  another's ten (FIFO within a user);
- a bandwidth budget (bytes per second over all uploads): a token bucket every reader
  draws from before it reads a chunk; ``pace`` says how long to wait first;
- stagger: jobs that share an interval get their checkpoint signals at different phases
  of it (``stagger_offset``, ``next_signal``), so the uploads spread out instead of
  queueing.

Pure: no clock, no sockets; ``now`` is passed in (monotonic seconds for the scheduler,
wall-clock seconds for the signal phases, which must agree across hosts).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

#: seconds of budget the bandwidth bucket holds when full: an idle schedd lets a new
#: upload's first chunk through at once, but never more than this much above the rate
BURST_SECONDS = 0.1


@dataclass
class Upload:
    """One checkpoint upload, queued or in flight."""

    id: int
    job: str
    user: str
    size: int
    queued_at: float
    started_at: float | None = None


class UploadScheduler:
    """Admission and pacing of checkpoint uploads.

    ``max_concurrent`` 0 means no limit on uploads at once; ``bandwidth`` (bytes per
    second over all uploads) 0 means no budget. Call ``request`` when an upload
    arrives, ``admit`` after every request or release (it returns the ids that may
    start now), ``pace`` before reading each chunk, and ``release`` when it ends,
    however it ends (a queued upload whose connection went is released too).
    """

    def __init__(self, max_concurrent: int = 0, bandwidth: float = 0.0, burst: float | None = None) -> None:
        self.max_concurrent = 0
        self.bandwidth = 0.0
        self.burst = 0.0
        self._tokens = 0.0
        self._refilled: float | None = None
        self.configure(max_concurrent, bandwidth, burst)
        self.uploads: dict[int, Upload] = {}
        self._queues: dict[str, deque[int]] = {}  # user -> queued upload ids, oldest first
        self._running_by_user: dict[str, int] = {}
        self._last_admitted: dict[str, int] = {}  # user -> admission sequence number
        self._next_id = 1
        self._admissions = 0
        self.running = 0
        self.peak_running = 0

    def configure(self, max_concurrent: int, bandwidth: float, burst: float | None = None) -> None:
        """New limits (RECONFIG); uploads in flight keep going, a lower limit applies as
        they finish."""
        self.max_concurrent = max(0, int(max_concurrent))
        self.bandwidth = max(0.0, float(bandwidth))
        self.burst = max(0.0, float(burst)) if burst is not None else self.bandwidth * BURST_SECONDS
        self._tokens = min(self._tokens, self.burst) if self._refilled is not None else self.burst

    # -- admission -----------------------------------------------------------------------
    @property
    def queued(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def request(self, job: str, user: str, size: int, now: float) -> int:
        """An upload arrives; its id. It starts once ``admit`` returns that id."""
        uid = self._next_id
        self._next_id += 1
        self.uploads[uid] = Upload(uid, job, user, max(0, size), now)
        self._queues.setdefault(user, deque()).append(uid)
        return uid

    def _free(self) -> bool:
        return self.max_concurrent == 0 or self.running < self.max_concurrent

    def admit(self, now: float) -> list[int]:
        """The queued uploads that start now, in the order they were chosen."""
        started: list[int] = []
        while self._queues and self._free():
            user = min(
                self._queues,
                key=lambda u: (self._running_by_user.get(u, 0), self._last_admitted.get(u, -1),
                               self._queues[u][0]),
            )
            q = self._queues[user]
            uid = q.popleft()
            if not q:
                del self._queues[user]
            up = self.uploads[uid]
            up.started_at = now
            self.running += 1
            self.peak_running = max(self.peak_running, self.running)
            self._running_by_user[user] = self._running_by_user.get(user, 0) + 1
            self._admissions += 1
            self._last_admitted[user] = self._admissions
            started.append(uid)
        return started

    def release(self, uid: int, now: float) -> Upload | None:
        """The upload ended (stored, failed, or its starter went while it waited): its
        place goes to the next one at the following ``admit``."""
        up = self.uploads.pop(uid, None)
        if up is None:
            return None
        if up.started_at is None:
            q = self._queues.get(up.user)
            if q is not None:
                try:
                    q.remove(uid)
                except ValueError:
                    pass
                if not q:
                    del self._queues[up.user]
        else:
            self.running -= 1
            left = self._running_by_user.get(up.user, 0) - 1
            if left > 0:
                self._running_by_user[up.user] = left
            else:
                self._running_by_user.pop(up.user, None)
        if not self._queues and not self.running:
            self._last_admitted.clear()  # an idle scheduler forgets who went last
        return up

    # -- bandwidth -------------------------------------------------------------------------
    def pace(self, nbytes: int, now: float) -> float:
        """Seconds a reader must wait before reading its next ``nbytes``; the bytes are
        counted against the budget at once, so concurrent readers queue behind each
        other and the sum over all of them stays within the rate (plus one burst)."""
        if self.bandwidth <= 0:
            return 0.0
        if self._refilled is None:
            self._refilled = now
        elif now > self._refilled:
            self._tokens = min(self.burst, self._tokens + (now - self._refilled) * self.bandwidth)
            self._refilled = now
        self._tokens -= max(0, nbytes)
        return 0.0 if self._tokens >= 0 else -self._tokens / self.bandwidth


# -- staggered periodic checkpoint signals ----------------------------------------------------
def stagger_offset(taken: Iterable[float], interval: float) -> float:
    """The phase (0 <= offset < interval) for one more job on ``interval``, given the
    phases the cluster's running jobs already have: the middle of the widest gap between
    them (on the circle of one interval), so the running jobs stay spread however they
    come and go. The first job gets 0; ties go to the earliest gap."""
    if interval <= 0:
        return 0.0
    points = sorted({o % interval for o in taken})
    if not points:
        return 0.0
    best_start, best_gap = points[-1], points[0] + interval - points[-1]  # the gap that wraps
    for a, b in zip(points, points[1:], strict=False):
        if b - a > best_gap + 1e-9 or (abs(b - a - best_gap) <= 1e-9 and a < best_start):
            best_start, best_gap = a, b - a
    return (best_start + best_gap / 2) % interval


def next_signal(since: float, interval: float, offset: float | None) -> float:
    """When (wall-clock seconds) to send the next periodic checkpoint signal, ``since``
    the run's start or the last signal. Without an offset, one interval later (HTCondor's
    ``time() - LastPeriodicCheckpoint > interval``). With one, the first time on the
    job's phase (``t = offset + k * interval``, in absolute time, so jobs that started
    together still spread out) at least half an interval after ``since``: the first
    checkpoint comes 0.5 to 1.5 intervals into a run, then one every interval."""
    if interval <= 0:
        return math.inf
    if offset is None:
        return since + interval
    k = math.ceil((since + interval / 2 - offset) / interval)
    return offset + k * interval


__all__ = ["BURST_SECONDS", "Upload", "UploadScheduler", "next_signal", "stagger_offset"]
