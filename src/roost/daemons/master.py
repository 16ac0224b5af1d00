"""The master: starts this host's daemons, restarts them when they die, stops them.

``python -m roost.daemons.master`` reads DAEMON_LIST, starts the collector first
and waits for its address file, then starts the rest with ``_ROOST_COLLECTOR_HOST``
set. Once the collector has an address it is pinned: a restarted collector binds
the same port, so daemons that cached it keep working. Each daemon is a separate
process (so any one can be killed and restarted); a dead one is restarted after a
back-off (``MASTER_BACKOFF_*``). SIGTERM or ``SHUTDOWN`` stops every daemon
(SIGTERM, then SIGKILL after a grace period) and exits.

Daemons run in the master's process group and get SIGUSR2 if the master itself
dies (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the master leaves no orphan daemons;
a signal of its own tells a daemon its master is gone (the startd then leaves its
running jobs to the next master's startd) from a stop the master asked for (SIGTERM).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import logging
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roost.config import Config, ConfigError
from roost.daemons import config_val
from roost.daemons.backoff import Backoff
from roost.daemons.base import (
    DAEMON_NO_RESTART,
    advertise_host,
    cannot_start_reason,
    connection_args,
    local_name_arg,
    raise_fd_limit,
    reconfigure_admission,
)
from roost.daemons.security import Security, reread
from roost.net.addresses import (
    advertised,
    collector_address,
    read_address,
    remove_address,
    write_address,
)
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError, RequestError
from roost.net.server import Server
from roost.net.server import serve as serve_requests

log = logging.getLogger("roost.master")

#: the master's commands are all small
MASTER_MAX_FRAME = 1 << 20

#: DAEMON_LIST name -> (module run with ``python -m``, log file name as HTCondor names it)
KNOWN_DAEMONS: dict[str, tuple[str, str]] = {
    "COLLECTOR": ("roost.daemons.collector", "CollectorLog"),
    "NEGOTIATOR": ("roost.daemons.negotiator", "NegotiatorLog"),
    "SCHEDD": ("roost.daemons.schedd", "SchedLog"),
    "STARTD": ("roost.daemons.startd", "StartLog"),
    "WEB": ("roost.web", "WebLog"),  # the dashboard: a client of the pool (roost.api), not a daemon package
}
#: daemons that speak HTTP, not roost's protocol, and keep no state: RECONFIG restarts them,
#: so they read the new configuration
RESTARTED_ON_RECONFIG = frozenset({"WEB"})
ADDRESS_WAIT_S = 30.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGUSR2, 0, 0, 0)
    except (OSError, AttributeError):
        pass


@dataclass
class Child:
    """One supervised daemon."""

    name: str
    argv: list[str]
    log_path: Path
    address_path: Path
    backoff: Backoff
    proc: asyncio.subprocess.Process | None = None
    restarts: int = 0
    state: str = "stopped"  # starting, running, waiting (to restart), stopping, stopped
    restart_now: asyncio.Event = field(default_factory=asyncio.Event)
    #: the pid RECONFIG stops to restart (RESTARTED_ON_RECONFIG): its end is not counted in ``restarts``
    reconfiguring: int | None = None
    last_exit: str | None = None
    #: turned off by an administrator (``roost off -daemon``): not restarted until ``on``
    off: bool = False
    #: it exited with DAEMON_NO_RESTART (it cannot run as configured): off, and why
    held: str | None = None

    def address(self) -> str | None:
        return read_address(self.address_path)

    def status(self) -> dict[str, Any]:
        alive = self.proc is not None and self.proc.returncode is None
        addr = self.address() if alive else None
        state = self.state
        if state == "starting" and addr:
            state = "running"
        return {
            "pid": self.proc.pid if alive and self.proc else None,
            "address": addr,
            "restarts": self.restarts,
            "state": state,
            "last_exit": self.last_exit,
            "held": self.held,
        }


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


class Master:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.home = Path(config.get("LOCAL_DIR") or ".")
        self.log_dir = Path(config.get("LOG") or self.home / "log")
        self.run_dir = Path(config.get("RUN") or self.home / "run")
        self.grace = config.get_float("SHUTDOWN_GRACEFUL_TIMEOUT", 20.0) or 20.0
        self.stopping = False
        self.stopped = asyncio.Event()
        self.children: dict[str, Child] = {}
        self.collector_host: str | None = None
        self.remote_collector: str | None = None  # COLLECTOR_HOST's, on a host without a collector
        self._advertiser: asyncio.Task[None] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.hostname = config.get("FULL_HOSTNAME") or "localhost"
        self.address: str | None = None
        self.server: Server | None = None
        self.start_time = time.time()
        self.update_interval = config.get_float("UPDATE_INTERVAL", 300.0) or 300.0
        for name in self._daemon_names():
            self.children[name] = self._make_child(name)
        # the central manager's master makes the pool key before any daemon starts
        self.security = Security(config, "MASTER", make_key="COLLECTOR" in self.children)
        self.security.ensure_owner_token()

    # -- configuration ---------------------------------------------------------------

    def _daemon_names(self) -> list[str]:
        names = [n.upper() for n in self.config.get_list("DAEMON_LIST", []) or []]
        out = [n for n in dict.fromkeys(names) if n != "MASTER"]
        # The collector first: everyone else needs its address.
        out.sort(key=lambda n: n != "COLLECTOR")
        return out

    def _make_child(self, name: str) -> Child:
        local = None
        known = KNOWN_DAEMONS.get(name)
        if known is None:
            # SCHEDD2, SCHEDD_ALICE ...: another daemon of a known kind, run with
            # -local-name (HTCondor's way to a second schedd on one host)
            base = next((k for k in KNOWN_DAEMONS if name.startswith(k) and name != k), None)
            if base is not None:
                local = name.lower()
                module, log_name = KNOWN_DAEMONS[base][0], f"{KNOWN_DAEMONS[base][1]}.{local}"
            else:
                module, log_name = f"roost.daemons.{name.lower()}", f"{name.title()}Log"
        else:
            module, log_name = known
        # As in HTCondor, a knob named after the daemon overrides what runs (here a command line).
        command = (self.config.get(name) or "").strip()
        argv = shlex.split(command) if command else [sys.executable, "-m", module]
        args = (self.config.get(f"{name}_ARGS") or "").strip()
        if args:
            argv += shlex.split(args)
        if local is not None:
            given = local_name_arg(argv)
            if given is None:
                argv += ["-local-name", local]
            else:
                local = given.lower()  # SCHEDD2_ARGS = -local-name X: its files are X's
                log_name = f"{log_name.rsplit('.', 1)[0]}.{local}"
        backoff = Backoff(
            constant=self.config.get_float("MASTER_BACKOFF_CONSTANT", 1.0) or 0.0,
            factor=self.config.get_float("MASTER_BACKOFF_FACTOR", 2.0) or 1.0,
            ceiling=self.config.get_float("MASTER_BACKOFF_CEILING", 60.0) or 0.0,
            recover=self.config.get_float("MASTER_RECOVER_FACTOR", 60.0) or 0.0,
        )
        configured = (self.config.get(f"{name}_LOG") or "").strip() if local is None else ""
        return Child(
            name=name,
            argv=argv,
            log_path=Path(configured) if configured else self.log_dir / log_name,
            address_path=self.run_dir / f"{(local or name).lower()}.address",
            backoff=backoff,
        )

    def _env(self, child: Child) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("ROOST_HOME", str(self.home))
        if self.collector_host:
            env["_ROOST_COLLECTOR_HOST"] = self.collector_host
        env["_ROOST_MASTER_PID"] = str(os.getpid())
        return env

    # -- supervision -----------------------------------------------------------------

    async def _spawn(self, child: Child) -> None:
        remove_address(child.address_path)
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The daemon's stdout/stderr go to its own log, so a crash's traceback is where
        # its other messages are.
        fd = os.open(child.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            child.proc = await asyncio.create_subprocess_exec(
                *child.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
                env=self._env(child),
                cwd=str(self.home),
                preexec_fn=_die_with_parent,
            )
        finally:
            os.close(fd)
        child.state = "starting"
        child.backoff.started(time.monotonic())
        log.info("started %s (pid %d): %s", child.name, child.proc.pid, shlex.join(child.argv))

    async def _supervise(self, child: Child) -> None:
        """Run ``child`` until the master stops, restarting it whenever it dies."""
        while not self.stopping:
            if child.off:
                child.state = "off"
                await child.restart_now.wait()
                child.restart_now.clear()
                continue
            try:
                await self._spawn(child)
            except OSError as e:
                log.error("cannot start %s: %s", child.name, e)
                child.last_exit = f"cannot start: {e}"
                delay = child.backoff.died(time.monotonic())
            else:
                assert child.proc is not None
                rc = await child.proc.wait()
                if self.stopping:
                    break
                child.last_exit = describe_exit(rc)
                if rc == DAEMON_NO_RESTART:
                    # HTCondor's master leaves such a daemon off until condor_on/restart
                    child.held = cannot_start_reason(child.log_path) or f"see {child.log_path}"
                    child.last_exit += f" (daemon will not restart automatically): {child.held}"
                    child.off = True
                    log.error("%s (pid %d) %s", child.name, child.proc.pid, child.last_exit)
                    continue
                if child.off:
                    log.info("%s (pid %d) %s; off until `roost on`", child.name, child.proc.pid, child.last_exit)
                    continue
                if child.restart_now.is_set():
                    child.restart_now.clear()
                    child.backoff.reset()
                    delay = 0.0
                    log.info("%s (pid %d) %s; restarting %s", child.name, child.proc.pid, child.last_exit,
                             "to read its new configuration" if child.reconfiguring == child.proc.pid
                             else "as asked")
                else:
                    delay = child.backoff.died(time.monotonic())
                    log.warning("%s (pid %d) %s; restarting in %g s", child.name, child.proc.pid,
                                child.last_exit, delay)
            if child.proc is not None and child.reconfiguring == child.proc.pid:
                child.reconfiguring = None  # a reconfiguration, not a restart
            else:
                child.restarts += 1
            child.state = "waiting"
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(child.restart_now.wait(), delay)
            child.restart_now.clear()
        child.state = "stopped"

    async def _wait_for_address(self, child: Child, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping:
            addr = child.address() if child.proc and child.proc.returncode is None else None
            if addr:
                return addr
            await asyncio.sleep(0.01)
        return None

    async def start_daemons(self) -> None:
        collector = self.children.get("COLLECTOR")
        if collector is not None:
            self._tasks.append(asyncio.create_task(self._supervise(collector)))
            addr = await self._wait_for_address(collector, ADDRESS_WAIT_S)
            if addr is None:
                log.error("the collector wrote no address in %g s; starting the others anyway", ADDRESS_WAIT_S)
            else:
                # Pin the port: a restarted collector binds the same address.
                self.collector_host = addr
                log.info("collector is at %s", addr)
        else:  # a submit or execute host: the central manager's collector, as its daemons find it
            self.remote_collector = collector_address(
                self.config.get("COLLECTOR_HOST") or "", self.config.get_int("COLLECTOR_PORT", 9618) or 9618
            )
        for name, child in self.children.items():
            if name != "COLLECTOR" and not self.stopping:
                self._tasks.append(asyncio.create_task(self._supervise(child)))

    # -- the master's own ad (condor_status -master) ----------------------------------

    def own_ad(self) -> dict[str, Any]:
        return {
            "MyType": "Master",
            "Name": self.hostname,
            "Machine": self.hostname,
            "MyAddress": self.address,
            "DaemonStartTime": int(self.start_time),
            "MyCurrentTime": int(time.time()),
            "RoostPid": os.getpid(),
            "DaemonList": " ".join(["MASTER", *self.children]),
            "UpdateInterval": int(self.update_interval),
        }

    async def advertise_loop(self) -> None:
        """Keep the Master ad in the collector: every UPDATE_INTERVAL, and again as soon
        as a restarted collector (new pid, empty soft state) is up."""
        client: AsyncClient | None = None
        sent_to: int | None = None  # collector pid that has our ad
        last = 0.0
        failing, retry_at, retry = False, 0.0, 0.5  # a collector that does not answer: back off, log once
        while not self.stopping:
            collector = self.children.get("COLLECTOR")
            if collector is not None:
                st = collector.status()
                addr = st.get("address") or self.collector_host
            else:  # another host's collector: advertise every UPDATE_INTERVAL, retry until it answers
                st, addr = {"state": "running", "pid": None}, self.remote_collector
            due = time.monotonic() - last >= self.update_interval
            wanted = due or st.get("pid") != sent_to or not last
            if addr and st.get("state") == "running" and wanted and time.monotonic() >= retry_at:
                if client is None or client.address != addr:
                    client = AsyncClient(addr, timeout=5.0, **self.security.client_args())
                try:
                    await client.call("UPDATE_AD", type="Master", ad=self.own_ad())
                    sent_to, last = st.get("pid"), time.monotonic()
                    if failing:
                        log.info("the collector at %s takes our ad again", addr)
                    failing, retry = False, 0.5
                except (ConnectionError, RequestError) as e:
                    if not failing:
                        log.info("cannot advertise to the collector at %s: %s (retrying quietly)", addr, e)
                    failing = True
                    retry_at = time.monotonic() + retry
                    retry = min(retry * 2, 30.0)
            await asyncio.sleep(0.5)
        if client is not None:
            with contextlib.suppress(ConnectionError, RequestError, asyncio.TimeoutError):
                await asyncio.wait_for(client.call("INVALIDATE_AD", type="Master", name=self.hostname), 1)
            await client.close()

    def ready(self) -> bool:
        return all(c.status()["state"] == "running" for c in self.children.values())

    # -- commands --------------------------------------------------------------------

    async def cmd_status(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        return {
            "daemons": {n: c.status() for n, c in self.children.items()},
            "ready": self.ready(),
            "pid": os.getpid(),
            "home": str(self.home),
        }

    async def cmd_config_val(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        """CONFIG_VAL: knobs as the master reads them."""
        return config_val.answer(self.config, req)

    async def cmd_shutdown(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        fast = bool(req.get("fast"))
        log.info("shutdown requested%s", " (fast)" if fast else "")
        # Answer first, then stop: the caller waits for the master's pid to go away.
        asyncio.get_running_loop().call_soon(self.request_stop, fast)
        return {}

    async def cmd_reconfig(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        """RECONFIG (``roost reconfig``): the master rereads its configuration, then asks
        each running daemon (or only ``daemon``) to reread its own. Each daemon's answer,
        by name; a daemon that refuses keeps running on its old configuration."""
        only = str(req["daemon"]).upper() if req.get("daemon") else None
        if only is not None and only != "MASTER" and only not in self.children:
            raise RequestError("NOT_FOUND", f"no daemon {only!r} here (DAEMON_LIST: {' '.join(self.children)})")
        results: dict[str, str] = {}
        if only in (None, "MASTER"):
            # as at start: $ROOST_CONFIG, else $ROOST_HOME's
            old = self.security
            self.config, self.security = reread(None, "MASTER")
            await old.close()
            self.update_interval = self.config.get_float("UPDATE_INTERVAL", 300.0) or 300.0
            if self.server is not None:
                self.security.install(self.server, self.config.get("BIND_ADDRESS") or "127.0.0.1")
                reconfigure_admission(self.server, self.config)
            results["MASTER"] = "reconfigured"
        for name, child in self.children.items():
            if only not in (None, name):
                continue
            address = child.status().get("address")
            if not address:
                results[name] = "not running"
                continue
            if name in RESTARTED_ON_RECONFIG:
                results[name] = await self._restart_to_reconfig(child)
                continue
            client = AsyncClient(address, timeout=10.0, **self.security.client_args())
            try:
                await client.call("RECONFIG")
                results[name] = "reconfigured"
            except (ConnectionError, RemoteError) as e:
                results[name] = f"failed: {e}"
            finally:
                await client.close()
        log.info("reconfig: %s", results)
        return {"daemons": results}

    async def _restart_to_reconfig(self, child: Child) -> str:
        """RECONFIG of a daemon of RESTARTED_ON_RECONFIG: the configuration is read first
        (a bad one leaves it running as it is), then it is restarted and awaited."""
        try:
            Config.load(subsys=child.name)
        except ConfigError as e:
            return f"failed: {e}"
        old = child.proc.pid if child.proc else None
        child.reconfiguring = old
        child.restart_now.set()
        self._signal(child, False)
        deadline = time.monotonic() + ADDRESS_WAIT_S
        while time.monotonic() < deadline and not self.stopping:
            st = child.status()
            if st["pid"] and st["pid"] != old and st["state"] == "running":
                return "reconfigured"
            await asyncio.sleep(0.02)
        return f"failed: not running again within {ADDRESS_WAIT_S:g} s"

    def _child(self, req: dict[str, Any]) -> Child:
        name = str(req["name"]).upper()
        child = self.children.get(name)
        if child is None:
            raise RequestError("NOT_FOUND", f"no daemon {name!r} here (DAEMON_LIST: {' '.join(self.children)})")
        return child

    @staticmethod
    def _signal(child: Child, fast: bool) -> None:
        if child.proc is not None and child.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGKILL if fast else signal.SIGTERM)

    async def cmd_restart_daemon(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        child = self._child(req)
        log.info("restart of %s requested", child.name)
        child.off, child.held = False, None
        child.restart_now.set()
        self._signal(child, False)
        return {}

    async def cmd_daemon_off(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        """DAEMON_OFF: stop one daemon (gracefully: its jobs vacated, its state saved;
        ``fast``: killed) and keep it stopped until DAEMON_ON (condor_off -daemon)."""
        child = self._child(req)
        log.info("%s turned off (%s)", child.name, "fast" if req.get("fast") else "graceful")
        child.off = True
        self._signal(child, bool(req.get("fast")))
        if not req.get("fast"):
            self._tasks.append(asyncio.create_task(self._kill_after(child, self.grace)))
        return {"state": child.status()["state"]}

    async def _kill_after(self, child: Child, grace: float) -> None:
        """A daemon turned off that has not stopped in ``grace`` seconds is killed."""
        proc = child.proc
        if proc is None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), grace)
            return
        if child.off and proc.returncode is None:
            log.warning("%s (pid %d) did not stop in %g s; killing it", child.name, proc.pid, grace)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    async def cmd_daemon_on(self, req: dict[str, Any], peer: Any = None) -> dict[str, Any]:
        """DAEMON_ON: start a daemon turned off (condor_on -daemon); a running one is left be."""
        child = self._child(req)
        if child.off:
            log.info("%s turned on", child.name)
            child.off, child.held = False, None
            child.restart_now.set()
        return {}

    # -- stopping --------------------------------------------------------------------

    def request_stop(self, fast: bool = False) -> None:
        if not self.stopping:
            self.stopping = True
            asyncio.get_running_loop().create_task(self._stop(fast))

    async def _stop_group(self, children: list[Child], grace: float) -> None:
        live = [c for c in children if c.proc is not None and c.proc.returncode is None]
        for c in live:
            c.state = "stopping"
            assert c.proc is not None
            with contextlib.suppress(ProcessLookupError):
                c.proc.send_signal(signal.SIGTERM)
        waits = [asyncio.create_task(c.proc.wait()) for c in live if c.proc is not None]
        if not waits:
            return
        _, pending = await asyncio.wait(waits, timeout=grace)
        if pending:
            for c in live:
                if c.proc is not None and c.proc.returncode is None:
                    log.warning("%s (pid %d) did not stop in %g s; killing it", c.name, c.proc.pid, grace)
                    with contextlib.suppress(ProcessLookupError):
                        c.proc.kill()
            await asyncio.wait(pending, timeout=5)

    async def _stop(self, fast: bool) -> None:
        grace = 1.0 if fast else self.grace
        for c in self.children.values():
            c.restart_now.set()  # wake supervisors sleeping through a back-off
        others = [c for n, c in self.children.items() if n != "COLLECTOR"]
        await self._stop_group(others, grace)
        if self._advertiser is not None:
            # it sees `stopping`, withdraws the Master ad while the collector still runs
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._advertiser, 1.5)
        await self._stop_group([c for n, c in self.children.items() if n == "COLLECTOR"], grace)
        for c in self.children.values():
            c.state = "stopped"
            remove_address(c.address_path)
        for t in self._tasks:
            t.cancel()
        log.info("all daemons stopped")
        self.stopped.set()


# -- process plumbing ------------------------------------------------------------------


def setup_logging(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(levelname)s %(message)s", "%m/%d/%y %H:%M:%S"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def take_lock(run_dir: Path) -> int | None:
    """Hold run/master.lock for the master's life; None when another master holds it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / "master.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


async def serve(master: Master) -> None:
    handlers = {
        "STATUS": master.cmd_status,
        "SHUTDOWN": master.cmd_shutdown,
        "RESTART_DAEMON": master.cmd_restart_daemon,
        "DAEMON_OFF": master.cmd_daemon_off,
        "DAEMON_ON": master.cmd_daemon_on,
        "RECONFIG": master.cmd_reconfig,
        "CONFIG_VAL": master.cmd_config_val,
    }
    # Like every daemon, on BIND_ADDRESS and advertised at an address other hosts reach:
    # remote administration (`roost reconfig -name HOST`) comes through here, and every
    # command but STATUS needs ADMINISTRATOR.
    bind = master.config.get("BIND_ADDRESS") or "127.0.0.1"
    server = master.server = await serve_requests(handlers, host=bind, port=0, max_frame=MASTER_MAX_FRAME,
                                                  **connection_args(master.config, raise_fd_limit()),
                                                  **master.security.serve_args(bind))
    address = advertised(server.address, advertise_host(master.config))
    master.address = address
    addr_path = master.run_dir / "master.address"
    write_address(addr_path, address)
    log.info("master listening at %s", address)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, master.request_stop)
    # HTCondor's masters reconfigure on SIGHUP; roost's daemons read their config at start.
    loop.add_signal_handler(signal.SIGHUP, lambda: log.info("SIGHUP ignored: restart a daemon to reconfigure it"))
    try:
        await master.start_daemons()
        if "COLLECTOR" in master.children or master.collector_host or master.remote_collector:
            master._advertiser = asyncio.create_task(master.advertise_loop())
        await master.stopped.wait()
    finally:
        remove_address(addr_path, address)
        await server.close()


def main(argv: list[str] | None = None) -> int:
    try:
        config = Config.load(subsys="MASTER")
        master = Master(config)
    except ConfigError as e:
        print(f"roost master: bad configuration: {e}", file=sys.stderr)
        return 1
    fd = take_lock(master.run_dir)
    if fd is None:
        print(f"roost master: another master is running for {master.home}", file=sys.stderr)
        return 1
    setup_logging(Path((config.get("MASTER_LOG") or "").strip() or master.log_dir / "MasterLog"))
    pid_path = master.run_dir / "master.pid"
    pid_path.write_text(f"{os.getpid()}\n")
    log.info("master starting (pid %d) for %s; daemons: %s", os.getpid(), master.home,
             " ".join(master.children) or "(none)")
    try:
        asyncio.run(serve(master))
    finally:
        with contextlib.suppress(FileNotFoundError):
            if pid_path.read_text().strip() == str(os.getpid()):
                pid_path.unlink()
        log.info("master exiting")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
