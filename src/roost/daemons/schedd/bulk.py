"""condor_rm, condor_hold and condor_release of many jobs at once (issue 27): the
lifecycle's bulk actions, a part of ``JobLifecycle`` kept in its own module.

What ``JobLifecycle.remove``/``hold``/``release`` do to one job, done to thousands:
the jobs that hold no slot go in chunks of ``CHUNK``, each chunk one transaction (its
rows as a few ``executemany`` statements) that also holds the chunk's events, one
``pending_events`` row per user log. Only once the chunk is durable are the events
written (one write per log), the waiters woken and the pending rows dropped, so a
schedd killed at any point neither loses an event nor writes one twice at its next
start (``JobLifecycle.replay_pending_events``). The next chunk is prepared while the
last one commits, and the event loop is let go between chunks: a ``q`` asked during
``rm -all`` of 100,000 jobs is answered within a chunk's time (~50 ms).
Jobs on a slot go one by one through the single-job path (their runners stop them).
Which statuses an action applies to is the job state table's
(``roost.core.jobstates.USER_ACTIONS`` through ``actions.status_allows``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.actions import status_allows
from roost.daemons.schedd.jobqueue import Cluster, Job, spellings
from roost.daemons.schedd.userlog import LogBatch, log_paths
from roost.eventlog import AbortedEvent, HeldEvent, ReleasedEvent
from roost.eventlog.events import Event
from roost.eventlog.writer import Formatter

if TYPE_CHECKING:
    from roost.daemons.schedd.lifecycle import JobLifecycle

#: jobs changed per commit (~25-50 ms of the event loop each to prepare: a query
#: waits at most about that long)
CHUNK = 2000
#: jobs on a slot stopped concurrently at a time (they share commits)
ON_SLOT_GROUP = 1000
_ON_A_SLOT = (jp.RUNNING, jp.SUSPENDED)
_LOG_NAMES = frozenset(("UserLog", "DAGManNodesLog", "Iwd", "UserLogUseXML"))
_INSERT_PENDING = "INSERT INTO pending_events (id, path, owner, text) VALUES (?, ?, ?, ?)"
_DELETE_PENDING = "DELETE FROM pending_events WHERE id = ?"


@dataclass
class _Chunk:
    """A chunk changed in memory, its commit on its way."""

    jobs: list[Job]
    clusters: set[int]
    durable: asyncio.Future[None]
    texts: list[tuple[int, str, str | None, str]]  # pending_events rows: id, path, owner, text
    batch: LogBatch
    done: bool  # the jobs became done (hidden from WAIT_JOBS until logged)
    keys: list[tuple[int, int]]  # theirs, when done
    after: Callable[[list[Job]], None] = field(default=lambda jobs: None)


class BulkActions:
    """The bulk half of the job lifecycle; it changes jobs only as ``JobLifecycle`` does
    (``set_ops``, ``finish_many``), commit, then log, then wake waiters."""

    def __init__(self, life: JobLifecycle) -> None:
        self.life = life

    # -- the three actions -----------------------------------------------------------------
    async def remove_many(self, jobs: list[Job], reason: str) -> list[Job]:
        """condor_rm of ``jobs``; the jobs removed (those that held no slot first)."""
        done, on_slot = await self._run(jobs, "remove", lambda chunk, now: self._remove_chunk(chunk, reason, now))
        return done + await self._one_by_one(on_slot, lambda j: self.life.remove(j, reason))

    async def hold_many(self, jobs: list[Job], reason: str, code: int, subcode: int = 0) -> list[Job]:
        """condor_hold of ``jobs``; the jobs held (those that held no slot first)."""
        done, on_slot = await self._run(jobs, "hold",
                                        lambda chunk, now: self._hold_chunk(chunk, reason, code, subcode, now))
        return done + await self._one_by_one(on_slot, lambda j: self.life.hold(j, reason, code, subcode))

    async def release_many(self, jobs: list[Job], reason: str) -> list[Job]:
        """condor_release of ``jobs``; the jobs released."""
        done, on_slot = await self._run(jobs, "release", lambda chunk, now: self._release_chunk(chunk, reason, now))
        return done + await self._one_by_one(on_slot, lambda j: self.life.release(j, reason))

    async def edit_many(self, jobs: list[Job], values: dict[str, Any]) -> list[Job]:
        """condor_qedit of ``jobs`` (any status): ``values`` set under the names each job
        spells them, in chunks, one commit each; no event. The jobs edited."""
        done, _ = await self._run(jobs, None, lambda chunk, now: self._edit_chunk(chunk, values))
        return done

    # -- the pipeline ------------------------------------------------------------------------
    async def _run(self, jobs: list[Job], action: str | None,
                   prepare: Callable[[list[Job], float], _Chunk]) -> tuple[list[Job], list[Job]]:
        """Chunk by chunk: look at each job again (it may have changed while the last chunk
        committed), change the chunk in memory and queue its commit, then land the chunk
        before (events, waiters) while this one commits. (Jobs changed, jobs on a slot.)
        ``action`` None (an edit): every status, a job on a slot too."""
        done: list[Job] = []
        on_slot: list[Job] = []
        landing: _Chunk | None = None
        now = time.time()
        # per status, asked once: None (not applicable), else whether a job in it is on a slot
        verdict: dict[int, bool | None] = {}

        def judge(st: int) -> bool | None:
            v = verdict[st] = (action is not None and st in _ON_A_SLOT) if (
                action is None or status_allows(action, st)) else None
            return v

        try:
            for i in range(0, len(jobs), CHUNK):
                chunk: list[Job] = []
                for job in jobs[i : i + CHUNK]:
                    if job.cluster._procs.get(job.proc) is not job:  # (Cluster.holds, inline)
                        continue
                    st = job.status
                    v = verdict[st] if st in verdict else judge(st)
                    if v is None:
                        continue
                    (on_slot if v else chunk).append(job)
                if not chunk:
                    continue
                prepared = prepare(chunk, now)
                done += chunk
                last, landing = landing, prepared  # (a failed landing is not landed again)
                if last is not None:
                    await self._land(last)
                await asyncio.sleep(0)  # others' requests between chunks
        finally:
            if landing is not None:
                await self._land(landing)
        return done, on_slot

    async def _one_by_one(self, jobs: list[Job], act: Callable[[Job], Any]) -> list[Job]:
        out: list[Job] = []
        for i in range(0, len(jobs), ON_SLOT_GROUP):
            part = jobs[i : i + ON_SLOT_GROUP]
            out += [job for job, ok in zip(part, await asyncio.gather(*(act(j) for j in part))) if ok]
        return out

    def _submit(self, chunk: list[Job], ops: list[Any], batch: LogBatch, *, done: bool = False,
                after: Callable[[list[Job]], None] | None = None) -> _Chunk:
        """Queue the chunk's commit with its events' pending rows; its clusters unsettled."""
        life = self.life
        texts = [(next(life._event_ids), path, owner, text) for path, owner, text in batch.texts() if text]
        if texts:
            ops.append((_INSERT_PENDING, texts, True))
        clusters = set(map(_CLUSTER_ID, chunk))
        for cid in clusters:
            life._mark_unsettled(cid)
        keys = life._hide_done_many(chunk) if done else []
        return _Chunk(chunk, clusters, life.store.submit(ops), texts, batch, done, keys,
                      after if after is not None else (lambda jobs: None))

    async def _land(self, c: _Chunk) -> None:
        """A chunk's commit is durable: its events written, then its waiters told."""
        life = self.life
        try:
            await c.durable
            for _id, path, owner, text in c.texts:
                life.userlogs.write_text(path, text, owner)
            c.batch.to_pool()
            if c.texts:
                life.store.queue([(_DELETE_PENDING, [(row[0],) for row in c.texts], True)])
        finally:
            for cid in c.clusters:
                life._mark_settled(cid)
            if c.done:
                life._show_done_many(c.keys)
        for cid in c.clusters:
            for w in list(life.waiters.get(cid, ())):
                if not w.done():
                    w.set_result(None)
        life._on_change()
        c.after(c.jobs)

    def _logs(self) -> Callable[[Job], list[tuple[str, Formatter]]]:
        """The user logs of a job and their forms, looked up once per cluster for procs
        that name none of their own (a compact proc's dict is not made for this)."""
        of_cluster: dict[int, list[tuple[str, Formatter]]] = {}
        forms = self.life.userlogs.forms

        last: list[Any] = [None, None, False]  # the cluster last asked for, its logs, whether its shape names one

        def logs(job: Job) -> list[tuple[str, Formatter]]:
            cluster = job.cluster
            if cluster is not last[0]:
                got = of_cluster.get(cluster.id)
                if got is None:
                    get = cluster.ad.get
                    got = of_cluster[cluster.id] = forms(log_paths(get), get)
                last[:] = [cluster, got, not _LOG_NAMES.isdisjoint(cluster.shape_names)]
            d = job._diff
            if d is None or (type(d) is tuple and not last[2]):
                return last[1]
            names = job.own_names()
            if names and not _LOG_NAMES.isdisjoint(names):
                return forms(log_paths(job.get), job.get)
            return last[1]

        return logs

    # -- what each action does to a chunk ----------------------------------------------------
    def _remove_chunk(self, chunk: list[Job], reason: str, now: float) -> _Chunk:
        """Removed and to history, in memory, with their 009 events."""
        life = self.life
        by_status: dict[int, dict[str, Any]] = {}
        changes: list[tuple[Job, dict[str, Any]]] = []
        batch = LogBatch(life.userlogs)
        paths = self._logs()
        sample = AbortedEvent(0, 0, now, reason=reason)
        pool = life.userlogs.pool is not None
        for job in chunk:
            attrs = by_status.get(job.status)
            if attrs is None:
                attrs = by_status[job.status] = {"RemoveReason": reason,
                                                 **jp.transition_attrs(job.status, jp.REMOVED, now)}
            changes.append((job, attrs))
            logs = paths(job)
            if logs or pool:  # (a job with no log and no pool log: no event to make)
                cid, proc = job.cluster.id, job.proc
                batch.add_alike(logs, sample, cid, proc, job.owner, job.get,
                                lambda cid=cid, proc=proc: [AbortedEvent(cid, proc, now, reason=reason)])
        _leave_spool_many(life, chunk)
        # what the removal sets is read back from a removed job only by the pool log's job
        # ad events (the mail reads what the job was submitted with, and ``reason``):
        # without that log, a compact proc stays compact (queuefinish.py)
        ops = life.queue.finish_many(changes, jp.REMOVED, int(now), keep_ads=pool)
        notifier = life.notifier

        def after(jobs: list[Job]) -> None:
            if notifier is not None:
                for job in jobs:
                    notifier.job_removed(job.get, reason)

        return self._submit(chunk, ops, batch, done=True, after=after)

    def _hold_chunk(self, chunk: list[Job], reason: str, code: int, subcode: int, now: float) -> _Chunk:
        """Held, in memory, with their 012 events (no claim to let go: none is on a slot)."""
        life = self.life
        batch = LogBatch(life.userlogs)
        paths = self._logs()
        rows: dict[str, list[Any]] = {}
        sample: Event = HeldEvent(0, 0, now, reason=reason, code=code, subcode=subcode)
        # per cluster and status, what a proc without hold counts of its own gets (it
        # reads its cluster's): built and checked against the state table once, not per job
        alike: dict[tuple[int, int], dict[str, Any]] = {}
        for job in chunk:
            job.claim = None
            life.runners.pop(job.key, None)
            job.busy = False
            names = job.own_names()
            key = (job.cluster.id, job.status)
            attrs = alike.get(key) if not names or _HOLD_COUNTS.isdisjoint(names) else None
            if attrs is None:
                attrs = life._hold_attrs(job, reason, code, subcode)
                attrs.update(jp.move_attrs(job.status, jp.HELD, now))
                if not names or _HOLD_COUNTS.isdisjoint(names):
                    alike[key] = attrs
            for sql, params in life.queue.set(job, attrs, jp.HELD):
                rows.setdefault(sql, []).append(params)
            cid, proc = job.cluster.id, job.proc
            batch.add_alike(paths(job), sample, cid, proc, job.owner, job.get,
                            lambda cid=cid, proc=proc: [HeldEvent(cid, proc, now, reason=reason, code=code,
                                                                  subcode=subcode)])
        notifier = life.notifier

        def after(jobs: list[Job]) -> None:
            if notifier is not None:
                for job in jobs:
                    notifier.job_held(job.get, reason)

        return self._submit(chunk, _many(rows), batch, after=after)

    def _release_chunk(self, chunk: list[Job], reason: str, now: float) -> _Chunk:
        """Idle again, in memory, with their 013 events; offered once durable."""
        life = self.life
        batch = LogBatch(life.userlogs)
        paths = self._logs()
        rows: dict[str, list[Any]] = {}
        sample = ReleasedEvent(0, 0, now, reason=reason)
        moves: dict[int, dict[str, Any]] = {}  # per status: what leaving it sets (checked once)
        for job in chunk:
            attrs = release_attrs(job, reason)
            move = moves.get(job.status)
            if move is None:
                move = moves[job.status] = jp.move_attrs(job.status, jp.IDLE, now)
            attrs.update(move)
            for sql, params in life.queue.set(job, attrs, jp.IDLE):
                rows.setdefault(sql, []).append(params)
            cid, proc = job.cluster.id, job.proc
            batch.add_alike(paths(job), sample, cid, proc, job.owner, job.get,
                            lambda cid=cid, proc=proc: [ReleasedEvent(cid, proc, now, reason=reason)])

        def after(jobs: list[Job]) -> None:
            for job in jobs:
                life.idle_arrived(job)

        return self._submit(chunk, _many(rows), batch, after=after)

    def _edit_chunk(self, chunk: list[Job], values: dict[str, Any]) -> _Chunk:
        """The values set, in memory; each cluster's spellings looked up once."""
        life = self.life
        rows: dict[str, list[Any]] = {}
        names: dict[int, dict[str, str]] = {}
        for job in chunk:
            cn = names.get(job.cluster.id)
            if cn is None:
                cn = names[job.cluster.id] = spellings(job.cluster.ad)
            for sql, params in life.set_ops(job, job.spelled(values, cn)):
                rows.setdefault(sql, []).append(params)
        return self._submit(chunk, _many(rows), LogBatch(life.userlogs))


def _leave_spool_many(life: JobLifecycle, jobs: list[Job]) -> None:
    """``JobLifecycle._leave_spool`` of each of ``jobs``, looked at only where its
    cluster or the proc itself has what would stay behind (not two lookups per job)."""
    if life.spool_root is None and life.checkpoints is None:
        return
    last: Cluster | None = None
    has = shaped = False  # the cluster's ad has what would stay; its shape names it
    for job in jobs:
        c = job.cluster
        if c is not last:
            last = c
            has = any(c.ad.get(n) is not None for n in _SPOOL_NAMES)
            shaped = not _SPOOL_NAMES.isdisjoint(c.shape_names)
        d = job._diff
        # (a compact proc names what its cluster's shape names: asked once; see Job.own_names)
        if has or (d is not None and (shaped if type(d) is tuple else not _SPOOL_NAMES.isdisjoint(d))):
            life._leave_spool(job)


_SPOOL_NAMES = frozenset(("StageInStart", "LastCheckpointTime"))  # what _leave_spool reads
_CLUSTER_ID = attrgetter("cluster.id")


_HOLD_COUNTS = frozenset(("NumHolds", "NumHoldsByReason"))  # what _hold_attrs reads of the job


def _many(rows: dict[str, list[Any]]) -> list[Any]:
    """Row operations grouped by statement, as ``executemany`` ops."""
    return [(sql, params, True) for sql, params in rows.items()]


def release_attrs(job: Job, reason: str) -> dict[str, Any]:
    """What a release sets on a held job: the hold's reason kept as the last one, the
    hold attributes gone from the proc (undefined where its cluster ad has them, as a
    job submitted held does)."""
    attrs: dict[str, Any] = {
        "LastHoldReason": job.get("HoldReason"),
        "LastHoldReasonCode": job.get("HoldReasonCode"),
        "ReleaseReason": reason,
    }
    d = job.diff or {}
    for k in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
        d.pop(k, None)
        if k in job.cluster.ad:
            attrs[k] = "/Expr(undefined)/"
    return attrs


__all__ = ["CHUNK", "BulkActions", "release_attrs"]
