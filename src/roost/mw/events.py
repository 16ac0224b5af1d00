"""What a master reports as it happens: workers joining and leaving, tasks finishing,
failing and going back to the queue, worker jobs submitted.

Plain frozen dataclasses: compare them with ``isinstance`` or ``match``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class WorkerJoined:
    """A worker proved the secret and takes tasks. ``job`` is the pool job it runs in
    (as the worker says; an evicted job that runs again joins as a new worker)."""

    worker: str
    job: str
    host: str


@dataclass(frozen=True)
class WorkerLeft:
    """A worker is gone: ``why`` is ``disconnected`` (its job was vacated, evicted,
    removed, or its host died), ``silent`` (no heartbeat within the timeout: a cut
    network, a stopped process), ``protocol error: ...``, ``broken`` or ``closed``."""

    worker: str
    job: str
    why: str


@dataclass(frozen=True)
class TaskDone:
    """A task's result: reported once per task, whichever copy finished first."""

    task: int
    result: Any
    worker: str


@dataclass(frozen=True)
class TaskFailed:
    """The task function raised (``error`` is its traceback); not retried: the same
    payload would raise again."""

    task: int
    error: str
    worker: str


@dataclass(frozen=True)
class TaskRequeued:
    """A worker left before finishing ``task``; it goes to the front of the queue."""

    task: int
    worker: str


@dataclass(frozen=True)
class WorkersSubmitted:
    """Worker jobs submitted to keep the pool's share at the number asked for: at the
    start, and to replace jobs that left the queue."""

    jobs: tuple[str, ...]


Event = WorkerJoined | WorkerLeft | TaskDone | TaskFailed | TaskRequeued | WorkersSubmitted
