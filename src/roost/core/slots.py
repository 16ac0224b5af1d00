"""Slots of one execute machine: layout, carving, returning, and their ads.

Pure: every function takes the state (and the time) and returns new state;
slots are frozen, so the startd replaces them in its table and a test can
compare before and after. Claim ids are passed in (the caller owns
randomness).

HTCondor's model, kept here:

- A machine's resources are split into *slot types* (``SLOT_TYPE_n``,
  ``NUM_SLOTS_TYPE_n``, ``SLOT_TYPE_n_PARTITIONABLE``); slots are numbered
  slot1, slot2 ... across the types in type order.
- A *partitionable* slot is never claimed itself: a claim request carves a
  *dynamic* slot (slot1_1, slot1_2 ...) sized by the job's RequestCpus,
  RequestMemory and RequestDisk after the ``MODIFY_REQUEST_EXPR_*``
  quantization, and releasing that claim gives the resources back.
- A *static* slot is claimed whole; its claim id changes on release, so an
  old holder cannot use it again.
- State and Activity follow HTCondor's names (Owner, Unclaimed, Matched,
  Claimed, Preempting, Drained; Idle, Busy, Suspended, Retiring, Vacating,
  Killing). ``vocabulary.SLOT_MOVES`` lists the transitions; the owner policy
  (``roost.core.ownerpolicy``: START, SUSPEND, PREEMPT ...) decides where a
  slot goes and the startd moves it with ``transition``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from roost.classad import ClassAd, ExprTree, Value
from roost.vocabulary import SLOT_ACTIVITIES, SLOT_MOVES, Activity, SlotState

PARTITIONABLE = "Partitionable"
DYNAMIC = "Dynamic"
STATIC = "Static"

# HTCondor's defaults for MODIFY_REQUEST_EXPR_REQUEST{CPUS,MEMORY,DISK}.
DEFAULT_MODIFY_REQUEST = {
    "RequestCpus": "quantize(RequestCpus, {1})",
    "RequestMemory": "quantize(RequestMemory, {128})",
    "RequestDisk": "quantize(RequestDisk, {1024})",
}


class SlotError(Exception):
    """A slot operation that cannot be done (bad layout, no room, wrong state)."""


class SlotConfigError(SlotError):
    """SLOT_TYPE_n / NUM_SLOTS settings that do not describe this machine."""


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of machine: CPUs, memory in MiB, disk in KiB, and named GPUs."""

    cpus: int
    memory: int
    disk: int
    gpus: tuple[str, ...] = ()

    def fits_in(self, other: Resources) -> bool:
        return (
            self.cpus <= other.cpus
            and self.memory <= other.memory
            and self.disk <= other.disk
            and len(self.gpus) <= len(other.gpus)
        )

    def minus(self, part: Resources) -> Resources:
        gone = set(part.gpus)
        return Resources(
            self.cpus - part.cpus,
            self.memory - part.memory,
            self.disk - part.disk,
            tuple(g for g in self.gpus if g not in gone),
        )

    def plus(self, part: Resources, order: tuple[str, ...] = ()) -> Resources:
        gpus = set(self.gpus) | set(part.gpus)
        ordered = tuple(g for g in order if g in gpus) + tuple(
            sorted(g for g in gpus if g not in order)
        )
        return Resources(
            self.cpus + part.cpus, self.memory + part.memory, self.disk + part.disk, ordered
        )


@dataclass(frozen=True, slots=True)
class Machine:
    """Facts about the host that every slot ad repeats."""

    name: str  # FQDN, as HTCondor's Machine attribute
    total: Resources
    arch: str = "X86_64"
    opsys: str = "LINUX"
    opsys_and_ver: str = "LINUX"
    opsys_name: str = "Linux"
    opsys_major_ver: int = 0
    gpu_names: tuple[str, ...] = ()
    #: (GPU id, its properties as ClassAd text), for AvailableGPUs (require_gpus)
    gpu_props: tuple[tuple[str, str], ...] = ()
    detected_cpus: int = 0
    detected_memory: int = 0
    uid_domain: str = ""
    filesystem_domain: str = ""


@dataclass(frozen=True, slots=True)
class Policy:
    """The machine owner's expressions, as ClassAd text (START, RANK, ...)."""

    start: str = "True"
    rank: str = "0"
    extra: Mapping[str, str] = field(default_factory=dict)  # STARTD_ATTRS: name -> expr text
    modify_request: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_MODIFY_REQUEST))


@dataclass(frozen=True, slots=True)
class Claim:
    """Who holds a claimed slot and what runs on it."""

    schedd_address: str = ""
    user: str = ""  # the job's User (owner@domain)
    owner: str = ""
    lease: float = 0.0  # seconds; 0 means never expires
    lease_expires: float = 0.0
    job: str | None = None  # "C.P" while a job is active
    job_start: float = 0.0
    concurrency_limits: str = ""  # the job's ConcurrencyLimits: the negotiator counts them in use


@dataclass(frozen=True, slots=True)
class Slot:
    """One slot. A partitionable slot's ``free`` is what it has not carved away."""

    name: str  # "slot1", "slot1_3"
    slot_id: int
    type_id: int
    kind: str  # STATIC / PARTITIONABLE / DYNAMIC
    total: Resources
    free: Resources
    claim_id: str
    state: str = SlotState.UNCLAIMED
    activity: str = Activity.IDLE
    entered_state: float = 0.0
    entered_activity: float = 0.0
    parent: str | None = None
    sub_id: int = 0
    next_child: int = 1
    claim: Claim | None = None
    claim_requests: int = 0  # claim requests answered, granted or denied (NumClaimRequests)


@dataclass(frozen=True, slots=True)
class SlotType:
    type_id: int
    spec: str  # "100%", "1/4", "cpus=2, memory=25%, disk=10%"
    count: int
    partitionable: bool


# -- layout ------------------------------------------------------------------------

_UNIT = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
_DISK_UNIT = {"": 1, "K": 1, "M": 1024, "G": 1024 * 1024, "T": 1024 * 1024 * 1024}
_KEYS = {
    "cpus": "cpus", "cpu": "cpus", "c": "cpus",
    "memory": "memory", "mem": "memory", "ram": "memory", "r": "memory", "m": "memory",
    "disk": "disk", "d": "disk",
    "gpus": "gpus", "gpu": "gpus",
    "swap": "swap", "s": "swap",
}
_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)B?\s*$", re.I)


def _share(text: str, total: int, resource: str, where: str) -> int:
    """One resource amount of a slot type: a count, N%, a fraction a/b, or auto."""
    t = text.strip()
    if t.endswith("%"):
        try:
            return int(total * float(t[:-1]) / 100)
        except ValueError:
            raise SlotConfigError(f"{where}: bad percentage {text!r}") from None
    if "/" in t:
        num, _, den = t.partition("/")
        try:
            return int(total * float(num) / float(den))
        except (ValueError, ZeroDivisionError):
            raise SlotConfigError(f"{where}: bad fraction {text!r}") from None
    m = _AMOUNT.match(t)
    if not m:
        raise SlotConfigError(f"{where}: bad amount {text!r} for {resource}")
    value, unit = float(m.group(1)), m.group(2).upper()
    if resource == "memory":
        value *= _UNIT[unit]
    elif resource == "disk":
        value *= _DISK_UNIT[unit]
    elif unit:
        raise SlotConfigError(f"{where}: {resource} takes no unit ({text!r})")
    return int(value)


def _parse_spec(spec: str, total: Resources, where: str) -> dict[str, int]:
    """Amounts a slot type names; resources it leaves out are missing (filled by 'auto')."""
    spec = spec.strip()
    if not spec or spec.lower() == "auto":
        return {}
    if "=" not in spec:  # one share of everything: "25%", "1/4"
        out = {}
        for res in ("cpus", "memory", "disk", "gpus"):
            amount = _share(spec, _amount(total, res), res, where)
            out[res] = max(amount, 1) if res == "cpus" else amount
        return out
    out: dict[str, int] = {}
    for part in re.split(r"[,\s]+(?=\w+\s*=)", spec):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        res = _KEYS.get(key.strip().lower())
        if not sep or res is None:
            raise SlotConfigError(f"{where}: unknown resource {key.strip()!r} in {spec!r}")
        if res == "swap":
            continue
        value = value.strip().rstrip(",").strip()
        if value.lower() == "auto":
            continue
        out[res] = _share(value, _amount(total, res), res, where)
    return out


def _amount(r: Resources, res: str) -> int:
    return len(r.gpus) if res == "gpus" else getattr(r, res)


def slot_types_from_config(
    types: Mapping[int, tuple[str, int, bool]], num_slots: int | None
) -> list[SlotType]:
    """The slot types in effect: SLOT_TYPE_n settings, else NUM_SLOTS equal static slots.

    ``types`` maps n to (SLOT_TYPE_n, NUM_SLOTS_TYPE_n, SLOT_TYPE_n_PARTITIONABLE)
    for the types the configuration itself sets; ``num_slots`` is NUM_SLOTS.
    """
    if types:
        return [SlotType(n, spec, count, part) for n, (spec, count, part) in sorted(types.items())]
    if num_slots:
        return [SlotType(1, f"1/{num_slots}", num_slots, False)]
    return [SlotType(1, "100%", 1, True)]


def layout(
    types: Iterable[SlotType], machine: Machine, claim_ids: Iterable[str], now: float
) -> dict[str, Slot]:
    """The machine's slots, in name order, each Unclaimed with a fresh claim id.

    Resources a type leaves out (or writes as ``auto``) are split evenly
    among the slots that left them out, after the named amounts are taken,
    as HTCondor does. Asking for more than the machine has is an error.
    """
    total = machine.total
    ids = iter(claim_ids)
    wanted: list[tuple[SlotType, dict[str, int]]] = []
    for t in types:
        if t.count < 0:
            raise SlotConfigError(f"NUM_SLOTS_TYPE_{t.type_id} = {t.count} is negative")
        amounts = _parse_spec(t.spec, total, f"SLOT_TYPE_{t.type_id}")
        wanted.extend((t, amounts) for _ in range(t.count))
    sizes: list[dict[str, int]] = []
    for res in ("cpus", "memory", "disk", "gpus"):
        named = sum(a[res] for _, a in wanted if res in a)
        if named > _amount(total, res):
            raise SlotConfigError(
                f"slot types ask for {named} {res} but the machine has {_amount(total, res)}"
            )
        auto = [i for i, (_, a) in enumerate(wanted) if res not in a]
        each = (_amount(total, res) - named) // len(auto) if auto else 0
        if res == "cpus" and auto and each < 1:
            raise SlotConfigError(f"not enough CPUs ({total.cpus}) for {len(wanted)} slots")
        for i, (_, a) in enumerate(wanted):
            if i >= len(sizes):
                sizes.append({})
            sizes[i][res] = a.get(res, each)
    slots: dict[str, Slot] = {}
    gpu_pool = list(total.gpus)
    for i, ((t, _), size) in enumerate(zip(wanted, sizes), start=1):
        gpus = tuple(gpu_pool[: size["gpus"]])
        del gpu_pool[: size["gpus"]]
        res = Resources(size["cpus"], size["memory"], size["disk"], gpus)
        name = f"slot{i}"
        slots[name] = Slot(
            name=name,
            slot_id=i,
            type_id=t.type_id,
            kind=PARTITIONABLE if t.partitionable else STATIC,
            total=res,
            free=res,
            claim_id=next(ids),
            entered_state=now,
            entered_activity=now,
        )
    return slots


# -- state transitions ----------------------------------------------------------------


def transition(slot: Slot, state: str, activity: str, now: float) -> Slot:
    """Move a slot to (state, activity), stamping the entry times that change."""
    if state not in SLOT_MOVES.get(slot.state, frozenset()):
        raise SlotError(f"{slot.name}: cannot go from {slot.state} to {state}")
    if activity not in SLOT_ACTIVITIES[state]:
        raise SlotError(f"{slot.name}: {activity} is not an activity of {state}")
    if state == slot.state and activity == slot.activity:
        return slot
    return replace(
        slot,
        state=state,
        activity=activity,
        entered_state=now if state != slot.state else slot.entered_state,
        entered_activity=now,
    )


def request_size(job: ClassAd, slot_ad: ClassAd, policy: Policy) -> Resources:
    """What a job asks for, after MODIFY_REQUEST_EXPR_* rounding (HTCondor's quantization).

    Each expression is evaluated in the job ad with the slot ad as TARGET;
    an undefined request counts as 1 CPU and the smallest quantum of memory
    and disk. RequestGPUs asks for a count: ``gpus`` holds that many
    placeholders, and ``carve`` picks the actual devices.
    """
    out = {}
    for attr, default in (("RequestCpus", 1), ("RequestMemory", 1), ("RequestDisk", 1)):
        text = policy.modify_request.get(attr) or attr
        value = _number(_expr(text).eval(job, slot_ad))
        if value is None:  # the job leaves it undefined: round the default instead
            value = _number(_expr(text).eval(ClassAd({attr: default}), slot_ad))
        out[attr] = max(int(-(-value // 1)), 0) if value is not None else default
    gpus = _number(_expr("RequestGPUs").eval(job, slot_ad)) if "RequestGPUs" in job else None
    want_gpus = ("any",) * max(int(-(-gpus // 1)), 0) if gpus is not None else ()
    return Resources(max(out["RequestCpus"], 1), out["RequestMemory"], out["RequestDisk"], want_gpus)


def _number(v: Any) -> float | None:
    if type(v) is not int and type(v) is not float:  # Value.Error is an IntEnum
        return None
    if v != v or v in (float("inf"), float("-inf")):
        return None
    return float(v)


_EXPRS: dict[str, ExprTree] = {}


def _expr(text: str) -> ExprTree:
    """One parse per expression text: every slot's ad shares it (nodes are immutable),
    and an ad rebuilt for a new state of its slot tells an unchanged one by identity."""
    e = _EXPRS.get(text)
    if e is None:
        if len(_EXPRS) > 1000:
            _EXPRS.clear()
        e = _EXPRS[text] = ExprTree(text)
    return e


def accepts(slot_ad: ClassAd, job: ClassAd) -> str | None:
    """None when the slot takes the job (START and both Requirements), else why not."""
    start = _expr("START").eval(slot_ad, job)
    if start is not True:
        return f"START is {_show(start)} for this job"
    mine = _expr("Requirements").eval(slot_ad, job)
    if mine is not True:
        return f"the slot's Requirements are {_show(mine)} for this job"
    theirs = _expr("Requirements").eval(job, slot_ad)
    if theirs is not True:
        return f"the job's Requirements are {_show(theirs)} on this slot"
    return None


def _show(v: Any) -> str:
    if v is Value.Undefined:
        return "undefined"
    if v is Value.Error:
        return "error"
    return str(v).lower() if isinstance(v, bool) else repr(v)


def claim_static(slot: Slot, claim: Claim, now: float) -> Slot:
    """A static slot taken whole by a schedd; its claim id stays the one matched."""
    if slot.kind != STATIC:
        raise SlotError(f"{slot.name} is {slot.kind}, not static")
    if slot.state not in (SlotState.UNCLAIMED, SlotState.MATCHED):
        raise SlotError(f"{slot.name} is {slot.state}")
    return replace(transition(slot, SlotState.CLAIMED, Activity.IDLE, now), claim=claim)


def carve(
    pslot: Slot, want: Resources, claim: Claim, claim_id: str, now: float, *, exact: int | None = None
) -> tuple[Slot, Slot]:
    """Cut a Claimed dynamic slot of size ``want`` out of a partitionable slot.

    Returns (the partitionable slot with less free, the dynamic slot). The
    GPUs given are the lowest-numbered free ones; with ``exact`` (the dynamic
    slot's number, when a restarted startd takes back a slot it had carved)
    the very GPUs ``want`` names.
    """
    if pslot.kind != PARTITIONABLE:
        raise SlotError(f"{pslot.name} is not partitionable")
    if pslot.state not in (SlotState.UNCLAIMED, SlotState.MATCHED):
        raise SlotError(f"{pslot.name} is {pslot.state}")
    gpus = want.gpus if exact is not None else pslot.free.gpus[: len(want.gpus)]
    need = Resources(want.cpus, want.memory, want.disk, gpus)
    if (len(want.gpus) > len(pslot.free.gpus) or not set(gpus) <= set(pslot.free.gpus)
            or not need.fits_in(pslot.free)):
        raise SlotError(
            f"{pslot.name} has {_describe(pslot.free)} free; the job asks for {_describe(want)}"
        )
    sub = pslot.next_child if exact is None else exact
    dslot = Slot(
        name=f"{pslot.name}_{sub}",
        slot_id=pslot.slot_id,
        type_id=pslot.type_id,
        kind=DYNAMIC,
        total=need,
        free=need,
        claim_id=claim_id,
        state=SlotState.CLAIMED,
        activity=Activity.IDLE,
        entered_state=now,
        entered_activity=now,
        parent=pslot.name,
        sub_id=sub,
        claim=claim,
    )
    return replace(pslot, free=pslot.free.minus(need), next_child=max(pslot.next_child, sub + 1)), dslot


def readopt(
    slots: dict[str, Slot], name: str, total: Resources, claim: Claim, claim_id: str, now: float
) -> list[Slot]:
    """A claim a previous startd of this machine held, with its job still running, taken
    back after a restart: the slots that change (the static slot ``name``, or the
    partitionable parent and the dynamic slot ``name`` carved again, with the same
    resources and devices), Claimed/Busy under the same claim id. SlotError when the
    machine's slots no longer have room for it (the configuration changed)."""
    slot = slots.get(name)
    if slot is not None and slot.kind == DYNAMIC:
        raise SlotError(f"{name} exists already")
    if slot is not None:
        if slot.kind != STATIC or slot.total != total:
            raise SlotError(f"{name} is no longer a static slot of {_describe(total)}")
        taken = claim_static(slot, claim, now)
        return [replace(transition(taken, SlotState.CLAIMED, Activity.BUSY, now), claim_id=claim_id)]
    parent, _, sub = name.rpartition("_")
    pslot = slots.get(parent)
    if pslot is None or pslot.kind != PARTITIONABLE or not sub.isdigit():
        raise SlotError(f"{name}: no partitionable slot {parent} to carve it from")
    pslot, dslot = carve(pslot, total, claim, claim_id, now, exact=int(sub))
    return [pslot, transition(dslot, SlotState.CLAIMED, Activity.BUSY, now)]


def give_back(pslot: Slot, dslot: Slot) -> Slot:
    """The partitionable slot after a dynamic slot's resources come home."""
    if dslot.parent != pslot.name:
        raise SlotError(f"{dslot.name} is not carved from {pslot.name}")
    return replace(pslot, free=pslot.free.plus(dslot.total, pslot.total.gpus))


def unclaim_static(slot: Slot, new_claim_id: str, now: float) -> Slot:
    """A static slot back to Unclaimed with a claim id the old holder does not know."""
    if slot.state != SlotState.UNCLAIMED:
        slot = transition(slot, SlotState.UNCLAIMED, Activity.IDLE, now)
    return replace(slot, claim=None, claim_id=new_claim_id)


def _describe(r: Resources) -> str:
    text = f"{r.cpus} cpus, {r.memory} MiB memory, {r.disk} KiB disk"
    return text + (f", {len(r.gpus)} gpus" if r.gpus else "")


def is_free(slot: Slot) -> bool:
    """Whether a new match could use this slot now (the startd reschedules only then)."""
    if slot.kind == PARTITIONABLE:
        return slot.state == SlotState.UNCLAIMED and slot.free.cpus > 0 and slot.free.memory > 0
    if slot.kind == STATIC:
        return slot.state == SlotState.UNCLAIMED
    return False


def expired(slots: Iterable[Slot], now: float) -> list[str]:
    """Names of claimed slots whose lease ran out."""
    return [
        s.name
        for s in slots
        if s.claim is not None and s.claim.lease > 0 and s.claim.lease_expires < now
    ]


# -- ads ------------------------------------------------------------------------------


def slot_ad(
    slot: Slot, machine: Machine, policy: Policy, address: str, now: float, load_avg: float = 0.0
) -> ClassAd:
    """The slot's public ad, with HTCondor's attribute names (ClaimId is never in it).

    ``load_avg`` is the host's one-minute load; each slot shows its CPU share of it.
    """
    return ClassAd(slot_attrs(slot, machine, policy, address, now, load_avg))


def slot_attrs(
    slot: Slot, machine: Machine, policy: Policy, address: str, now: float, load_avg: float = 0.0
) -> dict[str, Any]:
    """What :func:`slot_ad` holds, as a dict (values, and shared ExprTrees for
    expressions): the startd compares it with the last one to change only what differs."""
    have = slot.free if slot.kind == PARTITIONABLE else slot.total
    t = machine.total
    attrs: dict[str, Any] = {
        "MyType": "Machine",
        "TargetType": "Job",
        "Name": f"{slot.name}@{machine.name}",
        "Machine": machine.name,
        "SlotID": slot.slot_id,
        "SlotTypeID": slot.type_id,
        "SlotType": slot.kind,
        "PartitionableSlot": slot.kind == PARTITIONABLE,
        "DynamicSlot": slot.kind == DYNAMIC,
        "NumClaimRequests": slot.claim_requests,
        "Cpus": have.cpus,
        "Memory": have.memory,
        "Disk": have.disk,
        "GPUs": len(have.gpus),
        "TotalSlotCpus": slot.total.cpus,
        "TotalSlotMemory": slot.total.memory,
        "TotalSlotDisk": slot.total.disk,
        "TotalSlotGPUs": len(slot.total.gpus),
        "TotalCpus": t.cpus,
        "TotalMemory": t.memory,
        "TotalDisk": t.disk,
        "TotalGPUs": len(t.gpus),
        "DetectedCpus": machine.detected_cpus or t.cpus,
        "DetectedMemory": machine.detected_memory or t.memory,
        "Arch": machine.arch,
        "OpSys": machine.opsys,
        "OpSysAndVer": machine.opsys_and_ver,
        "OpSysName": machine.opsys_name,
        "OpSysMajorVer": machine.opsys_major_ver,
        "UidDomain": machine.uid_domain or machine.name,
        "FileSystemDomain": machine.filesystem_domain or machine.name,
        "HasFileTransfer": True,
        "HasSelfCheckpointTransfers": True,  # checkpoint_exit_code jobs (issue 15)
        "State": slot.state,
        "Activity": slot.activity,
        "EnteredCurrentState": int(slot.entered_state),
        "EnteredCurrentActivity": int(slot.entered_activity),
        "MyCurrentTime": int(now),
        "TotalLoadAvg": round(load_avg, 2),
        "LoadAvg": round(load_avg * slot.total.cpus / t.cpus, 2) if t.cpus else 0.0,
        "MyAddress": address,
        "Start": _expr(policy.start),
        "Requirements": _expr("START"),
        "Rank": _expr(policy.rank),
        "SlotWeight": _expr("Cpus"),
    }
    if have.gpus:
        attrs["AssignedGPUs"] = ",".join(have.gpus)
        # one property ad per GPU this slot can give, listed in AvailableGPUs: a job's
        # Requirements count those its RequireGPUs accepts (countMatches)
        props = dict(machine.gpu_props)
        names = []
        for g in have.gpus:
            name = "GPUs_" + re.sub(r"\W", "_", g)
            attrs[name] = _expr(props.get(g) or f'[Id = "{g}"]')
            names.append(name)
        attrs["AvailableGPUs"] = _expr("{ " + ", ".join(names) + " }")
    if machine.gpu_names:
        attrs["GPUs_DeviceName"] = machine.gpu_names[0]
    if slot.parent is not None:
        attrs["ParentSlotName"] = f"{slot.parent}@{machine.name}"
    c = slot.claim
    if c is not None:
        attrs["RemoteUser"] = c.user
        attrs["RemoteOwner"] = c.owner or c.user
        attrs["ClientMachine"] = c.schedd_address.rsplit(":", 1)[0]
        if c.job is not None:
            attrs["JobId"] = c.job
            attrs["JobStart"] = int(c.job_start)
        if c.concurrency_limits:
            attrs["ConcurrencyLimits"] = c.concurrency_limits
    for name, text in policy.extra.items():
        attrs.setdefault(name, _expr(text))
    return attrs
