"""JOB_SHELL: a shell or one command beside a running job (``roost ssh_to_job``,
HTCondor's condor_ssh_to_job and its starter's START_SSHD), over the connection the
schedd opened for it: no port of its own, no sshd.

The session runs as the job runs: as the job's user (never root), in its working
directory (the sandbox), with its environment (the starter's, which has HTCondor's
``_CONDOR_SCRATCH_DIR``, ``_CONDOR_JOB_AD`` ..., plus ``_CONDOR_JOB_IWD`` and
``_CONDOR_JOB_PIDS``), in its cgroup where it has one, started by the same
``launch.spawn`` that starts jobs. With a terminal it gets a pseudo-terminal of its
own (owned by the job's user) as its controlling terminal; a command without one
gets pipes, its stdout and stderr kept apart.

After the answer the connection carries :mod:`roost.net.relay` packets. The session
ends, and every process of it is killed (its session and process group, and only the
job user's), when its shell exits (after its last output, then its exit status), when
the connection ends, or when the job stops running (an ``ERROR`` packet says so).
``ENABLE_SSH_TO_JOB`` (HTCondor's knob, default true) turns it off here.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import pwd
import signal
import struct
import termios
import threading
from collections.abc import Callable
from typing import Any

from roost.daemons.startd import launch
from roost.daemons.startd.peek import StarterTable, find_starter
from roost.daemons.startd.starter import Starter
from roost.net import relay
from roost.net.errors import RequestError
from roost.net.server import Peer

log = logging.getLogger(__name__)

SH = "/bin/sh"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
#: the most sessions one startd serves at once
MAX_SESSIONS = 64
#: seconds a session's output may keep coming after its shell exited (a background
#: process holding it open), and the longest wait for the tool's GO
DRAIN_GRACE = 1.0
GO_WAIT = 30.0
JOB_POLL = 0.5  # seconds between looks at whether the job still runs
# Re-open the terminal by name: a session leader that opens a terminal makes it its
# controlling terminal (job control, ^C), which an inherited descriptor does not.
_CTTY = 'exec 0<>"$0" 1>&0 2>&0; exec "$@"'
_WINSIZE = struct.Struct("HHHH")


def login_shell(uid: int) -> str:
    """The user's shell where it is a real one (listed in /etc/shells), else /bin/sh
    (``nobody``'s is nologin)."""
    try:
        shell = pwd.getpwuid(uid).pw_shell
        with open("/etc/shells") as f:
            allowed = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    except (KeyError, OSError):
        return SH
    return shell if shell in allowed and os.access(shell, os.X_OK) else SH


def session_members(sid: int, uid: int) -> list[int]:
    """Processes of session (or process group) ``sid`` that belong to ``uid``: what is
    left of a session to kill (a pid reused since by someone else is not touched)."""
    out = []
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return out
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2:].split()
            if sid in (int(fields[2]), int(fields[3])) and os.stat(f"/proc/{entry}").st_uid == uid:
                out.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return out


def set_window(fd: int, rows: int, cols: int) -> None:
    if rows > 0 and cols > 0:
        with contextlib.suppress(OSError):
            fcntl.ioctl(fd, termios.TIOCSWINSZ, _WINSIZE.pack(min(rows, 0xFFFF), min(cols, 0xFFFF), 0, 0))


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.add_reader(fd, lambda: fut.done() or fut.set_result(None))
    try:
        await fut
    finally:
        loop.remove_reader(fd)


async def _writable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.add_writer(fd, lambda: fut.done() or fut.set_result(None))
    try:
        await fut
    finally:
        loop.remove_writer(fd)


class Session:
    """One JOB_SHELL session: its processes, its terminal or pipes, its relay."""

    def __init__(self, starter: Starter, command: str | None, pty: bool, term: str | None,
                 rows: int, cols: int) -> None:
        self.starter = starter
        self.command = command
        self.pty = pty
        self.term = term
        self.rows, self.cols = rows, cols
        ident = starter.identity
        self.uid = ident.uid if ident.switch else os.getuid()
        self.pid: int | None = None
        self.proc: Any = None
        self.stdin_fd = -1  # ours: the terminal's master, or the stdin pipe's write end
        self.outputs: list[tuple[int, bytes]] = []  # (our end, packet kind)
        self._go = asyncio.Event()
        self._lock = asyncio.Lock()
        self._writer: asyncio.StreamWriter | None = None
        self._closed: set[int] = set()
        self.ended: asyncio.Future[tuple[int | None, int | None]] | None = None

    @property
    def cwd(self) -> str:
        s = self.starter
        return s.sandbox if s.spec.transfer else s.spec.iwd

    def _env(self) -> dict[str, str]:
        s = self.starter
        env = dict(s.env)
        env.setdefault("PATH", DEFAULT_PATH)
        env["_CONDOR_JOB_IWD"] = self.cwd
        if s.pid is not None:
            env["_CONDOR_JOB_PIDS"] = str(s.pid)
        try:
            pw = pwd.getpwuid(self.uid)
            for k, v in (("USER", pw.pw_name), ("LOGNAME", pw.pw_name), ("HOME", pw.pw_dir)):
                env.setdefault(k, v)
        except KeyError:
            pass
        if self.pty:
            env["TERM"] = self.term or env.get("TERM") or "xterm"
        return env

    async def start(self) -> None:
        """Start the shell or command (as the job's user, in its cgroup); OSError or
        launch's errors when it cannot be."""
        s, ident = self.starter, self.starter.identity
        if ident.switch and ident.uid == 0:
            raise RequestError("DENIED", f"job {s.spec.job_id} runs as root here: no shell is started as root")
        shell = login_shell(self.uid)
        theirs: list[int] = []
        try:
            if self.pty:
                master, slave = os.openpty()
                theirs.append(slave)
                self.stdin_fd = master
                self.outputs = [(master, relay.STDOUT)]
                if ident.switch:
                    os.fchown(slave, ident.uid, -1)
                    os.fchmod(slave, 0o600)
                set_window(slave, self.rows, self.cols)
                tail = [shell, "-i"] if self.command is None else [SH, "-c", self.command]
                argv = [SH, "-c", _CTTY, os.ttyname(slave), *tail]
                std = (slave, slave, slave)
            else:
                i_r, i_w = os.pipe()
                o_r, o_w = os.pipe()
                e_r, e_w = os.pipe()
                theirs += [i_r, o_w, e_w]
                self.stdin_fd = i_w
                self.outputs = [(o_r, relay.STDOUT), (e_r, relay.STDERR)]
                # no terminal: the shell reads its commands from stdin, as ssh's does
                argv = [shell] if self.command is None else [SH, "-c", self.command]
                std = (i_r, o_w, e_w)
            for fd in {self.stdin_fd, *(fd for fd, _ in self.outputs)}:
                os.set_blocking(fd, False)
                os.set_inheritable(fd, False)
            request = launch.Launch(
                argv=argv, executable=argv[0], cwd=self.cwd, env=self._env(),
                stdin=std[0], stdout=std[1], stderr=std[2],
                uid=ident.uid if ident.switch else None, gid=ident.gid if ident.switch else None,
                init_groups=ident.real_owner, cgroup_procs=s.cgroups.procs_file(s.name),
            )
            # without the launcher helper the shell waits to be moved into the job's cgroup
            moved = None if launch.shim_enters_cgroup(request) else (lambda p: s.cgroups.enter(s.name, p.pid))
            self.proc = await launch.spawn(request, moved)
            self.pid = self.proc.pid
            self.ended = asyncio.ensure_future(self._ended())  # reaped whatever happens next
        except BaseException:
            self.close()
            raise
        finally:
            for fd in theirs:
                os.close(fd)

    # -- the relay ------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
        """Relay until the session ends; how it ended, for the log."""
        self._writer = writer
        assert self.ended is not None
        ended = self.ended
        inbound = asyncio.ensure_future(self._inbound(reader))
        job_gone = asyncio.ensure_future(self._job_gone())
        pumps = [asyncio.ensure_future(self._pump(fd, kind)) for fd, kind in self.outputs]
        try:
            done, _ = await asyncio.wait({inbound, ended, job_gone}, return_when=asyncio.FIRST_COMPLETED)
            if ended in done:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(GO_WAIT):
                        await self._go.wait()
                await asyncio.wait(pumps, timeout=DRAIN_GRACE)  # its last output
                self.kill()
                await asyncio.wait(pumps, timeout=0.2)
                code, sig = ended.result()
                await self._send(relay.exit_packet(code, sig))
                return f"exited ({'signal ' + str(sig) if sig else code})"
            if job_gone in done:
                self.kill()
                await asyncio.wait(pumps, timeout=0.2)
                await self._send(relay.pack(relay.ERROR, f"job {self.starter.spec.job_id} is no longer "
                                            "running: the session is closed".encode()))
                return "closed: the job ended"
            return "closed by the tool"
        finally:
            for t in (inbound, ended, job_gone, *pumps):
                if t is not ended:
                    t.cancel()
            self.kill()
            for t in (inbound, job_gone, *pumps):
                with contextlib.suppress(BaseException):
                    await t
            self.close()

    async def _send(self, packet: bytes) -> None:
        assert self._writer is not None
        async with self._lock:
            self._writer.write(packet)
            await self._writer.drain()

    async def _inbound(self, reader: asyncio.StreamReader) -> None:
        """The tool's packets, until it goes away."""
        while True:
            try:
                kind, data = await relay.read_packet(reader)
            except (asyncio.IncompleteReadError, ConnectionError, relay.RelayError):
                return
            if kind == relay.GO:
                self._go.set()
            elif kind == relay.STDIN:
                await self._write_stdin(data)
            elif kind == relay.STDIN_EOF:
                if self.pty:
                    await self._write_stdin(b"\x04")
                else:
                    self._close_fd(self.stdin_fd)
            elif kind == relay.WINDOW and self.pty:
                with contextlib.suppress(relay.RelayError):
                    set_window(self.stdin_fd, *relay.parse_window(data))
            # anything else: a newer tool's packet, ignored

    async def _write_stdin(self, data: bytes) -> None:
        view = memoryview(data)
        while view and self.stdin_fd not in self._closed:
            try:
                n = os.write(self.stdin_fd, view)
            except BlockingIOError:
                await _writable(self.stdin_fd)
                continue
            except OSError:
                return  # nobody reads it any more (EPIPE, EIO): dropped, as a closed pipe would
            view = view[n:]

    async def _pump(self, fd: int, kind: bytes) -> None:
        await self._go.wait()
        while fd not in self._closed:
            await _readable(fd)
            try:
                data = os.read(fd, relay.CHUNK)
            except BlockingIOError:
                continue
            except OSError as e:  # EIO: the terminal's last holder closed it
                if e.errno not in (errno.EIO, errno.EBADF):
                    log.info("job %s: session output: %s", self.starter.spec.job_id, e)
                return
            if not data:
                return
            await self._send(relay.pack(kind, data))

    async def _ended(self) -> tuple[int | None, int | None]:
        """(exit code, signal) once the session's shell is gone: its pidfd (of its
        keeper, when it has one) readable, then a wait that no longer blocks. No
        executor thread: a session may last hours, and the startd's few are shared."""
        proc, loop = self.proc, asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        try:
            pidfd = os.pidfd_open(getattr(proc, "keeper_pid", proc.pid))
        except (OSError, AttributeError):  # no pidfds (Linux < 5.3): a thread of its own waits
            threading.Thread(target=lambda: (proc.wait(), loop.call_soon_threadsafe(
                lambda: fut.done() or fut.set_result(None))), name=f"session-{self.pid}", daemon=True).start()
            await fut
        else:
            loop.add_reader(pidfd, lambda: fut.done() or fut.set_result(None))
            try:
                await fut
            finally:
                loop.remove_reader(pidfd)
                os.close(pidfd)
        rc = proc.wait()
        return (rc, None) if rc >= 0 else (None, -rc)

    async def _job_gone(self) -> None:
        s = self.starter
        while s.state == "running" and not s.vacating:
            await asyncio.sleep(JOB_POLL)

    # -- the end --------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL every process of the session (its session and process group: a job
        control shell puts its jobs in groups of their own), the job user's only."""
        if self.pid is None:
            return
        for pid in session_members(self.pid, self.uid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def _close_fd(self, fd: int) -> None:
        if fd >= 0 and fd not in self._closed:
            self._closed.add(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def close(self) -> None:
        for fd in {self.stdin_fd, *(fd for fd, _ in self.outputs)}:
            self._close_fd(fd)


class ShellCalls:
    """The startd's JOB_SHELL handler and its sessions."""

    def __init__(self, table: StarterTable, enabled: Callable[[], bool]) -> None:
        self.table = table
        self.enabled = enabled  # ENABLE_SSH_TO_JOB, read at each request (RECONFIG changes it)
        self.sessions: set[Session] = set()

    async def h_job_shell(self, req: dict[str, Any], peer: Peer) -> dict[str, Any] | None:
        job = req["job"]
        if not self.enabled():
            raise RequestError("DENIED", "ssh_to_job is disabled on this execute machine (ENABLE_SSH_TO_JOB = False)")
        starter = find_starter(self.table, req["claim_id"], job, ended_too=False)
        if starter.state != "running" or starter.vacating or starter.pid is None:
            raise RequestError("NOT_RUNNING", f"job {job} is not running (its starter is {starter.state})")
        if len(self.sessions) >= MAX_SESSIONS:
            raise RequestError("DENIED", f"this execute machine serves {MAX_SESSIONS} ssh_to_job sessions already")
        command = req.get("command")
        rows, cols = req.get("rows") or 0, req.get("cols") or 0
        session = Session(starter, command if command else None, bool(req.get("pty")), req.get("term"), rows, cols)
        try:
            await session.start()
        except (OSError, ValueError) as e:
            why = f"{e.strerror}: {e.filename}" if isinstance(e, OSError) and e.filename else str(e)
            raise RequestError("DENIED", f"job {job}: cannot start a shell: {why}") from None
        self.sessions.add(session)
        log.info("job %s: ssh_to_job session pid %s started (%s)", job, session.pid,
                 "terminal" if session.pty else "command" if command else "shell without a terminal")
        try:
            await peer.respond({"pid": session.pid, "cwd": session.cwd, "pty": session.pty})
            how = await session.serve(peer.reader, peer.writer)
            log.info("job %s: ssh_to_job session pid %s %s", job, session.pid, how)
        finally:
            self.sessions.discard(session)
            session.kill()
            session.close()
            peer.writer.close()  # raw bytes went both ways: the connection is done
        return None


__all__ = ["MAX_SESSIONS", "Session", "ShellCalls", "login_shell", "session_members"]
