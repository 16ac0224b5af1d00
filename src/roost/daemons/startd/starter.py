"""The starter: one job on one claim inside the startd, from sandbox to acknowledged
final report; the thin shell around the job-run machine (core/jobrun.py).

It makes the sandbox, pulls input files from the schedd (GET_FILES), starts the job in
its own session and process group as the job's user, waits for it on a pidfd, pushes
the outputs back (PUT_FILES) and reports with JOB_UPDATE. *When* each of those happens,
and what a suspend, vacate, checkpoint or lost claim means at each moment, is the
machine's: every event (the sandbox made, the process started or ended, the owner's
SUSPEND, a vacate...) goes to ``JobRun.handle``, and this class performs the actions it
returns, in order. Actions that take time (a transfer, a spawn, an upload, the final
report) run one at a time in the starter's task; the others (signals, short reports)
at once, so that an event from outside (the owner policy, the schedd) acts without
waiting for the task.

What it does is split by what each part holds: ``jobtransfer`` (files in and out),
``jobsandbox`` (the sandbox, cgroups and the job's record), ``jobprocess`` (the spawn
and the wait), ``jobsignals`` (signals, freezing, killing), ``jobcheckpoint`` (the
checkpoint upload) and ``jobreports`` (JOB_UPDATE, the final report's retries).

Every started job has a record in ``execute/.jobs/<sandbox>`` (a root-only directory
the job cannot touch), kept until its final report is acknowledged. The job runs under
its keeper (launch.py), which writes the job's end to ``<sandbox>.exit`` beside it; so a
startd that dies leaves its jobs running, and the next one adopts them from their
records (``adopt``, leftovers.py). The connections to schedds that every starter
shares are ``peers.Peers``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from roost.core.jobrun import Act, Action, Ev, JobRun, Report, RunState
from roost.daemons.startd import (
    chirp,
    chirpport,
    ckpt_signal,
    container,
    jobcommand,
    launch,
)
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobcheckpoint import CHECKPOINT_RETRY_TIME, Checkpoints
from roost.daemons.startd.jobprocess import Process, StartError, _SigchldReaper
from roost.daemons.startd.jobreports import Reports
from roost.daemons.startd.jobsandbox import Sandbox
from roost.daemons.startd.jobsignals import Signals
from roost.daemons.startd.jobspec import Identity, JobSpec, job_file
from roost.daemons.startd.jobtransfer import FileTransfer, TransferError, _safe_relpath
from roost.daemons.startd.leftovers import JOBS_DIR, Record
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.peers import CALL_TIMEOUT, Peers
from roost.daemons.startd.streaming import OutputStreams, streamed_files
from roost.net.client import Connection

log = logging.getLogger(__name__)

#: actions that take time: performed in turn by the starter's task
_LONG = frozenset({Act.PREPARE, Act.TRANSFER_INPUT, Act.SPAWN, Act.WATCH, Act.UPLOAD_CHECKPOINT})
#: the machine's states with a process to wait for
_WITH_PROCESS = (RunState.RUNNING, RunState.SUSPENDED, RunState.VACATING)
_START_ERRORS = (OSError, TransferError, ValueError, StartError)


class Starter(FileTransfer, Sandbox, Process, Signals, Checkpoints, Reports):
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
        self.identity = identity
        self.env = env
        self.job_ad_text = job_ad_text
        self.peers = peers
        self.address_of = address_of
        self.on_done = on_done
        self.on_finished = on_finished
        self.pid: int | None = None
        self.final: dict[str, Any] | None = None
        self.abandoned = False
        self.files_sent = False
        self._preset_error: str | None = None
        self._mkdir: asyncio.Future[None] | None = None
        self.task: asyncio.Task[None] | None = None
        self._proc: Any = None  # subprocess.Popen or launch.Kept
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
        self.run_started = 0.0  # when the current run (or restart in place) began
        #: the job's run: every decision of when (core/jobrun.py); this class performs them
        # (getattr: a bare spec, as some unit tests give, has no signals of its own)
        self.machine = JobRun(transfer=bool(getattr(spec, "transfer", False)),
                              kill_sig=getattr(spec, "kill_sig", None) or signal.SIGTERM,
                              remove_kill_sig=getattr(spec, "remove_kill_sig", None),
                              hold_kill_sig=getattr(spec, "hold_kill_sig", None),
                              checkpoint_sig=getattr(spec, "checkpoint_signal", None))
        self._queue: collections.deque[Action] = collections.deque()  # actions that wait their turn
        self._step: asyncio.Future[None] | None = None  # the start step in progress (cancellable)
        self._status: tuple[int | None, Any] | None = None  # the last run's end
        self._failure: dict[str, Any] | None = None  # a start that failed: the final report
        self._send_output = False
        self._watching: list[asyncio.Task[Any]] = []  # usage sampler, checkpoint signal
        self._cleaned = False

    # -- what the startd reads -------------------------------------------------------

    @property
    def state(self) -> str:
        """starting (no process yet), running, exited (final report pending), done."""
        return "done" if self._cleaned else self.machine.phase()

    @property
    def vacating(self) -> bool:
        return self.machine.vacating

    @property
    def suspended(self) -> bool:
        """Stopped (a process that still exists), or to be as soon as its process does."""
        return self.machine.suspend_pending or self.machine.state == RunState.SUSPENDED and self._alive()

    @property
    def detached(self) -> bool:
        return self.machine.detached

    # -- the machine's events in, its actions out ----------------------------------------

    def _feed(self, event: str, **details: Any) -> None:
        """``event`` to the machine; its actions performed in order: at once, up to the
        first that takes time, which (and all after it) the task performs in turn."""
        was = self.machine.state
        acts = self.machine.handle(event, time.time(), **details)
        now = self.machine.state
        if now != was:
            log.debug("job %s: %s --%s--> %s", self.spec.job_id, was, event, now)
            if now in (RunState.REPORTING, RunState.DONE):
                self._end_of_run()
        for a in acts:
            if self._queue or a.kind in _LONG or (a.kind == Act.REPORT and a.report == Report.FINAL):
                self._queue.append(a)
            else:
                self._act(a)

    def _act(self, a: Action) -> None:
        """Perform one of the machine's immediate actions."""
        k = a.kind
        if k == Act.SIGNAL:
            assert a.signal is not None
            self._kill_group(a.signal)
        elif k == Act.STOP:
            self._stop()
        elif k == Act.CONT:
            self._cont()
        elif k == Act.KILL:
            self._kill_group(signal.SIGKILL)
            if self._reaped:  # the run is over: its group id is no longer surely its own
                self._reaped_and_killed = True
        elif k == Act.END_RUN:
            self._end_group()
        elif k == Act.CANCEL_START:
            if self._step is not None and not self._step.done():
                self._step.cancel()
        elif k == Act.REPORT:
            self._report_change(a.report)
        elif k == Act.TRANSFER_OUTPUT:
            self._send_output = True
        elif k == Act.RELEASE_SLOT:
            if self.on_finished is not None:
                self.on_finished(self)  # the claim may take its next job while we report
        elif k == Act.CLEAN:
            self._finish()
        elif k == Act.ABORT:
            if self.task is not None and not self.task.done():
                self.task.cancel()
        else:  # pragma: no cover - every kind is listed above or in _LONG
            raise AssertionError(f"no way to perform {a}")

    def _report_change(self, what: str | None) -> None:
        """Running, suspended, resumed: in order, best effort (``_tell``)."""
        if what == Report.RUNNING:
            self._tell({"state": "running", "pid": self.pid})
        elif what == Report.SUSPENDED and self._alive():
            self._tell({"state": "suspended", "num_pids": self.cgroups.count(self.name) or 1})
        elif what == Report.RESUMED and self._alive():
            self._tell({"state": "resumed"})

    async def _perform(self, a: Action) -> None:
        """Perform an action that takes time (or the final report), then tell the
        machine how it went."""
        k = a.kind
        if k == Act.PREPARE:
            await self._start_step(self._make(), Ev.PREPARED, Ev.SPAWN_FAILED)
        elif k == Act.TRANSFER_INPUT:
            await self._start_step(self._get_files(), Ev.TRANSFER_IN_DONE, Ev.TRANSFER_IN_FAILED)
        elif k == Act.SPAWN:
            await self._start_step(self._launch(a.restart), Ev.SPAWNED, Ev.SPAWN_FAILED, restart=a.restart)
        elif k == Act.WATCH:
            assert self._adopted is not None
            self._watch(self._adopted.keeper or self._adopted.pid, adopted=True)
            self._stream(fresh=False)
            self.chirp = await chirp.serve(self, self.chirp_settings, resume=True, shared=chirpport.shared_listener())
            self._begin_watching()
        elif k == Act.UPLOAD_CHECKPOINT:
            await self._send_checkpoint()
            self._feed(Ev.CHECKPOINT_WRITTEN)
        elif k == Act.REPORT and a.report == Report.FINAL:
            if self._telling is not None:
                with contextlib.suppress(BaseException):
                    await self._telling  # what it said while it ran goes first
            acked = await self._deliver(self._send_output)
            self._feed(Ev.REPORT_ACKED if acked else Ev.REPORT_ABANDONED)
        else:
            self._act(a)

    async def _start_step(self, step: Any, ok: str, failed: str, restart: bool = False) -> None:
        """A step of the start, cancellable by CANCEL_START; its end goes to the machine."""
        self._step = asyncio.ensure_future(step)
        try:
            await self._step
        except asyncio.CancelledError:
            if not self.machine.vacating or self.abandoned:
                raise
            self._feed(Ev.START_STOPPED)  # vacated while it started: it stopped there
            return
        except _START_ERRORS as e:
            if not isinstance(e, StartError | OSError) and restart:
                raise
            self._failure = self._restart_failure(e) if restart else self._start_failure(e)
            self._feed(failed)
            return
        finally:
            self._step = None
        if ok == Ev.SPAWNED and not restart:
            self._begin_watching()
        self._feed(ok)

    # -- the job's life ------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        self._loop = asyncio.get_running_loop()
        if self._adopted is not None:
            self._feed(Ev.ADOPTED, alive=self._adopted.alive())
        else:
            self._feed(Ev.START)
        self.task = self._loop.create_task(self._run(), name=f"starter {self.spec.job_id}")
        return self.task

    async def _run(self) -> None:
        try:
            while True:
                if self._queue:
                    await self._perform(self._queue.popleft())
                elif self.machine.state in _WITH_PROCESS and self._exited is not None:
                    self._status = await self._wait()
                    self._feed(Ev.EXITED, checkpointed=self._checkpointed(self._status[0]),
                               evict_files=bool(self.spec.evict_transfer))
                else:
                    if self.machine.state != RunState.DONE:  # a step that fed the machine nothing
                        log.error("job %s: its starter stopped in state %s", self.spec.job_id, self.machine.state)
                    break
        except Exception:
            log.exception("job %s: its starter failed", self.spec.job_id)
            raise
        finally:
            self._end_of_run()
            if self._telling is not None and not self._telling.done():
                self._telling.cancel()
            if not self.detached:
                self._finish()

    def _finish(self) -> None:
        """The end: Chirp and streams closed, what is left killed, the sandbox removed."""
        if self._cleaned:
            return
        if self.streams is not None:
            self.streams.close()
        if self.chirp is not None:
            self.chirp.close()
        self._kill_group(signal.SIGKILL)
        self._remove_sandbox()
        self._cleaned = True
        self.on_done(self)

    def _begin_watching(self) -> None:
        """The job runs: its usage sampled, its periodic checkpoint signal (if any)."""
        self._watching.append(asyncio.ensure_future(self._sample_usage()))
        # +WantCheckpointSignal: its checkpoint signal every interval (ckpt_signal.py)
        ticker = ckpt_signal.start(self.spec, self._checkpoint_target, lambda: self.run_started)
        if ticker is not None:
            self._watching.append(ticker)

    def _end_of_run(self) -> None:
        """No process any more: the sampler and ticker stop, the vacate waiting for
        what the job saved goes on, and the final report is written down."""
        for t in self._watching:
            t.cancel()
        self._watching.clear()
        self._saved.set()
        if self.streams is not None and self.machine.vacating:
            self.streams.close()
        if self.final is None and self.machine.state == RunState.REPORTING:
            self.final = self._conclude()

    def _checkpoint_target(self) -> int | None:
        """The periodic checkpoint signal's tick asks the machine: the pid to signal
        (ckpt_signal sends it to the job's own process), or None to skip."""
        acts = self.machine.handle(Ev.CHECKPOINT_REQUESTED, time.time())
        return self.pid if self._alive() and any(a.kind == Act.CHECKPOINT_SIGNAL for a in acts) else None

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

    async def _make(self) -> None:
        """The sandbox (root-owned until the inputs are in) and the job's cgroups."""
        if self._preset_error is not None:
            raise StartError(self._preset_error)
        self._mkdir = asyncio.ensure_future(launch.on_sandboxer(self._make_sandbox))
        try:
            await asyncio.shield(self._mkdir)
        except (OSError, ValueError) as e:  # the execute directory, cgroups: all the machine's
            raise StartError(f"cannot make the job's sandbox: {self._why(e)}", machine=True) from None

    async def _launch(self, restart: bool) -> None:
        """The job's process: the first (its Chirp, its container's image first), or
        again in place after its checkpoint (``restart``)."""
        if restart:
            self._reaped = False
            self._exit_fd = os.open(self.exit_path, os.O_RDWR | os.O_CLOEXEC)
            os.pwrite(self._exit_fd, b" " * launch.EXIT_RECORD_SIZE, 0)
            await self._spawn(restart=True)
            return
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

    # -- from outside: the owner policy, the schedd, the startd ------------------------

    def suspend(self) -> None:
        """The owner policy's SUSPEND (or condor_suspend): the job stopped, now or as
        soon as its process exists."""
        self._feed(Ev.SUSPEND)

    def resume(self) -> None:
        """CONTINUE: the job runs on (or will not be stopped when it starts)."""
        self._feed(Ev.CONTINUE)

    async def vacate(self, graceful: bool, why: str | None = None) -> dict[str, Any]:
        """Stop the job (its kill signal, then SIGKILL after JobMaxVacateTime; or SIGKILL
        now). ``why`` ``remove``/``hold`` picks remove_kill_sig/hold_kill_sig when the job
        has one, else kill_sig (SIGTERM unless the job says otherwise).

        Returns what the schedd is told (also sent as JOB_UPDATE ``vacated``):
        ``vacated`` with usage, or the job's own end when it had already exited.
        """
        if self.state in ("exited", "done"):
            return dict(self.final or {"state": "exited"})
        self._feed(Ev.HOLD if why == "hold" else Ev.VACATE, graceful=graceful, why=why)
        if self._exited is None:  # still starting: no process yet (its start stops)
            return {"state": "vacated"}
        if graceful:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(self.spec.max_vacate_time, 0.0)):
                    await asyncio.shield(self._exited)
        self._feed(Ev.HARD_KILL)
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
        self._feed(Ev.DETACH)

    async def abandon(self) -> None:
        """Hard kill, no report (lease expired, claim released, startd stopping)."""
        self.abandoned = True
        self._feed(Ev.CLAIM_LOST)
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.task


__all__ = ["Starter", "StartError", "TransferError", "_SigchldReaper", "_safe_relpath"]
