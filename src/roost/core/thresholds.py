"""Jobs that read a partitionable slot's resources only as thresholds.

``TARGET.Memory >= RequestMemory`` with a number on the other side: for such a job
the rest of the match (the other conjuncts and the slot's own Requirements), and its
ranks when they read no resource, are the same for every slot of one base (its values
of everything but the resources; see :mod:`roost.core.slotclasses`). They are
evaluated once per base, and a carved slot costs a few number comparisons instead of
an evaluation. Carving makes a new class per slot, so that is most of a cycle.

Its own module because it is an analysis of one job's Requirements (:func:`split_of`
says whether a job is such a job, and how), apart from the matching that uses it
(:meth:`roost.core.matchmaker.SlotPool.match_request`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import AttrRef, BinaryOp, Literal, Node
from roost.core.conjuncts import conjuncts, unparen
from roost.core.matchvalues import rank_number
from roost.core.slotclasses import RESOURCE_KEYS, RESOURCE_NAMES, SlotClasses

_CMP_OPS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt,
}
_FLIPPED = {">=": "<=", ">": "<", "<=": ">=", "<": ">"}
_SPLIT_BLOCKERS = RESOURCE_KEYS | {"requirements"}


Check = tuple[str, Callable[[Any, Any], bool], float]  # (resource, comparison, number)

_OP_TEXT: dict[Any, str] = {
    operator.ge: ">=", operator.gt: ">", operator.le: "<=", operator.lt: "<",
}
_MAKERS: dict[tuple[Any, ...], Callable[..., Callable[[Mapping[str, float]], bool]]] = {}
_COMPILED: dict[tuple[Check, ...], Callable[[Mapping[str, float]], bool]] = {}


def passes_all(checks: tuple[Check, ...]) -> Callable[[Mapping[str, float]], bool]:
    """``checks`` as one function of what is left of a slot: true when each
    ``cmp(left[resource], number)`` holds (as ``all`` of them would say).

    The hot loops test every slot they look at against a job's checks; a loop over
    the checks costs a call of the comparison per check, this one call. Its code is
    generated once per shape of checks (resources and operators:
    ``rem["Memory"] >= _n0 and ...``; a comparison other than the four operators is
    called), and each job's numbers are bound to it as they are."""
    fn = _COMPILED.get(checks)
    if fn is None:
        shape = tuple((attr, _OP_TEXT.get(cmp)) for attr, cmp, _ in checks)
        make = _MAKERS.get(shape)
        if make is None:
            terms, params = [], []
            for i, (attr, op) in enumerate(shape):
                params.append(f"_n{i}")
                if op is None:
                    params.append(f"_c{i}")
                    terms.append(f"_c{i}(rem[{str(attr)!r}], _n{i})")
                else:
                    terms.append(f"rem[{str(attr)!r}] {op} _n{i}")
            bind = "".join(f", {p}={p}" for p in params)
            make = eval(  # the maker: binds the numbers (and odd comparisons) to the test
                f"lambda {', '.join(params)}: lambda rem{bind}: {' and '.join(terms) or 'True'}",
                {},
            )
            if len(_MAKERS) > 1000:
                _MAKERS.clear()
            _MAKERS[shape] = make
        args: list[Any] = []
        for (_, cmp, number), (_, op) in zip(checks, shape):
            args.append(number)
            if op is None:
                args.append(cmp)
        fn = make(*args)
        if len(_COMPILED) > 10000:
            _COMPILED.clear()
        _COMPILED[checks] = fn
    return fn


class Split:
    """How a job reads a partitionable slot's resources: only as thresholds."""

    __slots__ = ("checks", "passes", "rest", "ranked", "monotone", "cpus", "reads", "rank_of")

    def __init__(self, checks: tuple[tuple[str, Callable[[Any, Any], bool], float], ...],
                 rest: tuple[Node, ...] | None, ranked: bool, cpus: bool,
                 reads: frozenset[str],
                 rank_of: tuple[float, str, float] | None = None) -> None:
        # (resource, comparison, number): what is left must pass ``left cmp number``,
        # for the thresholds and for the request to fit (``matchmaker._fits``)
        self.checks = checks
        self.passes = passes_all(checks)  # the checks as one call
        self.rest = rest  # the other conjuncts; None: Requirements reads no resource at all
        self.ranked = ranked  # the ranks read no resource: one answer per base too
        # every check only ever fails more as a slot is carved (lower bounds)
        self.monotone = all(c[1] in (operator.ge, operator.gt, _never) for c in checks)
        self.cpus = cpus  # asks for Cpus: a slot with none left never passes
        # the resources its thresholds compare: a slot must have them (an absent one
        # is UNDEFINED to the job, not the 0 that ``remaining`` holds)
        self.reads = reads
        # (pre-job rank, the resource the job's Rank is, post-job rank) when the ranks are
        # no more than that: a carved slot's ranks without evaluating them
        self.rank_of = rank_of


def _scope(node: Node | None, name: str) -> bool:
    """``node`` is the bare scope name ``name`` (``TARGET``, ``MY``)."""
    return (type(node) is AttrRef and node.base is None and not node.absolute
            and node.lname == name)


def _slot_resource(node: Node, job: ClassAd) -> str | None:
    """The resource (lower-case) that a job-side reference reads from the slot, else None."""
    node = unparen(node)
    if type(node) is not AttrRef or node.absolute or node.lname not in RESOURCE_KEYS:
        return None
    if node.base is None:  # a bare name is the job's own first
        return None if node.lname in job._attrs else node.lname
    return node.lname if _scope(node.base, "target") else None


def _job_number(node: Node, job: ClassAd) -> float | None:
    """The number a job-side expression is whatever the slot: a number literal, or
    a reference to a job attribute that is one."""
    node = unparen(node)
    if type(node) is AttrRef and not node.absolute and (node.base is None or _scope(node.base, "my")):
        found = job._attrs.get(node.lname)
        if found is None:
            return None
        node = found
    if type(node) is Literal and type(node.value) in (int, float):
        return node.value
    return None


def _threshold(node: Node, job: ClassAd) -> tuple[str, Callable[[Any, Any], bool], float] | None:
    node = unparen(node)
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


def split_of(job: ClassAd, fixed: dict[str, float] | None, classes: SlotClasses,
             pre_job_rank: Node | None, post_job_rank: Node | None) -> Split | None:
    """How ``job`` reads a partitionable slot's resources, when only as thresholds.
    ``fixed``: its request when that cannot depend on the slot (else no split)."""
    req = job._attrs.get("requirements")
    if fixed is None or req is None:
        return None
    thresholds, rest = [], []
    for c in conjuncts(req):
        t = _threshold(c, job)
        if t is None:
            rest.append(c)
        else:
            thresholds.append(t)
    refs = classes.pslot_refs.get("requirements", ())
    if refs is None:
        return None
    start = set(refs)
    for c in rest:
        names = classes.names(c)
        if names is None:
            return None
        start |= names
    reach = classes.reach(start, job)
    if reach is None or not reach.isdisjoint(_SPLIT_BLOCKERS):
        return None
    rank_names: set[str] = set()
    for node in (pre_job_rank, job._attrs.get("rank"), post_job_rank):
        if node is not None and type(node) is not Literal:
            names = classes.names(node)
            if names is None:
                return None
            rank_names |= names
    reach = classes.reach(rank_names, job)
    ranked = reach is not None and reach.isdisjoint(_SPLIT_BLOCKERS)
    rank_of = None if ranked else _rank_of(job, pre_job_rank, post_job_rank)
    checks = [(attr, operator.ge, amount) for attr, amount in fixed.items() if amount > 0]
    if fixed["Cpus"] <= 0 and fixed["Memory"] <= 0:
        checks.append(("Cpus", _never, 0.0))  # takes nothing: never fits (see matchmaker._fits)
    return Split(tuple(checks + thresholds), tuple(rest) if thresholds else None, ranked,
                 fixed["Cpus"] > 0, frozenset(t[0] for t in thresholds), rank_of)


def _rank_of(job: ClassAd, pre_job_rank: Node | None,
             post_job_rank: Node | None) -> tuple[float, str, float] | None:
    """:attr:`Split.rank_of`: the negotiator's ranks absent or number literals, the job's
    Rank a reference to one slot resource (``TARGET.Memory``, or a bare ``Memory`` the
    job does not define); None when the ranks are anything else."""
    for node in (pre_job_rank, post_job_rank):
        if node is not None and (type(node) is not Literal or type(node.value) not in (int, float)):
            return None
    rank = job._attrs.get("rank")
    if rank is None or type(rank) is Literal:
        return None  # constant: ``ranked`` already holds
    res = _slot_resource(rank, job)
    if res is None:
        return None
    return (rank_number(pre_job_rank, job, None), RESOURCE_NAMES[res],
            rank_number(post_job_rank, job, None))


__all__ = ["Check", "Split", "passes_all", "split_of"]
