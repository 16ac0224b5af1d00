"""TAIL_JOB and SSH_TO_JOB: watching a running job from the submit side (``roost
tail``, ``roost ssh_to_job``; HTCondor's condor_tail and condor_ssh_to_job).

The schedd is the one that may say who may look into a job: the job's owner or a
queue super user (``QUEUE_SUPER_USERS``, as for ``ACT``), and only while the job runs.
It then asks the startd over the job's claim, as its shadow (the claim id is the
startd's proof that the request is the claim holder's): ``PEEK_JOB`` on the shared
client of that startd (a small read), ``JOB_SHELL`` on a connection of its own that,
once answered, carries the session's bytes, which the schedd relays to the tool
without reading them (:func:`roost.net.relay.splice`). No new port is opened
anywhere: the tool's connection to the schedd and the schedd's to the startd are the
daemons' authenticated channels. ``ENABLE_SSH_TO_JOB`` false refuses SSH_TO_JOB here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.daemons.schedd.shadow import Shadow
from roost.net import relay
from roost.net.client import AsyncClient
from roost.net.errors import RemoteError, RequestError, bad_request
from roost.net.server import Peer

log = logging.getLogger("roost.schedd")

#: seconds the startd has to answer PEEK_JOB / to start a session
PEEK_TIMEOUT = 30.0
SHELL_START_TIMEOUT = 30.0


class WatchCalls:
    """Handlers of TAIL_JOB and SSH_TO_JOB."""

    def __init__(self, jobs: JobLifecycle, rights: QueueRights, enabled: Callable[[], bool],
                 connect: Callable[..., AsyncClient]) -> None:
        self.jobs = jobs
        self.rights = rights
        self.enabled = enabled  # ENABLE_SSH_TO_JOB, read at each request
        self.connect = connect  # the schedd's Daemon.client: it proves who we are

    def _running(self, req: dict[str, Any], peer: Peer, cmd: str) -> tuple[Job, Shadow, str]:
        """The job the request names, its shadow and the user asking; refused unless the
        user owns it (or is a queue super user) and it runs on an execute machine now."""
        user = self.rights.user(peer, cmd)
        text = req["job"]
        try:
            cid, proc = self.jobs.queue.parse_id(text)
        except ValueError:
            raise bad_request(f"{cmd}: bad job id {text!r}: want C.P") from None
        proc = 0 if proc is None else proc
        jid = f"{cid}.{proc}"
        job = self.jobs.queue.job(cid, proc)
        if job is None:
            raise RequestError("NOT_FOUND", f"job {jid} is not in the queue")
        if job.owner != user and not self.rights.is_super(user):
            raise RequestError("DENIED", f"{cmd}: user {user} may not look into job {jid}, which is {job.owner}'s")
        if job.status not in (jp.RUNNING, jp.SUSPENDED):
            raise RequestError("NOT_RUNNING", f"job {jid} is not running ({jp.STATUS_NAMES.get(job.status, job.status)})")
        runner = self.jobs.runners.get(job.key)
        watch = getattr(runner, "watch_shadow", None)  # a parallel job: its first node's claim
        shadow = watch(job) if callable(watch) else runner
        if not isinstance(shadow, Shadow) or getattr(shadow.job, "of", shadow.job) is not job:
            raise RequestError("NOT_RUNNING", f"job {jid} does not run on an execute machine (a local or scheduler "
                               "universe job runs beside the schedd)")
        return job, shadow, user

    async def h_tail_job(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        job, shadow, _user = self._running(req, peer, "TAIL_JOB")
        args = {k: req[k] for k in ("name", "stream", "offset", "maxbytes") if req.get(k) is not None}
        if "name" not in args and "stream" not in args:
            args["stream"] = "stdout"
        try:
            return await shadow.client.call("PEEK_JOB", claim_id=shadow.claim_id, job=job.id,
                                            _timeout=PEEK_TIMEOUT, **args)
        except RemoteError as e:
            raise RequestError(e.code, e.message) from None
        except ConnectionError as e:
            raise RequestError("UNAVAILABLE", f"TAIL_JOB: the execute machine of job {job.id}: {e}") from None

    async def h_ssh_to_job(self, req: dict[str, Any], peer: Peer) -> dict[str, Any] | None:
        if not self.enabled():
            raise RequestError("DENIED", "ssh_to_job is disabled on this submit machine (ENABLE_SSH_TO_JOB = False)")
        job, shadow, user = self._running(req, peer, "SSH_TO_JOB")
        args = {k: req[k] for k in ("command", "pty", "term", "rows", "cols") if req.get(k) is not None}
        client = self.connect(shadow.startd_address, timeout=SHELL_START_TIMEOUT)
        try:
            async with client.stream() as conn:
                try:
                    async with asyncio.timeout(SHELL_START_TIMEOUT):
                        resp = await conn.request("JOB_SHELL", claim_id=shadow.claim_id, job=job.id, **args)
                except RemoteError as e:
                    raise RequestError(e.code, e.message) from None
                except TimeoutError:
                    raise RequestError("UNAVAILABLE", f"SSH_TO_JOB: the execute machine of job {job.id} did not "
                                       f"start a session in {SHELL_START_TIMEOUT:g} s") from None
                log.info("job %s: ssh_to_job session for %s (%s)", job.id, user,
                         "command" if args.get("command") else "shell")
                await peer.respond(resp)
                await relay.splice((peer.reader, peer.writer), (conn.reader, conn.writer))
        except (ConnectionError, RemoteError) as e:
            if peer.responded:
                raise
            raise RequestError("UNAVAILABLE", f"SSH_TO_JOB: the execute machine of job {job.id}: {e}") from None
        finally:
            await client.close()
        return None


__all__ = ["WatchCalls"]
