"""Why is a job idle? ``roost q -analyze`` / ``-better-analyze``, as a pure function.

Ads in, an :class:`Analysis` out, and :func:`render` to print it; no sockets,
no clock. Every slot of the pool (all states) is sorted into exactly one
bucket, in this order: the job's Requirements reject it; the slot's own
START/Requirements reject the job; it would match but is claimed, in Owner
state, drained, or (partitionable) has too little left; else it is
available. Each top-level ``&&`` clause of the job's Requirements is also
counted on its own, and the clause that matters most gets a concrete
suggestion built from the values the pool actually has.

A partitionable slot advertises what it has *left*; the job's Requirements are
judged against its whole size (``TotalSlot*``), so a full machine counts as
busy, not as "too small for you". The shared match-explaining helpers
(:func:`truth`, :func:`failing_clause`, :func:`slot_refusal`) are also what
``roost classad match`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd, ExprTree
from roost.classad.ast import AttrRef, BinaryOp, Literal, Node, Paren
from roost.classad.classad import to_node
from roost.classad.evaluate import eval_attr, evaluate
from roost.classad.unparse import format_real_old, unparse
from roost.classad.values import Value
from roost.core.concurrency import ConcurrencyLimits, parse_concurrency_limits
from roost.core.conjuncts import conjuncts
from roost.vocabulary import JobStatus, SlotState

STATUS_NAMES = {
    JobStatus.IDLE: "idle",
    JobStatus.RUNNING: "running",
    JobStatus.REMOVED: "removed",
    JobStatus.COMPLETED: "completed",
    JobStatus.HELD: "held",
    JobStatus.TRANSFERRING_OUTPUT: "transferring output",
    JobStatus.SUSPENDED: "suspended",
}
#: slot resource, job request, the submit command that sets it
RESOURCES = (("Cpus", "RequestCpus", "request_cpus"), ("Memory", "RequestMemory", "request_memory"),
             ("Disk", "RequestDisk", "request_disk"), ("GPUs", "RequestGPUs", "request_gpus"))
_EPS = 1e-9
_SHOW = 10  # -better-analyze lists at most this many slots or slot clauses, then "... and N more"
_FLIP = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "==", "!=": "!=", "=?=": "=?=", "=!=": "=!="}


# ---------------------------------------------------------------------------
# Explaining one match (shared with ``roost classad match``)


def show_value(value: Any) -> str:
    """A runtime value in ClassAd syntax; a real in the short form of ``condor_q -long``."""
    if type(value) is float:
        return format_real_old(value)
    return unparse(to_node(value))


def truth(value: Any) -> str | None:
    """None when ``value`` lets a match go ahead, else why not, in a word or two."""
    t = type(value)
    if value is True or ((t is int or t is float) and value != 0):
        return None
    if value is False or t is int or t is float:
        return "false"
    if value is Value.Undefined:
        return "undefined"
    if value is Value.Error:
        return "error"
    return f"not boolean ({show_value(value)})"


def failing_clause(ad: Any, name: str, target: Any) -> str:
    """The ``&&`` clause of ``ad``'s ``name`` that stops a match, as ``clause is false``.

    A false clause decides ``&&`` even next to an undefined one, so it is
    preferred; "" when the expression is not a conjunction.
    """
    parts = conjuncts(ad.lookup(name).node)
    if len(parts) < 2:
        return ""
    found = [(part, why) for part in parts if (why := truth(evaluate(part, ad, target)))]
    found.sort(key=lambda pw: pw[1] != "false")
    return f"{unparse(found[0][0])} is {found[0][1]}" if found else ""


def slot_refusal(machine: Any, job: Any) -> tuple[str, str, str] | None:
    """None when the slot's own policy accepts ``job``; else (policy, why, clause).

    ``policy`` is ``Requirements`` or ``START``: a slot ad without Requirements
    falls back to START, and when Requirements (usually just ``START``) fails
    because START does, START is named, with its failing ``&&`` clause.
    """
    policy = "Requirements" if "Requirements" in machine else "START"
    if policy not in machine:
        return ("Requirements", "missing", "")
    why = truth(eval_attr(machine, policy, job))
    if not why:
        return None
    start_why = truth(eval_attr(machine, "START", job)) if "START" in machine else None
    if start_why and policy == "Requirements":
        policy, why = "START", start_why
    return (policy, why, failing_clause(machine, policy, job))


# ---------------------------------------------------------------------------
# The analysis


@dataclass
class ClauseStat:
    """One top-level ``&&`` clause of the job's Requirements, across the pool."""

    text: str
    rejects: int          # slots for which the clause is not true
    alone: int            # ... of which it is the only clause that fails
    values: dict[str, list[tuple[Any, int]]] = field(default_factory=dict)  # slot attr -> (value, count)
    suggestion: str = ""  # what to change it to, when the pool says


@dataclass
class LimitStat:
    """One concurrency limit the job needs, against the pool's count."""

    name: str
    need: float
    limit: float
    in_use: float

    @property
    def never(self) -> bool:
        """The job needs more than the limit allows at all."""
        return self.need > self.limit + _EPS

    @property
    def full(self) -> bool:
        """Too little of the limit is free now."""
        return self.in_use + self.need > self.limit + _EPS


@dataclass
class GroupStat:
    """The submitter's accounting group, as the negotiator's last cycle saw it."""

    name: str
    held: float
    allocation: float | None  # weight its submitters may hold (surplus included); None: not computed yet
    quota: float | None
    dynamic: float | None
    accept_surplus: bool
    need: float               # the job's slot weight (RequestCpus)

    @property
    def full(self) -> bool:
        return self.allocation is not None and self.held + self.need > self.allocation + _EPS


@dataclass
class Analysis:
    job_id: str
    status: int
    slots: int = 0
    clauses: list[ClauseStat] = field(default_factory=list)
    job_rejects: int = 0                  # slots the job's Requirements reject
    slot_rejects: int = 0                 # slots (the job accepts) whose START/Requirements reject the job
    slot_clauses: list[tuple[str, int]] = field(default_factory=list)  # the slot-side clause, how many
    matching: int = 0                     # slots both sides accept
    claimed_by_others: int = 0
    claimed_by_me: int = 0
    owner_state: int = 0
    drained: int = 0
    too_full: int = 0                     # partitionable: the request does not fit what is left
    too_full_detail: list[str] = field(default_factory=list)
    other_state: int = 0                  # Matched, Preempting, Backfill ...
    available: int = 0
    key_clause: ClauseStat | None = None  # the clause that matters most
    priority_rank: int | None = None      # 1 = best
    priority_of: int | None = None
    effective_priority: float | None = None
    submitter: str | None = None
    suggestion: str = ""
    notes: list[str] = field(default_factory=list)
    limits: list[LimitStat] = field(default_factory=list)  # the job's ConcurrencyLimits, when known
    bad_limits: str | None = None         # its ConcurrencyLimits text, when malformed
    group: GroupStat | None = None        # its accounting group, when the negotiator has quotas


def _job_id(job: ClassAd) -> str:
    c, p = eval_attr(job, "ClusterId"), eval_attr(job, "ProcId")
    return f"{c}.{p}" if type(c) is int and type(p) is int else "job"


def _true(v: Any) -> bool:
    return truth(v) is None


def _whole(slot: ClassAd) -> ClassAd:
    """A partitionable slot as if empty: its resources set to its total size."""
    if eval_attr(slot, "PartitionableSlot") is not True:
        return slot
    whole = ClassAd(slot)
    for attr, _, _ in RESOURCES:
        total = eval_attr(slot, f"TotalSlot{attr}")
        if type(total) in (int, float):
            whole[attr] = total
    return whole


def _requested(job: ClassAd, slot: ClassAd) -> dict[str, float]:
    out: dict[str, float] = {}
    for attr, req, _ in RESOURCES:
        v = eval_attr(job, req, slot)
        out[attr] = float(v) if type(v) in (int, float) else (1.0 if attr == "Cpus" else 0.0)
    return out


def _short_of(job: ClassAd, slot: ClassAd) -> list[str]:
    """What a partitionable slot lacks now for the job's request (empty: it fits)."""
    short = []
    for attr, amount in _requested(job, slot).items():
        left = eval_attr(slot, attr)
        left = float(left) if type(left) in (int, float) else 0.0
        if amount > 0 and left < amount:
            short.append(f"{attr} {_num(amount)} wanted, {_num(left)} left")
    return short


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _slot_attrs(job: ClassAd, node: Node) -> list[str]:
    """Slot attributes a job clause reads: ``TARGET.X`` and bare names the job lacks."""
    out = []
    for ref in job.externalRefs(ExprTree._wrap(node)):
        name = ref.split(".", 1)[1] if ref.lower().startswith("target.") else ref
        if "." not in name and name not in out:
            out.append(name)
    return out


def _value_counts(slots: Sequence[ClassAd], attr: str) -> list[tuple[Any, int]]:
    """(value, how many slots) most common first; a slot without ``attr`` counts as
    ``Value.Undefined`` (printed ``undefined``, never mistaken for the string)."""
    counts: Counter[Any] = Counter()
    for s in slots:
        v = eval_attr(s, attr)
        counts[v if type(v) in (int, float, str, bool) or v is Value.Undefined else show_value(v)] += 1
    return counts.most_common()


def _missing(stat: ClauseStat) -> list[str]:
    """Slot attributes the clause reads that no slot in the pool has."""
    return [attr for attr, seen in stat.values.items() if seen and all(v is Value.Undefined for v, _ in seen)]


def _slot_side(node: Node, job: ClassAd) -> tuple[str, str, Any] | None:
    """``TARGET.X op <job value>`` (either way round) as (X, op as seen from X, job value)."""
    while type(node) is Paren:
        node = node.expr
    if type(node) is not BinaryOp or node.op not in _FLIP:
        return None
    for mine, other, op in ((node.left, node.right, node.op), (node.right, node.left, _FLIP[node.op])):
        while type(mine) is Paren:
            mine = mine.expr
        if type(mine) is not AttrRef or mine.name.lower() in ("my", "target"):
            continue
        base = mine.base
        is_target = type(base) is AttrRef and base.name.lower() == "target"
        if not is_target and (base is not None or mine.name in job):
            continue
        value = evaluate(other, job, None)
        if type(value) in (int, float, str, bool):
            return mine.name, op, value
    return None


def _job_attr(node: Node, job: ClassAd) -> str | None:
    """The job attribute a comparison compares with (``RequestMemory``), if it is one."""
    while type(node) is Paren:
        node = node.expr
    if type(node) is not BinaryOp:
        return None
    for side in (node.left, node.right):
        while type(side) is Paren:
            side = side.expr
        if type(side) is AttrRef and side.name in job and (
                side.base is None or (type(side.base) is AttrRef and side.base.name.lower() == "my")):
            return side.name
    return None


#: slot attributes a startd sets only when a probe at its start passes
_PROBED = {
    **dict.fromkeys(("hascontainer", "hasdocker", "hasdockerurl", "hassandboximage"),
                    "no execute host has a container runtime (podman or docker) that runs containers "
                    "(docs/universes.md)"),
    "hassif": "roost runs no Singularity (.sif) images: use a docker:// image (docs/universes.md)",
    "hasjava": "no execute host has a Java runtime that answers (JAVA, docs/universes.md)",
    "hascriu": "no execute host passes `criu check` (docs/reliability.md)",
}


def _suggest_clause(stat: ClauseStat, node: Node, job: ClassAd, n_slots: int) -> str:
    found = _slot_side(node, job)
    missing = _missing(stat)
    if missing and (found[0] in missing if found else len(missing) == len(stat.values)):
        names = ", ".join(missing)
        probed = [_PROBED[m.lower()] for m in missing if m.lower() in _PROBED]
        if probed:
            return (f"no slot has {names} (undefined on all {n_slots} slots): {probed[0]}; "
                    f"each startd's log says why it advertises none")
        return (f"no slot has {names} (undefined on all {n_slots} slots): check the spelling, "
                f"or remove `{stat.text}`; a slot only has such an attribute if its administrator "
                f"adds it (STARTD_ATTRS)")
    if found is None:
        return f"relax or remove `{stat.text}` (it rejects {stat.rejects} of {n_slots} slots)"
    attr, op, want = found
    seen = [(v, c) for v, c in stat.values.get(attr) or [] if v is not Value.Undefined]
    nums = [v for v, _ in seen if type(v) in (int, float) and type(v) is not bool]
    job_attr = _job_attr(node, job)
    command = next((cmd for _, req, cmd in RESOURCES if job_attr and req.lower() == job_attr.lower()), None)
    if op in (">=", ">", "<=", "<") and nums and type(want) in (int, float):
        best = max(nums) if op in (">=", ">") else min(nums)
        word = "largest" if op in (">=", ">") else "smallest"
        have = sum(c for v, c in seen if type(v) in (int, float) and _true(evaluate(
            BinaryOp(op, Literal(v), Literal(want)))))
        head = f"{attr} {op} {show_value(want)}: {have} of {n_slots} slots have that; the {word} {attr} is {_num(best)}"
        if command:
            return f"{head}: lower {command} to at most {_num(best)}" if op in (">=", ">") else head
        if job_attr:
            return f"{head}: set {job_attr} to {_num(best)}"
        return f"{head}: change the clause to `{attr} {op} {_num(best)}`"
    if op in ("==", "=?=") and seen:
        common = [v for v, _ in seen if type(v) is type(want)] or [v for v, _ in seen]
        listed = ", ".join(f"{show_value(v)} ({c})" for v, c in seen[:5])
        head = f"{attr} {op} {show_value(want)}: no slot has that; {attr} in the pool: {listed}"
        target = f"set {job_attr} to {show_value(common[0])}" if job_attr else \
            f"change the clause to `{attr} {op} {show_value(common[0])}`"
        return f"{head}: {target}"
    return f"relax or remove `{stat.text}` (it rejects {stat.rejects} of {n_slots} slots)"


def _owner_of(job: ClassAd) -> str | None:
    for attr in ("User", "Owner"):
        v = eval_attr(job, attr)
        if type(v) is str and v:
            return v
    return None


def _same_user(remote: Any, me: str | None) -> bool:
    if type(remote) is not str or not me:
        return False
    return remote == me or remote.split("@", 1)[0] == me.split("@", 1)[0]


def _place(users: Sequence[Mapping[str, Any]], submitter: str) -> tuple[int, int, float] | None:
    """(rank, of, effective priority) of ``submitter`` in USERPRIO's table, best (lowest) first."""
    rows = [u for u in users if isinstance(u.get("name"), str) and type(u.get("effective")) in (int, float)]
    if any("@" in u["name"] for u in rows):
        rows = [u for u in rows if "@" in u["name"]]  # group records ("group.sub") are not submitters
    rows.sort(key=lambda u: (u["effective"], u["name"]))
    for i, u in enumerate(rows):
        local, mine = u["name"].split("@", 1)[0], submitter.split("@", 1)[0]
        if u["name"] == submitter or local == mine or local.endswith("." + mine):  # group.sub.user
            return i + 1, len(rows), float(u["effective"])
    return None


def _group_stat(groups: Sequence[Mapping[str, Any]], submitter: str, job: ClassAd) -> GroupStat | None:
    """The configured group ``submitter`` (``group.user@domain``) belongs to: the longest
    group name its local part starts with, then a dot (as the negotiator assigns it)."""
    local = submitter.split("@", 1)[0].lower()
    best: Mapping[str, Any] | None = None
    for g in groups:
        name = g.get("name")
        if isinstance(name, str) and local.startswith(name.lower() + ".") and (
                best is None or len(name) > len(best["name"])):
            best = g
    if best is None:
        return None

    def num(key: str) -> float | None:
        v = best.get(key)
        return float(v) if type(v) in (int, float) else None

    need = eval_attr(job, "RequestCpus")
    return GroupStat(name=best["name"], held=num("held") or 0.0, allocation=num("allocation"),
                     quota=num("quota"), dynamic=num("dynamic"), accept_surplus=best.get("accept_surplus") is True,
                     need=float(need) if type(need) in (int, float) and need > 0 else 1.0)


def analyze(job: ClassAd, slots: Sequence[ClassAd], users: Sequence[Mapping[str, Any]] | None = None,
            submitter: str | None = None, limits: ConcurrencyLimits | None = None,
            groups: Sequence[Mapping[str, Any]] | None = None) -> Analysis:
    """Why ``job`` is (or is not) idle in a pool of ``slots`` (slot ads, every state).

    ``users`` is the negotiator's USERPRIO table (``[{"name", "effective", ...}]``),
    None when it could not be had; ``submitter`` the job's submitter name (default:
    the job's ``User``, else ``Owner``). ``limits`` and ``groups`` are what the
    negotiator's LIMITS command says of concurrency limits and accounting groups
    (None: not known); a job they hold back is told so.
    """
    status = eval_attr(job, "JobStatus")
    status = status if type(status) is int else 1
    a = Analysis(_job_id(job), status, slots=len(slots))
    a.submitter = submitter or _owner_of(job)
    if status == JobStatus.HELD:
        reason = eval_attr(job, "HoldReason")
        reason = reason if type(reason) is str and reason else "no reason given"
        a.suggestion = (f"the job is held: {reason}. A held job is never matched; once the cause "
                        f"is dealt with, `roost release {a.job_id}`")
        return a
    if status in JobStatus.ON_A_SLOT:
        host = eval_attr(job, "RemoteHost")
        where = f" on {host}" if type(host) is str else ""
        a.suggestion = f"it is {STATUS_NAMES[status]}{where}: nothing stops it"
        return a
    if status in JobStatus.ENDED:
        a.suggestion = f"it is {STATUS_NAMES[status]}: it will not run again"
        return a
    never = eval_attr(job, "DedicatedSchedulerReason")
    if type(never) is str and never:
        # a parallel (or +WantDedicated) job the dedicated scheduler skips for good
        a.suggestion = (f"the dedicated scheduler will never run it: it {never}. Ask for fewer "
                        "nodes (machine_count), or make more slots dedicated (use POLICY : Dedicated)")
        return a

    nodes = conjuncts(job.lookup("Requirements").node) if "Requirements" in job else []
    wholes = [_whole(s) for s in slots]
    failing: list[list[int]] = []  # per slot, the indexes of failing clauses
    for w in wholes:
        failing.append([i for i, n in enumerate(nodes) if not _true(evaluate(n, job, w))])
    for i, n in enumerate(nodes):
        stat = ClauseStat(unparse(n), sum(i in f for f in failing), sum(f == [i] for f in failing))
        if stat.rejects:
            stat.values = {attr: _value_counts(wholes, attr) for attr in _slot_attrs(job, n)}
        a.clauses.append(stat)

    slot_why: Counter[str] = Counter()
    me = a.submitter
    for s, w, f in zip(slots, wholes, failing):
        if "Requirements" not in job:
            a.job_rejects += 1
            continue
        if f or not _true(eval_attr(job, "Requirements", w)):
            a.job_rejects += 1
            continue
        refusal = slot_refusal(w, job)
        if refusal is not None:
            a.slot_rejects += 1
            policy, why, clause = refusal
            slot_why[clause or f"{policy} is {why}"] += 1
            continue
        a.matching += 1
        state = eval_attr(s, "State")
        if eval_attr(s, "Draining") is True or state == SlotState.DRAINED:
            a.drained += 1
        elif state == SlotState.CLAIMED:
            if _same_user(eval_attr(s, "RemoteUser"), me):
                a.claimed_by_me += 1
            else:
                a.claimed_by_others += 1
        elif state == SlotState.OWNER:
            a.owner_state += 1
        elif state == SlotState.UNCLAIMED:
            short = _short_of(job, s) if eval_attr(s, "PartitionableSlot") is True else []
            if short:
                a.too_full += 1
                name = eval_attr(s, "Name")
                a.too_full_detail.append(f"{name}: {'; '.join(short)}")
            else:
                a.available += 1
        else:
            a.other_state += 1
    a.slot_clauses = slot_why.most_common()

    rejecting = [(st, n) for st, n in zip(a.clauses, nodes) if st.rejects]
    if rejecting:
        st, n = max(rejecting, key=lambda sn: (sn[0].alone, sn[0].rejects))
        st.suggestion = _suggest_clause(st, n, job, len(slots))
        a.key_clause = st
    if users is not None and me:
        place = _place(users, me)
        if place is not None:
            a.priority_rank, a.priority_of, a.effective_priority = place
        else:
            a.notes.append(f"{me} is not in the priority table yet (no usage: best priority)")
    if "ConcurrencyLimits" in job:
        text = eval_attr(job, "ConcurrencyLimits")
        needs = parse_concurrency_limits(text)
        if needs is None:
            a.bad_limits = str(text)
        elif limits is not None:
            a.limits = [LimitStat(n, need, limits.limit_of(n), limits.in_use.get(n, 0.0))
                        for n, need in sorted(needs.items())]
    if groups and me:
        a.group = _group_stat(groups, me, job)
    a.suggestion = _suggestion(a, job)
    return a


def _prio_text(a: Analysis) -> str:
    if a.priority_rank is None:
        return ""
    return f"; your priority is {a.priority_rank} of {a.priority_of} (effective {a.effective_priority:g})"


def _limit_text(st: LimitStat) -> str:
    return f"{st.name.upper()}: {_num(st.in_use)} of {_num(st.limit)} in use, the job needs {_num(st.need)}"


def _group_text(g: GroupStat) -> str:
    if g.quota is not None:
        quota = f"quota {_num(g.quota)}"
    elif g.dynamic is not None:
        quota = f"dynamic quota {g.dynamic:g} of its parent's"
    else:
        quota = "no quota of its own"
    surplus = "accepts surplus" if g.accept_surplus else "no surplus"
    if g.allocation is None:
        return f"group {g.name} holds {_num(g.held)}; what it may hold is not computed yet ({quota}, {surplus})"
    return f"group {g.name} holds {_num(g.held)} of the {_num(g.allocation)} it may hold now ({quota}, {surplus})"


def _suggestion(a: Analysis, job: ClassAd) -> str:
    if "Requirements" not in job:
        return "the job has no Requirements: it matches no slot; resubmit it (roost submit sets them)"
    if a.bad_limits is not None:
        return (f"ConcurrencyLimits = {a.bad_limits!r} is malformed (names with optional amounts >= 0, "
                f"like \"license:2, db\"): such a job is never matched; remove it and resubmit with a "
                f"valid concurrency_limits")
    never = [st for st in a.limits if st.never]
    if never:
        st = never[0]
        return (f"the job needs {_num(st.need)} of concurrency limit {st.name.upper()}, which allows "
                f"{_num(st.limit)} at once: it can never run; ask for at most {_num(st.limit)}, or ask the "
                f"pool's administrator to raise {st.name.upper()}_LIMIT")
    if a.slots == 0:
        return "the pool has no slots: start a startd (`roost up`) or wait for slots to advertise"
    if a.matching == 0:
        if a.job_rejects == a.slots and a.key_clause is not None:
            return a.key_clause.suggestion
        if a.job_rejects == a.slots:
            return "the job's Requirements reject every slot: relax them"
        clause, count = a.slot_clauses[0]
        return (f"the slots your job would take refuse it by their own policy ({clause}, on {count}): "
                f"change the job so that holds, or ask the pool's administrator")
    full = [st for st in a.limits if st.full]
    if full:
        return (f"wait: concurrency limit {_limit_text(full[0])}; it starts when jobs holding "
                f"{full[0].name.upper()} end{_prio_text(a)}")
    if a.group is not None and a.group.full:
        more = "" if a.group.accept_surplus else \
            "; ask the pool's administrator for a larger quota or GROUP_ACCEPT_SURPLUS"
        return f"wait: {_group_text(a.group)}; it starts when the group's running jobs end{more}"
    if a.available:
        return (f"{a.available} matching slot(s) are free: it should start at the next negotiation cycle "
                f"(NEGOTIATOR_INTERVAL at the latest)")
    busy = []
    for n, what in ((a.claimed_by_others, "claimed by others"), (a.claimed_by_me, "running your other jobs"),
                    (a.too_full, "partitionable with too little left"), (a.owner_state, "in Owner state"),
                    (a.drained, "drained"), (a.other_state, "changing state")):
        if n:
            busy.append(f"{n} {what}")
    return f"wait: {a.matching} matching slot(s) are busy ({', '.join(busy)}){_prio_text(a)}"


# ---------------------------------------------------------------------------
# Text


def render(a: Analysis, job: ClassAd | None = None, better: bool = False) -> str:
    """``a`` as ``roost q -analyze`` prints it; ``better`` adds the per-clause table."""
    lines = [f"-- Job {a.job_id}: {STATUS_NAMES.get(a.status, str(a.status))}"]
    if a.status != JobStatus.IDLE:
        lines.append(f"Suggestion: {a.suggestion}")
        return "\n".join(lines) + "\n"
    if better and job is not None and "Requirements" in job:
        lines.append(f"Requirements: {job.lookup('Requirements')}")
    lines += [
        "",
        f"{a.slots} slot{'' if a.slots == 1 else 's'} in the pool:",
        f"  {a.job_rejects:>6}  rejected by your job's Requirements",
        f"  {a.slot_rejects:>6}  reject your job by their own START/Requirements",
        f"  {a.matching:>6}  match, of which:",
        f"  {a.claimed_by_others:>6}    claimed by other users",
    ]
    if a.claimed_by_me:
        lines.append(f"  {a.claimed_by_me:>6}    running your other jobs")
    if a.too_full:
        lines.append(f"  {a.too_full:>6}    partitionable, too little left for the request")
    lines += [
        f"  {a.owner_state:>6}    in Owner state (not accepting jobs now)",
        f"  {a.drained:>6}    draining or drained",
    ]
    if a.other_state:
        lines.append(f"  {a.other_state:>6}    changing state (Matched, Preempting ...)")
    lines.append(f"  {a.available:>6}    available to run your job")
    if better:
        rejecting = [c for c in a.clauses if c.rejects]
        if a.clauses:
            lines += ["", "Your Requirements, clause by clause:", "  REJECTS  ALONE  CLAUSE"]
            for c in a.clauses:
                mark = "  <- matters most" if c is a.key_clause else ""
                lines.append(f"  {c.rejects:>7}  {c.alone:>5}  {c.text}{mark}")
        for c in rejecting:
            for attr, seen in c.values.items():
                shown = ", ".join(f"{show_value(v)} ({n})" for v, n in seen[:6])
                more = f", ... ({len(seen) - 6} more values)" if len(seen) > 6 else ""
                lines.append(f"    {attr} in the pool: {shown}{more}")
        if a.slot_clauses:
            lines += ["", "Slot policies that refuse your job:"]
            lines += [f"  {n:>7}  {clause}" for clause, n in a.slot_clauses[:_SHOW]]
            if len(a.slot_clauses) > _SHOW:
                rest = sum(n for _, n in a.slot_clauses[_SHOW:])
                lines.append(f"  {rest:>7}  ... {len(a.slot_clauses) - _SHOW} other clauses")
        if a.too_full_detail:
            lines += ["", "Partitionable slots too full now:"]
            lines += [f"  {d}" for d in a.too_full_detail[:_SHOW]]
            if len(a.too_full_detail) > _SHOW:
                lines.append(f"  ... and {len(a.too_full_detail) - _SHOW} more")
    if a.limits:
        lines += ["", "Concurrency limits:"]
        lines += [f"  {_limit_text(st)}{'  <- never fits' if st.never else '  <- full' if st.full else ''}"
                  for st in a.limits]
    if a.group is not None:
        lines += ["", f"Accounting group: {_group_text(a.group)}{'  <- full' if a.group.full else ''}"]
    if a.priority_rank is not None:
        lines += ["", f"User priority: {a.submitter} is {a.priority_rank} of {a.priority_of} "
                      f"(effective priority {a.effective_priority:g}; lower is better)"]
    if a.notes:
        lines += [""] + [f"Note: {note}" for note in a.notes]
    lines += ["", f"Suggestion: {a.suggestion}"]
    return "\n".join(lines) + "\n"
