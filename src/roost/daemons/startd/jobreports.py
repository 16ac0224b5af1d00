"""A starter's reports to the schedd (JOB_UPDATE): the job running, suspended, resumed,
its usage every STARTER_UPDATE_INTERVAL, and its final report with its outputs,
retried until the schedd takes them (so a job that ends while its schedd is down is
reported once it reconnects). ``Reports`` is one of the parts of ``Starter``
(starter.py); what is reported when is the job-run machine's (core/jobrun.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from roost.core.jobrun import Ev, JobRun
from roost.daemons.startd import launch, startfault
from roost.daemons.startd.jobprocess import StartError
from roost.daemons.startd.jobspec import JobSpec
from roost.daemons.startd.jobtransfer import TransferError
from roost.daemons.startd.peers import Peers
from roost.daemons.startd.streaming import OutputStreams
from roost.net.errors import RemoteError

log = logging.getLogger("roost.daemons.startd.starter")

#: answers that say "not now", never "not this job": a schedd that restarted and does
#: not know the job yet (NOT_FOUND until it RECONNECTs), one killed mid-handshake
#: (AUTH_FAILED: a connection reset inside TLS), one shutting down or overloaded
#: (UNAVAILABLE), one that failed inside (INTERNAL). The chaos test once saw a schedd
#: killed during the output's handshake taken for a refusal of the output: 4 jobs held.
_TRY_AGAIN = frozenset(("NOT_FOUND", "AUTH_FAILED", "UNAVAILABLE", "INTERNAL"))


class Reports:
    """The starter's reports (a part of ``Starter``)."""

    spec: JobSpec
    claim_id: str
    peers: Peers
    address_of: Any
    chirp: Any
    final: dict[str, Any] | None
    files_sent: bool
    output_problems: list[str]
    streams: OutputStreams | None
    update_interval: float
    disk_limit: int | None
    disk_exceeded: tuple[int, int] | None
    pid: int | None
    machine: JobRun
    started: float
    _status: tuple[int | None, Any] | None
    _failure: dict[str, Any] | None
    _exit_update: Any
    _streamed: set[str]
    _telling: asyncio.Task[None] | None
    _retry: asyncio.Event

    async def _report(self, update: dict[str, Any]) -> None:
        address = self.address_of()
        if not address:
            raise ConnectionError("no schedd address for this claim")
        if self.chirp is not None:
            await self.chirp.flush_delayed()  # Chirp's delayed updates go with each report
        await self.peers.call(address, "JOB_UPDATE", claim_id=self.claim_id, job=self.spec.job_id, **update)

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

    async def _deliver(self, output: bool) -> bool:
        """Outputs (``output``: the machine says they go), then the final report, retried
        until the schedd takes them; False: it refused, or nobody is left to tell.

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
                return False  # the claim is gone: nobody to report to
            try:
                if output and self.final["state"] == "exited" and not self.files_sent:
                    try:
                        await self._put_files(address)
                    except RemoteError as e:
                        if e.code in _TRY_AGAIN:
                            raise  # a restarted schedd that does not know the job yet, or one going away
                        # refused (a remap outside the sandbox ...): the job's fault, reported
                        self.output_problems.append(f"the schedd refused the output: {e.message}")
                    if self.output_problems:
                        self.final["output_error"] = "; ".join(self.output_problems)
                self.files_sent = True
                await self._report(self.final)
                return True
            except RemoteError as e:
                if e.code not in _TRY_AGAIN:
                    log.warning("job %s: schedd refused the report: %s", self.spec.job_id, e)
                    return False
                if e.code == "NOT_FOUND":
                    log.info("job %s: schedd does not know the job (yet); will retry", self.spec.job_id)
                else:
                    log.info("job %s: schedd could not take the report yet (%s); will retry", self.spec.job_id, e)
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
                self._feed(Ev.OVER_LIMIT)
                return
            if usage:
                with contextlib.suppress(Exception):
                    await self._report({"state": "running", "pid": self.pid, "usage_now": usage})

    def _conclude(self) -> dict[str, Any]:
        """The final report, once the machine says the run is over."""
        if self.machine.vacating:
            if self._status is None:
                return {"state": "vacated"}
            return {"state": "vacated", "usage": self._exit_update(*self._status, 0.0)["usage"]}
        if self._failure is not None:
            return self._failure
        status, usage = self._status or (None, None)
        final = self._exit_update(status, usage, time.time() - self.started)
        if self.disk_exceeded is not None and final["state"] == "exited":
            used, limit = self.disk_exceeded
            final["disk"] = {"usage_kb": used, "limit_kb": limit}
            final["usage"]["DiskUsage"] = used
        if status is None:
            log.warning("job %s: %s", self.spec.job_id, final["error"])
        log.info("job %s %s", self.spec.job_id, _describe_exit(final))
        return final

    def _start_failure(self, e: BaseException) -> dict[str, Any]:
        final: dict[str, Any] = {"state": "failed", "error": self._why(e)}
        if isinstance(e, TransferError) and e.transient:
            final["retry"] = True  # not the job's fault: the schedd runs it again
        if isinstance(e, StartError | TransferError) and e.machine or startfault.machine_fault(e):
            # short of descriptors, processes, memory, disk...: the job is not to
            # blame, it runs again (elsewhere or later), however often it happens
            final["retry"] = final["machine"] = True
        elif isinstance(e, StartError) and e.hold_code is not None:
            final["hold_code"] = e.hold_code
        log.info("job %s failed to start%s: %s", self.spec.job_id,
                 " (the machine's fault: it runs again)" if final.get("machine") else "", final["error"])
        return final

    def _restart_failure(self, e: BaseException) -> dict[str, Any]:
        """Not the job's fault: it runs again, from its checkpoint."""
        error = f"cannot restart the job after its checkpoint: {self._why(e)}"
        log.warning("job %s: %s", self.spec.job_id, error)
        final = self._exit_update(None, None, 0.0)
        final["error"] = error
        return final

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


def _describe_exit(final: dict[str, Any]) -> str:
    if final.get("state") == "vacated":
        return "was vacated"
    if "exit_signal" in final:
        return f"died of signal {final['exit_signal']}"
    return f"exited with status {final.get('exit_code')}"
