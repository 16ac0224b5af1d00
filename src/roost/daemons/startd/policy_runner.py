"""The startd's owner policy at work: START, IS_OWNER, SUSPEND, CONTINUE, PREEMPT,
KILL, WANT_SUSPEND, WANT_VACATE and MaxJobRetirementTime (``roost.core.ownerpolicy``)
applied to the slots, and the owner's commands (roost drain / vacate / off / on).

Every POLLING_INTERVAL seconds ``OwnerPolicy`` measures idle times and loads
(``owner.OwnerMonitor``, which only measures) into the slot ads, and after every
claim or job event it runs one pure policy step per slot and acts on the outcome:
state changes, SIGSTOP/SIGCONT and the cgroup freezer, vacate or kill through the
starter, and releasing claims the policy gives up. It owns what the owner wants
(draining, off, vacate requests) and the policy's own book-keeping; the slot table
and ads belong to the startd (``Host``), the claims to ``claims.Claims``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from roost.classad import ClassAd, ExprTree
from roost.config import Config
from roost.config.errors import ConfigError
from roost.core import claimstates as cs
from roost.core import ownerpolicy as op
from roost.core import slots as core
from roost.core.slots import Slot
from roost.daemons.startd import owner
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.claims import Claims
from roost.net.errors import RequestError
from roost.net.server import Peer
from roost.vocabulary import Activity, SlotState

# PolicyExprs field -> the knob it comes from (for messages)
_OWNER_KNOBS = {
    "is_owner": "IS_OWNER", "suspend": "SUSPEND", "continue_": "CONTINUE", "preempt": "PREEMPT",
    "kill": "KILL", "want_suspend": "WANT_SUSPEND", "want_vacate": "WANT_VACATE",
    "max_job_retirement_time": "MAXJOBRETIREMENTTIME", "machine_max_vacate_time": "MachineMaxVacateTime",
}


class Host(Protocol):
    """What the owner policy needs of the startd around it (``Startd``): its slot
    table, the slot ads, and the daemon's services."""

    config: Config
    log: logging.Logger
    home: Path
    start_time: float
    slots: dict[str, Slot]
    machine: core.Machine | None
    cgroups: JobCgroups
    want_reschedule: bool  # ask the negotiator for a cycle after this round of ads

    def slot_name(self, name: str) -> str: ...

    def slot_ad(self, name: str) -> ClassAd: ...

    def changed(self, *names: str, urgent: bool = True) -> None: ...

    def forget_ad(self, name: str, owner_only: bool = False) -> None: ...

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]: ...


class OwnerPolicy:
    """The owner policy of this startd's slots, evaluated on a timer and after every event."""

    # The claims it acts on, set by the startd once both exist: the policy vacates and
    # releases claims, and claim events step the policy (claims.PolicyHooks).
    claims: Claims

    def __init__(self, host: Host) -> None:
        self.host = host
        self.config = cfg = host.config
        self.log = host.log
        self.exprs = op.PolicyExprs()
        self._constant_ad: ClassAd | None = None
        self.polling_interval = max(cfg.get_float("POLLING_INTERVAL", 5.0) or 5.0, 0.05)
        activity = cfg.get("STARTD_ACTIVITY_FILE")
        if activity is None:
            activity = str(host.home / "activity")
        devices = cfg.get("STARTD_OWNER_DEVICES")
        self.monitor = owner.OwnerMonitor(activity.strip() or None,
                                          owner.DEFAULT_DEVICES if devices is None else devices)
        self._connected_knobs = (self._slots_knob("SLOTS_CONNECTED_TO_KEYBOARD"),
                                  self._slots_knob("SLOTS_CONNECTED_TO_CONSOLE"),
                                  self._slots_knob("DISCONNECTED_KEYBOARD_IDLE_BOOST") or 0)
        self.owner_attrs: dict[str, dict[str, Any]] = {}
        self._latched: dict[tuple[str, str], tuple[Any, int]] = {}
        #: slots at a fixpoint of a constant policy: (the Slot, its view) when its last step
        #: kept it as it was and did nothing; the same again needs no step (issue 27: a poll
        #: stepped 10,000 unchanged Busy slots, ~1.5 s of the event loop every 5 s)
        self._settled: dict[str, tuple[Slot, op.SlotView]] = {}
        self._last_owner: tuple[tuple[int, int], float] = (self.monitor.idle(time.time()), owner.host_load())
        self.drain: str | None = None  # graceful / quick / fast while draining
        self.drain_reason = ""
        self.off = False
        self.vacate_asked: dict[str, str] = {}  # claim id -> graceful / fast (roost vacate)
        self._eval_soon: asyncio.Handle | None = None
        self._eval_names: set[str] = set()
        self._acting: set[tuple[str, str]] = set()  # (claim id, vacate|kill) in progress
        self._preempt_was_true: set[str] = set()  # claim ids whose retirement PREEMPT started

    def load_policy(self) -> None:
        """Read the policy knobs (at start)."""
        self.exprs = self._read_owner_policy()
        self._settled = {}
        # with constant expressions the policy reads no ad: one fixed ad serves every step
        self._constant_ad = ClassAd() if op.is_constant(self.exprs) else None
        if self._constant_ad is not None:
            op.add_policy_exprs(self._constant_ad, self.exprs)

    def _read_owner_policy(self) -> op.PolicyExprs:
        """The owner policy knobs (START and RANK are checked by ``slotconfig.read_policy``).

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

    def forget_claim(self, claim_id: str) -> None:
        """A claim ended: drop what the policy kept about it."""
        self.vacate_asked.pop(claim_id, None)
        self._preempt_was_true.discard(claim_id)
        self._acting.discard((claim_id, op.VACATE))
        self._acting.discard((claim_id, op.KILL))

    # -- owner policy ------------------------------------------------------------------------

    def measure(self, now: float) -> None:
        """Idle times and loads into every slot's ad (owner.py)."""
        idle = self.monitor.idle(now)
        loads: dict[str, float] = {}
        used: dict[str, float | None] = {}
        by_group: dict[str, int] = {}
        for name, slot in self.host.slots.items():
            starter = self.claims.starters.get(slot.claim_id) if slot.claim is not None else None
            if starter is None:
                used[name] = None
                continue
            path = self.host.cgroups.path(starter.name)
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
        self.monitor.forget(self.host.slots)
        total_cpus = self.host.machine.total.cpus if self.host.machine is not None else 0
        cpus = {n: s.total.cpus for n, s in self.host.slots.items()}
        total_load = owner.host_load()
        self._last_owner = (idle, total_load)
        self.owner_attrs = owner.slot_attrs(idle, total_load, loads, cpus, total_cpus, self._connected(now))
        for name in self.host.slots:
            self.host.forget_ad(name, owner_only=True)
        self._latch(now)

    def _latch(self, now: float) -> None:
        """STARTD_LATCH_EXPRS: each named expression's value as <name>Value and the time it
        took that value as <name>Time (the Desktop policy's CpuBusyTimer reads them)."""
        names = self.config.get_list("STARTD_LATCH_EXPRS", []) or []
        if not names:
            return
        for slot_name in self.host.slots:
            ad = self.host.slot_ad(slot_name)
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
                    if attrs.pop(f"{name}Value", None) is not None:
                        self.host.forget_ad(slot_name)  # an attribute gone: the whole ad goes
                else:
                    attrs[f"{name}Value"] = int(value) if isinstance(value, bool) else value
                attrs[f"{name}Time"] = latched[1]
            self.host.forget_ad(slot_name, owner_only=True)
        for key in [k for k in self._latched if k[0] not in self.host.slots]:
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
        return owner.Connected(kbd, con, int(now - self.host.start_time) + (boost or 0))

    def owner_attrs_for(self, slot: Slot) -> dict[str, Any]:
        """Owner attributes of a slot carved since the last measurement: the machine's
        idle times and load as last measured, no job load yet."""
        idle, total = self._last_owner
        total_cpus = self.host.machine.total.cpus if self.host.machine is not None else 0
        attrs = owner.slot_attrs(idle, total, {}, {slot.name: slot.total.cpus}, total_cpus,
                                 self._connected(time.time()))[slot.name]
        attrs["TotalCondorLoadAvg"] = next(iter(self.owner_attrs.values()), {}).get("TotalCondorLoadAvg", 0.0)
        return attrs

    async def poll(self) -> None:
        """Every POLLING_INTERVAL: measure, then one policy step for every slot."""
        self.measure(time.time())
        self.evaluate()

    def evaluate_soon(self, *names: str) -> None:
        """Evaluate the policy of these slots (and their parents) once this event is handled."""
        for name in names:
            self._eval_names.add(name)
            parent = self.host.slots[name].parent if name in self.host.slots else None
            if parent is not None:
                self._eval_names.add(parent)
        if self._eval_soon is None:
            self._eval_soon = asyncio.get_running_loop().call_soon(self._evaluate_pending)

    def _evaluate_pending(self) -> None:
        names, self._eval_names = self._eval_names, set()
        self.evaluate(names)

    def _view(self, slot: Slot) -> op.SlotView:
        claim = slot.claim
        children = sum(1 for s in self.host.slots.values() if s.parent == slot.name) if slot.kind == core.PARTITIONABLE else 0
        return op.SlotView(
            state=slot.state,
            activity=slot.activity,
            entered_state=slot.entered_state,
            entered_activity=slot.entered_activity,
            claimed=claim is not None,
            job=claim is not None and slot.claim_id in self.claims.starters,
            job_start=claim.job_start if claim is not None else 0.0,
            drain=self.drain,
            off=self.off,
            preempt=slot.name in self.claims.preempting,
            vacate=self.vacate_asked.get(slot.claim_id) if claim is not None else None,
            children=children,
            preempt_was_true=claim is not None and slot.claim_id in self._preempt_was_true,
        )

    def evaluate(self, names: set[str] | None = None) -> None:
        """One step of the owner policy for every slot, or for ``names`` (roost.core.ownerpolicy)."""
        if names is None:
            if self._eval_soon is not None:
                self._eval_soon.cancel()
            self._eval_names.clear()
        self._eval_soon = None
        now = time.time()
        slots, settled, constant = self.host.slots, self._settled, self._constant_ad
        if names is None:
            for gone in [n for n in settled if n not in slots]:
                del settled[gone]
        for name in list(slots) if names is None else sorted(names):
            slot = slots.get(name)
            if slot is None:
                settled.pop(name, None)
                continue
            view = self._view(slot)
            if constant is not None:
                # a constant policy reads no ad: its step is a function of the view and, in
                # retirement and vacating only, of the clock
                last = settled.get(name)
                if last is not None and last[0] is slot and last[1] == view:
                    continue
            job = self.claims.job_ads.get(slot.claim_id) if slot.claim is not None else None
            ad = constant if constant is not None else self.host.slot_ad(name)
            try:
                st = op.step(view, ad, job, self.exprs, now)
            except Exception:
                self.log.exception("owner policy on %s failed", self.host.slot_name(name))
                continue
            if (constant is not None and not st.actions and (st.state, st.activity) == (slot.state, slot.activity)
                    and slot.state != SlotState.PREEMPTING and slot.activity != Activity.RETIRING):
                settled[name] = (slot, view)
            else:
                settled.pop(name, None)
            self._apply(slot, st, now)

    def _apply(self, slot: Slot, st: op.Step, now: float) -> None:
        name = slot.name
        if (st.state, st.activity) != (slot.state, slot.activity):
            try:
                if not cs.is_move((slot.state, slot.activity), (st.state, st.activity)):
                    raise core.SlotError(f"{name}: {slot.state}/{slot.activity} -> {st.state}/{st.activity} "
                                         "is no move of the claim table")
                moved = core.transition(slot, st.state, st.activity, now)
            except core.SlotError as e:
                self.log.warning("owner policy: %s", e)
                moved = slot
            if moved is not slot:
                self.log.info("%s: %s/%s -> %s/%s%s", self.host.slot_name(name), slot.state, slot.activity,
                              st.state, st.activity, f" ({', '.join(st.actions)})" if st.actions else "")
                self.host.slots[name] = slot = moved
                freed = st.state == SlotState.UNCLAIMED and slot.claim is None
                if freed:
                    self.host.want_reschedule = True
                self.host.changed(name)
        starter = self.claims.starters.get(slot.claim_id) if slot.claim is not None else None
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
                                  starter.spec.job_id, self.host.slot_name(name))
                    self.host.spawn(starter.vacate(action == op.VACATE), f"{action} {starter.spec.job_id}")
            elif action == op.RELEASE and slot.claim is not None:
                if slot.claim_id in self.claims.reporting or (slot.claim_id, "release") in self._acting:
                    continue  # the job's last report goes out first
                self._acting.add((slot.claim_id, "release"))
                self.host.spawn(self._release_for_policy(name, slot.claim_id), "policy-release")

    async def _release_for_policy(self, name: str, claim_id: str) -> None:
        try:
            slot = self.host.slots.get(name)
            if slot is not None and slot.claim_id == claim_id:
                await self.claims.release(name, "given up by the owner policy", cs.POLICY_RELEASE)
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
        busy = sum(1 for s in self.host.slots.values() if s.claim is not None)
        self.log.info("draining (%s): %s; %d claims", how, self.drain_reason, busy)
        self.host.changed(*self.host.slots)
        self.evaluate()
        return {"how": how, "claims": busy}

    async def h_cancel_drain(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        was = self.drain
        self.drain = None
        self.drain_reason = ""
        # the policy step unretires jobs that retire only for the drain
        self.host.changed(*self.host.slots)
        self.host.want_reschedule = True
        self.evaluate()
        self.log.info("drain cancelled" if was else "cancel drain: was not draining")
        return {"was_draining": was is not None}

    async def h_vacate(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        how = "fast" if req.get("fast") else "graceful"
        n = 0
        for slot in self.host.slots.values():
            if slot.claim is not None and slot.claim_id in self.claims.starters:
                self.vacate_asked[slot.claim_id] = how
                n += 1
        self.log.info("vacate (%s) asked: %d jobs", how, n)
        self.evaluate()
        return {"jobs": n}

    async def h_set_off(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.off = True
        self.log.info("off: slots are no longer offered")
        self.host.changed(*self.host.slots)
        self.evaluate()
        return {}

    async def h_set_on(self, req: dict[str, Any], peer: Peer) -> dict[str, Any]:
        self.off = False
        self.log.info("on: slots are offered again")
        self.host.want_reschedule = True
        self.host.changed(*self.host.slots)
        self.evaluate()
        return {}
