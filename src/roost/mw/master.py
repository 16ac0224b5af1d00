"""``Master``: hand tasks to worker jobs that come and go (docs/mw.md).

The master listens on a TCP port, submits worker jobs through ``roost.api`` and
keeps their number up; each worker job connects back, proves the master's secret
(``protocol.py``) and runs tasks one at a time. Threads, each simple and blocking:

- one per worker connection: the handshake, then every message from that worker (its
  results and heartbeats); its socket timeout is the heartbeat timeout, so a silent
  worker is noticed in ``timeout`` seconds at most;
- the acceptor; the heartbeat thread (to idle workers only: a busy worker does not
  read, and a long task would otherwise fill its socket's buffer); the keeper, which
  polls the schedd and replaces worker jobs that left the queue (``workerjobs.py``).

All bookkeeping is in the pure ``Ledger``, under one lock; events are queued under the
same lock, so an events() loop never ends before the event of the last task.
"""

from __future__ import annotations

import ast
import inspect
import logging
import os
import secrets
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from roost.api.errors import PoolError
from roost.api.home import read_address, run_path
from roost.api.schedd import Schedd
from roost.mw import protocol
from roost.mw.events import Event, WorkersSubmitted
from roost.mw.ledger import Ledger
from roost.mw.workerjobs import WorkerJobs, worker_description

log = logging.getLogger("roost.mw.master")

HANDSHAKE_TIMEOUT = 10.0  # seconds a connecting peer has to prove the secret
HERE = Path(__file__).resolve().parent
#: sandbox name -> this package's file: what each worker job receives besides the secret
SHIPPED = {"roost_mw_worker.py": HERE / "worker.py", "roost_mw_protocol.py": HERE / "protocol.py"}
KEY_FILE = "roost_mw.key"


class MWError(Exception):
    """The master cannot go on: the task code does not load, the worker jobs fail to
    start, a task failed (``map``), or the master was closed with tasks unfinished."""


def task_code(function: Callable[..., Any] | str, source: str | None) -> tuple[str, str, str]:
    """``(module name, module source, function name)`` for the workers.

    A callable must be defined at the top level of a module whose file Python can read
    (its whole source is shipped; a script's ``if __name__ == "__main__":`` block does
    not run on the worker, whose module has another name). With ``source``,
    ``function`` names a top-level function of that text.
    """
    if callable(function):
        name = function.__name__
        module = sys.modules.get(function.__module__)
        if module is None or getattr(module, name, None) is not function:
            raise MWError(f"{function!r} is not a top-level function of its module: workers cannot find it")
        if source is None:
            try:
                source = inspect.getsource(module)
            except (OSError, TypeError) as e:
                raise MWError(f"cannot read the source of {function.__module__}: {e}") from None
        modname = function.__module__
        if modname == "__main__":
            modname = Path(getattr(module, "__file__", "") or "mw_tasks.py").stem or "mw_tasks"
    else:
        if source is None:
            raise MWError("a function given by name needs its module's source (source=...)")
        name, modname = str(function), "mw_tasks"
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise MWError(f"the task module does not compile: {e}") from None
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if name not in defined:
        raise MWError(f"the task module defines no top-level {name!r}")
    return modname, source, name


def default_host(schedd: Schedd | None) -> str:
    """The address to listen on: the host of the schedd's TCP address (the submit host
    as the pool knows it: the execute side reaches it there), loopback without a pool."""
    if schedd is None:
        return "127.0.0.1"
    address = schedd.address or read_address(run_path(schedd.home_dir, "schedd.address"))
    host = (address or "").rpartition(":")[0].strip("[]<")
    return host or "0.0.0.0"


class Master:
    """Tasks in, results out, on ``workers`` preemptible worker jobs.

    ``function(payload) -> result`` runs in the workers under ``python`` (the execute
    hosts' ``/usr/bin/python3``): its module travels as source text, so it may use the
    standard library and whatever that Python has, never roost. Payloads and results
    are JSON values (floats round-trip exactly).

    ``schedd``: a ``roost.api.Schedd`` (this ROOST_HOME's by default), used from the
    master's keeper thread: give it one of its own. ``workers=0`` submits nothing:
    start workers by hand (docs/mw.md). ``submit_extra`` adds submit commands to the
    worker jobs (``requirements``, ``error = /path/w.$(Cluster).$(Process).err``).
    ``host``/``port``: where to listen (the schedd's host by default); ``advertise``:
    the host name workers dial, when it differs. A worker silent for ``timeout``
    seconds (5 heartbeats by default) is dropped and its task given to another.
    """

    def __init__(self, function: Callable[..., Any] | str, *, source: str | None = None,
                 schedd: Schedd | None = None, workers: int = 4, submit_extra: dict[str, str] | None = None,
                 host: str | None = None, port: int = 0, advertise: str | None = None,
                 python: str = "/usr/bin/python3", heartbeat: float = 2.0, timeout: float | None = None,
                 speculate: bool = True, poll: float = 2.0, max_failed_starts: int | None = None) -> None:
        if workers < 0 or heartbeat <= 0:
            raise ValueError("workers must be >= 0 and heartbeat > 0")
        self.module, self.source, self.function = task_code(function, source)
        self.heartbeat = float(heartbeat)
        self.timeout = float(timeout) if timeout is not None else 5 * self.heartbeat
        if self.timeout <= self.heartbeat:
            raise ValueError("timeout must be longer than the heartbeat")
        self.poll = float(poll)
        self.python = python
        self._cond = threading.Condition()
        self._ledger = Ledger(speculate)
        self._queue: deque[Event] = deque()
        self._channels: dict[str, protocol.Channel] = {}
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._error: MWError | None = None
        self._closing = False
        self._workers_seen = 0
        self._secret = secrets.token_hex(32).encode()
        self.tag = secrets.token_hex(8)  # names this master's jobs; not a secret
        self._own_schedd = schedd is None and workers > 0
        self.schedd = Schedd() if self._own_schedd else schedd
        self._jobs: WorkerJobs | None = None
        self._dir = tempfile.mkdtemp(prefix="roost-mw-")  # 0700: the secret's only copy on disk
        try:
            bind = host if host is not None else default_host(self.schedd if workers else None)
            self._listener = socket.create_server((bind, port), family=_family(bind), backlog=128)
            self.port = int(self._listener.getsockname()[1])
            wildcard = bind in ("", "0.0.0.0", "::")
            self.host = advertise or (socket.getfqdn() if wildcard else bind)
            self._start(self._accept, "accept")
            self._start(self._heartbeats, "heartbeat")
            if workers:
                self._jobs = WorkerJobs(self.schedd, self._worker_description(python, submit_extra), workers,
                                        self.tag, max_failed_starts or max(3, 2 * workers))
                self._submitted(self._jobs.submit(workers))
                self._start(self._keep, "keeper")
        except BaseException:
            self.close()
            raise

    # -- the user's side --------------------------------------------------------------

    def add(self, payload: Any) -> int:
        """Queue one task; its id (0, 1, 2 ... in the order added)."""
        return self.add_many([payload])[0]

    def add_many(self, payloads: Iterable[Any]) -> list[int]:
        """Queue tasks; their ids. TypeError for a payload JSON cannot carry."""
        items = list(payloads)
        for p in items:
            protocol.encode(p)
        with self._cond:
            if self._closing:
                raise MWError("the master is closed")
            ids = [self._ledger.add(p) for p in items]
        self._dispatch()
        return ids

    def events(self, timeout: float | None = None) -> Iterator[Event]:
        """Every event as it happens, until all tasks added so far have finished and
        their events were yielded. MWError if the master cannot go on; TimeoutError
        ``timeout`` seconds after the call."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                while not self._queue:
                    self._raise_if_stuck()
                    if self._ledger.unfinished == 0:
                        return
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise TimeoutError(f"{self._ledger.unfinished} tasks unfinished after {timeout:g} s")
                    self._cond.wait(left)
                ev = self._queue.popleft()
            yield ev

    def wait(self, timeout: float | None = None) -> None:
        """Block until every task added so far has finished (done or failed). The events
        stay queued for events()."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._ledger.unfinished:
                self._raise_if_stuck()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError(f"{self._ledger.unfinished} tasks unfinished after {timeout:g} s")
                self._cond.wait(left)

    def map(self, payloads: Iterable[Any], timeout: float | None = None) -> list[Any]:
        """Run one task per payload and return their results in order; MWError (with the
        traceback) if one raised."""
        ids = self.add_many(payloads)
        self.wait(timeout)
        with self._cond:
            failed = [i for i in ids if i in self._ledger.errors]
            if failed:
                raise MWError(f"task {failed[0]} failed ({len(failed)} in all):\n{self._ledger.errors[failed[0]]}")
            return [self._ledger.results[i] for i in ids]

    def results(self) -> dict[int, Any]:
        """The results so far, by task id."""
        with self._cond:
            return dict(self._ledger.results)

    def failures(self) -> dict[int, str]:
        """The tracebacks of the tasks that raised, by task id."""
        with self._cond:
            return dict(self._ledger.errors)

    def workers(self) -> dict[str, dict[str, Any]]:
        """The workers connected now: ``{worker: {"job", "host", "tasks"}}``."""
        with self._cond:
            return {w: {"job": r.job, "host": r.host, "tasks": sorted(r.running)}
                    for w, r in self._ledger.workers.items()}

    def stats(self) -> dict[str, int]:
        """Counts for a report: tasks, done, failed, workers now, requeued, duplicates ..."""
        with self._cond:
            led = self._ledger
            out = {"tasks": len(led.tasks), "done": len(led.results), "failed": len(led.errors),
                   "workers": len(led.workers), "busy": led.busy(), "workers_joined": self._workers_seen,
                   "requeued": led.requeued, "duplicates": led.duplicates, "speculated": led.speculated}
        if self._jobs is not None:
            out["jobs_submitted"] = self._jobs.submitted
            out["jobs_replaced"] = self._jobs.replaced
        return out

    def write_secret(self, path: str | os.PathLike[str]) -> None:
        """Write the secret to a new file (mode 0600) for a worker started by hand
        (``workers=0``; docs/mw.md): ``roost_mw_worker.py HOST PORT NAME PATH``."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(self._secret)

    def close(self) -> None:
        """Stop: workers are told to leave, worker jobs removed, the secret deleted."""
        with self._cond:
            if self._closing:
                return
            self._closing = True
            channels = list(self._channels.values())
            self._cond.notify_all()
        self._stop.set()
        listener = getattr(self, "_listener", None)
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes accept()
            except OSError:
                pass
            listener.close()
        for ch in channels:
            try:
                ch.send({"t": "bye"})
            except OSError:
                pass
            ch.abort()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=5)
        if self._jobs is not None:
            try:
                self._jobs.remove_all()
            except (PoolError, OSError) as e:
                log.warning("cannot remove the worker jobs (%s): %s", self._jobs.constraint, e)
        if self._own_schedd and self.schedd is not None:
            self.schedd.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Master:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside -------------------------------------------------------------------------

    def _worker_description(self, python: str, extra: dict[str, str] | None) -> dict[str, str]:
        files = []
        for name, src in SHIPPED.items():
            dst = os.path.join(self._dir, name)
            shutil.copyfile(src, dst)
            os.chmod(dst, 0o644)
            files.append(dst)
        key = os.path.join(self._dir, KEY_FILE)
        self.write_secret(key)
        files.append(key)
        return worker_description(python=python, host=self.host, port=self.port, directory=self._dir,
                                  files=files, tag=self.tag, extra=extra)

    def _start(self, target: Callable[..., None], name: str, *args: Any) -> None:
        t = threading.Thread(target=target, args=args, name=f"roost-mw-{name}", daemon=True)
        self._threads.append(t)
        t.start()

    def _emit(self, events: list[Event]) -> None:
        """Queue events; the caller holds the lock."""
        if events:
            self._queue.extend(events)
            self._cond.notify_all()

    def _fail(self, error: MWError) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
                log.error("%s", error)
            self._cond.notify_all()

    def _raise_if_stuck(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closing and self._ledger.unfinished:
            raise MWError(f"the master was closed with {self._ledger.unfinished} tasks unfinished")

    def _submitted(self, jobs: list[str]) -> None:
        if jobs:
            with self._cond:
                self._emit([WorkersSubmitted(tuple(jobs))])

    def _dispatch(self) -> None:
        """Hand idle workers tasks. Sent outside the lock: a slow peer delays only itself
        (its serving thread requeues the task if the send fails)."""
        with self._cond:
            sends = [(self._channels[w], t, p) for w, t, p in self._ledger.assign()]
        for channel, tid, payload in sends:
            try:
                channel.send({"t": "task", "id": tid, "payload": payload})
            except OSError:
                channel.abort()

    def _accept(self) -> None:
        while True:
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return  # closed
            if self._closing:
                sock.close()
                return
            self._start(self._serve, "worker", sock, peer)

    def _serve(self, sock: socket.socket, peer: Any) -> None:
        """One worker's whole life, from its handshake to its leaving."""
        sock.settimeout(HANDSHAKE_TIMEOUT)
        try:
            channel, auth = protocol.master_handshake(sock, self._secret)
        except (OSError, protocol.ProtocolError) as e:
            log.warning("refused a connection from %s: %s", peer, e)
            sock.close()
            return
        with self._cond:
            self._workers_seen += 1
            wid = f"w{self._workers_seen}"
            if not self._closing:
                self._channels[wid] = channel
        why = "disconnected"
        try:
            if self._closing:
                return
            channel.send({"t": "welcome", "worker": wid, "module": self.module, "source": self.source,
                          "function": self.function, "heartbeat": self.heartbeat, "timeout": self.timeout})
            with self._cond:
                self._emit(self._ledger.join(wid, str(auth["job"]), str(auth["host"])))
            log.info("worker %s joined from job %s on %s", wid, auth["job"], auth["host"])
            sock.settimeout(self.timeout)
            self._dispatch()
            while True:
                msg = channel.recv()
                kind = msg["t"]
                if kind == "done" or kind == "failed":
                    value = msg.get("result") if kind == "done" else msg.get("error")
                    with self._cond:
                        self._emit(self._ledger.finish(wid, int(msg["id"]), kind == "done", value))
                    self._dispatch()
                elif kind == "broken":
                    why = "broken"
                    self._fail(MWError(f"worker {wid} (job {auth['job']} on {auth['host']}) cannot load "
                                       f"the task module {self.module}:\n{msg.get('error')}"))
                    return
                elif kind != "hb":
                    raise protocol.ProtocolError(f"unexpected message {kind!r}")
        except TimeoutError:
            why = "silent"
        except protocol.ProtocolError as e:
            why = f"protocol error: {e}"
        except (KeyError, ValueError, TypeError) as e:
            why = f"protocol error: malformed message ({e})"
        except OSError:
            why = "disconnected"
        finally:
            with self._cond:
                self._channels.pop(wid, None)
                why = "closed" if self._closing else why
                left = self._ledger.leave(wid, why)
                self._emit(left)
            sock.close()
            if left:
                log.info("worker %s left (%s); %d tasks requeued", wid, why, len(left) - 1)
            if not self._closing:
                self._dispatch()

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.heartbeat):
            with self._cond:
                idle = [self._channels[w] for w, rec in self._ledger.workers.items()
                        if not rec.running and w in self._channels]
            for channel in idle:
                try:
                    channel.send({"t": "hb"})
                except OSError:
                    channel.abort()

    def _keep(self) -> None:
        assert self._jobs is not None
        while not self._stop.wait(self.poll):
            with self._cond:
                joined = set(self._ledger.joined_jobs)
            try:
                self._submitted(self._jobs.keep(joined))
            except (PoolError, OSError) as e:  # the schedd restarting, say: look again later
                log.warning("cannot look after the worker jobs: %s", e)
                continue
            except Exception as e:  # a replacement the schedd refuses will be refused again
                self._fail(MWError(f"cannot submit worker jobs: {e}"))
                return
            if self._jobs.giving_up:
                self._fail(MWError(
                    f"{self._jobs.failed_in_a_row} worker jobs in a row ended before their worker joined "
                    f"(last: {self._jobs.why_failed()}); can the execute hosts run {self.python} "
                    f"and reach {self.host}:{self.port}? submit_extra={{'error': PATH}} keeps a "
                    "worker's stderr"))
                return


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET
