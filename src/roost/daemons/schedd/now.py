"""REASSIGN_SLOT (condor_now): run an idle job now on the slot of a running one.

The running (vacate-)job is vacated at once; when its run has ended the schedd keeps
the claim and starts the now-job on it, with no negotiation in between (HTCondor's
``reassign_slot_handler``). HTCondor also takes several vacate-jobs and coalesces
their slots into one on the startd; roost's startd cannot merge claims, so one
vacate-job is all this takes.
"""

from __future__ import annotations

from typing import Any

from roost.core import jobpolicy as jp
from roost.daemons.schedd.access import QueueRights
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.net.errors import RequestError
from roost.net.server import Peer
from roost.universes import registry

VANILLA = registry.DEFAULT.number  # condor_now moves vanilla jobs only (containers are vanilla too)


class NowCalls:
    """The REASSIGN_SLOT handler."""

    def __init__(self, jobs: JobLifecycle, rights: QueueRights) -> None:
        self.jobs = jobs
        self.rights = rights

    def _job(self, text: Any, what: str) -> Job:
        try:
            cid, proc = self.jobs.queue.parse_id(str(text))
        except ValueError:
            raise RequestError("BAD_REQUEST", f"invalid {what} ID") from None
        job = self.jobs.queue.job(cid, 0 if proc is None else proc)
        if job is None:
            raise RequestError("NOT_FOUND", f"no such job ({what})")
        return job

    async def h_reassign_slot(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """Check as HTCondor's schedd does (and with its words), then vacate the
        vacate-job and leave its shadow the now-job to run next on the claim."""
        user = self.rights.user(peer, "REASSIGN_SLOT")
        victims = req.get("vacate")
        if not isinstance(victims, list) or not victims:
            raise RequestError("BAD_REQUEST", "missing vacate-job ID")
        now = self._job(req.get("now"), "now-job")
        if now.owner != user and not self.rights.is_super(user):
            raise RequestError("DENIED", "you must own the now-job")
        if now.get("JobUniverse", VANILLA) != VANILLA:
            raise RequestError("BAD_REQUEST", "the now-job must be in the vanilla universe")
        if now.status != jp.IDLE or now.busy:
            raise RequestError("BAD_REQUEST", "the now-job must be idle")
        vacate = [self._job(v, "vacate-job") for v in victims]
        for v in vacate:
            if v.owner != user and not self.rights.is_super(user):
                raise RequestError("DENIED", "you must own the vacate-job")
            if v.get("JobUniverse", VANILLA) != VANILLA:
                raise RequestError("BAD_REQUEST", "vacate-job must be in the vanilla universe")
            if v.status != jp.RUNNING:
                raise RequestError("BAD_REQUEST", "vacate-job must be running")
        if len(vacate) > 1:
            raise RequestError("BAD_REQUEST", "this schedd cannot coalesce several slots into one: "
                               "name one vacate-job")
        victim = vacate[0]
        shadow = self.jobs.runners.get(victim.key)
        if shadow is None or getattr(shadow, "job", None) is not victim or not hasattr(shadow, "now_job"):
            raise RequestError("NOT_FOUND", "no match for vacate-job ID")
        if any(getattr(r, "now_job", None) == now.key for r in self.jobs.runners.values()):
            raise RequestError("BAD_REQUEST", "the now-job must not already be scheduled to run immediately")
        shadow.now_job = now.key
        shadow.vacate_job(victim, fast=True)
        return {"Result": True}


__all__ = ["NowCalls"]
