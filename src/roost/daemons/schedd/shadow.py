"""Shadows: the schedd's side of running jobs, one asyncio task per claim.

A shadow owns one claim on one startd. It requests the claim (or reconnects to it
after a schedd restart), activates it with a job, keeps the claim alive, waits for
the starter's exit report, applies the job policy, and then reuses the claim for
the next idle job of the same owner that matches the slot, with no negotiation in
between, until none is left or the claim's work life is over.

A shadow owns no job state: it changes jobs through the schedd's ``JobLifecycle``
(lifecycle.py), which commits every change before the event that reports it is
written. ``Shadows`` is the registry of one schedd's shadows and holds what they
share: the startd clients, the claim lease, the autoclusters (refusals) and claim
reuse. What a run's end does to its job is ``runend.py``'s, and taking a claim back
after a schedd restart ``reconnect.py``'s (issue 28: the class stays under 500 lines).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd import reconnect, runend
from roost.daemons.schedd.autocluster_ids import AutoClusters, not_negotiated
from roost.daemons.schedd.claimreuse import ClaimReuse
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.runend import MAX_TRANSFER_RETRIES
from roost.daemons.schedd.startturns import StartTurns, Turn
from roost.eventlog import (
    DisconnectedEvent,
    ExecuteEvent,
    FileTransferEvent,
    FileTransferType,
    ReconnectedEvent,
    ReconnectFailedEvent,
)
from roost.net.adwire import obj_to_ad
from roost.net.client import AsyncClient
from roost.net.errors import NotConnected, RemoteError, RequestError

log = logging.getLogger(__name__)

VACATE_WAIT = 10.0  # seconds to wait for a vacated job's exit report before giving up on it
# A preempting claim is activated once the startd has retired and vacated the job it
# preempts, which may take the victim's whole MaxJobRetirementTime: wait that long.
PREEMPT_ACTIVATE_WAIT = 7 * 86400.0
#: SCHEDD_MAX_STARTING_PER_STARTD's default (startturns.py): at 4,000 jobs on one startd 64 turns
#: gave all processes at 99 s (2.4 s behind Running), 256 at 71 s (4.8 s behind)
DEFAULT_MAX_STARTING = 256


def _keep_claim_idle(job: Job) -> float:
    """The job's KeepClaimIdle: seconds to hold its claim after it, for a job to come."""
    v = job.get("KeepClaimIdle")
    return float(min(v, 600)) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else 0.0


class Shadows:
    """The schedd's shadows (by claim id) and what they share."""

    def __init__(
        self,
        jobs: JobLifecycle,
        autoclusters: AutoClusters,
        reuse: ClaimReuse,
        *,
        lease: float,
        alive_interval: float,
        submitter_of: Callable[[Any], str],
        reschedule: Callable[..., None],
        connect: Callable[..., AsyncClient] = AsyncClient,
        max_starting: int = DEFAULT_MAX_STARTING,
    ) -> None:
        self.jobs = jobs
        self.connect = connect  # the schedd's Daemon.client: it proves who we are
        self.autoclusters = autoclusters
        self.reuse = reuse
        self.lease = lease  # JOB_LEASE_DURATION
        self.alive_interval = alive_interval  # ALIVE_INTERVAL
        self.submitter_of = submitter_of
        self.reschedule = reschedule
        self.by_claim: dict[str, Shadow] = {}
        self.clients: dict[str, AsyncClient] = {}
        #: SCHEDD_MAX_STARTING_PER_STARTD: starts in flight per startd (startturns.py)
        self.turns = StartTurns(max_starting)
        self.reconnects = 0
        self.reconnect_failures = 0
        # claims held idle after their job (the job's KeepClaimIdle: DAGMan's next node)
        self._idle_claims: list[tuple[Shadow, asyncio.Future[Job | None]]] = []
        #: attributes the activation ad adds for a job (ckpt_admission: its checkpoint phase)
        self.activation_attrs: Callable[[Job], dict[str, Any]] | None = None
        #: told each time a run ends, with the job and its claim id (chirp_calls: the job's
        #: file helper goes with its run, whether or not its starter's "end" comes)
        self.on_run_end: Callable[[Job, str], None] | None = None

    async def hold_idle(self, shadow: Shadow, seconds: float) -> Job | None:
        """Keep ``shadow``'s claim for up to ``seconds`` for the next job of its owner that
        fits it (taken by :meth:`offer_idle` when one arrives); None when none came."""
        fut: asyncio.Future[Job | None] = asyncio.get_running_loop().create_future()
        entry = (shadow, fut)
        self._idle_claims.append(entry)
        try:
            return await asyncio.wait_for(fut, seconds)
        except TimeoutError:
            return None
        finally:
            if entry in self._idle_claims:
                self._idle_claims.remove(entry)

    def stop_holding(self, shadow: Shadow) -> None:
        """``shadow``'s claim is lost: stop holding it for a next job."""
        for entry in list(self._idle_claims):
            if entry[0] is shadow and not entry[1].done():
                self._idle_claims.remove(entry)
                entry[1].set_result(None)

    def offer_idle(self) -> None:
        """Jobs became idle: claims held idle take those that fit them, with no negotiation."""
        for entry in list(self._idle_claims):
            shadow, fut = entry
            if fut.done():
                continue
            job = shadow._next_job()
            if job is not None:
                self._idle_claims.remove(entry)
                fut.set_result(job)

    def client_for(self, address: str) -> AsyncClient:
        c = self.clients.get(address)
        if c is None:
            c = self.clients[address] = self.connect(address, timeout=30.0)
        return c

    def job_lease(self, job: Job) -> float:
        """The claim lease for a job: the job's JobLeaseDuration, capped by the pool's
        JOB_LEASE_DURATION (keep-alives go every third of it)."""
        v = job.get("JobLeaseDuration")
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return min(float(v), self.lease)
        return self.lease

    def run_match(
        self, job: Job, startd_address: str, claim_id: str, slot_name: str, slot_ad: dict[str, Any] | None,
        preempting: bool,
    ) -> None:
        """A match from the negotiator: a new shadow claims the slot and runs ``job``."""
        sh = Shadow(self, startd_address, claim_id, slot_name, slot_ad, self.job_lease(job))
        sh.preempting = preempting
        self.jobs.runners[job.key] = sh
        self.jobs.host.spawn(sh.run_match(job), f"shadow-{job.id}")

    def reconnect(self, job: Job, claim: dict[str, Any]) -> None:
        """After a schedd restart: a new shadow takes a running job's claim back."""
        job.busy = True
        sh = Shadow(
            self, claim["startd_address"], claim["claim_id"], claim.get("slot_name", ""),
            claim.get("slot_ad"), self.job_lease(job),
        )
        self.jobs.runners[job.key] = sh
        self.jobs.host.spawn(reconnect.take_back(sh, job), f"reconnect-{job.id}")

    def serving(self, claim_id: str, job_id: str) -> tuple[Shadow, Job]:
        """The shadow running ``job_id`` on ``claim_id`` (a starter's call names both)."""
        sh = self.by_claim.get(claim_id)
        if sh is None or sh.job is None or sh.job.id != job_id:
            raise RequestError("NOT_FOUND", f"no job {job_id} running on claim {claim_id[:12]}...")
        return sh, sh.job

    async def close(self) -> None:
        for c in self.clients.values():
            with contextlib.suppress(Exception):
                await c.close()


class Shadow:
    """One claim and the job running on it."""

    def __init__(
        self,
        shadows: Shadows,
        startd_address: str,
        claim_id: str,
        slot_name: str,
        slot_ad: dict[str, Any] | None,
        lease: float,
    ) -> None:
        self.shadows = shadows
        self.jobs = shadows.jobs
        self.startd_address = startd_address
        self.claim_id = claim_id
        self.slot_name = slot_name
        self.slot_obj = slot_ad or {}
        self._slot_ad: Any = None
        self.lease = max(1.0, lease)
        self.client = shadows.client_for(startd_address)
        self.owner: str | None = None
        self.job: Job | None = None
        self.exit: asyncio.Future[dict[str, Any]] | None = None
        self.vacating = False
        self.transfer_error: tuple[int, str] | None = None
        self._suspend_lock = asyncio.Lock()
        self.bytes_sent = self.bytes_recvd = 0  # this run's file transfer, each way
        self.claimed_at = time.time()
        self.last_alive = time.monotonic()
        self.started_at = 0.0
        self.jobs_run = 0
        self._keepalive: asyncio.Task[None] | None = None
        self.disconnected = False  # a 022 was written for the running job, no 023 yet
        # 001 is written when the job began (the starter's first "running" report, which
        # follows its input transfer, as in HTCondor), once the Running state is committed
        self._execute_due = False
        self._began = False
        self._execute_written = False  # this run's 001 is in the log
        self.input_open = False  # "Started transferring input files" logged, "Finished" not yet
        self._match_cache: dict[Any, bool] = {}
        self.preempting = False  # the claim preempts another job: activation waits for its exit
        self.submitter: str | None = None  # the accounting name the claim serves
        #: condor_now: the job this claim runs next, once its job has been vacated
        self.now_job: tuple[int, int] | None = None
        self._turn: Turn | None = None  # this claim's start in flight on its startd (startturns.py)

    def _end_turn(self) -> None:
        """The start in flight is over (the job runs, ended, or did not start)."""
        turn, self._turn = self._turn, None
        if turn is not None:
            turn.done()

    def _give_back(self, job: Job) -> None:
        """The claim could not take ``job``: offer it again (and stop owning it)."""
        if self.jobs.runners.get(job.key) is self:
            self.jobs.runners.pop(job.key, None)
        self.jobs.queue.give_back_idle(job)

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
        s = self.shadows
        self.owner = job.owner
        self.submitter = s.submitter_of(job.cluster)
        self._turn = await s.turns.take(self.startd_address)
        try:
            resp = await self.client.call(
                "REQUEST_CLAIM",
                claim_id=self.claim_id,
                job_ad=self._job_ad(job),
                schedd_address=self.jobs.host.address,
                lease=self.lease,
                slot_name=self.slot_name,  # a stale match is still counted on its slot
            )
        except (RemoteError, ConnectionError) as e:
            self._end_turn()
            log.debug("job %s: claim on %s refused: %s", job.id, self.slot_name, e)
            if not _stale(e):  # a stale match says nothing of the job: no back-off for it
                s.autoclusters.note_refused(job, f"claim on {self.slot_name} refused: {e}")
            self._give_back(job)
            if isinstance(e, NotConnected):
                # never reached the startd: the negotiator is told, so its promise of the
                # slot ends once the host is heard from again, not after its whole hold
                s.reschedule(unclaimed=self.slot_name)
                return
            if not isinstance(e, RemoteError):
                # no answer (a timeout, a connection cut): the startd may have granted the
                # claim all the same, and would hold the slot for us until its lease ran out
                self.jobs.host.spawn(self._release_quietly(), f"release-{self.slot_name}")
            s.reschedule()
            return
        except BaseException:
            self._end_turn()
            raise
        log.debug("job %s: claimed %s%s", job.id, self.slot_name, " (preempting)" if resp.get("preempting") else "")
        self._claimed(resp)
        await self._serve(job, reconnecting=False)

    async def _release_quietly(self) -> None:
        """RELEASE_CLAIM of a claim that may or may not be ours (best effort)."""
        with contextlib.suppress(RemoteError, ConnectionError, TimeoutError):
            await self.client.call("RELEASE_CLAIM", claim_id=self.claim_id, _timeout=5.0)

    def _claimed(self, resp: dict[str, Any]) -> None:
        """Take REQUEST_CLAIM's answer: whether it preempts, the claim id it granted (a
        dynamic slot's own), the granted slot's ad and name."""
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

    async def _serve(self, job: Job | None, *, reconnecting: bool, reconnect_state: dict[str, Any] | None = None) -> None:
        s = self.shadows
        jobs = self.jobs
        s.by_claim[self.claim_id] = self
        self._keepalive = asyncio.ensure_future(self._keepalive_loop())
        keep = True
        cancelled = holding = False
        try:
            first = True
            while job is not None and keep:
                if first and reconnecting:
                    keep = await reconnect.resume(self, job, reconnect_state or {})
                else:
                    keep = await self._run_job(job)
                first = False
                hold = _keep_claim_idle(job)
                job = self._next_job() if keep and not jobs.stopping else None
                if job is None and keep and hold > 0 and not jobs.stopping and not self.vacating:
                    holding = True
                    job = await s.hold_idle(self, hold)
                    holding = False
        except asyncio.CancelledError:
            # the schedd is stopping: the claim and its job outlive us; a claim only held
            # for a next job has none, and nothing would reconnect to it: let it go
            cancelled = not holding
            raise
        finally:
            self._end_turn()
            s.by_claim.pop(self.claim_id, None)
            if self._keepalive is not None:
                self._keepalive.cancel()
            if holding:
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await self.client.call("RELEASE_CLAIM", claim_id=self.claim_id, _timeout=2.0)
            elif not jobs.stopping and not cancelled:
                try:
                    await self.client.call("RELEASE_CLAIM", claim_id=self.claim_id, _timeout=5.0)
                except (RemoteError, ConnectionError) as e:
                    log.debug("release of claim on %s: %s", self.slot_name, e)
                s.reschedule()

    def _next_job(self) -> Job | None:
        """The next idle job this claim takes (claim reuse), if any: condor_now's now-job
        first, when it is still idle and fits the slot."""
        if self.vacating:
            return None
        now, self.now_job = self.now_job, None
        if now is not None:
            queue = self.jobs.queue
            job = queue.job(*now)
            if job is not None and job.status == jp.IDLE and not job.busy and not not_negotiated(job) \
                    and self.matches(job, self.shadows.autoclusters.signature(job)):
                queue.take_idle(job)
                return job
            log.info("job %d.%d: condor_now's job no longer idle or does not fit %s", *now, self.slot_name)
        return self.shadows.reuse.next_job(self.owner, self.submitter, self.claimed_at, self.matches)

    async def _keepalive_loop(self) -> None:
        interval = max(0.2, min(self.lease / 3.0, self.shadows.alive_interval))
        while True:
            await asyncio.sleep(interval)
            try:
                await self.client.call("KEEPALIVE", claim_id=self.claim_id, _timeout=interval)
                self.last_alive = time.monotonic()
                if self.disconnected:
                    self._log_contact(True)
            except RemoteError as e:
                if e.code == "NOT_FOUND":
                    self._lost(f"the startd no longer knows claim on {self.slot_name}")
                    return
                log.warning("keepalive to %s refused: %s", self.slot_name, e)
            except ConnectionError as e:
                if time.monotonic() - self.last_alive > self.lease:
                    if self.disconnected and self.job is not None:
                        self._log_reconnect_failed(self.job, f"Job disconnected too long: JobLeaseDuration "
                                                   f"({self.lease:.0f} seconds) expired")
                    self._lost(f"lost contact with {self.slot_name} for longer than the lease: {e}")
                    return
                if not self.disconnected:
                    self._log_contact(False, str(e))

    def _log_contact(self, regained: bool, why: str = "") -> None:
        """Events 022 (contact with the running job's startd lost, trying again) and 023
        (regained), as HTCondor's shadow writes them around a network cut."""
        job = self.job
        if job is None or job.status not in (jp.RUNNING, jp.SUSPENDED):
            self.disconnected = False
            return
        name = self.slot_name or self.startd_address
        if regained:
            self.disconnected = False
            log.info("job %s: contact with %s regained", job.id, name)
            event: Any = ReconnectedEvent(job.cluster.id, job.proc, time.time(), startd_name=name,
                                          startd_addr=f"<{self.startd_address}>", starter_addr=f"<{self.startd_address}>")
        else:
            self.disconnected = True
            log.warning("job %s: contact with %s lost (%s); trying again until the lease ends", job.id, name, why)
            event = DisconnectedEvent(job.cluster.id, job.proc, time.time(), startd_name=name,
                                      startd_addr=f"<{self.startd_address}>",
                                      reason="Socket between submit and execute hosts closed unexpectedly")
        self.jobs.write_events(job, [event])

    def _log_reconnect_failed(self, job: Job, why: str) -> None:
        self.disconnected = False
        self.jobs.write_events(job, [ReconnectFailedEvent(job.cluster.id, job.proc, time.time(),
                                                          startd_name=self.slot_name or self.startd_address,
                                                          reason=why)])

    def _lost(self, why: str) -> None:
        log.warning("claim %s lost: %s", self.slot_name, why)
        if self.exit is not None and not self.exit.done():
            self.exit.set_result({"state": "lost", "error": why})
        elif self.exit is None:
            # Idle between jobs: nothing to requeue; end the claim's loop at the next job.
            self.vacating = True
            self.shadows.stop_holding(self)

    def report(self, update: dict[str, Any]) -> None:
        """A JOB_UPDATE from the starter for the current job."""
        if self.disconnected:
            self._log_contact(True)  # the execute side reached us: contact is back
        state = update.get("state")
        if state == "running":
            self._end_turn()  # the job's process exists: the startd's part of the start is done
            if self._execute_due and self.job is not None:
                self._execute_due = False
                self._write_execute(self.job)
            self._began = True
            pid = update.get("pid")
            if isinstance(pid, int) and self.job is not None:
                log.debug("job %s running as pid %d", self.job.id, pid)
            now_usage = update.get("usage_now")
            if isinstance(now_usage, dict) and self.job is not None:
                self.jobs.host.spawn(self.jobs.live_usage(self.job, now_usage), f"usage-{self.job.id}")
                if self.job.status == jp.SUSPENDED:  # it runs: a "resumed" report was lost
                    self.jobs.host.spawn(self._suspension(self.job, False, 0), f"resumed-{self.job.id}")
            return
        if state in ("suspended", "resumed"):
            if self.job is not None:
                n = update.get("num_pids")
                self.jobs.host.spawn(self._suspension(self.job, state == "suspended", n if isinstance(n, int) else 0),
                                     f"{state}-{self.job.id}")
            return
        if state in ("exited", "failed", "vacated") and self.exit is not None and not self.exit.done():
            self.exit.set_result(update)

    async def _suspension(self, job: Job, suspended: bool, num_pids: int) -> None:
        async with self._suspend_lock:  # FIFO: a suspend and the resume after it stay in order
            await self.jobs.suspended(job, suspended, num_pids)

    # -- one job ----------------------------------------------------------------------------
    async def _run_job(self, job: Job) -> bool:
        """Activate the claim with ``job`` and see it through; False: give the claim up."""
        jobs = self.jobs
        if self._turn is None and not self.vacating:  # a reused claim: its start waits its turn too
            self._turn = await self.shadows.turns.take(self.startd_address)
        if self.vacating:
            self._end_turn()
            self._give_back(job)
            return False
        if not job.cluster.holds(job) or job.status != jp.IDLE:
            # Removed or held while the claim was being requested: nothing to run.
            self._end_turn()
            job.busy = False
            if jobs.runners.get(job.key) is self:
                jobs.runners.pop(job.key, None)
            return True
        self.job = job
        self.exit = asyncio.get_running_loop().create_future()
        self.transfer_error = None
        self.bytes_sent = self.bytes_recvd = 0
        self._began = self._execute_due = self._execute_written = False
        try:
            activated = await self._activate(job)
        except (RemoteError, ConnectionError) as e:
            self._end_turn()
            log.debug("job %s: activation on %s failed: %s", job.id, self.slot_name, e)
            self.shadows.autoclusters.note_refused(job, f"activation on {self.slot_name} refused: {e}")
            self.job = None
            self.exit = None
            self._give_back(job)
            return False
        self.started_at = time.time()
        self.jobs_run += 1
        self.shadows.autoclusters.note_started(job)
        log.debug("job %s: activated on %s", job.id, self.slot_name)
        if job.cluster.holds(job) and job.status == jp.IDLE:
            claim = {"claim_id": self.claim_id, "startd_address": self.startd_address, "slot_name": self.slot_name}
            # the account the execute host runs it as (its Owner, or a slot user): roost's ExecuteUser
            user = activated.get("user") if isinstance(activated, dict) else None
            await jobs.mark_running(job, self.slot_name, self, claim,
                                    {"ExecuteUser": user} if isinstance(user, str) else None)
            if self._began:
                self._write_execute(job)
            else:
                self._execute_due = True
        return await self._await_exit(job)

    def input_finished(self, job: Job) -> None:
        """Log "Finished transferring input files" once: when the transfer's handler
        ends, or first thing before 001 if the job's start report overtook it."""
        if self.input_open:
            self.input_open = False
            self.jobs.write_events(job, [FileTransferEvent(job.cluster.id, job.proc, time.time(),
                                                           transfer_type=FileTransferType.IN_FINISHED)])

    def output_started(self, job: Job) -> None:
        """Output is coming back, so the job began: its 001 goes before the output's 040s
        even when the transfer overtook the starter's "running" report."""
        self._execute_due = False
        self._write_execute(job)

    def _write_execute(self, job: Job) -> None:
        """The execute event (after the Running state is committed and the job began), once a run."""
        if self._execute_written:
            return
        self._execute_written = True
        self.input_finished(job)
        host = self.slot_obj.get("MyAddress") or self.startd_address
        self.jobs.write_events(
            job,
            [ExecuteEvent(job.cluster.id, job.proc, time.time(), execute_host=f"<{host}>", slot_name=self.slot_name)],
        )

    def _job_ad(self, job: Job) -> dict[str, Any]:
        """The job ad sent to the startd, with ``User``: the submitter (accounting) name
        the slot's ``RemoteUser`` carries, which the negotiator charges usage to."""
        ad = job.merged()
        ad["User"] = self.shadows.submitter_of(job.cluster)
        ad.pop("Scheduler", None)  # the dedicated scheduler's alone: a job naming it would outrank its nodes
        return ad

    async def _activate_preempting(self, ad: dict[str, Any]) -> dict[str, Any]:
        """ACTIVATE_CLAIM of a preempting claim, on a connection of its own (the startd
        answers only after the preempted job has left; keep-alives must not queue
        behind it). Given up if the claim is lost meanwhile."""
        client = self.shadows.connect(self.startd_address, timeout=PREEMPT_ACTIVATE_WAIT)
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
            return act.result()
        finally:
            self.preempting = False
            await client.close()

    async def _activate(self, job: Job) -> dict[str, Any]:
        """ACTIVATE_CLAIM (its answer); a startd still wrapping up the previous job's
        starter refuses for a moment after reporting its exit, so DENIED is retried briefly."""
        ad = self._job_ad(job)
        if self.shadows.activation_attrs is not None:
            ad.update(self.shadows.activation_attrs(job))
        if self.preempting:
            self._end_turn()  # it waits for the victim's retirement: not the startd's start work
            return await self._activate_preempting(ad)
        delay = 0.002
        for attempt in range(8):
            try:
                return await self.client.call("ACTIVATE_CLAIM", claim_id=self.claim_id, job_ad=ad)
            except RemoteError as e:
                if e.code != "DENIED" or attempt == 7 or self.jobs_run == 0:
                    raise
            await asyncio.sleep(delay)
            delay *= 2
        raise AssertionError("unreachable: the last attempt raises")

    async def _await_exit(self, job: Job) -> bool:
        assert self.exit is not None
        update = await self.exit
        self._end_turn()
        if self._execute_due:  # it ended (or failed to start) before saying it began
            self._execute_due = False
            self._write_execute(job)
        log.debug("job %s: %s on %s", job.id, update.get("state"), self.slot_name)
        self.exit = None
        self.job = None
        if self.shadows.on_run_end is not None:
            self.shadows.on_run_end(job, self.claim_id)
        try:
            return await runend.settle(self, job, update)
        except Exception:
            log.exception("job %s: handling its exit failed", job.id)
            return False

    async def _exited(self, job: Job, update: dict[str, Any]) -> None:
        """The job's program exited: the job policy's verdict (parallel.py's lead node too)."""
        await runend.exited(self, job, update)

    # -- stopping a job ------------------------------------------------------------------
    def vacate_job(self, job: Job, fast: bool = False) -> None:
        """``job`` was removed or held while running here, or condor_now vacates it
        (``fast``: killed at once): deactivate the claim."""
        self.jobs.host.spawn(self._deactivate(job, graceful=not fast), f"vacate-{job.id}")

    def vacate_running(self, job: Job, fast: bool) -> bool:
        """condor_vacate_job: deactivate the claim under a job that stays in the queue;
        the startd's ``vacated`` makes it Idle again (evicted, 004) and the claim is given
        up. False when this claim runs no such job now."""
        if self.job is not job or self.exit is None or self.exit.done():
            return False
        self.jobs.host.spawn(self._deactivate(job, graceful=not fast), f"vacate-{job.id}")
        return True

    async def suspend_job(self, job: Job, suspend: bool) -> bool:
        """condor_suspend / condor_continue through the startd (SUSPEND_CLAIM /
        CONTINUE_CLAIM); True when the job is then as asked."""
        if self.job is not job or self.exit is None or self.exit.done():
            return False
        try:
            resp = await self.client.call("SUSPEND_CLAIM" if suspend else "CONTINUE_CLAIM", claim_id=self.claim_id)
        except (RemoteError, ConnectionError, TimeoutError) as e:
            log.info("job %s: %s on %s: %s", job.id, "suspend" if suspend else "continue", self.slot_name, e)
            return False
        return resp.get("job") == job.id and resp.get("suspended") is suspend

    async def _deactivate(self, job: Job, graceful: bool = True) -> None:
        resp: dict[str, Any] = {}
        try:
            why = {jp.REMOVED: "remove", jp.HELD: "hold"}.get(job.status, "vacate")  # picks the job's kill signal
            resp = await self.client.call("DEACTIVATE_CLAIM", claim_id=self.claim_id, graceful=graceful, why=why,
                                          _timeout=_deactivate_timeout(job))
        except (RemoteError, ConnectionError, TimeoutError) as e:
            log.info("job %s: deactivate on %s: %s", job.id, self.slot_name, e)
        await asyncio.sleep(0)
        fut = self.exit
        if fut is not None and self.job is job and not fut.done() and resp.get("state") in ("exited", "failed", "vacated"):
            fut.set_result(resp)
            return
        if fut is None or self.job is not job:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(fut), VACATE_WAIT)
        if not fut.done():
            fut.set_result({"state": "vacated"})


def _stale(e: Exception) -> bool:
    """Whether a refused REQUEST_CLAIM says the match was stale (made against a slot ad a
    moment old: the slot is gone, claimed meanwhile, or a partitionable slot has less
    left than it showed) rather than that the slot refuses the job. Stale matches are
    dropped, the job back to Idle for the next cycle; only refusals of the job back its
    autocluster off (a match that waited for its turn at a busy startd is often stale)."""
    if not isinstance(e, RemoteError):
        return False
    text = str(e)
    return e.code == "NOT_FOUND" or (e.code == "DENIED" and (
        "is already claimed" in text or "free; the job asks for" in text or "takes no claims: in state" in text))


def _deactivate_timeout(job: Job) -> float:
    """How long a graceful DEACTIVATE may take: the job's vacate time, and for a job that
    leaves a checkpoint (or its outputs, ON_EXIT_OR_EVICT) the upload the startd answers
    after (it may wait for the schedd's admission, and for a schedd that is away)."""
    vacate = job.get("JobMaxVacateTime")
    out = 60.0 + (float(vacate) if type(vacate) in (int, float) and vacate > 0 else 10.0)
    if (job.get("CheckpointExitCode") is not None or job.get("SuccessCheckpointExitCode") is not None
            or job.get("SuccessCheckpointExitBySignal") is True
            or str(job.get("WhenToTransferOutput") or "").upper() == "ON_EXIT_OR_EVICT"):
        out += 180.0
    return out


__all__ = ["MAX_TRANSFER_RETRIES", "VACATE_WAIT", "Shadow", "Shadows"]
