"""The job lifecycle every runner of the schedd shares: the one owner of the job queue,
its store and the users' logs.

Shadows (jobs on claims), local-universe jobs, the tools' ACT and the periodic policy
all change a job's state here and nowhere else, so the rules hold in one place: a
change is committed (group commit, store.py) before the event that reports it is
written, and before anyone waiting on the job (WAIT_JOBS) hears of it. What runs a
job is a *runner* (``Shadow`` or ``LocalJob``), registered in ``runners`` while it
has the job; this module knows runners only by the small ``Runner`` protocol, so
shadow.py and localuniverse.py depend on it and not the other way round.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import shutil
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from operator import attrgetter, itemgetter
from typing import Any, Protocol

from roost.core import jobpolicy as jp
from roost.core.spooling import job_spool_dir
from roost.daemons.schedd.actions import status_allows
from roost.daemons.schedd.bulk import BulkActions, release_attrs
from roost.daemons.schedd.jobqueue import Job, JobQueue
from roost.daemons.schedd.periodic import PeriodicPolicy
from roost.daemons.schedd.store import Store
from roost.daemons.schedd.userlog import UserLogs, log_paths
from roost.eventlog import (
    AbortedEvent,
    EvictedEvent,
    HeldEvent,
    ImageSizeEvent,
    ReleasedEvent,
    ShadowExceptionEvent,
    SuspendedEvent,
    UnsuspendedEvent,
    Usage,
)
from roost.eventlog.events import Event

log = logging.getLogger("roost.schedd")
_CLUSTER_ID = attrgetter("cluster.id")
_PROC = attrgetter("proc")
_FIRST = itemgetter(0)

#: Running or Suspended: the job holds a claim and a starter runs it
_ON_A_SLOT = (jp.RUNNING, jp.SUSPENDED)


class Host(Protocol):
    """What the lifecycle needs of the daemon around it (the ``Schedd``)."""

    address: str | None
    hostname: str
    server: Any  # the daemon's roost.net.server.Server (scheduler-universe jobs' channels)
    config: Any  # its roost.config.Config (the DAG manager gets its DAGMAN_* knobs)

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]: ...


class Runner(Protocol):
    """What runs a job: a shadow on a claim, or a local-universe child process."""

    def vacate_job(self, job: Job) -> None:
        """Stop ``job``, whose status already says Removed or Held; its runner reports
        the end through :meth:`JobLifecycle.finish_removed`/:meth:`clear_claim`."""


def requeue_backoff(faults: int, base: float, cap: float) -> float:
    """How long a job waits after its ``faults``-th infrastructure fault before it is
    offered again: not after the first (most faults are one-off), then ``base`` seconds,
    doubling, at most ``cap``."""
    if faults <= 1 or base <= 0:
        return 0.0
    return min(base * 2.0 ** (faults - 2), cap)


class JobLifecycle:
    """Job state changes: commit, then log, then wake waiters."""

    def __init__(
        self,
        host: Host,
        store: Store,
        queue: JobQueue,
        userlogs: UserLogs,
        *,
        on_idle: Callable[[Job], None],
        on_change: Callable[[], None],
    ) -> None:
        self.host = host
        self.store = store
        self.queue = queue
        self.userlogs = userlogs
        self._on_idle = on_idle  # a job became Idle again: start it locally or negotiate
        self._on_change = on_change  # a committed change: the submitter ads are stale
        self.runners: dict[tuple[int, int], Any] = {}  # job key -> Runner (Shadow or LocalJob)
        #: the schedd is going down: start nothing new; claims and jobs outlive it
        self.stopping = False
        self.waiters: dict[int, set[asyncio.Future[None]]] = {}
        # Clusters with changes made in memory but not yet durable and logged: WAIT_JOBS
        # waits for them to settle, so nobody hears of a change before it is committed.
        self._unsettled: dict[int, int] = {}
        # Jobs that became done (Completed/Removed, maybe moved to history) in memory
        # whose change is not yet committed and logged: WAIT_JOBS does not count them.
        self.done_unlogged: set[tuple[int, int]] = set()
        self.done_unlogged_by_cluster: dict[int, int] = {}
        #: seconds a requeued job waits after its 2nd infrastructure fault, doubling, capped
        self.backoff_base = 1.0
        self.backoff_max = 60.0
        # A job's end and its events commit together (pending_events), so a schedd killed
        # between the commit and the write still logs them at its next start, once.
        self._event_ids = itertools.count(max((row[0] for row in store.pending_events()), default=0) + 1)
        #: rm, hold and release of many jobs (bulk.py), chunk by chunk
        self.bulk = BulkActions(self)
        #: periodic_hold/release/remove and history trimming (periodic.py)
        self.periodic = PeriodicPolicy(self)

    #: the spool's checkpoint store (roost.daemons.schedd.checkpoints), set by the schedd
    checkpoints: Any = None
    #: $(SPOOL), where -spool jobs' directories are (spool_calls.py), set by the schedd
    spool_root: str | None = None
    #: jobs with a SPOOL_FILES/TRANSFER_DATA under way: not taken out of the queue meanwhile
    spool_busy: set[tuple[int, int]] = set()  # noqa: RUF012 (replaced per instance by the schedd)
    #: job mail (roost.daemons.schedd.notify.Notifier), set by the schedd when mail is configured
    notifier: Any = None
    #: the connected pool a runner's slot is in, None at home (Flocking.pool_of_run), set by
    #: a schedd that flocks: a start there sets HTCondor's RemotePool
    pool_of_run: Callable[[Job, Any], str | None] | None = None

    def replay_pending_events(self) -> int:
        """At start: write what a killed predecessor committed and may not have logged
        (unless the log has it already); how many it wrote."""
        rows = self.store.pending_events()
        per_path: dict[str, int] = {}  # a log's pending texts may follow one another in it
        for _id, path, _owner, text in rows:
            per_path[path] = per_path.get(path, 0) + len(text.encode("utf-8", "surrogateescape"))
        wrote = sum(self.userlogs.replay(path, text, owner, per_path[path]) for _id, path, owner, text in rows)
        if rows:
            self.store.write_now([("DELETE FROM pending_events WHERE id <= ?", (rows[-1][0],))])
        return wrote

    def pending_event_rows(self, texts: dict[str, str]) -> list[tuple[int, str, str]]:
        """(id, path, text) rows for pending_events: events that commit with a change."""
        return [(next(self._event_ids), path, text) for path, text in texts.items() if text]

    async def commit(self, ops: list[Any]) -> None:
        await self.store.commit(ops)

    def commit_soon(self, ops: list[Any], name: str) -> None:
        """Queue ``ops`` now, in order, not waiting for the disk (a failure is logged): ops
        hold rows as made, so spawned for later they could undo a newer change."""
        self.host.spawn(_durable(self.store.submit(ops)), name)

    def write_events(self, job: Job, events: list[Event]) -> None:
        self.userlogs.write(log_paths(job.get), events, job.owner, job.get)

    def idle_arrived(self, job: Job) -> None:
        self._on_idle(job)

    def changed(self, job: Job) -> None:
        """A committed state change: wake waiters, refresh the submitter ads soon."""
        waiters = self.waiters.get(job.cluster.id)
        if waiters:
            for w in list(waiters):
                if not w.done():
                    w.set_result(None)
        self._on_change()

    def set_ops(self, job: Job, attrs: dict[str, Any], status: int | None = None, now: float | None = None) -> list[Any]:
        if status is not None and status != job.status:
            attrs = {**attrs, **jp.move_attrs(job.status, status, now or time.time(), f"job {job.id}: ")}
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
        self._leave_spool(job)
        return self.queue.to_history(job, int(time.time()))

    def _leave_spool(self, job: Job) -> None:
        """What a job leaving the queue leaves behind in the spool goes with it."""
        if self.spool_root is not None and job.get("StageInStart") is not None:
            # a -spool job's directory leaves with it (HTCondor's too)
            where = job_spool_dir(self.spool_root, job.cluster.id, job.proc)
            self.host.spawn(asyncio.to_thread(shutil.rmtree, where, True), f"spool-{job.id}")
        if self.checkpoints is not None and job.get("LastCheckpointTime") is not None:
            # its checkpoints leave the spool with it
            store, cid, proc = self.checkpoints, job.cluster.id, job.proc
            self.host.spawn(asyncio.to_thread(store.remove, cid, proc), f"checkpoints-{job.id}")

    async def mark_running(
        self, job: Job, remote_host: str, runner: Runner | None = None, claim: dict[str, Any] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Commit ``job`` as Running on ``remote_host``; with a ``claim`` (a shadow's
        claim_id, startd_address, slot_name) ``runner`` is recorded as its runner;
        ``extra``: more attributes the start sets (the account it runs as)."""
        now = time.time()
        attrs = jp.start_attrs(job.classad(), remote_host, now)
        if extra:
            attrs.update(extra)
        if claim is not None:
            job.claim = claim
            attrs["StartdAddress"] = claim["startd_address"]
            self.runners[job.key] = runner
            if self.pool_of_run is not None:
                pool = self.pool_of_run(job, runner)
                if pool is not None or job.get("RemotePool") is not None:
                    attrs["RemotePool"] = pool  # defined only while it runs elsewhere (None: undefined)
        ops = self.set_ops(job, attrs, jp.RUNNING, now)
        await self.report(job, ops, [])

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
        paths = log_paths(job.get)
        if job.status == jp.COMPLETED:
            ops += self.finish_ops(job)
        # The claim may take its next job while this commits: only the report waits.
        done = job.status == jp.COMPLETED
        self._mark_unsettled(job.cluster.id)
        if done:
            self._hide_done(job)
        texts = self.userlogs.texts(paths, events, job.get) if events else {}
        event_ids = [next(self._event_ids) for p in paths if texts.get(p)]
        for event_id, path in zip(event_ids, [p for p in paths if texts.get(p)]):
            ops.append(("INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)",
                        (event_id, path, job.owner, texts[path])))
        durable = self.store.submit(ops)
        self.host.spawn(
            self._report_exit(job, durable, texts, events, event_ids, decision.action == "requeue", done),
            f"exit-{job.id}",
        )

    async def _report_exit(
        self, job: Job, durable: asyncio.Future[None], texts: dict[str, str], events: list[Event],
        event_ids: list[int], requeued: bool, done: bool = False,
    ) -> None:
        try:
            await durable
            log.debug("job %s: exit committed", job.id)
            self.userlogs.to_pool(events, job.get)
            for path, text in texts.items():
                self.userlogs.write_text(path, text, job.owner)
            if event_ids:
                self.store.queue([("DELETE FROM pending_events WHERE id = ?", (i,)) for i in event_ids])
            if self.notifier is not None:
                self._mail_exit(job)
        finally:
            self._mark_settled(job.cluster.id)
            if done:
                self._show_done(job)
        self.changed(job)
        if requeued:
            self.idle_arrived(job)

    def _mail_exit(self, job: Job) -> None:
        """Mail the job's owner about its end (a hold by the exit policy is a hold)."""
        try:
            if job.status == jp.HELD:
                reason = job.get("HoldReason")
                self.notifier.job_held(job.get, reason if isinstance(reason, str) else "")
            elif job.status == jp.COMPLETED:
                ads: list[Any] = []  # the whole ad only for email_attributes, once

                def text_of(name: str) -> str | None:
                    if not ads:
                        ads.append(job.classad())
                    return str(ads[0].lookup(name)) if name in ads[0] else None

                self.notifier.job_exited(job.get, text_of)
        except Exception as e:  # noqa: BLE001 - mail never stops a job
            log.warning("job %s: no mail: %s", job.id, e)

    def _mark_unsettled(self, cid: int) -> None:
        self._unsettled[cid] = self._unsettled.get(cid, 0) + 1

    def _hide_done(self, job: Job) -> None:
        """``job`` just became done in memory: hide that from WAIT_JOBS until it is durable and logged."""
        if job.key not in self.done_unlogged:
            self.done_unlogged.add(job.key)
            cid = job.cluster.id
            self.done_unlogged_by_cluster[cid] = self.done_unlogged_by_cluster.get(cid, 0) + 1

    def _show_done(self, job: Job) -> None:
        if job.key in self.done_unlogged:
            self.done_unlogged.discard(job.key)
            cid = job.cluster.id
            n = self.done_unlogged_by_cluster.get(cid, 0) - 1
            if n > 0:
                self.done_unlogged_by_cluster[cid] = n
            else:
                self.done_unlogged_by_cluster.pop(cid, None)

    def _mark_settled(self, cid: int) -> None:
        n = self._unsettled.get(cid, 0) - 1
        if n > 0:
            self._unsettled[cid] = n
        else:
            self._unsettled.pop(cid, None)

    async def report(
        self, job: Job, ops: list[Any], events: list[Event], path: str | list[str] | None = None, *,
        done: bool = False,
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
                self.userlogs.write(path if path is not None else log_paths(job.get), events, job.owner, job.get)
        finally:
            self._mark_settled(job.cluster.id)
            if done:
                self._show_done(job)
        self.changed(job)

    async def settled(self, cids: set[int]) -> None:
        """Wait until no change to these clusters is still on its way to disk and log."""
        for _ in range(10000):
            await self.store.barrier()
            if not any(self._unsettled.get(c) for c in cids):
                return
            await asyncio.sleep(0.001)

    async def live_usage(self, job: Job, usage: dict[str, Any]) -> None:
        """A running job's usage now (the starter's periodic report): the ad's MemoryUsage,
        ResidentSetSize, ImageSize and CPU, so ``q`` and periodic expressions see them; a
        006 event when the image grows."""
        if not job.cluster.holds(job) or job.status not in _ON_A_SLOT:
            return
        attrs: dict[str, Any] = {}
        for name in ("MemoryUsage", "ResidentSetSize", "ImageSize", "DiskUsage"):
            v = usage.get(name)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0 and v != job.get(name):
                attrs[name] = v
        for name in ("RemoteUserCpu", "RemoteSysCpu"):
            v = usage.get(name)
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0:
                attrs[name] = float(v)
        if not attrs:
            return
        events: list[Event] = []
        old_image = job.get("ImageSize")
        image = attrs.get("ImageSize")
        if isinstance(image, int) and (not isinstance(old_image, int) or image > old_image):
            events.append(ImageSizeEvent(job.cluster.id, job.proc, time.time(), size=image,
                                         memory_usage=attrs.get("MemoryUsage", job.get("MemoryUsage")),
                                         resident_set_size=attrs.get("ResidentSetSize", 0)))
        await self.report(job, self.set_ops(job, attrs), events)

    async def suspended(self, job: Job, suspended: bool, num_pids: int = 0) -> None:
        """The starter suspended or resumed the job (the machine owner's policy):
        JobStatus 7 and back, TotalSuspensions, LastSuspensionTime, events 010/011."""
        if not job.cluster.holds(job):
            return
        now = time.time()
        if suspended and job.status == jp.RUNNING:
            n = job.get("TotalSuspensions", 0)
            attrs = {"TotalSuspensions": (n if isinstance(n, int) else 0) + 1, "LastSuspensionTime": int(now)}
            ops = self.set_ops(job, attrs, jp.SUSPENDED, now)
            await self.report(job, ops, [SuspendedEvent(job.cluster.id, job.proc, now, num_pids=num_pids)])
        elif not suspended and job.status == jp.SUSPENDED:
            ops = self.set_ops(job, {}, jp.RUNNING, now)
            await self.report(job, ops, [UnsuspendedEvent(job.cluster.id, job.proc, now)])

    async def requeue(self, job: Job, why: str) -> None:
        """A run ended without an exit (lost claim, restart): back to Idle."""
        job.claim = None
        self.runners.pop(job.key, None)
        if not job.cluster.holds(job):
            return
        n = job.get("NumShadowExceptions", 0)
        faults = (n if isinstance(n, int) else 0) + 1
        attrs = {"NumShadowExceptions": faults, "LastRemoteHost": job.get("RemoteHost")}
        status = jp.IDLE if job.status in _ON_A_SLOT else None
        ops = self.set_ops(job, attrs, status)
        delay = requeue_backoff(faults, self.backoff_base, self.backoff_max)
        if delay > 0 and job.status == jp.IDLE:
            # A job the infrastructure keeps failing waits a little longer each time, so a
            # broken machine or link is not hammered; it stays Idle, just not offered.
            self.queue.take_idle(job)  # busy, and out of the idle set set_ops may have put it in
            log.info("job %s: infrastructure fault %d (%s): runs again in %g s", job.id, faults, why, delay)
            asyncio.get_running_loop().call_later(delay, self._backoff_over, job)
        else:
            job.busy = False
            self.queue.give_back_idle(job)
        await self.report(job, ops, [shadow_exception(job, why)])
        if delay <= 0:
            self.idle_arrived(job)

    def _backoff_over(self, job: Job) -> None:
        """A requeued job's back-off ended: offer it again, unless something else
        (a hold and release, a removal) has taken it meanwhile."""
        if (job.cluster.holds(job) and job.status == jp.IDLE and job.busy
                and job.key not in self.runners):
            self.queue.give_back_idle(job)
            self.idle_arrived(job)

    async def evicted(self, job: Job, update: dict[str, Any]) -> None:
        """A vacated job (owner policy, preemption, drain): back to Idle with an evicted event
        (004), as HTCondor logs it, instead of requeue's shadow exception."""
        job.claim = None
        self.runners.pop(job.key, None)
        if not job.cluster.holds(job):
            return
        usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
        run = Usage(int(usage.get("RemoteUserCpu") or 0), int(usage.get("RemoteSysCpu") or 0))
        attrs = {"LastRemoteHost": job.get("RemoteHost")}
        ops = self.set_ops(job, attrs, jp.IDLE if job.status in _ON_A_SLOT else None)
        job.busy = False
        self.queue.give_back_idle(job)
        await self.report(job, ops, [EvictedEvent(job.cluster.id, job.proc, time.time(), run_remote_usage=run)])
        self.idle_arrived(job)

    async def finish_removed(self, job: Job) -> None:
        job.claim = None
        self.runners.pop(job.key, None)
        await self.report(job, self.finish_ops(job), [])

    async def clear_claim(self, job: Job) -> None:
        job.claim = None
        self.runners.pop(job.key, None)
        job.busy = False
        await self.report(job, self.queue.set(job, {}), [])

    async def hold(self, job: Job, reason: str, code: int, subcode: int = 0, *, vacate: bool = True) -> bool:
        if not job.cluster.holds(job) or not status_allows("hold", job.status):
            return False
        was_running = job.status in _ON_A_SLOT
        if not was_running or not vacate:
            job.claim = None
            self.runners.pop(job.key, None)
            job.busy = False
        ops = self.set_ops(job, self._hold_attrs(job, reason, code, subcode), jp.HELD)
        await self.report(job, ops, [held_event(job, reason, code, subcode)])
        if self.notifier is not None:
            self.notifier.job_held(job.get, reason)
        if was_running and vacate:
            self.vacate(job)
        return True

    async def release(self, job: Job, reason: str) -> bool:
        if not job.cluster.holds(job) or job.status != jp.HELD:
            return False
        ops = self.set_ops(job, release_attrs(job, reason), jp.IDLE)
        await self.report(job, ops, [ReleasedEvent(job.cluster.id, job.proc, time.time(), reason=reason)])
        self.idle_arrived(job)
        return True

    async def remove(self, job: Job, reason: str) -> bool:
        if not job.cluster.holds(job) or not status_allows("remove", job.status):
            return False
        was_running = job.status in _ON_A_SLOT
        ops = self.set_ops(job, {"RemoveReason": reason}, jp.REMOVED)
        paths = log_paths(job.get)
        if not was_running:
            ops += self.finish_ops(job)
        await self.report(job, ops, [AbortedEvent(job.cluster.id, job.proc, time.time(), reason=reason)], paths,
                          done=True)
        if self.notifier is not None:
            self.notifier.job_removed(job.get, reason)
        if was_running:
            self.vacate(job)
        return True

    async def remove_many(self, jobs: list[Job], reason: str) -> list[Job]:
        """condor_rm of many jobs (bulk.py): the jobs removed."""
        return await self.bulk.remove_many(jobs, reason)

    async def hold_many(self, jobs: list[Job], reason: str, code: int, subcode: int = 0) -> list[Job]:
        """condor_hold of many jobs (bulk.py): the jobs held."""
        return await self.bulk.hold_many(jobs, reason, code, subcode)

    async def release_many(self, jobs: list[Job], reason: str) -> list[Job]:
        """condor_release of many jobs (bulk.py): the jobs released."""
        return await self.bulk.release_many(jobs, reason)

    async def edit_many(self, jobs: list[Job], values: dict[str, Any]) -> list[Job]:
        """condor_qedit of many jobs (bulk.py): the jobs edited."""
        return await self.bulk.edit_many(jobs, values)

    def _hide_done_many(self, jobs: list[Job]) -> list[tuple[int, int]]:
        """``_hide_done`` of each of ``jobs`` (none of them hidden yet: they were in the
        queue); their keys, for ``_show_done_many``. Made and counted in C (a chunk of
        2,000 of rm -all: a call per job was most of this)."""
        keys = list(zip(map(_CLUSTER_ID, jobs), map(_PROC, jobs)))
        self.done_unlogged.update(keys)
        per = self.done_unlogged_by_cluster
        for cid, n in Counter(map(_FIRST, keys)).items():
            per[cid] = per.get(cid, 0) + n
        return keys

    def _show_done_many(self, keys: list[tuple[int, int]]) -> None:
        """``_show_done`` of the jobs of ``keys``, hidden by ``_hide_done_many``."""
        self.done_unlogged.difference_update(keys)
        per = self.done_unlogged_by_cluster
        for cid, gone in Counter(map(_FIRST, keys)).items():
            n = per.get(cid, 0) - gone
            if n > 0:
                per[cid] = n
            else:
                per.pop(cid, None)

    async def suspend_running(self, job: Job, suspend: bool) -> bool:
        """condor_suspend / condor_continue: ask the job's startd to stop or resume it;
        JobStatus and the 010/011 events follow from the starter's report (``suspended``).
        Only a job a shadow runs on a claim can be; True when the startd did it."""
        ask = getattr(self.runners.get(job.key), "suspend_job", None)
        return False if ask is None else bool(await ask(job, suspend))

    def vacate_running(self, job: Job, *, fast: bool) -> bool:
        """condor_vacate_job: stop the job on its slot (``fast``: SIGKILL now, else its
        kill signal and JobMaxVacateTime), back to Idle with an evicted event (004).
        Only a job a shadow runs on a claim can be; True when asked."""
        ask = getattr(self.runners.get(job.key), "vacate_running", None)
        return False if ask is None else bool(ask(job, fast))

    def vacate(self, job: Job) -> None:
        """Stop a running job whose status already says Removed or Held."""
        runner = self.runners.get(job.key)
        if runner is not None:
            runner.vacate_job(job)
            return
        # No runner (e.g. between restart and reconnect): settle it now.
        self.host.spawn(self.settle(job), f"settle-{job.id}")

    async def settle(self, job: Job) -> None:
        """A removed or held job that no runner will stop: its claim forgotten, a removed
        one off to the history."""
        if job.status == jp.REMOVED:
            await self.finish_removed(job)
        elif job.status == jp.HELD:
            await self.clear_claim(job)

    # -- periodic policy ------------------------------------------------------------------
    async def periodic_policy(self, system: jp.SystemPolicy, max_history: int) -> None:
        """PERIODIC_EXPR_INTERVAL's work (periodic.py)."""
        await self.periodic.run(system, max_history)


def shadow_exception(job: Job, why: str) -> ShadowExceptionEvent:
    return ShadowExceptionEvent(job.cluster.id, job.proc, time.time(), message=why)


def held_event(job: Job, reason: str, code: int, subcode: int) -> HeldEvent:
    return HeldEvent(job.cluster.id, job.proc, time.time(), reason=reason, code=code, subcode=subcode)


async def _durable(fut: asyncio.Future[None]) -> None:
    await fut


__all__ = ["Host", "JobLifecycle", "Runner", "held_event", "shadow_exception"]
