"""The schedd: the durable job queue, its commands, and the policy that runs jobs.

Commands (docs/protocol.md): NEW_CLUSTER, SUBMIT, SUBMIT_TEXT (submission.py);
QUERY_JOBS, ACT, WAIT_JOBS from tools (queries.py); GET_REQUESTS, MATCHES from the
negotiator (negotiation.py); JOB_UPDATE, GET_FILES, PUT_FILES from starters
(starter_calls.py). Every job state change goes through the ``JobLifecycle``
(lifecycle.py), which owns the queue and the users' logs and commits each change
(group commit, store.py) before anyone is told about it. Shadows (shadow.py) run
jobs on claims and reuse them (claimreuse.py); local-universe jobs run as children
(localuniverse.py). This module wires those pieces together and keeps the
Submitter ads (submitters.py) and the negotiator informed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import sys
from typing import Any

from roost.classad.unparse import quote
from roost.core import jobpolicy as jp
from roost.core.accounting_user import ALLOW_OTHER_KNOB
from roost.daemons.base import CannotStart, Daemon, local_name_arg
from roost.daemons.profiling import Profiled
from roost.daemons.schedd import runners
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.autocluster_ids import AutoClusters
from roost.daemons.schedd.checkpoints import CheckpointStore
from roost.daemons.schedd.chirp_calls import ChirpCalls
from roost.daemons.schedd.ckpt_admission import CheckpointAdmission
from roost.daemons.schedd.claimreuse import ClaimReuse
from roost.daemons.schedd.dedicated import DedicatedScheduler, is_dedicated
from roost.daemons.schedd.flocking import FlockCalls, Flocking, flocking_configured
from roost.daemons.schedd.gridmanager import GridManager, is_grid
from roost.daemons.schedd.jobqueue import Job, JobQueue
from roost.daemons.schedd.jobwatch import WatchCalls
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.localuniverse import LocalJob, kill_orphan, start_local
from roost.daemons.schedd.negotiation import NegotiatorCalls
from roost.daemons.schedd.notify import Notifier
from roost.daemons.schedd.now import NowCalls
from roost.daemons.schedd.queries import QueueCalls
from roost.daemons.schedd.reservations import Reservations
from roost.daemons.schedd.shadow import DEFAULT_MAX_STARTING, Shadows
from roost.daemons.schedd.spool_area import sweep_partial
from roost.daemons.schedd.spool_calls import SpoolCalls
from roost.daemons.schedd.starter_calls import StarterCalls
from roost.daemons.schedd.store import NewerFormat, Store
from roost.daemons.schedd.submission import SubmitCalls
from roost.daemons.schedd.submitters import submitter_ads, submitter_name
from roost.daemons.schedd.userlog import UserLogs
from roost.daemons.security import uid_domain
from roost.net import framing
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError, RequestError
from roost.net.server import Handler
from roost.vocabulary import JobStatus

log = logging.getLogger("roost.schedd")

#: ROOST_SCHEDD_PROFILE names a file: the schedd runs under cProfile and writes its
#: statistics there every 5 s and when it stops (bench/rm_bench.py --profile: where the
#: CPU of ``rm -all`` goes), as the startd's ROOST_STARTD_PROFILE
PROFILE_ENV = "ROOST_SCHEDD_PROFILE"
_profiled = Profiled(PROFILE_ENV, 5.0)


class Schedd(Daemon):
    ad_type = "Scheduler"
    max_frame = framing.MAX_FRAME  # SUBMIT of a large cluster, SUBMIT_TEXT of a big description

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
        # starts in flight per startd (shadow.py's StartTurns): 0 is no limit
        self.max_starting = max(0, int(cfg.get_int("SCHEDD_MAX_STARTING_PER_STARTD", DEFAULT_MAX_STARTING) or 0))
        self.userlogs = UserLogs(config=cfg)
        # users are user@UID_DOMAIN: submitter names, job owners (read once: a RECONFIG
        # that changed it would rename every submitter mid-queue)
        self.uid_domain = uid_domain(cfg)
        # Built by start(), once the queue is loaded.
        self.store: Store | None = None
        self.queue: JobQueue | None = None
        self.jobs: JobLifecycle | None = None
        self.shadows: Shadows | None = None
        self.ckpt_admission: CheckpointAdmission | None = None
        self.chirp_calls: ChirpCalls | None = None
        self.dedicated: DedicatedScheduler | None = None
        self.flocking: Flocking | None = None  # FLOCK_TO / FLOCK_AGREEMENTS (flocking.py)
        self._calls: dict[str, Handler] = {}
        self._ads_task: asyncio.Task[None] | None = None
        self._ads_dirty = False
        self._resched_task: asyncio.Task[None] | None = None
        self._resched_again = False
        self._unclaimed: list[str] = []  # matched slots whose startd could not be connected to
        # Submitter names advertised with jobs (name -> owner): a zero ad follows when they go.
        self._advertised_names: dict[str, str] = {}
        self._sent_counts: dict[str, tuple[int, int, int]] = {}
        self._negotiator: AsyncClient | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def request_stop(self) -> None:
        """SIGTERM: stop without releasing claims, so running jobs keep running and a
        restarted schedd reconnects to them (HTCondor's graceful schedd restart)."""
        if self.jobs is not None:
            self.jobs.stopping = True
        super().request_stop()

    @property
    def stopping(self) -> bool:
        return self.jobs is not None and self.jobs.stopping

    def unix_socket(self) -> str | None:
        return str(self.run_dir / f"{self.name}.sock")

    def _open_path_to_socket(self) -> None:
        """A root-run schedd serves every local account through its socket (FS): give
        o+x (search, not read) to our own directories from RUN up to LOCAL_DIR, as the
        startd does for EXECUTE, so a submit-only host whose home was made 0700 (mkdtemp,
        a home under /root) is reachable too; warn about any other ancestor in the way."""
        if os.geteuid() != 0:
            return
        home = os.path.realpath(self.home)
        path = os.path.realpath(self.run_dir)
        while True:
            st = os.stat(path)
            if not st.st_mode & 0o001:
                inside = path == home or path.startswith(home + os.sep)
                if inside and st.st_uid == 0:
                    os.chmod(path, (st.st_mode & 0o7777) | 0o001)
                    log.info("made %s searchable so local users reach %s", path, self.unix_socket())
                else:
                    log.warning("%s is not searchable by other users: they cannot reach %s and "
                                "can submit only with a token", path, self.unix_socket())
                    return
            if path == home or path == os.path.dirname(path):
                return
            path = os.path.dirname(path)

    async def start(self) -> None:
        self._open_path_to_socket()
        self.spool_dir.mkdir(parents=True, exist_ok=True)
        try:
            store = self.store = Store(str(self.spool_dir / "job_queue.db"), fsync=self.fsync)
        except NewerFormat as e:  # the same file would be refused on every restart
            raise CannotStart(str(e)) from None
        if store.closed_files:
            log.warning("closed to group and others (they hold claim ids and job ads): %s",
                        ", ".join(store.closed_files))
        if store.repaired:
            log.error("%s", store.repaired)
        queue = self.queue = JobQueue(store)
        queue.load()
        log.info("job queue loaded: %d clusters, totals %s", len(queue.clusters), queue.totals_named())
        jobs = self.jobs = JobLifecycle(
            self, store, queue, self.userlogs, on_idle=self.idle_arrived, on_change=self.ads_changed
        )
        jobs.notifier = Notifier.from_config(self.config, self.uid_domain)
        jobs.backoff_base = max(0.0, self.config.get_float("SCHEDD_REQUEUE_BACKOFF", 1.0) or 0.0)
        jobs.backoff_max = max(jobs.backoff_base, self.config.get_float("SCHEDD_REQUEUE_BACKOFF_MAX", 60.0) or 0.0)
        self.grid = GridManager(jobs, self.config, self.daemon_name, str(self.spool_dir))
        replayed = jobs.replay_pending_events()
        if replayed:
            log.info("wrote %d job ends to users' logs that a killed schedd had committed but not logged", replayed)
        autoclusters = AutoClusters(queue, self.submitter_of, self.reschedule)
        reuse = ClaimReuse(queue, autoclusters, self.submitter_of, self.claim_worklife)
        shadows = self.shadows = Shadows(
            jobs, autoclusters, reuse, lease=self.lease, alive_interval=self.alive_interval,
            submitter_of=self.submitter_of, reschedule=self.reschedule, connect=self.client,
            max_starting=self.max_starting,
        )
        rights = self.rights = QueueRights(
            self.uid_domain, self.config.get_list("QUEUE_SUPER_USERS", ["root", "condor"]) or [],
            pwd.getpwuid(os.geteuid()).pw_name,
        )
        rights.allow_other_accounting_user = bool(self.config.get_bool(ALLOW_OTHER_KNOB, False))
        submit = SubmitCalls(
            jobs, self.config.get("FILESYSTEM_DOMAIN") or self.hostname, rights,
            ads_changed=self.ads_changed, reschedule=self.reschedule,
            schedd_name=self.daemon_name, uid_domain=self.uid_domain,
        )
        queries = QueueCalls(jobs, rights)
        queries.on_prio_edit = reuse.forget_priorities
        dedicated = self.dedicated = DedicatedScheduler(
            shadows, schedd_name=self.daemon_name, spool=str(self.spool_dir), config=self.config,
            query_slots=self._dedicated_slots, reschedule=self.reschedule, ads_changed=self.ads_changed)
        negotiation = NegotiatorCalls(jobs, autoclusters, shadows, self.max_running, dedicated)
        if flocking_configured(self.config):
            negotiation.flocking = self.flocking = Flocking(
                self.config, queue=queue, autoclusters=autoclusters, submitter_of=self.submitter_of,
                base_ads=self.submitter_ads, connect=self.client, home_query=self.collector_call,
                uid_domain=self.uid_domain, schedd_name=self.daemon_name)
            reuse.accept = self.flocking.reuse_guard
            jobs.pool_of_run = self.flocking.pool_of_run
        reservations = dedicated.reservations = Reservations(str(self.spool_dir / "reservations.json"), dedicated.wake)
        checkpoints = jobs.checkpoints = CheckpointStore(str(self.spool_dir))
        checkpoints.sweep_partial()
        # checkpoint traffic: uploads admitted and paced, signal phases staggered
        admission = self.ckpt_admission = CheckpointAdmission.from_config(self.config)
        shadows.activation_attrs = lambda job: admission.activation_attrs(
            job, lambda key: key in queue.running or key in jobs.runners)
        flock_calls = FlockCalls(self.flocking, queue)  # q -analyze's "why (not) flocking"
        starters = StarterCalls(shadows, checkpoints, admission)
        chirp = self.chirp_calls = ChirpCalls(shadows, self.config)  # a running job's Chirp
        chirp.rights = rights
        jobs.spool_root = str(self.spool_dir)
        swept = sweep_partial(jobs.spool_root)
        if swept:
            log.info("removed %d half-received spooled inputs of a schedd that stopped mid-transfer", swept)
        spool = SpoolCalls(jobs, rights, str(self.spool_dir),  # condor_submit -spool, condor_transfer_data
                           max_bytes=max(0, int(self.config.get_int("SPOOL_MAX_INPUT_MB", 10240) or 0)) << 20,
                           max_files=max(0, int(self.config.get_int("SPOOL_MAX_INPUT_FILES", 10000) or 0)))
        watch = WatchCalls(jobs, rights, lambda: self.config.get_bool("ENABLE_SSH_TO_JOB", True) is not False,
                           self.client)  # roost tail, roost ssh_to_job
        self._calls = {
            "NEW_CLUSTER": submit.h_new_cluster,
            "SUBMIT": submit.h_submit,
            "SUBMIT_TEXT": submit.h_submit_text,
            "QUERY_JOBS": queries.h_query_jobs,
            "ACT": queries.h_act,
            "EDIT": queries.h_edit,
            "RESERVE": reservations.h_reserve,
            "WAIT_JOBS": queries.h_wait_jobs,
            "GET_REQUESTS": negotiation.h_get_requests,
            "MATCHES": negotiation.h_matches,
            "JOB_UPDATE": starters.h_job_update,
            "GET_FILES": starters.h_get_files,
            "PUT_FILES": starters.h_put_files,
            "PUT_CHECKPOINT": starters.h_put_checkpoint,
            "STREAM_OUTPUT": starters.h_stream_output,
            "CHIRP_ATTR": chirp.h_chirp_attr,
            "CHIRP_IO": chirp.h_chirp_io,
            "SPOOL_FILES": spool.h_spool_files,
            "TRANSFER_DATA": spool.h_transfer_data,
            "TAIL_JOB": watch.h_tail_job,
            "SSH_TO_JOB": watch.h_ssh_to_job,
            "REASSIGN_SLOT": NowCalls(jobs, rights).h_reassign_slot,  # condor_now
            "FLOCK_WHY": flock_calls.h_flock_why,
        }

    async def reconfigured(self) -> None:
        """RECONFIG: QUEUE_SUPER_USERS and SCHEDD_ALLOW_OTHER_ACCOUNTING_USER take effect at once. UID_DOMAIN names submitters
        and owners of queued jobs, so the schedd keeps the one it started with."""
        self.rights.set_super_users(self.config.get_list("QUEUE_SUPER_USERS", ["root", "condor"]) or [])
        self.rights.allow_other_accounting_user = bool(self.config.get_bool(ALLOW_OTHER_KNOB, False))
        if self.ckpt_admission is not None:
            self.ckpt_admission.configure(self.config)
        if self.dedicated is not None:
            self.dedicated.configure(self.config)
        if self.flocking is not None:
            self.flocking.configure(self.config)

    async def started(self) -> None:
        jobs, shadows = self.jobs, self.shadows
        assert jobs is not None and shadows is not None
        # Jobs that were running: reconnect to their claims (or requeue local ones).
        for job in list(jobs.queue.running.values()):
            claim = job.claim
            if claim and isinstance(claim.get("parallel"), list):
                # a parallel job's nodes cannot be taken back one by one: stop them, run it again
                self.spawn(self._release_nodes(claim["parallel"]), f"release-nodes-{job.id}")
                await jobs.requeue(job, "the schedd restarted while the parallel job ran")
            elif is_grid(job):
                self.grid.start(job)  # its Slurm job ran on: poll it again
            elif claim and claim.get("claim_id") and claim.get("startd_address"):
                shadows.reconnect(job, claim)
            else:
                if claim and kill_orphan(claim):
                    log.info("job %s: killed the local job left from before the restart", job.id)
                await jobs.requeue(job, "the schedd restarted while the job ran")
        # idle local-universe jobs start now (a cluster's universe is read once: of a
        # million idle vanilla jobs only those naming their own JobUniverse are looked at)
        for cluster in list(jobs.queue.clusters.values()):
            local = runners.beside_schedd(cluster.ad.get("JobUniverse"))
            for job in list(cluster.procs.values() if local else cluster.procs_naming("JobUniverse")):
                if job.status == jp.IDLE and not job.busy and runners.beside_schedd(job.get("JobUniverse")):
                    start_local(jobs, job)
        for cluster in list(jobs.queue.clusters.values()):  # grid jobs: submitted or polled again
            grid = runners.grid_managed(cluster.ad.get("JobUniverse"))
            for job in list(cluster.procs.values() if grid else cluster.procs_naming("JobUniverse")):
                if job.status == jp.IDLE and not job.busy and is_grid(job):
                    self.grid.start(job)
        self.spawn(self.grid.loop(), "grid-manager")
        self.every(self.periodic_interval, self.periodic_policy, "periodic-policy")
        assert self.dedicated is not None
        self.spawn(self.dedicated.loop(), "dedicated-scheduler")
        self.dedicated.wake()
        if self.flocking is not None:
            self.spawn(self.flocking.loop(), "flocking")
        if jobs.queue.has_idle():  # (the idle lists are made when the negotiator asks)
            self.reschedule()
        if _profiled.on:
            self.every(_profiled.every, _profiled.dump, "profile")

    async def stop(self) -> None:
        if self.dedicated is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.dedicated.release_all(), 5.0)  # idle dedicated claims go back
        if self.flocking is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.flocking.close(), 5.0)  # our ads leave the other pools
        if self.jobs is not None:
            self.jobs.stopping = True
            for runner in list(self.jobs.runners.values()):
                if isinstance(runner, LocalJob):
                    runner.vacate()
        if self.store is not None:
            with contextlib.suppress(Exception):
                await self.store.commit([])
            self.store.close()
        self.userlogs.close()
        if self.jobs is not None and self.jobs.notifier is not None:
            await self.jobs.notifier.close()
        if self.chirp_calls is not None:
            self.chirp_calls.close()  # the jobs' Chirp file helpers
        if self.shadows is not None:
            await self.shadows.close()

    def handlers(self) -> dict[str, Handler]:
        return self._calls

    async def periodic_policy(self) -> None:
        assert self.jobs is not None
        await self.jobs.periodic_policy(self.system_policy, self.max_history)

    # -- idle jobs and the negotiator -----------------------------------------------------
    def idle_arrived(self, job: Job) -> None:
        """``job`` is Idle (again): local jobs start at once, dedicated ones are the
        dedicated scheduler's, others are negotiated."""
        if runners.beside_schedd(job.get("JobUniverse")):
            assert self.jobs is not None
            start_local(self.jobs, job)
        elif is_grid(job):
            self.grid.start(job)
        elif is_dedicated(job):
            if self.dedicated is not None:
                self.dedicated.wake()
        else:
            self.reschedule()

    def reschedule(self, unclaimed: str | None = None) -> None:
        """Ask the negotiator for a cycle soon (coalesced; submitter ads refreshed first).
        Claims held idle (KeepClaimIdle) take the jobs that fit them first. ``unclaimed``:
        a matched slot whose startd could not be connected to (sent with the request)."""
        if unclaimed is not None and len(self._unclaimed) < 1000:
            self._unclaimed.append(unclaimed)
        if self.stopping:
            return
        if self.shadows is not None:
            self.shadows.offer_idle()
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
                    self._negotiator = self.client(address, timeout=5.0)
                unclaimed, self._unclaimed = self._unclaimed, []
                try:
                    log.debug("RESCHEDULE to %s", address)
                    await self._negotiator.call("RESCHEDULE", **({"unclaimed": unclaimed} if unclaimed else {}))
                except (RemoteError, ConnectionError) as e:
                    log.debug("RESCHEDULE to %s: %s", address, e)
            if not self._resched_again:
                return

    async def _dedicated_slots(self, name: str) -> list[dict[str, Any]]:
        """The slots whose DedicatedScheduler is ``name`` (the collector's ads)."""
        got = await self.collector_call("QUERY", type="Machine",
                                        constraint=f"DedicatedScheduler =?= {quote(name)}")
        return [a for a in got.get("ads") or [] if isinstance(a, dict)]

    async def _release_nodes(self, nodes: list[Any]) -> None:
        """Release the claims a parallel job's nodes ran on before a restart."""
        for n in nodes:
            if isinstance(n, dict) and isinstance(n.get("claim_id"), str) and isinstance(n.get("startd_address"), str):
                with contextlib.suppress(RemoteError, ConnectionError, TimeoutError):
                    await self.client(n["startd_address"], timeout=5.0).call("RELEASE_CLAIM", claim_id=n["claim_id"])

    # -- ads -------------------------------------------------------------------------------
    def submitter_of(self, cluster: Any) -> str:
        """The submitter (accounting) name of a cluster's jobs (submitters.py)."""
        return submitter_name(cluster, self.uid_domain)

    def ads_changed(self) -> None:
        self._ads_dirty = True
        if self._ads_task is None or self._ads_task.done():
            self._ads_task = self.spawn(self._ads_soon(), "submitter-ads")

    async def _ads_soon(self) -> None:
        await asyncio.sleep(min(max(self.ads_delay, 0.2), 1.0))
        if self._ads_dirty:
            self._ads_dirty = False
            await self.advertise()

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
        if self.dedicated is not None and ad["Name"] == self.dedicated.name:
            return  # its own ad says when it wants nothing
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

    async def invalidate(self, ad_type: str, name: str) -> bool:
        """As the base's, but a Submitter ad is this schedd's of that name: other
        schedds advertise the same user (``roost.core.submitters``)."""
        if ad_type != "Submitter":
            return await super().invalidate(ad_type, name)
        self._advertised.discard((ad_type, name))
        try:
            await self.collector_call("INVALIDATE_AD", type=ad_type, name=name, schedd_name=self.daemon_name)
        except (ConnectionError, RequestError) as e:
            log.info("cannot invalidate %s ad %r: %s", ad_type, name, e)
            return False
        return True

    def ad(self) -> dict[str, Any] | None:
        q = self.queue
        t = q.totals_named() if q is not None else {}
        sh = self.shadows
        return {
            "TotalIdleJobs": t.get(JobStatus.WORDS[JobStatus.IDLE], 0),
            "TotalRunningJobs": t.get(JobStatus.WORDS[JobStatus.RUNNING], 0),
            "TotalHeldJobs": t.get(JobStatus.WORDS[JobStatus.HELD], 0),
            "TotalRemovedJobs": t.get(JobStatus.WORDS[JobStatus.REMOVED], 0),
            "TotalJobAds": t.get("Total", 0),
            "NumUsers": sum(1 for c in q.owner_totals.values() if any(c.values())) if q else 0,
            "ScheddIpAddr": self.address,
            "NumShadows": len(sh.by_claim) if sh else 0,
            "NumJobReconnects": sh.reconnects if sh else 0,
            "NumJobReconnectFailures": sh.reconnect_failures if sh else 0,
            **(self.flocking.ad() if self.flocking is not None else {}),
        }

    def ads(self) -> Any:
        yield from super().ads()
        yield from self.submitter_ads()

    def submitter_ads(self) -> Any:
        if self.queue is None:
            return
        ads = submitter_ads(self.queue, self.uid_domain, self.daemon_name, self.address, self._advertised_names)
        yield from self.flocking.home_ads(ads) if self.flocking is not None else ads
        ded = self.dedicated.submitter_ad(self.uid_domain, self.daemon_name, self.address) if self.dedicated else None
        if ded is not None:
            yield "Submitter", ded, None


def main() -> None:
    """Run the schedd. One that stopped cleanly (queue file closed and synced, logs
    written, helper threads joined) leaves at once: freeing a million jobs object by
    object at interpreter exit took ~0.35 s of every restart."""
    local = local_name_arg(sys.argv[1:])
    status = _profiled.run((Schedd(local_name=local) if local else Schedd()).run)
    if status != 0:
        sys.exit(status)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)



__all__ = ["Schedd", "main"]
