"""The startd: offers this machine's slots, grants claims, runs jobs through starters.

Decisions (carving, returning, slot ads, START) live in ``roost.core.slots``;
this shell holds the slot table, answers the claim protocol of
docs/protocol.md, keeps leases, and advertises. Ads go to the collector in
one round per batch of state changes (and every UPDATE_INTERVAL); the
negotiator is poked only when a slot became free for new matches.

Knobs beyond HTCondor's usual ones: ``SLOT_USER`` (default ``nobody``),
who jobs run as when the startd is root and the job's Owner is not a usable
local user (or ``STARTER_ALLOW_RUNAS_OWNER`` is false);
``STARTD_DETECT_GPUS`` (default true) to skip running nvidia-smi;
``STARTD_ACTIVITY_UPDATE_DELAY`` (default 1 s), how long a Busy/Idle change
on a claim may wait before its ad goes to the collector.

The owner policy (``roost.core.ownerpolicy``: START, IS_OWNER, SUSPEND,
CONTINUE, PREEMPT, KILL, WANT_SUSPEND, WANT_VACATE, MaxJobRetirementTime) is
evaluated every POLLING_INTERVAL seconds and after every claim or job event;
keyboard/console idle times and loads come from ``owner.OwnerMonitor``
(knobs ``STARTD_ACTIVITY_FILE``, ``STARTD_OWNER_DEVICES``). Suspending is
SIGSTOP/SIGCONT to the job's process group plus its cgroup's freezer; vacating is the starter's
SIGTERM-then-SIGKILL, reported to the schedd as ``vacated``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import secrets
import time
from dataclasses import dataclass, replace
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.config import Config
from roost.config.errors import ConfigError
from roost.core import ownerpolicy as op
from roost.core import slots as core
from roost.core.slots import Claim, Slot
from roost.daemons.base import AdvertisedAd, Daemon
from roost.daemons.startd import launch, owner, resources
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.jobspec import Identity, JobSpecError, job_identity, parse_job
from roost.daemons.startd.starter import JOBS_DIR, Peers, Starter, cleanup_leftovers
from roost.net.adwire import ad_to_obj, obj_to_ad
from roost.net.client import AsyncClient
from roost.net.errors import RequestError
from roost.net.server import Handler, Peer

_SLOT_TYPE = re.compile(r"^SLOT_TYPE_(\d+)$", re.I)
# HTCondor's Requirements written by condor_submit test split(TARGET.CondorVersion)[1].
CONDOR_VERSION = "$CondorVersion: 25.12.0 2026-01-01 BuildID: roost $"


# PolicyExprs field -> the knob it comes from (for messages)
_OWNER_KNOBS = {
    "is_owner": "IS_OWNER", "suspend": "SUSPEND", "continue_": "CONTINUE", "preempt": "PREEMPT",
    "kill": "KILL", "want_suspend": "WANT_SUSPEND", "want_vacate": "WANT_VACATE",
    "max_job_retirement_time": "MAXJOBRETIREMENTTIME", "machine_max_vacate_time": "MachineMaxVacateTime",
}


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


class Startd(Daemon):
    """The execute-side daemon."""

    ad_type = None  # it advertises slot ads only (see ``ads``)

    def __init__(self, config: Config | None = None) -> None:
        super().__init__("startd", "STARTD", config=config)
        cfg = self.config
        self.execute_dir = str(cfg.get("EXECUTE") or self.home / "execute")
        self._launcher_build: asyncio.Future[str | None] | None = None
        self.slots: dict[str, Slot] = {}
        self.by_claim: dict[str, str] = {}  # claim id -> slot name
        self.starters: dict[str, Starter] = {}  # claim id -> its active job
        self.reporting: dict[str, list[Starter]] = {}  # claim id -> finished jobs, reports pending
        self.machine: core.Machine | None = None
        self.policy = core.Policy()
        self.peers = Peers()
        self.cgroups = JobCgroups(None)
        self.default_lease = float(
            (cfg.get_int("ALIVE_INTERVAL", 300) or 300) * (cfg.get_int("MAX_CLAIM_ALIVES_MISSED", 6) or 6)
        )
        self.allow_owner = bool(cfg.get_bool("STARTER_ALLOW_RUNAS_OWNER", True))
        self.slot_user = cfg.get("SLOT_USER") or "nobody"
        self._identities: dict[str, Identity] = {}
        self._ads: dict[str, ClassAd] = {}
        self._dirty: set[str] = set()
        self._gone: set[str] = set()
        self._flushing = False
        self._urgent = False
        self._delayed: asyncio.TimerHandle | None = None
        self.activity_delay = cfg.get_float("STARTD_ACTIVITY_UPDATE_DELAY", 1.0) or 0.0
        self._want_reschedule = False
        self._lease_task: asyncio.Task[None] | None = None
        self._negotiator: AsyncClient | None = None
        self._sandboxes = itertools.count(1)
        self._claims = itertools.count(1)
        self._birth = int(time.time())
        # -- owner policy (see roost.core.ownerpolicy) --
        self.exprs = op.PolicyExprs()
        self._constant_ad: ClassAd | None = None
        self.polling_interval = max(cfg.get_float("POLLING_INTERVAL", 5.0) or 5.0, 0.05)
        activity = cfg.get("STARTD_ACTIVITY_FILE")
        if activity is None:
            activity = str(self.home / "activity")
        devices = cfg.get("STARTD_OWNER_DEVICES")
        self.monitor = owner.OwnerMonitor(activity.strip() or None,
                                          owner.DEFAULT_DEVICES if devices is None else devices)
        self._connected_knobs = (self._slots_knob("SLOTS_CONNECTED_TO_KEYBOARD"),
                                  self._slots_knob("SLOTS_CONNECTED_TO_CONSOLE"),
                                  self._slots_knob("DISCONNECTED_KEYBOARD_IDLE_BOOST") or 0)
        self.owner_attrs: dict[str, dict[str, Any]] = {}
        self._latched: dict[tuple[str, str], tuple[Any, int]] = {}
        self._last_owner: tuple[tuple[int, int], float] = (self.monitor.idle(time.time()), owner.host_load())
        self.job_ads: dict[str, ClassAd] = {}  # claim id -> its job's ad (TARGET): the claim's, then the last activated
        self.current_rank: dict[str, Any] = {}  # claim id -> RANK against its first job
        self.drain: str | None = None  # graceful / quick / fast while draining
        self.drain_reason = ""
        self.off = False
        self.vacate_asked: dict[str, str] = {}  # claim id -> graceful / fast (roost vacate)
        self.preempt_ids: dict[str, str] = {}  # PreemptClaimId -> slot name
        self.preempt_of: dict[str, str] = {}  # slot name -> its PreemptClaimId
        self.preempting: dict[str, _Pending] = {}  # slot name -> the claim waiting for it
        self._eval_soon: asyncio.Handle | None = None
        self._eval_names: set[str] = set()
        self._acting: set[tuple[str, str]] = set()  # (claim id, vacate|kill) in progress
        self._preempt_was_true: set[str] = set()  # claim ids whose retirement PREEMPT started

    # -- start and stop ----------------------------------------------------------------

    async def start(self) -> None:
        os.makedirs(self.execute_dir, exist_ok=True)
        os.chmod(self.execute_dir, 0o755)  # job users must reach their sandboxes
        self._open_path_to_execute()
        jobs = os.path.join(self.execute_dir, JOBS_DIR)
        os.makedirs(jobs, exist_ok=True)
        os.chmod(jobs, 0o700)
        self.cgroups = JobCgroups.detect(self.execute_dir, bool(self.config.get_bool("STARTD_USE_CGROUPS", True)))
        for name in self.cgroups.leftovers():
            self.cgroups.remove(name)
            self.log.info("leftover from a previous startd: killed and removed cgroup %s", name)
        for line in cleanup_leftovers(self.execute_dir):
            self.log.info("leftover from a previous startd: %s", line)
        if os.geteuid() == 0 and self.config.get_bool("STARTD_BUILD_LAUNCHER", True):
            # Jobs start through sh + setpriv until the helper is built (see launch.py).
            self._launcher_build = asyncio.get_running_loop().run_in_executor(
                None, launch.build_launcher, os.path.join(self.execute_dir, ".launcher"))
        self.machine = resources.detect(self.config, self.execute_dir)
        self.policy = self._read_policy()
        self.exprs = self._read_owner_policy()
        # with constant expressions the policy reads no ad: one fixed ad serves every step
        self._constant_ad = ClassAd() if op.is_constant(self.exprs) else None
        if self._constant_ad is not None:
            op.add_policy_exprs(self._constant_ad, self.exprs)
        now = time.time()
        self.slots = core.layout(self._slot_types(), self.machine, self._claim_ids(), now)
        self.by_claim = {s.claim_id: s.name for s in self.slots.values()}
        t = self.machine.total
        self.log.info(
            "machine %s: %d cpus, %d MiB, %d KiB disk, %d gpus; slots: %s",
            self.machine.name, t.cpus, t.memory, t.disk, len(t.gpus),
            ", ".join(f"{s.name} ({s.kind}, {s.total.cpus} cpus)" for s in self.slots.values()),
        )

    def _open_path_to_execute(self) -> None:
        """Jobs run as other users must be able to walk to their sandbox: give o+x
        (search, not read) to our own directories between EXECUTE and LOCAL_DIR, and
        warn about any other ancestor that blocks the way."""
        if os.geteuid() != 0:
            return
        home = os.path.realpath(self.home)
        path = os.path.realpath(self.execute_dir)
        while True:
            path = os.path.dirname(path)
            st = os.stat(path)
            if not st.st_mode & 0o001:
                inside = path == home or path.startswith(home + os.sep)
                if inside and st.st_uid == os.geteuid():
                    os.chmod(path, (st.st_mode & 0o7777) | 0o001)
                    self.log.info("made %s searchable so job users reach EXECUTE", path)
                else:
                    self.log.warning(
                        "%s is not searchable by other users: jobs run as another user cannot "
                        "reach their sandboxes under %s", path, self.execute_dir,
                    )
            if path == os.path.dirname(path):
                return

    async def started(self) -> None:
        self._measure(time.time())
        self._evaluate()
        self._want_reschedule = True
        self._changed(*self.slots)
        self.every(self.polling_interval, self._poll, "owner-policy")

    async def stop(self) -> None:
        for starter in [*self.starters.values(), *(s for p in self.reporting.values() for s in p)]:
            await starter.abandon()
        await asyncio.get_running_loop().run_in_executor(None, launch.drain_cleaner)
        self.cgroups.close()
        self.peers.close()
        if self._negotiator is not None:
            await self._negotiator.close()

    def _read_policy(self) -> core.Policy:
        cfg = self.config
        start = cfg.get("START") or "True"
        rank = cfg.get("RANK") or "0"
        extra: dict[str, str] = {}
        for name in cfg.get_list("STARTD_ATTRS", []) or []:
            value = cfg.get(name)
            if value is not None and value.strip():
                extra[name] = value
        modify = dict(core.DEFAULT_MODIFY_REQUEST)
        for attr in modify:
            text = cfg.get(f"MODIFY_REQUEST_EXPR_{attr.upper()}")
            if text is not None and text.strip():
                modify[attr] = text
        for what, text in [("START", start), ("RANK", rank), *extra.items(), *modify.items()]:
            try:
                ExprTree(text)
            except Exception as e:  # a bad policy stops the startd here, naming the knob
                raise SystemExit(f"startd: {what} = {text!r} is not a ClassAd expression: {e}") from None
        return core.Policy(start=start, rank=rank, extra=extra, modify_request=modify)

    def _read_owner_policy(self) -> op.PolicyExprs:
        """The owner policy knobs (START and RANK are checked by ``_read_policy``).

        A knob that does not parse does not stop the startd: it is logged once and
        evaluates to ERROR, which HTCondor's policy evaluation treats as not true
        (SUSPEND, PREEMPT, KILL ... never fire, WANT_VACATE keeps the soft kill,
        MAXJOBRETIREMENTTIME counts as 0).
        """
        exprs = op.exprs_from_config(self.config.get)
        bad: dict[str, str] = {}
        for field_name, knob in _OWNER_KNOBS.items():
            text = exprs.text(field_name)
            try:
                ExprTree(text)
            except Exception as e:
                why = " ".join(str(e).split())
                self.log.error("%s = %r is not a ClassAd expression (%s): it evaluates to ERROR", knob, text, why)
                bad[field_name] = "error"
        return replace(exprs, **bad) if bad else exprs

    def _slot_types(self) -> list[core.SlotType]:
        cfg = self.config
        types: dict[int, tuple[str, int, bool]] = {}
        user_set = False
        for name in cfg.names():
            m = _SLOT_TYPE.match(name)
            if not m:
                continue
            n = int(m.group(1))
            spec = cfg.get(name) or ""
            source = cfg.source(name)
            if source is not None and source[0] != "<default>":
                user_set = True
            count = cfg.get_int(f"NUM_SLOTS_TYPE_{n}", 1)
            part = cfg.get_bool(f"SLOT_TYPE_{n}_PARTITIONABLE", False)
            types[n] = (spec, 0 if count is None else count, bool(part))
        num_slots = cfg.get_int("NUM_SLOTS")
        if num_slots and not user_set:
            types = {}
        return core.slot_types_from_config(types, num_slots)

    def _claim_ids(self):  # noqa: ANN202 (an endless iterator)
        while True:
            yield self._new_claim_id()

    def _new_claim_id(self) -> str:
        return f"{self._birth}#{next(self._claims)}#{secrets.token_hex(12)}"

    # -- ads -------------------------------------------------------------------------------

    def slot_name(self, name: str) -> str:
        return f"{name}@{self.daemon_name}"

    def slot_ad(self, name: str) -> ClassAd:
        """The slot's current ad (cached until the slot changes)."""
        ad = self._ads.get(name)
        if ad is None:
            ad = self._ads[name] = self._build_ad(self.slots[name])
        return ad

    def _build_ad(self, slot: Slot) -> ClassAd:
        """The ad of ``slot``, which need not be in the table yet (a claim being granted)."""
        assert self.machine is not None
        machine = self.machine if self.daemon_name == self.machine.name else replace(
            self.machine, name=self.daemon_name
        )
        ad = core.slot_ad(slot, machine, self.policy, self.address or "", time.time(), os.getloadavg()[0])
        ad["Machine"] = self.machine.name
        ad["CondorVersion"] = CONDOR_VERSION
        ad["CondorPlatform"] = f"$CondorPlatform: {self.machine.arch}-{self.machine.opsys_and_ver} $"
        ad["DaemonStartTime"] = int(self.start_time)
        ad["StartdPid"] = os.getpid()
        ad["UpdateInterval"] = int(self.update_interval)
        ad.update(self.owner_attrs.get(slot.name) or self._owner_attrs_for(slot))
        if self.drain:
            ad["Draining"] = True
            ad["DrainReason"] = self.drain_reason
        if slot.claim is not None and slot.claim_id in self.current_rank:
            ad["CurrentRank"] = self.current_rank[slot.claim_id]
        op.add_policy_exprs(ad, self.exprs)  # once per ad, not once per policy step
        return ad

    def ads(self) -> list[AdvertisedAd]:
        """Every slot ad, rebuilt (the periodic update refreshes load and times)."""
        self._ads.clear()
        return [("Machine", self.slot_ad(name), self._private(slot)) for name, slot in self.slots.items()]

    def _private(self, slot: Slot) -> dict[str, Any]:
        """Unclaimed: the claim id a match hands out; claimed: the id a preempting claim uses."""
        out = {"ClaimId": slot.claim_id}
        pid = self.preempt_of.get(slot.name) if slot.claim is not None else None
        if pid and slot.name not in self.preempting:
            out["PreemptClaimId"] = pid
        return out

    def _changed(self, *names: str, urgent: bool = True) -> None:
        """Slots whose ads must reach the collector in the next update round.

        Claims, releases and resource changes go out at once; a Busy/Idle flip
        on a claim (``urgent=False``, two per job with claim reuse) waits up to
        STARTD_ACTIVITY_UPDATE_DELAY so a busy pool sends a few ads a second,
        not two per job.
        """
        for name in names:
            self._ads.pop(name, None)
            self._dirty.add(name)
        if urgent:
            self._urgent = True
        if self._flushing or self.address is None:
            return
        if urgent:
            self._start_flush()
        elif self._delayed is None:
            self._delayed = asyncio.get_running_loop().call_later(self.activity_delay, self._start_flush)

    def _start_flush(self) -> None:
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        if not self._flushing:
            self._flushing = True
            self.spawn(self._flush(), "slot-updates")

    async def _flush(self) -> None:
        try:
            await asyncio.sleep(0)  # let the rest of this round of changes land first
            self._urgent = True
            while self._urgent:
                self._urgent = False
                gone, self._gone = self._gone, set()
                dirty, self._dirty = self._dirty, set()
                for name in sorted(gone):
                    await self.invalidate("Machine", self.slot_name(name))
                for name in sorted(dirty):
                    slot = self.slots.get(name)
                    if slot is None:
                        continue
                    obj = ad_to_obj(self.slot_ad(name))
                    try:
                        await self.collector_call(
                            "UPDATE_AD", type="Machine", ad=obj, private=self._private(slot)
                        )
                        self._advertised.add(("Machine", obj["Name"]))
                    except (ConnectionError, RequestError) as e:
                        self.log.warning("cannot update %s at the collector: %s", obj["Name"], e)
                        self._dirty.clear()  # the periodic update will repair it
                        break
            if self._want_reschedule:
                self._want_reschedule = False
                if any(core.is_free(s) for s in self.slots.values()):
                    await self._reschedule()
        finally:
            self._flushing = False
            if self._dirty and self._delayed is None and self.address is not None:
                # Busy/Idle flips that came in during this round wait for the next one
                self._delayed = asyncio.get_running_loop().call_later(self.activity_delay, self._start_flush)

    async def _reschedule(self) -> None:
        """Ask the negotiator for a cycle now: a slot is free for new matches."""
        for attempt in (0, 1):
            if self._negotiator is None:
                address = await self.negotiator_address()
                if address is None:
                    return
                self._negotiator = AsyncClient(address, timeout=5.0)
            try:
                await self._negotiator.call("RESCHEDULE")
                return
            except (ConnectionError, RequestError) as e:
                await self._negotiator.close()
                self._negotiator = None
                if attempt:
                    self.log.info("cannot ask the negotiator to reschedule: %s", e)

    # -- claims ----------------------------------------------------------------------------

    def handlers(self) -> dict[str, Handler]:
        return {
            "REQUEST_CLAIM": self.h_request_claim,
            "ACTIVATE_CLAIM": self.h_activate_claim,
            "KEEPALIVE": self.h_keepalive,
            "RECONNECT": self.h_reconnect,
            "DEACTIVATE_CLAIM": self.h_deactivate_claim,
            "RELEASE_CLAIM": self.h_release_claim,
            "DRAIN": self.h_drain,
            "CANCEL_DRAIN": self.h_cancel_drain,
            "VACATE": self.h_vacate,
            "SET_OFF": self.h_set_off,
            "SET_ON": self.h_set_on,
        }

    def _claimed(self, claim_id: str) -> Slot:
        """The claimed slot this claim id names; NOT_FOUND when it is no live claim."""
        name = self.by_claim.get(claim_id)
        slot = self.slots.get(name) if name else None
        if slot is None or slot.claim is None:
            raise _not_found("no such claim on this startd")
        return slot

    def _renew(self, slot: Slot, **changes: Any) -> Slot:
        assert slot.claim is not None
        claim = replace(slot.claim, lease_expires=time.time() + slot.claim.lease, **changes)
        slot = replace(slot, claim=claim)
        self.slots[slot.name] = slot
        return slot

    async def h_request_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        if claim_id in self.preempt_ids:
            return self._request_preempting(req)
        name = self.by_claim.get(claim_id)
        if name is None:
            raise _not_found("no slot has this claim id (stale match?)")
        slot = self.slots[name]
        schedd, lease = _claim_args(req, self.default_lease)
        if slot.claim is not None:
            if slot.claim.schedd_address == schedd and slot.claim.job is None:
                slot = self._renew(slot)  # a retried request: the claim is already theirs
                return {"claim_id": slot.claim_id, "slot_ad": ad_to_obj(self.slot_ad(name))}
            raise RequestError("DENIED", f"{self.slot_name(name)} is already claimed")
        if self.drain or self.off or slot.state not in ("Unclaimed", "Matched"):
            why = "draining" if self.drain else "off" if self.off else f"in state {slot.state}"
            raise RequestError("DENIED", f"{self.slot_name(name)} takes no claims: {why}")
        slot, job, ad = self._judge(name, req)
        now = time.time()
        claim = _claim_for(job, schedd, lease, now)
        try:
            if slot.kind == core.PARTITIONABLE:
                want = core.request_size(job, ad, self.policy)
                pslot, granted = core.carve(slot, want, claim, self._new_claim_id(), now)
            else:
                pslot, granted = None, core.claim_static(slot, claim, now)
        except core.SlotError as e:
            raise RequestError("DENIED", str(e)) from None
        # ACTIVATE_CLAIM judges the job on the granted slot's ad (a dynamic slot's size,
        # State Claimed): judge it on that ad now, so a job the slot would refuse to run is
        # refused before anything is carved or claimed, not after (where the schedd would
        # release, the negotiator match it again, and round it goes).
        why = core.accepts(self._build_ad(granted), job)
        if why is not None:
            raise RequestError("DENIED", f"{self.slot_name(granted.name)} as claimed: {why}")
        if pslot is not None:
            self.slots[pslot.name] = pslot
            self._changed(pslot.name)
        self.slots[granted.name] = granted
        self.by_claim[granted.claim_id] = granted.name
        self._changed(granted.name)
        self._arm_leases()
        self._claimed_now(granted, job)
        self.job_ads[granted.claim_id] = job  # TARGET of the idle claim's policy (HTCondor's claim ad)
        self.log.info("claimed %s for %s at %s", self.slot_name(granted.name), claim.user, schedd)
        return {"claim_id": granted.claim_id, "slot_ad": ad_to_obj(self.slot_ad(granted.name))}

    def _claimed_now(self, slot: Slot, job: ClassAd | None, rank: Any = None) -> None:
        """Book-keeping of a new claim: its PreemptClaimId and CurrentRank."""
        old = self.preempt_of.pop(slot.name, None)
        if old is not None:
            self.preempt_ids.pop(old, None)
        pid = self._new_claim_id()
        self.preempt_ids[pid] = slot.name
        self.preempt_of[slot.name] = pid
        if job is not None:
            rank = op.evaluate(self.exprs.rank, self.slot_ad(slot.name), job)
        self.current_rank[slot.claim_id] = rank if isinstance(rank, int | float) and not isinstance(rank, bool) else 0.0
        self._ads.pop(slot.name, None)

    def _forget_claim(self, slot: Slot) -> None:
        cid = slot.claim_id
        self.job_ads.pop(cid, None)
        self.current_rank.pop(cid, None)
        self.vacate_asked.pop(cid, None)
        self._preempt_was_true.discard(cid)
        self._acting.discard((cid, op.VACATE))
        self._acting.discard((cid, op.KILL))
        pid = self.preempt_of.pop(slot.name, None)
        if pid is not None:
            self.preempt_ids.pop(pid, None)

    def _hand_over(self, slot: Slot, pending: _Pending, now: float) -> None:
        """The preempted claim is gone: the waiting claim takes the same resources."""
        claim = replace(pending.claim, lease_expires=now + pending.claim.lease, job=None, job_start=0.0)
        slot = core.transition(slot, "Claimed", "Idle", now)
        slot = replace(slot, claim=claim, claim_id=pending.claim_id)
        self.slots[slot.name] = slot
        self.by_claim[pending.claim_id] = slot.name
        self._claimed_now(slot, None, pending.rank)
        if pending.job is not None:
            self.job_ads[pending.claim_id] = pending.job
        if not pending.ready.done():
            pending.ready.set_result(None)
        self._changed(slot.name)
        self._arm_leases()

    def _judge(self, name: str, req: dict[str, Any]) -> tuple[Slot, ClassAd, ClassAd]:
        """Count a claim request on the slot and check the job against its ad (DENIED if
        either side's Requirements say no): the slot as counted, the job ad, the slot ad."""
        # Counted whatever the answer: the negotiator settles its promises on this count.
        slot = self.slots[name] = replace(self.slots[name], claim_requests=self.slots[name].claim_requests + 1)
        self._changed(name)
        job = obj_to_ad(req["job_ad"])
        ad = self.slot_ad(name)
        why = core.accepts(ad, job)
        if why is not None:
            raise RequestError("DENIED", f"{self.slot_name(name)}: {why}")
        return slot, job, ad

    def _request_preempting(self, req: dict[str, Any]) -> dict[str, Any]:
        """REQUEST_CLAIM with a PreemptClaimId: grant at once, evict the running job, and
        hold the new claim's ACTIVATE_CLAIM until the slot is free (docs/policy.md)."""
        name = self.preempt_ids[req["claim_id"]]
        slot = self.slots.get(name)
        schedd, lease = _claim_args(req, self.default_lease)
        if slot is None or slot.claim is None:
            raise _not_found("the preempted claim is gone (stale match?)")
        if name in self.preempting:
            pending = self.preempting[name]
            if pending.claim.schedd_address == schedd:
                return {"claim_id": pending.claim_id, "slot_ad": ad_to_obj(self.slot_ad(name)), "preempting": True}
            raise RequestError("DENIED", f"{self.slot_name(name)} is already being preempted")
        if self.drain or self.off:
            raise RequestError("DENIED", f"{self.slot_name(name)} takes no claims: {'draining' if self.drain else 'off'}")
        slot, job, ad = self._judge(name, req)
        now = time.time()
        claim = _claim_for(job, schedd, lease, now)
        rank = op.evaluate(self.exprs.rank, ad, job)
        new_id = self._new_claim_id()
        self.preempting[name] = _Pending(new_id, claim, rank, asyncio.get_running_loop().create_future(), job)
        self.log.info("%s preempted by %s at %s", self.slot_name(name), claim.user, schedd)
        self._changed(name)
        self._evaluate()
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
            raise RequestError("DENIED", f"a job is already running on {self.slot_name(slot.name)}")
        if slot.name in self.preempting or slot.state != "Claimed" or self.drain or self.off:
            why = "draining" if self.drain else "off" if self.off else (
                "being preempted" if slot.name in self.preempting else f"in state {slot.state}")
            raise RequestError("DENIED", f"{self.slot_name(slot.name)} takes no new job: {why}")
        job = obj_to_ad(req["job_ad"])
        why = core.accepts(self.slot_ad(slot.name), job)
        if why is not None:
            raise RequestError("DENIED", f"{self.slot_name(slot.name)}: {why}")
        assert self.machine is not None
        try:
            spec = parse_job(job, self.machine.filesystem_domain)
        except JobSpecError as e:
            raise RequestError("BAD_REQUEST", f"ACTIVATE_CLAIM: {e}") from None
        error = None
        try:
            identity = self._identity(spec.owner)
        except JobSpecError as e:
            error, identity = str(e), None
        if (identity is not None and identity.switch and not identity.real_owner and not spec.transfer
                and str(job.get("ShouldTransferFiles") or "").upper() == "IF_NEEDED"):
            # A shared file system is only shared with the job's Owner: a job that runs as
            # SLOT_USER (root's jobs, or owners without an account here) gets its files sent.
            spec = replace(spec, transfer=True)
        sandbox_name = f"dir_{os.getpid()}_{next(self._sandboxes)}"
        sandbox = os.path.join(self.execute_dir, sandbox_name)
        starter = Starter(
            spec=spec,
            claim_id=claim_id,
            slot_name=slot.name,
            execute_dir=self.execute_dir,
            sandbox_name=sandbox_name,
            identity=identity or Identity(os.getuid(), os.getgid(), "", ""),
            env=self._job_env(spec.env, slot, sandbox, spec.transfer),
            job_ad_text=job.printOld() if spec.transfer else "",
            peers=self.peers,
            address_of=lambda: self._schedd_of(claim_id),
            on_finished=self._starter_finished,
            on_done=self._starter_done,
            cgroups=self.cgroups,
        )
        self.starters[claim_id] = starter
        self.job_ads[claim_id] = job
        now = time.time()
        slot = self._renew(slot, job=spec.job_id, job_start=now, concurrency_limits=_limits_of(job))
        self.slots[slot.name] = core.transition(slot, "Claimed", "Busy", now)
        self._changed(slot.name, urgent=False)
        if error is not None:
            starter.fail_before_start(error)
        else:
            starter.start()
        self._evaluate_soon(slot.name)
        return {}

    def _identity(self, owner: str) -> Identity:
        got = self._identities.get(owner)
        if got is None:
            got = job_identity(owner, self.allow_owner, self.slot_user)
            if len(self._identities) > 1000:
                self._identities.clear()
            self._identities[owner] = got
        return got

    def _job_env(self, env: dict[str, str], slot: Slot, sandbox: str, transfer: bool) -> dict[str, str]:
        out = dict(env)
        cpus = str(slot.total.cpus)
        out.update(
            {
                "_CONDOR_SCRATCH_DIR": sandbox,
                "_CONDOR_SLOT": slot.name,
                "TMPDIR": sandbox,
                "TEMP": sandbox,
                "TMP": sandbox,
                "BATCH_SYSTEM": "HTCondor",
                "OMP_NUM_THREADS": cpus,
                "MKL_NUM_THREADS": cpus,
                "OPENBLAS_NUM_THREADS": cpus,
            }
        )
        if transfer:
            out["_CONDOR_JOB_AD"] = os.path.join(sandbox, ".job.ad")
        if slot.total.gpus:
            out["CUDA_VISIBLE_DEVICES"] = ",".join(g.rsplit("-", 1)[-1] for g in slot.total.gpus)
            out["_CONDOR_AssignedGPUs"] = ",".join(slot.total.gpus)
        return out

    def _schedd_of(self, claim_id: str) -> str | None:
        name = self.by_claim.get(claim_id)
        slot = self.slots.get(name) if name else None
        return slot.claim.schedd_address if slot is not None and slot.claim is not None else None

    def _starter_finished(self, starter: Starter) -> None:
        """The job's processes are gone: the claim is Idle (its report may still be in flight)."""
        if self.starters.get(starter.claim_id) is starter:
            del self.starters[starter.claim_id]
            self.reporting.setdefault(starter.claim_id, []).append(starter)
        name = self.by_claim.get(starter.claim_id)
        slot = self.slots.get(name) if name else None
        if slot is None or slot.claim is None or slot.claim.job != starter.spec.job_id:
            return
        slot = replace(slot, claim=replace(slot.claim, job=None, job_start=0.0))
        if slot.state == "Claimed":
            slot = core.transition(slot, "Claimed", "Idle", time.time())
        self.slots[slot.name] = slot  # Preempting stays so until the claim ends
        self._changed(slot.name, urgent=False)
        self._evaluate_soon(slot.name)

    def _starter_done(self, starter: Starter) -> None:
        pending = self.reporting.get(starter.claim_id)
        if pending and starter in pending:
            pending.remove(starter)
            if not pending:
                del self.reporting[starter.claim_id]
        self._starter_finished(starter)
        name = self.by_claim.get(starter.claim_id)
        if name is not None:
            self._evaluate_soon(name)

    async def h_keepalive(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        waiting = self._pending_by_id(req["claim_id"])
        if waiting is not None:
            pending = waiting[1]
            pending.claim = replace(pending.claim, lease_expires=time.time() + pending.claim.lease)
            return {"state": "Idle"}
        slot = self._renew(self._claimed(req["claim_id"]))
        return {"state": slot.activity}

    async def h_reconnect(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        claim_id = req["claim_id"]
        slot = self._claimed(claim_id)
        slot = self._renew(slot, schedd_address=req["schedd_address"])
        self._ads.pop(slot.name, None)
        self.log.info("claim on %s reconnected from %s", self.slot_name(slot.name), req["schedd_address"])
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
        graceful = req.get("graceful")
        self.log.info(
            "vacating job %s on %s (%s)", starter.spec.job_id, self.slot_name(slot.name),
            "graceful" if graceful else "fast",
        )
        result = await starter.vacate(bool(graceful) if graceful is not None else True)
        return {"job": starter.spec.job_id, **result}

    async def h_release_claim(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        waiting = self._pending_by_id(req["claim_id"])
        if waiting is not None:  # the preempting schedd gave up before the slot was free
            name, pending = waiting
            del self.preempting[name]
            if not pending.ready.done():
                pending.ready.cancel()
            self._evaluate_soon(name)
            return {}
        slot = self._claimed(req["claim_id"])
        await self._release(slot.name, "released by its schedd")
        return {}

    async def _release(self, name: str, why: str) -> None:
        slot = self.slots.get(name)
        if slot is None or slot.claim is None:
            return
        claim_id = slot.claim_id
        starter = self.starters.pop(claim_id, None)
        if starter is not None:
            self.log.info("killing job %s on %s: claim %s", starter.spec.job_id, self.slot_name(name), why)
            await starter.abandon()
        for reporting in self.reporting.pop(claim_id, []):
            await reporting.abandon()
        slot = self.slots.get(name)
        if slot is None or slot.claim is None or slot.claim_id != claim_id:
            return  # ended meanwhile (another release, a lease); the slot may hold a new claim now
        self.by_claim.pop(slot.claim_id, None)
        self._forget_claim(slot)
        now = time.time()
        pending = self.preempting.pop(name, None)
        if pending is not None:
            self._hand_over(slot, pending, now)
            self.log.info("claim on %s ended (%s); the preempting claim takes it", self.slot_name(name), why)
            return
        if slot.kind == core.DYNAMIC:
            assert slot.parent is not None
            parent = core.give_back(self.slots[slot.parent], slot)
            self.slots[parent.name] = parent
            del self.slots[name]
            self._ads.pop(name, None)
            self._dirty.discard(name)
            self._gone.add(name)
            self._changed(parent.name)
        else:
            fresh = core.unclaim_static(slot, self._new_claim_id(), now)
            self.slots[name] = fresh
            self.by_claim[fresh.claim_id] = name
            self._changed(name)
        self._want_reschedule = True
        self._evaluate_soon(slot.parent if slot.kind == core.DYNAMIC and slot.parent else name)
        self.log.info("claim on %s ended: %s", self.slot_name(name), why)

    # -- owner policy ------------------------------------------------------------------------

    def _measure(self, now: float) -> None:
        """Idle times and loads into every slot's ad (owner.py)."""
        idle = self.monitor.idle(now)
        loads: dict[str, float] = {}
        used: dict[str, float | None] = {}
        by_group: dict[str, int] = {}
        for name, slot in self.slots.items():
            starter = self.starters.get(slot.claim_id) if slot.claim is not None else None
            if starter is None:
                used[name] = None
                continue
            path = self.cgroups.path(starter.name)
            got = owner.cgroup_cpu_seconds(path) if path is not None else None
            if got is None and starter.pid:
                by_group[name] = starter.pid  # the job leads its own process group
            used[name] = got
        if by_group:
            groups = owner.cpu_by_group(by_group.values())
            for name, pgid in by_group.items():
                used[name] = groups.get(pgid)
        for name, cpu in used.items():
            loads[name] = self.monitor.job_load(name, cpu, now)
        self.monitor.forget(self.slots)
        total_cpus = self.machine.total.cpus if self.machine is not None else 0
        cpus = {n: s.total.cpus for n, s in self.slots.items()}
        total_load = owner.host_load()
        self._last_owner = (idle, total_load)
        self.owner_attrs = owner.slot_attrs(idle, total_load, loads, cpus, total_cpus, self._connected(now))
        for name in self.slots:
            self._ads.pop(name, None)
        self._latch(now)

    def _latch(self, now: float) -> None:
        """STARTD_LATCH_EXPRS: each named expression's value as <name>Value and the time it
        took that value as <name>Time (the Desktop policy's CpuBusyTimer reads them)."""
        names = self.config.get_list("STARTD_LATCH_EXPRS", []) or []
        if not names:
            return
        for slot_name in self.slots:
            ad = self.slot_ad(slot_name)
            attrs = self.owner_attrs.setdefault(slot_name, {})
            for name in names:
                text = self.config.get(name)
                if not text:
                    continue
                value = op.evaluate(text, ad, None)
                if not isinstance(value, bool | int | float | str):
                    value = None
                latched = self._latched.get((slot_name, name))
                if latched is None or latched[0] != value:
                    latched = self._latched[(slot_name, name)] = (value, int(now))
                if value is None:
                    attrs.pop(f"{name}Value", None)
                else:
                    attrs[f"{name}Value"] = int(value) if isinstance(value, bool) else value
                attrs[f"{name}Time"] = latched[1]
            self._ads.pop(slot_name, None)
        for key in [k for k in self._latched if k[0] not in self.slots]:
            del self._latched[key]

    def _slots_knob(self, name: str) -> int | None:
        """SLOTS_CONNECTED_TO_* / DISCONNECTED_KEYBOARD_IDLE_BOOST; a bad value is logged
        and counts as the default (no slot connected; a boost of 1200 s)."""
        default = 1200 if name == "DISCONNECTED_KEYBOARD_IDLE_BOOST" else 0
        try:
            v = self.config.get_int(name, default)
        except ConfigError as e:
            self.log.error("ignoring %s: %s", name, e)
            return default
        return None if v is None else max(0, v)

    def _connected(self, now: float) -> owner.Connected | None:
        """Which slots see the keyboard and console now (None: all of them)."""
        kbd, con, boost = self._connected_knobs
        if kbd is None and con is None:
            return None
        return owner.Connected(kbd, con, int(now - self.start_time) + (boost or 0))

    def _owner_attrs_for(self, slot: Slot) -> dict[str, Any]:
        """Owner attributes of a slot carved since the last measurement: the machine's
        idle times and load as last measured, no job load yet."""
        idle, total = self._last_owner
        total_cpus = self.machine.total.cpus if self.machine is not None else 0
        attrs = owner.slot_attrs(idle, total, {}, {slot.name: slot.total.cpus}, total_cpus,
                                 self._connected(time.time()))[slot.name]
        attrs["TotalCondorLoadAvg"] = next(iter(self.owner_attrs.values()), {}).get("TotalCondorLoadAvg", 0.0)
        return attrs

    async def _poll(self) -> None:
        self._measure(time.time())
        self._evaluate()

    def _evaluate_soon(self, *names: str) -> None:
        """Evaluate the policy of these slots (and their parents) once this event is handled."""
        for name in names:
            self._eval_names.add(name)
            parent = self.slots[name].parent if name in self.slots else None
            if parent is not None:
                self._eval_names.add(parent)
        if self._eval_soon is None:
            self._eval_soon = asyncio.get_running_loop().call_soon(self._evaluate_pending)

    def _evaluate_pending(self) -> None:
        names, self._eval_names = self._eval_names, set()
        self._evaluate(names)

    def _view(self, slot: Slot) -> op.SlotView:
        claim = slot.claim
        children = sum(1 for s in self.slots.values() if s.parent == slot.name) if slot.kind == core.PARTITIONABLE else 0
        return op.SlotView(
            state=slot.state,
            activity=slot.activity,
            entered_state=slot.entered_state,
            entered_activity=slot.entered_activity,
            claimed=claim is not None,
            job=claim is not None and slot.claim_id in self.starters,
            job_start=claim.job_start if claim is not None else 0.0,
            drain=self.drain,
            off=self.off,
            preempt=slot.name in self.preempting,
            vacate=self.vacate_asked.get(slot.claim_id) if claim is not None else None,
            children=children,
            preempt_was_true=claim is not None and slot.claim_id in self._preempt_was_true,
        )

    def _evaluate(self, names: set[str] | None = None) -> None:
        """One step of the owner policy for every slot, or for ``names`` (roost.core.ownerpolicy)."""
        if names is None:
            if self._eval_soon is not None:
                self._eval_soon.cancel()
            self._eval_names.clear()
        self._eval_soon = None
        now = time.time()
        for name in list(self.slots) if names is None else sorted(names):
            slot = self.slots.get(name)
            if slot is None:
                continue
            job = self.job_ads.get(slot.claim_id) if slot.claim is not None else None
            ad = self._constant_ad if self._constant_ad is not None else self.slot_ad(name)
            try:
                st = op.step(self._view(slot), ad, job, self.exprs, now)
            except Exception:
                self.log.exception("owner policy on %s failed", self.slot_name(name))
                continue
            self._apply(slot, st, now)

    def _apply(self, slot: Slot, st: op.Step, now: float) -> None:
        name = slot.name
        if (st.state, st.activity) != (slot.state, slot.activity):
            try:
                moved = core.transition(slot, st.state, st.activity, now)
            except core.SlotError as e:
                self.log.warning("owner policy: %s", e)
                moved = slot
            if moved is not slot:
                self.log.info("%s: %s/%s -> %s/%s%s", self.slot_name(name), slot.state, slot.activity,
                              st.state, st.activity, f" ({', '.join(st.actions)})" if st.actions else "")
                self.slots[name] = slot = moved
                freed = st.state == "Unclaimed" and slot.claim is None
                if freed:
                    self._want_reschedule = True
                self._changed(name)
        starter = self.starters.get(slot.claim_id) if slot.claim is not None else None
        for action in st.actions:
            if action == op.SUSPEND and starter is not None:
                starter.suspend()
            elif action == op.CONTINUE and starter is not None:
                starter.resume()
            elif action == op.PREEMPTED and slot.claim is not None:
                self._preempt_was_true.add(slot.claim_id)
            elif action in (op.VACATE, op.KILL) and starter is not None:
                key = (slot.claim_id, action)
                if key not in self._acting:
                    self._acting.add(key)
                    self.log.info("%s job %s on %s", "vacating" if action == op.VACATE else "killing",
                                  starter.spec.job_id, self.slot_name(name))
                    self.spawn(starter.vacate(action == op.VACATE), f"{action} {starter.spec.job_id}")
            elif action == op.RELEASE and slot.claim is not None:
                if slot.claim_id in self.reporting or (slot.claim_id, "release") in self._acting:
                    continue  # the job's last report goes out first
                self._acting.add((slot.claim_id, "release"))
                self.spawn(self._release_for_policy(name, slot.claim_id), "policy-release")

    async def _release_for_policy(self, name: str, claim_id: str) -> None:
        try:
            slot = self.slots.get(name)
            if slot is not None and slot.claim_id == claim_id:
                await self._release(name, "given up by the owner policy")
        finally:
            self._acting.discard((claim_id, "release"))

    # -- owner commands (roost drain / vacate / off / on) ---------------------------------

    async def h_drain(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        how = req.get("how") or "graceful"
        if how not in ("graceful", "quick", "fast"):
            raise RequestError("BAD_REQUEST", f"DRAIN: how must be graceful, quick or fast, not {how!r}")
        reason = req.get("reason")
        self.drain = how
        self.drain_reason = str(reason) if reason else "by command"
        busy = sum(1 for s in self.slots.values() if s.claim is not None)
        self.log.info("draining (%s): %s; %d claims", how, self.drain_reason, busy)
        self._changed(*self.slots)
        self._evaluate()
        return {"how": how, "claims": busy}

    async def h_cancel_drain(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        was = self.drain
        self.drain = None
        self.drain_reason = ""
        # the policy step unretires jobs that retire only for the drain
        self._changed(*self.slots)
        self._want_reschedule = True
        self._evaluate()
        self.log.info("drain cancelled" if was else "cancel drain: was not draining")
        return {"was_draining": was is not None}

    async def h_vacate(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        how = "fast" if req.get("fast") else "graceful"
        n = 0
        for slot in self.slots.values():
            if slot.claim is not None and slot.claim_id in self.starters:
                self.vacate_asked[slot.claim_id] = how
                n += 1
        self.log.info("vacate (%s) asked: %d jobs", how, n)
        self._evaluate()
        return {"jobs": n}

    async def h_set_off(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.off = True
        self.log.info("off: slots are no longer offered")
        self._changed(*self.slots)
        self._evaluate()
        return {}

    async def h_set_on(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.off = False
        self.log.info("on: slots are offered again")
        self._want_reschedule = True
        self._changed(*self.slots)
        self._evaluate()
        return {}

    # -- leases ----------------------------------------------------------------------------

    def _arm_leases(self) -> None:
        if self._lease_task is None or self._lease_task.done():
            self._lease_task = self.spawn(self._lease_loop(), "claim-leases")

    async def _lease_loop(self) -> None:
        """Sleep until the earliest lease runs out; release claims whose lease did."""
        while True:
            deadlines = [
                s.claim.lease_expires for s in self.slots.values() if s.claim is not None and s.claim.lease > 0
            ]
            if not deadlines:
                return
            now = time.time()
            soonest = min(deadlines)
            if soonest > now:
                await asyncio.sleep(soonest - now + 0.01)
                continue
            for name in core.expired(self.slots.values(), now):
                await self._release(name, "lease expired (no keep-alive from its schedd)")


def main() -> None:
    from roost.daemons.base import run

    run(Startd)
