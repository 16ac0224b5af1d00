"""Starting and stopping real pools for the integration tests, and helpers to drive them.

Every pool is started with ``roost up`` in its own temporary ROOST_HOME and is
always stopped: ``roost down``, then SIGKILL to the master's whole process
group (the master leads its own session, its daemons are in its group), even
when a test failed half-way.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from daemon_logs import log_mark, wait_log

ROOST = [sys.executable, "-m", "roost.cli.main"]

#: knobs that make a test pool quick: fast cycles, short intervals, four CPUs, no JVM or
#: container runtime probed at start (test_universes.py turns them on)
FAST_CONFIG = """
NUM_CPUS = 4
MEMORY = 4096
NEGOTIATOR_INTERVAL = 2
NEGOTIATOR_MIN_INTERVAL = 0.02
UPDATE_INTERVAL = 2
SCHEDD_INTERVAL = 2
SCHEDD_MIN_INTERVAL = 0.1
PERIODIC_EXPR_INTERVAL = 1
ALIVE_INTERVAL = 1
JOB_LEASE_DURATION = 6
STARTER_UPDATE_INTERVAL = 1
MASTER_BACKOFF_CONSTANT = 0.5
MASTER_BACKOFF_CEILING = 5
MASTER_RECOVER_FACTOR = 10
SHUTDOWN_GRACEFUL_TIMEOUT = 10
STARTD_DETECT_CONTAINERS = False
STARTD_DETECT_JAVA = False
"""


class PoolHandle:
    """A running pool: its home, environment and ways to talk to it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.env = dict(os.environ)
        self.env["ROOST_HOME"] = str(home)
        self.env.pop("ROOST_CONFIG", None)
        self.master_pid: int | None = None

    # -- the daemons' logs (tests/daemon_logs.py) -----------------------------------
    def log_path(self, daemon: str) -> Path:
        """``daemon``'s log (HTCondor's names: StartLog, SchedLog, NegotiatorLog ...)."""
        stem = {"schedd": "Sched", "startd": "Start"}.get(daemon, daemon.capitalize())
        return self.home / "log" / f"{stem}Log"

    def log_mark(self, daemon: str = "startd") -> int:
        """Where ``daemon``'s log ends now: a ``wait_log`` after it sees only newer lines."""
        return log_mark(self.log_path(daemon))

    def wait_log(self, pattern: str, daemon: str = "startd", after: int = 0, timeout: float = 30) -> Any:
        """The first line of ``daemon``'s log past ``after`` matching ``pattern``; its match."""
        return wait_log(self.log_path(daemon), pattern, after=after, timeout=timeout)

    def job_pid(self, jid: str, after: int = 0, timeout: float = 30) -> int:
        """The pid of job ``jid``'s process once it runs and the startd has written its
        record (the startd's ``job N.M: started, pid P, record written`` line)."""
        m = self.wait_log(rf"job {re.escape(jid)}: started, pid (\d+), record written",
                          after=after, timeout=timeout)
        return int(m.group(1))

    def wait_cycle(self, after: int, timeout: float = 30) -> Any:
        """A negotiation cycle logged past ``after`` in which someone had idle jobs: what
        "it is not matched" waits for (a cycle ran and left it idle), instead of a guess
        at how long matching takes. Take the mark before the job becomes idle."""
        return self.wait_log(r"cycle \d+ \([^)]*\): \d+ slots, [1-9]\d* submitters", "negotiator",
                             after=after, timeout=timeout)

    # -- commands ----------------------------------------------------------------
    def roost(self, *args: str, timeout: float = 60, check: bool = False,
              cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*ROOST, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd)
        if check and done.returncode != 0:
            raise AssertionError(f"roost {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def schedd(self) -> Any:
        from roost.api.schedd import Schedd

        return Schedd(self.home)

    def collector(self) -> Any:
        from roost.api.collector import Collector

        return Collector(self.home)

    def master_status(self) -> dict[str, Any]:
        from roost.api.pool import Pool

        return Pool(self.home).status()

    def daemon_pid(self, name: str) -> int:
        pid = self.master_status()["daemons"][name.upper()]["pid"]
        assert pid, f"{name} is not running"
        return int(pid)

    def wait_daemon_back(self, name: str, old_pid: int, timeout: float = 15) -> int:
        """Wait until ``name`` runs again with another pid and has published its address."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            d = self.master_status()["daemons"][name.upper()]
            if d["pid"] and d["pid"] != old_pid and d["state"] == "running":
                return int(d["pid"])
            time.sleep(0.05)
        raise AssertionError(f"{name} did not come back within {timeout} s: {self.master_status()}")

    def submit(self, text: str, cwd: Path) -> Any:
        """Submit ``text`` as a submit file in ``cwd`` through the Python API; a SubmitResult."""
        path = cwd / "job.sub"
        path.write_text(text)
        old = os.getcwd()
        os.chdir(cwd)
        try:
            s = self.schedd()
            try:
                return s.submit_file(str(path))
            finally:
                s.close()
        finally:
            os.chdir(old)

    def wait(self, ids: list[str] | str, timeout: float = 60) -> dict[str, Any]:
        s = self.schedd()
        try:
            return s.wait(ids, timeout=timeout)
        finally:
            s.close()

    def job(self, jid: str) -> dict[str, Any] | None:
        """The job's ad: from the queue, else from history."""
        s = self.schedd()
        try:
            got = s.query_objs(ids=[jid])
            if not got:
                got = s.history(ids=[jid])
            return got[0] if got else None
        finally:
            s.close()

    def wait_for(self, jid: str, pred: Any, timeout: float = 30, what: str = "condition") -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        job = None
        while time.monotonic() < deadline:
            job = self.job(jid)
            if job is not None and pred(job):
                return job
            time.sleep(0.05)
        raise AssertionError(f"job {jid}: {what} not reached in {timeout} s; last ad: {job}")


def wait_until(pred: Any, timeout: float, what: str) -> None:
    """Poll ``pred()`` until it is true; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.05)


def start_pool(home: Path, extra_config: str = "", timeout: float = 60) -> PoolHandle:
    from roost.config import write_personal_config

    home.mkdir(parents=True, exist_ok=True)
    cfg = write_personal_config(home)
    with open(cfg, "a") as f:
        f.write(FAST_CONFIG + extra_config)
    pool = PoolHandle(home)
    done = pool.roost("up", "-timeout", str(timeout), timeout=timeout + 30)
    pid_file = home / "run" / "master.pid"
    with contextlib.suppress(FileNotFoundError, ValueError):
        pool.master_pid = int(pid_file.read_text())
    if done.returncode != 0:
        stop_pool(pool)
        raise AssertionError(f"roost up failed ({done.returncode}):\n{done.stdout}\n{done.stderr}\n"
                             + log_tails(home))
    return pool


def stop_pool(pool: PoolHandle) -> None:
    try:
        pool.roost("down", "-timeout", "30", timeout=60)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if pool.master_pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pool.master_pid, signal.SIGKILL)


def log_tails(home: Path, lines: int = 30) -> str:
    out = []
    for f in sorted((home / "log").glob("*Log")):
        text = f.read_text(errors="replace").splitlines()[-lines:]
        out.append(f"==== {f.name}\n" + "\n".join(text))
    return "\n".join(out)


@contextlib.contextmanager
def job_dir(prefix: str, mode: int = 0o755) -> Iterator[Path]:
    """A job directory under /tmp that the job's user (nobody, for root's jobs) can
    reach, unlike pytest's 0700 tmp_path; removed afterwards."""
    d = Path(f"/tmp/{prefix}-{os.getpid()}-{time.monotonic_ns()}")
    d.mkdir()
    d.chmod(mode)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def submit_text(pool: PoolHandle, work: Path, body: str) -> str:
    """``roost submit`` of ``body`` (written as ``work/job.sub``): the first job's id."""
    (work / "job.sub").write_text(body)
    done = pool.roost("submit", "job.sub", cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return f"{m.group(1)}.0"
