"""Who runs what: the master's task and worker bookkeeping, pure (no sockets, threads
or clock), so every rule below is tested on its own.

Rules:
- A task waits in a FIFO queue until an idle worker takes it; each worker runs one
  task at a time (a worker job asks for one core).
- A worker that leaves puts its unfinished task back at the *front* of the queue:
  it was handed out first, so the run's tail does not wait for it.
- With ``speculate``, a worker that would otherwise sit idle because the queue is
  empty takes a copy of the oldest task still running elsewhere (at most ``copies``
  runners a task): a slow or silently stuck worker then delays the end of the run
  by one task at most. The first copy to finish gives the result; a later one is
  counted as a duplicate and dropped, so every task is reported exactly once.
- A task whose function raised has failed for good (no retry: the same payload would
  raise again); a task whose worker vanished is never failed, only requeued.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from roost.mw.events import Event, TaskDone, TaskFailed, TaskRequeued, WorkerJoined, WorkerLeft


@dataclass
class _Task:
    payload: Any
    runners: set[str] = field(default_factory=set)
    done: bool = False
    handed_out: int = 0


@dataclass
class _Worker:
    job: str
    host: str
    running: set[int] = field(default_factory=set)


class Ledger:
    """Tasks, workers and which worker runs which task."""

    def __init__(self, speculate: bool = True, copies: int = 2) -> None:
        self.speculate = speculate
        self.copies = max(1, copies)
        self.tasks: dict[int, _Task] = {}
        self.pending: deque[int] = deque()
        self.workers: dict[str, _Worker] = {}
        self.results: dict[int, Any] = {}
        self.errors: dict[int, str] = {}
        #: every job a worker has joined from (a job that leaves without one failed to start)
        self.joined_jobs: set[str] = set()
        self.requeued = 0
        self.duplicates = 0
        self.speculated = 0
        self._running: dict[int, None] = {}  # unfinished tasks with a runner, oldest hand-out first
        self._next_id = 0

    @property
    def unfinished(self) -> int:
        return len(self.tasks) - len(self.results) - len(self.errors)

    def add(self, payload: Any) -> int:
        tid = self._next_id
        self._next_id += 1
        self.tasks[tid] = _Task(payload)
        self.pending.append(tid)
        return tid

    def join(self, worker: str, job: str, host: str) -> list[Event]:
        self.workers[worker] = _Worker(job, host)
        self.joined_jobs.add(job)
        return [WorkerJoined(worker, job, host)]

    def assign(self) -> list[tuple[str, int, Any]]:
        """Give every idle worker a task: ``(worker, task, payload)`` to send."""
        out = []
        for wid, w in self.workers.items():
            if w.running:
                continue
            tid = self._take(wid)
            if tid is None:
                break
            t = self.tasks[tid]
            t.runners.add(wid)
            t.handed_out += 1
            w.running.add(tid)
            self._running.setdefault(tid, None)
            out.append((wid, tid, t.payload))
        return out

    def _take(self, wid: str) -> int | None:
        while self.pending:
            tid = self.pending.popleft()
            if not self.tasks[tid].done:
                return tid
        if not self.speculate:
            return None
        for tid in self._running:
            t = self.tasks[tid]
            if wid not in t.runners and len(t.runners) < self.copies:
                self.speculated += 1
                return tid
        return None

    def finish(self, worker: str, task: int, ok: bool, value: Any) -> list[Event]:
        """A worker's answer for ``task``: the TaskDone/TaskFailed event the first time,
        nothing for a duplicate or for a task this worker was not running."""
        w = self.workers.get(worker)
        if w is None or task not in w.running:
            return []
        w.running.discard(task)
        t = self.tasks[task]
        t.runners.discard(worker)
        if t.done:
            self.duplicates += 1
            return []
        t.done = True
        self._running.pop(task, None)
        if ok:
            self.results[task] = value
            return [TaskDone(task, value, worker)]
        self.errors[task] = str(value)
        return [TaskFailed(task, str(value), worker)]

    def leave(self, worker: str, why: str) -> list[Event]:
        """A worker is gone: its unfinished tasks no one else runs go back to the front."""
        w = self.workers.pop(worker, None)
        if w is None:
            return []
        out: list[Event] = [WorkerLeft(worker, w.job, why)]
        for tid in sorted(w.running, reverse=True):
            t = self.tasks[tid]
            t.runners.discard(worker)
            if t.done or t.runners:
                continue
            self._running.pop(tid, None)
            self.pending.appendleft(tid)
            self.requeued += 1
            out.append(TaskRequeued(tid, worker))
        return out

    def busy(self) -> int:
        return sum(1 for w in self.workers.values() if w.running)
