"""The startd's claim protocol: REQUEST_CLAIM, ACTIVATE_CLAIM, KEEPALIVE, RECONNECT,
DEACTIVATE_CLAIM and RELEASE_CLAIM (docs/protocol.md), preempting claims, leases,
and the starters that run the claims' jobs.

``Claims`` owns every piece of claim state (which claim id names which slot, the
running and reporting starters, each claim's job ad and CurrentRank, the
PreemptClaimIds and the preempting claims that wait for a slot). The slot table,
the slot ads and the daemon's services belong to the startd (``Host``); what a
claim needs to know of the owner's will (draining, off, RANK) and the owner policy
steps that claim and job events trigger go through ``PolicyHooks``. Neither is
imported: this module sees both only through those two narrow protocols.

Which claim event may move a slot from which State/Activity to which is the claim
table (``roost.core.claimstates``): every command and job event here looks its move
up there, and one that is no move of it is refused (DENIED to the schedd, a late
report ignored, an ending logged). Building a job's starter is ``starter_factory``'s
and taking back a previous startd's claims ``adoption``'s.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from roost.classad import ClassAd
from roost.classad.jsonform import ad_to_obj
from roost.config import Config
from roost.core import claimstates as cs
from roost.core import ownerpolicy as op
from roost.core import slots as core
from roost.core.slots import Claim, Slot
from roost.daemons.startd import adoption
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobcommand import Universes
from roost.daemons.startd.jobspec import JobSpecError, parse_job
from roost.daemons.startd.leftovers import Record
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.peers import Peers
from roost.daemons.startd.starter import Starter
from roost.daemons.startd.starter_factory import StarterFactory, disk_policy
from roost.net.adwire import obj_to_ad
from roost.net.errors import RequestError
from roost.net.server import Peer
from roost.vocabulary import Activity

__all__ = ["Claims", "Host", "PolicyHooks", "disk_policy"]


class Host(Protocol):
    """What the claim protocol needs of the startd around it (``Startd``): its slot
    table, the slot ads, and the daemon's services."""

    config: Config
    log: logging.Logger
    slots: dict[str, Slot]
    machine: core.Machine | None
    policy: core.Policy
    execute_dir: str
    peers: Peers
    cgroups: JobCgroups
    memory: MemoryLimits
    cpu: CpuShares
    universes: Universes  # the JVM and container runtime jobs may use here
    want_reschedule: bool  # ask the negotiator for a cycle after this round of ads

    def slot_name(self, name: str) -> str: ...

    def slot_ad(self, name: str) -> ClassAd: ...

    def build_ad(self, slot: Slot) -> ClassAd: ...

    def changed(self, *names: str, urgent: bool = True) -> None: ...

    def forget_ad(self, name: str) -> None: ...

    def slot_gone(self, name: str) -> None: ...

    def new_claim_id(self) -> str: ...

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]: ...


class PolicyHooks(Protocol):
    """What claims need of the owner policy (``policy_runner.OwnerPolicy``)."""

    drain: str | None
    off: bool
    exprs: op.PolicyExprs

    def evaluate(self, names: set[str] | None = None) -> None: ...

    def evaluate_soon(self, *names: str) -> None: ...

    def forget_claim(self, claim_id: str) -> None: ...


def _limits_of(job: ClassAd) -> str:
    v = job.eval("ConcurrencyLimits") if "ConcurrencyLimits" in job else None
    return v if isinstance(v, str) else ""


def _claim_for(job: ClassAd, schedd: str, lease: float, now: float) -> Claim:
    """The claim a job's REQUEST_CLAIM makes: who holds it (RemoteUser is the job's User,
    the name the accountant charges) and the concurrency limits it holds."""
    user, owner = job.get("User"), job.get("Owner")
    return Claim(
        schedd_address=schedd,
        user=user if isinstance(user, str) else (owner if isinstance(owner, str) else ""),
        owner=owner if isinstance(owner, str) else "",
        lease=lease,
        lease_expires=now + lease,
        concurrency_limits=_limits_of(job),
    )


def _claim_args(req: dict[str, Any], default_lease: float) -> tuple[str, float]:
    """REQUEST_CLAIM's schedd address and lease, checked."""
    schedd = req.get("schedd_address")
    if not isinstance(schedd, str) or not schedd:
        raise RequestError("BAD_REQUEST", "REQUEST_CLAIM: schedd_address is required")
    lease = req.get("lease")
    lease = default_lease if lease is None else float(lease)
    if not 0 < lease <= 1e7:
        raise RequestError("BAD_REQUEST", "REQUEST_CLAIM: lease must be between 0 and 1e7 seconds")
    return schedd, lease


def _not_found(what: str) -> RequestError:
    return RequestError("NOT_FOUND", what)


@dataclass
class _Pending:
    """A preempting claim granted on a busy slot, waiting for the old job to leave."""

    claim_id: str
    claim: Claim
    rank: Any
    ready: asyncio.Future[None]
    job: ClassAd | None = None  # the job it was claimed for


class Claims:
    """Every claim on this startd's slots, and the jobs they run."""

    def __init__(self, host: Host, owner_policy: PolicyHooks) -> None:
        self.host = host
        self.owner_policy = owner_policy
        self.log = host.log
        cfg = host.config
        self.by_claim: dict[str, str] = {}  # claim id -> slot name
        self.starters: dict[str, Starter] = {}  # claim id -> its active job
        self.reporting: dict[str, list[Starter]] = {}  # claim id -> finished jobs, reports pending
        self.default_lease = float(
            (cfg.get_int("ALIVE_INTERVAL", 300) or 300) * (cfg.get_int("MAX_CLAIM_ALIVES_MISSED", 6) or 6)
        )
        self.factory = StarterFactory(host, self._schedd_of, self._starter_finished, self._starter_done)
        self.update_interval = self.factory.update_interval
        self.disk_policy = self.factory.disk_policy
        self._lease_task: asyncio.Task[None] | None = None
        self.job_ads: dict[str, ClassAd] = {}  # claim id -> its job's ad (TARGET): the claim's, then the last activated
        #: claim id -> the job ad its REQUEST_CLAIM sent, as sent: an ACTIVATE_CLAIM that
        #: sends the same (the schedd's usual) reuses the parsed ad instead of parsing it again
        self.claimed_objs: dict[str, dict[str, Any]] = {}
        self.current_rank: dict[str, Any] = {}  # claim id -> RANK against its first job
        self.preempt_ids: dict[str, str] = {}  # PreemptClaimId -> slot name
        self.preempt_of: dict[str, str] = {}  # slot name -> its PreemptClaimId
        self.preempting: dict[str, _Pending] = {}  # slot name -> the claim waiting for it

    def _claimed(self, claim_id: str) -> Slot:
        """The claimed slot this claim id names; NOT_FOUND when it is no live claim."""
        name = self.by_claim.get(claim_id)
        slot = self.host.slots.get(name) if name else None
        if slot is None or slot.claim is None:
            raise _not_found("no such claim on this startd")
        return slot

    def _move(self, slot: Slot, event: str, now: float) -> Slot:
        """The slot where the claim table's ``event`` takes it (``roost.core.claimstates``);
        IllegalMove where the event does not apply to the slot's state and activity."""
        m = cs.after(slot.state, slot.activity, event)
        return core.transition(slot, m.state, m.activity, now)

    def _renew(self, slot: Slot, **changes: Any) -> Slot:
        assert slot.claim is not None
        claim = replace(slot.claim, lease_expires=time.time() + slot.claim.lease, **changes)
        slot = replace(slot, claim=claim)
        self.host.slots[slot.name] = slot
        return slot

    async def h_request_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        if claim_id in self.preempt_ids:
            return self._request_preempting(req)
        name = self.by_claim.get(claim_id)
        if name is None:
            self._count_stale(req.get("slot_name"))
            raise _not_found("no slot has this claim id (stale match?)")
        slot = self.host.slots[name]
        schedd, lease = _claim_args(req, self.default_lease)
        if slot.claim is not None:
            if (slot.claim.schedd_address == schedd and slot.claim.job is None
                    and cs.applies(slot.state, slot.activity, cs.REQUEST_CLAIM)):
                slot = self._renew(slot)  # a retried request: the claim is already theirs
                return {"claim_id": slot.claim_id, "slot_ad": ad_to_obj(self.host.slot_ad(name))}
            self._count_stale(name)
            raise RequestError("DENIED", f"{self.host.slot_name(name)} is already claimed")
        drain, off = self.owner_policy.drain, self.owner_policy.off
        if drain or off or not cs.applies(slot.state, slot.activity, cs.REQUEST_CLAIM):
            why = "draining" if drain else "off" if off else f"in state {slot.state}/{slot.activity}"
            raise RequestError("DENIED", f"{self.host.slot_name(name)} takes no claims: {why}")
        slot, job, ad = self._judge(name, req)
        now = time.time()
        claim = _claim_for(job, schedd, lease, now)
        try:
            if slot.kind == core.PARTITIONABLE:
                want = core.request_size(job, ad, self.host.policy)
                pslot, granted = core.carve(slot, want, claim, self.host.new_claim_id(), now)
            else:
                pslot, granted = None, core.claim_static(slot, claim, now)
        except core.SlotError as e:
            raise RequestError("DENIED", str(e)) from None
        # ACTIVATE_CLAIM judges the job on the granted slot's ad (a dynamic slot's size,
        # State Claimed): judge it on that ad now, so a job the slot would refuse to run is
        # refused before anything is carved or claimed, not after (where the schedd would
        # release, the negotiator match it again, and round it goes).
        why = core.accepts(self.host.build_ad(granted), job)
        if why is not None:
            raise RequestError("DENIED", f"{self.host.slot_name(granted.name)} as claimed: {why}")
        if pslot is not None:
            self.host.slots[pslot.name] = pslot
            self.host.changed(pslot.name)
        self.host.slots[granted.name] = granted
        self.by_claim[granted.claim_id] = granted.name
        self.host.changed(granted.name)
        self.arm_leases()
        self.claimed_now(granted, job)
        self.job_ads[granted.claim_id] = job  # TARGET of the idle claim's policy (HTCondor's claim ad)
        self.claimed_objs[granted.claim_id] = req["job_ad"]
        self.log.info("claimed %s for %s at %s", self.host.slot_name(granted.name), claim.user, schedd)
        return {"claim_id": granted.claim_id, "slot_ad": ad_to_obj(self.host.slot_ad(granted.name))}

    def claimed_now(self, slot: Slot, job: ClassAd | None, rank: Any = None) -> None:
        """Book-keeping of a new claim: its PreemptClaimId and CurrentRank."""
        old = self.preempt_of.pop(slot.name, None)
        if old is not None:
            self.preempt_ids.pop(old, None)
        pid = self.host.new_claim_id()
        self.preempt_ids[pid] = slot.name
        self.preempt_of[slot.name] = pid
        if job is not None:
            rank = op.evaluate(self.owner_policy.exprs.rank, self.host.slot_ad(slot.name), job)
        self.current_rank[slot.claim_id] = rank if isinstance(rank, int | float) and not isinstance(rank, bool) else 0.0
        self.host.forget_ad(slot.name)

    def _forget_claim(self, slot: Slot) -> None:
        cid = slot.claim_id
        self.job_ads.pop(cid, None)
        self.claimed_objs.pop(cid, None)
        self.current_rank.pop(cid, None)
        self.owner_policy.forget_claim(cid)
        pid = self.preempt_of.pop(slot.name, None)
        if pid is not None:
            self.preempt_ids.pop(pid, None)

    def _hand_over(self, slot: Slot, pending: _Pending, now: float) -> None:
        """The preempted claim is gone: the waiting claim takes the same resources."""
        claim = replace(pending.claim, lease_expires=now + pending.claim.lease, job=None, job_start=0.0)
        slot = replace(self._move(slot, cs.HAND_OVER, now), claim=claim, claim_id=pending.claim_id)
        self.host.slots[slot.name] = slot
        self.by_claim[pending.claim_id] = slot.name
        self.claimed_now(slot, None, pending.rank)
        if pending.job is not None:
            self.job_ads[pending.claim_id] = pending.job
        if not pending.ready.done():
            pending.ready.set_result(None)
        self.host.changed(slot.name)
        self.arm_leases()

    def _count_stale(self, name: Any) -> None:
        """A claim request for a slot that was claimed meanwhile (its match was made against
        an ad a moment old): counted on the slot all the same, so the negotiator's promise
        of it settles now instead of when it expires and the slot is matched again at once.
        ``name``: the slot's key or full name (the match's ``slot_name``)."""
        if not isinstance(name, str):
            return
        slots = self.host.slots
        key = name if name in slots else next((k for k in slots if self.host.slot_name(k) == name), None)
        if key is not None:
            slots[key] = replace(slots[key], claim_requests=slots[key].claim_requests + 1)
            self.host.changed(key)

    def _judge(self, name: str, req: dict[str, Any]) -> tuple[Slot, ClassAd, ClassAd]:
        """Count a claim request on the slot and check the job against its ad (DENIED if
        either side's Requirements say no): the slot as counted, the job ad, the slot ad."""
        # Counted whatever the answer: the negotiator settles its promises on this count.
        slots = self.host.slots
        slot = slots[name] = replace(slots[name], claim_requests=slots[name].claim_requests + 1)
        self.host.changed(name)
        job = obj_to_ad(req["job_ad"])
        ad = self.host.slot_ad(name)
        why = core.accepts(ad, job)
        if why is not None:
            raise RequestError("DENIED", f"{self.host.slot_name(name)}: {why}")
        return slot, job, ad

    def _request_preempting(self, req: dict[str, Any]) -> dict[str, Any]:
        """REQUEST_CLAIM with a PreemptClaimId: grant at once, evict the running job, and
        hold the new claim's ACTIVATE_CLAIM until the slot is free (docs/policy.md)."""
        name = self.preempt_ids[req["claim_id"]]
        slot = self.host.slots.get(name)
        schedd, lease = _claim_args(req, self.default_lease)
        if slot is None or slot.claim is None:
            raise _not_found("the preempted claim is gone (stale match?)")
        if name in self.preempting:
            pending = self.preempting[name]
            if pending.claim.schedd_address == schedd:
                return {"claim_id": pending.claim_id, "slot_ad": ad_to_obj(self.host.slot_ad(name)), "preempting": True}
            raise RequestError("DENIED", f"{self.host.slot_name(name)} is already being preempted")
        drain, off = self.owner_policy.drain, self.owner_policy.off
        if drain or off or not cs.applies(slot.state, slot.activity, cs.PREEMPT):
            why = "draining" if drain else "off" if off else f"in state {slot.state}/{slot.activity}"
            raise RequestError("DENIED", f"{self.host.slot_name(name)} takes no claims: {why}")
        slot, job, ad = self._judge(name, req)
        now = time.time()
        claim = _claim_for(job, schedd, lease, now)
        rank = op.evaluate(self.owner_policy.exprs.rank, ad, job)
        new_id = self.host.new_claim_id()
        self.preempting[name] = _Pending(new_id, claim, rank, asyncio.get_running_loop().create_future(), job)
        self.log.info("%s preempted by %s at %s", self.host.slot_name(name), claim.user, schedd)
        self.host.changed(name)
        self.owner_policy.evaluate()
        return {"claim_id": new_id, "slot_ad": ad_to_obj(ad), "preempting": True}

    def _pending_by_id(self, claim_id: str) -> tuple[str, _Pending] | None:
        for name, pending in self.preempting.items():
            if pending.claim_id == claim_id:
                return name, pending
        return None

    async def h_activate_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        waiting = self._pending_by_id(claim_id)
        if waiting is not None:
            ready = waiting[1].ready
            await asyncio.wait([ready])  # until the preempted job has left (no timeout)
            if ready.cancelled():
                raise _not_found("the preempting claim was released")
        slot = self._claimed(claim_id)
        if claim_id in self.starters:
            raise RequestError("DENIED", f"a job is already running on {self.host.slot_name(slot.name)}")
        drain, off = self.owner_policy.drain, self.owner_policy.off
        if slot.name in self.preempting or not cs.applies(slot.state, slot.activity, cs.ACTIVATE) or drain or off:
            why = "draining" if drain else "off" if off else (
                "being preempted" if slot.name in self.preempting else f"in state {slot.state}/{slot.activity}")
            raise RequestError("DENIED", f"{self.host.slot_name(slot.name)} takes no new job: {why}")
        sent = self.claimed_objs.pop(claim_id, None)
        job = self.job_ads.get(claim_id) if sent is not None and sent == req["job_ad"] else None
        if job is None:
            job = obj_to_ad(req["job_ad"])
        why = core.accepts(self.host.slot_ad(slot.name), job)
        if why is not None:
            raise RequestError("DENIED", f"{self.host.slot_name(slot.name)}: {why}")
        assert self.host.machine is not None
        try:
            spec = parse_job(job, self.host.machine.filesystem_domain)
        except JobSpecError as e:
            raise RequestError("BAD_REQUEST", f"ACTIVATE_CLAIM: {e}") from None
        made = self.factory.for_activation(spec, job, req["job_ad"], slot, claim_id)
        starter = made.starter
        self.starters[claim_id] = starter
        self.job_ads[claim_id] = job
        now = time.time()
        slot = self._renew(slot, job=spec.job_id, job_start=now, concurrency_limits=_limits_of(job))
        self.host.slots[slot.name] = self._move(slot, cs.ACTIVATE, now)
        self.host.changed(slot.name, urgent=False)
        if made.error is not None:
            starter.fail_before_start(made.error)
        else:
            starter.start()
        self.owner_policy.evaluate_soon(slot.name)
        return {"user": made.identity.name} if made.identity is not None and made.identity.name else {}

    def adopt(self, records: list[Record]) -> list[str]:
        """Take back the claims and jobs a previous startd left running (adoption.py):
        what was done, for the log."""
        return adoption.adopt(self, records)

    def _schedd_of(self, claim_id: str) -> str | None:
        name = self.by_claim.get(claim_id)
        slot = self.host.slots.get(name) if name else None
        return slot.claim.schedd_address if slot is not None and slot.claim is not None else None

    def _starter_finished(self, starter: Starter) -> None:
        """The job's processes are gone: the claim is Idle (its report may still be in flight)."""
        if self.starters.get(starter.claim_id) is starter:
            del self.starters[starter.claim_id]
            self.reporting.setdefault(starter.claim_id, []).append(starter)
        name = self.by_claim.get(starter.claim_id)
        slot = self.host.slots.get(name) if name else None
        if slot is None or slot.claim is None or slot.claim.job != starter.spec.job_id:
            return
        slot = replace(slot, claim=replace(slot.claim, job=None, job_start=0.0))
        if cs.applies(slot.state, slot.activity, cs.JOB_EXIT):  # Preempting stays so until the claim ends
            slot = self._move(slot, cs.JOB_EXIT, time.time())
        else:
            self.log.warning("job %s left %s, %s/%s: no move of the claim table", starter.spec.job_id,
                             self.host.slot_name(slot.name), slot.state, slot.activity)
        self.host.slots[slot.name] = slot
        self.host.changed(slot.name, urgent=False)
        self.owner_policy.evaluate_soon(slot.name)

    def _starter_done(self, starter: Starter) -> None:
        pending = self.reporting.get(starter.claim_id)
        if pending and starter in pending:
            pending.remove(starter)
            if not pending:
                del self.reporting[starter.claim_id]
        self._starter_finished(starter)
        name = self.by_claim.get(starter.claim_id)
        if name is not None:
            self.owner_policy.evaluate_soon(name)

    async def h_keepalive(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        waiting = self._pending_by_id(req["claim_id"])
        if waiting is not None:
            pending = waiting[1]
            pending.claim = replace(pending.claim, lease_expires=time.time() + pending.claim.lease)
            return {"state": Activity.IDLE}
        slot = self._renew(self._claimed(req["claim_id"]))
        return {"state": slot.activity}

    async def h_reconnect(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        slot = self._claimed(claim_id)
        slot = self._renew(slot, schedd_address=req["schedd_address"])
        self.host.forget_ad(slot.name)
        for starter in (self.starters.get(claim_id), *self.reporting.get(claim_id, [])):
            if starter is not None:
                starter.claim_changed({"schedd_address": req["schedd_address"]})
                starter.retry_now()  # a report or checkpoint waiting for the schedd goes now
        self.log.info("claim on %s reconnected from %s", self.host.slot_name(slot.name), req["schedd_address"])
        starter = self.starters.get(claim_id) or (self.reporting.get(claim_id) or [None])[-1]
        if starter is None:
            return {"job": None, "state": "idle"}
        out: dict[str, Any] = {"job": starter.spec.job_id, "pid": starter.pid}
        final = starter.final
        if starter.state in ("exited", "done") and final is not None and (
            starter.files_sent or not starter.spec.transfer or final["state"] != "exited"
        ):
            out.update(final)  # the schedd may settle the job from this answer alone
        else:
            out["state"] = "running"
        for pending in self.reporting.get(claim_id, []):
            pending.retry_now()
        return out

    async def h_deactivate_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        slot = self._claimed(claim_id)
        starter = self.starters.get(claim_id)
        if starter is None:
            return {"job": None, "state": "idle"}
        if not cs.applies(slot.state, slot.activity, cs.DEACTIVATE):
            raise RequestError("DENIED", f"{self.host.slot_name(slot.name)} is {slot.state}/{slot.activity}")
        graceful = req.get("graceful")
        self.log.info(
            "vacating job %s on %s (%s)", starter.spec.job_id, self.host.slot_name(slot.name),
            "graceful" if graceful else "fast",
        )
        why = req.get("why")
        result = await starter.vacate(bool(graceful) if graceful is not None else True,
                                      why if why in ("remove", "hold", "vacate") else None)
        return {"job": starter.spec.job_id, **result}

    async def h_suspend_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """condor_suspend through the job's schedd: SIGSTOP and freeze the claim's job, as
        the owner policy's SUSPEND does (the starter reports it; the schedd writes 010)."""
        return self._pause(req["claim_id"], True)

    async def h_continue_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        """condor_continue: resume a job condor_suspend stopped (011 follows)."""
        return self._pause(req["claim_id"], False)

    def _pause(self, claim_id: str, suspend: bool) -> dict[str, Any]:
        slot = self._claimed(claim_id)
        starter = self.starters.get(claim_id)
        if starter is None:
            return {"job": None, "suspended": False}
        event = cs.SCHEDD_SUSPEND if suspend else cs.SCHEDD_CONTINUE
        if not cs.applies(slot.state, slot.activity, event):
            # an owner-suspended job is resumed by the owner's CONTINUE only; a job being
            # vacated or killed is left to it
            self.log.info("%s of job %s refused: its slot is %s/%s", "suspend" if suspend else "continue",
                          starter.spec.job_id, slot.state, slot.activity)
            return {"job": starter.spec.job_id, "suspended": starter.suspended}
        self.log.info("%s job %s on %s by its schedd", "suspending" if suspend else "continuing",
                      starter.spec.job_id, self.host.slot_name(slot.name))
        if suspend:
            starter.suspend()
        else:
            starter.resume()
        return {"job": starter.spec.job_id, "suspended": starter.suspended}

    async def h_release_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        waiting = self._pending_by_id(req["claim_id"])
        if waiting is not None:  # the preempting schedd gave up before the slot was free
            name, pending = waiting
            del self.preempting[name]
            if not pending.ready.done():
                pending.ready.cancel()
            self.owner_policy.evaluate_soon(name)
            return {}
        slot = self._claimed(req["claim_id"])
        await self.release(slot.name, "released by its schedd")
        return {}

    async def release(self, name: str, why: str, event: str = cs.RELEASE_CLAIM) -> None:
        """End the claim on slot ``name`` (``event``, one of the claim table's endings;
        ``why`` is for the log): its job is killed unreported, and the slot goes back
        unclaimed, to its parent, or to the preempting claim that waits for it."""
        slot = self.host.slots.get(name)
        if slot is None or slot.claim is None:
            return
        try:
            cs.after(slot.state, slot.activity, cs.HAND_OVER if name in self.preempting else event)
        except cs.IllegalMove as e:
            self.log.error("claim on %s not ended (%s): %s", self.host.slot_name(name), why, e)
            return
        claim_id = slot.claim_id
        starter = self.starters.pop(claim_id, None)
        if starter is not None:
            self.log.info("killing job %s on %s: claim %s", starter.spec.job_id, self.host.slot_name(name), why)
            await starter.abandon()
        for reporting in self.reporting.pop(claim_id, []):
            await reporting.abandon()
        slot = self.host.slots.get(name)
        if slot is None or slot.claim is None or slot.claim_id != claim_id:
            return  # ended meanwhile (another release, a lease); the slot may hold a new claim now
        self.by_claim.pop(slot.claim_id, None)
        self._forget_claim(slot)
        now = time.time()
        pending = self.preempting.pop(name, None)
        move = cs.after(slot.state, slot.activity, cs.HAND_OVER if pending is not None else event)
        if pending is not None:
            self._hand_over(slot, pending, now)
            self.log.info("claim on %s ended (%s); the preempting claim takes it", self.host.slot_name(name), why)
            return
        if slot.kind == core.DYNAMIC:
            assert slot.parent is not None
            parent = core.give_back(self.host.slots[slot.parent], slot)
            self.host.slots[parent.name] = parent
            self.host.slot_gone(name)
            self.host.changed(parent.name)
        else:
            fresh = replace(core.transition(slot, move.state, move.activity, now), claim=None,
                            claim_id=self.host.new_claim_id())
            self.host.slots[name] = fresh
            self.by_claim[fresh.claim_id] = name
            self.host.changed(name)
        if cs.RESCHEDULE in move.actions:
            self.host.want_reschedule = True
        self.owner_policy.evaluate_soon(slot.parent if slot.kind == core.DYNAMIC and slot.parent else name)
        self.log.info("claim on %s ended: %s", self.host.slot_name(name), why)

    # -- leases ----------------------------------------------------------------------------

    def arm_leases(self) -> None:
        if self._lease_task is None or self._lease_task.done():
            self._lease_task = self.host.spawn(self._lease_loop(), "claim-leases")

    async def _lease_loop(self) -> None:
        """Sleep until the earliest lease runs out; release claims whose lease did."""
        while True:
            deadlines = [
                s.claim.lease_expires for s in self.host.slots.values() if s.claim is not None and s.claim.lease > 0
            ]
            if not deadlines:
                return
            now = time.time()
            soonest = min(deadlines)
            if soonest > now:
                await asyncio.sleep(soonest - now + 0.01)
                continue
            for name in core.expired(self.host.slots.values(), now):
                await self.release(name, "lease expired (no keep-alive from its schedd)", cs.LEASE_EXPIRED)
