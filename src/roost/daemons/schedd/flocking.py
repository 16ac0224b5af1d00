"""The schedd's side of flocking (issue 29, docs/flocking.md): a thin shell over
``roost.core.flock``.

Every ``FLOCK_INTERVAL`` (the negotiation interval) the schedd groups its idle jobs by
autocluster (:func:`waiting_entries`), asks :func:`roost.core.flock.outbound_plan` which
may leave home and for which pools, and advertises a Submitter ad for each planned
submitter to each target pool's collector (``IdleJobs`` counting only the jobs planned
there, ``FlockedFrom`` our ``UID_DOMAIN``); when the plan stops sending a submitter
there, its ad is withdrawn (INVALIDATE_AD). That pool's negotiator then asks this
schedd GET_REQUESTS and sends MATCHES as ours does: :meth:`Flocking.requests_for`
answers a foreign negotiator only the planned, flockable jobs, and the shadows claim
the remote slots directly (no extra hop; the claims carry their own keep-alives, so a
lost remote central manager does not touch jobs running there).

Each pool is sent to on its own task with a short timeout: a dead or partitioned
central manager delays nothing at home or toward other pools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from roost.config import Config
from roost.core import jobpolicy as jp
from roost.core.flock import (
    Agreement,
    FlockLevel,
    OutboundPlan,
    Waiting,
    collector_host,
    name_domain,
    never_home,
    outbound_plan,
    parse_agreements,
)
from roost.daemons.schedd.autocluster_ids import AutoClusters, not_negotiated
from roost.daemons.schedd.idleblocks import IdleBlock, covered, made_covered, plain_idle
from roost.daemons.schedd.jobqueue import Job, JobQueue
from roost.net.addresses import collector_address
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError, RequestError
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

#: how long one remote collector may take to answer before this round gives up on it
REMOTE_TIMEOUT = 5.0
#: flocking decisions a never-home verdict is kept for before the home slots are asked again
VERDICT_ROUNDS = 10
#: new never-home verdicts a round makes at most (each may scan every home slot)
VERDICTS_PER_ROUND = 20
#: what flocking reads of a job besides its autocluster (lower case): a block's plain
#: procs that may own none of these are counted, not made into Jobs
_FLOCK_READS = frozenset(("wantflocking", "enteredcurrentstatus", "qdate"))


def flocking_configured(config: Config) -> bool:
    """Whether any flocking knob is set: everything here is off otherwise."""
    return any((config.get(k) or "").strip() for k in ("FLOCK_TO", "FLOCK_AGREEMENTS"))


def wants_flocking(job: Job, by_default: bool) -> bool:
    """The job's ``+WantFlocking``, else ``FLOCK_BY_DEFAULT``."""
    v = job.get("WantFlocking")
    return v if isinstance(v, bool) else by_default


def accounting_groups(name: str) -> tuple[str, ...]:
    """The accounting groups a submitter name is in: ``group_a.sub.alice@d`` is in
    ``group_a`` and ``group_a.sub`` (an agreement may name either)."""
    parts = name.rpartition("@")[0].split(".") if "@" in name else name.split(".")
    return tuple(".".join(parts[:i]) for i in range(1, len(parts)))


@dataclass
class _Group:
    user: str
    idle: int = 0
    flockable: int = 0
    oldest: float | None = None
    want: bool | None = None


def waiting_entries(queue: JobQueue, autoclusters: AutoClusters, submitter_of: Callable[[Any], str],
                    *, now: float, by_default: bool, samples: dict[str, Job] | None = None
                    ) -> tuple[list[Waiting], dict[str, int]]:
    """The idle jobs as flocking sees them: one :class:`Waiting` per autocluster (key
    ``str(id)``; waited = now - the oldest ``EnteredCurrentStatus``/``QDate``), and per
    key how many of its jobs may leave home (``WantFlocking``). A key is flockable when
    any of its jobs is; a run of one cluster's procs without differences is looked at
    once, and a block's plain procs alike in all of it are counted, not made into Jobs.
    ``samples``, when given, gets one job of each key (an autocluster's jobs match
    alike: one stands for all in the never-home analysis)."""
    groups: dict[str, _Group] = {}
    # a run of one cluster's procs without differences of their own: one autocluster,
    # one WantFlocking, one entered time (the cluster's), so each costs a count
    run_cluster: Any = None
    run_group: _Group | None = None
    run_want = 0

    def one(job: Job) -> None:
        nonlocal run_cluster, run_group, run_want
        if job.busy or job.status != jp.IDLE:
            return
        plain = not job.own_names()
        if plain and job.cluster is run_cluster and run_group is not None:
            run_group.idle += 1
            run_group.flockable += run_want
            return
        if not_negotiated(job):
            return
        key = str(autoclusters.autocluster_of(job, autoclusters.signature(job)))
        g = groups.get(key)
        if g is None:
            g = groups[key] = _Group(submitter_of(job.cluster))
            if samples is not None:
                samples[key] = job
        want = 1 if wants_flocking(job, by_default) else 0
        g.idle += 1
        g.flockable += want
        t = job.get("EnteredCurrentStatus") or job.cluster.ad.get("QDate")
        if type(t) in (int, float) and (g.oldest is None or t < g.oldest):
            g.oldest = float(t)
        if plain:
            run_cluster, run_group, run_want = job.cluster, g, want
        else:
            run_cluster = run_group = None

    for owner in list(queue.idle):
        listed = queue.idle.get(owner) or {}
        for entry in list(listed):
            if type(entry) is not IdleBlock:
                if entry in listed:
                    one(entry)
                continue
            run_cluster = run_group = None
            if queue.clusters.get(entry.cluster.id) is not entry.cluster:
                continue
            # a block's plain procs alike in all flocking reads: one made, the rest
            # counted (a million-proc cluster is not made into a million Jobs each round)
            run = autoclusters.plain_run(entry, _FLOCK_READS)
            if run is None:
                for job in covered(entry, listed):
                    one(job)
                continue
            first, _sig, ac = run
            for job in made_covered(entry, listed):
                one(job)
            n = plain_idle(entry.cluster)
            g = groups.get(str(ac))
            if n and g is not None:
                g.idle += n
                g.flockable += n if wants_flocking(first, by_default) else 0
            run_cluster = run_group = None
    out = [Waiting(key=k, user=g.user, idle=g.idle, waited=max(0.0, now - (g.oldest or now)),
                   groups=accounting_groups(g.user), want_flocking=g.flockable > 0) for k, g in groups.items()]
    return out, {k: g.flockable for k, g in groups.items()}


def flock_submitter_ads(base: Iterable[dict[str, Any]], plan: OutboundPlan, flockable: dict[str, int],
                        users: dict[str, str], *, pool: str, home_domain: str,
                        running: dict[str, int]) -> list[dict[str, Any]]:
    """The Submitter ads for one target ``pool``: each of this schedd's ads (``base``,
    as sent home) whose submitter has keys planned there, its ``IdleJobs`` the
    flockable jobs of those keys, ``RunningJobs`` ours running in that pool."""
    idle: dict[str, int] = {}
    for key in plan.targets.get(pool, ()):
        name = users.get(key)
        if name is not None:
            idle[name] = idle.get(name, 0) + flockable.get(key, 0)
    out = []
    for ad in base:
        name = ad.get("Name")
        if name not in idle or idle[name] <= 0:
            continue
        out.append({**ad, "IdleJobs": idle[name], "RunningJobs": running.get(name, 0), "HeldJobs": 0,
                    "WeightedRunningJobs": running.get(name, 0), "FlockedFrom": home_domain,
                    "FlockPool": pool})
    return out


@dataclass
class _Remote:
    agreement: Agreement
    client: AsyncClient | None = None
    sent: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (idle, running) last sent
    last_error: str = ""


class Flocking:
    """The schedd's flocking state: the flock level, this cycle's plan, the ads each
    remote collector holds, and which running jobs a remote pool matched."""

    def __init__(self, config: Config, *, queue: JobQueue, autoclusters: AutoClusters,
                 submitter_of: Callable[[Any], str], base_ads: Callable[[], Iterable[dict[str, Any]]],
                 connect: Callable[..., AsyncClient], home_query: Callable[..., Any], uid_domain: str,
                 schedd_name: str) -> None:
        self.queue, self.autoclusters, self.submitter_of = queue, autoclusters, submitter_of
        self.base_ads, self.connect, self.home_query = base_ads, connect, home_query
        self.uid_domain, self.schedd_name = uid_domain, schedd_name
        self.memory = FlockLevel()
        self.plan = OutboundPlan(level=0)
        self.flockable: dict[str, int] = {}
        self.users: dict[str, str] = {}  # key -> submitter name
        self.where: dict[tuple[int, int], str] = {}  # running job -> the pool that matched it
        self._claims: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()  # shadow -> pool
        self.verdicts: dict[str, tuple[bool, float]] = {}  # key -> (never home, when judged)
        self.configure(config)

    def configure(self, config: Config) -> None:
        agreements = parse_agreements(config.get)
        self.senders = [a for a in agreements if a.send]
        self.after = max(0.0, config.get_float("FLOCK_AFTER", 60.0) or 0.0)
        self.increment = max(1, int(config.get_int("FLOCK_INCREMENT", 1) or 1))
        self.by_default = config.get_bool("FLOCK_BY_DEFAULT", True) is not False
        self.interval = max(0.5, config.get_float("FLOCK_INTERVAL", 60.0) or 60.0)
        port = int(config.get_int("COLLECTOR_PORT", 9618) or 9618)
        old = getattr(self, "remotes", {})
        self.remotes: dict[str, _Remote] = {}
        for a in self.senders:
            r = old.get(a.name) or _Remote(a)
            r.agreement = a
            address = collector_address(a.collector, port)
            if address and (r.client is None or r.client.address != address):
                r.client = self.connect(address, timeout=REMOTE_TIMEOUT)
            self.remotes[a.name] = r
        self._by_domain = {a.domain.lower(): a.name for a in self.senders if a.domain and a.domain != a.collector}
        self._by_host = {collector_host(a.collector): a.name for a in self.senders if a.domain == a.collector}

    # -- the negotiator's side ------------------------------------------------------------
    def foreign_pool(self, peer: Peer) -> str | None:
        """The connected pool whose negotiator ``peer`` is, or "" for an authenticated
        peer of another domain with no agreement (answered nothing); None: ours."""
        ident = peer.identity
        if ident is None:
            return None
        domain = name_domain(ident.name).lower()
        if not domain or domain == self.uid_domain.lower():
            return None
        pool = self._by_domain.get(domain)
        if pool is None:  # a plain FLOCK_TO pool: known by its central manager's host
            pool = self._by_host.get(peer.host, "")
        return pool

    def requests_for(self, pool: str, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """GET_REQUESTS answered to ``pool``'s negotiator: only the autoclusters planned
        there, each counting only its jobs that may leave home."""
        keys = set(self.plan.targets.get(pool, ())) if pool else set()
        out = []
        for r in requests:
            key = str(r.get("autocluster"))
            n = min(int(r.get("count") or 0), self.flockable.get(key, 0))
            if key in keys and n > 0:
                out.append({**r, "count": n})
        return out

    def planned(self, pool: str, autocluster: Any) -> bool:
        """Whether this cycle's plan offers ``autocluster`` to ``pool`` (a foreign
        negotiator's match for anything else is dropped)."""
        return str(autocluster) in self.plan.targets.get(pool, ())

    def accepts(self, job: Job) -> bool:
        """Whether ``job`` may run on a foreign pool's match."""
        return wants_flocking(job, self.by_default)

    def matched(self, pool: str, job: Job, shadow: Any = None) -> None:
        """``pool``'s negotiator matched ``job``; ``shadow`` holds that pool's claim."""
        self.where[job.key] = pool
        if shadow is not None:
            self._claims[shadow] = pool

    def reuse_guard(self, job: Job, fits: Any) -> bool:
        """ClaimReuse's say: a claim on another pool's slot (the shadow behind ``fits``)
        runs next only a job that may flock; ours run anything."""
        shadow = getattr(fits, "__self__", None)
        pool = self._claims.get(shadow) if shadow is not None else None
        if pool is None:
            pool = self._slot_pool(getattr(shadow, "slot_obj", None))
            if pool is None:
                self.where.pop(job.key, None)  # a home claim: an earlier run's pool is stale
                return True
            self._claims[shadow] = pool  # (a claim taken back after a schedd restart)
        if not self.accepts(job):
            return False
        self.where[job.key] = pool
        return True

    def _slot_pool(self, slot: Any) -> str | None:
        """The connected pool a slot ad belongs to, by its ``UidDomain``; None: ours (or
        not known). A claim's slot ad is kept with the job, so this survives a restart."""
        domain = slot.get("UidDomain") if isinstance(slot, dict) else None
        if not isinstance(domain, str) or not domain or domain.lower() == self.uid_domain.lower():
            return None
        return self._by_domain.get(domain.lower(), domain)

    def pool_of_run(self, job: Job, runner: Any) -> str | None:
        """The connected pool a run that starts now is in (the negotiator that matched
        it, else its slot's ``UidDomain``): the job's ``RemotePool``; None at home. Noted
        again as where it runs: a decision round between the match and the start may
        have dropped it (it keeps only running jobs)."""
        pool = self.where.get(job.key) or self._slot_pool(getattr(runner, "slot_obj", None))
        if pool is not None:
            self.where[job.key] = pool
        return pool

    def pool_of(self, job: Job) -> str | None:
        """The connected pool running ``job``, None when at home (``q -run``)."""
        pool = self.where.get(job.key) or job.get("RemotePool")
        return pool if isinstance(pool, str) and pool else None

    # -- each interval ---------------------------------------------------------------------
    async def loop(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("flocking round failed")
            await asyncio.sleep(self.interval)

    async def _foreign_here(self) -> int:
        """Slots of the home pool other pools' jobs hold (ours take them back first)."""
        with contextlib.suppress(ConnectionError, RequestError, RemoteError, TimeoutError):
            got = await asyncio.wait_for(self.home_query(
                "QUERY", type="Machine", constraint='State == "Claimed"', projection=["RemoteUser"]),
                REMOTE_TIMEOUT)
            suffix = "@" + self.uid_domain.lower()
            return sum(1 for ad in got.get("ads") or [] if isinstance(ad, dict)
                       and isinstance(ad.get("RemoteUser"), str) and "@" in ad["RemoteUser"]
                       and not ad["RemoteUser"].lower().endswith(suffix))
        return 0

    async def round(self, now: float | None = None) -> OutboundPlan:
        """One decision: the plan, then each target pool's ads sent or withdrawn."""
        now = time.time() if now is None else now
        where = {}
        for key, job in self.queue.running.items():
            pool = self.where.get(key) or self._slot_pool((job.claim or {}).get("slot_ad"))
            if pool is None and isinstance(job.get("RemotePool"), str) and job.get("RemotePool"):
                pool = job.get("RemotePool")  # set at its start (pool_of_run), kept with the job
            if pool is not None:
                where[key] = pool
        self.where = where
        samples: dict[str, Job] = {}
        waiting, flockable = waiting_entries(self.queue, self.autoclusters, self.submitter_of,
                                             now=now, by_default=self.by_default, samples=samples)
        foreign = await self._foreign_here() if any(w.idle for w in waiting) else 0
        waiting = await self._judge_home(waiting, samples, now=now)
        plan = outbound_plan(waiting, self.senders, self.memory, now=now, after=self.after,
                             increment=self.increment, by_default=self.by_default, foreign_here=foreign)
        self.plan, self.flockable = plan, flockable
        self.users = {w.key: w.user for w in waiting}
        base = [ad for _t, ad, _p in self.base_ads()]
        await asyncio.gather(*(self._send(r, base, plan) for r in self.remotes.values()))
        return plan

    async def _judge_home(self, waiting: list[Waiting], samples: dict[str, Job], *, now: float) -> list[Waiting]:
        """``waiting`` with q -analyze's never-home verdict (core.flock.never_home) on each
        flockable key. One job stands for its autocluster, and the analysis stops at the
        first home slot that could run it, so a job that fits at home costs one
        evaluation or a few; a verdict is kept VERDICT_ROUNDS decisions, so the home slot
        ads are asked for only when a new autocluster needs one or the verdicts are due."""
        ttl = VERDICT_ROUNDS * self.interval
        self.verdicts = {k: v for k, v in self.verdicts.items() if k in samples and now - v[1] < ttl}
        fresh = [w.key for w in waiting if w.want_flocking and w.idle > 0 and w.key not in self.verdicts]
        fresh = fresh[:VERDICTS_PER_ROUND]  # the rest next round: a round stays short
        if fresh and self.senders:
            slots = await self._home_slots()
            if slots is not None:
                # off the event loop: a never-home job is matched against every home slot
                # (~0.1 ms each: 10,000 slots would hold the schedd a second per job)
                ads = {key: samples[key].classad() for key in fresh}
                got = await asyncio.to_thread(lambda: {k: never_home(ad, slots) for k, ad in ads.items()})
                for key, verdict in got.items():
                    self.verdicts[key] = (verdict, now)
        return [replace(w, never_home=True) if self.verdicts.get(w.key, (False, 0.0))[0] else w for w in waiting]

    async def _home_slots(self) -> list[Any] | None:
        """The home pool's slot ads (every state, no dynamic slots: their partitionable
        slot stands for the machine) as ClassAds; None when the collector does not answer."""
        # lazy: the ClassAd form only when a verdict is due
        from roost.net.adwire import obj_to_ad

        with contextlib.suppress(ConnectionError, RequestError, RemoteError, TimeoutError):
            got = await asyncio.wait_for(self.home_query(
                "QUERY", type="Machine", constraint="DynamicSlot =!= true"), REMOTE_TIMEOUT)
            return [obj_to_ad(ad) for ad in got.get("ads") or [] if isinstance(ad, dict)]
        return None

    def _running_in(self, pool: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, p in self.where.items():
            job = self.queue.running.get(key)
            if p == pool and job is not None:
                name = self.submitter_of(job.cluster)
                out[name] = out.get(name, 0) + 1
        return out

    async def _send(self, remote: _Remote, base: list[dict[str, Any]], plan: OutboundPlan) -> None:
        pool = remote.agreement.name
        client = remote.client
        if client is None:
            return
        ads = flock_submitter_ads(base, plan, self.flockable, self.users, pool=pool,
                                  home_domain=self.uid_domain, running=self._running_in(pool))
        names = {ad["Name"] for ad in ads}
        try:
            for ad in ads:
                counts = (ad["IdleJobs"], ad["RunningJobs"])
                # sent every round: the remote collector's copy expires, ours is soft state
                await client.call("UPDATE_AD", type="Submitter", ad=ad)
                if ad["Name"] not in remote.sent:
                    log.info("flocking %s's idle jobs (%d) to pool %s", ad["Name"], ad["IdleJobs"], pool)
                remote.sent[ad["Name"]] = counts
            for name in [n for n in remote.sent if n not in names]:
                await client.call("INVALIDATE_AD", type="Submitter", name=name, schedd_name=self.schedd_name)
                del remote.sent[name]
                log.info("no more flocking of %s's jobs to pool %s", name, pool)
            remote.last_error = ""
        except (ConnectionError, RequestError, RemoteError, TimeoutError, OSError) as e:
            if remote.last_error != str(e):
                log.warning("flocking to pool %s (%s): %s", pool, client.address, e)
            remote.last_error = str(e)

    def status(self) -> list[dict[str, Any]]:
        """Per connected pool we send to: its collector, what is offered and running there."""
        out = []
        for name, r in self.remotes.items():
            running = sum(1 for p in self.where.values() if p == name)
            out.append({"pool": name, "collector": r.agreement.collector, "direction": "send",
                        "offered": sum(self.flockable.get(k, 0) for k in self.plan.targets.get(name, ())),
                        "running": running, "error": r.last_error})
        return out

    def why(self, job: Job) -> dict[str, Any]:
        """Where ``job`` runs or may run, and why it does or does not flock (``q -analyze``)."""
        pool = self.where.get(job.key)
        if job.key in self.queue.running:
            pool = pool or (job.get("RemotePool") if isinstance(job.get("RemotePool"), str) else None)
            return {"pool": pool, "why": f"runs in pool {pool}" if pool else "runs at home"}
        if job.status != jp.IDLE or not_negotiated(job):
            return {"pool": None, "why": "not idle, or not negotiated: flocking does not apply"}
        if not self.accepts(job):
            return {"pool": None, "why": "WantFlocking is false" if job.get("WantFlocking") is False else
                    "the job does not set WantFlocking (FLOCK_BY_DEFAULT is false)"}
        key = str(self.autoclusters.autocluster_of(job, self.autoclusters.signature(job)))
        pools = self.plan.pools_of(key)
        if pools:
            return {"pool": None, "pools": pools, "never_home": key in self.plan.at_once,
                    "why": "offered to pool " + ", ".join(pools)
                    + f" (flock level {self.plan.level} of {len(self.senders)})"
                    + (": no machine at home could ever run it, so it did not wait FLOCK_AFTER"
                       if key in self.plan.at_once else "")}
        return {"pool": None, "why": self.plan.home.get(key, "no flocking decision for it yet "
                                                        f"(one every {self.interval:g} s)")}

    def home_ads(self, ads: Iterable[tuple[str, dict[str, Any], Any]]) -> Iterable[tuple[str, dict[str, Any], Any]]:
        """The home pool's Submitter ads with HTCondor's ``FlockedJobs`` (jobs of that
        submitter running in another pool)."""
        flocked: dict[str, int] = {}
        for key in self.where:
            job = self.queue.running.get(key)
            if job is not None:
                name = self.submitter_of(job.cluster)
                flocked[name] = flocked.get(name, 0) + 1
        for t, ad, private in ads:
            yield t, {**ad, "FlockedJobs": flocked.get(ad.get("Name"), 0)}, private

    def ad(self) -> dict[str, Any]:
        """For the schedd's own ad: ``FlockRunning`` (``pool=count, ...``), which the home
        negotiator's ledger reads as what other pools lend us."""
        counts: dict[str, int] = {}
        for key, pool in self.where.items():
            if key in self.queue.running:
                counts[pool] = counts.get(pool, 0) + 1
        return {"FlockRunning": ", ".join(f"{p}={n}" for p, n in sorted(counts.items())),
                "FlockTo": ", ".join(self.remotes), "FlockLevel": self.plan.level}

    async def close(self) -> None:
        for r in self.remotes.values():
            if r.client is not None:
                for name in list(r.sent):
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(r.client.call("INVALIDATE_AD", type="Submitter", name=name,
                                                             schedd_name=self.schedd_name), 2.0)
                with contextlib.suppress(Exception):
                    await r.client.close()


class FlockCalls:
    """The schedd's flocking command, served whether flocking is on or off."""

    def __init__(self, flocking: Flocking | None, queue: JobQueue) -> None:
        self.flocking, self.queue = flocking, queue

    async def h_flock_why(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """FLOCK_WHY: for each job id (``cluster.proc``), where it runs or why it does or
        does not flock; empty where flocking is off."""
        out: dict[str, Any] = {}
        if self.flocking is None:
            return {"jobs": out}
        for text in req["ids"][:1000]:
            c, _, p = str(text).partition(".")
            job = self.queue.job(int(c), int(p)) if c.isdigit() and p.isdigit() else None
            if job is not None:
                out[f"{job.cluster.id}.{job.proc}"] = self.flocking.why(job)
        return {"jobs": out}


__all__ = ["FlockCalls", "Flocking", "flock_submitter_ads", "flocking_configured", "waiting_entries", "wants_flocking"]
