"""Matchmaking: slots and resource requests in, a plan of matches out.

A *request* is one autocluster of one submitter: a representative job ad and
how many jobs want a slot. For each submitter in the order given (fair
share, issue 5, decides that order and each submitter's limit), for each of
its requests in the schedd's order, every job is given the best slot that
is still free in this cycle's view:

- both Requirements hold (``symmetric match``), the slot is ``Unclaimed``
  (or ``Claimed`` and preemptable, when a :class:`PreemptionPolicy` is given);
- best means: not preempting before rank preemption before priority
  preemption; then highest ``NEGOTIATOR_PRE_JOB_RANK`` (evaluated in the
  slot against the job), then the job's ``Rank`` (in the job against the
  slot), then ``NEGOTIATOR_POST_JOB_RANK``, then (preempting only) highest
  ``PREEMPTION_RANK``; remaining ties go to the slot that came first in the
  input (the negotiator sorts by name, so cycles are reproducible).
  Non-numeric ranks count as 0, as in HTCondor. (HTCondor puts the
  preemption level after the three job ranks and relies on its default
  pre-job rank to prefer idle slots; roost has no such default, so the level
  comes first: an idle slot is never passed over for a preemption.)
- a static slot takes one job; a partitionable slot (``PartitionableSlot``)
  takes jobs while its remaining Cpus/Memory/Disk/GPUs cover the request.
  The view's copy of its ad has those attributes lowered after each match,
  so Requirements that read ``TARGET.Memory`` see what is left, as the
  startd will when it carves dynamic slots; what is left stays on offer to
  later requests of the cycle.
- ``limits`` are slot weight (``SlotWeight``, default ``Cpus``; for a
  partitionable slot the Cpus a job takes); concurrency limits
  (:class:`ConcurrencyLimits`) cap the jobs that name a license.

Why it is fast. Evaluating every request against every slot is 10 M
symmetric matches at 10,000 slots × 1,000 autoclusters. But a match result
can only depend on the values of the slot attributes that some evaluated
expression can *name*: the request's Requirements/Rank/Request*, the slot's
Requirements (START ...), the negotiator's ranks and preemption
expressions, followed transitively through attributes of both ads. Slots
that agree on all of those values are an *equivalence class* for that
request: one evaluation answers for all of them, and the class keeps its
members in input order so ties still go to the earliest slot. Classes are
kept per set of names (requests of one kind share them) and updated lazily
when a partitionable slot is carved. When the names cannot be known
statically (``eval()``, ``unparse()``, ``random()``, a whole ad used as a
value, a computed subscript) every slot is its own class: the plain
algorithm, same answers. Between calls on one pool (the pie's spins) each
request ad keeps its classes' answers and the list of classes still worth
offering (see :class:`_Answers`), and a request whose weight limit is below
its lightest possible match is not tried at all. A carved partitionable slot
changes class; a job that reads its resources only as thresholds
(:class:`_Split`) is evaluated once per *base* (the values of everything but
the resources) and compares numbers for each carved slot, and when its ranks
are constant per base each base is scanned in input order instead of offering
every carved class (``offer_base`` in :meth:`SlotPool.match_request`).

Pure: ads in, :class:`Plan` out; no clock (``now`` is passed in), no I/O.
:class:`SlotPool` keeps the per-cycle view so a caller can spin the pie
several times (issue 5) without rebuilding it.
"""

from __future__ import annotations

import functools
import gc
import heapq
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from roost.classad import ClassAd
from roost.classad.ast import (
    AdExpr,
    AttrRef,
    BinaryOp,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    UnaryOp,
)
from roost.classad.evaluate import EvaluationFailed, evaluate, matches
from roost.classad.unparse import unparse
from roost.core.analyze import conjuncts
from roost.core.preemption import (
    NO_PREEMPTION,
    PreemptionPolicy,
    preemption_key,
    preemption_kind,
)

# (slot attribute, job attribute, default request when the job does not say)
RESOURCES: tuple[tuple[str, str, float], ...] = (
    ("Cpus", "RequestCpus", 1),
    ("Memory", "RequestMemory", 0),
    ("Disk", "RequestDisk", 0),
    ("GPUs", "RequestGPUs", 0),
)

# HTCondor's CONCURRENCY_LIMIT_DEFAULT when the knob is not set
DEFAULT_CONCURRENCY_LIMIT = 2308032.0

_EPS = 1e-9


@dataclass(slots=True)
class Slot:
    """A slot as the negotiator sees it: its ad, the claim id to hand out, where its startd is."""

    name: str
    ad: ClassAd
    claim_id: str | None = None
    address: str | None = None
    extra: Any = None  # the caller's own handle (e.g. the wire form of the ad)


@dataclass(slots=True)
class Request:
    """One autocluster of one submitter."""

    submitter: str
    autocluster: Any
    count: int
    ad: ClassAd
    extra: Any = None  # the caller's handle (e.g. the schedd address)


@dataclass(slots=True)
class Match:
    request: Request
    slot: Slot
    rank: tuple[float, float, float]
    resources: dict[str, float]  # what this match takes from a partitionable slot
    weight: float = 1.0  # slot weight: SlotWeight (default Cpus); a partitionable slot's Cpus taken
    preempts: bool = False  # the slot is Claimed: the running job is preempted

    @property
    def submitter(self) -> str:
        return self.request.submitter


@dataclass
class Plan:
    """The cycle's result: matches in decision order, plus what could not be served."""

    matches: list[Match] = field(default_factory=list)
    unmatched: dict[tuple[str, Any], int] = field(default_factory=dict)  # (submitter, ac) → jobs
    by_submitter: dict[str, int] = field(default_factory=dict)  # matches
    weight_by_submitter: dict[str, float] = field(default_factory=dict)  # slot weight matched
    concurrency_used: dict[str, float] = field(default_factory=dict)  # limit name → consumed
    # negotiate_fair with groups: weight each group's own submitters may hold this cycle
    # (surplus included) and hold at its end, keys lower case (``<none>``: no group)
    group_quota: dict[str, float] = field(default_factory=dict)
    group_held: dict[str, float] = field(default_factory=dict)
    evaluations: int = 0  # symmetric matches tried (one per slot class)
    now: float = 0.0


@dataclass
class ConcurrencyLimits:
    """The negotiator's concurrency limits (``<NAME>_LIMIT``, ``CONCURRENCY_LIMIT_DEFAULT``,
    ``CONCURRENCY_LIMIT_DEFAULT_<GROUP>``) and what running jobs hold now.

    Names are case-insensitive (keys lower case). A name without its own
    limit uses ``group_defaults[prefix]`` when it has the form ``prefix.rest``
    and the prefix has one (HTCondor's group defaults), else ``default``.
    """

    limits: dict[str, float] = field(default_factory=dict)
    default: float = DEFAULT_CONCURRENCY_LIMIT
    in_use: dict[str, float] = field(default_factory=dict)
    group_defaults: dict[str, float] = field(default_factory=dict)

    def limit_of(self, name: str) -> float:
        k = name.lower()
        v = self.limits.get(k)
        if v is not None:
            return float(v)
        prefix, dot, _ = k.partition(".")
        if dot and prefix in self.group_defaults:
            return float(self.group_defaults[prefix])
        return float(self.default)


_SPLIT = re.compile(r"[,\s]+")


def parse_concurrency_limits(text: Any) -> dict[str, float] | None:
    """A job's ``ConcurrencyLimits`` (``"license:2, db"``) as {lower name: amount};
    amounts default to 1, repeated names add up. None when the text is malformed
    (a non-numeric or negative amount): such a job is never matched, rather than
    run past a license."""
    if type(text) is not str:
        return {}
    out: dict[str, float] = {}
    for tok in _SPLIT.split(text.strip()):
        if not tok:
            continue
        name, colon, amount = tok.partition(":")
        name = name.strip().lower()
        if not name:
            return None
        n = 1.0
        if colon:
            try:
                n = float(amount)
            except ValueError:
                return None
            if not math.isfinite(n) or n < 0:
                return None
        out[name] = out.get(name, 0.0) + n
    return out


def _number(v: Any) -> float:
    t = type(v)
    if t is int or t is float:
        return float(v)
    if t is bool:
        return 1.0 if v else 0.0
    return 0.0


def _eval(node: Node | None, cur: ClassAd, tgt: ClassAd | None) -> float:
    if node is None:
        return 0.0
    try:
        return _number(evaluate(node, cur, tgt))
    except EvaluationFailed:
        return 0.0


def _value_of(node: Node, cur: ClassAd, tgt: ClassAd | None) -> Any:
    """``node``'s value, None when the evaluation fails."""
    try:
        return evaluate(node, cur, tgt)
    except EvaluationFailed:
        return None


def _value(ad: ClassAd, attr: str) -> Any:
    v = ad._lits.get(attr)
    if v is None and attr in ad._attrs:
        try:
            v = evaluate(ad._attrs[attr], ad, None)
        except EvaluationFailed:
            return None
    return v


def _is_true(ad: ClassAd, attr: str) -> bool:
    v = _value(ad, attr)
    return v is True or (type(v) in (int, float) and v != 0)


def _state(ad: ClassAd) -> Any:
    return _value(ad, "state")


# ---------------------------------------------------------------------------
# What an expression can read: attribute names, or "unknowable"
# ---------------------------------------------------------------------------

# functions that reach attributes by a computed name, read expressions rather
# than values, or give a different answer per call
_DYNAMIC_FUNCS = frozenset(
    ("eval", "unparse", "unresolved", "evalineachcontext", "countmatches", "random")
)
# names that stand for a whole ad when used as a value
_SCOPE_NAMES = frozenset(("my", "self", "target", "other", "parent", "toplevel", "root", "ad"))


class _Dynamic(Exception):
    pass


def _walk(node: Any, out: set[str], as_base: bool = False) -> None:
    t = type(node)
    if t is Literal:
        return
    if t is AttrRef:
        base = node.base
        if base is None:
            if node.lname in _SCOPE_NAMES and not as_base:
                raise _Dynamic
        else:
            _walk(base, out, True)
        out.add(node.lname)
        return
    if t is Paren:
        _walk(node.expr, out, as_base)
        return
    if t is BinaryOp:
        _walk(node.left, out)
        _walk(node.right, out)
        return
    if t is UnaryOp:
        _walk(node.operand, out)
        return
    if t is Conditional:
        _walk(node.cond, out)
        _walk(node.then, out)
        _walk(node.else_, out)
        return
    if t is FuncCall:
        if node.lname in _DYNAMIC_FUNCS:
            raise _Dynamic
        for a in node.args:
            _walk(a, out)
        return
    if t is ListExpr:
        for a in node.items:
            _walk(a, out)
        return
    if t is AdExpr:
        for _, a in node.attrs:
            _walk(a, out)
        return
    if t is Subscript:
        idx = node.index
        if type(idx) is not Literal:
            raise _Dynamic  # rec[expr] reaches an attribute named at run time
        if type(idx.value) is str:
            out.add(idx.value.lower())
        _walk(node.base, out, True)
        return
    raise _Dynamic


def _names_of(node: Node) -> frozenset[str] | None:
    """Lower-case attribute names ``node`` can read, None when unknowable."""
    out: set[str] = set()
    try:
        _walk(node, out)
    except _Dynamic:
        return None
    return frozenset(out)


_MISSING = ("missing",)
_CARVED = ("carved",)


# ---------------------------------------------------------------------------
# The per-cycle view
# ---------------------------------------------------------------------------


class _View:
    """One slot's state within a cycle."""

    __slots__ = (
        "slot", "ad", "index", "partitionable", "claimed", "remaining", "used", "copied",
        "weight", "carved", "stale", "numeric", "touched", "absent",
    )

    def __init__(self, slot: Slot, index: int, claimed: bool) -> None:
        self.slot = slot
        self.ad = slot.ad
        self.index = index
        self.claimed = claimed
        self.partitionable = not claimed and _is_true(slot.ad, "partitionableslot")
        self.remaining: dict[str, float] = {}
        # every resource a number literal or absent: ``remaining`` is then exactly what
        # the ad says of the ones present
        self.numeric = True
        absent = []
        if self.partitionable:
            for attr, _, _ in RESOURCES:
                node = slot.ad._attrs.get(attr.lower())
                self.remaining[attr] = _eval(node, slot.ad, None)
                if node is None:
                    absent.append(attr)
                elif type(node) is not Literal or type(node.value) not in (int, float):
                    self.numeric = False
        self.absent = frozenset(absent)
        self.used = False
        self.copied = False  # ``ad`` is our own copy
        self.carved = False  # ``remaining`` has been lowered
        self.stale = False  # ``ad`` does not show ``remaining`` yet (see ``fresh_ad``)
        self.touched: set[str] = set()  # resources lowered at least once
        node = slot.ad._attrs.get("slotweight")
        if node is None:
            node = slot.ad._attrs.get("cpus")
        self.weight = _eval(node, slot.ad, None) if node is not None else 1.0

    def take(self, amounts: dict[str, float]) -> None:
        """Lower what is left; the ad follows only when an evaluation needs it."""
        rem = self.remaining
        for attr, amount in amounts.items():
            if amount != 0:
                rem[attr] -= amount
                self.touched.add(attr)
                self.carved = self.stale = True

    def fresh_ad(self) -> ClassAd:
        """The ad with each lowered resource set to what is left, so Requirements that
        read ``TARGET.Memory`` see what the startd's carved slot will have."""
        if self.stale:
            if not self.copied:
                self.ad = ClassAd(self.ad)  # shares the expression trees; only our copy changes
                self.copied = True
            ad = self.ad
            attrs, lits = ad._attrs, ad._lits
            for attr in self.touched:
                left = self.remaining[attr]
                v = int(left) if float(left).is_integer() else left
                k = attr.lower()
                if k in attrs:  # what _set_node does for a number literal of a known name
                    attrs[k] = _literal(v)
                    lits[k] = v
                else:
                    ad._set_node(attr, _literal(v))
            self.stale = False
        return self.ad


def _offered(v: _View) -> bool:
    """Counted by :meth:`SlotPool.free_slots`."""
    if v.used or v.claimed:
        return False
    return not v.partitionable or v.remaining["Cpus"] > 0 or v.remaining["Memory"] > 0


_LITERALS: dict[tuple[type, Any], Literal] = {}


def _literal(v: int | float) -> Literal:
    """A shared (immutable) Literal for a lowered resource."""
    k = (type(v), v)
    node = _LITERALS.get(k)
    if node is None:
        if len(_LITERALS) > 100000:
            _LITERALS.clear()
        node = _LITERALS[k] = Literal(v)
    return node


def _fixed_request(job: ClassAd) -> dict[str, float] | None:
    """What ``job`` asks of a partitionable slot when that cannot depend on the slot
    (every Request* a number or absent); None otherwise."""
    out = {}
    attrs = job._attrs
    for attr, req_attr, default in _RES:
        node = attrs.get(req_attr)
        if node is None:
            out[RESOURCE_NAMES[attr]] = float(default)
        elif type(node) is Literal and type(node.value) in (int, float):
            out[RESOURCE_NAMES[attr]] = float(node.value)
        else:
            return None
    return out


def _requested(job: ClassAd, slot_ad: ClassAd) -> dict[str, float]:
    out = {}
    for attr, req_attr, default in RESOURCES:
        node = job._attrs.get(req_attr.lower())
        if node is None:
            out[attr] = float(default)
            continue
        try:
            v = evaluate(node, job, slot_ad)
        except EvaluationFailed:
            v = None
        out[attr] = float(v) if type(v) in (int, float) else float(default)
    return out


def _may_fit(job: ClassAd, group: tuple[str, bool, bool]) -> bool:
    """False when no partitionable slot of ``group`` can take ``job``: it asks for
    Cpus (Memory) and the group has none left. Request* expressions that are not
    constants (they may read the slot) never rule a group out."""
    _, cpus_left, memory_left = group
    attrs = job._attrs
    for left, attr, default in ((cpus_left, "requestcpus", 1), (memory_left, "requestmemory", 0)):
        if left:
            continue
        node = attrs.get(attr)
        if node is None:
            amount = default
        elif type(node) is Literal and type(node.value) in (int, float):
            amount = node.value
        else:
            return True
        if amount > 0:
            return False
    return True


def _fits(view: _View, amounts: dict[str, float]) -> bool:
    rem = view.remaining
    for attr, amount in amounts.items():
        if amount > 0 and rem[attr] < amount:
            return False
    return amounts.get("Cpus", 1.0) > 0 or amounts.get("Memory", 0.0) > 0


class _Class:
    """Slots that agree on every attribute a request kind can read."""

    __slots__ = ("key", "kid", "group", "members", "live", "alive", "bid")

    def __init__(self, key: tuple[Any, ...], kid: int, group: Any, bid: int | None) -> None:
        self.key = key
        self.bid = bid  # a partitionable class's base number (see ``_Partition.bmembers``)
        self.kid = kid  # the key's number in its partition: cheap to hash
        self.alive = True  # False once it has lost its last member
        self.group = group  # "s" (one job per slot) or ("p", cpus left, memory left)
        self.members: list[tuple[int, _View]] = []  # heap by input order, lazily pruned
        self.live = 0


class _BaseRef:
    """A base's entry in a request's heap (see :meth:`SlotPool.match_request`)."""

    __slots__ = ("bid",)

    def __init__(self, bid: int) -> None:
        self.bid = bid


class _Partition:
    """The slot classes for one set of readable names (or one class per slot)."""

    __slots__ = (
        "names", "rest", "res_names", "classes", "groups", "of", "base", "cursor", "born", "kids",
        "bid", "bids", "bmembers", "bnumeric", "brefs", "bnext", "babsent",
    )

    def __init__(self, names: tuple[str, ...] | None) -> None:
        self.names = names  # None: every slot its own class
        self.rest = () if names is None else tuple(n for n in names if n not in _RES_NAMES)
        self.res_names = tuple(n for n, _, _ in _RES)
        self.classes: dict[tuple[Any, ...], _Class] = {}
        # the classes again, by whether they can take a job that asks for Cpus / Memory
        self.groups: dict[Any, dict[tuple[Any, ...], _Class]] = {}
        self.base: dict[int, tuple[Any, ...]] = {}  # view index → the unchanging part of its key
        self.bid: dict[int, int] = {}  # view index → its base's number (cheap to hash)
        self.bids: dict[tuple[Any, ...], int] = {}
        # the partitionable slots of each base in input order, whether all their
        # resources are numbers, and a handle for a base's entry in a request's heap
        self.bmembers: dict[int, list[_View]] = {}
        self.bnumeric: dict[int, bool] = {}
        self.babsent: dict[int, frozenset[str]] = {}  # resources some member lacks
        self.brefs: dict[int, _BaseRef] = {}
        # per base, "the next member that may still have Cpus left" (a union-find with
        # path halving; a member whose Cpus ran out points past itself, for good)
        self.bnext: dict[int, list[int]] = {}
        self.of: dict[int, _Class] = {}  # view index → its class
        self.cursor = 0  # how much of the pool's change log is applied
        # every class created, in order: a request none of whose classes could take it
        # need only look at the ones created since (a class keeps its key, so its answer)
        self.born: list[_Class] = []
        self.kids: dict[tuple[Any, ...], int] = {}  # class key → its number, for ever


_RES = tuple((a.lower(), r.lower(), d) for a, r, d in RESOURCES)
_RES_NAMES = frozenset(a for a, _, _ in _RES)
_SPLIT_BLOCKERS = _RES_NAMES | {"requirements"}
RESOURCE_NAMES = {a.lower(): a for a, _, _ in RESOURCES}

# Names every match may read on the slot side besides expressions' references.
_SLOT_ROOTS = (
    "requirements", "state", "partitionableslot", "slotweight",
    "cpus", "memory", "disk", "gpus",
)
_PREEMPT_ROOTS = ("rank", "currentrank", "remoteuser", "remoteuserprio")
_JOB_ROOTS = ("requirements", "rank", "requestcpus", "requestmemory", "requestdisk", "requestgpus")


class _Answers:
    """One request ad's candidates so far, by class key number, and which classes need
    offering next time: ``maybe``, those of the last call not known to answer None
    (a class keeps its key, so its answer), plus those the partition created since
    (``part.born[seen:]``). None: offer every class."""

    __slots__ = ("job", "by_kid", "maybe", "seen", "by_base", "cursors", "dry")

    def __init__(self, job: ClassAd) -> None:
        self.job = job
        self.by_kid: dict[Any, Any] = {}
        # base number → the candidate every fitting slot of that base is (None: no match),
        # for a job that reads a slot's resources only as thresholds (see :class:`_Split`)
        self.by_base: dict[int, Any] = {}
        # base number → members before this position fail the job's checks for good
        self.cursors: dict[int, int] = {}
        self.dry = False  # no base had a member to offer last time
        self.maybe: list[_Class] | None = None
        self.seen = 0



_CMP_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
}
_FLIPPED = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}


class _Split:
    """A job whose Requirements read a partitionable slot's resources only as
    thresholds (``TARGET.Memory >= RequestMemory``, a number on the other side).

    The rest of the match (the other conjuncts and the slot's own Requirements),
    and its ranks when they read no resource, are the same for every slot of one
    base key (its values of everything but the resources): they are evaluated once
    per base, and a carved slot costs a few number comparisons instead of an
    evaluation. Carving makes a new class per slot, so that is most of a cycle."""

    __slots__ = ("checks", "rest", "ranked", "monotone", "cpus", "reads")

    def __init__(self, checks: tuple[tuple[str, Callable[[Any, Any], bool], float], ...],
                 rest: tuple[Node, ...] | None, ranked: bool, cpus: bool,
                 reads: frozenset[str]) -> None:
        # (resource, comparison, number): what is left must pass ``left cmp number``,
        # for the thresholds and for the request to fit (:func:`_fits`)
        self.checks = checks
        self.rest = rest  # the other conjuncts; None: Requirements reads no resource at all
        self.ranked = ranked  # the ranks read no resource: one answer per base too
        # every check only ever fails more as a slot is carved (lower bounds)
        self.monotone = all(c[1] in (operator.ge, operator.gt, _never) for c in checks)
        self.cpus = cpus  # asks for Cpus: a slot with none left never passes
        # the resources its thresholds compare: a slot must have them (an absent one
        # is UNDEFINED to the job, not the 0 that ``remaining`` holds)
        self.reads = reads


def _unparen(node: Node) -> Node:
    while type(node) is Paren:
        node = node.expr  # type: ignore[attr-defined]
    return node


def _scope(node: Node | None, name: str) -> bool:
    """``node`` is the bare scope name ``name`` (``TARGET``, ``MY``)."""
    return (type(node) is AttrRef and node.base is None and not node.absolute
            and node.lname == name)


def _slot_resource(node: Node, job: ClassAd) -> str | None:
    """The resource (lower-case) that a job-side reference reads from the slot, else None."""
    node = _unparen(node)
    if type(node) is not AttrRef or node.absolute or node.lname not in _RES_NAMES:
        return None
    if node.base is None:  # a bare name is the job's own first
        return None if node.lname in job._attrs else node.lname
    return node.lname if _scope(node.base, "target") else None


def _job_number(node: Node, job: ClassAd) -> float | None:
    """The number a job-side expression is whatever the slot: a number literal, or
    a reference to a job attribute that is one."""
    node = _unparen(node)
    if type(node) is AttrRef and not node.absolute and (node.base is None or _scope(node.base, "my")):
        found = job._attrs.get(node.lname)
        if found is None:
            return None
        node = found
    if type(node) is Literal and type(node.value) in (int, float):
        return node.value
    return None


def _threshold(node: Node, job: ClassAd) -> tuple[str, Callable[[Any, Any], bool], float] | None:
    node = _unparen(node)
    if type(node) is not BinaryOp or node.op not in _CMP_OPS:
        return None
    op, other = node.op, node.right
    res = _slot_resource(node.left, job)
    if res is None:
        res, op, other = _slot_resource(node.right, job), _FLIPPED[op], node.left
        if res is None:
            return None
    v = _job_number(other, job)
    return None if v is None else (RESOURCE_NAMES[res], _CMP_OPS[op], v)


def _never(left: Any, number: Any) -> bool:
    return False


def _truthy(v: Any) -> bool:
    """What ``&&`` counts as true: true or a non-zero number."""
    return v is True or (type(v) in (int, float) and v != 0)


class SlotPool:
    """The slots of one cycle and what has been promised of them so far."""

    def __init__(
        self,
        slots: Iterable[Slot],
        *,
        pre_job_rank: Node | None = None,
        post_job_rank: Node | None = None,
        preemption: PreemptionPolicy | None = None,
    ) -> None:
        consider = preemption is not None and preemption.consider
        self.views: list[_View] = []
        for i, s in enumerate(slots):
            state = _state(s.ad)
            if state == "Unclaimed":
                self.views.append(_View(s, i, False))
            elif consider and state == "Claimed":
                self.views.append(_View(s, i, True))
        self.pre_job_rank = pre_job_rank
        self.post_job_rank = post_job_rank
        self.preemption = preemption
        self._has_claimed = any(v.claimed for v in self.views)
        self._has_partitionable = any(v.partitionable for v in self.views)
        # the lightest one-job slot: a limit below it (and below the job's Cpus on a
        # partitionable slot) can match nothing, so such a request is not evaluated
        self._light = [(v.weight, v.index, v) for v in self.views if not v.partitionable]
        heapq.heapify(self._light)  # lazily pruned of used views
        self._nan_weight = any(math.isnan(w) for w, _, _ in self._light)
        self._free = sum(1 for v in self.views if _offered(v))
        # Per request ad (ads must not change while the pool is in use): id(job) →
        # (job, its fixed request, its readable names, its constant sort key, the
        # least weight a partitionable slot's match of it can have)
        self._jobs: dict[int, tuple[ClassAd, dict[str, float] | None, Any, Any, float, Any]] = {}
        # (id(job), submitter prio) → _Answers: a class key holds every value the
        # evaluation can read, so a class's answer stands for the rest of the cycle
        self._results: dict[tuple[int, float | None], _Answers] = {}
        self.evaluations = 0
        self.concurrency_used: dict[str, float] = {}  # consumed in this cycle, all passes
        self._changes: list[_View] = []  # views carved or used, for lazy class updates
        self._partitions: dict[Any, _Partition] = {}
        self._text: dict[int, tuple[Node, Any]] = {}  # id(node) → (node, value key)
        self._node_names: dict[int, tuple[Node, frozenset[str] | None]] = {}
        # attribute name → names that some slot's expression for it can read (None: unknowable)
        self._slot_refs: dict[str, set[str] | None] = {}
        # the same for the partitionable slots alone (what :meth:`_split` may assume)
        self._pslot_refs: dict[str, set[str] | None] = {}
        self._odd = False  # some slot ad has a parent scope: no classes
        for v in self.views:
            ad = v.ad
            if ad.parent is not None:
                self._odd = True
            for k, node in ad._attrs.items():
                if type(node) is Literal:
                    continue
                names = self._names(node)
                for refs in (self._slot_refs, self._pslot_refs) if v.partitionable else (
                    self._slot_refs,
                ):
                    cur = refs.get(k, set())
                    if names is None or cur is None:
                        refs[k] = None
                    else:
                        cur |= names
                        refs[k] = cur
        roots: set[str] = set(_SLOT_ROOTS)
        extra: list[Node | None] = [pre_job_rank, post_job_rank]
        if consider:
            roots.update(_PREEMPT_ROOTS)
            extra += [preemption.requirements, preemption.rank]  # type: ignore[union-attr]
        self._roots_dynamic = False
        for node in extra:
            if node is None:
                continue
            names = self._names(node)
            if names is None:
                self._roots_dynamic = True
            else:
                roots |= names
        self._roots = frozenset(roots)

    # -- classes --------------------------------------------------------------

    def _names(self, node: Node) -> frozenset[str] | None:
        hit = self._node_names.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        names = _names_of(node)
        self._node_names[id(node)] = (node, names)
        return names

    def _readable(self, job: ClassAd) -> tuple[str, ...] | None:
        """Slot attribute names that matching ``job`` can read, None when unknowable."""
        if self._odd or self._roots_dynamic or job.parent is not None:
            return None
        seen = self._reach((*self._roots, *_JOB_ROOTS), job, self._slot_refs)
        return None if seen is None else tuple(sorted(seen))

    def _vkey(self, node: Node | None) -> Any:
        if node is None:
            return _MISSING
        if type(node) is Literal:
            v = node.value
            t = type(v)
            if t is int or t is str or t is float or t is bool:
                return (t, v)
        hit = self._text.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        key = ("expr", unparse(node))
        self._text[id(node)] = (node, key)
        return key

    def _key(self, part: _Partition, view: _View) -> tuple[Any, ...]:
        """Equal keys: equal values of every name the partition's requests can read.
        Only a partitionable view's resources change in a cycle (``take``), so the
        rest is computed once, and stands in its key as a number (cheap to hash)."""
        if part.names is None:
            if not view.partitionable:
                return (view.index,)
            head: Any = view.index
        else:
            head = part.bid.get(view.index)
            if head is None:
                attrs = view.ad._attrs
                vk = self._vkey
                names = part.rest if view.partitionable else part.names
                base = (*[vk(attrs.get(n)) for n in names], view.claimed, view.partitionable)
                part.base[view.index] = base
                head = part.bid[view.index] = part.bids.setdefault(base, len(part.bids))
                if view.partitionable:
                    part.bmembers.setdefault(head, []).append(view)
                    nxt = part.bnext.setdefault(head, [0])
                    nxt.append(len(nxt))  # the new member is its own; the last is the end
                    part.bnumeric[head] = part.bnumeric.get(head, True) and view.numeric
                    part.babsent[head] = part.babsent.get(head, frozenset()) | view.absent
                    if head not in part.brefs:
                        part.brefs[head] = _BaseRef(head)
            if not view.partitionable:
                return part.base[view.index]
        # once carved, the resources are the numbers in ``remaining``
        res = _CARVED if view.carved else tuple(
            self._vkey(view.ad._attrs.get(n)) for n in part.res_names
        )
        return (head, tuple(view.remaining.values()), res)

    @staticmethod
    def _group(view: _View) -> Any:
        if not view.partitionable:
            return "s"
        rem = view.remaining
        return ("p", rem["Cpus"] > 0, rem["Memory"] > 0)

    def _place(self, part: _Partition, view: _View) -> _Class | None:
        """Bring ``view``'s class membership in ``part`` up to date; its class."""
        old = part.of.get(view.index)
        if view.used:
            if old is not None:
                self._leave(part, old, view)
            return None
        key = self._key(part, view)
        if old is not None:
            if old.key == key:
                return old
            self._leave(part, old, view)
        cls = part.classes.get(key)
        if cls is None:
            group = self._group(view)
            kid = part.kids.get(key)
            if kid is None:
                kid = part.kids[key] = len(part.kids)
            bid = key[0] if view.partitionable and part.names is not None else None
            cls = part.classes[key] = _Class(key, kid, group, bid)
            part.born.append(cls)
            part.groups.setdefault(group, {})[key] = cls
        heapq.heappush(cls.members, (view.index, view))
        cls.live += 1
        part.of[view.index] = cls
        return cls

    @staticmethod
    def _leave(part: _Partition, cls: _Class, view: _View) -> None:
        del part.of[view.index]
        cls.live -= 1
        if cls.live == 0:
            del part.classes[cls.key]
            del part.groups[cls.group][cls.key]
            cls.alive = False

    def _partition(self, job: ClassAd, names: Any = False) -> _Partition:
        if names is False:
            names = self._readable(job)
        part = self._partitions.get(names)
        if part is None:
            part = self._partitions[names] = _Partition(names)
            for view in self.views:
                if not view.used:
                    self._place(part, view)
            part.cursor = len(self._changes)
        elif part.cursor < len(self._changes):
            changed = {v.index: v for v in self._changes[part.cursor:]}
            for view in changed.values():
                self._place(part, view)
            part.cursor = len(self._changes)
        return part

    @staticmethod
    def _head(part: _Partition, cls: _Class) -> _View | None:
        members = cls.members
        while members:
            view = members[0][1]
            if not view.used and part.of.get(view.index) is cls:
                return view
            heapq.heappop(members)
        return None

    # -- evaluation -------------------------------------------------------------

    def _candidate(
        self,
        request: Request,
        view: _View,
        prio: float | None,
        fixed: dict[str, float] | None = None,
        split: _Split | None = None,
        by_base: dict[int, Any] | None = None,
        part: _Partition | None = None,
    ) -> tuple[tuple[Any, ...], tuple[float, float, float], dict[str, float], float, bool] | None:
        """(sort key, ranks, amounts, weight, preempts) of ``view`` for the request, or None.
        ``fixed``: the job's request when it cannot depend on the slot. ``split``, with
        the request's answers by base (``by_base``) in ``part``: see :class:`_Split`."""
        job = request.ad
        if (split is not None and view.partitionable and view.numeric
                and split.reads.isdisjoint(view.absent)):
            rem = view.remaining
            for attr, cmp, number in split.checks:
                if not cmp(rem[attr], number):
                    return None
            bid = part.bid[view.index]  # type: ignore[union-attr]
            known = by_base.get(bid, False)  # type: ignore[union-attr]
            if known is False:
                known = by_base[bid] = self._base_answer(job, view.ad, split, fixed)  # type: ignore[index,arg-type]
            if known is None or split.ranked:
                return known
            ranks = self._ranks(job, view.fresh_ad() if view.stale else view.ad)
            r1, r2, r3 = ranks
            return (NO_PREEMPTION, -r1, -r2, -r3, 0.0), ranks, known[2], known[3], False
        if fixed is not None and view.partitionable and not _fits(view, fixed):
            return None  # what the full check below would find, without evaluating
        ad = view.fresh_ad() if view.stale else view.ad
        self.evaluations += 1
        if not (matches(ad, job) and matches(job, ad)):
            return None
        amounts: dict[str, float] = {}
        weight = view.weight
        if view.partitionable:
            if fixed is not None:
                amounts = dict(fixed)  # fits: checked above
            else:
                amounts = _requested(job, ad)
                if not _fits(view, amounts):
                    return None
            weight = amounts["Cpus"]
        level, prank = NO_PREEMPTION, 0.0
        if view.claimed:
            kind = preemption_kind(self.preemption, ad, job, request.submitter, prio)
            if kind is None:
                return None
            level, prank = preemption_key(self.preemption, kind, ad, job)
        r1, r2, r3 = self._ranks(job, ad)
        return (level, -r1, -r2, -r3, prank), (r1, r2, r3), amounts, weight, view.claimed

    def _base_answer(self, job: ClassAd, ad: ClassAd, split: _Split,
                     fixed: dict[str, float]) -> Any:
        """The candidate every fitting slot of ``ad``'s base is for a :class:`_Split`
        job (its ranks only when they read no resource), or None. ``ad``'s resources
        may be stale: nothing evaluated here reads them."""
        self.evaluations += 1
        if split.rest is None:
            ok = matches(ad, job) and matches(job, ad)
        else:
            ok = matches(ad, job) and all(_truthy(_value_of(c, job, ad)) for c in split.rest)
        if not ok:
            return None
        ranks = self._ranks(job, ad) if split.ranked else (0.0, 0.0, 0.0)
        r1, r2, r3 = ranks
        return (NO_PREEMPTION, -r1, -r2, -r3, 0.0), ranks, dict(fixed), fixed["Cpus"], False

    def _ranks(self, job: ClassAd, ad: ClassAd) -> tuple[float, float, float]:
        """NEGOTIATOR_PRE_JOB_RANK, the job's Rank, NEGOTIATOR_POST_JOB_RANK of ``ad``."""
        return (_eval(self.pre_job_rank, ad, job), _eval(job._attrs.get("rank"), job, ad),
                _eval(self.post_job_rank, ad, job))

    def _constant_key(self, job: ClassAd) -> tuple[Any, ...] | None:
        """The sort key every candidate of ``job`` has when no rank can differ between
        slots (constant ranks, nothing to preempt); None otherwise. Then the best slot
        is the first one in input order that matches, and classes are evaluated
        lazily in that order, only until the request is served."""
        if self._has_claimed:
            return None
        rank = job._attrs.get("rank")
        for node in (self.pre_job_rank, rank, self.post_job_rank):
            if node is not None and type(node) is not Literal:
                return None
        r1 = _eval(self.pre_job_rank, job, None)
        r2 = _eval(rank, job, None)
        r3 = _eval(self.post_job_rank, job, None)
        return (NO_PREEMPTION, -r1, -r2, -r3, 0.0)

    def _job_info(
        self, job: ClassAd
    ) -> tuple[ClassAd, dict[str, float] | None, Any, Any, float, _Split | None]:
        info = self._jobs.get(id(job))
        if info is None or info[0] is not job:
            fixed = _fixed_request(job)
            light = math.inf
            if self._has_partitionable:
                light = fixed["Cpus"] if fixed is not None else -math.inf
            names = self._readable(job)
            split = self._split(job, fixed) if names is not None else None
            info = self._jobs[id(job)] = (
                job, fixed, names, self._constant_key(job), light, split
            )
        return info

    def _reach(self, start: Iterable[str], job: ClassAd,
               slot_refs: dict[str, set[str] | None] | None = None) -> set[str] | None:
        """Every name reading ``start`` can lead to, on a slot's ad (as ``slot_refs``
        says; default: the partitionable slots') or the job's; None when unknowable."""
        seen: set[str] = set()
        todo = list(start)
        jattrs = job._attrs
        if slot_refs is None:
            slot_refs = self._pslot_refs
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            if k in slot_refs:
                refs = slot_refs[k]
                if refs is None:
                    return None
                todo.extend(refs)
            node = jattrs.get(k)
            if node is not None and type(node) is not Literal:
                names = self._names(node)
                if names is None:
                    return None
                todo.extend(names)
        return seen

    def _split(self, job: ClassAd, fixed: dict[str, float] | None) -> _Split | None:
        """How ``job`` reads a partitionable slot's resources, when only as thresholds."""
        req = job._attrs.get("requirements")
        if fixed is None or req is None or not self._has_partitionable:
            return None
        thresholds, rest = [], []
        for c in conjuncts(req):
            t = _threshold(c, job)
            if t is None:
                rest.append(c)
            else:
                thresholds.append(t)
        refs = self._pslot_refs.get("requirements", ())
        if refs is None:
            return None
        start = set(refs)
        for c in rest:
            names = self._names(c)
            if names is None:
                return None
            start |= names
        reach = self._reach(start, job)
        if reach is None or not reach.isdisjoint(_SPLIT_BLOCKERS):
            return None
        rank_names: set[str] = set()
        for node in (self.pre_job_rank, job._attrs.get("rank"), self.post_job_rank):
            if node is not None and type(node) is not Literal:
                names = self._names(node)
                if names is None:
                    return None
                rank_names |= names
        reach = self._reach(rank_names, job)
        ranked = reach is not None and reach.isdisjoint(_SPLIT_BLOCKERS)
        checks = [(attr, operator.ge, amount) for attr, amount in fixed.items() if amount > 0]
        if fixed["Cpus"] <= 0 and fixed["Memory"] <= 0:
            checks.append(("Cpus", _never, 0.0))  # takes nothing: never fits (see _fits)
        return _Split(tuple(checks + thresholds), tuple(rest) if thresholds else None, ranked,
                      fixed["Cpus"] > 0, frozenset(t[0] for t in thresholds))

    def _lightest(self, job: ClassAd) -> float:
        """No match of ``job`` can weigh less (-inf: cannot tell)."""
        if self._nan_weight:
            return -math.inf
        return min(self._lightest_static(), self._job_info(job)[4])

    def _lightest_static(self) -> float:
        light = self._light
        while light and light[0][2].used:
            heapq.heappop(light)
        return light[0][0] if light else math.inf

    def match_request(
        self,
        request: Request,
        limit: int | None = None,
        *,
        weight_limit: float | None = None,
        submitter_prio: float | None = None,
    ) -> list[Match]:
        """Give up to ``min(request.count, limit)`` jobs of one request their best slots,
        taking no more than ``weight_limit`` slot weight (a slot heavier than what is
        left is passed over for a lighter one). ``submitter_prio`` is the submitter's
        effective priority for priority preemption (default: the job's
        ``SubmitterUserPrio``)."""
        want = request.count if limit is None else min(request.count, limit)
        if want <= 0:
            return []
        job = request.ad
        prio = submitter_prio
        if prio is None and self.preemption is not None:
            v = _value(job, "submitteruserprio")
            prio = float(v) if type(v) in (int, float) else None
        budget = math.inf if weight_limit is None else weight_limit + _EPS
        _, fixed, names, const, _, split = self._job_info(job)
        if budget < math.inf and self._lightest(job) > budget:
            return []  # every candidate would be too heavy for the limit
        part = self._partition(job, names)
        answers: _Answers | None = None
        by_base: dict[int, Any] | None = None
        if part.names is None:  # no classes (maybe random()): evaluated afresh each time
            results: dict[int, Any] = {}
            split = None
        else:
            ck = (id(job), prio)
            answers = self._results.get(ck)
            if answers is None or answers.job is not job:
                answers = self._results[ck] = _Answers(job)
            elif answers.maybe == [] and answers.seen == len(part.born) and (
                answers.dry or split is None or not split.monotone
            ):
                return []  # no class could take it last time, and no class is new
            results = answers.by_kid
            by_base = answers.by_base
        # A split job with constant ranks and lower-bound checks takes, from each base
        # whose slots all have number resources, the first slot in input order that
        # passes its checks: the base stands in the heap for all its classes, and a
        # per-base cursor skips the slots that failed for good (carving only lowers).
        scan: list[int] = []
        if split is not None and split.ranked and split.monotone:
            scan = [b for b, numeric in part.bnumeric.items()
                    if numeric and split.reads.isdisjoint(part.babsent[b])]
        scanned = frozenset(scan)
        offered: dict[_Class, None] = {}
        of = part.of
        queued: dict[Any, int] = {}  # class or base → input index of its entry in the heap
        heap: list[tuple[Any, ...]] = []
        serial = 0
        used_weight = 0.0

        def offer(cls: _Class) -> None:
            nonlocal serial
            offered[cls] = None
            members = cls.members  # the class's first free member (``_head``, inlined)
            while members:
                head = members[0][1]
                if not head.used and of.get(head.index) is cls:
                    break
                heapq.heappop(members)
            else:
                return
            res = results.get(cls.kid, False)
            if res is False and const is None:
                res = results[cls.kid] = self._candidate(
                    request, head, prio, fixed, split, by_base, part
                )
            if res is None:
                return
            if res is not False and used_weight + res[3] > budget:
                return
            if queued.get(cls, -1) == head.index:
                return
            queued[cls] = head.index
            serial += 1
            entry = (const if res is False else res[0], head.index, serial, cls)
            if filling:
                heap.append(entry)
            else:
                heapq.heappush(heap, entry)

        checks = split.checks if split is not None else ()
        cursors = answers.cursors if answers is not None else {}
        bmembers, bnext = part.bmembers, part.bnext
        skip_spent = split is not None and split.cpus

        def offer_base(bid: int) -> bool:
            """Offer the base's first member that passes the checks; False: none does."""
            nonlocal serial
            members = bmembers[bid]
            res = by_base.get(bid, False)  # type: ignore[union-attr]
            if res is False:
                res = by_base[bid] = self._base_answer(  # type: ignore[index]
                    job, members[0].ad, split, fixed  # type: ignore[arg-type]
                )
            if res is None:
                return False
            pos, n = cursors.get(bid, 0), len(members)
            nxt = bnext[bid] if skip_spent else None
            while True:
                if nxt is not None:
                    while nxt[pos] != pos:  # path halving
                        nxt[pos] = nxt[nxt[pos]]
                        pos = nxt[pos]
                if pos >= n:
                    break
                rem = members[pos].remaining
                if nxt is not None and rem["Cpus"] <= 0:
                    nxt[pos] = pos + 1  # spent: every job that asks for Cpus skips it
                    continue
                for attr, cmp, number in checks:
                    if not cmp(rem[attr], number):
                        break
                else:
                    break
                pos += 1
            cursors[bid] = pos
            if pos == n:
                return False
            if used_weight + res[3] > budget:
                return True
            index = members[pos].index
            ref = part.brefs[bid]
            if queued.get(ref, -1) == index:
                return True
            queued[ref] = index
            serial += 1
            entry = (res[0], index, serial, ref)
            if filling:
                heap.append(entry)
            else:
                heapq.heappush(heap, entry)
            return True

        filling = True  # the first offers are heapified at once
        if (
            answers is not None
            and answers.maybe is not None
            and len(answers.maybe) + len(part.born) - answers.seen < len(part.classes)
        ):  # the other classes answered None (or cannot fit the job) last time
            for cls in answers.maybe:
                if cls.alive:
                    offer(cls)
            for cls in part.born[answers.seen:]:
                if cls.alive and (
                    cls.group == "s" or (cls.bid not in scanned and _may_fit(job, cls.group))
                ):
                    offer(cls)
        else:
            for group, classes in part.groups.items():
                if group == "s":
                    for cls in classes.values():
                        offer(cls)
                elif _may_fit(job, group):
                    for cls in classes.values():
                        if cls.bid not in scanned:
                            offer(cls)
        found = False
        for bid in scan:
            found = offer_base(bid) or found
        heapq.heapify(heap)
        filling = False
        out: list[Match] = []
        while heap and len(out) < want:
            entry = heapq.heappop(heap)
            obj = entry[-1]
            idx = entry[-3]
            if queued.get(obj) != idx:
                continue
            del queued[obj]
            if type(obj) is _BaseRef:
                bid = obj.bid
                view = bmembers[bid][cursors[bid]]
                res = by_base[bid]  # type: ignore[index]
                if view.index != idx:  # cannot happen: nothing else takes from this base
                    offer_base(bid)
                    continue
            else:
                cls: _Class = obj
                view = self._head(part, cls)  # type: ignore[assignment]
                if view is None:
                    continue
                if view.index != idx:
                    offer(cls)
                    continue
                res = results.get(cls.kid, False)
                if res is False:  # constant ranks: evaluated only when its turn comes
                    res = results[cls.kid] = self._candidate(
                        request, view, prio, fixed, split, by_base, part
                    )
                if res is None:
                    continue
            _, ranks, amounts, weight, preempts = res
            if used_weight + weight > budget:
                continue  # this class is too heavy for what is left; lighter ones may do
            used_weight += weight
            out.append(Match(request, view.slot, ranks, amounts, weight, preempts))
            was = _offered(view)
            if view.partitionable:
                view.take(amounts)
            else:
                view.used = True
            self._free -= was - _offered(view)
            self._changes.append(view)
            if type(obj) is _BaseRef:
                offer_base(obj.bid)  # its classes catch up when next needed (``_partition``)
                continue
            new = self._place(part, view)
            offer(cls)
            if new is not None and new is not cls:
                offer(new)
        if answers is not None:
            answers.maybe = [  # dead classes are dropped when next met
                c for c in offered if results.get(c.kid, False) is not None
            ]
            answers.seen = len(part.born)
            answers.dry = not found
        return out

    def free_slots(self) -> int:
        """Unclaimed slots still on offer (partitionable ones while Cpus or Memory is left)."""
        return self._free


def _concurrency_room(
    needs: dict[str, float], concurrency: ConcurrencyLimits, used: Mapping[str, float]
) -> int | None:
    """How many jobs needing ``needs`` still fit under the limits (None: no bound)."""
    room: int | None = None
    for name, amount in needs.items():
        if amount <= 0:
            continue
        left = concurrency.limit_of(name) - concurrency.in_use.get(name, 0.0) - used.get(name, 0.0)
        n = max(0, math.floor((left + _EPS) / amount))
        room = n if room is None else min(room, n)
    return room


_F = TypeVar("_F", bound=Callable[..., Any])


def gc_paused(func: _F) -> _F:
    """Run ``func`` with the cyclic garbage collector off (and back on after, if it was).

    A cycle allocates a few million short-lived tuples, dicts and matches, nearly
    all freed by reference counting; each allocation burst made the collector walk
    every object alive (the slot ads and their expression trees) again, about a
    third of a cycle's time. Nothing here makes cycles, so the pause loses nothing.
    The collector is process-wide: other threads' cyclic garbage waits for the
    cycle to end."""

    @functools.wraps(func)
    def paused(*args: Any, **kwargs: Any) -> Any:
        if not gc.isenabled():
            return func(*args, **kwargs)
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            gc.enable()

    return paused  # type: ignore[return-value]


@gc_paused
def negotiate(
    slots: Iterable[Slot],
    requests_by_submitter: Mapping[str, Sequence[Request]],
    submitter_order: Sequence[str],
    now: float,
    *,
    limits: Mapping[str, float] | None = None,
    pre_job_rank: Node | None = None,
    post_job_rank: Node | None = None,
    pool: SlotPool | None = None,
    concurrency: ConcurrencyLimits | None = None,
    preemption: PreemptionPolicy | None = None,
    submitter_prio: Mapping[str, float] | None = None,
) -> Plan:
    """One negotiation pass: each submitter in ``submitter_order`` gets, request by
    request, the best free slots, up to ``limits[submitter]`` slot weight (no limit
    when absent). Pass ``pool`` to continue a previous pass over the same slots (its
    own ranks and preemption policy then apply; ``slots`` is ignored).

    ``concurrency``: jobs whose ``ConcurrencyLimits`` no longer fit are not
    matched; what matches consume is in ``Plan.concurrency_used`` (and counted in
    ``pool.concurrency_used`` for later passes). ``preemption``: claimed slots are
    candidates too (see :mod:`roost.core.preemption`); ``submitter_prio`` maps a
    submitter to its effective priority (default: each job's ``SubmitterUserPrio``).
    """
    if pool is None:
        pool = SlotPool(
            slots, pre_job_rank=pre_job_rank, post_job_rank=post_job_rank, preemption=preemption
        )
    plan = Plan(now=now)
    before = pool.evaluations
    # a lower bound on the free one-job slots' weight (it only grows while we match)
    static = -math.inf if pool._nan_weight else pool._lightest_static()
    jobs = pool._jobs
    for submitter in submitter_order:
        limit = None if limits is None else limits.get(submitter)
        prio = None if submitter_prio is None else submitter_prio.get(submitter)
        got = 0
        weight = 0.0
        for request in requests_by_submitter.get(submitter, ()):
            if limit is not None:
                ad = request.ad
                info = jobs.get(id(ad))
                if info is None or info[0] is not ad:
                    info = pool._job_info(ad)
                light = info[4] if info[4] < static else static
                skip = weight >= limit + _EPS or light > (limit - weight) + _EPS
            else:
                skip = False
            if skip:  # match_request would find nothing light enough
                if request.count > 0:
                    plan.unmatched[(submitter, request.autocluster)] = request.count
                continue
            count_limit: int | None = None
            needs: dict[str, float] | None = {}
            if concurrency is not None:
                needs = parse_concurrency_limits(_value(request.ad, "concurrencylimits"))
                count_limit = 0 if needs is None else _concurrency_room(
                    needs, concurrency, pool.concurrency_used
                )
            ms = pool.match_request(
                request,
                count_limit,
                weight_limit=None if limit is None else limit - weight,
                submitter_prio=prio,
            )
            got += len(ms)
            for m in ms:
                weight += m.weight
            plan.matches.extend(ms)
            if ms and needs:
                for name, amount in needs.items():
                    total = amount * len(ms)
                    plan.concurrency_used[name] = plan.concurrency_used.get(name, 0.0) + total
                    pool.concurrency_used[name] = pool.concurrency_used.get(name, 0.0) + total
            if len(ms) < request.count:
                plan.unmatched[(submitter, request.autocluster)] = request.count - len(ms)
        plan.by_submitter[submitter] = got
        plan.weight_by_submitter[submitter] = weight
    plan.evaluations = pool.evaluations - before
    return plan


__all__ = [
    "DEFAULT_CONCURRENCY_LIMIT",
    "RESOURCES",
    "ConcurrencyLimits",
    "Match",
    "Plan",
    "PreemptionPolicy",
    "Request",
    "Slot",
    "SlotPool",
    "gc_paused",
    "negotiate",
    "parse_concurrency_limits",
]
