"""Parallel-universe runs: one job's nodes on the dedicated scheduler's claims.

A parallel job (``universe = parallel``: its cluster's procs together, each proc
``machine_count`` nodes; or any job with ``+WantDedicated = true``, one node) runs as
one unit. Every node runs on its own claim, activated with its proc's ad made for that
node (``node_ad``: ``$(Node)`` filled in, HTCondor's ``_CONDOR_PROCNO``,
``_CONDOR_NPROCS`` and ``_CONDOR_REMOTE_SPOOL_DIR`` in its environment). The job ends
when node 0 exits, or with ``ParallelShutdownPolicy = "WAIT_FOR_ALL"`` when every node
has; each proc's exit is that of its first node (node 0's for a one-proc job).

A node that is lost (its host died, its claim was cut), vacated, or could not start
stops every other node and the whole job goes back to the queue: the nodes of an MPI
program depend on each other, so a job with one node missing is useless. Why goes to
the user's log (a shadow exception per proc) and to the schedd's log.

``NodeShadow`` is a shadow that holds a dedicated claim across jobs (the dedicated
scheduler's, ``dedicated.py``) and runs one node at a time on it; starters reach it as
any shadow (``Shadows.serving``), and see the node's ad through ``NodeJob``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import shutil
import time
from collections.abc import Callable
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.localuniverse import run_as
from roost.daemons.schedd.shadow import MAX_TRANSFER_RETRIES, Shadow, Shadows
from roost.eventlog import ExecuteEvent, NodeExecuteEvent, NodeTerminatedEvent, Usage
from roost.net.adwire import obj_to_ad
from roost.net.errors import RemoteError

log = logging.getLogger("roost.schedd")

PLACEHOLDER = "#pArAlLeLnOdE#"  # what condor_submit (and roost's) leaves for $(Node)
STOP_WAIT = 30.0  # seconds to wait for a stopped node's exit report before giving up on it


def node_ad(ad: dict[str, Any], node: int, nprocs: int, *, spool_dir: str, host: str, scheduler: str = "",
            secret: str = "", run_id: str = "", hosts: list[str] | None = None) -> dict[str, Any]:
    """The ad node ``node`` of ``nprocs`` runs with: the proc's (wire-form) ad with the
    node number for ``$(Node)``, ``Node``, ``Scheduler`` (the dedicated scheduler's name:
    what a dedicated slot's RANK and MaxJobRetirementTime look for), and HTCondor's node
    environment; ``host``: the address its host is reached at (``ROOST_NODE_HOST``, for
    an MPI launcher). ``secret`` and ``run_id`` are this run's, shared by its nodes only
    (``_ROOST_PARALLEL_SECRET``, ``_ROOST_PARALLEL_RUN``): an MPI launcher's agents prove
    it to each other. The ad goes to the startd, never into the queue (where any user
    could read it). ``hosts``: every node's host in node order (``_ROOST_PARALLEL_HOSTS``,
    space-separated: node 0's host list)."""
    out = {k: (v.replace(PLACEHOLDER, str(node)) if isinstance(v, str) and PLACEHOLDER in v else v)
           for k, v in ad.items()}
    out["Node"] = node
    if scheduler:
        out["Scheduler"] = scheduler
    # lazy: roost.submit (~30-60 ms of imports) loads with the first parallel node, not at start-up
    from roost.submit.arglist import ad_environment, join_v2_raw

    env = {"_CONDOR_PROCNO": str(node), "_CONDOR_NPROCS": str(nprocs), "_CONDOR_REMOTE_SPOOL_DIR": spool_dir,
           "ROOST_NODE_HOST": host}
    if hosts:
        env["_ROOST_PARALLEL_HOSTS"] = " ".join(hosts)
    if secret:
        env["_ROOST_PARALLEL_SECRET"] = secret
        env["_ROOST_PARALLEL_RUN"] = run_id
    if "Environment" not in out and "Env" in out:  # env = A=1;B=2: one V2 Environment for both
        out["Environment"] = join_v2_raw([f"{k}={v}" for k, v in ad_environment(out.get)])
        out.pop("Env")
        out.pop("EnvDelim", None)
    words = join_v2_raw([f"{k}={v}" for k, v in env.items()])
    old = out.get("Environment")
    out["Environment"] = f"{old} {words}" if isinstance(old, str) and old.strip() else words
    return out


def host_of(address: str) -> str:
    """The host part of a ``host:port`` daemon address ("" for a Unix socket path)."""
    if address.startswith("/") or ":" not in address:
        return ""
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


class NodeJob:
    """A proc as one of its nodes sees it: reads (``get``, ``merged``) see the node's ad,
    so the starter's calls fetch and return that node's files (``out.$(Node)``)."""

    __slots__ = ("of", "node", "ad")

    def __init__(self, job: Job, node: int, ad: dict[str, Any]) -> None:
        self.of = job  # the proc: state changes go to it
        self.node = node
        self.ad = ad

    id = property(lambda self: self.of.id)
    key = property(lambda self: self.of.key)
    cluster = property(lambda self: self.of.cluster)
    proc = property(lambda self: self.of.proc)
    owner = property(lambda self: self.of.owner)
    status = property(lambda self: self.of.status)

    def get(self, attr: str, default: Any = None) -> Any:
        if attr == "JobStatus":
            return self.of.status
        return self.ad.get(attr, default)

    def merged(self) -> dict[str, Any]:
        out = dict(self.ad)
        out["JobStatus"] = self.of.status
        return out

    def classad(self) -> Any:
        return obj_to_ad(self.merged())


class NodeShadow(Shadow):
    """A dedicated claim: requested once, kept alive, and activated with one node after
    another (of any user's parallel job) until the dedicated scheduler releases it."""

    def __init__(self, shadows: Shadows, startd_address: str, claim_id: str, slot_name: str,
                 slot_ad: dict[str, Any] | None, lease: float, on_lost: Callable[[NodeShadow], None]) -> None:
        super().__init__(shadows, startd_address, claim_id, slot_name, slot_ad, lease)
        self.on_lost = on_lost
        self.node_obj: dict[str, Any] = {}
        self.lead = False  # the first node of its proc: its reports speak for the proc
        self.gone = False  # the claim is lost or released

    async def claim(self, request_ad: dict[str, Any]) -> None:
        """REQUEST_CLAIM with the dedicated scheduler's request; then keep it alive."""
        resp = await self.client.call("REQUEST_CLAIM", claim_id=self.claim_id, job_ad=request_ad,
                                      schedd_address=self.jobs.host.address, lease=self.lease,
                                      slot_name=self.slot_name)
        self._claimed(resp)
        self.shadows.by_claim[self.claim_id] = self
        self._keepalive = asyncio.ensure_future(self._keepalive_loop())

    def _job_ad(self, job: Any) -> dict[str, Any]:
        ad = dict(self.node_obj)
        ad["User"] = self.shadows.submitter_of(job.cluster)
        return ad

    async def start_node(self, node_job: NodeJob) -> dict[str, Any]:
        """ACTIVATE_CLAIM with the node (its answer); raises when refused."""
        self.job = node_job  # type: ignore[assignment]  # read as a Job by the starter's calls
        self.node_obj = node_job.ad
        self.exit = asyncio.get_running_loop().create_future()
        self.transfer_error = None
        self.bytes_sent = self.bytes_recvd = 0
        try:
            got = await self._activate(node_job)  # type: ignore[arg-type]
        except BaseException:
            self.job = None
            self.exit = None
            raise
        self.started_at = time.time()
        self.jobs_run += 1
        return got

    async def node_exit(self) -> dict[str, Any]:
        """The node's exit report (``state``: exited, failed, vacated or lost)."""
        assert self.exit is not None
        try:
            return await self.exit
        finally:
            self.exit = None
            self.job = None

    async def stop_node(self) -> None:
        """Stop the node running here (its kill signal, then SIGKILL after its vacate time)."""
        job = self.job
        if job is not None and self.exit is not None and not self.exit.done():
            await self._deactivate(job)  # type: ignore[arg-type]

    def report(self, update: dict[str, Any]) -> None:
        if update.get("state") in ("exited", "failed", "vacated"):
            super().report(update)
            return
        node_job = self.job
        if not self.lead or not isinstance(node_job, NodeJob):
            return  # usage and suspension are the proc's: its first node reports them
        self.job = node_job.of
        try:
            super().report(update)
        finally:
            self.job = node_job  # type: ignore[assignment]

    def _lost(self, why: str) -> None:
        log.warning("dedicated claim on %s lost: %s", self.slot_name, why)
        self.gone = True
        self.shadows.by_claim.pop(self.claim_id, None)
        if self.exit is not None and not self.exit.done():
            self.exit.set_result({"state": "lost", "error": why})
        self.on_lost(self)

    async def release(self) -> None:
        """Give the claim back to the startd (and so to the opportunistic pool)."""
        self.gone = True
        self.shadows.by_claim.pop(self.claim_id, None)
        if self._keepalive is not None:
            self._keepalive.cancel()
        with contextlib.suppress(RemoteError, ConnectionError, TimeoutError):
            await self.client.call("RELEASE_CLAIM", claim_id=self.claim_id, _timeout=5.0)


def _give_up(sh: NodeShadow) -> None:
    """Stop using a claim at once (the dedicated scheduler drops it) and release it."""
    if not sh.gone:
        sh.gone = True
        sh.jobs.host.spawn(sh.release(), f"release-{sh.slot_name}")


def remote_spool_dir(spool: str, job: str) -> str:
    """``_CONDOR_REMOTE_SPOOL_DIR``: a directory of the submit side every node of the job
    (a parallel cluster, or a lone dedicated proc ``C.P``) reaches through Chirp (an MPI
    launcher's contact files)."""
    return os.path.join(spool, "parallel", job)


class ParallelRun:
    """One parallel job running on its claims: the ``Runner`` of each of its procs."""

    def __init__(self, shadows: Shadows, procs: list[Job], nodes: list[tuple[Job, NodeShadow]], spool: str,
                 on_end: Callable[[ParallelRun], None], scheduler: str = "", *, key: str) -> None:
        self.shadows = shadows
        self.jobs = shadows.jobs
        self.procs = procs
        self.nodes = nodes  # node i: (its proc, its claim)
        self.cluster = procs[0].cluster
        self.id = key  # the dedicated scheduler's key: the cluster, or C.P for a lone +WantDedicated proc
        self.spool_dir = remote_spool_dir(spool, self.id)
        self.on_end = on_end
        self.started_at = 0.0
        self._stop = asyncio.Event()
        self._pending: dict[asyncio.Future[Any], int] = {}  # nodes still running when the job ended
        self.scheduler = scheduler
        self.secret = secrets.token_hex(32)  # this run's: its nodes' launch agents prove it
        self.run_id = secrets.token_hex(6)
        self.stopped_by = ""  # why the run was stopped from outside (a hold, a removal, an overrun)
        self._stopped = False
        self._ends: dict[int, dict[str, Any]] = {}
        self.completed = False  # it ended by its shutdown policy (its length teaches the estimates)

    @property
    def claims(self) -> list[NodeShadow]:
        return [sh for _j, sh in self.nodes]

    def vacate_job(self, job: Job) -> None:
        """A proc was removed or held: every node stops (the job cannot run with one gone)."""
        self.stop("another proc of its parallel job was held or removed")

    def stop(self, why: str) -> None:
        """Stop every node and settle the job (requeued, unless held or removed)."""
        self.stopped_by = self.stopped_by or why
        self._stop.set()

    def watch_shadow(self, job: Job) -> NodeShadow | None:
        """The claim ``roost tail``/``ssh_to_job`` of ``job`` reach: its first node's."""
        return next((sh for j, sh in self.nodes if j is job and sh.job is not None), None)

    def _make_spool(self) -> None:
        shutil.rmtree(self.spool_dir, ignore_errors=True)  # what an earlier run (a crashed schedd's) left
        os.makedirs(self.spool_dir, mode=0o700)
        ids = run_as(self.cluster.owner)
        if ids is not None:
            os.chown(self.spool_dir, ids[0], ids[1])
        os.chmod(self.spool_dir, 0o700)

    async def run(self) -> None:
        try:
            await self._run()
        except Exception:
            log.exception("parallel job %d: its run failed", self.cluster.id)
            with contextlib.suppress(Exception):
                await self._stop_all()
            for job in self.procs:
                if self.jobs.runners.get(job.key) is self:
                    await self.jobs.requeue(job, "the schedd's parallel run failed")
                elif job.cluster.holds(job) and job.status == jp.IDLE and job.busy:
                    job.busy = False
                    self.jobs.queue.give_back_idle(job)
        finally:
            await asyncio.to_thread(shutil.rmtree, self.spool_dir, True)
            self.on_end(self)

    async def _run(self) -> None:
        n = len(self.nodes)
        await asyncio.to_thread(self._make_spool)
        node_jobs = []
        hosts = [host_of(sh.startd_address) or "localhost" for _j, sh in self.nodes]
        for i, (job, sh) in enumerate(self.nodes):
            ad = node_ad(job.merged(), i, n, spool_dir=self.spool_dir, host=host_of(sh.startd_address),
                         scheduler=self.scheduler, secret=self.secret, run_id=self.run_id, hosts=hosts)
            node_jobs.append(NodeJob(job, i, ad))
        firsts = {}
        for i, (job, _sh) in enumerate(self.nodes):
            firsts.setdefault(job.key, i)
        for i, (_job, sh) in enumerate(self.nodes):
            sh.lead = firsts[_job.key] == i
        answers = await asyncio.gather(*(sh.start_node(nj) for (_j, sh), nj in zip(self.nodes, node_jobs)),
                                       return_exceptions=True)
        failed = [(i, a) for i, a in enumerate(answers) if isinstance(a, BaseException)]
        if failed:
            i, err = failed[0]
            why = f"node {i} could not start on {self.nodes[i][1].slot_name}: {err}"
            log.warning("parallel job %d: %s", self.cluster.id, why)
            await self._stop_all()
            for k, (_job, sh) in enumerate(self.nodes):
                sh.job = None
                sh.exit = None
                if any(k == i for i, _e in failed) and not sh.gone:
                    _give_up(sh)  # a claim that failed us: not used again
            for job in self.procs:
                if job.cluster.holds(job) and job.status == jp.IDLE:
                    job.busy = False
                    self.jobs.queue.give_back_idle(job)
            return
        self.started_at = now = time.time()
        for job in self.procs:
            if not job.cluster.holds(job) or job.status != jp.IDLE:
                continue  # removed or held while the nodes started: stopped below
            i = firsts[job.key]
            sh = self.nodes[i][1]
            claim = {"startd_address": sh.startd_address, "slot_name": sh.slot_name,
                     "parallel": [{"startd_address": s.startd_address, "claim_id": s.claim_id}
                                  for j, s in self.nodes if j is job]}
            user = answers[i].get("user") if isinstance(answers[i], dict) else None
            await self.jobs.mark_running(job, sh.slot_name, self, claim,
                                         {"ExecuteUser": user} if isinstance(user, str) else None)
            events: list[Any] = [ExecuteEvent(job.cluster.id, job.proc, now, execute_host=f"<{sh.startd_address}>",
                                              slot_name=sh.slot_name)]
            events += [NodeExecuteEvent(job.cluster.id, job.proc, now, node=k, execute_host=f"<{s.startd_address}>",
                                        slot_name=s.slot_name) for k, (j, s) in enumerate(self.nodes) if j is job]
            self.jobs.write_events(job, events)
        if any(self.jobs.runners.get(j.key) is not self for j in self.procs):
            self.stop("a proc of the parallel job was held or removed while its nodes started")
        ends, bad = await self._wait()
        await self._stop_all()
        self._ends = ends
        await self._settle(ends, bad)

    async def _wait(self) -> tuple[dict[int, dict[str, Any]], tuple[int, dict[str, Any]] | None]:
        """Until the job is over by its shutdown policy, a node fails, or it is stopped:
        each ended node's report, and the first abnormal one."""
        all_of = str(self.procs[0].get("ParallelShutdownPolicy") or "").upper() == "WAIT_FOR_ALL"
        waits = {asyncio.ensure_future(sh.node_exit()): i for i, (_j, sh) in enumerate(self.nodes)}
        stop = asyncio.ensure_future(self._stop.wait())
        ends: dict[int, dict[str, Any]] = {}
        bad: tuple[int, dict[str, Any]] | None = None
        pending: set[asyncio.Future[Any]] = set(waits) | {stop}
        try:
            while bad is None and not stop.done():
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for f in done:
                    if f is stop:
                        continue
                    i = waits[f]
                    update = ends[i] = f.result()
                    self._node_ended(i, update)
                    if update.get("state") != "exited" and bad is None:
                        bad = (i, update)
                if 0 in ends and not all_of or len(ends) == len(self.nodes):
                    break
        finally:
            stop.cancel()
        if not self._stop.is_set():
            self.stopped_by = ""  # over by its shutdown policy or a failed node: a later hold changes nothing
        self._stopped = self._stop.is_set()
        self._pending = {f: waits[f] for f in pending if f is not stop}
        return ends, bad

    def _node_ended(self, i: int, update: dict[str, Any]) -> None:
        job, sh = self.nodes[i]
        log.info("parallel job %d: node %d on %s %s%s", self.cluster.id, i, sh.slot_name, update.get("state"),
                 f": {update.get('error')}" if update.get("error") else "")
        if update.get("state") != "exited" or not job.cluster.holds(job):
            return
        code, sig = update.get("exit_code"), update.get("exit_signal")
        sig = sig if isinstance(sig, int) and not isinstance(sig, bool) and sig > 0 else None
        usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
        run = Usage(int(usage.get("RemoteUserCpu") or 0), int(usage.get("RemoteSysCpu") or 0))
        self.jobs.write_events(job, [NodeTerminatedEvent(
            job.cluster.id, job.proc, time.time(), node=i, return_value=None if sig else int(code or 0), signal=sig,
            run_remote_usage=run, total_remote_usage=run)])

    async def _stop_all(self) -> None:
        """Stop every node still running, and wait (a while) for their reports."""
        pending = self._pending
        await asyncio.gather(*(sh.stop_node() for _j, sh in self.nodes), return_exceptions=True)
        if pending:
            _done, still = await asyncio.wait(list(pending), timeout=STOP_WAIT)
            for f in still:
                f.cancel()
                _give_up(self.nodes[pending[f]][1])  # a node that did not report: its claim is not reused
        self._pending = {}

    async def _settle(self, ends: dict[int, dict[str, Any]], bad: tuple[int, dict[str, Any]] | None) -> None:
        """Each proc's end: removed/held ones settled, a failed node's job requeued (or
        held, when the node could not run its program at all), else its exit."""
        jobs = self.jobs
        firsts: dict[tuple[int, int], int] = {}
        for i, (job, _sh) in enumerate(self.nodes):
            firsts.setdefault(job.key, i)
        for job in self.procs:
            if jobs.runners.get(job.key) is not self or not job.cluster.holds(job):
                continue
            lead = self.nodes[firsts[job.key]][1]
            if job.status == jp.REMOVED:
                await jobs.finish_removed(job)
            elif job.status == jp.HELD:
                await jobs.clear_claim(job)
            elif bad is not None:
                await self._failed(job, *bad)
            elif self._stopped:
                await jobs.requeue(job, self.stopped_by or "its parallel job was stopped")
            elif (held := self._output_trouble(job)) is not None:
                await jobs.hold(job, held[1][:2000], held[0], 2 if held[0] == jp.HOLD_TRANSFER_OUTPUT_ERROR else 0,
                                vacate=False)
            else:
                i = firsts[job.key]
                update = dict(ends.get(i) or ends.get(0) or {"state": "exited", "exit_code": 0})
                update["usage"] = self._usage(job, ends)
                self.completed = True
                await lead._exited(job, update)

    async def _failed(self, job: Job, i: int, update: dict[str, Any]) -> None:
        """Node ``i`` failed: the job is requeued (held when the node's program could not be
        run at all, or after MAX_TRANSFER_RETRIES infrastructure faults in a row)."""
        jobs = self.jobs
        sh = self.nodes[i][1]
        why = f"node {i} on {sh.slot_name}: {update.get('error') or update.get('state')}"
        log.warning("parallel job %s: %s; every node stopped", job.id, why)
        faults = job.get("NumShadowExceptions", 0)
        faults = faults if isinstance(faults, int) else 0
        if sh.transfer_error is not None:
            await jobs.hold(job, sh.transfer_error[1][:2000], sh.transfer_error[0], 0, vacate=False)
        elif update.get("state") == "failed" and update.get("retry") is not True:
            await jobs.hold(job, f"Error from {sh.slot_name}: {update.get('error') or 'node could not start'}",
                            jp.HOLD_FAILED_TO_CREATE_PROCESS, 0, vacate=False)
        elif update.get("state") == "vacated":
            await jobs.evicted(job, update)
        elif faults + 1 >= MAX_TRANSFER_RETRIES:
            await jobs.hold(job, f"Parallel job failed {faults + 1} times; last: {why}"[:2000],
                            jp.HOLD_TRANSFER_INPUT_ERROR, 0, vacate=False)
        else:
            await jobs.requeue(job, f"Parallel job failed: {why}")

    def _output_trouble(self, job: Job) -> tuple[int, str] | None:
        """A node whose files did not all come back holds the job, as a serial job's would."""
        for j, sh in self.nodes:
            if j is job and sh.transfer_error is not None:
                return sh.transfer_error
        for k, (j, sh) in enumerate(self.nodes):
            err = self._ends.get(k, {}).get("output_error")
            if j is job and isinstance(err, str) and err:
                return jp.HOLD_TRANSFER_OUTPUT_ERROR, f"Error from {sh.slot_name}: Failed to transfer output files: {err}"
        return None

    def _usage(self, job: Job, ends: dict[int, dict[str, Any]]) -> dict[str, Any]:
        """A proc's usage: the run's wall time, its nodes' CPU times summed and the
        largest of their memory figures, as HTCondor adds up a parallel job's nodes."""
        out: dict[str, Any] = {"RemoteWallClockTime": max(0.0, time.time() - self.started_at),
                               "RemoteUserCpu": 0.0, "RemoteSysCpu": 0.0}
        for i, (j, _sh) in enumerate(self.nodes):
            usage = ends.get(i, {}).get("usage")
            if j is not job or not isinstance(usage, dict):
                continue
            for k in ("RemoteUserCpu", "RemoteSysCpu"):
                v = usage.get(k)
                if type(v) in (int, float):
                    out[k] += v
            for k in ("MemoryUsage", "ResidentSetSize", "DiskUsage", "ImageSize"):
                v = usage.get(k)
                if type(v) in (int, float) and v > out.get(k, -1):
                    out[k] = v
        return out


__all__ = ["PLACEHOLDER", "NodeJob", "NodeShadow", "ParallelRun", "host_of", "node_ad", "remote_spool_dir"]
