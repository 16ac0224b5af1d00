"""The starter: one asyncio task per running job, inside the startd.

It makes the sandbox, pulls input files from the schedd (GET_FILES), starts
the job in its own session and process group as the job's user, waits for
it on a pidfd (no thread, no polling; ``wait4`` gives the rusage), pushes the
outputs back (PUT_FILES) and reports with JOB_UPDATE. The final report is
kept and retried until the schedd acknowledges it, so a job that ends while
its schedd is down is reported after the schedd reconnects.

Every started job has a record in ``execute/.jobs/<sandbox>`` (a root-only
directory the job cannot touch): its pids, its claim and its ad, kept until
its final report is acknowledged. The job runs under its keeper (launch.py),
which writes the job's end to ``<sandbox>.exit`` beside it; so a startd that
dies leaves its jobs running, and the next one adopts them from their records
(``adopt``, leftovers.py) and carries on: it waits for the keeper, sends the
outputs and the final report. The connections to schedds that every starter
shares are ``peers.Peers``.

Size: one job's life on the execute side, start to acknowledged report. Its steps
(sandbox and input, process, usage, suspension, vacating, output, report, adoption)
read and write the same few fields at every turn, and what stands apart already
lives apart: starting processes (launch), sandbox file helpers (sandboxfiles),
records read back (leftovers), usage arithmetic (jobusage), limits (memlimit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import stat
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from roost.core.jobpolicy import HOLD_IWD_ERROR
from roost.daemons import userfiles
from roost.daemons.sandbox_paths import sandbox_relpath
from roost.daemons.startd import (
    chirp,
    chirpport,
    ckpt_signal,
    container,
    jobcommand,
    jobusage,
    launch,
    procstat,
    startfault,
)
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobspec import Identity, JobSpec, executable_path, job_file
from roost.daemons.startd.leftovers import JOBS_DIR, Record
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.peers import CALL_TIMEOUT, Peers
from roost.daemons.startd.sandboxfiles import (
    devnull,
    disk_kib,
    is_plain_file,
    remove_tree,
    write_all,
)
from roost.daemons.startd.streaming import OutputStreams, streamed_files
from roost.daemons.userfiles import User
from roost.net.client import Connection
from roost.net.errors import RemoteError

log = logging.getLogger(__name__)

CHUNK = 1 << 20
#: a container runtime's client runs as root with this, not the job's environment (passed in)
RUNTIME_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
INTERNAL_FILES = (".job.ad", ".machine.ad", chirp.CONFIG_NAME)
#: how long a checkpoint upload waits for a schedd that is away (restarting) before the
#: job goes on without it (seconds)
CHECKPOINT_RETRY_TIME = 120.0
#: how long one checkpoint upload may take, its wait for the schedd's admission included
#: (MAX_CONCURRENT_CHECKPOINT_UPLOADS: it queues behind others; the job waits anyway)
CHECKPOINT_UPLOAD_TIMEOUT = 3600.0


class TransferError(Exception):
    """Input or output files could not be moved. ``transient``: the infrastructure's
    fault (a connection cut, a schedd restarting), not the job's: the job runs again
    rather than being held."""

    def __init__(self, message: str, *, transient: bool = False, machine: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.machine = machine  # a shortage here (out of descriptors...): never held


class StartError(Exception):
    """The job cannot be started (its message goes to the schedd as is; ``hold_code``,
    when given, is the HTCondor hold code the schedd holds it with). ``machine``: the
    machine's fault, not the job's (startfault.py): the job is requeued, never held."""

    def __init__(self, message: str, hold_code: int | None = None, *, machine: bool = False) -> None:
        super().__init__(message)
        self.hold_code = hold_code
        self.machine = machine


def _safe_relpath(name: Any) -> str:
    """A transferred file's name, refused if it could leave the sandbox."""
    return sandbox_relpath(name, TransferError)


def _proc_start_ticks(pid: int) -> int | None:
    """Start time of a process (clock ticks since boot): tells a reused pid apart."""
    got = procstat.read(pid)
    return got.start_ticks if got is not None else None


class Starter:
    """One job on one claim: from sandbox to acknowledged final report.

    ``address_of`` gives the schedd's current address for the claim (it
    changes on RECONNECT); ``on_finished`` once the job's processes are gone
    and only its report is pending; ``on_done`` once the report is
    acknowledged (or abandoned) and the sandbox removed.
    """

    def __init__(
        self,
        *,
        spec: JobSpec,
        claim_id: str,
        slot_name: str,
        execute_dir: str,
        sandbox_name: str,
        identity: Identity,
        env: dict[str, str],
        job_ad_text: str,
        peers: Peers,
        address_of: Callable[[], str | None],
        on_done: Callable[[Starter], None],
        on_finished: Callable[[Starter], None] | None = None,
        cgroups: JobCgroups | None = None,
        memory: MemoryLimits | None = None,
        memory_limit: int | None = None,
        update_interval: float = 300.0,
        describe: Callable[[], dict[str, Any]] | None = None,
        disk_limit: int | None = None,
        cpu: CpuShares | None = None,
        cpus: int = 1,
        stream_interval: float = 1.0,
        chirp_settings: chirp.ChirpSettings | None = None,
        universes: jobcommand.Universes | None = None,
    ) -> None:
        self.spec = spec
        self.universes = universes  # the host's JVM and container runtime (jobcommand.py)
        #: a container job's container (its name): removed when the job is killed
        self.container: str | None = None
        self._container_gone = False  # its runtime client exited by itself: --rm removed it
        self._container_pid: int | None = None  # its first process, as the host sees it
        self.chirp_settings = chirp_settings  # the machine's Chirp knobs (None: no Chirp)
        self.chirp: chirp.ChirpServer | None = None  # the job's Chirp server (chirp.py)
        self.stream_interval = stream_interval  # STARTER_STREAM_INTERVAL: stream_output's pace
        self.streams: OutputStreams | None = None
        self._streamed: set[str] = set()  # roles (stdout, stderr) already whole on the submit side
        self.memory = memory or MemoryLimits(None, 0, "none")
        self.memory_limit = memory_limit  # bytes: the slot's memory
        self.update_interval = update_interval
        self.cpu = cpu or CpuShares(None, 0)
        self.cpus = cpus
        self.disk_limit = disk_limit  # KiB: the slot's Disk, where STARTD_DISK_LIMIT holds jobs to it
        self.disk_exceeded: tuple[int, int] | None = None  # (used, limit) KiB: killed for it
        self.claim_id = claim_id
        self.slot_name = slot_name
        self.execute_dir = execute_dir
        self.name = sandbox_name
        self.cgroups = cgroups if cgroups is not None else JobCgroups(None)
        self.sandbox = os.path.join(execute_dir, sandbox_name)
        self.marker = os.path.join(execute_dir, JOBS_DIR, sandbox_name)  # the job's record
        self.exit_path = self.marker + ".exit"  # its keeper writes the job's end here
        #: open only while a keeper is being started (it keeps its own): the startd reads the
        #: file by its name when the keeper ends (one descriptor less per running job)
        self._exit_fd: int | None = None
        self.describe = describe  # the claim's part of the record
        self._record: dict[str, Any] = {}
        self.started = 0.0
        self._adopted: Record | None = None
        self._poller: asyncio.Task[None] | None = None
        self.detached = False
        self.identity = identity
        self.env = env
        self.job_ad_text = job_ad_text
        self.peers = peers
        self.address_of = address_of
        self.on_done = on_done
        self.on_finished = on_finished
        self.state = "starting"  # starting, running, exited (final report pending), done
        self.pid: int | None = None
        self.final: dict[str, Any] | None = None
        self.vacating = False
        self.suspended = False
        self.abandoned = False
        self.files_sent = False
        self._prep: asyncio.Future[float] | None = None
        self._preset_error: str | None = None
        self._mkdir: asyncio.Future[None] | None = None
        self.task: asyncio.Task[None] | None = None
        self._proc: subprocess.Popen[bytes] | launch.Kept | None = None
        self._exited: asyncio.Future[tuple[int, Any]] | None = None
        self._retry = asyncio.Event()
        self._telling: asyncio.Task[None] | None = None
        self._reaped = False
        self._inputs: dict[str, tuple[int, int]] = {}
        #: what the output transfer could not do (the job's fault: the schedd holds it)
        self.output_problems: list[str] = []
        self._reaped_and_killed = False
        self._move_after_exec = True
        self._saved = asyncio.Event()  # set once what a vacated job leaves is in the spool
        self._vacate_why: str | None = None
        self.run_started = 0.0  # when the current run (or restart in place) began

    # -- the job's life ------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        self._loop = asyncio.get_running_loop()
        self.task = self._loop.create_task(self._run(), name=f"starter {self.spec.job_id}")
        return self.task

    async def _run(self) -> None:
        running_report: asyncio.Task[Any] | None = None
        try:
            self._prep = asyncio.ensure_future(self._prepare())
            try:
                started = await self._prep
            except asyncio.CancelledError:
                if not self.vacating or self.abandoned:
                    raise
                self.final = {"state": "vacated"}
            except (OSError, TransferError, ValueError, StartError) as e:
                self.final = {"state": "failed", "error": self._why(e)}
                if isinstance(e, TransferError) and e.transient:
                    self.final["retry"] = True  # not the job's fault: the schedd runs it again
                if isinstance(e, StartError | TransferError) and e.machine or startfault.machine_fault(e):
                    # short of descriptors, processes, memory, disk...: the job is not to
                    # blame, it runs again (elsewhere or later), however often it happens
                    self.final["retry"] = self.final["machine"] = True
                elif isinstance(e, StartError) and e.hold_code is not None:
                    self.final["hold_code"] = e.hold_code
                log.info("job %s failed to start%s: %s", self.spec.job_id,
                         " (the machine's fault: it runs again)" if self.final.get("machine") else "",
                         self.final["error"])
            else:
                self.state = "running"
                running_report = asyncio.ensure_future(self._report({"state": "running", "pid": self.pid}))
                sampler = asyncio.ensure_future(self._sample_usage())
                # +WantCheckpointSignal: its checkpoint signal every interval (ckpt_signal.py)
                ticker = ckpt_signal.start(self.spec, lambda: None if self.suspended or self.vacating
                                           or not self._alive() else self.pid, lambda: self.run_started)
                restart_error: str | None = None
                try:
                    status, usage = await self._wait()
                    sent = False  # this exit's checkpoint is already with the schedd
                    while self._checkpointed(status) and not self.vacating:
                        # a self-checkpointing job: its checkpoint to the schedd, then it runs
                        # again in place (HTCondor's checkpoint_exit_code). What the run left
                        # behind dies now, while its group id is surely still its own (an
                        # upload may wait long; the id could be anyone's by then).
                        self._end_group()
                        await self._send_checkpoint()
                        sent = True
                        if self.vacating:
                            break
                        sent = False
                        self._reaped = False
                        try:
                            self._exit_fd = os.open(self.exit_path, os.O_RDWR | os.O_CLOEXEC)
                            os.pwrite(self._exit_fd, b" " * launch.EXIT_RECORD_SIZE, 0)
                            await self._spawn(restart=True)
                            if self.vacating:  # vacated while it was being started again
                                self._kill_group(signal.SIGKILL)
                        except (OSError, StartError) as e:
                            restart_error = f"cannot restart the job after its checkpoint: {self._why(e)}"
                            log.warning("job %s: %s", self.spec.job_id, restart_error)
                            status, usage = None, None
                            break
                        status, usage = await self._wait()
                    evicted = self.spec.evict_transfer and self._vacate_why != "remove"  # a removed job's go nowhere
                    if self.vacating and not sent and (self._checkpointed(status) or evicted):
                        # it caught the vacate signal and wrote a checkpoint, or its outputs
                        # are kept on eviction (ON_EXIT_OR_EVICT): to the spool, before the
                        # schedd hears it was vacated (vacate() waits for this)
                        await self._send_checkpoint()
                finally:
                    sampler.cancel()
                    if ticker is not None:
                        ticker.cancel()
                    self._saved.set()
                    if self.streams is not None and self.vacating:
                        self.streams.close()
                self._kill_group(signal.SIGKILL)  # what it left running dies before outputs move
                # cgroup.kill/killpg after the job's exit leave nothing that could start more:
                # the final clean-up need not send them again (two syscalls fewer per job).
                self._reaped_and_killed = True
                wall = time.time() - started
                self.final = self._exit_update(status, usage, wall)
                if restart_error is not None:  # not the job's fault: it runs again, from its checkpoint
                    self.final["error"] = restart_error
                if self.disk_exceeded is not None and not self.vacating and self.final["state"] == "exited":
                    used, limit = self.disk_exceeded
                    self.final["disk"] = {"usage_kb": used, "limit_kb": limit}
                    self.final["usage"]["DiskUsage"] = used
                if self.vacating:
                    self.final = {"state": "vacated", "usage": self.final["usage"]}
                elif status is None:
                    log.warning("job %s: %s", self.spec.job_id, self.final["error"])
                log.info("job %s %s", self.spec.job_id, _describe_exit(self.final))
            self.state = "exited"
            if self.abandoned:
                return
            if self.on_finished is not None:
                self.on_finished(self)  # the claim may take its next job while we report
            if running_report is not None:
                with contextlib.suppress(Exception):
                    await running_report
            await self._deliver()
        except Exception:
            log.exception("job %s: its starter failed", self.spec.job_id)
            raise
        finally:
            if running_report is not None and not running_report.done():
                running_report.cancel()
            if self.streams is not None:
                self.streams.close()
            if self.chirp is not None:
                self.chirp.close()
            if not self.detached:
                self._kill_group(signal.SIGKILL)
                self._remove_sandbox()
                self.state = "done"
                self.on_done(self)

    def adopt(self, record: Record) -> asyncio.Task[None]:
        """Carry on with a job a previous startd started (its keeper still waits for
        it, or has written its end): no sandbox made, no input, no process started."""
        self._adopted = record
        self.pid = record.pid
        if self.spec.job_ad is not None and container.is_container_job(self.spec.job_ad) \
                and self.universes is not None:
            self.container = self.universes.container_name(self.name)
        self.started = record.started
        self._record = dict(record.data)
        self._mkdir = asyncio.get_running_loop().create_future()
        self._mkdir.set_result(None)  # the sandbox exists: _clean removes it
        if not record.alive():
            # reaped long ago: its pid (a group leader's) may be anyone's now; the job's
            # cgroup alone is killed
            self._reaped_and_killed = True
        return self.start()

    async def _prepare(self) -> float:
        """Sandbox, input files and the process; the job's start time."""
        if self._adopted is not None:
            self._watch(self._adopted.keeper or self._adopted.pid, adopted=True)
            self._stream(fresh=False)
            self.chirp = await chirp.serve(self, self.chirp_settings, resume=True, shared=chirpport.shared_listener())
            return self.started
        if self._preset_error is not None:
            raise StartError(self._preset_error)
        self._mkdir = asyncio.ensure_future(launch.on_sandboxer(self._make_sandbox))
        try:
            await asyncio.shield(self._mkdir)
        except (OSError, ValueError) as e:  # the execute directory, cgroups: all the machine's
            raise StartError(f"cannot make the job's sandbox: {self._why(e)}", machine=True) from None
        if self.spec.transfer:
            await self._get_files()
        self._chown(self.sandbox)
        self.started = time.time()
        if self.describe is not None:
            self._record = self.describe()
        # .chirp.config, before the job
        self.chirp = await chirp.serve(self, self.chirp_settings, shared=chirpport.shared_listener())
        try:
            await jobcommand.prepare(self.spec, self.universes, self.job_user())  # a container job's image, pulled
        except jobcommand.CommandError as e:
            raise StartError(str(e)) from None
        await self._spawn()
        self._stream(fresh=True)
        return self.started

    def _stream(self, fresh: bool) -> None:
        """stream_output / stream_error: the job's files sent while it runs (streaming.py)."""
        spec = self.spec
        files = streamed_files(spec.stream_out, spec.stream_err, job_file(spec, spec.stdout, self.sandbox),
                               job_file(spec, spec.stderr, self.sandbox)) if spec.transfer else []
        if files:
            self.streams = OutputStreams(spec.job_id, files, self.stream_interval, self._schedd_connection,
                                         lambda: {"job": spec.job_id, "claim_id": self.claim_id}, self.sandbox)
            self.streams.start(fresh)

    @contextlib.asynccontextmanager
    async def _schedd_connection(self) -> AsyncIterator[Connection]:
        address = self.address_of()
        if not address:
            raise ConnectionError("no schedd address for this claim")
        async with self.peers.connection(address) as conn, asyncio.timeout(CALL_TIMEOUT * 10):
            yield conn

    def fail_before_start(self, error: str) -> asyncio.Task[None]:
        """Report ``failed`` with ``error`` without starting anything."""
        self._preset_error = error
        return self.start()

    def _why(self, e: BaseException) -> str:
        if isinstance(e, StartError | launch.ExecError):  # ExecError: HTCondor's words already
            return str(e)
        if isinstance(e, TransferError):
            return f"input transfer failed: {e}"
        if isinstance(e, FileNotFoundError | PermissionError) and e.filename:
            what = "not found" if isinstance(e, FileNotFoundError) else "permission denied"
            return f"cannot execute {e.filename}: {what}"
        if isinstance(e, OSError):
            return f"cannot start the job: {e.strerror or e}"
        return f"cannot start the job: {e}"

    # -- sandbox and files ---------------------------------------------------------------

    def _chown(self, path: str) -> None:
        if self.identity.switch:
            os.chown(path, self.identity.uid, self.identity.gid, follow_symlinks=False)

    def _make_sandbox(self) -> None:
        # Root-owned until the inputs are in (see _prepare): nothing else can meddle.
        os.mkdir(self.sandbox, 0o700)
        self.cgroups.create(self.name)
        self.memory.create(self.name, self.memory_limit, self.slot_name)
        self.cpu.create(self.name, self.cpus, self.slot_name)
        self._exit_fd = os.open(self.exit_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        # its blocks taken now: a job that fills the disk cannot stop its keeper from
        # writing its end there (the keeper overwrites these blanks in place)
        os.pwrite(self._exit_fd, b" " * launch.EXIT_RECORD_SIZE, 0)
        if self.spec.transfer:
            path = os.path.join(self.sandbox, ".job.ad")
            with open(path, "w") as f:
                f.write(self.job_ad_text)
            self._chown(path)

    async def _get_files(self) -> None:
        address = self.address_of()
        if not address:
            raise TransferError("no schedd address for this claim")
        exe = os.path.basename(self.spec.cmd) if self.spec.transfer_executable else None
        try:
            async with self.peers.connection(address) as conn, asyncio.timeout(CALL_TIMEOUT * 10):
                resp = await conn.request("GET_FILES", job=self.spec.job_id, claim_id=self.claim_id)
                files = resp.get("files") or []
                if not isinstance(files, list):
                    raise TransferError("GET_FILES answer has no file list")
                for entry in files:
                    await self._receive(conn, entry, exe)
        except RemoteError as e:
            # NOT_FOUND: the schedd does not (yet) serve this job on this claim (it restarted
            # and is reconnecting, or requeued the job): its state, not the job's fault
            raise TransferError(f"schedd refused GET_FILES: {e.message}", transient=e.code == "NOT_FOUND") from None
        except (ConnectionError, TimeoutError) as e:  # the link or the schedd, not the job
            raise TransferError(f"GET_FILES from {address}: {e or 'timed out'}", transient=True,
                                machine=startfault.is_shortage(e)) from None
        for entry in os.scandir(self.sandbox):
            st = entry.stat(follow_symlinks=False)
            self._inputs[entry.name] = (st.st_size, st.st_mtime_ns)

    async def _receive(self, conn: Connection, entry: Any, exe: str | None) -> None:
        if not isinstance(entry, dict):
            raise TransferError("GET_FILES entry is not an object")
        name = _safe_relpath(entry.get("name"))
        size = entry.get("size")
        if type(size) is not int or size < 0:
            raise TransferError(f"bad size for {name!r}")
        mode = entry.get("mode")
        mode = (mode & 0o777) if type(mode) is int else 0o644
        if name == exe or entry.get("role") == "executable":
            mode |= 0o755
        path = os.path.join(self.sandbox, name)
        parent = os.path.dirname(path)
        if parent != self.sandbox:
            self._make_dirs(parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            left = size
            while left:
                chunk = await conn.read_exactly(min(left, CHUNK))
                write_all(fd, chunk)
                left -= len(chunk)
            os.fchmod(fd, mode)
            if self.identity.switch:
                os.fchown(fd, self.identity.uid, self.identity.gid)
        finally:
            os.close(fd)

    def _make_dirs(self, path: str) -> None:
        rel = os.path.relpath(path, self.sandbox)
        cur = self.sandbox
        for part in rel.split(os.sep):
            cur = os.path.join(cur, part)
            try:
                os.mkdir(cur, 0o755)
                self._chown(cur)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(cur).st_mode):
                    raise TransferError(f"{rel!r} is not a directory") from None

    def _outputs(self, checkpoint: bool = False) -> list[tuple[str, str, str]]:
        """(name on the wire, path here, role) of every file to send back, HTCondor's rules;
        ``checkpoint``: the checkpoint's files instead (transfer_checkpoint_files, else
        the outputs but stdout and stderr)."""
        spec, box = self.spec, self.sandbox
        out: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for std, role in ((spec.stdout, "stdout"), (spec.stderr, "stderr")):
            if checkpoint or role in self._streamed:
                if std is not None:
                    seen.add(os.path.basename(std))
                continue
            if std is not None:
                name = os.path.basename(std)
                path = os.path.join(box, name)
                if name not in seen and is_plain_file(path):
                    out.append((name, path, role))
                    seen.add(name)
        if checkpoint and spec.checkpoint_files is not None:
            wanted = spec.checkpoint_files
        elif spec.transfer_output is not None:
            wanted = spec.transfer_output
        else:
            wanted = []
            for entry in os.scandir(box):
                if entry.name in seen or entry.name in INTERNAL_FILES:
                    continue
                st = entry.stat(follow_symlinks=False)
                if self._inputs.get(entry.name) == (st.st_size, st.st_mtime_ns):
                    continue
                if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                    wanted.append(entry.name)
        for item in wanted:
            try:
                rel = _safe_relpath(item)
            except TransferError:
                self.output_problems.append(f"output {item!r} is outside the job's sandbox")
                continue
            path = os.path.join(box, rel)
            # preserve_relative_paths: a relative entry comes back under its own path
            base = rel if spec.preserve_relative_paths else os.path.basename(rel)
            if os.path.isdir(path) and not os.path.islink(path):
                for root, _dirs, files in os.walk(path):
                    for f in sorted(files):
                        full = os.path.join(root, f)
                        if is_plain_file(full):
                            out.append((os.path.join(base, os.path.relpath(full, path)), full, ""))
            elif is_plain_file(path):
                if base not in seen:
                    out.append((base, path, ""))
                    seen.add(base)
            elif spec.transfer_output is not None and not checkpoint:
                # named in transfer_output_files: HTCondor holds a job that did not make it
                self.output_problems.append(f"{item}: the job did not create it (No such file or directory)")
        return out

    def _checkpointed(self, status: int | None) -> bool:
        """The job says it wrote a checkpoint: its checkpoint exit code, or death by its
        SuccessCheckpointExitSignal."""
        spec = self.spec
        if status is None or not spec.transfer:
            return False
        if os.WIFEXITED(status):
            return spec.checkpoint_exit_code is not None and os.WEXITSTATUS(status) == spec.checkpoint_exit_code
        return os.WIFSIGNALED(status) and os.WTERMSIG(status) == spec.checkpoint_exit_signal

    async def _send_checkpoint(self) -> None:
        """PUT_CHECKPOINT. A schedd that is away or does not yet serve the claim (it
        restarted and has not RECONNECTed) is waited for, up to CHECKPOINT_RETRY_TIME
        (the job waits too, as in HTCondor); any other failure leaves the schedd's
        previous checkpoint and the job goes on (from its own files, here)."""
        entries = self._outputs(checkpoint=True)
        delay, deadline = 0.25, time.monotonic() + CHECKPOINT_RETRY_TIME
        while True:
            address = self.address_of()
            try:
                if not address:
                    raise ConnectionError("no schedd address for this claim")
                await self._put_files(address, cmd="PUT_CHECKPOINT", entries=entries)
                log.info("job %s: checkpoint sent", self.spec.job_id)
                return
            except (RemoteError, ConnectionError, TimeoutError, OSError) as e:
                transient = not isinstance(e, RemoteError) or e.code == "NOT_FOUND"
                if not transient or self.abandoned or not address or time.monotonic() + delay > deadline:
                    log.warning("job %s: checkpoint not sent (the previous one stays): %s", self.spec.job_id, e)
                    return
                log.info("job %s: checkpoint waits for the schedd: %s", self.spec.job_id, e)
            await self._pause(delay)
            delay = min(delay * 2, 10.0)

    async def _put_files(self, address: str, cmd: str = "PUT_FILES",
                         entries: list[tuple[str, str, str]] | None = None) -> None:
        files = []
        listing = []
        for name, path, role in self._outputs() if entries is None else entries:
            # read as root: never through a link the job put anywhere on the way
            # (userfiles.open_beneath), only regular files, never blocking on a FIFO
            try:
                fd = userfiles.open_beneath(self.sandbox, path)
                try:
                    st = os.fstat(fd)
                finally:
                    os.close(fd)
            except FileNotFoundError:
                continue
            except OSError as e:
                if startfault.is_shortage(e):
                    raise  # the machine's (out of descriptors...): _deliver tries again later
                self.output_problems.append(f"{name}: {e.strerror or e}")
                continue
            files.append((path, st.st_size))
            entry = {"name": name, "size": st.st_size, "mode": st.st_mode & 0o777}
            if role:
                entry["role"] = role
            listing.append(entry)
        if not files and cmd == "PUT_FILES":
            return
        limit = CHECKPOINT_UPLOAD_TIMEOUT if cmd == "PUT_CHECKPOINT" else CALL_TIMEOUT * 10
        # a checkpoint may wait long for the schedd's admission: it holds no turn of others'
        async with self.peers.connection(address, bounded=cmd == "PUT_FILES") as conn, asyncio.timeout(limit):
            head = {"cmd": cmd, "job": self.spec.job_id, "claim_id": self.claim_id, "files": listing}
            if cmd == "PUT_CHECKPOINT" and self.vacating:
                head["urgent"] = True  # the claim waits for it: not queued behind others
            await conn.send(head)
            for path, size in files:
                with self._open_output(path) as f:
                    left = size
                    while left:
                        chunk = f.read(min(left, CHUNK)) or b"\0" * min(left, CHUNK)
                        conn.writer.write(chunk)
                        left -= len(chunk)
                        if conn.writer.transport.get_write_buffer_size() > CHUNK:
                            await conn.writer.drain()
            await conn.writer.drain()
            resp = await conn.recv()
            if resp.get("ok") is not True:
                # a refusal may have come before the schedd read our bytes: the stream may
                # be out of step, so this connection is not used again
                conn.close()
                raise RemoteError(str(resp.get("code") or "ERROR"), str(resp.get("error") or f"{cmd} refused"))

    def _open_output(self, path: str) -> Any:
        try:
            return os.fdopen(userfiles.open_beneath(self.sandbox, path), "rb")
        except OSError:
            return open(os.devnull, "rb")  # vanished or replaced since it was listed: zeros

    def _remove_sandbox(self) -> None:
        mkdir = self._mkdir
        if mkdir is not None and not mkdir.done():  # cancelled while it was being made
            mkdir.add_done_callback(lambda _: launch.on_cleaner(self._clean))
        elif mkdir is not None:
            launch.on_cleaner(self._clean)

    def _clean(self) -> None:
        """Remove the job's cgroup (killing stragglers), sandbox and record; on the
        cleaner thread. The record goes first: a startd that dies half-way must not
        adopt a job whose sandbox is gone (or whose report was acknowledged)."""
        for path in (self.marker, self.exit_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._close_exit()
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            container.remove(rt, self.container)  # its client died before the container
        self.cgroups.remove(self.name)
        self.memory.remove(self.name)
        self.cpu.remove(self.name)
        remove_tree(self.sandbox)

    # -- the process ---------------------------------------------------------------

    async def _spawn(self, restart: bool = False) -> None:
        """Start the job (``restart``: again, after a checkpoint: its stdout and stderr
        go on where they were)."""
        spec, box = self.spec, self.sandbox
        exe = executable_path(spec, box)
        if spec.transfer and os.path.isabs(spec.cmd) and not os.path.exists(exe):
            exe = spec.cmd  # not sent by the schedd: a program already on this machine
        stdin = job_file(spec, spec.stdin, box)
        opened = []
        # Opened as root in places the job's user controls (its sandbox, which it had to
        # itself before a restart; its Iwd): never through a link, only its own files
        # (userfiles.py). The sandbox is the walk's trusted start; an Iwd is walked from /.
        user, top = self.job_user(), box if spec.transfer else "/"
        if not spec.transfer:  # the job enters its Iwd as its user (launch.py): say so if it cannot
            try:
                os.close(userfiles.open_dir(spec.iwd, user))
            except OSError as e:
                raise StartError(f"cannot enter the job's Iwd {spec.iwd} as uid {user.uid}: "
                                 f"{e.strerror or e}", HOLD_IWD_ERROR, machine=startfault.is_shortage(e)) from None
        try:
            if stdin:
                opened.append(_open_std(stdin, user, top, "input (In)"))
            std = []
            for name, what in ((spec.stdout, "output (Out)"), (spec.stderr, "error (Err)")):
                path = job_file(spec, name, box)
                if path is None:
                    std.append(devnull(os.O_WRONLY))
                    continue
                fd = _open_std(path, user, top, what, write=True, truncate=not restart)
                opened.append(fd)
                std.append(fd)
            ident = self.identity
            try:  # the program itself, the JVM, or a container runtime (jobcommand.py)
                cmd = jobcommand.command(
                    spec, self.universes, exe=exe, sandbox=box, sandbox_name=self.name, identity=ident,
                    user=user, env=self.env, memory_mib=(self.memory_limit >> 20) if self.memory_limit else None,
                    cpus=self.cpus, stdin=bool(stdin))
            except jobcommand.CommandError as e:
                raise StartError(str(e)) from None
            self.container, self._container_gone, self._container_pid = cmd.container, False, None
            as_user = ident.switch and cmd.as_job_user
            request = launch.Launch(
                argv=cmd.argv,
                executable=cmd.executable,
                # a container runtime runs as root: its own environment and directory,
                # the job's reach the container only (as its arguments)
                cwd=(box if spec.transfer else spec.iwd) if cmd.as_job_user else "/",
                env=self.env if cmd.as_job_user else RUNTIME_ENV,
                stdin=opened[0] if stdin else devnull(os.O_RDONLY),
                stdout=std[0],
                stderr=std[1],
                uid=ident.uid if as_user else None,
                gid=ident.gid if as_user else None,
                init_groups=ident.real_owner,
                cgroup_procs=self.cgroups.procs_file(self.name),
                exit_fd=self._exit_fd if self._exit_fd is not None else -1,
                core_size=spec.core_size,
            )
            # With the launcher or sh shim the job is in its cgroup before its first exec;
            # the move after the exec is then only needed where neither is used.
            self._move_after_exec = not launch.shim_enters_cgroup(request)
            pending = asyncio.ensure_future(launch.spawn(request, self._after_spawn))
            try:
                proc = await asyncio.shield(pending)
            except asyncio.CancelledError:
                # vacated while the spawner thread was starting it: kill what it started
                # (unless the startd is leaving its jobs to the next one: its master died)
                with contextlib.suppress(Exception):
                    self._started(await pending)
                    if not self.detached:
                        self._kill_group(signal.SIGKILL)
                raise
        finally:
            for fd in opened:
                os.close(fd)
            self._close_exit()  # the keeper has its own (or nothing started)
        self._started(proc)

    def _close_exit(self) -> None:
        if self._exit_fd is not None:
            os.close(self._exit_fd)
            self._exit_fd = None

    def _read_exit(self) -> tuple[int, Any] | None:
        """What the job's keeper wrote to its exit file; None: nothing (it died first)."""
        try:
            fd = os.open(self.exit_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            if startfault.is_shortage(e):
                log.warning("job %s: cannot read its end: %s", self.spec.job_id, e)
            return None
        try:
            return launch.read_exit(fd)
        finally:
            os.close(fd)

    def _after_spawn(self, proc: subprocess.Popen[bytes] | launch.Kept) -> None:
        """On the spawner thread, right after the exec: the cgroup move where the job did
        not enter it itself, and the job's record, by which a restarted startd adopts
        it or kills it (its /proc reads and file write kept off the event loop)."""
        pid = proc.pid
        if self._move_after_exec:
            self.cgroups.enter(self.name, pid)
        loop = self._loop
        procs = self.cgroups.procs_file(self.name)

        def job_pids() -> list[int]:  # every process of the job, from its own (v2) cgroup
            try:
                with open(procs) as f:  # type: ignore[arg-type]
                    return [int(x) for x in f.read().split()]
            except (OSError, TypeError, ValueError):
                return []

        def later(delay: float, fn: Callable[[], Any]) -> None:  # the event loop's timer: no thread per job
            loop.call_soon_threadsafe(loop.call_later, delay, fn)

        self.memory.enter(self.name, pid, lambda: not self._reaped, later=later, pids=job_pids)
        self.cpu.enter(self.name, pid, lambda: not self._reaped, later, job_pids)
        keeper = proc.keeper_pid if isinstance(proc, launch.Kept) else None
        self._record.update(
            job=self.spec.job_id, sandbox=self.name, claim_id=self.claim_id, started=self.started,
            pid=pid, ticks=_proc_start_ticks(pid) or 0,
            keeper=keeper, keeper_ticks=(_proc_start_ticks(keeper) or 0) if keeper else 0,
            oom_base=self.memory.oom_base(self.name),
        )
        self.save_record()

    def save_record(self, text: str | None = None) -> None:
        """Write the job's record (atomically: a crash leaves the old one or the new)."""
        tmp = self.marker + ".new"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                write_all(fd, (text or json.dumps(self._record, separators=(",", ":"))).encode())
            finally:
                os.close(fd)
            os.replace(tmp, self.marker)
        except OSError as e:
            log.warning("cannot record job %s's processes: %s", self.spec.job_id, e)

    def claim_changed(self, changes: dict[str, Any]) -> None:
        """The claim's schedd moved (RECONNECT): the record says where to report."""
        if self._record and self.state in ("running", "exited"):
            self._record.setdefault("claim", {}).update(changes)
            text = json.dumps(self._record, separators=(",", ":"))  # here: the loop owns the dict
            launch.on_cleaner(lambda: self.save_record(text))

    def job_user(self) -> User:
        """Whose rights the startd's opens on the job's behalf have (its std files, roost
        tail's reads): the job's user, with its groups."""
        ident = self.identity
        if not ident.switch:
            return User(os.geteuid(), os.getegid(), frozenset(os.getgroups()) | {os.getegid()})
        groups = {ident.gid}
        if ident.real_owner and ident.name:
            with contextlib.suppress(OSError, KeyError):
                groups.update(os.getgrouplist(ident.name, ident.gid))
        return User(ident.uid, ident.gid, frozenset(groups))

    def _started(self, proc: subprocess.Popen[bytes] | launch.Kept) -> None:
        self._proc = proc
        self.pid = proc.pid
        self.run_started = time.time()
        self._reaped_and_killed = False  # a new process group: it may be signalled
        self._watch(proc.keeper_pid if isinstance(proc, launch.Kept) else proc.pid)

    def _watch(self, pid: int, adopted: bool = False) -> None:
        """Resolve ``_exited`` when the job ends: pidfd of ``pid`` (the job's keeper, else
        the job) readable → wait4 (rusage included), and the job's wait status from the
        keeper's exit file. ``adopted``: ``pid`` is no child of ours (a previous startd
        started it): its end is only in the exit file.

        Kernels before 5.3 have no pidfd: then one SIGCHLD handler reaps for
        every starter (``_SigchldReaper``), and adopted jobs are polled.
        """
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[tuple[int | None, Any]] = loop.create_future()
        self._exited = fut
        kept = isinstance(self._proc, launch.Kept) or adopted

        def reaped(status: int | None, usage: Any) -> None:
            self._reaped = True  # its pid may be anyone's from now on
            if kept:  # the keeper's own status says nothing: the job's is in the file
                got = self._read_exit()
                status = got[0] if got is not None else None  # None: the keeper died first
                if got is not None and usage is None:
                    usage = got[1]
            if self._proc is not None and status is not None:
                self._proc.returncode = os.waitstatus_to_exitcode(status)
            if status is not None and os.WIFEXITED(status) and self.container is not None:
                self._container_gone = True  # its client ended by itself: run --rm removed it
            if not fut.done():
                fut.set_result((status, usage))

        if adopted and self._adopted is not None and not self._adopted.alive():
            reaped(None, None)  # ended while no startd watched: its file says how
            return
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            reaped(None, None)
            return
        except (OSError, AttributeError):
            if adopted:
                self._poll(pid, reaped)
            else:
                _SigchldReaper.watch(loop, pid, reaped)
            return
        if adopted and self._adopted is not None and not self._adopted.alive():
            os.close(pidfd)  # its pid was reused between the two looks
            reaped(None, None)
            return

        def ready() -> None:
            try:
                got, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (adopted), or reaped elsewhere
                got, status, usage = pid, (None if kept else 255 << 8), None
            if got == 0:
                return
            loop.remove_reader(pidfd)
            os.close(pidfd)
            reaped(status, usage)

        loop.add_reader(pidfd, ready)

    def _poll(self, pid: int, reaped: Callable[[int | None, Any], None]) -> None:
        """An adopted keeper on a kernel without pidfds: look twice a second."""
        async def poll() -> None:
            while self._adopted is not None and self._adopted.alive():
                await asyncio.sleep(0.5)
            reaped(None, None)

        self._poller = asyncio.get_running_loop().create_task(poll())

    async def _wait(self) -> tuple[int | None, Any]:
        assert self._exited is not None
        return await asyncio.shield(self._exited)

    def _exit_update(self, status: int | None, usage: Any, wall: float) -> dict[str, Any]:
        if status is None:  # the keeper died before the job: its end is unknown, the job dies
            return {"state": "failed", "retry": True, "usage": {},
                    "error": "the job's keeper process ended before the job (killed?): the job runs again"}
        return jobusage.exit_update(status, usage, wall, self.memory.state(self.name),
                                    self.memory_limit if self.memory.enforced else None)

    def live_usage(self) -> dict[str, Any]:
        """What the job uses now (for the periodic report): memory and CPU, and its
        sandbox's size (DiskUsage, KiB). Blocking: on a thread."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None:
            # what runs inside is not in the job's cgroup nor the client's process group
            if self._container_pid is None:
                self._container_pid = container.main_pid(rt, self.container)
            tree = procstat.tree_usage(self._container_pid, session=True) if self._container_pid else None
            out = jobusage.live(None, tree)
            out["DiskUsage"] = disk_kib(self.sandbox)
            return out
        tree = procstat.tree_usage(self.pid) if self.pid is not None else None
        out = jobusage.live(self.memory.state(self.name), tree)
        out["DiskUsage"] = disk_kib(self.sandbox)
        return out

    async def _sample_usage(self) -> None:
        """Every STARTER_UPDATE_INTERVAL while the job runs: its usage to the schedd,
        which updates the job ad (``q`` and periodic expressions see current values)."""
        while True:
            await asyncio.sleep(self.update_interval)
            if self.suspended or not self._alive():
                continue
            usage = await asyncio.to_thread(self.live_usage)
            disk = usage.get("DiskUsage")
            if self.disk_limit and isinstance(disk, int) and disk > self.disk_limit and self._alive():
                # over the slot's disk (request_disk): killed, and the schedd holds it (34/104)
                self.disk_exceeded = (disk, self.disk_limit)
                log.info("job %s uses %d KiB of disk, over its slot's %d KiB: killed", self.spec.job_id,
                         disk, self.disk_limit)
                self._kill_group(signal.SIGKILL)
                return
            if usage:
                with contextlib.suppress(Exception):
                    await self._report({"state": "running", "pid": self.pid, "usage_now": usage})

    def _end_group(self) -> None:
        """Kill what a run that just ended (and was reaped) left in its process group,
        at once, and send that group nothing more until the next run starts. Not the
        cgroup: its kill, asynchronous, could reach the next run started into it."""
        if self.pid is not None and not self._reaped_and_killed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self._reaped_and_killed = True

    def _kill_group(self, sig: int) -> None:
        # Once the job is reaped and its group killed, the group id may name someone
        # else's processes: nothing more is sent.
        if self.pid is None or self._reaped_and_killed:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        if sig == signal.SIGKILL:
            self.cgroups.kill(self.name)
            if not self._reaped:
                self._remove_container()  # the runtime's client cannot pass SIGKILL on

    def _pause_container(self, on: bool) -> None:
        """A container job's container frozen or thawed (on the cleaner thread, in order)."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            name = self.container
            launch.on_cleaner(lambda: container.pause(rt, name, on))

    def _remove_container(self) -> None:
        """Kill and remove a container job's container (on the cleaner thread)."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            name = self.container
            launch.on_cleaner(lambda: container.remove(rt, name))

    def _alive(self) -> bool:
        """The job's process exists (not yet reaped: its group id is still its own)."""
        return self.state == "running" and self._exited is not None and not self._exited.done()

    def suspend(self) -> None:
        """SIGSTOP the job's process group and freeze its cgroup (the owner policy's
        SUSPEND): the freezer also stops what left the group (``setsid``)."""
        if self._alive():
            self._kill_group(signal.SIGSTOP)
            self.cgroups.freeze(self.name, True)
            self._pause_container(True)
            self.suspended = True
            self._tell({"state": "suspended", "num_pids": self.cgroups.count(self.name) or 1})

    def resume(self) -> None:
        """Thaw the job's cgroup and SIGCONT its process group (CONTINUE, and before a
        soft kill)."""
        if self.suspended:
            self.cgroups.freeze(self.name, False)
            self._pause_container(False)
            if self._alive():
                self._kill_group(signal.SIGCONT)
                self._tell({"state": "resumed"})
            self.suspended = False

    def _tell(self, update: dict[str, Any]) -> None:
        """Report a change while the job runs (suspended, resumed), in order, best effort:
        the schedd shows it (JobStatus 7, events 010/011); a lost one changes nothing else."""
        previous = self._telling

        async def send() -> None:
            if previous is not None:
                with contextlib.suppress(BaseException):
                    await previous
            with contextlib.suppress(Exception):
                await self._report(update)

        self._telling = asyncio.get_running_loop().create_task(send())

    async def vacate(self, graceful: bool, why: str | None = None) -> dict[str, Any]:
        """Stop the job (its kill signal, then SIGKILL after JobMaxVacateTime; or SIGKILL
        now). ``why`` ``remove``/``hold`` picks remove_kill_sig/hold_kill_sig when the job
        has one, else kill_sig (SIGTERM unless the job says otherwise).

        Returns what the schedd is told (also sent as JOB_UPDATE ``vacated``):
        ``vacated`` with usage, or the job's own end when it had already exited.
        """
        if self.state in ("exited", "done"):
            return dict(self.final or {"state": "exited"})
        self.vacating = True
        self._vacate_why = why
        if self._exited is None:  # still preparing: no process yet
            if self._prep is not None and not self._prep.done():
                self._prep.cancel()
            return {"state": "vacated"}
        if graceful:
            spec = self.spec
            sig = {"remove": spec.remove_kill_sig, "hold": spec.hold_kill_sig}.get(why or "") or spec.kill_sig
            self._kill_group(sig)
            self.resume()  # a stopped job must run to see its signal
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(self.spec.max_vacate_time, 0.0)):
                    await asyncio.shield(self._exited)
        self._kill_group(signal.SIGKILL)
        status, usage = await asyncio.shield(self._exited)
        with contextlib.suppress(TimeoutError):  # its checkpoint or evict-time outputs
            async with asyncio.timeout(CHECKPOINT_RETRY_TIME):
                await self._saved.wait()
        out: dict[str, Any] = {"state": "vacated"}
        out["usage"] = self._exit_update(status, usage, 0.0)["usage"]
        out["usage"].pop("RemoteWallClockTime", None)
        return out

    def detach(self) -> None:
        """The startd is going without stopping its jobs (its master died): leave the
        job, its sandbox and its record to the next startd, which adopts them."""
        self.detached = True

    async def abandon(self) -> None:
        """Hard kill, no report (lease expired, claim released, startd stopping)."""
        self.abandoned = True
        self.vacating = True
        self._kill_group(signal.SIGKILL)
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task

    # -- reports ---------------------------------------------------------------------

    async def _report(self, update: dict[str, Any]) -> None:
        address = self.address_of()
        if not address:
            raise ConnectionError("no schedd address for this claim")
        if self.chirp is not None:
            await self.chirp.flush_delayed()  # Chirp's delayed updates go with each report
        await self.peers.call(address, "JOB_UPDATE", claim_id=self.claim_id, job=self.spec.job_id, **update)

    async def _deliver(self) -> None:
        """Outputs, then the final report, retried until the schedd takes them.

        NOT_FOUND is retried too: a restarted schedd knows the job only after
        it has RECONNECTed. The claim's lease bounds the retrying (an expired
        or released claim abandons the starter).
        """
        assert self.final is not None
        if self.streams is not None and self.final["state"] == "exited" and await self.streams.stop():
            self._streamed = self.streams.roles  # whole on the submit side: not sent again
        delay = 0.25
        while True:
            address = self.address_of()
            if not address:
                return  # the claim is gone: nobody to report to
            try:
                if self.final["state"] == "exited" and self.spec.transfer and not self.files_sent:
                    try:
                        await self._put_files(address)
                    except RemoteError as e:
                        if e.code == "NOT_FOUND":
                            raise  # a restarted schedd that does not know the job yet
                        # refused (a remap outside the sandbox ...): the job's fault, reported
                        self.output_problems.append(f"the schedd refused the output: {e.message}")
                    if self.output_problems:
                        self.final["output_error"] = "; ".join(self.output_problems)
                self.files_sent = True
                await self._report(self.final)
                return
            except RemoteError as e:
                if e.code != "NOT_FOUND":
                    log.warning("job %s: schedd refused the report: %s", self.spec.job_id, e)
                    return
                log.info("job %s: schedd does not know the job (yet); will retry", self.spec.job_id)
            except (ConnectionError, OSError, TimeoutError) as e:
                log.info("job %s: cannot report to %s yet: %s", self.spec.job_id, address, e)
            await self._pause(delay)
            delay = min(delay * 2, 30.0)

    async def _pause(self, delay: float) -> None:
        """Wait ``delay`` before trying the schedd again, or less if it came back
        (RECONNECT calls ``retry_now``)."""
        self._retry.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._retry.wait()

    def retry_now(self) -> None:
        """The schedd came back (RECONNECT): try the pending report at once."""
        self._retry.set()


class _SigchldReaper:
    """The fallback without pidfds: on SIGCHLD, ``wait4`` each watched pid (WNOHANG)."""

    _watched: dict[int, Callable[[int, Any], None]] = {}
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def watch(cls, loop: asyncio.AbstractEventLoop, pid: int, done: Callable[[int, Any], None]) -> None:
        cls._watched[pid] = done
        if cls._loop is not loop:
            loop.add_signal_handler(signal.SIGCHLD, cls._reap)
            cls._loop = loop
        cls._reap()  # it may have exited before the handler was there

    @classmethod
    def _reap(cls) -> None:
        for pid in list(cls._watched):
            try:
                got, status, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                got, status, usage = pid, 255 << 8, None
            if got:
                cls._watched.pop(pid)(status, usage)




def _open_std(path: str, user: User, top: str, what: str, write: bool = False, truncate: bool = False) -> int:
    try:
        return userfiles.open_as(path, user, write=write, create=write, truncate=truncate, append=write,
                                 start=top)
    except OSError as e:
        raise StartError(f"cannot open the job's {what} file {path}: {e.strerror}",
                         machine=startfault.is_shortage(e)) from None


def _describe_exit(final: dict[str, Any]) -> str:
    if final.get("state") == "vacated":
        return "was vacated"
    if "exit_signal" in final:
        return f"died of signal {final['exit_signal']}"
    return f"exited with status {final.get('exit_code')}"
