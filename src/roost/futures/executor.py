"""``Executor``: a ``concurrent.futures.Executor`` whose calls run as roost jobs.

Three threads share the work. The caller's ``submit``/``map`` only queue tasks (a
task is one call, or ``chunksize`` calls of a ``map``). A submitter thread takes
whatever has queued up, writes one task file per task and submits them all as one
cluster (so ``[ex.submit(f, x) for x in xs]`` costs a few clusters, not one per
call). A watcher thread follows the executor's user log and settles the futures
of a job when its events arrive: Execute marks them running, Terminated reads the
job's result file, Held and Aborted fail them. The queue is never polled.

Cancelling removes the job (``Schedd.act("remove")``, condor_rm) once every call it
carries is cancelled; unlike a process pool's, a running call can be cancelled too.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor as _BaseExecutor
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import _base as fstates
from dataclasses import dataclass
from typing import Any

import cloudpickle

from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.eventlog import (
    AbortedEvent,
    Event,
    EventLogFollower,
    ExecuteEvent,
    HeldEvent,
    TerminatedEvent,
)
from roost.futures import description as jobdesc
from roost.futures import runner
from roost.futures.outcomes import JobError, JobHeldError, JobRemovedError, exception_from, outcome

log = logging.getLogger(__name__)
_IDS = itertools.count(1)
#: the watcher looks at the log this often at most, and at least this often when idle
_POLL_MIN, _POLL_MAX = 0.005, 0.1
_RETRY_REMOVE_S = 2.0  # how often a failed removal (the pool was away) is tried again


class JobFuture(Future):  # type: ignore[type-arg]
    """A ``Future`` whose call runs in a roost job; ``job_id`` (``"12.3"``) once submitted.

    ``cancel()`` also works while the call runs: its job is removed (when every call
    it carries is cancelled), and the future is cancelled at once.
    """

    def __init__(self, executor: Executor) -> None:
        super().__init__()
        self._executor = executor
        self._task: _Task | None = None
        self.job_id: str | None = None

    def cancel(self) -> bool:
        if not _mark_cancelled(self):
            return False
        self._executor._cancelled([self])
        return True


def _mark_cancelled(f: Future) -> bool:  # type: ignore[type-arg]
    """Cancel ``f`` unless it finished: waiters and callbacks hear of it now."""
    with f._condition:  # type: ignore[attr-defined]
        if f._state == fstates.FINISHED:  # type: ignore[attr-defined]
            return False
        if f._state in (fstates.CANCELLED, fstates.CANCELLED_AND_NOTIFIED):  # type: ignore[attr-defined]
            return True
        f._state = fstates.CANCELLED  # type: ignore[attr-defined]
        f._condition.notify_all()  # type: ignore[attr-defined]
    f.set_running_or_notify_cancel()  # CANCELLED -> CANCELLED_AND_NOTIFIED: wait()/as_completed() see it
    f._invoke_callbacks()  # type: ignore[attr-defined]
    return True


def _settle(f: Future, ok: bool, value: Any) -> None:  # type: ignore[type-arg]
    """Give ``f`` its result or exception, unless it was cancelled meanwhile."""
    try:
        if ok:
            f.set_result(value)
        else:
            f.set_exception(value)
    except InvalidStateError:
        pass


def _start(f: Future) -> None:  # type: ignore[type-arg]
    with f._condition:  # type: ignore[attr-defined]
        if f._state == fstates.PENDING:  # type: ignore[attr-defined]
            f._state = fstates.RUNNING  # type: ignore[attr-defined]


@dataclass
class _Task:
    """One job's worth of calls."""

    name: str
    calls: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
    futures: list[JobFuture]
    job_id: str | None = None
    removing: bool = False

    def __post_init__(self) -> None:
        for f in self.futures:
            f._task = self

    def all_cancelled(self) -> bool:
        return all(f.cancelled() for f in self.futures)


class Executor(_BaseExecutor):
    """Run calls as jobs of the pool at ``home`` ($ROOST_HOME by default).

    ``python``: the interpreter the jobs run (default ``sys.executable``); it must exist
    on the execute hosts, be readable by the job's user, and have the client's minor
    version. ``request_cpus``/``request_memory`` go to every job; ``submit`` adds submit
    commands (``requirements``, ``request_disk``, ``environment`` ...). ``input_files``
    are transferred into every sandbox, which is first on the job's ``sys.path`` (ship
    a package directory this way). ``by_value``: modules whose functions and classes
    are pickled by value (``cloudpickle.register_pickle_by_value``), for code the
    execute host cannot import. ``scratch``: where the executor makes its directory
    (task and result files, the jobs' stdout/stderr, the user log); removed at the end
    unless ``keep_files``.
    """

    def __init__(self, home: str | os.PathLike[str] | None = None, *, python: str | None = None,
                 request_cpus: int = 1, request_memory: int | str | None = None,
                 submit: dict[str, str] | None = None, input_files: Iterable[str] = (),
                 by_value: Iterable[Any] = (), scratch: str | os.PathLike[str] | None = None,
                 keep_files: bool = False) -> None:
        extra = {str(k): str(v) for k, v in (submit or {}).items()}
        reserved = sorted(k for k in extra if k.lower() in jobdesc.RESERVED)
        if reserved:
            raise ValueError(f"submit= may not set {', '.join(reserved)}: the executor sets them")
        if os.geteuid() == 0:
            warnings.warn("roost.futures: root's jobs run as nobody, and any other nobody job on an "
                          "execute host could rewrite a result before it is unpickled here "
                          "(docs/futures.md, 'Whom you trust with results')", RuntimeWarning, stacklevel=2)
        self._python = python or sys.executable
        self._request_cpus = int(request_cpus)
        self._request_memory = None if request_memory is None else str(request_memory)
        self._extra = extra
        self._inputs = [jobdesc.check_path(p, "input file") for p in input_files]
        for module in by_value:
            cloudpickle.register_pickle_by_value(module)
        self._keep = keep_files
        parent = os.fspath(scratch) if scratch is not None else None
        self.directory = jobdesc.check_path(tempfile.mkdtemp(prefix="roost-futures-", dir=parent),
                                            "scratch directory")
        self._shipped = jobdesc.prepare_directory(self.directory)
        self.tag = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._submit_schedd = Schedd(home)
        try:
            self._submit_schedd.connect()  # NoPoolError now rather than in a thread
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self._act_schedd = Schedd(home)
        self._act_lock = threading.Lock()
        self._unremoved: dict[str, str] = {}  # job id -> reason: removals that failed, retried by the watcher
        self._retry_at = 0.0

        self._lock = threading.Lock()  # the queue of tasks not yet submitted, the shutdown flag
        self._work = threading.Condition(self._lock)
        self._pending: list[_Task] = []
        self._shutdown = False
        self._registry = threading.RLock()  # submitter vs watcher vs cancel: the jobs and their tasks
        self._jobs: dict[tuple[int, int], _Task] = {}
        self._inflight: list[_Task] = []  # the batch the submitter has taken, until registered or failed
        self._names = itertools.count()
        self._wake = threading.Event()
        self.clusters: list[int] = []  # every cluster submitted, in order

        n = next(_IDS)
        self._submitter = threading.Thread(target=self._submit_loop, name=f"roost-futures-submit-{n}",
                                           daemon=True)
        self._watcher = threading.Thread(target=self._watch_loop, name=f"roost-futures-watch-{n}",
                                         daemon=True)
        self._submitter.start()
        self._watcher.start()
        atexit.register(self._at_exit)

    # -- the concurrent.futures interface ------------------------------------------------

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> JobFuture:
        """Run ``fn(*args, **kwargs)`` in a job; its future."""
        f = JobFuture(self)
        self._queue([_Task(self._name(), [(fn, args, kwargs)], [f])])
        return f

    def map(self, fn: Callable[..., Any], *iterables: Iterable[Any], timeout: float | None = None,
            chunksize: int = 1) -> Iterator[Any]:
        """``fn`` over the zipped ``iterables``, results in order, all calls in one cluster
        with ``chunksize`` calls a job. Leaving the iterator early (an exception, a
        timeout, ``close()``) cancels the calls not yet returned and removes their jobs."""
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1")
        end = None if timeout is None else time.monotonic() + timeout
        calls = [(fn, tuple(args), {}) for args in zip(*iterables)]
        tasks = []
        futures: list[JobFuture] = []
        for i in range(0, len(calls), chunksize):
            chunk = calls[i:i + chunksize]
            fs = [JobFuture(self) for _ in chunk]
            futures += fs
            tasks.append(_Task(self._name(), list(chunk), fs))
        self._queue(tasks)
        return self._results(futures, end)

    def _results(self, futures: list[JobFuture], end: float | None) -> Iterator[Any]:
        try:
            futures.reverse()  # pop() from the end: each yielded future is let go of
            while futures:
                f = futures[-1]
                value = f.result() if end is None else f.result(end - time.monotonic())
                futures.pop()
                yield value
        finally:
            if futures:
                self.cancel_all(futures)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more calls; ``cancel_futures`` cancels every call not finished (queued,
        idle or running: their jobs are removed); ``wait`` waits until every job has
        left and the executor's directory is cleaned up."""
        with self._lock:
            self._shutdown = True
            dropped = self._pending if cancel_futures else []
            if cancel_futures:
                self._pending = []
            self._work.notify_all()
        if cancel_futures:
            for t in dropped:
                for f in t.futures:
                    _mark_cancelled(f)
            with self._registry:  # submitted, and being submitted (removed once registered)
                live = [f for t in [*self._jobs.values(), *self._inflight] for f in t.futures]
            self.cancel_all(live)
        self._wake.set()
        if wait:
            self._submitter.join()
            self._watcher.join()

    # -- cancelling ----------------------------------------------------------------------

    def cancel_all(self, futures: Iterable[Future]) -> int:  # type: ignore[type-arg]
        """Cancel many futures at once (one removal for all their jobs); how many were
        cancelled (those finished already are not)."""
        mine = [f for f in futures if isinstance(f, JobFuture) and _mark_cancelled(f)]
        if mine:
            self._cancelled(mine)
        return len(mine)

    def _cancelled(self, futures: list[JobFuture]) -> None:
        """Remove the jobs whose calls are all cancelled now (those not submitted yet are
        dropped by the submitter; those being submitted, right after)."""
        ids = []
        tasks = {id(f._task): f._task for f in futures if f._task is not None}
        with self._registry:
            for t in tasks.values():
                if t.job_id is not None and not t.removing and t.all_cancelled():
                    t.removing = True
                    ids.append(t.job_id)
        self._remove(ids, "cancelled (roost.futures)")

    def _remove(self, ids: list[str], reason: str) -> None:
        """Remove jobs; a removal that fails (the pool is down, a timeout) is kept and
        retried by the watcher until it succeeds, so a cancelled call never runs on."""
        if not ids:
            return
        try:
            with self._act_lock:
                self._act_schedd.act("remove", ids, reason=reason)
        except Exception as e:  # cancelling must not fail for it
            log.warning("removing jobs %s: %s (retried)", ", ".join(ids[:5]), e)
            with self._act_lock:
                for i in ids:
                    self._unremoved[i] = reason
        else:
            with self._act_lock:
                for i in ids:
                    self._unremoved.pop(i, None)

    def _retry_removals(self) -> None:
        """The watcher's retry of failed removals, every few seconds."""
        now = time.monotonic()
        with self._act_lock:
            if not self._unremoved or now < self._retry_at:
                return
            self._retry_at = now + _RETRY_REMOVE_S
            by_reason: dict[str, list[str]] = {}
            for i, why in self._unremoved.items():
                by_reason.setdefault(why, []).append(i)
        for why, ids in by_reason.items():
            self._remove(ids, why)

    # -- submitting ----------------------------------------------------------------------

    def _name(self) -> str:
        return f"t{next(self._names)}"

    def _queue(self, tasks: list[_Task]) -> None:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._pending += tasks
            self._work.notify_all()

    def _submit_loop(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._shutdown:
                    self._work.wait()
                if not self._pending:
                    break
                batch, self._pending = self._pending, []
                with self._registry:
                    self._inflight = batch
            try:
                self._submit_batch(batch)
            except BaseException as e:  # nothing a batch does may stop the thread: its futures say why
                log.debug("submitting %d tasks failed", len(batch), exc_info=True)
                for t in batch:
                    for f in t.futures:
                        _settle(f, False, e)
            finally:
                with self._registry:
                    self._inflight = []
                self._wake.set()
        self._wake.set()

    def _submit_batch(self, batch: list[_Task]) -> None:
        ready: list[_Task] = []
        functions: dict[int, bytes] = {}  # each function pickled once a batch (the calls keep it alive)
        for t in batch:
            if t.all_cancelled():
                continue
            try:
                data = runner.encode_calls(t.calls, functions)
                with open(os.path.join(self.directory, t.name + ".in"), "wb") as fh:  # read once submitted
                    fh.write(data)
            except Exception as e:  # an argument that does not pickle fails its calls only
                for f in t.futures:
                    _settle(f, False, e)
                continue
            ready.append(t)
        for t in batch:
            t.calls = []  # the files hold them now (the functions lived until every id() was used)
        if not ready:
            return
        text = jobdesc.batch_text(
            directory=self.directory, python=self._python, tasks=[t.name for t in ready], tag=self.tag,
            shipped=self._shipped, input_files=self._inputs, request_cpus=self._request_cpus,
            request_memory=self._request_memory, extra=self._extra)
        with self._registry:
            result = self._submit_schedd.submit(text)
            cluster, count = result.clusters[0]
            if len(result.clusters) != 1 or count != len(ready):
                raise PoolError(f"submitted {result.clusters}, expected one cluster of {len(ready)} jobs")
            self.clusters.append(cluster)
            for proc, t in enumerate(ready):
                t.job_id = f"{cluster}.{proc}"
                for f in t.futures:
                    f.job_id = t.job_id
                self._jobs[(cluster, proc)] = t
            cancelled = [t for t in ready if t.all_cancelled()]
            for t in cancelled:
                t.removing = True
        self._remove([t.job_id for t in cancelled if t.job_id], "cancelled (roost.futures)")

    # -- watching ------------------------------------------------------------------------

    def _watch_loop(self) -> None:
        follower = EventLogFollower(os.path.join(self.directory, jobdesc.LOG_NAME))
        delay = _POLL_MIN
        try:
            while True:
                events = follower.poll()
                if events:
                    with self._registry:
                        for ev in events:
                            self._on_event(ev)
                    delay = _POLL_MIN
                    continue
                self._retry_removals()
                with self._registry:
                    idle = not self._jobs and not self._inflight
                if idle and self._shutdown and not self._submitter.is_alive():
                    break
                self._wake.wait(delay)
                self._wake.clear()
                delay = min(delay * 2, _POLL_MAX)
        except BaseException:  # the futures must not wait for ever on a dead watcher
            log.exception("roost.futures watcher")
            with self._registry:
                for t in self._jobs.values():
                    for f in t.futures:
                        _settle(f, False, JobError("the executor's watcher failed", t.job_id))
                self._jobs.clear()
        finally:
            self._close()

    def _on_event(self, ev: Event) -> None:
        task = self._jobs.get((ev.cluster, ev.proc))
        if task is None:
            return
        if isinstance(ev, ExecuteEvent):
            for f in task.futures:
                _start(f)
        elif isinstance(ev, TerminatedEvent):
            self._finished(task, ev)
        elif isinstance(ev, HeldEvent):
            err = JobHeldError(f"job {task.job_id} was held: {ev.reason}", task.job_id)
            for f in task.futures:
                _settle(f, False, err)
            if not task.removing:
                task.removing = True
                # the registry lock is held: removing is quick, and the Aborted event waits
                self._remove([task.job_id or ""], "held: roost.futures gave up on it")
        elif isinstance(ev, AbortedEvent):
            err = JobRemovedError(f"job {task.job_id} was removed: {ev.reason}", task.job_id)
            for f in task.futures:
                _settle(f, False, err)
            self._forget(task, ev)

    def _finished(self, task: _Task, ev: TerminatedEvent) -> None:
        base = os.path.join(self.directory, task.name)
        try:
            with open(base + ".result", "rb") as fh:
                got = runner.read_results(fh.read())
        except (OSError, ValueError) as e:
            how = f"exited with code {ev.return_value}" if ev.signal is None else f"was killed by signal {ev.signal}"
            err = JobError(f"job {task.job_id} {how} without a result ({e}); its stderr: "
                           f"{_tail(base + '.stderr')}", task.job_id)
            for f in task.futures:
                _settle(f, False, err)
        else:
            if "fatal" in got:
                exc = exception_from(got["fatal"])
                for f in task.futures:
                    _settle(f, False, exc)
            else:
                entries = got["results"]
                for i, f in enumerate(task.futures):
                    if i < len(entries):
                        _settle(f, *outcome(entries[i]))
                    else:
                        _settle(f, False, JobError(f"job {task.job_id} returned no result for call {i}",
                                                   task.job_id))
        self._forget(task, ev)

    def _forget(self, task: _Task, ev: Event) -> None:
        self._jobs.pop((ev.cluster, ev.proc), None)
        if not self._keep:
            for suffix in (".in", ".result", ".stdout", ".stderr"):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.directory, task.name + suffix))

    # -- the end -------------------------------------------------------------------------

    def _close(self) -> None:
        for s in (self._submit_schedd, self._act_schedd):
            with contextlib.suppress(Exception):
                s.close()
        if not self._keep:
            shutil.rmtree(self.directory, ignore_errors=True)
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        """At interpreter exit, as ``concurrent.futures`` executors do: wait for the calls."""
        self.shutdown(wait=True)


def _tail(path: str, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            text = f.read().decode("utf-8", "replace").strip()
    except OSError as e:
        return f"(unreadable: {e})"
    return text or "(empty)"
