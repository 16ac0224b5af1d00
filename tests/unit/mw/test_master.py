"""A master with workers started by hand (``workers=0``: no pool), each worker the
shipped script run by the system's ``/usr/bin/python3`` from a directory of its own,
as in a job's sandbox: it must not need roost. What a user would see: results right
and counted once when a worker is killed or stops answering, failures reported, the
task code checked, strangers refused."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roost.mw import Master, MWError, TaskDone, TaskFailed, TaskRequeued, WorkerJoined, WorkerLeft
from roost.mw.master import SHIPPED, task_code

PYTHON = "/usr/bin/python3"
pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"workers run under {PYTHON}")

TASKS = '''
import os, time

def run(p):
    """Twice x; a payload naming a marker file sleeps the first time it runs (whoever
    creates the file), so a test knows which worker is stuck on it."""
    once = p.get("once")
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL))
            time.sleep(60)
        except FileExistsError:
            pass
    if p.get("raise"):
        raise ValueError("bad payload " + str(p["x"]))
    return p["x"] * 2
'''


class Workers:
    """Worker processes for one master, each as a job would run it."""

    def __init__(self, master: Master, where: Path) -> None:
        self.master = master
        self.dir = where / "sandbox"
        self.dir.mkdir()
        for name, src in SHIPPED.items():
            shutil.copyfile(src, self.dir / name)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, job: str, secret: bytes | None = None) -> subprocess.Popen[bytes]:
        key = self.dir / f"key.{job}"
        if secret is None:
            self.master.write_secret(key)
        else:
            key.write_bytes(secret)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # no PYTHONPATH: roost is not reachable
        p = subprocess.Popen([PYTHON, "-B", "roost_mw_worker.py", self.master.host, str(self.master.port), job,
                              str(key)], cwd=self.dir, env=env, stderr=subprocess.PIPE)
        self.procs[job] = p
        return p

    def stop_all(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.wait()
            if p.stderr:
                p.stderr.close()


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Any]:
    made: list[tuple[Master, Workers]] = []

    def factory(**kw: Any) -> tuple[Master, Workers]:
        m = Master("run", source=TASKS, workers=0, heartbeat=0.2, **kw)
        w = Workers(m, tmp_path)
        made.append((m, w))
        return m, w

    yield factory
    for m, w in made:
        m.close()
        w.stop_all()


def _wait_stuck(m: Master, task: int, marker: Path, timeout: float = 20) -> str:
    """The worker stuck in ``task``, once it is (it made the marker: it runs the sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists():
            running = [w for w, info in m.workers().items() if task in info["tasks"]]
            assert len(running) == 1, m.workers()
            return running[0]
        time.sleep(0.01)
    raise AssertionError(f"no worker ran task {task} within {timeout} s: {m.workers()}")


def test_tasks_run_and_a_killed_workers_task_is_done_by_another(make: Any, tmp_path: Path) -> None:
    m, w = make(speculate=False)
    stuck = m.add({"x": -1, "once": str(tmp_path / "once")})
    ids = m.add_many({"x": i} for i in range(200))
    for i in range(3):
        w.start(f"7.{i}")
    wid = _wait_stuck(m, stuck, tmp_path / "once")
    victim = m.workers()[wid]["job"]
    w.procs[victim].kill()
    seen: list[Any] = list(m.events(timeout=30))
    assert m.results() == {stuck: -2, **{t: 2 * i for i, t in enumerate(ids)}}
    done = [e.task for e in seen if isinstance(e, TaskDone)]
    assert sorted(done) == sorted([stuck, *ids])  # each reported once
    left = [e for e in seen if isinstance(e, WorkerLeft)]
    assert [(e.job, e.why) for e in left] == [(victim, "disconnected")]
    assert [e.task for e in seen if isinstance(e, TaskRequeued)] == [stuck]
    joined = {e.job for e in seen if isinstance(e, WorkerJoined)}
    # on a loaded machine the last worker may start after the 200 tasks are done: the
    # victim and another (which did its task) joined, and nobody else
    assert victim in joined and len(joined) >= 2 and joined <= {"7.0", "7.1", "7.2"}, joined
    assert m.stats()["requeued"] == 1 and m.stats()["duplicates"] == 0


def test_a_silent_worker_is_dropped_within_the_timeout_and_its_task_redone(make: Any, tmp_path: Path) -> None:
    """A stopped process (as a cut network) sends nothing, not even an end of file:
    only the heartbeat timeout notices it."""
    m, w = make(speculate=False, timeout=1.0)
    stuck = m.add({"x": 5, "once": str(tmp_path / "once")})
    w.start("1.0")
    wid = _wait_stuck(m, stuck, tmp_path / "once")
    w.procs["1.0"].send_signal(signal.SIGSTOP)
    w.start("1.1")
    events = list(m.events(timeout=30))
    assert WorkerLeft(wid, "1.0", "silent") in events
    assert TaskRequeued(stuck, wid) in events
    assert m.results() == {stuck: 10}


def test_speculation_finishes_the_tail_without_waiting_for_a_stuck_worker(make: Any, tmp_path: Path) -> None:
    m, w = make(timeout=60.0)  # the stuck worker would be noticed only after a minute
    stuck = m.add({"x": 3, "once": str(tmp_path / "once")})
    w.start("1.0")
    _wait_stuck(m, stuck, tmp_path / "once")
    w.start("1.1")
    m.wait(timeout=20)
    assert m.results() == {stuck: 6}
    assert m.stats()["speculated"] == 1


def test_a_raising_task_is_reported_with_its_traceback_and_the_rest_go_on(make: Any) -> None:
    m, w = make()
    w.start("1.0")
    bad = m.add({"x": 4, "raise": True})
    good = m.add({"x": 4})
    events = list(m.events(timeout=20))
    failed = [e for e in events if isinstance(e, TaskFailed)]
    assert [e.task for e in failed] == [bad] and "ValueError: bad payload 4" in failed[0].error
    assert m.results() == {good: 8} and set(m.failures()) == {bad}
    with pytest.raises(MWError, match="ValueError: bad payload 1"):
        m.map([{"x": 0}, {"x": 1, "raise": True}], timeout=20)
    assert m.map([{"x": 1}, {"x": 2}], timeout=20) == [2, 4]


def test_task_code_that_does_not_load_on_the_worker_stops_the_master(tmp_path: Path) -> None:
    m = Master("run", source="import no_such_module_here\ndef run(p):\n    return p\n", workers=0, heartbeat=0.2)
    w = Workers(m, tmp_path)
    try:
        m.add(1)
        w.start("1.0")
        with pytest.raises(MWError, match="cannot load the task module(.|\n)*no_such_module_here"):
            m.wait(timeout=20)
        assert w.procs["1.0"].wait(10) == 5
    finally:
        m.close()
        w.stop_all()


def test_a_peer_without_the_secret_is_refused_and_a_stranger_gets_nothing(make: Any) -> None:
    m, w = make()
    impostor = w.start("6.6", secret=b"guessed")
    assert impostor.wait(20) == 4  # refused: its exit code says so
    assert impostor.stderr is not None and b"wrong secret" in impostor.stderr.read()
    with socket.create_connection((m.host, m.port), timeout=5) as s:  # a port scanner
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        assert s.recv(1 << 16)  # the hello, then the master hangs up
    assert m.workers() == {}
    w.start("1.0")
    assert m.map([{"x": 21}], timeout=20) == [42]
    assert {info["job"] for info in m.workers().values()} == {"1.0"}


def test_close_sends_workers_away(make: Any) -> None:
    m, w = make()
    p = w.start("1.0")
    assert m.map([{"x": 1}], timeout=20) == [2]
    assert not (w.dir / "key.1.0").exists()  # the worker deleted the secret once read
    m.close()
    assert p.wait(10) == 0
    with pytest.raises(MWError, match="closed"):
        m.add({"x": 1})


def top_level(p: Any) -> Any:
    return p


def test_task_code_takes_a_top_level_function_or_named_source() -> None:
    module, source, name = task_code(top_level, None)
    assert (module, name) == (__name__, "top_level") and "def top_level" in source
    with pytest.raises(MWError, match="not a top-level function"):
        task_code(lambda p: p, None)
    with pytest.raises(MWError, match="no top-level 'nope'"):
        task_code("nope", "def run(p):\n    return p\n")
    with pytest.raises(MWError, match="does not compile"):
        task_code("run", "def run(p) return p\n")
    with pytest.raises(MWError, match="needs its module's source"):
        task_code("run", None)
