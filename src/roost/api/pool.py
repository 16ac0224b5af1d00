"""``Pool``: start, inspect and stop the personal pool under one ROOST_HOME.

``start()`` is what ``roost up`` does: write the personal config if there is
none, start the master detached (its own session, stdio to the MasterLog), and
return once every daemon has published its address and the startd's slots are
in the collector. ``stop()`` is ``roost down``. Whether a master is running is
decided by its lock on ``run/master.lock`` (held for its whole life, released
by the kernel however it dies), so stale pid or address files never mislead.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from roost.api.collector import Collector
from roost.api.connection import DaemonConnection
from roost.api.errors import PoolError
from roost.api.home import pool_home, read_address


class Pool:
    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.home = Path(pool_home(home)).resolve()
        self.run_dir = self.home / "run"
        self.log_dir = self.home / "log"

    # -- state ------------------------------------------------------------------------

    def running(self) -> bool:
        """True while a master holds this home's lock."""
        try:
            fd = os.open(self.run_dir / "master.lock", os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def master_pid(self) -> int | None:
        try:
            return int((self.run_dir / "master.pid").read_text().strip())
        except (FileNotFoundError, ValueError):
            return None

    def _master(self, timeout: float = 10.0) -> DaemonConnection:
        addr = read_address(self.run_dir / "master.address")
        return DaemonConnection(str(self.home), "master", lambda: [addr] if addr else [], timeout)

    def status(self) -> dict[str, Any]:
        """The master's STATUS: ``{"daemons": {name: {...}}, "ready": bool}``."""
        conn = self._master()
        try:
            return conn.call("STATUS")
        finally:
            conn.close()

    def restart_daemon(self, name: str) -> None:
        conn = self._master()
        try:
            conn.call("RESTART_DAEMON", name=name)
        finally:
            conn.close()

    def _a_master(self, name: str | None, pool: str | None) -> DaemonConnection:
        """This host's master, or (``name``, a host; ``pool``, a collector) another host's,
        found through the pool's collector and reached with this host's token."""
        if name is None and pool is None:
            return self._master()
        # lazy: only remote administration asks a collector where a master is
        from roost.api.locate import locate

        addr = locate(str(self.home), "Master", name, pool)
        conn = DaemonConnection(str(self.home), "master", lambda: [addr], 10.0)
        conn.remote = True
        return conn

    def _master_call(self, cmd: str, host: str | None, pool: str | None, /, **args: Any) -> dict[str, Any]:
        conn = self._a_master(host, pool)
        try:
            return conn.call(cmd, **args)
        finally:
            conn.close()

    def reconfig(self, daemon: str | None = None, *, name: str | None = None,
                 pool: str | None = None) -> dict[str, str]:
        """Have the master (and each of its daemons, or only ``daemon``) reread the
        configuration (``condor_reconfig``); each daemon's outcome by name."""
        args = {"daemon": daemon} if daemon else {}
        return dict(self._master_call("RECONFIG", name, pool, **args).get("daemons") or {})

    def daemons(self, *, name: str | None = None, pool: str | None = None) -> list[str]:
        """The daemons a host's master runs (its DAEMON_LIST, the master left out)."""
        return sorted(self._master_call("STATUS", name, pool).get("daemons") or {})

    def restart(self, daemon: str, *, name: str | None = None, pool: str | None = None) -> None:
        """Restart one daemon of a host (``condor_restart -daemon``): its state is kept."""
        self._master_call("RESTART_DAEMON", name, pool, name=daemon.upper())

    def daemon_off(self, daemon: str, *, fast: bool = False, name: str | None = None,
                   pool: str | None = None) -> None:
        """Stop one daemon of a host and keep it stopped (``condor_off -daemon``)."""
        self._master_call("DAEMON_OFF", name, pool, name=daemon.upper(), fast=fast)

    def daemon_on(self, daemon: str, *, name: str | None = None, pool: str | None = None) -> None:
        """Start a daemon turned off (``condor_on -daemon``)."""
        self._master_call("DAEMON_ON", name, pool, name=daemon.upper())

    def slots(self) -> int:
        """Slot ads the collector holds (0 if it cannot be asked)."""
        try:
            c = Collector(self.home, timeout=5.0)
            try:
                return len(c.query_objs("Machine", projection=["Name"]))
            finally:
                c.close()
        except PoolError:
            return 0

    def ready(self) -> tuple[bool, str]:
        """(ready?, what is still missing) for a starting pool."""
        try:
            st = self.status()
        except PoolError as e:
            return False, f"the master does not answer ({e})"
        return self._readiness(st)

    def _readiness(self, st: dict[str, Any]) -> tuple[bool, str]:
        waiting = [n for n, d in st.get("daemons", {}).items() if d.get("state") != "running"]
        if waiting:
            return False, "waiting for " + ", ".join(
                f"{n} ({st['daemons'][n].get('state')}"
                + (f", last {st['daemons'][n]['last_exit']}" if st["daemons"][n].get("last_exit") else "")
                + ")" for n in waiting)
        if "STARTD" in st.get("daemons", {}) and "COLLECTOR" in st.get("daemons", {}) and self.slots() == 0:
            return False, "waiting for the startd's slots to appear in the collector"
        return True, ""

    # -- starting and stopping ------------------------------------------------------

    def start(self, timeout: float = 60.0, *, write_config: bool = True) -> dict[str, Any]:
        """Start the pool and wait until it is ready; PoolError if it does not get there.

        A pool that does not become ready in ``timeout`` seconds is stopped again,
        so a failed start leaves no processes behind.
        """
        if self.running():
            raise PoolError(f"a pool is already running (ROOST_HOME={self.home})")
        if write_config:
            # lazy: only starting a pool writes config; `roost down` never parses it (~25 ms)
            from roost.config import write_personal_config

            write_personal_config(self.home)
        for d in (self.run_dir, self.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["ROOST_HOME"] = str(self.home)
        out = os.open(self.log_dir / "MasterLog", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "roost.daemons.master"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env, cwd=str(self.home),
                start_new_session=True, close_fds=True,
            )
        finally:
            os.close(out)
        deadline = time.monotonic() + timeout
        missing = "waiting for the master to start"
        while time.monotonic() < deadline:
            rc = proc.poll()
            if rc is not None:
                raise PoolError(f"the master exited with status {rc} while starting: "
                                f"{self._log_tail('MasterLog')}")
            if read_address(self.run_dir / "master.address"):
                try:
                    st: dict[str, Any] | None = self.status()
                except PoolError as e:
                    st, missing = None, f"the master does not answer ({e})"
                if st is not None:
                    ok, missing = self._readiness(st)
                    if ok:
                        return st
                    held = _held(st)
                    if held:
                        # a daemon that cannot run as configured: waiting would not change that
                        self.stop(timeout=30)
                        raise PoolError(f"{held}; the pool was stopped again; logs are in {self.log_dir}")
            time.sleep(0.02)
        self.stop(timeout=30)
        raise PoolError(f"the pool did not become ready in {timeout:g} s ({missing}); "
                        f"it was stopped again; logs are in {self.log_dir}")

    def stop(self, timeout: float = 60.0, *, fast: bool = False) -> bool:
        """Ask the master to shut down and wait until it has exited. False if none ran."""
        if not self.running():
            return False
        pid = self.master_pid()
        try:
            conn = self._master()
            try:
                conn.call("SHUTDOWN", fast=fast)
            finally:
                conn.close()
        except PoolError:
            # No answer: the master may be wedged or still starting; signal it instead.
            if pid:
                try:
                    os.kill(pid, 15)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + timeout
        while self.running():
            if pid:
                _reap(pid)
            if time.monotonic() >= deadline:
                raise PoolError(f"the master (pid {pid}) did not exit within {timeout:g} s")
            time.sleep(0.02)
        if pid:
            _reap(pid)
        return True

    def _log_tail(self, name: str, lines: int = 5) -> str:
        try:
            text = (self.log_dir / name).read_text(errors="replace").strip().splitlines()
        except FileNotFoundError:
            return f"no {name} (see {self.log_dir})"
        return " | ".join(text[-lines:]) or f"{name} is empty"


def _held(st: dict[str, Any]) -> str:
    """Why daemons of a starting pool will not run (they exited saying a restart cannot
    help, and the master left them off), from the master's STATUS; "" when none did."""
    return "; ".join(f"the {n.lower()} cannot start: {d['held']}"
                     for n, d in st.get("daemons", {}).items() if d.get("held"))


def _reap(pid: int) -> None:
    """Collect the master's exit status when it is our own child (a test started it)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass

