"""Slot classes: the slots of one cycle grouped so that one evaluation answers for many.

Evaluating every request against every slot is 10 M symmetric matches at 10,000
slots × 1,000 autoclusters. But a match result can only depend on the values of the
slot attributes that some evaluated expression can *name*: the request's
Requirements/Rank/Request*, the slot's Requirements (START ...), the negotiator's
ranks and preemption expressions, followed transitively through attributes of both
ads. Slots that agree on all of those values are an *equivalence class* for that
request: one evaluation answers for all of them, and the class keeps its members in
input order so ties still go to the earliest slot. Classes are kept per set of names
(a :class:`Partition`; requests of one kind share them) and updated lazily when a
partitionable slot is carved. When the names cannot be known statically (``eval()``,
``unparse()``, ``random()``, a whole ad used as a value, a computed subscript) every
slot is its own class: the plain algorithm, same answers. A carved partitionable slot
changes class; the slots of one *base* (the values of everything but the resources)
are also listed together, for jobs that read the resources only as thresholds
(:mod:`roost.core.thresholds`).

Its own module because it is a cache, not a decision: :class:`SlotClasses` says which
slots answer alike; the matchmaker (:class:`roost.core.matchmaker.SlotPool`) evaluates
one member per class and decides. Between calls on one pool each request ad keeps its
classes' answers (:class:`Answers`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

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
from roost.classad.evaluate import EvaluationFailed, evaluate
from roost.classad.unparse import unparse
from roost.core.matchvalues import eval_number, is_true, number

# (slot attribute, job attribute, default request when the job does not say)
RESOURCES: tuple[tuple[str, str, float], ...] = (
    ("Cpus", "RequestCpus", 1),
    ("Memory", "RequestMemory", 0),
    ("Disk", "RequestDisk", 0),
    ("GPUs", "RequestGPUs", 0),
)
LOWER_RESOURCES = tuple((a.lower(), r.lower(), d) for a, r, d in RESOURCES)
RESOURCE_KEYS = frozenset(a for a, _, _ in LOWER_RESOURCES)  # the slot's, lower case
RESOURCE_NAMES = {a.lower(): a for a, _, _ in RESOURCES}
_RESOURCE_KEYS = tuple((a, a.lower()) for a, _, _ in RESOURCES)  # (slot attribute, its key)

# Names every match may read on the slot side besides expressions' references.
_SLOT_ROOTS = (
    "requirements", "state", "partitionableslot", "slotweight",
    "cpus", "memory", "disk", "gpus",
)
_PREEMPT_ROOTS = ("rank", "currentrank", "remoteuser", "remoteuserprio")
_JOB_ROOTS = ("requirements", "rank", "requestcpus", "requestmemory", "requestdisk", "requestgpus")


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


def names_of(node: Node) -> frozenset[str] | None:
    """Lower-case attribute names ``node`` can read, None when unknowable."""
    out: set[str] = set()
    try:
        _walk(node, out)
    except _Dynamic:
        return None
    return frozenset(out)


_MISSING = ("missing",)
_PLAIN = frozenset((int, str, float, bool))  # literal types whose value is their key
_CARVED = ("carved",)


# ---------------------------------------------------------------------------
# The per-cycle view of one slot
# ---------------------------------------------------------------------------


class SlotView:
    """One slot's state within a cycle."""

    __slots__ = (
        "slot", "ad", "index", "partitionable", "claimed", "remaining", "used", "copied",
        "weight", "carved", "stale", "numeric", "touched", "absent", "weight_value",
    )

    def __init__(self, slot: Any, index: int, claimed: bool) -> None:
        ad = slot.ad
        self.slot = slot  # the caller's slot (a matchmaker.Slot): its ``ad`` is read here
        self.ad = ad
        self.index = index
        self.claimed = claimed
        # a literal's value is in ``_lits`` (what evaluating it gives): read there first,
        # one view per slot of the pool
        attrs, lits = ad._attrs, ad._lits
        if claimed:
            partitionable = False
        else:
            v = lits.get("partitionableslot")
            partitionable = (is_true(ad, "partitionableslot") if v is None
                             else v is True or (type(v) in (int, float) and v != 0))
        self.partitionable = partitionable
        self.remaining: dict[str, float] = {}
        # every resource a number literal or absent: ``remaining`` is then exactly what
        # the ad says of the ones present
        self.numeric = True
        absent = []
        if partitionable:
            rem = self.remaining
            for attr, k in _RESOURCE_KEYS:
                node = attrs.get(k)
                if node is None:
                    rem[attr] = 0.0
                    absent.append(attr)
                elif type(node) is Literal and type(node.value) in (int, float):
                    rem[attr] = float(node.value)
                else:
                    rem[attr] = eval_number(node, ad, None)
                    self.numeric = False
        self.absent = frozenset(absent)
        self.used = False
        self.copied = False  # ``ad`` is our own copy
        self.carved = False  # ``remaining`` has been lowered
        self.stale = False  # ``ad`` does not show ``remaining`` yet (see ``fresh_ad``)
        self.touched: set[str] = set()  # resources lowered at least once
        node = attrs.get("slotweight")
        if node is None:
            node = attrs.get("cpus")
        # the value ``weight`` is made of (None: no SlotWeight nor Cpus, or a failed
        # evaluation), for callers that read SlotWeight their own way (fair share)
        self.weight_value: Any = None
        if node is None:
            self.weight = 1.0
        elif type(node) is Literal and type(node.value) in (int, float):
            self.weight_value = node.value
            self.weight = float(node.value)
        elif (type(node) is AttrRef and node.base is None and not node.absolute
              and (name := node.lname) in lits and name not in _SCOPE_NAMES):
            # ``SlotWeight = Cpus``: the literal it names
            self.weight_value = v = lits[name]
            self.weight = number(v)
        else:
            try:
                self.weight_value = v = evaluate(node, ad, None)
            except EvaluationFailed:
                v = None
            self.weight = number(v)

    def take(self, amounts: dict[str, float]) -> None:
        """Lower what is left; the ad follows only when an evaluation needs it."""
        rem, touched = self.remaining, self.touched
        lowered = False
        for attr, amount in amounts.items():
            if amount != 0:
                rem[attr] -= amount
                touched.add(attr)
                lowered = True
        if lowered:
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


def on_offer(v: SlotView) -> bool:
    """Counted by :meth:`roost.core.matchmaker.SlotPool.free_slots`."""
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


# ---------------------------------------------------------------------------
# Classes, partitions, and a request's answers
# ---------------------------------------------------------------------------


class SlotClass:
    """Slots that agree on every attribute a request kind can read."""

    __slots__ = ("key", "kid", "group", "members", "live", "alive", "bid")

    def __init__(self, key: tuple[Any, ...], kid: int, group: Any, bid: int | None) -> None:
        self.key = key
        self.bid = bid  # a partitionable class's base number (see ``Partition.bmembers``)
        self.kid = kid  # the key's number in its partition: cheap to hash
        self.alive = True  # False once it has lost its last member
        self.group = group  # "s" (one job per slot) or ("p", cpus left, memory left)
        self.members: list[tuple[int, SlotView]] = []  # heap by input order, lazily pruned
        self.live = 0


class BaseRef:
    """A base's entry in a request's heap (see :meth:`roost.core.matchmaker.SlotPool.match_request`)."""

    __slots__ = ("bid",)

    def __init__(self, bid: int) -> None:
        self.bid = bid


class Partition:
    """The slot classes for one set of readable names (or one class per slot)."""

    __slots__ = (
        "names", "rest", "keyed", "res_names", "classes", "groups", "of", "base", "cursor", "born", "kids",
        "bid", "bids", "bmembers", "bnumeric", "brefs", "bnext", "babsent", "bheaps",
        "bfinite", "deferred", "bcursors", "sigs",
    )

    def __init__(self, names: tuple[str, ...] | None) -> None:
        self.names = names  # None: every slot its own class
        self.rest = () if names is None else tuple(n for n in names if n not in RESOURCE_KEYS)
        # the names a class key holds: ``names`` (``rest`` for a partitionable slot) less
        # those no slot of the cycle has (always missing, so equal); see ``SlotClasses``
        self.keyed: tuple[tuple[str, ...], tuple[str, ...]] = (self.names or (), self.rest)
        self.res_names = tuple(n for n, _, _ in LOWER_RESOURCES)
        self.classes: dict[tuple[Any, ...], SlotClass] = {}
        # the classes again, by whether they can take a job that asks for Cpus / Memory
        self.groups: dict[Any, dict[tuple[Any, ...], SlotClass]] = {}
        self.base: dict[int, tuple[Any, ...]] = {}  # view index → the unchanging part of its key
        self.bid: dict[int, int] = {}  # view index → its base's number (cheap to hash)
        self.bids: dict[tuple[Any, ...], int] = {}
        # the partitionable slots of each base in input order, whether all their
        # resources are numbers, and a handle for a base's entry in a request's heap
        self.bmembers: dict[int, list[SlotView]] = {}
        self.bnumeric: dict[int, bool] = {}
        self.babsent: dict[int, frozenset[str]] = {}  # resources some member lacks
        self.brefs: dict[int, BaseRef] = {}
        # per base, "the next member that may still have Cpus left" (a union-find with
        # path halving; a member whose Cpus ran out points past itself, for good)
        self.bnext: dict[int, list[int]] = {}
        # (base, resource, resources needed) → the base's members by most of that resource left,
        # for jobs ranked by it that need some of those left (see ``by_remaining``)
        self.bheaps: dict[tuple[int, str, tuple[Any, ...]], list[tuple[float, int, SlotView]]] = {}
        self.bfinite: dict[int, bool] = {}  # every member's resources finite: they can be ordered
        # a split job's checks → base → members before this position fail them for good
        # (carving only lowers what is left), shared by the jobs with those checks
        self.bcursors: dict[tuple[Any, ...], dict[int, int]] = {}
        self.of: dict[int, SlotClass] = {}  # view index → its class
        # base → its members changed since their class was placed (``SlotClasses.catch_up``)
        self.deferred: dict[int, dict[int, SlotView]] = {}
        self.cursor = 0  # how much of the pool's change log is applied
        # every class created, in order: a request none of whose classes could take it
        # need only look at the ones created since (a class keeps its key, so its answer)
        self.born: list[SlotClass] = []
        self.kids: dict[tuple[Any, ...], int] = {}  # class key → its number, for ever
        # the ids of a view's keyed nodes (and claimed, partitionable) → (its base, the
        # nodes, the base's number)
        self.sigs: dict[tuple[Any, ...], tuple[tuple[Any, ...], tuple[Any, ...], int]] = {}


class Answers:
    """One request ad's candidates so far, by class key number, and which classes need
    offering next time: ``maybe``, those of the last call not known to answer None
    (a class keeps its key, so its answer), plus those the partition created since
    (``part.born[seen:]``). None: offer every class."""

    __slots__ = ("job", "by_kid", "maybe", "seen", "by_base", "dry")

    def __init__(self, job: ClassAd) -> None:
        self.job = job
        self.by_kid: dict[Any, Any] = {}
        # base number → the candidate every fitting slot of that base is (None: no match),
        # for a job that reads a slot's resources only as thresholds
        # (see :class:`roost.core.thresholds.Split`)
        self.by_base: dict[int, Any] = {}
        self.dry = False  # no base had a member to offer last time
        self.maybe: list[SlotClass] | None = None
        self.seen = 0


def group_of(view: SlotView) -> Any:
    """"s" for a one-job slot; a partitionable one by whether Cpus / Memory are left."""
    if not view.partitionable:
        return "s"
    rem = view.remaining
    return ("p", rem["Cpus"] > 0, rem["Memory"] > 0)


def leave(part: Partition, cls: SlotClass, view: SlotView) -> None:
    """Take ``view`` out of ``cls``; a class without members is gone."""
    del part.of[view.index]
    cls.live -= 1
    if cls.live == 0:
        del part.classes[cls.key]
        del part.groups[cls.group][cls.key]
        cls.alive = False


def first_free(part: Partition, cls: SlotClass) -> SlotView | None:
    """The class's first free member in input order, None when it has none."""
    members = cls.members
    while members:
        view = members[0][1]
        if not view.used and part.of.get(view.index) is cls:
            return view
        heapq.heappop(members)
    return None


# ---------------------------------------------------------------------------
# The cache of one cycle's slots
# ---------------------------------------------------------------------------


class SlotClasses:
    """The partitions of one cycle's slot views, kept up to date as slots are taken.

    ``extra``: the negotiator's expressions every match evaluates on the slot side
    (pre/post job ranks; with ``preempting``, the preemption requirements and rank).
    A caller that uses or carves a view appends it to :attr:`changes`; each partition
    catches up when next asked for."""

    def __init__(
        self, views: list[SlotView], extra: Iterable[Node | None], preempting: bool
    ) -> None:
        self.views = views
        self.changes: list[SlotView] = []  # views carved or used, for lazy class updates
        self._partitions: dict[Any, Partition] = {}
        self._text: dict[int, tuple[Node, Any]] = {}  # id(node) → (node, value key)
        self._node_names: dict[int, tuple[Node, frozenset[str] | None]] = {}
        self._reach_memo: dict[tuple[Any, ...], tuple[list[Any], frozenset[str] | None]] = {}
        # attribute name → names that some slot's expression for it can read (None: unknowable)
        self._slot_refs: dict[str, set[str] | None] = {}
        # the same for the partitionable slots alone (what a Split may assume)
        self.pslot_refs: dict[str, set[str] | None] = {}
        self._odd = False  # some slot ad has a parent scope: no classes
        self._present: set[str] = set()  # every attribute some slot has (lower case)
        done: set[tuple[str, int, bool]] = set()  # (name, id(node), partitionable) merged
        for v in self.views:
            ad = v.ad
            if ad.parent is not None:
                self._odd = True
            attrs = ad._attrs
            self._present.update(attrs)
            # the expressions: ``_lits`` holds exactly the literals' names; ads of one kind
            # share their trees (the ads hold them, so ids stay theirs), merged once each
            for k in attrs.keys() - ad._lits.keys():
                node = attrs[k]
                seen = (k, id(node), v.partitionable)
                if seen in done:
                    continue
                done.add(seen)
                names = self.names(node)
                for refs in (self._slot_refs, self.pslot_refs) if v.partitionable else (
                    self._slot_refs,
                ):
                    cur = refs.get(k, set())
                    if names is None or cur is None:
                        refs[k] = None
                    else:
                        cur |= names
                        refs[k] = cur
        roots: set[str] = set(_SLOT_ROOTS)
        if preempting:
            roots.update(_PREEMPT_ROOTS)
        self._roots_dynamic = False
        for node in extra:
            if node is None:
                continue
            names = self.names(node)
            if names is None:
                self._roots_dynamic = True
            else:
                roots |= names
        self._roots = frozenset(roots)

    def names(self, node: Node) -> frozenset[str] | None:
        """:func:`names_of`, remembered per node."""
        hit = self._node_names.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        names = names_of(node)
        self._node_names[id(node)] = (node, names)
        return names

    def readable(self, job: ClassAd) -> tuple[str, ...] | None:
        """Slot attribute names that matching ``job`` can read, None when unknowable."""
        if self._odd or self._roots_dynamic or job.parent is not None:
            return None
        seen = self.reach((*self._roots, *_JOB_ROOTS), job, self._slot_refs)
        return None if seen is None else tuple(sorted(seen))

    def reach(self, start: Iterable[str], job: ClassAd,
              slot_refs: dict[str, set[str] | None] | None = None) -> set[str] | None:
        """Every name reading ``start`` can lead to, on a slot's ad (as ``slot_refs``
        says; default: the partitionable slots') or the job's; None when unknowable."""
        jattrs = job._attrs
        if slot_refs is None:
            slot_refs = self.pslot_refs
        if slot_refs is not self.pslot_refs and slot_refs is not self._slot_refs:
            return self._reach(start, job, slot_refs)
        # what it reaches depends only on ``start`` and the job's expressions by name
        # (a literal leads nowhere), alike in the jobs of one kind (the parser shares
        # their trees): remembered by the ids of those, the nodes held so ids stay theirs
        exprs = [(k, node) for k, node in jattrs.items() if type(node) is not Literal]
        memo_key = (frozenset(start), tuple((k, id(node)) for k, node in exprs),
                    slot_refs is self.pslot_refs)
        hit = self._reach_memo.get(memo_key)
        if hit is not None:
            return None if hit[1] is None else set(hit[1])
        seen = self._reach(start, job, slot_refs)
        self._reach_memo[memo_key] = (exprs, None if seen is None else frozenset(seen))
        return seen

    def _reach(self, start: Iterable[str], job: ClassAd,
               slot_refs: dict[str, set[str] | None]) -> set[str] | None:
        seen: set[str] = set()
        todo = list(start)
        jattrs = job._attrs
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
                names = self.names(node)
                if names is None:
                    return None
                todo.extend(names)
        return seen

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

    def _key(self, part: Partition, view: SlotView) -> tuple[Any, ...]:
        """Equal keys: equal values of every name the partition's requests can read.
        Only a partitionable view's resources change in a cycle (``take``), so the
        rest is computed once, and stands in its key as a number (cheap to hash)."""
        if part.names is None:
            if not view.partitionable:
                return (view.index,)
            first: Any = view.index
        else:
            first = part.bid.get(view.index)
            if first is None:
                # ads of one kind share their expression trees (the parser caches them
                # by text), so the same nodes give the same base: looked up by their ids
                nodes = tuple(map(view.ad._attrs.get, part.keyed[view.partitionable]))
                sig = (*map(id, nodes), view.claimed, view.partitionable)
                hit = part.sigs.get(sig)
                if hit is None:
                    vk = self._vkey
                    key: list[Any] = []
                    for node in nodes:  # ``_vkey``, its usual cases inlined
                        if node is None:
                            key.append(_MISSING)
                        elif type(node) is Literal and type(node.value) in _PLAIN:
                            key.append((type(node.value), node.value))
                        else:
                            key.append(vk(node))
                    base = (*key, view.claimed, view.partitionable)
                    first = part.bids.setdefault(base, len(part.bids))
                    part.sigs[sig] = (base, nodes, first)  # the nodes held: their ids stay theirs
                else:
                    base, _, first = hit
                part.base[view.index] = base
                part.bid[view.index] = first
                if view.partitionable:
                    part.bmembers.setdefault(first, []).append(view)
                    nxt = part.bnext.setdefault(first, [0])
                    nxt.append(len(nxt))  # the new member is its own; the last is the end
                    part.bnumeric[first] = part.bnumeric.get(first, True) and view.numeric
                    absent = part.babsent.get(first)
                    if absent is None or view.absent:
                        part.babsent[first] = (absent or frozenset()) | view.absent
                    if part.bfinite.get(first, True):
                        part.bfinite[first] = all(map(math.isfinite, view.remaining.values()))
                    if first not in part.brefs:
                        part.brefs[first] = BaseRef(first)
            if not view.partitionable:
                return part.base[view.index]
        # once carved, the resources are the numbers in ``remaining``
        if view.carved:
            res: Any = _CARVED
        else:
            get = view.ad._attrs.get
            vals = []
            for n in part.res_names:  # ``_vkey``, its usual cases inlined
                node = get(n)
                if node is None:
                    vals.append(_MISSING)
                elif type(node) is Literal and type(node.value) in _PLAIN:
                    vals.append((type(node.value), node.value))
                else:
                    vals.append(self._vkey(node))
            res = tuple(vals)
        return (first, tuple(view.remaining.values()), res)

    def place(self, part: Partition, view: SlotView) -> SlotClass | None:
        """Bring ``view``'s class membership in ``part`` up to date; its class."""
        old = part.of.get(view.index)
        if view.used:
            if old is not None:
                leave(part, old, view)
            return None
        key = self._key(part, view)
        if old is not None:
            if old.key == key:
                return old
            leave(part, old, view)
        cls = part.classes.get(key)
        if cls is None:
            group = group_of(view)
            kid = part.kids.get(key)
            if kid is None:
                kid = part.kids[key] = len(part.kids)
            bid = key[0] if view.partitionable and part.names is not None else None
            cls = part.classes[key] = SlotClass(key, kid, group, bid)
            part.born.append(cls)
            part.groups.setdefault(group, {})[key] = cls
        heapq.heappush(cls.members, (view.index, view))
        cls.live += 1
        part.of[view.index] = cls
        return cls

    def partition(self, job: ClassAd, names: Any = False, *, catch_up: bool = True) -> Partition:
        """The partition for ``names`` (default: what ``job`` can read), up to date
        (with ``catch_up=False``, only once :meth:`catch_up` is called)."""
        if names is False:
            names = self.readable(job)
        part = self._partitions.get(names)
        if part is None:
            part = self._partitions[names] = Partition(names)
            present = self._present
            part.keyed = (tuple(n for n in part.names or () if n in present),
                          tuple(n for n in part.rest if n in present))
            self._fill(part)
            part.cursor = len(self.changes)
        elif catch_up:
            self.catch_up(part)
        return part

    def _fill(self, part: Partition) -> None:
        """:meth:`place` every free view in the new partition ``part``. A one-job slot's
        key is its base, the same for the slots whose keyed nodes are the same objects
        (its ``sigs`` entry): each joins the class of the first such slot at once."""
        if part.names is None:
            for view in self.views:
                if not view.used:
                    self.place(part, view)
            return
        keyed = part.keyed[False]
        sigs, base_of, bid_of, of = part.sigs, part.base, part.bid, part.of
        by_sig: dict[tuple[Any, ...], SlotClass] = {}
        push = heapq.heappush
        for view in self.views:
            if view.used:
                continue
            if view.partitionable:
                self.place(part, view)
                continue
            get = view.ad._attrs.get
            sig = (*[id(get(n)) for n in keyed], view.claimed, False)  # as ``_key`` has it
            cls = by_sig.get(sig)
            if cls is None:
                cls = self.place(part, view)
                if cls is not None:
                    by_sig[sig] = cls
                continue
            i = view.index
            base_of[i], _, bid_of[i] = sigs[sig]
            push(cls.members, (i, view))
            cls.live += 1
            of[i] = cls

    def catch_up(self, part: Partition, lazy: frozenset[int] = frozenset()) -> None:
        """Bring ``part``'s classes up to date, but for the members of the bases in
        ``lazy``: a caller that reads those bases off their members
        (:meth:`roost.core.matchmaker.SlotPool.match_request`) offers none of their
        classes, so their carved members are placed only when a caller needs them."""
        deferred = part.deferred
        if deferred:
            for bid in [b for b in deferred if b not in lazy]:
                for view in deferred.pop(bid).values():
                    self.place(part, view)
        if part.cursor < len(self.changes):
            changed = {v.index: v for v in self.changes[part.cursor:]}
            bids = part.bid
            for view in changed.values():
                bid = bids.get(view.index) if view.partitionable else None
                if bid is not None and bid in lazy:
                    deferred.setdefault(bid, {})[view.index] = view
                else:
                    self.place(part, view)
            part.cursor = len(self.changes)

    def defer(self, part: Partition, bid: int, view: SlotView) -> None:
        """``view`` of base ``bid`` changed; place it when a caller needs its class."""
        part.deferred.setdefault(bid, {})[view.index] = view


__all__ = [
    "LOWER_RESOURCES",
    "RESOURCES",
    "RESOURCE_KEYS",
    "RESOURCE_NAMES",
    "Answers",
    "BaseRef",
    "Partition",
    "SlotClass",
    "SlotClasses",
    "SlotView",
    "first_free",
    "group_of",
    "leave",
    "names_of",
    "on_offer",
]
