"""A shadow taking a running job's claim back after the schedd restarted (RECONNECT).

Split out of shadow.py (issue 28): what only a restarted schedd does. The claim and
its job outlived the old schedd (the startd keeps them for the job's lease); a new
shadow asks the startd for the claim by its id, trying again while the startd does
not answer (it may be restarting too, its jobs carrying on under their keepers) until
the lease runs out, and then serves the claim as any shadow does, from the job's
current run on (``resume``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.jobqueue import Job
from roost.eventlog import ReconnectedEvent
from roost.net.errors import RemoteError

if TYPE_CHECKING:
    from roost.daemons.schedd.shadow import Shadow

log = logging.getLogger("roost.daemons.schedd.shadow")


async def take_back(sh: Shadow, job: Job) -> None:
    """After a schedd restart: take the running ``job``'s claim back, then serve it."""
    s = sh.shadows
    sh.owner = job.owner
    sh.submitter = s.submitter_of(job.cluster)
    where = sh.slot_name or sh.startd_address
    # A startd that does not answer may be restarting too (its jobs carry on under
    # their keepers): try again until the job's lease runs out, as HTCondor's shadow
    # does; a startd that answers and does not know the claim is final.
    deadline = time.monotonic() + sh.lease
    delay = 0.25
    while True:
        try:
            resp = await sh.client.call("RECONNECT", claim_id=sh.claim_id, schedd_address=sh.jobs.host.address)
            break
        except (RemoteError, ConnectionError) as e:
            # AUTH_FAILED too: a restarted key-less startd cannot check our token while
            # the central manager is down; it may be able to in a moment
            transient = isinstance(e, ConnectionError) or (isinstance(e, RemoteError) and e.code == "AUTH_FAILED")
            if transient and time.monotonic() + delay < deadline:
                log.info("job %s: reconnect to %s: %s; trying again in %.2g s", job.id, sh.startd_address, e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
                if not job.cluster.holds(job) or job.status not in (jp.RUNNING, jp.SUSPENDED):
                    # removed or held meanwhile: settled here (its vacate found no
                    # exit to wait for); the startd kills the job when the lease ends
                    if sh.jobs.runners.get(job.key) is sh:
                        await sh.jobs.settle(job)
                    return
                continue
            log.warning("job %s: reconnect to %s failed: %s", job.id, sh.startd_address, e)
            s.reconnect_failures += 1
            sh._log_reconnect_failed(job, f"Reconnect to {where} failed: {e}")
            await sh.jobs.requeue(job, f"Job reconnect to {where} failed: {e}")
            return
    if resp.get("job") is None or resp.get("state") == "idle" or (
        isinstance(resp.get("job"), str) and resp["job"] not in ("?", job.id)
    ):
        s.reconnect_failures += 1
        sh._log_reconnect_failed(job, "Job not found at execution machine")
        await sh.jobs.requeue(job, f"Job reconnect to {where} failed: the job is gone")
        sh.owner = None  # the claim stays ours but nothing of this job is left on it
        return
    log.info("job %s: reconnected to %s (%s)", job.id, sh.slot_name, resp.get("state"))
    s.reconnects += 1
    await sh._serve(job, reconnecting=True, reconnect_state=resp)


async def resume(sh: Shadow, job: Job, state: dict[str, Any]) -> bool:
    """Continue a reconnected job: the starter reports its exit to us from now on
    (``state``: RECONNECT's answer, which carries the exit of a job that ended while
    we were away); True when the claim may take another job."""
    jobs = sh.jobs
    sh.job = job
    sh.exit = asyncio.get_running_loop().create_future()
    sh.started_at = float(job.get("JobCurrentStartDate") or time.time())
    sh._began = sh._execute_written = True  # its 001 is in the log from before the restart
    sh._execute_due = False
    jobs.write_events(job, [ReconnectedEvent(job.cluster.id, job.proc, time.time(), startd_name=sh.slot_name,
                                             startd_addr=f"<{sh.startd_address}>",
                                             starter_addr=f"<{sh.startd_address}>")])
    n = job.get("NumShadowStarts", 0)  # a new shadow took the job on, as HTCondor counts it
    # queued now, before the exit this answer may carry: the row it writes is the job's
    # as Running, and queued after the exit's it would bring a finished proc back
    jobs.commit_soon(jobs.set_ops(job, {"NumShadowStarts": (n if isinstance(n, int) else 0) + 1}),
                     f"shadow-starts-{job.id}")
    if state.get("state") in ("exited", "failed", "vacated") and (
        state.get("state") != "exited" or "exit_code" in state or "exit_signal" in state
    ):
        sh.exit.set_result(state)  # it ended while we were away; this is its report
    return await sh._await_exit(job)


__all__ = ["resume", "take_back"]
