"""The schedd: the durable job queue, its commands, and the policy that runs jobs.

Commands (docs/protocol.md): NEW_CLUSTER, SUBMIT, QUERY_JOBS, ACT, WAIT_JOBS from
tools; GET_REQUESTS, MATCHES from the negotiator; JOB_UPDATE, GET_FILES, PUT_FILES
from starters. Shadows (shadow.py) run jobs on claims; local-universe jobs run as
children (localuniverse.py). Every user-visible change is committed (group commit,
store.py) before anyone is told about it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import time
from collections import deque
from typing import Any

from roost.core import jobpolicy as jp
from roost.core.autocluster import autocluster_key, significant_attributes
from roost.daemons.base import Daemon, run
from roost.daemons.schedd.jobqueue import Job, JobQueue, status_allows
from roost.daemons.schedd.localuniverse import LocalJob, kill_orphan
from roost.daemons.schedd.shadow import (
    VACATE_WAIT,
    Shadow,
    held_event,
    shadow_exception,
    write_execute,
)
from roost.daemons.schedd.store import Store, dumps
from roost.daemons.schedd.transfer import (
    OutputWriter,
    TransferError,
    input_files,
    output_destination,
)
from roost.daemons.schedd.userlog import UserLogs, log_path
from roost.eventlog import AbortedEvent, ReleasedEvent, SubmitEvent
from roost.eventlog.events import Event
from roost.net import framing
from roost.net.adwire import obj_to_ad
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError, RequestError
from roost.net.server import Handler, Peer

log = logging.getLogger("roost.schedd")

LOCAL_UNIVERSES = (7, 12)  # scheduler and local: run here, never negotiated
CHUNK = 1 << 20
SMALL_TRANSFER = 4 << 20  # input sandboxes up to this size are sent in one write
#: an autocluster whose claim or activation was refused is left out of GET_REQUESTS for
#: this long, doubling with each further refusal up to REFUSED_BACKOFF_MAX (reset when
#: one of its jobs starts): no claim -> refuse -> release -> rematch storm
REFUSED_BACKOFF_MIN = 1.0
REFUSED_BACKOFF_MAX = 60.0
WAIT_PROGRESS_S = 0.05  # WAIT_JOBS: least time between a first change and a progress answer

def _bad(msg: str) -> RequestError:
    return RequestError("BAD_REQUEST", msg)


class Schedd(Daemon):
    ad_type = "Scheduler"

    def __init__(self, **kw: Any) -> None:
        super().__init__("schedd", "SCHEDD", **kw)
        cfg = self.config
        self.lease = float(cfg.get_float("JOB_LEASE_DURATION", 2400.0) or 2400.0)
        self.alive_interval = float(cfg.get_float("ALIVE_INTERVAL", 300.0) or 300.0)
        self.periodic_interval = float(cfg.get_float("PERIODIC_EXPR_INTERVAL", 60.0) or 60.0)
        worklife = (cfg.get("CLAIM_WORKLIFE") or "").strip()
        self.claim_worklife = float(worklife) if worklife else None
        self.ads_delay = float(cfg.get_float("SCHEDD_MIN_INTERVAL", 1.0) or 0.0)
        self.system_policy = jp.SystemPolicy(
            (cfg.get("SYSTEM_PERIODIC_HOLD") or "").strip(),
            (cfg.get("SYSTEM_PERIODIC_RELEASE") or "").strip(),
            (cfg.get("SYSTEM_PERIODIC_REMOVE") or "").strip(),
        )
        self.fsync = cfg.get_bool("SCHEDD_FSYNC", True) is not False
        self.max_history = int(cfg.get_int("MAX_HISTORY_ROWS", 1000000) or 1000000)
        self.max_running = int(cfg.get_int("MAX_JOBS_RUNNING", 10000) or 10000)
        self.store: Store | None = None
        self.queue: JobQueue = None  # type: ignore[assignment]
        self.userlogs = UserLogs()
        self.shadows: dict[str, Shadow] = {}
        self.runners: dict[tuple[int, int], Any] = {}  # job key -> Shadow or LocalJob
        self.clients: dict[str, AsyncClient] = {}
        self.stopping = False
        self.reconnects = 0
        self.reconnect_failures = 0
        self._unsettled: dict[int, int] = {}
        # Jobs that became done (Completed/Removed, maybe moved to history) in memory
        # whose change is not yet committed and logged: WAIT_JOBS does not count them.
        self._done_unlogged: set[tuple[int, int]] = set()
        self._done_unlogged_by_cluster: dict[int, int] = {}
        self._ac_ids: dict[Any, int] = {}  # job signature -> autocluster id
        self._prio_cache: dict[str, tuple[int, list[int]]] = {}  # owner -> (next cluster id, clusters with JobPrio)
        self._ac_by_key: dict[Any, int] = {}  # roost.core.autocluster key -> autocluster id
        self._cluster_sig: dict[int, frozenset[str]] = {}
        self._ac_members: dict[int, deque[Job]] = {}
        # refused autoclusters: id -> (not offered before this monotonic time, current delay)
        self._refused: dict[int, tuple[float, float]] = {}
        self._waiters: dict[int, set[asyncio.Future[None]]] = {}
        self._ads_task: asyncio.Task[None] | None = None
        self._ads_dirty = False
        self._resched_task: asyncio.Task[None] | None = None
        self._resched_again = False
        # Submitter names advertised with jobs (name -> owner): a zero ad follows when they go.
        self._advertised_names: dict[str, str] = {}
        self._sent_counts: dict[str, tuple[int, int, int]] = {}
        self._negotiator: AsyncClient | None = None
        self._constraint_cache: dict[str, Any] = {}

    # -- lifecycle -----------------------------------------------------------------------
    def request_stop(self) -> None:
        """SIGTERM: stop without releasing claims, so running jobs keep running and a
        restarted schedd reconnects to them (HTCondor's graceful schedd restart)."""
        self.stopping = True
        super().request_stop()

    def unix_socket(self) -> str | None:
        return str(self.run_dir / "schedd.sock")

    async def start(self) -> None:
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        self.store = Store(str(self.spool_dir / "job_queue.db"), fsync=self.fsync)
        self.queue = JobQueue(self.store)
        self.queue.load()
        log.info(
            "job queue loaded: %d clusters, totals %s", len(self.queue.clusters), self.queue.totals_named()
        )

    async def started(self) -> None:
        # Jobs that were running: reconnect to their claims (or requeue local ones).
        for job in list(self.queue.running.values()):
            claim = job.claim
            if claim and claim.get("claim_id") and claim.get("startd_address"):
                job.busy = True
                sh = Shadow(
                    self, claim["startd_address"], claim["claim_id"], claim.get("slot_name", ""),
                    claim.get("slot_ad"), self.job_lease(job),
                )
                self.runners[job.key] = sh
                self.spawn(sh.run_reconnect(job), f"reconnect-{job.id}")
            else:
                if claim and kill_orphan(claim):
                    log.info("job %s: killed the local job left from before the restart", job.id)
                await self.requeue(job, "the schedd restarted while the job ran")
        for owner_idle in list(self.queue.idle.values()):
            for job in list(owner_idle.values()):
                if job.get("JobUniverse") in LOCAL_UNIVERSES:
                    self.start_local(job)
        self.every(self.periodic_interval, self.periodic_policy, "periodic-policy")
        if any(self.queue.idle.values()):
            self.reschedule()

    async def stop(self) -> None:
        self.stopping = True
        for runner in list(self.runners.values()):
            if isinstance(runner, LocalJob):
                runner.vacate()
        if self.store is not None:
            with contextlib.suppress(Exception):
                await self.store.commit([])
            self.store.close()
        self.userlogs.close()
        for c in self.clients.values():
            with contextlib.suppress(Exception):
                await c.close()

    def handlers(self) -> dict[str, Handler]:
        return {
            "NEW_CLUSTER": self.h_new_cluster,
            "SUBMIT": self.h_submit,
            "SUBMIT_TEXT": self.h_submit_text,
            "QUERY_JOBS": self.h_query_jobs,
            "ACT": self.h_act,
            "WAIT_JOBS": self.h_wait_jobs,
            "GET_REQUESTS": self.h_get_requests,
            "MATCHES": self.h_matches,
            "JOB_UPDATE": self.h_job_update,
            "GET_FILES": self.h_get_files,
            "PUT_FILES": self.h_put_files,
        }

    # -- helpers shared with shadows ---------------------------------------------------------
    def client_for(self, address: str) -> AsyncClient:
        c = self.clients.get(address)
        if c is None:
            c = self.clients[address] = AsyncClient(address, timeout=30.0)
        return c

    def job_lease(self, job: Job) -> float:
        """The claim lease for a job: the job's JobLeaseDuration, capped by the pool's
        JOB_LEASE_DURATION (keep-alives go every third of it)."""
        v = job.get("JobLeaseDuration")
        if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
            return min(float(v), self.lease)
        return self.lease

    async def commit(self, ops: list[Any]) -> None:
        assert self.store is not None
        await self.store.commit(ops)

    def write_events(self, job: Job, events: list[Event]) -> None:
        self.userlogs.write(log_path(job.get), events, job.owner)

    def changed(self, job: Job) -> None:
        """A committed state change: wake waiters, refresh the submitter ads soon."""
        waiters = self._waiters.get(job.cluster.id)
        if waiters:
            for w in list(waiters):
                if not w.done():
                    w.set_result(None)
        self.ads_changed()

    def set_ops(self, job: Job, attrs: dict[str, Any], status: int | None = None, now: float | None = None) -> list[Any]:
        if status is not None and status != job.status:
            attrs = dict(attrs)
            attrs.update(jp.transition_attrs(job.status, status, now or time.time()))
        return self.queue.set(job, attrs, status)

    @staticmethod
    def _hold_attrs(job: Job, reason: str, code: int, subcode: int) -> dict[str, Any]:
        attrs = jp.hold_attrs(reason, code, subcode)
        attrs.update(jp.hold_count_attrs(job.get("NumHolds"), job.get("NumHoldsByReason"), code))
        return attrs

    def finish_ops(self, job: Job) -> list[Any]:
        """Ops that move a finished job to history, unless it asked to stay (LeaveJobInQueue)."""
        leave = job.get("LeaveJobInQueue")
        if isinstance(leave, str) and leave.startswith("/Expr("):
            try:
                leave = job.classad().eval("LeaveJobInQueue")
            except Exception:
                leave = False
        if leave is True and job.status == jp.COMPLETED:
            return []
        return self.queue.to_history(job, int(time.time()))

    async def mark_running(self, job: Job, shadow: Shadow | None, remote_host: str | None = None) -> None:
        now = time.time()
        attrs = jp.start_attrs(job.classad(), remote_host or (shadow.slot_name if shadow else ""), now)
        if shadow is not None:
            job.claim = {
                "claim_id": shadow.claim_id,
                "startd_address": shadow.startd_address,
                "slot_name": shadow.slot_name,
            }
            attrs["StartdAddress"] = shadow.startd_address
            self.runners[job.key] = shadow
        ops = self.set_ops(job, attrs, jp.RUNNING, now)
        await self._report(job, ops, [])
        if shadow is not None:
            await write_execute(self, job, shadow)

    def note_running(self, job: Job, pid: int) -> None:
        log.debug("job %s running as pid %d", job.id, pid)

    async def apply_exit(self, job: Job, decision: jp.Decision, attrs: dict[str, Any], term: Event) -> None:
        """Apply the exit policy's decision; commit; then log the events."""
        now = time.time()
        job.claim = None
        self.runners.pop(job.key, None)
        events: list[Event] = [term]
        if decision.action == "hold":
            attrs.update(self._hold_attrs(job, decision.reason, decision.code, decision.subcode))
            ops = self.set_ops(job, attrs, jp.HELD, now)
            events.append(held_event(job, decision.reason, decision.code, decision.subcode))
        elif decision.action == "requeue":
            ops = self.set_ops(job, attrs, jp.IDLE, now)
            job.busy = False
            self.queue.give_back_idle(job)
        else:
            ops = self.set_ops(job, attrs, jp.COMPLETED, now)
        path = log_path(job.get)
        if job.status == jp.COMPLETED:
            ops += self.finish_ops(job)
        # The claim may take its next job while this commits: only the report waits.
        assert self.store is not None
        done = job.status == jp.COMPLETED
        self._mark_unsettled(job.cluster.id)
        if done:
            self._hide_done(job)
        durable = self.store.submit(ops)
        self.spawn(self._report_exit(job, durable, path, events, decision.action == "requeue", done), f"exit-{job.id}")

    async def _report_exit(
        self, job: Job, durable: asyncio.Future[None], path: str | None, events: list[Event], requeued: bool,
        done: bool = False,
    ) -> None:
        try:
            await durable
            log.debug("job %s: exit committed", job.id)
            self.userlogs.write(path, events, job.owner)
        finally:
            self._mark_settled(job.cluster.id)
            if done:
                self._show_done(job)
        self.changed(job)
        if requeued:
            self.idle_arrived(job)

    # Clusters with changes made in memory but not yet durable and logged: WAIT_JOBS
    # waits for them to settle, so nobody hears of a change before it is committed.
    def _mark_unsettled(self, cid: int) -> None:
        self._unsettled[cid] = self._unsettled.get(cid, 0) + 1

    def _hide_done(self, job: Job) -> None:
        """``job`` just became done in memory: hide that from WAIT_JOBS until it is durable and logged."""
        if job.key not in self._done_unlogged:
            self._done_unlogged.add(job.key)
            cid = job.cluster.id
            self._done_unlogged_by_cluster[cid] = self._done_unlogged_by_cluster.get(cid, 0) + 1

    def _show_done(self, job: Job) -> None:
        if job.key in self._done_unlogged:
            self._done_unlogged.discard(job.key)
            cid = job.cluster.id
            n = self._done_unlogged_by_cluster.get(cid, 0) - 1
            if n > 0:
                self._done_unlogged_by_cluster[cid] = n
            else:
                self._done_unlogged_by_cluster.pop(cid, None)

    def _mark_settled(self, cid: int) -> None:
        n = self._unsettled.get(cid, 0) - 1
        if n > 0:
            self._unsettled[cid] = n
        else:
            self._unsettled.pop(cid, None)

    async def _report(
        self, job: Job, ops: list[Any], events: list[Event], path: str | None = None, *, done: bool = False
    ) -> None:
        """Commit ``ops``, then write ``events`` to the job's log, then tell waiters.
        ``done``: this change made the job done (WAIT_JOBS counts it only once logged)."""
        self._mark_unsettled(job.cluster.id)
        if done:
            self._hide_done(job)
        try:
            if ops:
                await self.commit(ops)
            if events:
                self.userlogs.write(path if path is not None else log_path(job.get), events, job.owner)
        finally:
            self._mark_settled(job.cluster.id)
            if done:
                self._show_done(job)
        self.changed(job)

    async def _settled(self, cids: set[int]) -> None:
        for _ in range(10000):
            assert self.store is not None
            await self.store.barrier()
            if not any(self._unsettled.get(c) for c in cids):
                return
            await asyncio.sleep(0.001)

    async def requeue(self, job: Job, why: str) -> None:
        """A run ended without an exit (lost claim, restart): back to Idle."""
        job.claim = None
        self.runners.pop(job.key, None)
        if job.cluster.procs.get(job.proc) is not job:
            return
        n = job.get("NumShadowExceptions", 0)
        attrs = {"NumShadowExceptions": (n if isinstance(n, int) else 0) + 1, "LastRemoteHost": job.get("RemoteHost")}
        status = jp.IDLE if job.status == jp.RUNNING else None
        ops = self.set_ops(job, attrs, status)
        job.busy = False
        self.queue.give_back_idle(job)
        await self._report(job, ops, [shadow_exception(job, why)])
        self.idle_arrived(job)

    async def finish_removed(self, job: Job) -> None:
        job.claim = None
        self.runners.pop(job.key, None)
        await self._report(job, self.finish_ops(job), [])

    async def clear_claim(self, job: Job) -> None:
        job.claim = None
        self.runners.pop(job.key, None)
        job.busy = False
        await self._report(job, self.queue.set(job, {}), [])

    async def hold(self, job: Job, reason: str, code: int, subcode: int = 0, *, vacate: bool = True) -> bool:
        if job.cluster.procs.get(job.proc) is not job or not status_allows("hold", job.status):
            return False
        was_running = job.status == jp.RUNNING
        if not was_running or not vacate:
            job.claim = None
            self.runners.pop(job.key, None)
            job.busy = False
        ops = self.set_ops(job, self._hold_attrs(job, reason, code, subcode), jp.HELD)
        await self._report(job, ops, [held_event(job, reason, code, subcode)])
        if was_running and vacate:
            self.vacate(job)
        return True

    async def release(self, job: Job, reason: str) -> bool:
        if job.cluster.procs.get(job.proc) is not job or job.status != jp.HELD:
            return False
        d = job.diff or {}
        attrs: dict[str, Any] = {
            "LastHoldReason": d.get("HoldReason"),
            "LastHoldReasonCode": d.get("HoldReasonCode"),
            "ReleaseReason": reason,
        }
        for k in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
            d.pop(k, None)
        ops = self.set_ops(job, attrs, jp.IDLE)
        await self._report(job, ops, [ReleasedEvent(job.cluster.id, job.proc, time.time(), reason=reason)])
        self.idle_arrived(job)
        return True

    async def remove(self, job: Job, reason: str) -> bool:
        if job.cluster.procs.get(job.proc) is not job or not status_allows("remove", job.status):
            return False
        was_running = job.status == jp.RUNNING
        ops = self.set_ops(job, {"RemoveReason": reason}, jp.REMOVED)
        path = log_path(job.get)
        if not was_running:
            ops += self.finish_ops(job)
        await self._report(job, ops, [AbortedEvent(job.cluster.id, job.proc, time.time(), reason=reason)], path, done=True)
        if was_running:
            self.vacate(job)
        return True

    def vacate(self, job: Job) -> None:
        """Stop a running job whose status already says Removed or Held."""
        runner = self.runners.get(job.key)
        if isinstance(runner, LocalJob):
            runner.vacate()
            return
        if isinstance(runner, Shadow):
            self.spawn(self._deactivate(runner, job), f"vacate-{job.id}")
            return
        # No runner (e.g. between restart and reconnect): settle it now.
        self.spawn(self._settle(job), f"settle-{job.id}")

    async def _settle(self, job: Job) -> None:
        if job.status == jp.REMOVED:
            await self.finish_removed(job)
        elif job.status == jp.HELD:
            await self.clear_claim(job)

    async def _deactivate(self, shadow: Shadow, job: Job) -> None:
        resp: dict[str, Any] = {}
        try:
            resp = await shadow.client.call("DEACTIVATE_CLAIM", claim_id=shadow.claim_id, graceful=True, _timeout=60.0)
        except (RemoteError, ConnectionError) as e:
            log.info("job %s: deactivate on %s: %s", job.id, shadow.slot_name, e)
        await asyncio.sleep(0)
        fut = shadow.exit
        if fut is not None and shadow.job is job and not fut.done() and resp.get("state") in ("exited", "failed", "vacated"):
            fut.set_result(resp)
            return
        if fut is None or shadow.job is not job:
            return
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(fut), VACATE_WAIT)
        if not fut.done():
            fut.set_result({"state": "vacated"})

    # -- idle jobs, negotiation, claim reuse ------------------------------------------------------
    def idle_arrived(self, job: Job) -> None:
        if job.get("JobUniverse") in LOCAL_UNIVERSES:
            self.start_local(job)
        else:
            self.reschedule()

    def start_local(self, job: Job) -> None:
        if job.key in self.runners or job.status != jp.IDLE:
            return
        self.queue.take_idle(job)
        runner = LocalJob(self, job)
        self.runners[job.key] = runner

        async def go() -> None:
            try:
                await runner.run()
            finally:
                if self.runners.get(job.key) is runner:
                    self.runners.pop(job.key, None)

        self.spawn(go(), f"local-{job.id}")

    def next_job_for_claim(self, shadow: Shadow) -> Job | None:
        """The next idle job of the claim's owner that fits its slot (claim reuse)."""
        if shadow.vacating:
            return None
        if self.claim_worklife is not None and time.time() - shadow.claimed_at > self.claim_worklife:
            return None
        owner = shadow.owner
        if owner is None:
            return None
        idle = self.queue.idle.get(owner)
        if not idle:
            return None
        tried = 0
        for job in self._reuse_candidates(owner, idle):
            if job.busy or job.status != jp.IDLE or job.get("JobUniverse") in LOCAL_UNIVERSES:
                continue
            if shadow.submitter is not None and self.submitter_of(job.cluster) != shadow.submitter:
                continue  # another accounting group's job: it must be negotiated for
            tried += 1
            if shadow.matches(job, self.signature(job)):
                self.queue.take_idle(job)
                return job
            if tried > 16:
                break
        return None

    def _reuse_candidates(self, owner: str, idle: dict[tuple[int, int], Job]) -> list[Job]:
        """The idle jobs a reused claim tries, best first: by ``JobPrio`` (higher first),
        then submit order, as GET_REQUESTS orders them. Without priorities, the first
        64 in submit order; with them, also the first idle procs of every cluster that
        sets ``JobPrio``, so a later, more urgent job is not left behind."""
        window = list(itertools.islice(idle.values(), 64))
        prio_clusters = self._prio_clusters(owner)
        if not prio_clusters:
            return window
        seen = {j.key for j in window}
        for cid in prio_clusters:
            cluster = self.queue.clusters.get(cid)
            if cluster is None or not cluster.counts.get(jp.IDLE):
                continue
            for job in itertools.islice((j for j in cluster.procs.values() if j.key in idle), 64):
                if job.key not in seen:
                    seen.add(job.key)
                    window.append(job)

        def order(j: Job) -> tuple[float, Any, int, int]:
            p = j.get("JobPrio")
            return (-p if type(p) in (int, float) else 0, j.cluster.ad.get("QDate") or 0, j.cluster.id, j.proc)

        window.sort(key=order)
        return window

    def _prio_clusters(self, owner: str) -> list[int]:
        """The owner's clusters whose cluster ad or procs set a non-zero ``JobPrio``;
        recomputed only once a new cluster has been submitted."""
        version = self.queue.next_cluster
        cached = self._prio_cache.get(owner)
        if cached is not None and cached[0] == version:
            return cached[1]
        found = [c.id for c in self.queue.clusters.values() if c.owner == owner and (
            c.ad.get("JobPrio") or any(j.diff and j.diff.get("JobPrio") for j in c.procs.values()))]
        self._prio_cache[owner] = (version, found)
        return found

    def reschedule(self) -> None:
        """Ask the negotiator for a cycle soon (coalesced; submitter ads refreshed first)."""
        if self.stopping:
            return
        if self._resched_task is not None and not self._resched_task.done():
            self._resched_again = True
            return
        self._resched_task = self.spawn(self._reschedule(), "reschedule")

    async def _reschedule(self) -> None:
        while True:
            self._resched_again = False
            await self.advertise_submitters()
            address = await self.negotiator_address()
            if address:
                if self._negotiator is None or self._negotiator.address != address:
                    if self._negotiator is not None:
                        await self._negotiator.close()
                    self._negotiator = AsyncClient(address, timeout=5.0)
                try:
                    log.debug("RESCHEDULE to %s", address)
                    await self._negotiator.call("RESCHEDULE")
                except (RemoteError, ConnectionError) as e:
                    log.debug("RESCHEDULE to %s: %s", address, e)
            if not self._resched_again:
                return

    def ads_changed(self) -> None:
        self._ads_dirty = True
        if self._ads_task is None or self._ads_task.done():
            self._ads_task = self.spawn(self._ads_soon(), "submitter-ads")

    async def _ads_soon(self) -> None:
        await asyncio.sleep(min(max(self.ads_delay, 0.2), 1.0))
        if self._ads_dirty:
            self._ads_dirty = False
            await self.advertise()

    # -- autoclusters ---------------------------------------------------------------------------
    def signature(self, job: Job) -> Any:
        """A cheap key for the job's autocluster: its cluster plus those of its own
        differences that are significant (roost.core.autocluster's choice of attributes,
        computed once per cluster). Most jobs differ only in Args/Out: key = cluster id."""
        cid = job.cluster.id
        d = job.diff
        sig = self._cluster_sig.get(cid)
        if sig is None:
            if len(self._cluster_sig) > 10000:
                self._cluster_sig.clear()
            try:
                names = significant_attributes(job.cluster.classad())
            except Exception:
                names = ()
            sig = self._cluster_sig[cid] = frozenset(n.lower() for n in names)
        if "procid" in sig:
            return (cid, job.proc)
        if not d:
            return cid
        items = [(k, v) for k, v in d.items() if k.lower() in sig]
        return (cid, dumps(sorted(items))) if items else cid

    def note_refused(self, job: Job, why: str) -> None:
        """A claim or activation for ``job`` was refused (or its startd was unreachable):
        keep its autocluster out of GET_REQUESTS for a while, doubling per refusal, and
        ask for a cycle once that is over. Logged when the back-off starts, not per refusal."""
        try:
            ac = self.autocluster_of(job, self.signature(job))
        except Exception:
            return
        now = time.monotonic()
        prev = self._refused.get(ac)
        delay = REFUSED_BACKOFF_MIN if prev is None else min(REFUSED_BACKOFF_MAX, prev[1] * 2)
        self._refused[ac] = (now + delay, delay)
        if prev is None:
            log.info("job %s: %s; autocluster %d not offered for %g s (doubling while refused, up to %g s)",
                     job.id, why, ac, delay, REFUSED_BACKOFF_MAX)
        else:
            log.debug("job %s: %s; autocluster %d not offered for %g s", job.id, why, ac, delay)
        with contextlib.suppress(RuntimeError):  # no loop: nothing to wake
            asyncio.get_running_loop().call_later(delay + 0.01, self.reschedule)

    def note_started(self, job: Job) -> None:
        """``job`` was activated: its autocluster's refusals are forgiven."""
        if self._refused:
            ac = self._ac_ids.get(self.signature(job))
            if ac is not None and self._refused.pop(ac, None) is not None:
                log.info("job %s: activated; autocluster %d offered again", job.id, ac)

    def _backing_off(self, now: float) -> set[int]:
        """Autoclusters still in their back-off; entries long over are forgotten."""
        out = set()
        for ac, (until, _delay) in list(self._refused.items()):
            if until > now:
                out.add(ac)
            elif now - until > 2 * REFUSED_BACKOFF_MAX:
                del self._refused[ac]  # no refusal for long: start again from the minimum
        return out

    def autocluster_of(self, job: Job, sig: Any) -> int:
        """The autocluster id for a signature: jobs of different clusters that the
        matchmaker cannot tell apart share one (roost.core.autocluster's key)."""
        ac = self._ac_ids.get(sig)
        if ac is None:
            try:
                ad = job.classad()
                # Per submitter name: a match is for one accounting group's jobs.
                key: Any = (self.submitter_of(job.cluster), autocluster_key(ad, significant_attributes(ad)))
            except Exception:
                key = ("signature", sig)
            ac = self._ac_by_key.get(key)
            if ac is None:
                ac = self._ac_by_key[key] = len(self._ac_by_key) + 1
            self._ac_ids[sig] = ac
        return ac

    async def advertise_submitters(self) -> None:
        """Send the submitter ads whose counts changed since last sent (one UPDATE_AD
        each): what the negotiator must see before a RESCHEDULE is worth sending."""
        for _t, ad, _private in list(self.submitter_ads()):
            key = (ad["IdleJobs"], ad["RunningJobs"], ad["HeldJobs"])
            if self._sent_counts.get(ad["Name"]) == key:
                continue
            try:
                await self.collector_call("UPDATE_AD", type="Submitter", ad=ad)
            except (ConnectionError, RequestError) as e:
                log.debug("submitter ad for %s not sent: %s", ad["Name"], e)
                return
            self._sent_counts[ad["Name"]] = key
            self._advertised.add(("Submitter", ad["Name"]))
            self._note_sent(ad)

    def _note_sent(self, ad: dict[str, Any]) -> None:
        if ad["IdleJobs"] or ad["RunningJobs"] or ad["HeldJobs"]:
            self._advertised_names[ad["Name"]] = ad["Owner"]
        else:
            self._advertised_names.pop(ad["Name"], None)

    async def advertise(self) -> None:
        ads = list(self.submitter_ads())
        await super().advertise()
        for _t, ad, _p in ads:
            self._sent_counts[ad["Name"]] = (ad["IdleJobs"], ad["RunningJobs"], ad["HeldJobs"])
            self._note_sent(ad)

    def submitter_of(self, cluster: Any) -> str:
        """The submitter (accounting) name of a cluster's jobs, as HTCondor names it:
        ``AccountingGroup@domain`` when the job has one (``group.user``, or
        ``nice-user.user`` for nice_user jobs), else ``owner@domain``. Taken from the
        cluster ad: procs of one cluster share their accounting group."""
        g = cluster.ad.get("AccountingGroup")
        base = g if isinstance(g, str) and g else cluster.owner
        return f"{base}@{self.hostname}"

    # -- ads -------------------------------------------------------------------------------------
    def ad(self) -> dict[str, Any] | None:
        t = self.queue.totals_named() if self.queue is not None else {}
        return {
            "TotalIdleJobs": t.get("Idle", 0),
            "TotalRunningJobs": t.get("Running", 0),
            "TotalHeldJobs": t.get("Held", 0),
            "TotalRemovedJobs": t.get("Removed", 0),
            "TotalJobAds": t.get("Total", 0),
            "NumUsers": sum(1 for c in self.queue.owner_totals.values() if any(c.values())) if self.queue else 0,
            "ScheddIpAddr": self.address,
            "NumShadows": len(self.shadows),
            "NumJobReconnects": self.reconnects,
            "NumJobReconnectFailures": self.reconnect_failures,
        }

    def ads(self) -> Any:
        yield from super().ads()
        yield from self.submitter_ads()

    def submitter_ads(self) -> Any:
        """One Submitter ad per submitter name (owner, or accounting group + user) with
        jobs, and one with zeros for a name whose jobs are all gone (until that has
        been sent)."""
        if self.queue is None:
            return
        counts: dict[str, tuple[str, dict[int, int], float]] = {}
        for owner, c in self.queue.owner_totals.items():
            if any(c.values()):
                counts[f"{owner}@{self.hostname}"] = (owner, dict(c), 0.0)
        weights: dict[str, float] = {}
        for cluster in self.queue.clusters.values():
            cc = cluster.counts
            running = cc.get(jp.RUNNING, 0)
            if running:
                cpus = cluster.ad.get("RequestCpus")
                w = running * (cpus if type(cpus) in (int, float) and cpus > 0 else 1)
            else:
                w = 0
            g = cluster.ad.get("AccountingGroup")
            name = self.submitter_of(cluster)
            if isinstance(g, str) and g and any(cc.values()):
                default = counts.get(f"{cluster.owner}@{self.hostname}")
                if default is not None:  # move these counts from the owner's plain name
                    for st, n in cc.items():
                        default[1][st] = default[1].get(st, 0) - n
                entry = counts.setdefault(name, (cluster.owner, {}, 0.0))
                for st, n in cc.items():
                    entry[1][st] = entry[1].get(st, 0) + n
            if w:
                weights[name] = weights.get(name, 0.0) + w
        for name, owner in self._advertised_names.items():
            counts.setdefault(name, (owner, {}, 0.0))
        for name in sorted(counts):
            owner, c, _ = counts[name]
            if not any(c.values()) and name not in self._advertised_names:
                continue  # every job of this owner is in an accounting group
            w = weights.get(name, 0.0)
            yield "Submitter", {
                "MyType": "Submitter",
                "Name": name,
                "Owner": owner,
                "User": name,
                "AccountingGroup": name.rsplit("@", 1)[0],
                "ScheddName": self.daemon_name,
                "ScheddAddress": self.address,
                "MyAddress": self.address,
                "IdleJobs": c.get(jp.IDLE, 0),
                "RunningJobs": c.get(jp.RUNNING, 0),
                "WeightedRunningJobs": int(w) if float(w).is_integer() else w,
                "HeldJobs": c.get(jp.HELD, 0),
                "SubmitterTag": self.hostname,
            }, None

    # -- NEW_CLUSTER / SUBMIT ----------------------------------------------------------------------
    def _writer(self, peer: Peer, cmd: str) -> None:
        """Changing the queue needs an authenticated user: the Unix socket's peer. A root
        schedd runs jobs as their owners, so an unauthenticated TCP peer must not name
        one (token/SSL authentication comes with the security issue)."""
        if peer.user is None and os.geteuid() == 0:
            raise RequestError(
                "DENIED", f"{cmd} needs an authenticated user: use the schedd's Unix socket (run/schedd.sock)"
            )

    async def h_new_cluster(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self._writer(peer, "NEW_CLUSTER")
        cid = self.queue.new_cluster_id()
        mine = peer.state.get("clusters")
        if mine is None:
            mine = peer.state["clusters"] = set()
            reserved = self.queue.reserved

            def release() -> None:
                # Reservations end with their connection (docs/protocol.md), as
                # HTCondor's NewCluster ends with its qmgmt connection.
                if mine:
                    log.debug("released clusters %s reserved by %s", sorted(mine), peer.address)
                reserved.difference_update(mine)
                mine.clear()

            peer.on_close(release)
        mine.add(cid)
        return {"cluster": cid}

    async def h_submit(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self._writer(peer, "SUBMIT")
        cid = req["cluster"]
        if cid not in self.queue.reserved:
            raise _bad(f"SUBMIT: cluster {cid} was not reserved with NEW_CLUSTER (or was already submitted)")
        count = await self._add_cluster(cid, dict(req["cluster_ad"]), req["procs"], peer)
        return {"cluster": cid, "count": count}

    async def _add_cluster(self, cid: int, cluster_ad: dict[str, Any], procs: list[dict[str, Any]],
                           peer: Peer) -> int:
        """Check a reserved cluster's ads, store it durably and start it moving; its proc count."""
        if not procs:
            raise _bad("SUBMIT: no procs")
        owner = cluster_ad.get("Owner")
        if peer.user is not None:
            if owner is None:
                owner = peer.user
            elif owner != peer.user and peer.uid != 0:
                raise RequestError("DENIED", f"SUBMIT: user {peer.user} may not submit jobs owned by {owner!r}")
        if not isinstance(owner, str) or not owner:
            raise _bad("SUBMIT: the cluster ad has no Owner")
        cluster_ad["Owner"] = owner
        # condor_submit's Requirements compare TARGET.FileSystemDomain with MY.FileSystemDomain
        # (should_transfer_files = NO / IF_NEEDED): the job carries this host's domain.
        cluster_ad.setdefault("FileSystemDomain", self.config.get("FILESYSTEM_DOMAIN") or self.hostname)
        cmd = cluster_ad.get("Cmd", procs[0].get("Cmd"))
        if not isinstance(cmd, str) or not cmd:
            raise _bad("SUBMIT: the job has no Cmd (executable)")
        obj_to_ad(cluster_ad)  # refuses bad expressions with BAD_REQUEST
        now = int(time.time())
        cluster_ad["ClusterId"] = cid
        cluster_ad.setdefault("QDate", now)
        cluster_ad.setdefault("EnteredCurrentStatus", now)
        cluster_ad.setdefault("JobStatus", jp.IDLE)
        if cluster_ad.get("JobStatus") not in (jp.IDLE, jp.HELD):
            cluster_ad["JobStatus"] = jp.IDLE
        checked: set[str] = set()
        seen: set[int] = set()
        for i, d in enumerate(procs):
            p = d.get("ProcId", i)
            if type(p) is not int or p < 0 or p in seen:
                raise _bad(f"SUBMIT: proc {i} has a bad or repeated ProcId {p!r}")
            seen.add(p)
            if "Owner" in d and d["Owner"] != owner:
                raise _bad(f"SUBMIT: proc {p} has a different Owner")
            for k, v in d.items():
                if type(v) is str and v.startswith("/Expr(") and v not in checked:
                    obj_to_ad({k: v})
                    checked.add(v)
                elif type(v) is dict or type(v) is list:
                    obj_to_ad({k: v})
        peer.state.get("clusters", set()).discard(cid)
        ops = self.queue.add_cluster(cid, owner, cluster_ad, procs)
        await self.commit(ops)
        cluster = self.queue.clusters.get(cid)
        if cluster is not None:
            self._log_submits(cluster, peer)
            local = cluster.ad.get("JobUniverse") in LOCAL_UNIVERSES
            for job in list(cluster.procs.values()):
                if job.status == jp.IDLE and (local or job.get("JobUniverse") in LOCAL_UNIVERSES):
                    self.start_local(job)
            self.ads_changed()
            if not local:
                self.reschedule()
        log.info("cluster %d: %d jobs submitted by %s", cid, len(procs), owner)
        return len(procs)

    async def h_submit_text(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """A whole submit description, parsed and expanded here for a local user.

        The fast path of ``roost submit``: the tool then needs neither the submit
        language nor the API, and one round trip replaces NEW_CLUSTER + SUBMIT.
        The schedd reads the user's include, item and input files, so it takes this
        path only when it has exactly the peer's rights (the same uid); otherwise it
        answers SUBMIT_LOCALLY and the tool parses and SUBMITs itself.
        """
        if peer.uid is None or peer.user is None or peer.uid != os.geteuid():
            raise RequestError("SUBMIT_LOCALLY", "SUBMIT_TEXT is served to the schedd's own user on its Unix socket")
        env, overrides, append = req.get("env") or {}, req.get("overrides") or {}, req.get("append") or []
        if any(type(v) is not str for v in (*env.values(), *overrides.values())) or any(
            type(v) is not str for v in append
        ):
            raise _bad("SUBMIT_TEXT: env and overrides map names to strings, append is a list of strings")
        from roost.api.submitting import file_size, wire_cluster
        from roost.submit import SubmitError, parse_submit

        owner, qdate = peer.user, int(time.time())
        first = self.queue.new_cluster_id()

        def expand(cluster_id: int) -> list[Any]:
            desc = parse_submit(req["text"], file=req.get("file"), cwd=req["cwd"], env=env, overrides=overrides,
                                append=append, file_size=file_size, stdin_text=None)
            return desc.expand(cluster_id=cluster_id, qdate=qdate, owner=owner)

        ids = [first]
        try:
            try:
                clusters = await asyncio.to_thread(expand, first)
            except SubmitError as e:
                raise RequestError("SUBMIT_ERROR", str(e)) from None
            ids += [self.queue.new_cluster_id() for _ in clusters[1:]]
            done: list[list[int]] = []
            for i, (cid, c) in enumerate(zip(ids, clusters)):
                if cid != c.cluster_id:  # another submit took an id in between: $(Cluster) must be the real one
                    c = (await asyncio.to_thread(expand, cid - i))[i]
                cluster_ad, procs = wire_cluster(c)
                done.append([cid, await self._add_cluster(cid, cluster_ad, procs, peer)])
        finally:
            self.queue.reserved.difference_update(ids)
        return {"clusters": done, "warnings": [str(w) for c in clusters for w in c.warnings]}

    def _log_submits(self, cluster: Any, peer: Peer) -> None:
        host = f"<{self.address}>"
        now = time.time()
        by_path: dict[str, list[Event]] = {}
        shared = log_path(cluster.ad.get)
        for job in cluster.procs.values():
            d = job.diff
            path = log_path(job.get) if d and ("UserLog" in d or "Iwd" in d) else shared
            if path:
                by_path.setdefault(path, []).append(SubmitEvent(cluster.id, job.proc, now, submit_host=host))
        for path, events in by_path.items():
            self.userlogs.write(path, events, cluster.owner)

    # -- QUERY_JOBS ------------------------------------------------------------------------------
    def _constraint(self, text: str) -> Any:
        from roost.classad import ExprTree

        got = self._constraint_cache.get(text)
        if got is None:
            try:
                expr = ExprTree(text)
            except Exception as e:
                raise _bad(f"bad constraint {text!r}: {e}") from None
            refs = _references(expr)
            got = (expr, refs)
            if len(self._constraint_cache) > 256:
                self._constraint_cache.clear()
            self._constraint_cache[text] = got
        return got

    def _ids_arg(self, ids: list[str] | None) -> list[str] | None:
        if ids is None:
            return None
        for t in ids:
            try:
                self.queue.parse_id(t)
            except ValueError:
                raise _bad(f"bad job id {t!r}: want C or C.P") from None
        return ids

    async def h_query_jobs(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        owner = req.get("owner")
        if req.get("totals"):
            if req.get("constraint") or req.get("ids"):
                counts: dict[str, int] = {n: 0 for n in jp.STATUS_NAMES.values()}
                for job in self._matching(req, owner):
                    counts[jp.STATUS_NAMES.get(job.status, "Idle")] += 1
                counts["Total"] = sum(counts.values())
                return {"totals": counts}
            return {"totals": self.queue.totals_named(owner)}
        limit = req.get("limit")
        projection = req.get("projection")
        clusters: dict[str, Any] = {}
        jobs: list[list[Any]] = []
        plain = not (req.get("constraint") or req.get("ids"))
        if plain:
            self._list_all(owner, limit, clusters, jobs, projection)
        for job in () if plain else self._matching(req, owner):
            if limit is not None and len(jobs) >= limit:
                break
            key = str(job.cluster.id)
            if key not in clusters:
                cad = job.cluster.ad
                clusters[key] = {k: cad[k] for k in projection if k in cad} if projection else cad
            d = job.diff_obj()
            if projection:
                d = {k: d[k] for k in projection if k in d}
                d["ProcId"] = job.proc
            jobs.append([job.cluster.id, job.proc, d])
        if req.get("history") and (limit is None or len(jobs) < limit):
            assert self.store is not None
            await self.store.barrier()
            await self._add_history(req, owner, jobs, limit, projection)
        return {"clusters": clusters, "jobs": jobs}

    def _list_all(
        self,
        owner: str | None,
        limit: int | None,
        clusters: dict[str, Any],
        jobs: list[list[Any]],
        projection: list[str] | None = None,
    ) -> None:
        """The listing without a constraint (``roost q``), written for speed: 100,000
        jobs in ~0.1 s. A projection is applied to each cluster ad once and to each
        proc's differences (names compared without case, as ClassAds do)."""
        append = jobs.append
        left = limit if limit is not None else -1
        wanted = {n.lower() for n in projection} if projection else None
        want_status = wanted is None or "jobstatus" in wanted
        lowered: dict[str, str] = {}
        for cluster in self.queue.clusters.values():
            if owner is not None and cluster.owner != owner:
                continue
            if left == 0:
                return
            cid = cluster.id
            cad = cluster.ad
            clusters[str(cid)] = cad if wanted is None else {k: v for k, v in cad.items() if k.lower() in wanted}
            cstatus = cad.get("JobStatus") if want_status else None
            for p, job in cluster.procs.items():
                if left == 0:
                    return
                left -= 1
                d = job.diff
                if d is not None and wanted is not None:
                    kept = {}
                    for k, v in d.items():
                        lk = lowered.get(k)
                        if lk is None:
                            lk = lowered[k] = k.lower()
                        if lk in wanted:
                            kept[k] = v
                    d = kept or None
                if not want_status:
                    append([cid, p, {"ProcId": p, **d} if d else {"ProcId": p}])
                elif d is None:
                    if job.status == cstatus:
                        append([cid, p, {"ProcId": p}])
                    else:
                        append([cid, p, {"ProcId": p, "JobStatus": job.status}])
                else:
                    out = {"ProcId": p}
                    out.update(d)
                    if job.status != cstatus:
                        out["JobStatus"] = job.status
                    append([cid, p, out])

    def _matching(self, req: dict[str, Any], owner: str | None) -> Any:
        ids = self._ids_arg(req.get("ids"))
        constraint = req.get("constraint")
        if not constraint:
            yield from self.queue.select(ids, owner)
            return
        expr, refs = self._constraint(constraint)
        cache: dict[Any, bool] = {}
        lowered: dict[str, str] = {}
        for job in self.queue.select(ids, owner):
            d = job.diff
            varying = refs is None or "procid" in refs
            if not varying and d:
                for k in d:
                    lk = lowered.get(k)
                    if lk is None:
                        lk = lowered[k] = k.lower()
                    if lk in refs:
                        varying = True
                        break
            key = None if varying else (job.cluster.id, job.status)
            if key is not None and key in cache:
                ok = cache[key]
            else:
                try:
                    ok = expr.eval(job.classad()) is True
                except Exception:
                    ok = False
                if key is not None:
                    cache[key] = ok
            if ok:
                yield job

    async def _add_history(
        self, req: dict[str, Any], owner: str | None, jobs: list[list[Any]], limit: int | None, projection: list[str] | None
    ) -> None:
        assert self.store is not None
        ids = req.get("ids")
        clusters = None
        want: set[tuple[int, int | None]] | None = None
        if ids:
            want = {self.queue.parse_id(t) for t in ids}
            clusters = sorted({c for c, _ in want})
        hist_limit = None if req.get("constraint") or want or limit is None else limit - len(jobs)
        rows = await self.store.history(owner, clusters, hist_limit)
        import json

        expr, refs = self._constraint(req["constraint"]) if req.get("constraint") else (None, None)
        for cid, proc, text in rows:
            if limit is not None and len(jobs) >= limit:
                break
            if want is not None and (cid, proc) not in want and (cid, None) not in want:
                continue
            ad = json.loads(text)
            if expr is not None and not _accepts(expr, refs, ad):
                continue
            if projection:
                ad = {k: ad[k] for k in projection if k in ad}
                ad["ProcId"] = proc
            jobs.append([cid, proc, ad])

    # -- ACT ----------------------------------------------------------------------------------------
    async def h_act(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self._writer(peer, "ACT")
        action = req["action"]
        if action not in ("remove", "hold", "release"):
            raise _bad(f"ACT: unknown action {action!r} (remove, hold or release)")
        if req.get("ids") is None and not req.get("constraint") and req.get("owner") is None:
            raise _bad("ACT: name the jobs with ids, constraint or owner")
        owner = req.get("owner")
        who = peer.user or peer.address
        restrict = peer.user if (peer.user is not None and peer.uid != 0) else None
        reason = req.get("reason")
        jobs = [
            job
            for job in self._matching(req, owner)
            if (restrict is None or job.owner == restrict) and status_allows(action, job.status)
        ]

        async def act(job: Job) -> bool:
            if action == "remove":
                return await self.remove(job, reason or f"via roost rm (by user {who})")
            if action == "hold":
                return await self.hold(job, reason or f"via roost hold (by user {who})", jp.HOLD_USER)
            return await self.release(job, reason or f"via roost release (by user {who})")

        done: list[str] = []
        # A thousand at a time, concurrently: they share commits, so `roost rm` of a
        # 100,000-job cluster costs ~100 fsyncs, not 100,000; answered once all are durable.
        for i in range(0, len(jobs), 1000):
            chunk = jobs[i : i + 1000]
            for job, ok in zip(chunk, await asyncio.gather(*(act(j) for j in chunk))):
                if ok:
                    done.append(job.id)
        return {"count": len(done), "ids": done}

    # -- WAIT_JOBS -------------------------------------------------------------------------------------
    async def _wait_state(self, ids: list[str]) -> tuple[int, int, dict[str, int], set[int]]:
        counts: dict[str, int] = {}
        done = total = 0
        cids: set[int] = set()
        missing_clusters: list[int] = []
        for text in ids:
            cid, proc = self.queue.parse_id(text)
            cids.add(cid)
            cluster = self.queue.clusters.get(cid)
            jobs = []
            if cluster is not None and proc is not None and proc in cluster.procs:
                jobs = [cluster.procs[proc]]
            if proc is None and cluster is not None:
                for status, n in cluster.counts.items():
                    if n:
                        name = jp.STATUS_NAMES.get(status, "Idle")
                        counts[name] = counts.get(name, 0) + n
                        total += n
                        if status in (jp.COMPLETED, jp.REMOVED):
                            done += n
                jobs = []
            for job in jobs:
                total += 1
                name = jp.STATUS_NAMES.get(job.status, "Idle")
                counts[name] = counts.get(name, 0) + 1
                if job.status in (jp.COMPLETED, jp.REMOVED) and job.key not in self._done_unlogged:
                    done += 1
            if proc is not None and not jobs and cid < self.queue.next_cluster and cid not in self.queue.reserved:
                total += 1
                if (cid, proc) not in self._done_unlogged:
                    done += 1
                counts["Finished"] = counts.get("Finished", 0) + 1
            elif proc is None:
                done -= self._done_unlogged_by_cluster.get(cid, 0)
                if cluster is None and cid in self.queue.gone:
                    n = self.queue.gone[cid]
                    total += n
                    done += n
                    counts["Finished"] = counts.get("Finished", 0) + n
                elif cluster is None:
                    missing_clusters.append(cid)
                else:
                    total += cluster.finished
                    done += cluster.finished
                    if cluster.finished:
                        counts["Finished"] = counts.get("Finished", 0) + cluster.finished
        if missing_clusters and self.store is not None:
            rows = await self.store.history(None, missing_clusters)
            total += len(rows)
            done += len(rows)
            if rows:
                counts["Finished"] = counts.get("Finished", 0) + len(rows)
        return done, total, counts, cids

    async def h_wait_jobs(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        ids = self._ids_arg(req["ids"]) or []
        timeout = float(req.get("timeout") or 0.0)
        cids = {self.queue.parse_id(t)[0] for t in ids}
        await self._settled(cids)  # report nothing that is not durable (and logged) yet
        done, total, counts, cids = await self._wait_state(ids)
        log.debug("WAIT_JOBS %s: %d of %d done", ids[:3], done, total)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(timeout, 3600.0)
        changed_once = False
        first_change = 0.0
        while done < total and loop.time() < deadline:
            # The first change answers, but not before WAIT_PROGRESS_S has passed since
            # it: progress comes at most ~20 times a second per waiter, while the change
            # that finishes the last job answers at once.
            if changed_once:
                until = min(deadline, first_change + WAIT_PROGRESS_S)
                if loop.time() >= until:
                    break
            else:
                until = deadline
            fut: asyncio.Future[None] = loop.create_future()
            for cid in cids:
                self._waiters.setdefault(cid, set()).add(fut)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(fut, max(0.0, until - loop.time()))
            finally:
                for cid in cids:
                    s = self._waiters.get(cid)
                    if s is not None:
                        s.discard(fut)
                        if not s:
                            del self._waiters[cid]
            if not fut.done():
                if changed_once:
                    await self._settled(cids)
                    done, total, counts, _ = await self._wait_state(ids)
                break  # timed out (or the progress window closed)
            if not changed_once:
                changed_once = True
                first_change = loop.time()
            await self._settled(cids)
            done, total, counts, _ = await self._wait_state(ids)
        return {"done": done, "total": total, "counts": counts}

    # -- negotiator -------------------------------------------------------------------------------------
    async def h_get_requests(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """The owner's idle jobs by autocluster, best first: jobs in ``JobPrio`` order
        (higher first), then submit order (QDate, cluster, proc); autoclusters in the
        order of their best job. With ``submitter`` (the Submitter ad's Name), only the
        jobs of that accounting name."""
        owner = req["owner"]
        submitter = req.get("submitter")
        log.debug("GET_REQUESTS for %s (%s)", owner, submitter)
        if len(self._ac_ids) > 50000:
            self._ac_ids.clear()  # signatures of long-gone clusters; ids stay stable via _ac_by_key
        if "@" in owner:
            owner = owner.split("@", 1)[0]
        idle = list(self.queue.idle.get(owner, {}).values())
        if isinstance(submitter, str):
            names: dict[int, bool] = {}
            keep = []
            for job in idle:
                ok = names.get(job.cluster.id)
                if ok is None:
                    ok = names[job.cluster.id] = self.submitter_of(job.cluster) == submitter
                if ok:
                    keep.append(job)
            idle = keep
        if any(j.get("JobPrio") for j in idle):
            def prio(j: Job) -> float:
                p = j.get("JobPrio")
                return -p if type(p) in (int, float) else 0

            idle.sort(key=lambda j: (prio(j), j.cluster.ad.get("QDate") or 0, j.cluster.id, j.proc))
        groups: dict[int, deque[Job]] = {}
        for job in idle:
            if job.busy:
                continue
            sig = self.signature(job)
            ac = self._ac_ids.get(sig)
            if ac is None:
                if job.get("JobUniverse") in LOCAL_UNIVERSES:
                    continue
                ac = self.autocluster_of(job, sig)
            members = groups.get(ac)
            if members is None:
                groups[ac] = deque([job])
            else:
                members.append(job)
        for ac in [a for a, m in self._ac_members.items() if m and m[0].owner == owner and a not in groups
                   and (not isinstance(submitter, str) or self.submitter_of(m[0].cluster) == submitter)]:
            del self._ac_members[ac]
        self._ac_members.update(groups)
        held_back = self._backing_off(time.monotonic()) if self._refused else ()
        requests = []
        for ac, members in groups.items():
            if ac in held_back:
                continue  # its last claim or activation was refused: not yet
            ad = members[0].merged()
            ad["AutoClusterId"] = ac
            requests.append({"autocluster": ac, "count": len(members), "ad": ad})
        return {"requests": requests}

    async def h_matches(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        log.debug("MATCHES: %d", len(req["matches"]))
        started = 0
        for m in req["matches"]:
            ac = m.get("autocluster")
            claim_id = m.get("claim_id")
            address = m.get("startd_address")
            if not isinstance(claim_id, str) or not isinstance(address, str):
                continue
            members = self._ac_members.get(ac) if isinstance(ac, int) else None
            job = None
            while members:
                cand = members.popleft()
                if not cand.busy and cand.status == jp.IDLE and cand.cluster.procs.get(cand.proc) is cand:
                    job = cand
                    break
            if job is None:
                continue
            if len(self.runners) >= self.max_running:
                log.info("MAX_JOBS_RUNNING (%d) reached: match for %s dropped", self.max_running, job.id)
                break
            self.queue.take_idle(job)
            slot_ad = m.get("slot_ad") if isinstance(m.get("slot_ad"), dict) else None
            name = m.get("slot_name") if isinstance(m.get("slot_name"), str) else ""
            sh = Shadow(self, address, claim_id, name, slot_ad, self.job_lease(job))
            sh.preempting = m.get("preempt") is True
            self.runners[job.key] = sh
            self.spawn(sh.run_match(job), f"shadow-{job.id}")
            started += 1
        return {"accepted": started}

    # -- starters ----------------------------------------------------------------------------------------
    def _shadow_for(self, req: dict[str, Any]) -> tuple[Shadow, Job]:
        sh = self.shadows.get(req["claim_id"])
        if sh is None or sh.job is None or sh.job.id != req["job"]:
            raise RequestError("NOT_FOUND", f"no job {req['job']} running on claim {req['claim_id'][:12]}...")
        return sh, sh.job

    async def h_job_update(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        state = req["state"]
        if state not in ("running", "exited", "failed", "vacated"):
            raise _bad(f"JOB_UPDATE: unknown state {state!r}")
        sh, _job = self._shadow_for(req)
        sh.report(req)
        return {}

    async def h_get_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any] | None:
        sh, job = self._shadow_for(req)
        try:
            files = input_files(job.get, job.owner)
        except TransferError as e:
            sh.transfer_error = (jp.HOLD_TRANSFER_INPUT_ERROR, f"Error transferring input files: {e}")
            raise RequestError("NOT_FOUND", str(e)) from None
        if sum(f.size for f in files) <= SMALL_TRANSFER:
            # Small sandboxes (the common case) go out as one write: answer and bytes.
            parts = [framing.encode({"ok": True, "files": [f.entry() for f in files]})]
            for f in files:
                parts.append(_read_exactly(f.path, f.size))
            peer.responded = True
            peer.writer.write(b"".join(parts))
            await peer.writer.drain()
            return None
        await peer.respond({"files": [f.entry() for f in files]})
        for f in files:
            remaining = f.size
            try:
                with open(f.path, "rb") as fh:
                    while remaining > 0:
                        data = fh.read(min(CHUNK, remaining))
                        if not data:
                            break
                        await peer.send_bytes(data)
                        remaining -= len(data)
            except OSError as e:
                log.warning("job %s: reading input %s: %s", job.id, f.path, e)
            while remaining > 0:  # the file shrank: keep the stream's promise with zeros
                n = min(CHUNK, remaining)
                await peer.send_bytes(bytes(n))
                remaining -= n
        return None

    async def h_put_files(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        sh, job = self._shadow_for(req)
        entries = req["files"]
        for e in entries:
            if not isinstance(e.get("size"), int) or e["size"] < 0:
                raise _bad("PUT_FILES: each file needs a size")
        error: str | None = None
        for e in entries:
            size = e["size"]
            writer = None
            if error is None:
                try:
                    writer = OutputWriter(output_destination(job.get, e), e.get("mode", 0o644), job.owner)
                except TransferError as exc:
                    error = str(exc)
            remaining = size
            try:
                while remaining > 0:
                    data = await peer.read_exactly(min(CHUNK, remaining))
                    remaining -= len(data)
                    if writer is not None:
                        writer.write(data)
                if writer is not None:
                    writer.finish()
            except OSError as exc:
                if writer is not None:
                    writer.abort()
                error = error or f"writing output: {exc}"
            except BaseException:
                if writer is not None:
                    writer.abort()
                raise
        if error is not None:
            sh.transfer_error = (jp.HOLD_TRANSFER_OUTPUT_ERROR, f"Error transferring output files: {error}")
            raise RequestError("BAD_REQUEST", error)
        return {"count": len(entries)}

    # -- periodic policy ------------------------------------------------------------------------------------
    async def periodic_policy(self) -> None:
        """PERIODIC_EXPR_INTERVAL's work: periodic_hold/release/remove, history trimming."""
        assert self.store is not None
        trim = self.store.trim_history_ops(self.max_history)
        if trim:
            await self.commit(trim)
        system = self.system_policy
        decided: list[tuple[Job, jp.Decision]] = []
        seen = 0
        for cluster in list(self.queue.clusters.values()):
            cluster_has = jp.has_periodic(cluster.ad)
            for job in list(cluster.procs.values()):
                if not (system.empty is False or cluster_has or (job.diff and jp.has_periodic(job.diff))):
                    continue
                if job.status in (jp.REMOVED, jp.COMPLETED):
                    continue
                seen += 1
                if seen % 500 == 0:
                    await asyncio.sleep(0)  # keep answering while 100,000 jobs are looked at
                try:
                    decision = jp.periodic(job.classad(), job.status, system)
                except Exception:
                    log.exception("job %s: periodic policy", job.id)
                    continue
                if decision is not None:
                    decided.append((job, decision))
        # Applied concurrently, a thousand at a time: they share commits (group commit).
        for i in range(0, len(decided), 1000):
            await asyncio.gather(*(self._apply_periodic(job, d) for job, d in decided[i : i + 1000]))

    async def _apply_periodic(self, job: Job, decision: jp.Decision) -> None:
        if decision.action == "remove":
            await self.remove(job, decision.reason)
        elif decision.action == "hold":
            await self.hold(job, decision.reason, decision.code, decision.subcode)
        elif decision.action == "release":
            await self.release(job, decision.reason)


def _read_exactly(path: str, size: int) -> bytes:
    """A file's first ``size`` bytes, zero-padded if it shrank (the listing promised size)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(size)
    except OSError as e:
        log.warning("reading input %s: %s", path, e)
        data = b""
    return data + bytes(size - len(data)) if len(data) < size else data


def _accepts(expr: Any, refs: set[str] | None, ad: dict[str, Any]) -> bool:
    """Whether a wire-form ad satisfies a constraint. When every attribute the
    constraint reads is a literal in the ad, only those are made into a ClassAd (a
    history query reads 100,000 ads: parsing each whole would take seconds)."""
    try:
        if refs is not None:
            small: dict[str, Any] = {}
            for k, v in ad.items():
                if k.lower() in refs:
                    if type(v) is str and v.startswith("/Expr("):
                        small = None  # type: ignore[assignment]
                        break
                    small[k] = v
            if small is not None:
                return expr.eval(obj_to_ad(small)) is True
        return expr.eval(obj_to_ad(ad)) is True
    except Exception:
        return False


def _references(expr: Any) -> set[str] | None:
    """Lower-cased attribute names ``expr`` reads; None if unknown (then evaluate per job)."""
    from roost.classad import ClassAd

    try:
        return {r.lower().split(".")[-1] for r in ClassAd().externalRefs(expr)} | {"jobstatus"}
    except Exception:
        return None


def main() -> None:
    run(Schedd)


__all__ = ["Schedd", "main"]
