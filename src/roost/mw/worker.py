"""The worker program: connect to the master, prove the secret, run tasks until told
to stop (or until the master is gone).

Standard library only and no roost import: the master ships this file and
``protocol.py`` (as ``roost_mw_worker.py`` and ``roost_mw_protocol.py``) into each
worker job's sandbox, and the job runs::

    /usr/bin/python3 roost_mw_worker.py HOST PORT JOB_ID [KEY_FILE]

``KEY_FILE`` (default ``roost_mw.key`` in the sandbox) holds the master's secret; the
worker reads it and deletes it at once, so it stays in the sandbox for milliseconds.
The secret travels as a file, not in the job's environment or arguments, because those
are attributes of the job ad that anyone allowed to query the queue may read.

The task code arrives in the master's first (authenticated) message as the source text
of a module; the worker runs it as a module of that name and calls its function with
each task's payload. While a task runs, a thread sends a heartbeat every few seconds,
so the master can tell a busy worker from a dead one; the worker leaves when the master
has been silent for the timeout it gave, or closes.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

if __package__:  # imported as roost.mw.worker (the tests, the master's checks)
    from roost.mw import protocol
else:  # run as a script in a job's sandbox, its protocol beside it
    import roost_mw_protocol as protocol  # type: ignore[import-not-found, no-redef]

KEY_FILE = "roost_mw.key"
CONNECT_FOR = 60.0  # seconds a worker keeps trying to reach its master before it gives up

# exit codes: a job that ends is replaced by the master; these say why in its history
EXIT_BYE, EXIT_MASTER_LOST, EXIT_NO_MASTER, EXIT_REFUSED, EXIT_BROKEN = 0, 0, 3, 4, 5


def read_key(path: str) -> bytes:
    """The secret, and the file gone: another job running as the same user may be able
    to read this sandbox; it should find nothing there."""
    with open(path, "rb") as f:
        key = f.read().strip()
    try:
        os.unlink(path)
    except OSError:
        pass
    return key


def connect(host: str, port: int, patience: float = CONNECT_FOR) -> socket.socket:
    """A connection to the master, retried with back-off for ``patience`` seconds (a
    master busy accepting a crowd of workers may refuse a few for a moment)."""
    deadline = time.monotonic() + patience
    delay = 0.1
    while True:
        try:
            return socket.create_connection((host, port), timeout=10.0)
        except OSError:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def load_function(source: str, module: str, function: str) -> Callable[[Any], Any]:
    """The task function: ``source`` run as module ``module`` (registered in
    ``sys.modules`` so that pickle, dataclasses and the like find it)."""
    mod = types.ModuleType(module)
    mod.__file__ = f"<roost-mw {module}>"
    sys.modules[module] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    fn = getattr(mod, function, None)
    if not callable(fn):
        raise LookupError(f"module {module} has no function {function!r}")
    return fn  # type: ignore[no-any-return]


def _beat(channel: protocol.Channel, every: float, stop: threading.Event) -> None:
    while not stop.wait(every):
        try:
            channel.send({"t": "hb"})
        except (OSError, ValueError):
            return  # the main loop sees the connection end


def serve(sock: socket.socket, secret: bytes, job: str, host: str) -> int:
    """Run tasks from the master on ``sock`` until it says bye or is gone; the exit code."""
    channel = protocol.worker_handshake(sock, secret, job, host)
    try:
        welcome = channel.recv()  # the master's proof: a bad MAC raises before any code runs
    except ConnectionError:
        raise protocol.ProtocolError("the master hung up on the handshake: a wrong secret?") from None
    if welcome.get("t") != "welcome":
        raise protocol.ProtocolError(f"expected welcome, got {welcome.get('t')!r}")
    try:
        fn = load_function(str(welcome["source"]), str(welcome["module"]), str(welcome["function"]))
    except Exception:  # the user's code: say why to the master, which stops (a replacement would fail alike)
        channel.send({"t": "broken", "error": traceback.format_exc(limit=20)})
        return EXIT_BROKEN
    sock.settimeout(float(welcome["timeout"]))
    stop = threading.Event()
    threading.Thread(target=_beat, args=(channel, float(welcome["heartbeat"]), stop), daemon=True).start()
    try:
        while True:
            try:
                msg = channel.recv()
            except (OSError, ConnectionError):
                return EXIT_MASTER_LOST  # gone or silent past the timeout: the job ends, nothing lost
            kind = msg["t"]
            if kind == "task":
                channel.send(run_task(fn, msg["id"], msg.get("payload")))
            elif kind == "bye":
                return EXIT_BYE
    finally:
        stop.set()


def run_task(fn: Callable[[Any], Any], task_id: Any, payload: Any) -> dict[str, Any]:
    """The message that answers one task: its result, or the traceback it raised."""
    start = time.perf_counter()
    try:
        result = fn(payload)
        protocol.encode(result)  # a result JSON cannot carry is the task's failure
    except Exception:
        return {"t": "failed", "id": task_id, "error": traceback.format_exc(limit=20)}
    return {"t": "done", "id": task_id, "result": result, "seconds": time.perf_counter() - start}


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print("usage: roost_mw_worker.py HOST PORT JOB_ID [KEY_FILE]", file=sys.stderr)
        return 2
    host, port, job = argv[0], int(argv[1]), argv[2]
    secret = read_key(argv[3] if len(argv) == 4 else KEY_FILE)
    try:
        sock = connect(host, port)
    except OSError as e:
        print(f"roost mw worker {job}: cannot reach the master at {host}:{port}: {e}", file=sys.stderr)
        return EXIT_NO_MASTER
    try:
        return serve(sock, secret, job, socket.gethostname())
    except protocol.ProtocolError as e:
        print(f"roost mw worker {job}: {e}", file=sys.stderr)
        return EXIT_REFUSED
    except (OSError, ConnectionError) as e:
        print(f"roost mw worker {job}: the master went away: {e}", file=sys.stderr)
        return EXIT_MASTER_LOST
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
