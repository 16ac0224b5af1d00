"""Shadows: the schedd's side of running jobs, one asyncio task per claim.

A shadow owns one claim on one startd. It requests the claim (or reconnects to it
after a schedd restart), activates it with a job, keeps the claim alive, waits for
the starter's exit report, applies the job policy, and then reuses the claim for
the next idle job of the same owner that matches the slot, with no negotiation in
between, until none is left or the claim's work life is over.

The daemon commits every state change before the event that reports it is written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from roost.core import jobpolicy as jp
from roost.eventlog import (
    EvictedEvent,
    ExecuteEvent,
    HeldEvent,
    ReconnectedEvent,
    ShadowExceptionEvent,
    TerminatedEvent,
    Usage,
)
from roost.net.adwire import obj_to_ad
from roost.net.errors import RemoteError

if TYPE_CHECKING:
    from roost.daemons.schedd.daemon import Schedd
    from roost.daemons.schedd.jobqueue import Job

log = logging.getLogger(__name__)

VACATE_WAIT = 10.0  # seconds to wait for a vacated job's exit report before giving up on it
# A preempting claim is activated once the startd has retired and vacated the job it
# preempts, which may take the victim's whole MaxJobRetirementTime: wait that long.
PREEMPT_ACTIVATE_WAIT = 7 * 86400.0


class Shadow:
    """One claim and the job running on it."""

    def __init__(
        self,
        schedd: Schedd,
        startd_address: str,
        claim_id: str,
        slot_name: str,
        slot_ad: dict[str, Any] | None,
        lease: float,
    ) -> None:
        self.schedd = schedd
        self.startd_address = startd_address
        self.claim_id = claim_id
        self.slot_name = slot_name
        self.slot_obj = slot_ad or {}
        self._slot_ad: Any = None
        self.lease = max(1.0, lease)
        self.client = schedd.client_for(startd_address)
        self.owner: str | None = None
        self.job: Job | None = None
        self.exit: asyncio.Future[dict[str, Any]] | None = None
        self.vacating = False
        self.transfer_error: tuple[int, str] | None = None
        self.claimed_at = time.time()
        self.last_alive = time.monotonic()
        self.started_at = 0.0
        self.jobs_run = 0
        self._keepalive: asyncio.Task[None] | None = None
        self._match_cache: dict[Any, bool] = {}
        self.preempting = False  # the claim preempts another job: activation waits for its exit
        self.submitter: str | None = None  # the accounting name the claim serves

    def _give_back(self, job: Job) -> None:
        """The claim could not take ``job``: offer it again (and stop owning it)."""
        if self.schedd.runners.get(job.key) is self:
            self.schedd.runners.pop(job.key, None)
        self.schedd.queue.give_back_idle(job)

    # -- the slot ---------------------------------------------------------------------
    def slot_ad(self) -> Any:
        if self._slot_ad is None:
            self._slot_ad = obj_to_ad(self.slot_obj) if self.slot_obj else None
        return self._slot_ad

    def matches(self, job: Job, signature: Any) -> bool:
        """Whether ``job`` and this claim's slot match both ways (cached per autocluster)."""
        got = self._match_cache.get(signature)
        if got is None:
            slot = self.slot_ad()
            if slot is None:
                got = False
            else:
                try:
                    got = bool(job.classad().symmetricMatch(slot))
                except Exception:
                    got = False
            self._match_cache[signature] = got
        return got

    # -- life of the claim -----------------------------------------------------------------
    async def run_match(self, job: Job) -> None:
        """Claim the matched slot for ``job``, run it, then reuse the claim."""
        s = self.schedd
        self.owner = job.owner
        self.submitter = s.submitter_of(job.cluster)
        try:
            resp = await self.client.call(
                "REQUEST_CLAIM",
                claim_id=self.claim_id,
                job_ad=self._job_ad(job),
                schedd_address=s.address,
                lease=self.lease,
            )
        except (RemoteError, ConnectionError) as e:
            log.debug("job %s: claim on %s refused: %s", job.id, self.slot_name, e)
            s.note_refused(job, f"claim on {self.slot_name} refused: {e}")
            self._give_back(job)
            s.reschedule()
            return
        log.debug("job %s: claimed %s%s", job.id, self.slot_name, " (preempting)" if resp.get("preempting") else "")
        if resp.get("preempting"):
            self.preempting = True
        new_id = resp.get("claim_id")
        if isinstance(new_id, str) and new_id:
            self.claim_id = new_id
        if isinstance(resp.get("slot_ad"), dict):
            self.slot_obj = resp["slot_ad"]
            self._slot_ad = None
            name = self.slot_obj.get("Name")
            if isinstance(name, str):
                self.slot_name = name
        await self._serve(job, reconnecting=False)

    async def run_reconnect(self, job: Job) -> None:
        """After a schedd restart: take the running job's claim back (RECONNECT)."""
        s = self.schedd
        self.owner = job.owner
        self.submitter = s.submitter_of(job.cluster)
        try:
            resp = await self.client.call("RECONNECT", claim_id=self.claim_id, schedd_address=s.address)
        except (RemoteError, ConnectionError) as e:
            log.warning("job %s: reconnect to %s failed: %s", job.id, self.startd_address, e)
            s.reconnect_failures += 1
            await s.requeue(job, f"Job reconnect to {self.slot_name or self.startd_address} failed: {e}")
            return
        if resp.get("job") is None or resp.get("state") == "idle" or (
            isinstance(resp.get("job"), str) and resp["job"] not in ("?", job.id)
        ):
            s.reconnect_failures += 1
            await s.requeue(job, f"Job reconnect to {self.slot_name or self.startd_address} failed: the job is gone")
            self.owner = None  # the claim stays ours but nothing of this job is left on it
            return
        log.info("job %s: reconnected to %s (%s)", job.id, self.slot_name, resp.get("state"))
        s.reconnects += 1
        await self._serve(job, reconnecting=True, reconnect_state=resp)

    async def _serve(self, job: Job | None, *, reconnecting: bool, reconnect_state: dict[str, Any] | None = None) -> None:
        s = self.schedd
        s.shadows[self.claim_id] = self
        self._keepalive = asyncio.ensure_future(self._keepalive_loop())
        keep = True
        cancelled = False
        try:
            first = True
            while job is not None and keep:
                if first and reconnecting:
                    keep = await self._resume(job, reconnect_state or {})
                else:
                    keep = await self._run_job(job)
                first = False
                job = s.next_job_for_claim(self) if keep and not s.stopping else None
        except asyncio.CancelledError:
            cancelled = True  # the schedd is stopping: the claim and its job outlive us
            raise
        finally:
            s.shadows.pop(self.claim_id, None)
            if self._keepalive is not None:
                self._keepalive.cancel()
            if not s.stopping and not cancelled:
                try:
                    await self.client.call("RELEASE_CLAIM", claim_id=self.claim_id, _timeout=5.0)
                except (RemoteError, ConnectionError) as e:
                    log.debug("release of claim on %s: %s", self.slot_name, e)
                s.reschedule()

    async def _keepalive_loop(self) -> None:
        interval = max(0.2, min(self.lease / 3.0, self.schedd.alive_interval))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.client.call("KEEPALIVE", claim_id=self.claim_id, _timeout=interval)
                self.last_alive = time.monotonic()
            except RemoteError as e:
                if e.code == "NOT_FOUND":
                    self._lost(f"the startd no longer knows claim on {self.slot_name}")
                    return
                log.warning("keepalive to %s refused: %s", self.slot_name, e)
            except ConnectionError as e:
                if time.monotonic() - self.last_alive > self.lease:
                    self._lost(f"lost contact with {self.slot_name} for longer than the lease: {e}")
                    return

    def _lost(self, why: str) -> None:
        log.warning("claim %s lost: %s", self.slot_name, why)
        if self.exit is not None and not self.exit.done():
            self.exit.set_result({"state": "lost", "error": why})
        elif self.exit is None:
            # Idle between jobs: nothing to requeue; end the claim's loop at the next job.
            self.vacating = True

    def report(self, update: dict[str, Any]) -> None:
        """A JOB_UPDATE from the starter for the current job."""
        state = update.get("state")
        if state == "running":
            pid = update.get("pid")
            if isinstance(pid, int) and self.job is not None:
                self.schedd.note_running(self.job, pid)
            return
        if state in ("exited", "failed", "vacated") and self.exit is not None and not self.exit.done():
            self.exit.set_result(update)

    # -- one job ----------------------------------------------------------------------------
    async def _run_job(self, job: Job) -> bool:
        """Activate the claim with ``job`` and see it through; False: give the claim up."""
        s = self.schedd
        if self.vacating:
            self._give_back(job)
            return False
        if job.cluster.procs.get(job.proc) is not job or job.status != jp.IDLE:
            # Removed or held while the claim was being requested: nothing to run.
            job.busy = False
            if s.runners.get(job.key) is self:
                s.runners.pop(job.key, None)
            return True
        self.job = job
        self.exit = asyncio.get_running_loop().create_future()
        self.transfer_error = None
        try:
            await self._activate(job)
        except (RemoteError, ConnectionError) as e:
            log.debug("job %s: activation on %s failed: %s", job.id, self.slot_name, e)
            s.note_refused(job, f"activation on {self.slot_name} refused: {e}")
            self.job = None
            self.exit = None
            self._give_back(job)
            return False
        self.started_at = time.time()
        self.jobs_run += 1
        s.note_started(job)
        log.debug("job %s: activated on %s", job.id, self.slot_name)
        if job.cluster.procs.get(job.proc) is job and job.status == jp.IDLE:
            await s.mark_running(job, self)
        return await self._await_exit(job)

    def _job_ad(self, job: Job) -> dict[str, Any]:
        """The job ad sent to the startd, with ``User``: the submitter (accounting) name
        the slot's ``RemoteUser`` carries, which the negotiator charges usage to."""
        ad = job.merged()
        ad["User"] = self.schedd.submitter_of(job.cluster)
        return ad

    async def _activate_preempting(self, ad: dict[str, Any]) -> None:
        """ACTIVATE_CLAIM of a preempting claim, on a connection of its own (the startd
        answers only after the preempted job has left; keep-alives must not queue
        behind it). Given up if the claim is lost meanwhile."""
        from roost.net.client import AsyncClient

        client = AsyncClient(self.startd_address, timeout=PREEMPT_ACTIVATE_WAIT)
        try:
            act = asyncio.ensure_future(client.call("ACTIVATE_CLAIM", claim_id=self.claim_id, job_ad=ad))
            waits: set[asyncio.Future[Any]] = {act}
            if self.exit is not None:
                waits.add(self.exit)
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            if act not in done:
                act.cancel()
                lost = self.exit.result() if self.exit is not None and self.exit.done() else {}
                raise ConnectionError(f"claim lost while waiting for the preempted job: {lost.get('error')}")
            act.result()
        finally:
            self.preempting = False
            await client.close()

    async def _activate(self, job: Job) -> None:
        """ACTIVATE_CLAIM; a startd still wrapping up the previous job's starter refuses
        for a moment after reporting its exit, so DENIED is retried briefly."""
        ad = self._job_ad(job)
        if self.preempting:
            await self._activate_preempting(ad)
            return
        delay = 0.002
        for attempt in range(8):
            try:
                await self.client.call("ACTIVATE_CLAIM", claim_id=self.claim_id, job_ad=ad)
                return
            except RemoteError as e:
                if e.code != "DENIED" or attempt == 7 or self.jobs_run == 0:
                    raise
            await asyncio.sleep(delay)
            delay *= 2

    async def _resume(self, job: Job, state: dict[str, Any]) -> bool:
        """Continue a reconnected job: the starter reports its exit to us from now on."""
        self.job = job
        self.exit = asyncio.get_running_loop().create_future()
        self.started_at = float(job.get("JobCurrentStartDate") or time.time())
        s = self.schedd
        s.write_events(job, [ReconnectedEvent(job.cluster.id, job.proc, time.time(), startd_name=self.slot_name)])
        if state.get("state") in ("exited", "failed", "vacated") and (
            state.get("state") != "exited" or "exit_code" in state or "exit_signal" in state
        ):
            self.exit.set_result(state)  # it ended while we were away; this is its report
        return await self._await_exit(job)

    async def _await_exit(self, job: Job) -> bool:
        s = self.schedd
        assert self.exit is not None
        update = await self.exit
        log.debug("job %s: %s on %s", job.id, update.get("state"), self.slot_name)
        self.exit = None
        self.job = None
        state = update.get("state")
        try:
            if job.cluster.procs.get(job.proc) is not job:
                return True  # gone already (removed and moved to history)
            if job.status == jp.REMOVED:
                await s.finish_removed(job)
                return state != "lost"
            if job.status == jp.HELD:
                await s.clear_claim(job)
                return state != "lost"
            if state == "lost":
                await s.requeue(job, str(update.get("error") or "claim lost"))
                return False
            if state == "vacated":
                await _evicted(s, job, update)
                return False
            if state == "failed":
                code, msg = self.transfer_error or (
                    jp.HOLD_FAILED_TO_CREATE_PROCESS,
                    f"Error from {self.slot_name}: {update.get('error') or 'the job could not be started'}",
                )
                await s.hold(job, msg, code, 0, vacate=False)
                return False
            await self._exited(job, update)
            return True
        except Exception:
            log.exception("job %s: handling its exit failed", job.id)
            return False

    async def _exited(self, job: Job, update: dict[str, Any]) -> None:
        s = self.schedd
        now = time.time()
        code = update.get("exit_code")
        sig = update.get("exit_signal")
        code = code if isinstance(code, int) else None
        sig = sig if isinstance(sig, int) and not isinstance(sig, bool) and sig > 0 else None
        ad = job.classad()
        usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
        uattrs = jp.usage_attrs(ad, usage, self.started_at, now)
        for k, v in uattrs.items():
            ad[k] = v
        decision = jp.on_exit(ad, code, sig, now)
        attrs = dict(uattrs)
        attrs.update(decision.attrs or {})
        run_usage = Usage(int(uattrs["RemoteUserCpu"]), int(uattrs["RemoteSysCpu"]))
        total_usage = Usage(int(uattrs["CumulativeRemoteUserCpu"]), int(uattrs["CumulativeRemoteSysCpu"]))
        term = TerminatedEvent(
            job.cluster.id,
            job.proc,
            now,
            return_value=None if sig is not None else (code or 0),
            signal=sig,
            run_remote_usage=run_usage,
            total_remote_usage=total_usage,
        )
        await s.apply_exit(job, decision, attrs, term)


async def write_execute(schedd: Schedd, job: Job, shadow: Shadow) -> None:
    """The execute event (after the Running state is committed)."""
    host = shadow.slot_obj.get("MyAddress") or shadow.startd_address
    schedd.write_events(
        job,
        [ExecuteEvent(job.cluster.id, job.proc, time.time(), execute_host=f"<{host}>", slot_name=shadow.slot_name)],
    )


async def _evicted(s: Schedd, job: Job, update: dict[str, Any]) -> None:
    """A vacated job (owner policy, preemption, drain): back to Idle with an evicted event
    (004), as HTCondor logs it, instead of requeue's shadow exception."""
    job.claim = None
    s.runners.pop(job.key, None)
    if job.cluster.procs.get(job.proc) is not job:
        return
    usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
    run = Usage(int(usage.get("RemoteUserCpu") or 0), int(usage.get("RemoteSysCpu") or 0))
    attrs = {"LastRemoteHost": job.get("RemoteHost")}
    ops = s.set_ops(job, attrs, jp.IDLE if job.status == jp.RUNNING else None)
    job.busy = False
    s.queue.give_back_idle(job)
    await s._report(job, ops, [EvictedEvent(job.cluster.id, job.proc, time.time(), run_remote_usage=run)])
    s.idle_arrived(job)


def shadow_exception(job: Job, why: str) -> ShadowExceptionEvent:
    return ShadowExceptionEvent(job.cluster.id, job.proc, time.time(), message=why)


def held_event(job: Job, reason: str, code: int, subcode: int) -> HeldEvent:
    return HeldEvent(job.cluster.id, job.proc, time.time(), reason=reason, code=code, subcode=subcode)


__all__ = ["Shadow", "held_event", "shadow_exception", "write_execute"]
