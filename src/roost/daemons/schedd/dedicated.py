"""The dedicated scheduler: the schedd's shell around ``roost.core.dedicated``.

Active while parallel jobs (``universe = parallel``, ``+WantDedicated = true``) are
queued or it holds claims. Each cycle it asks the collector for the slots under its
control (``DedicatedScheduler == "DedicatedScheduler@<this schedd>"``, set by the
startd's ``use POLICY : Dedicated``), builds the pure plan, and applies it:

- ``start``: a job whose resources it holds idle runs on them (``parallel.ParallelRun``);
- ``claim``/``reclaim``: resources it wants and does not hold are asked of the negotiator
  as requests of the submitter ``DedicatedScheduler@<schedd>`` (one per slot, the slot
  named in its Requirements, ``Scheduler`` set so the startd's RANK prefers it, which
  preempts an opportunistic job running there: backfill is vacated that way);
  a match becomes a claim it keeps alive and runs any user's dedicated job on;
- ``release``: claims no job wants, idle past ``UNUSED_CLAIM_TIMEOUT``, go back to the
  opportunistic pool;
- ``backfill``: while a job waits at the head of the queue, the idle claims it holds are
  released at once for opportunistic jobs (``DEDICATED_SCHEDULER_LEND_IDLE_CLAIMS``,
  default true), and claimed back by rank (their jobs vacated) when the job can start;
- ``never``: jobs that can never fit get ``DedicatedSchedulerReason`` (``q -analyze``).

Knobs: ``DEDICATED_SCHEDULER_INTERVAL`` (s, default 5; it also runs at once when a
dedicated job arrives or a claim comes or goes), ``UNUSED_CLAIM_TIMEOUT`` (600),
``DEDICATED_SCHEDULER_ORDER`` (fifo | user), ``DEDICATED_SCHEDULER_BACKFILL``
(none | easy), ``DEDICATED_SCHEDULER_LEND_IDLE_CLAIMS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from roost.classad import ClassAd
from roost.classad.unparse import quote as quote_string
from roost.core import dedicated as core
from roost.core import jobpolicy as jp
from roost.daemons.schedd import runners
from roost.daemons.schedd.jobqueue import Cluster, Job
from roost.daemons.schedd.parallel import NodeShadow, ParallelRun
from roost.daemons.schedd.reservations import Reservations
from roost.daemons.schedd.shadow import Shadows
from roost.net.adwire import obj_to_ad
from roost.net.errors import RemoteError
from roost.vocabulary import SlotState

log = logging.getLogger("roost.schedd")

OWNER = "DedicatedScheduler"  # the submitter's Owner in its ad and GET_REQUESTS


def is_dedicated(job: Job) -> bool:
    """Whether the dedicated scheduler, not the negotiator's matches, runs ``job``."""
    return runners.dedicated(job.get("JobUniverse")) or job.get("WantDedicated") is True


def _nodes(job: Job) -> int:
    n = job.get("MaxHosts")
    return n if type(n) is int and n > 0 else 1


class DedicatedScheduler:
    """One schedd's dedicated scheduler (see the module docstring)."""

    def __init__(self, shadows: Shadows, *, schedd_name: str, spool: str, config: Any,
                 query_slots: Callable[[str], Awaitable[list[dict[str, Any]]]],
                 reschedule: Callable[[], None], ads_changed: Callable[[], None]) -> None:
        self.shadows = shadows
        self.jobs = shadows.jobs
        self.name = f"{OWNER}@{schedd_name}"
        self.spool = spool
        self.query_slots = query_slots
        self.reschedule = reschedule
        self.ads_changed = ads_changed
        self.claims: dict[str, NodeShadow] = {}  # slot name -> the claim we hold
        self.idle_since: dict[str, float] = {}
        self.runs: dict[str, ParallelRun] = {}  # job (cluster, or C.P for a lone dedicated proc) -> its run
        self.busy: dict[str, ParallelRun] = {}  # slot name -> the run using it
        self.wanted: dict[str, dict[str, Any]] = {}  # slot name -> the request ad the negotiator gets
        self.claiming: set[str] = set()
        self.advertised = False
        self._has_dedicated: dict[int, tuple[bool, float]] = {}  # cluster id -> (has dedicated procs, when seen)
        self._held_back: dict[int, float] = {}  # multi-executable jobs whose slots did not suit: until when
        self._asked = 0.0  # when the negotiator was last asked for a cycle for our requests
        # each user's recent dedicated run lengths: an estimate for jobs that give none
        self._lengths: dict[str, deque[float]] = {}
        self.reservations: Reservations | None = None  # roost reserve (set by the daemon)
        self._wake = asyncio.Event()
        self.configure(config)

    def configure(self, config: Any) -> None:
        self.interval = max(0.2, float(config.get_float("DEDICATED_SCHEDULER_INTERVAL", 5.0) or 5.0))
        self.unused_claim_timeout = float(config.get_float("UNUSED_CLAIM_TIMEOUT", 600.0) or 0.0)
        order = (config.get("DEDICATED_SCHEDULER_ORDER") or "fifo").strip().lower()
        self.order = order if order in ("fifo", "user") else "fifo"
        backfill = (config.get("DEDICATED_SCHEDULER_BACKFILL") or "none").strip().lower()
        self.backfill = backfill if backfill in ("none", "easy") else "none"
        # while a job waits at the head, the idle claims it is not yet using serve opportunistic jobs
        self.lend_idle = config.get_bool("DEDICATED_SCHEDULER_LEND_IDLE_CLAIMS", True) is not False
        self.margin = max(0.0, float(config.get_float("DEDICATED_RESERVATION_MARGIN", 300.0) or 0.0))
        self.ask_again = max(0.5, float(config.get_float("DEDICATED_SCHEDULER_RESCHEDULE_INTERVAL", 2.0) or 2.0))

    # -- when it runs ---------------------------------------------------------------------
    def wake(self) -> None:
        self._wake.set()

    def active(self) -> bool:
        return bool(self.claims or self.runs or (self.reservations is not None and self.reservations.items)
                    or self._queued())

    async def loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)
            self._wake.clear()
            if self.jobs.stopping:
                return
            if not self.active() and not self.wanted:
                continue
            try:
                await self.cycle()
            except Exception:
                log.exception("dedicated scheduler cycle failed")

    # -- one cycle ------------------------------------------------------------------------
    def _dedicated_procs(self, cluster: Cluster, now: float) -> list[Job]:
        """The cluster's dedicated procs; whether it has any is remembered (a 100,000-proc
        vanilla cluster is not scanned each cycle), a "no" for a minute only (qedit)."""
        known = self._has_dedicated.get(cluster.id)
        if known is not None and not known[0] and now - known[1] < 60:
            return []
        ad = cluster.ad
        maybe = (cluster.procs.values() if runners.dedicated(ad.get("JobUniverse")) or ad.get("WantDedicated") is True
                 else cluster.procs_naming("JobUniverse", "WantDedicated"))
        procs = [j for j in maybe if is_dedicated(j)]
        if len(self._has_dedicated) > 100000:
            self._has_dedicated.clear()
        self._has_dedicated[cluster.id] = (bool(procs), now)
        return procs

    def _queued(self) -> dict[str, list[Job]]:
        """The dedicated jobs waiting to run, by id: a parallel cluster is one job (all its
        procs idle and free), a ``+WantDedicated`` proc of another universe is a job alone."""
        out: dict[str, list[Job]] = {}
        now = time.monotonic()
        for cluster in self.jobs.queue.clusters.values():
            if not cluster.counts.get(jp.IDLE) or str(cluster.id) in self.runs:
                continue
            if self._held_back.get(cluster.id, 0.0) > now:
                continue
            procs = self._dedicated_procs(cluster, now)
            if not procs:
                continue
            if runners.dedicated(cluster.ad.get("JobUniverse")):
                if all(j.status == jp.IDLE and not j.busy for j in procs):
                    out[str(cluster.id)] = procs
                continue
            for j in procs:
                if j.status == jp.IDLE and not j.busy and j.id not in self.runs:
                    out[j.id] = [j]
        return out

    async def cycle(self) -> None:
        now = time.time()
        queued = self._queued()
        try:
            slot_objs = await self.query_slots(self.name)
        except (RemoteError, ConnectionError) as e:
            log.info("dedicated scheduler: no resources from the collector: %s", e)
            return
        slots = {s["Name"]: s for s in slot_objs
                 if isinstance(s.get("Name"), str) and s.get("PartitionableSlot") is not True}
        ads: dict[str, ClassAd] = {}
        resources = []
        for name, s in slots.items():
            run = self.busy.get(name)
            mine = name in self.claims
            other = not mine and s.get("State") in (SlotState.CLAIMED, SlotState.PREEMPTING)
            est = self.estimate(run.procs) if run is not None else None
            # a run past its expected end will end when it ends: unknown, not "any moment"
            until = run.started_at + est if run is not None and est is not None else core.INF
            resources.append(core.Resource(
                name=name, host=str(s.get("Machine") or ""), claimed=mine,
                running=run.id if run is not None else None,
                busy_until=(until if until > now else core.INF) if run is not None else 0.0,
                backfill=other, idle_since=self.idle_since.get(name, now)))
        fits: dict[tuple[str, str], bool] = {}

        def compatible(job: Any, r: core.Resource) -> bool:
            if isinstance(job, core.Reservation):
                return True
            key = (job.id, r.name)
            got = fits.get(key)
            if got is None:
                slot = ads.get(r.name)
                if slot is None:
                    slot = ads[r.name] = obj_to_ad(slots[r.name])
                got = fits[key] = any(_matches(j, slot) for j in queued[job.id])
            return got

        pjobs = [core.ParallelJob(id=jid, user=procs[0].owner, nodes=sum(_nodes(j) for j in procs),
                                  submitted=float(procs[0].get("QDate") or 0), estimate=self.estimate(procs),
                                  kind=jid)
                 for jid, procs in queued.items()]
        reserved = self.reservations.active(now) if self.reservations is not None else []
        plan = core.plan(pjobs, resources, now, compatible=compatible, order=self.order, backfill=self.backfill,
                         reservations=reserved, margin=self.margin, unused_claim_timeout=self.unused_claim_timeout)
        for jid, names in plan.start:
            self._start(jid, queued[jid], names, slots)
        wanted: dict[str, dict[str, Any]] = {}
        for jid, names in plan.gather:
            for name in names:
                if name not in self.claims:
                    wanted[name] = self._request(queued[jid], name, slots[name])
        keep: set[str] = set()  # reserved nodes whose window is near or open: held, not lent
        for rv in reserved:
            names = plan.reserved.get(rv.id, [])
            if self.reservations is not None:
                self.reservations.placed[rv.id] = names
            if rv.start - self.margin <= now < rv.end:
                keep.update(names)
                for name in names:
                    if name not in self.claims:
                        wanted[name] = self._reserve_request(name, slots[name])
        self._want(wanted)
        lend = [n for n in plan.backfill if n in self.claims and n not in self.busy and n not in keep] if (
            plan.waiting and self.lend_idle) else []
        for name in [n for n in plan.release if n not in keep] + lend:
            sh = self.claims.pop(name, None)
            if sh is not None:
                if name in lend:  # backfill: opportunistic jobs use it until it is wanted (rank preemption)
                    log.info("dedicated scheduler: %s lent to opportunistic jobs while a job waits", name)
                else:
                    log.info("dedicated scheduler: claim on %s unused for %g s: released", name,
                             self.unused_claim_timeout)
                self.idle_since.pop(name, None)
                sh.gone = True
                self.jobs.host.spawn(sh.release(), f"release-{name}")
                self.ads_changed()
        self._overruns(now, plan, keep)
        await self._note_never(plan.never, queued)

    def _want(self, wanted: dict[str, dict[str, Any]]) -> None:
        """Ask the negotiator for these slots: a cycle when the set changes, and again
        every few seconds while some stay unmatched (the negotiator's periodic cycle may
        be a minute away, and a wide job may get its slots over several cycles)."""
        now = time.monotonic()
        if set(wanted) != set(self.wanted):
            log.info("dedicated scheduler: asking for %d slots (%s)", len(wanted), ", ".join(sorted(wanted)[:8]))
            self.wanted = wanted
            self.ads_changed()
            self.reschedule()
            self._asked = now
            return
        self.wanted = wanted
        if wanted and now - self._asked >= self.ask_again:
            self._asked = now
            self.reschedule()

    def _overruns(self, now: float, plan: core.Plan, keep: set[str]) -> None:
        """A job that runs past its ``EstimatedRuntime`` (plus a grace of a tenth, at least a
        minute) while the plan counted on its nodes (a job waits, a reservation opens) is
        stopped and requeued: the estimate is what let it run there."""
        if not plan.waiting and not keep:
            return
        for run in list(self.runs.values()):
            est = _estimate(run.procs[0])
            if est is None or run.started_at <= 0 or run.stopped_by:
                continue
            if now > run.started_at + est + max(60.0, est / 10):
                why = f"ran past its EstimatedRuntime ({est:g} s) while other work waited for its nodes"
                log.info("dedicated scheduler: job %s %s: stopped", run.id, why)
                run.stop(why)

    async def _note_never(self, never: dict[str, str], queued: dict[str, list[Job]]) -> None:
        """Jobs that can never fit say why in their ads (``roost q -analyze`` shows it);
        the reason is cleared once they fit (more slots), also after a schedd restart."""
        for jid, procs in queued.items():
            why = never.get(jid, "")
            for job in procs:
                if (job.get("DedicatedSchedulerReason") or "") != why:
                    if why:
                        log.info("dedicated scheduler: job %s can never run here: %s", job.id, why)
                    await self.jobs.commit(self.jobs.set_ops(job, {"DedicatedSchedulerReason": why}))

    def _request(self, procs: list[Job], slot: str, slot_obj: dict[str, Any]) -> dict[str, Any]:
        """The negotiator's request for one slot: a proc of the job that fits it, the slot
        named, ``Scheduler`` and ``User`` this scheduler's name."""
        slot_ad = obj_to_ad(slot_obj)
        job = next((j for j in procs if _matches(j, slot_ad)), procs[0])
        ad = job.merged()
        req = ad.get("Requirements")
        req_text = req[6:-2] if isinstance(req, str) and req.startswith("/Expr(") and req.endswith(")/") else (
            "true" if req is None else str(req).lower() if isinstance(req, bool) else None)
        mine = f"TARGET.Name == {quote_string(slot)} && TARGET.DedicatedScheduler =?= {quote_string(self.name)}"
        ad["Requirements"] = f"/Expr({mine} && ({req_text or 'true'}))/"
        ad["Scheduler"] = self.name
        ad["User"] = self.name
        ad["RequestCpus"] = slot_obj.get("Cpus") if type(slot_obj.get("Cpus")) is int else ad.get("RequestCpus", 1)
        return ad

    def _reserve_request(self, slot: str, slot_obj: dict[str, Any]) -> dict[str, Any]:
        """The request that claims a reserved node: no job's, only the slot's size."""
        cpus, mem = slot_obj.get("Cpus"), slot_obj.get("Memory")
        return {
            "MyType": "Job", "TargetType": "Machine", "Owner": OWNER, "User": self.name, "Scheduler": self.name,
            "JobUniverse": runners.dedicated_number(), "RequestCpus": cpus if type(cpus) is int else 1,
            "RequestMemory": mem if type(mem) is int else 1, "RequestDisk": 1,
            "Requirements": f"/Expr(TARGET.Name == {quote_string(slot)} && "
                            f"TARGET.DedicatedScheduler =?= {quote_string(self.name)})/",
        }

    # -- the negotiator's side ------------------------------------------------------------------
    def requests(self) -> list[dict[str, Any]]:
        """GET_REQUESTS for this scheduler's submitter: one request per wanted slot."""
        return [{"autocluster": f"ded:{name}", "count": 1, "ad": ad}
                for name, ad in self.wanted.items() if name not in self.claiming]

    def matched(self, m: dict[str, Any]) -> bool:
        """A match for one of our requests: claim the slot (in the background)."""
        ac = m.get("autocluster")
        if not isinstance(ac, str) or not ac.startswith("ded:"):
            return False
        name = ac[4:]
        ad = self.wanted.get(name)
        claim_id, address = m.get("claim_id"), m.get("startd_address")
        if ad is None or name in self.claims or name in self.claiming or not isinstance(claim_id, str) \
                or not isinstance(address, str):
            return True
        slot_ad = m.get("slot_ad") if isinstance(m.get("slot_ad"), dict) else None
        sh = NodeShadow(self.shadows, address, claim_id, name, slot_ad, self.shadows.lease, self._lost)
        sh.preempting = m.get("preempt") is True
        self.claiming.add(name)
        self.jobs.host.spawn(self._claim(name, sh, ad), f"dedicated-claim-{name}")
        return True

    async def _claim(self, name: str, sh: NodeShadow, ad: dict[str, Any]) -> None:
        try:
            await sh.claim(ad)
        except (RemoteError, ConnectionError) as e:
            log.info("dedicated scheduler: claim on %s refused: %s", name, e)
            return
        finally:
            self.claiming.discard(name)
        log.info("dedicated scheduler: claimed %s%s", name, " (preempting its job)" if sh.preempting else "")
        self.claims[name] = sh
        self.idle_since[name] = time.time()
        self.wanted.pop(name, None)
        self.ads_changed()
        self.wake()

    def _lost(self, sh: NodeShadow) -> None:
        name = next((n for n, s in self.claims.items() if s is sh), None)
        if name is not None:
            del self.claims[name]
            self.idle_since.pop(name, None)
            self.ads_changed()
            self.wake()

    def submitter_ad(self, domain: str, schedd_name: str, address: str | None) -> dict[str, Any] | None:
        """This scheduler's Submitter ad (what the negotiator gives it a share for);
        None until it first wants a slot (then zeros when it wants none)."""
        idle = len([n for n in self.wanted if n not in self.claiming])
        running = len(self.claims)
        self.advertised = self.advertised or bool(idle or running)
        if not self.advertised:
            return None
        return {
            "MyType": "Submitter", "Name": self.name, "Owner": OWNER, "User": self.name, "AccountingGroup": OWNER,
            "ScheddName": schedd_name, "ScheddAddress": address, "MyAddress": address,
            "IdleJobs": idle, "RunningJobs": running, "WeightedRunningJobs": running, "HeldJobs": 0,
            "SubmitterTag": domain,
        }

    # -- running jobs ----------------------------------------------------------------------
    def _start(self, jid: str, procs: list[Job], names: list[str], slots: dict[str, dict[str, Any]]) -> None:
        procs = sorted(procs, key=lambda j: j.proc)
        assigned = _assign(procs, [(n, obj_to_ad(slots[n])) for n in names])
        if assigned is None:
            # each proc of a multi-executable job needs slots of its own kind: these do not
            # suit them; look again later (other slots may free) instead of every cycle
            log.info("dedicated scheduler: job %s: its procs do not fit the slots %s; held back 30 s", jid, names)
            self._held_back[procs[0].cluster.id] = time.monotonic() + 30.0
            return
        for job in procs:
            self.jobs.queue.take_idle(job)
        nodes = [(job, self.claims[name]) for job, name in assigned]
        run = ParallelRun(self.shadows, procs, nodes, self.spool, self._ended, scheduler=self.name, key=jid)
        self.runs[run.id] = run
        for name in names:
            self.busy[name] = run
            self.idle_since.pop(name, None)
        log.info("dedicated scheduler: job %s starts on %s", jid, ", ".join(names))
        self.jobs.host.spawn(run.run(), f"parallel-{jid}")

    def estimate(self, procs: list[Job]) -> float | None:
        """A job's expected run time: its ``EstimatedRuntime``, else learned from its
        owner's history (a tenth over the longest of their last 20 completed dedicated
        runs, once there are 3). Only a given estimate is held to (``_overruns``)."""
        given = _estimate(procs[0])
        if given is not None:
            return given
        seen = self._lengths.get(procs[0].owner)
        return max(seen) * 1.1 if seen is not None and len(seen) >= 3 else None

    def _ended(self, run: ParallelRun) -> None:
        self.runs.pop(run.id, None)
        now = time.time()
        if run.completed and run.started_at > 0:
            if len(self._lengths) > 10000:
                self._lengths.clear()
            self._lengths.setdefault(run.procs[0].owner, deque(maxlen=20)).append(now - run.started_at)
        for name in [n for n, r in self.busy.items() if r is run]:
            del self.busy[name]
            sh = self.claims.get(name)
            if sh is not None and sh.gone:
                del self.claims[name]
            elif sh is not None:
                self.idle_since[name] = now
        self.ads_changed()
        self.wake()

    async def release_all(self) -> None:
        """The schedd stops: claims held idle go back (running ones stay: a restarted
        schedd requeues their jobs and releases them)."""
        idle = [sh for name, sh in self.claims.items() if name not in self.busy]
        self.claims = {n: sh for n, sh in self.claims.items() if n in self.busy}
        await asyncio.gather(*(sh.release() for sh in idle), return_exceptions=True)


def _estimate(job: Job) -> float | None:
    v = job.get("EstimatedRuntime")
    return float(v) if type(v) in (int, float) and v > 0 else None


def _matches(job: Job, slot: ClassAd) -> bool:
    try:
        return bool(job.classad().symmetricMatch(slot))
    except Exception:
        return False


def _assign(procs: list[Job], slots: list[tuple[str, ClassAd]]) -> list[tuple[Job, str]] | None:
    """Node by node, each proc's ``MaxHosts`` nodes to slots that match it (the most
    particular procs first); None when they cannot all be placed."""
    free = list(slots)
    placed: dict[int, list[str]] = {}
    for job in sorted(procs, key=lambda j: sum(_matches(j, ad) for _n, ad in slots)):
        got = [n for n, ad in free if _matches(job, ad)][:_nodes(job)]
        if len(got) < _nodes(job):
            return None
        placed[job.proc] = got
        free = [(n, ad) for n, ad in free if n not in got]
    return [(job, name) for job in procs for name in placed[job.proc]]


__all__ = ["OWNER", "DedicatedScheduler", "is_dedicated"]
