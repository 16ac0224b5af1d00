"""What every roost daemon shares: configuration, log file, server, address file,
collector updates and a clean shutdown.

A daemon subclasses :class:`Daemon`, fills in :meth:`Daemon.handlers` (and
optionally :meth:`Daemon.start`, :meth:`Daemon.stop`, :meth:`Daemon.ad`,
:meth:`Daemon.ads`) and ends its module with::

    if __name__ == "__main__":
        run(MyDaemon)

Lifecycle of :meth:`Daemon.main`: ``start()`` (open stores), listen, write
``$(RUN)/<name>.address`` and ``<name>.pid``, advertise, then serve until
SIGTERM/SIGINT or :meth:`Daemon.request_stop`; on the way out: stop periodic
tasks, invalidate the advertised ads, ``stop()``, close the server, remove
the address and pid files (only if they are still ours). The address published
and advertised is one other hosts reach: a wildcard bind (``BIND_ADDRESS =
0.0.0.0``) is replaced by :meth:`Daemon.advertise_host`.

The collector is found from ``COLLECTOR_HOST`` (``_ROOST_COLLECTOR_HOST`` in
the environment overrides it, as every ``_ROOST_*`` does): ``host:port`` is
used as is, ``host:0`` means "the address in ``$(RUN)/collector.address``"
(re-read whenever the collector cannot be reached, so daemons follow a
restarted collector), a bare host means ``host:$(COLLECTOR_PORT)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from roost.classad import ClassAd, quote
from roost.classad.jsonform import ad_to_obj
from roost.config import Config, ConfigError
from roost.daemons import config_val, joblimits
from roost.daemons.security import Security, reread
from roost.net.addresses import (
    WILDCARD_HOSTS,
    advertised,
    collector_address,
    read_address,
    remove_address,
    write_address,
)
from roost.net.admission import DEFAULT_MAX_PER_HOST, DEFAULT_MAX_TOTAL, Admission
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import (
    FIRST_FRAME_TIMEOUT,
    IDLE_TIMEOUT,
    LISTEN_BACKLOG,
    MAX_PER_LOCAL_USER,
    Handler,
    Server,
    serve,
)
from roost.net.tokens import TokenError

LOG_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"
LOG_DATEFMT = "%Y-%m-%d %H:%M:%S"

_LOG_NAMES = {"schedd": "Sched", "startd": "Start"}

#: the exit status by which a daemon tells its master not to restart it (HTCondor's
#: DAEMON_NO_RESTART): a restart would meet the same configuration and fail again
DAEMON_NO_RESTART = 99

_CANNOT_START = re.compile(r" ERROR [\w.]+: \S+ cannot start: (.*)$")


class CannotStart(Exception):  # noqa: N818 -- says what happened, as SystemExit does
    """The daemon cannot run with this configuration (a slot layout larger than the
    machine, a START expression that does not parse): it logs why and exits with
    DAEMON_NO_RESTART, so the master leaves it stopped instead of restarting it in a loop."""


def cannot_start_reason(log_path: Path, tail_bytes: int = 16384) -> str | None:
    """The ``why`` of the last ``NAME cannot start: why`` line a daemon wrote to its log, for the master
    to report (and ``roost up`` to print) when the daemon exits with DAEMON_NO_RESTART."""
    try:
        with open(log_path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - tail_bytes))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        m = _CANNOT_START.search(line)
        if m:
            return m.group(1)
    return None

# (ad type, ad as a JSON-form dict or ClassAd, private attributes or None)
AdvertisedAd = tuple[str, Any, dict[str, Any] | None]


def setup_logging(path: Path, level: int = logging.INFO) -> logging.Handler:
    """Send the root logger to ``path``: one line per event, local time with milliseconds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(LOG_FORMAT, LOG_DATEFMT))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    return handler


def advertise_host(config: Config) -> str | None:
    """The host other machines reach a daemon at, in place of a wildcard bind
    (``BIND_ADDRESS = 0.0.0.0``, the default outside a personal pool):
    ``NETWORK_INTERFACE`` where it names an address (HTCondor's knob; ``*`` names
    none), else the detected ``IP_ADDRESS``."""
    chosen = (config.get("NETWORK_INTERFACE") or "").strip()
    if chosen and chosen != "*" and chosen not in WILDCARD_HOSTS:
        return chosen
    return (config.get("IP_ADDRESS") or "").strip() or None


def idle_timeout(config: Config) -> float:
    """UNAUTHENTICATED_IDLE_TIMEOUT: seconds a connection that has not authenticated may
    send nothing (0: for ever)."""
    return max(0.0, config.get_float("UNAUTHENTICATED_IDLE_TIMEOUT", IDLE_TIMEOUT) or 0.0)


#: the most descriptors a daemon asks for (the kernel's default fs.nr_open): a startd
#: with 10,000 running jobs holds ~2 each, a schedd one connection per busy claim
MAX_FD_LIMIT = 1 << 20


def _nr_open() -> int:
    """The kernel's ceiling on any process's RLIMIT_NOFILE (fs.nr_open)."""
    try:
        with open("/proc/sys/fs/nr_open") as f:
            return int(f.read())
    except (OSError, ValueError):
        return MAX_FD_LIMIT


def fd_limit_wanted(soft: int, hard: int, privileged: bool, nr_open: int, infinity: int = -1) -> tuple[int, int]:
    """The (soft, hard) RLIMIT_NOFILE a daemon sets, from what it has: the soft limit up
    to the hard one; a privileged daemon (root: CAP_SYS_RESOURCE) raises the hard limit
    too, to fs.nr_open, at most MAX_FD_LIMIT (a login's 20,000 held 8,000 jobs' worth
    of a startd's descriptors, issue 27). Never lowers either."""
    if hard == infinity:
        return (max(soft, MAX_FD_LIMIT) if soft != infinity else soft, hard)
    if privileged:
        hard = max(hard, min(nr_open, MAX_FD_LIMIT))
    return (max(soft, hard) if soft != infinity else soft, hard)


def raise_fd_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (as HTCondor's daemons
    do), and as root the hard limit too (fd_limit_wanted): a daemon's connections, and
    a startd's running jobs, are its file descriptors. The soft limit now."""
    try:
        # lazy: Unix-only, and needed once per daemon start
        import resource
    except ImportError:
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    joblimits.remember(soft if soft != resource.RLIM_INFINITY else 0)  # the jobs' limit, before ours rises
    want = fd_limit_wanted(soft, hard, os.geteuid() == 0, _nr_open(), resource.RLIM_INFINITY)
    if want != (soft, hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, want)
            soft, hard = want
        except (ValueError, OSError):  # a container's root may lack CAP_SYS_RESOURCE
            pass
    if hard == resource.RLIM_INFINITY or hard > soft:  # then the soft limit alone rises
        want = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def admission(config: Config, fd_limit: int) -> Admission:
    """The bounds on connections that have not authenticated (docs/security.md):
    MAX_UNAUTHENTICATED_CONNECTIONS, at most half the fd limit (the other half is for
    daemons, tools, jobs' files and logs: a daemon out of fds stops accepting anyone),
    and MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST. 0 or less: no bound (the fd cap stays)."""
    total = config.get_int("MAX_UNAUTHENTICATED_CONNECTIONS", DEFAULT_MAX_TOTAL)
    total = DEFAULT_MAX_TOTAL if total is None else total
    cap = max(16, fd_limit // 2)
    total = cap if total <= 0 else min(total, cap)
    per_host = config.get_int("MAX_UNAUTHENTICATED_CONNECTIONS_PER_HOST", DEFAULT_MAX_PER_HOST)
    per_host = DEFAULT_MAX_PER_HOST if per_host is None else per_host
    return Admission(total, per_host)


def connection_args(config: Config, fd_limit: int) -> dict[str, Any]:
    """:func:`roost.net.server.serve`'s keyword arguments for connections before
    authentication, from the configuration."""
    first = config.get_float("UNAUTHENTICATED_FIRST_FRAME_TIMEOUT", FIRST_FRAME_TIMEOUT)
    backlog = config.get_int("SOCKET_LISTEN_BACKLOG", LISTEN_BACKLOG) or LISTEN_BACKLOG
    local = config.get_int("MAX_CONNECTIONS_PER_LOCAL_USER", MAX_PER_LOCAL_USER)
    return {"idle_timeout": idle_timeout(config),
            "first_frame_timeout": max(0.0, FIRST_FRAME_TIMEOUT if first is None else first),
            "admission": admission(config, fd_limit), "backlog": max(16, backlog),
            "max_per_local_user": MAX_PER_LOCAL_USER if local is None else local}


def reconfigure_admission(server: Server, config: Config) -> None:
    """RECONFIG: new bounds and timeouts for a running server (connections already over
    a lowered bound are closed as new ones come)."""
    args = connection_args(config, raise_fd_limit())
    server.idle_timeout, server.first_frame_timeout = args["idle_timeout"], args["first_frame_timeout"]
    server.admission.max_total = args["admission"].max_total
    server.admission.max_per_host = args["admission"].max_per_host
    server.local.max_per_host = args["max_per_local_user"]


class Daemon:
    """Base of the collector, negotiator, schedd and startd (and the master)."""

    #: ClassAd type of this daemon's own ad (``Negotiator``, ``Scheduler``, ...); None: none.
    ad_type: str | None = None
    #: the largest request frame it takes from an authenticated peer (each daemon's
    #: biggest command fits; a frame over it is refused before its body is read)
    max_frame: int = 8 << 20

    def __init__(self, name: str, subsys: str, *, config: Config | None = None,
                 local_name: str | None = None) -> None:
        #: ``-local-name`` (HTCondor's): a second daemon of a kind on this host, e.g. a
        #: second schedd; ``<SUBSYS>.<LOCAL>.KNOB`` configures it, and its run files, log
        #: and spool are its own
        self.local_name = local_name
        self.base_name = name
        self.name = local_name.lower() if local_name else name
        self.subsys = subsys.upper()
        self.config = config if config is not None else Config.load(subsys=self.subsys, localname=local_name)
        # what RECONFIG rereads: the start's own lookup ($ROOST_CONFIG, else $ROOST_HOME's),
        # or, for a daemon given a read configuration, the main file it was read from
        self._config_path = None if config is None or not config.files else config.files[0]
        cfg = self.config
        self.home = Path(cfg.get("LOCAL_DIR") or cfg.get("ROOST_HOME") or ".")
        self.run_dir = Path(cfg.get("RUN") or self.home / "run")
        self.log_dir = Path(cfg.get("LOG") or self.home / "log")
        self.spool_dir = Path(cfg.get("SPOOL") or self.home / "spool")
        if local_name:
            self.spool_dir = self.spool_dir / self.name
        for d in (self.run_dir, self.log_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.hostname = cfg.get("FULL_HOSTNAME") or "localhost"
        self.daemon_name = daemon_name(cfg.get(f"{self.subsys}_NAME"), self.hostname, local_name)
        self.log = logging.getLogger(f"roost.{name}")
        self.update_interval = cfg.get_float("UPDATE_INTERVAL", 300.0) or 300.0
        self.start_time = time.time()
        self.server: Server | None = None
        self.address: str | None = None
        self.orphaned = False  # stopping because our master died (not asked to)
        self._collector_failing = False  # the last advertisement failed (logged once)
        self.collector: AsyncClient | None = None
        self._collector_address: str | None = None
        self._collector_lost = False
        self._stopping: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._advertised: set[tuple[str, str]] = set()
        self._log_handler: logging.Handler | None = None
        self._security: Security | None = None

    @property
    def security(self) -> Security:
        """This daemon's keys, policy and token (:mod:`roost.daemons.security`), read
        when first needed: a daemon built only to be inspected needs none of it."""
        if self._security is None:
            central = "COLLECTOR" in (self.config.get("DAEMON_LIST") or "").upper().replace(",", " ").split()
            self._security = Security(self.config, self.subsys, make_key=central or self.subsys == "COLLECTOR")
        return self._security

    def client(self, address: str, *, timeout: float = 30.0) -> AsyncClient:
        """A client to another daemon that proves this daemon's identity on TCP."""
        return AsyncClient(address, timeout=timeout, **self.security.client_args())

    # -- what subclasses provide ---------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        """cmd → async handler(req, peer) → result dict."""
        return {}

    async def start(self) -> None:
        """Open stores, start tasks: runs before the server listens."""

    async def started(self) -> None:
        """Runs once the server listens and its address is published."""

    async def stop(self) -> None:
        """Flush and close: runs after the ads are invalidated, before the server closes."""

    def ad(self) -> dict[str, Any] | None:
        """Extra attributes of this daemon's own ad (``ad_type``); Name, MyType,
        MyAddress and the start time are added by :meth:`own_ad`."""
        return {}

    def private_ad(self) -> dict[str, Any] | None:
        """Private attributes sent with the own ad (readable only with ``private: true``)."""
        return None

    def ads(self) -> Iterable[AdvertisedAd]:
        """Every ad this daemon advertises. Default: its own ad; the startd adds its slots."""
        own = self.own_ad()
        if own is not None and self.ad_type:
            yield self.ad_type, own, self.private_ad()

    def listen_on(self) -> tuple[str, int]:
        """TCP host and port to listen on: ``BIND_ADDRESS`` and ``<SUBSYS>_PORT`` (0: any)."""
        host = self.config.get("BIND_ADDRESS") or "127.0.0.1"
        return host, self.config.get_int(f"{self.subsys}_PORT", 0) or 0

    def advertise_host(self) -> str | None:
        return advertise_host(self.config)

    def unix_socket(self) -> str | None:
        """A Unix socket to listen on as well (the schedd's, for local tools)."""
        return None

    # -- the own ad ------------------------------------------------------------------
    def own_ad(self) -> dict[str, Any] | None:
        extra = self.ad()
        if extra is None:
            return None
        ad: dict[str, Any] = {
            "MyType": self.ad_type,
            "Name": self.daemon_name,
            "Machine": self.hostname,
            "MyAddress": self.address,
            "DaemonStartTime": int(self.start_time),
            "MyCurrentTime": int(time.time()),
            "RoostPid": os.getpid(),
            "UpdateInterval": int(self.update_interval),
        }
        ad.update(extra)
        return ad

    # -- collector -------------------------------------------------------------------
    def collector_address(self) -> str | None:
        """Where the collector is now (see the module docstring); None if not known yet."""
        configured = collector_address(self.config.get("COLLECTOR_HOST") or "",
                                       self.config.get_int("COLLECTOR_PORT", 9618) or 9618)
        return configured or read_address(self.run_dir / "collector.address")

    def _collector_client(self) -> AsyncClient | None:
        address = self.collector_address()
        if address != self._collector_address:
            old = self.collector
            if old is not None:
                self.spawn(old.close(), "close-old-collector-client")
            self._collector_address = address
            self.collector = self.client(address, timeout=10.0) if address else None
        return self.collector

    async def collector_call(self, cmd: str, **args: Any) -> dict[str, Any]:
        """Call the collector, re-reading its address once if it cannot be reached."""
        client = self._collector_client()
        if client is None:
            raise ConnectionError("collector address is not known yet")
        try:
            return await client.call(cmd, **args)
        except ConnectionError:
            self._collector_lost = True  # it may have restarted empty: advertise again soon
            self._collector_address = None  # force a fresh look
            again = self._collector_client()
            if again is None:
                raise
            return await again.call(cmd, **args)

    async def advertise(self) -> bool:
        """Send every ad to the collector now (UPDATE_AD); failures are logged, not raised.
        Whether every ad got there."""
        for ad_type, ad, private in list(self.ads()):
            obj = ad_to_obj(ad) if isinstance(ad, ClassAd) else ad
            args: dict[str, Any] = {"type": ad_type, "ad": obj}
            if private:
                args["private"] = private
            try:
                await self.collector_call("UPDATE_AD", **args)
            except (ConnectionError, RequestError) as e:
                if not self._collector_failing:  # once per outage, not once per retry
                    self.log.warning("cannot update %s ad %r at the collector: %s (retrying quietly)",
                                     ad_type, obj.get("Name"), e)
                self._collector_failing = True
                return False
            if self._collector_failing:
                self._collector_failing = False
                self.log.info("the collector takes our ads again")
            name = obj.get("Name")
            if isinstance(name, str):
                self._advertised.add((ad_type, name))
        return True

    async def invalidate(self, ad_type: str, name: str) -> bool:
        """Remove one ad from the collector (a dynamic slot that went away, say); False
        when the collector could not be told (the caller may try again)."""
        self._advertised.discard((ad_type, name))
        try:
            await self.collector_call("INVALIDATE_AD", type=ad_type, name=name)
        except (ConnectionError, RequestError) as e:
            self.log.info("cannot invalidate %s ad %r: %s", ad_type, name, e)
            return False
        return True

    async def _advertise_loop(self) -> None:
        """Advertise every UPDATE_INTERVAL; retry failures with back-off from 0.25 s; and
        re-advertise at once when the collector drops our connection (it restarted and
        lost its soft state), so the pool heals in about a second, not an interval."""
        retry = 0.25
        while True:
            self._collector_lost = False
            if await self.advertise():
                delay, retry = self.update_interval, 0.25
            else:
                delay, retry = min(retry, self.update_interval), min(retry * 2, 30.0)
            deadline = time.monotonic() + delay
            while (left := deadline - time.monotonic()) > 0:
                await asyncio.sleep(min(1.0, left))
                if self._collector_failing:
                    continue  # down: the back-off says when to try again
                if self._collector_lost or (self.collector is not None and self.collector.dropped()):
                    self.log.info("collector connection lost: advertising again")
                    break

    async def negotiator_address(self) -> str | None:
        """The negotiator's published address file, else its collector ad (for RESCHEDULE)."""
        return read_address(self.run_dir / "negotiator.address") or await self.locate("Negotiator")

    async def locate(self, ad_type: str, name: str | None = None) -> str | None:
        """MyAddress of a daemon from its collector ad (e.g. ``Negotiator``); None if absent."""
        args: dict[str, Any] = {"type": ad_type, "projection": ["Name", "MyAddress"]}
        if name is not None:
            args["constraint"] = f"Name == {quote(name)}"
        try:
            ads = (await self.collector_call("QUERY", **args)).get("ads") or []
        except (ConnectionError, RequestError):
            return None
        for ad in ads:
            if isinstance(ad.get("MyAddress"), str):
                return ad["MyAddress"]
        return None

    # -- tasks -----------------------------------------------------------------------
    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run a background task whose failure is logged (and does not vanish silently)."""
        task = asyncio.ensure_future(coro)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.log.error("task %s failed", task.get_name(), exc_info=exc)

    def every(self, interval: float, fn: Callable[[], Awaitable[Any]], name: str) -> asyncio.Task[Any]:
        """Call ``fn`` every ``interval`` seconds (first call after one interval); errors are logged."""

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    await fn()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    self.log.exception("periodic %s failed", name)

        return self.spawn(loop(), name)

    # -- running -----------------------------------------------------------------------
    def _master_gone(self) -> None:
        """SIGUSR2, our master's death signal (master.py): stop, knowing it was that."""
        self.orphaned = True
        self.request_stop()

    def request_stop(self) -> None:
        """Begin a clean shutdown (what SIGTERM does)."""
        if self._stopping is not None:
            self._stopping.set()

    @property
    def address_file(self) -> Path:
        return self.run_dir / f"{self.name}.address"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    def log_file(self) -> Path:
        """``<SUBSYS>_LOG`` (by default HTCondor's names under LOG: CollectorLog,
        NegotiatorLog, SchedLog, StartLog); a local-named daemon's is ``SchedLog.NAME``."""
        stem = _LOG_NAMES.get(self.base_name, self.base_name.capitalize())
        if self.local_name:
            return self.log_dir / f"{stem}Log.{self.name}"
        configured = (self.config.get(f"{self.subsys}_LOG") or "").strip()
        return Path(configured) if configured else self.log_dir / f"{stem}Log"

    def served_handlers(self) -> dict[str, Handler]:
        """What the server answers: the daemon's own commands and RECONFIG, which every
        daemon takes."""
        handlers = self.handlers()
        handlers.setdefault("RECONFIG", self.h_reconfig)
        handlers.setdefault("CONFIG_VAL", self.h_config_val)
        return handlers

    async def h_config_val(self, req: dict[str, Any], peer: Any) -> dict[str, Any]:
        """CONFIG_VAL: knobs as this daemon reads them (``config_val.answer``). Names to
        anyone READ lets in; values only to an authenticated peer (a token, SSL,
        Kerberos or a local account over the Unix socket): an admin's configuration may
        hold what a stranger on the network should not read, whatever roost's defaults are."""
        if req.get("names") is not None and getattr(peer, "identity", None) is None:
            raise RequestError("DENIED", "CONFIG_VAL: values are for authenticated peers")
        return config_val.answer(self.config, req)

    async def h_reconfig(self, req: dict[str, Any], peer: Any) -> dict[str, Any]:
        """RECONFIG: reread the configuration files and apply what can change while
        running (who may do what, the daemon's token, UPDATE_INTERVAL and what
        :meth:`reconfigured` takes), keeping every job, claim and ad. A configuration
        that does not read is refused and the old one stays. ``UID_DOMAIN`` names the
        users of queued jobs and running claims: changing it needs a restart."""
        config, security = reread(self._config_path, self.subsys, self.local_name)
        old = self._security
        self.config, self._security = config, security
        if old is not None:
            self.spawn(old.close(), "close-old-security")
        if self.server is not None:
            security.install(self.server, self.listen_on()[0])
            reconfigure_admission(self.server, config)
        if self.collector is not None:  # a new token (a new pool key, say) on the next connection
            self.spawn(self.collector.close(), "close-old-collector-client")
            self.collector, self._collector_address = None, None
        self.update_interval = config.get_float("UPDATE_INTERVAL", 300.0) or 300.0
        await self.reconfigured()
        self.log.info("reconfigured from %s", ", ".join(config.files) or "defaults")
        return {"files": config.files}

    async def reconfigured(self) -> None:
        """Apply a new ``self.config`` after RECONFIG (daemons override)."""

    #: keep the same TCP port across restarts where it is free (``$(RUN)/<name>.port``):
    #: what others cached (the collector's address, a startd's claims) keeps working
    sticky_port = False

    async def listen(self) -> Server:
        """Serve on ``listen_on()``; a daemon with ``sticky_port`` and no port configured
        takes the port it had before, where it is free."""
        host, port = self.listen_on()
        sticky = self.run_dir / f"{self.name}.port" if self.sticky_port and port == 0 else None
        server: Server | None = None
        if sticky is not None:
            try:
                previous = int(sticky.read_text().strip() or 0)
            except (OSError, ValueError):
                previous = 0
            if 0 < previous < 65536:
                try:
                    server = await self._serve(host, previous)
                except OSError as e:
                    self.log.info("port %d of the previous %s is taken (%s): listening elsewhere",
                                  previous, self.name, e.strerror)
        if server is None:
            server = await self._serve(host, port)
        if sticky is not None and server.tcp_address:
            with contextlib.suppress(OSError):
                write_address(sticky, server.tcp_address.rsplit(":", 1)[1])
        return server

    async def _serve(self, host: str, port: int) -> Server:
        return await serve(
            self.served_handlers(), host=host, port=port, unix_path=self.unix_socket(),
            max_frame=self.max_frame, **self.security.serve_args(host),
            **connection_args(self.config, raise_fd_limit()),
        )

    async def main(self) -> int:
        """Run until asked to stop; the exit status."""
        self._stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.request_stop)
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGUSR2, self._master_gone)
        self.log.info("starting %s (pid %d, home %s)", self.name, os.getpid(), self.home)
        await self.start()
        self.server = await self.listen()
        self.address = advertised(self.server.address, self.advertise_host())
        write_address(self.address_file, self.address)
        write_address(self.pid_file, str(os.getpid()))
        self.log.info("listening on %s", self.address)
        self._collector_client()
        await self.started()
        self.spawn(self._advertise_loop(), "advertise")
        try:
            await self._stopping.wait()
        finally:
            await self._shutdown()
        return 0

    async def _shutdown(self) -> None:
        self.log.info("shutting down")
        current = asyncio.current_task()
        pending = {t for t in self._tasks if t is not current}
        while pending:
            # Python 3.11's wait_for can swallow a cancellation that lands as its inner
            # wait completes, and the task then runs on: cancel again until all are done
            for t in pending:
                t.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.2)
        for ad_type, name in list(self._advertised):
            try:
                async with asyncio.timeout(1.0):
                    await self.invalidate(ad_type, name)
            except TimeoutError:
                break
        try:
            await self.stop()
        except Exception:
            self.log.exception("stop() failed")
        if self.server is not None:
            await self.server.close()
        if self.collector is not None:
            await self.collector.close()
        if self.address:
            remove_address(self.address_file, self.address)
        remove_address(self.pid_file, str(os.getpid()))
        self.log.info("stopped")

    def run(self) -> int:
        """Set up logging and run the event loop (uvloop where installed)."""
        level = logging.INFO
        debug = (self.config.get(f"{self.subsys}_DEBUG") or "").upper()
        if "D_FULLDEBUG" in debug or "D_ALL" in debug:
            level = logging.DEBUG
        self._log_handler = setup_logging(self.log_file(), level)
        try:
            self.security  # noqa: B018 -- a bad SEC_*/ALLOW_* setting stops the daemon now, in one line
        except (ConfigError, TokenError) as e:
            self.log.error("%s cannot start: %s", self.name, e)
            print(f"roost {self.name}: {e}", file=sys.stderr)
            return 1
        try:
            return int(run_event_loop(self.main()))
        except CannotStart as e:
            self.log.error("%s cannot start: %s", self.name, e)
            return DAEMON_NO_RESTART
        except Exception:
            self.log.exception("%s died", self.name)
            return 1


def run_event_loop(main: Any) -> Any:
    """Run a daemon's main coroutine on uvloop where it is installed (a project
    dependency: ~2x cheaper per message than asyncio's own loop), else asyncio's."""
    try:
        # lazy: an optional dependency, looked for once at start-up
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def daemon_name(configured: str | None, hostname: str, local_name: str | None) -> str:
    """A daemon's Name: ``<SUBSYS>_NAME`` (with ``@host`` added when it has none, as
    HTCondor does), else ``local@host`` for a local-named daemon, else the host name."""
    name = (configured or "").strip()
    if name:
        return name if "@" in name else f"{name}@{hostname}"
    return f"{local_name.lower()}@{hostname}" if local_name else hostname


def local_name_arg(argv: list[str]) -> str | None:
    """``-local-name NAME`` from a daemon's command line (HTCondor's option)."""
    for i, arg in enumerate(argv):
        if arg in ("-local-name", "--local-name") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(("-local-name=", "--local-name=")):
            return arg.split("=", 1)[1]
    return None


def run(daemon_cls: Callable[..., Daemon]) -> None:
    """Entry point of ``python -m roost.daemons.<name>``: build, run, exit with its status."""
    local = local_name_arg(sys.argv[1:])
    sys.exit((daemon_cls(local_name=local) if local else daemon_cls()).run())
