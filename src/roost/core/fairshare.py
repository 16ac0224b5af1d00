"""Fair share: group quotas and the pie, spun until nothing more fits.

HTCondor's negotiation policy, kept pure (ads and priorities in, one
:class:`~roost.core.matchmaker.Plan` out):

- *Group quotas* (:func:`group_quotas`): groups nest by ``.`` in their
  names under the invented root ``<none>``. A static quota is absolute
  weight, a dynamic one a fraction of the parent's; children that ask for
  more than the parent has are scaled down. What a group leaves unused
  goes, in proportion to quota, to siblings that accept surplus, then up
  the tree. Submitters without a (configured) group are in ``<none>``,
  which gets what the groups leave.
- *The pie* (:func:`negotiate_fair`): inside each group the submitters with
  demand split the group's weight in inverse proportion to effective
  priority; each one's slice, less what it already holds, capped by its
  ceiling and raised to its floor, is its weight limit for this spin. The
  matchmaker serves them best priority first. The pie is spun again, with
  recomputed slices among those still wanting, while spins match anything.
- *No starvation*: when the slices are all too thin for any slot (100 users,
  8 slots), the submitter furthest below its slice still gets one match.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import Node
from roost.classad.evaluate import EvaluationFailed, evaluate
from roost.core import matchmaker
from roost.core.matchmaker import Plan, Request, Slot, SlotPool, gc_paused, takes_nothing
from roost.vocabulary import SlotState

NONE_GROUP = "<none>"
_EPS = 1e-9
_MAX_SPINS = 10000


@dataclass
class Submitter:
    name: str  # Submitter ad Name
    eff_prio: float  # accountant.effective_priority(...)
    running_weight: float = 0.0  # weight it holds now
    group: str | None = None  # accounting group ("physics.theory"); None: <none>
    floor: float | None = None  # guaranteed weight
    ceiling: float | None = None  # cap on total weight held
    usage: float = 0.0  # accountant's decayed usage: among equal priorities, the less recent user goes first


@dataclass
class GroupConfig:
    """One of GROUP_NAMES with its GROUP_QUOTA_*, GROUP_QUOTA_DYNAMIC_*, GROUP_ACCEPT_SURPLUS_*."""

    name: str
    quota: float | None = None  # absolute weight
    dynamic: float | None = None  # fraction of the parent's quota
    accept_surplus: bool = False


# --- weights -----------------------------------------------------------------

def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _eval_attr(ad: ClassAd, attr: str, target: ClassAd | None = None) -> Any:
    k = attr.lower()
    v = ad._lits.get(k)
    if v is not None:  # a literal's value: nothing to evaluate
        return v
    node = ad._attrs.get(k)
    if node is None:
        return None
    try:
        return evaluate(node, ad, target)
    except EvaluationFailed:
        return None


def slot_weight(ad: ClassAd) -> float:
    """``SlotWeight`` if it evaluates to a number, else ``Cpus``, else 1 (HTCondor's default)."""
    for attr in ("SlotWeight", "Cpus"):
        v = _num(_eval_attr(ad, attr))
        if v is not None:
            return max(0.0, v)
    return 1.0


def _state(ad: ClassAd) -> Any:
    return _eval_attr(ad, "State")


def _job_weight(ad: ClassAd) -> float:
    """A guess at the weight one job will take, for quota demand: its RequestCpus (at least 1)."""
    v = _num(_eval_attr(ad, "RequestCpus"))
    return max(1.0, v) if v is not None else 1.0


# --- group quotas ------------------------------------------------------------

def _parent(name: str, known: Mapping[str, GroupConfig]) -> str:
    while "." in name:
        name = name.rsplit(".", 1)[0]
        if name in known:
            return name
    return NONE_GROUP


def _allocate(groups: Sequence[GroupConfig], total_weight: float,
              demand: Mapping[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """(weight each subtree may hold, weight each group's own submitters may hold); keys lowercase."""
    cfg = {g.name.lower(): g for g in groups if g.name and g.name.lower() != NONE_GROUP}
    want = {k.lower(): max(0.0, float(v)) for k, v in demand.items()}
    children: dict[str, list[str]] = {NONE_GROUP: []}
    for name in sorted(cfg):
        children.setdefault(name, [])
        children.setdefault(_parent(name, cfg), []).append(name)

    quota: dict[str, float] = {NONE_GROUP: max(0.0, total_weight)}
    own_quota: dict[str, float] = {}
    subtree_demand: dict[str, float] = {}

    def configure(node: str) -> None:
        q = quota[node]
        asked = {}
        for c in children[node]:
            g = cfg[c]
            if g.quota is not None:
                asked[c] = max(0.0, g.quota)
            elif g.dynamic is not None:
                asked[c] = max(0.0, g.dynamic) * q
            else:
                asked[c] = 0.0
        s = sum(asked.values())
        scale = q / s if s > q and s > 0 else 1.0
        for c in children[node]:
            quota[c] = asked[c] * scale
            configure(c)
        own_quota[node] = max(0.0, q - sum(quota[c] for c in children[node]))
        subtree_demand[node] = want.get(node, 0.0) + sum(subtree_demand[c] for c in children[node])

    configure(NONE_GROUP)
    alloc: dict[str, float] = {}
    own_alloc: dict[str, float] = {}

    def distribute(node: str, cap: float) -> None:
        alloc[node] = cap
        # entries: the node's own submitters (key None; may always use what its children leave), then children
        keys: list[str | None] = [None, *children[node]]
        q = {k: own_quota[node] if k is None else quota[k] for k in keys}
        d = {k: want.get(node, 0.0) if k is None else subtree_demand[k] for k in keys}
        accepts = {k: True if k is None else cfg[k].accept_surplus for k in keys}
        give = {k: min(q[k], d[k]) for k in keys}
        s = sum(give.values())
        if s > cap and s > 0:
            give = {k: v * cap / s for k, v in give.items()}
        left = cap - sum(give.values())
        while left > _EPS:
            takers = [k for k in keys if accepts[k] and d[k] - give[k] > _EPS]
            if not takers:
                break
            weights = {k: q[k] for k in takers}
            total_q = sum(weights.values())
            if total_q <= 0:
                weights = {k: 1.0 for k in takers}
                total_q = float(len(takers))
            handed = 0.0
            for k in takers:
                extra = min(left * weights[k] / total_q, d[k] - give[k])
                give[k] += extra
                handed += extra
            left -= handed
            if handed <= _EPS:
                break
        own_alloc[node] = give[None]
        for c in children[node]:
            distribute(c, give[c])

    distribute(NONE_GROUP, quota[NONE_GROUP])
    return alloc, own_alloc


def group_quotas(groups: Sequence[GroupConfig], total_weight: float,
                 demand: Mapping[str, float]) -> dict[str, float]:
    """The weight each group may hold this cycle, surplus included.

    ``demand`` is the weight each group's own submitters want (held plus
    idle). Keys of the answer are the configured names; ``<none>`` is what
    is left for submitters without a group. Group names compare
    case-insensitively, as in HTCondor.
    """
    alloc, own = _allocate(groups, total_weight, demand)
    out = {g.name: alloc[g.name.lower()] for g in groups if g.name.lower() in alloc and g.name.lower() != NONE_GROUP}
    out[NONE_GROUP] = own[NONE_GROUP]
    return out


# --- the pie ------------------------------------------------------------------

class _Cycle:
    """The mutable state of one negotiate_fair call."""

    def __init__(self, requests_by_submitter: Mapping[str, Sequence[Request]],
                 submitters: Sequence[Submitter], groups: Sequence[GroupConfig]) -> None:
        self.subs: dict[str, Submitter] = {s.name: s for s in submitters}
        worst = max((s.eff_prio for s in submitters), default=500.0)
        for name in requests_by_submitter:  # demand from someone the caller did not describe: last in line
            self.subs.setdefault(name, Submitter(name, eff_prio=max(worst, 500.0)))
        self.requests = {n: list(requests_by_submitter.get(n, ())) for n in self.subs}
        self.left: dict[int, int] = {id(r): r.count for rs in self.requests.values() for r in rs}
        self.owner: dict[int, str] = {id(r): n for n, rs in self.requests.items() for r in rs}
        # requests with jobs left, per submitter (what ``wants`` asks)
        self.open: dict[str, int] = {n: sum(1 for r in rs if r.count > 0) for n, rs in self.requests.items()}
        # each submitter's requests with jobs left, as copies whose count follows ``left``
        # (set in place by ``took``, so a match costs O(1) here, not a rebuild of the
        # submitter's list); every live copy's original, and each original's copy
        self.pending: dict[str, list[Request]] = {}
        self.orig: dict[int, Request] = {}
        self.copy: dict[int, Request] = {}
        # per submitter, pending copies whose count reached 0 (dropped once they are half)
        self.spent: dict[str, int] = {}
        self.held = {n: max(0.0, s.running_weight) for n, s in self.subs.items()}
        self.rejected: set[str] = set()
        configured = {g.name.lower() for g in groups}
        self.group = {n: (s.group.lower() if s.group and s.group.lower() in configured else NONE_GROUP)
                      for n, s in self.subs.items()}
        # the group every submitter is in, when they are all in one (no groups configured)
        in_groups = set(self.group.values())
        self.only_group = next(iter(in_groups)) if len(in_groups) == 1 else None

    def wants(self, name: str) -> bool:
        return self.open[name] > 0

    def took(self, r: Request, jobs: int = 1) -> None:
        """``jobs`` jobs of ``r`` matched (what as many calls for one job would do)."""
        was = self.left[id(r)]
        left = self.left[id(r)] = was - jobs
        n = self.owner[id(r)]
        c = self.copy.get(id(r))
        if c is not None:
            c.count = left
        if was > 0 >= left:  # it reached 0 on the way
            self.open[n] -= 1
            if c is not None:
                self.spent[n] = self.spent.get(n, 0) + 1

    def pending_weight(self, name: str) -> float:
        return sum(self.left[id(r)] * _job_weight(r.ad) for r in self.requests[name])

    def remaining_requests(self, names: Iterable[str]) -> tuple[dict[str, list[Request]], dict[int, Request]]:
        """Each submitter's requests with jobs left (count = jobs left), in its order; copies
        whose jobs are all matched may still be listed (count 0: the matchmaker takes none)."""
        out: dict[str, list[Request]] = {}
        for n in names:
            rs = self.pending.get(n)
            if rs is None:
                rs = self.pending[n] = []
                for r in self.requests[n]:
                    left = self.left[id(r)]
                    if left > 0:
                        copy = Request(r.submitter, r.autocluster, left, r.ad, r.extra)
                        self.orig[id(copy)] = r
                        self.copy[id(r)] = copy
                        rs.append(copy)
            elif self.spent.get(n, 0) * 2 > len(rs):  # amortised: each copy is dropped once
                self.spent[n] = 0
                keep = []
                for c in rs:
                    if c.count > 0:
                        keep.append(c)
                    else:
                        del self.copy[id(self.orig.pop(id(c)))]
                rs = self.pending[n] = keep
            out[n] = rs
        return out, self.orig


def _eff(s: Submitter) -> float:
    return s.eff_prio if s.eff_prio > 0 and math.isfinite(s.eff_prio) else 0.5


@gc_paused
def negotiate_fair(
    slots: Iterable[Slot],
    requests_by_submitter: Mapping[str, Sequence[Request]],
    submitters: Sequence[Submitter],
    now: float,
    *,
    groups: Sequence[GroupConfig] = (),
    pre_job_rank: Node | None = None,
    post_job_rank: Node | None = None,
    concurrency: Any = None,
    preemption: Any = None,
) -> Plan:
    """The whole cycle's plan: group quotas, then the pie spun until it stops matching.

    ``Plan.by_submitter`` counts matches; ``Plan.unmatched`` is what is left
    at the end. ``concurrency`` and ``preemption`` go to every spin
    unchanged (the matchmaker keeps their consumption in the shared pool).
    """
    slots = list(slots)
    pool = SlotPool(slots, pre_job_rank=pre_job_rank, post_job_rank=post_job_rank, preemption=preemption)
    cyc = _Cycle(requests_by_submitter, submitters, groups)
    prios = {n: s.eff_prio for n, s in cyc.subs.items()}  # priority preemption compares these
    free_w = pool_w = 0.0
    # the pool's views of the unclaimed slots, by input index: their State is known, and
    # their SlotWeight's value when it is a number
    views = iter(pool.views)
    view = next(views, None)
    for i, s in enumerate(slots):
        if view is not None and view.index == i:
            v, view = view, next(views, None)
            if not v.claimed:
                w = v.weight_value
                if type(w) in (int, float) and math.isfinite(w):
                    w = max(0.0, float(w))
                else:
                    w = slot_weight(s.ad)
                pool_w += w
                free_w += w
                continue
        state = _state(s.ad)
        if state == SlotState.UNCLAIMED or state == SlotState.CLAIMED:
            w = slot_weight(s.ad)
            pool_w += w
            if state == SlotState.UNCLAIMED:
                free_w += w
    total = max(pool_w, free_w + sum(cyc.held.values()))
    if groups:
        demand: dict[str, float] = {}
        for n in cyc.subs:
            g = cyc.group[n]
            demand[g] = demand.get(g, 0.0) + cyc.held[n] + cyc.pending_weight(n)
        _, quota = _allocate(groups, total, demand)
    else:
        quota = {NONE_GROUP: total}

    plan = Plan(now=now)
    by_weight: dict[str, float] = {}
    for n in cyc.subs:
        plan.by_submitter[n] = 0
        by_weight[n] = 0.0

    def call(reqs: Mapping[str, Sequence[Request]], order: Sequence[str],
             limits: Mapping[str, float] | None, orig: Mapping[int, Request]) -> int:
        nonlocal free_w
        if limits is None and concurrency is None and len(order) == 1 and len(reqs[order[0]]) == 1:
            # a one-match round's call, ~6 per round and mostly in vain: what
            # ``matchmaker.negotiate`` would do for it, without building its Plan
            before = pool.evaluations
            matches = pool.match_request(reqs[order[0]][0], None, weight_limit=None,
                                         submitter_prio=prios.get(order[0]))
            plan.evaluations += pool.evaluations - before
            used: Mapping[str, float] = {}
        else:
            p = matchmaker.negotiate(slots, reqs, order, now, limits=limits, pool=pool,
                                     concurrency=concurrency, submitter_prio=prios)
            plan.evaluations += p.evaluations
            matches, used = p.matches, p.concurrency_used
        left, held, took = cyc.left, cyc.held, cyc.took
        by_submitter = plan.by_submitter
        if preemption is None:  # nobody's weight goes down: one request's matches at once
            i, end = 0, len(matches)
            while i < end:
                first = matches[i].request
                r = orig.get(id(first), first)
                n = r.submitter
                h, bw = held.get(n, 0.0), by_weight.get(n, 0.0)
                j = i
                while j < end and (m := matches[j]).request is first:  # in order: same sums
                    m.request = r
                    w = float(m.weight)
                    h += w
                    bw += w
                    free_w -= w
                    j += 1
                if id(r) in left:
                    took(r, j - i)
                held[n], by_weight[n] = h, bw
                by_submitter[n] = by_submitter.get(n, 0) + j - i
                i = j
        for m in matches if preemption is not None else ():
            r = m.request = orig.get(id(m.request), m.request)
            w = float(m.weight)
            n = r.submitter
            if id(r) in left:
                took(r)
            held[n] = held.get(n, 0.0) + w
            by_submitter[n] = by_submitter.get(n, 0) + 1
            by_weight[n] = by_weight.get(n, 0.0) + w
            if m.preempts:
                victim = _eval_attr(m.slot.ad, "RemoteUser")
                if isinstance(victim, str) and victim in held:
                    held[victim] = max(0.0, held[victim] - w)
            else:
                free_w -= w
        plan.matches.extend(matches)
        for k, v in used.items():
            plan.concurrency_used[k] = plan.concurrency_used.get(k, 0.0) + v
        return len(matches)

    # After a spin matched nothing, a spin can only match again once the set of
    # submitters still wanting changes (limits only shrink as weight is taken), so
    # until then the one-match rounds below follow each other without a spin between.
    spin = True
    still: list[str] | None = None  # who still wants, as the last one-match round left it
    # The one-match rounds' order, (key, name) sorted, kept from round to round while
    # the slices stand: a round changes only the key of the one who got the match
    # (without preemption; with it, the victim's too, and the order is sorted afresh)
    ranked: list[tuple[tuple[Any, ...], str]] | None = None

    def round_key(n: str) -> tuple[Any, ...]:
        s = cyc.subs[n]
        return (-(shares[n] - cyc.held[n]), _eff(s), s.usage, n)

    for _ in range(_MAX_SPINS):
        active = still if still is not None else [
            n for n in cyc.subs if n not in cyc.rejected and cyc.wants(n)
        ]
        still = None
        if not active or (preemption is None and (free_w <= _EPS or pool.free_slots() == 0)):
            break
        if spin:
            ranked = None
            shares, limits = _slices(cyc, active, quota, preemption is not None)
            held = _held_by_group(cyc)
            order = sorted(active, key=lambda n: _service_key(cyc, n, quota, held))
            reqs, orig = cyc.remaining_requests(order)
            if call(reqs, order, limits, orig):
                continue
        # Nothing fit any slice: the one furthest below its slice still gets a match,
        # and those whose jobs match no free slot at all drop out of later spins. Only
        # while idle weight is left: a thin slice is no licence to preempt.
        if free_w <= _EPS:
            break
        # the one-match rounds need only the slices, not the limits; without a spin the
        # set of submitters is the last round's, and so are its slices
        if ranked is None:
            ranked = sorted((round_key(n), n) for n in active)
        got = False
        rejected = False
        winner = 0  # the place in ``ranked`` of the one who got the match
        # what each group holds, summed when first asked: the same until a call
        # matches (and the round ends)
        group_held: dict[str, float] = {}
        for place, (_, n) in enumerate(ranked):
            if not _room(cyc, n, quota, group_held):
                continue
            reqs, orig = cyc.remaining_requests([n])
            prio = prios.get(n)
            for r in reqs[n]:
                if r.count <= 0:
                    continue
                if concurrency is None and takes_nothing(pool, r.ad, prio):
                    continue  # what the call would find, without making it
                one = Request(r.submitter, r.autocluster, 1, r.ad, r.extra)
                if call({n: [one]}, [n], None, {id(one): orig[id(r)]}):
                    got = True
                    break
            if got:
                winner = place
                break
            cyc.rejected.add(n)
            rejected = True
        if not got:
            break
        n = ranked[winner][1]
        if not rejected and cyc.wants(n):
            # only ``n``'s requests took jobs: everyone else wants as before
            still, spin = active, False
            key = round_key(n)
            if preemption is None and key[0] == key[0] and key[2] == key[2]:
                del ranked[winner]  # its key only grew (it holds more): it moves down
                bisect.insort(ranked, (key, n))
            else:  # a victim's key changed too, or a NaN key: sorted afresh
                ranked = None
        else:
            still = [n for n in cyc.subs if n not in cyc.rejected and cyc.wants(n)]
            spin = still != active
            ranked = None

    for n, rs in cyc.requests.items():
        for r in rs:
            if cyc.left[id(r)] > 0:
                plan.unmatched[(n, r.autocluster)] = cyc.left[id(r)]
    plan.weight_by_submitter = by_weight
    if groups:  # what `q -analyze` shows of a group at its quota
        plan.group_quota = dict(quota)
        plan.group_held = {g: _group_held(cyc, g) for g in quota}
    return plan


def _held_by_group(cyc: _Cycle) -> dict[str, float]:
    """``_group_held`` of every group at once (the same sums, in the same order)."""
    parts: dict[str, list[float]] = {}
    for n, h in cyc.held.items():
        parts.setdefault(cyc.group[n], []).append(h)
    return {g: sum(hs) for g, hs in parts.items()}


def _group_held(cyc: _Cycle, g: str) -> float:
    if g == cyc.only_group and len(cyc.held) == len(cyc.group):
        return sum(cyc.held.values())  # everyone's: the same sum, in the same order
    return sum(h for n, h in cyc.held.items() if cyc.group[n] == g)


def _room(cyc: _Cycle, n: str, quota: Mapping[str, float],
          held: dict[str, float] | None = None) -> bool:
    """``n`` is below its ceiling and its group below its quota. ``held``: the groups'
    :func:`_group_held` so far, while nobody's weight changes (filled in here)."""
    s = cyc.subs[n]
    if s.ceiling is not None and cyc.held[n] >= s.ceiling - _EPS:
        return False
    g = cyc.group[n]
    gh = None if held is None else held.get(g)
    if gh is None:
        gh = _group_held(cyc, g)
        if held is not None:
            held[g] = gh
    return gh < quota.get(g, 0.0) - _EPS


def _service_key(cyc: _Cycle, n: str, quota: Mapping[str, float],
                 held: Mapping[str, float] | None = None) -> tuple[Any, ...]:
    """Groups in starvation order (least used fraction of quota first, ``<none>`` last); inside,
    submitters below their floor first, then best effective priority. ``held``: what
    :func:`_held_by_group` says now, when the caller has it."""
    g = cyc.group[n]
    q = quota.get(g, 0.0)
    gh = _group_held(cyc, g) if held is None else held.get(g, 0)
    starving = gh / q if q > 0 else math.inf
    s = cyc.subs[n]
    below_floor = s.floor is not None and cyc.held[n] < s.floor
    return (g == NONE_GROUP, starving, g, not below_floor, _eff(s), s.usage, n)


def _by_group(cyc: _Cycle, active: Sequence[str]) -> dict[str, list[str]]:
    by_group: dict[str, list[str]] = {}
    for n in active:
        by_group.setdefault(cyc.group[n], []).append(n)
    return by_group


def _group_shares(cyc: _Cycle, names: Sequence[str], q: float, shares: dict[str, float]) -> None:
    inv = {n: 1.0 / _eff(cyc.subs[n]) for n in names}
    norm = sum(inv.values())
    for n in names:
        shares[n] = q * inv[n] / norm


def _slices(cyc: _Cycle, active: Sequence[str], quota: Mapping[str, float],
            preempting: bool = False) -> tuple[dict[str, float], dict[str, float]]:
    """Each active submitter's pie slice of its group's quota, and its weight limit for this spin."""
    shares: dict[str, float] = {}
    limits: dict[str, float] = {}
    held = _held_by_group(cyc)
    for g, names in _by_group(cyc, active).items():
        q = quota.get(g, 0.0)
        _group_shares(cyc, names, q, shares)
        if preempting:  # weight held beyond a slice may be preempted, so it does not fill the group
            room = max(0.0, q - sum(min(cyc.held[n], shares[n]) for n in names))
        else:
            room = max(0.0, q - held.get(g, 0))
        for n in sorted(names, key=lambda n: _service_key(cyc, n, quota, held)):
            s = cyc.subs[n]
            share = shares[n]
            limit = share - cyc.held[n]
            if s.floor is not None:
                limit = max(limit, s.floor - cyc.held[n])
            if s.ceiling is not None:
                limit = min(limit, s.ceiling - cyc.held[n])
            limit = max(0.0, min(limit, room))
            room -= limit
            limits[n] = limit
    return shares, limits
