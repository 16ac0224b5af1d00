"""Autoclusters: idle jobs that the matchmaker cannot tell apart, grouped under one key.

HTCondor's idea: the negotiator never looks at 100,000 idle jobs one by
one. Jobs whose *significant attributes* are equal match exactly the same
slots in the same order, so the schedd groups them and offers one request
per group (a representative ad and a count).

Significant attributes of a job are
- the ones every match reads: :data:`BASE_SIGNIFICANT` (Requirements, Rank,
  the Request* resources ...),
- the job attributes its own Requirements/Rank/Request* refer to (``MY.x`` or
  a bare name the job defines), followed transitively, and
- the job attributes the pool's machines refer to from their Requirements,
  Rank and START (``TARGET.ImageSize``, ``TARGET.Owner`` ...):
  ``machine_references`` finds these in slot ads.

The key is the tuple of (name, canonical value text) of those attributes, so
two jobs share an autocluster exactly when they would be matched identically.
Pure code: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd
from roost.classad.ast import Literal, Node
from roost.classad.evaluate import refs_node
from roost.classad.unparse import unparse

BASE_SIGNIFICANT: tuple[str, ...] = (
    "Requirements",
    "Rank",
    "RequestCpus",
    "RequestMemory",
    "RequestDisk",
    "RequestGPUs",
    "JobUniverse",
    "Owner",
    "AccountingGroup",
    "ConcurrencyLimits",
    "NiceUser",
)

# Attributes whose references decide what a job asks of a machine.
_REFERRING = ("Requirements", "Rank", "RequestCpus", "RequestMemory", "RequestDisk", "RequestGPUs")

# Attributes every slot ad carries that a match reads through TARGET: a job's
# Requirements reading them is about the machine, not the job.
_MACHINE_SIDE_EXPRS = ("Requirements", "Rank", "Start", "WithinResourceLimits")


def _value_key(node: Node | None) -> Any:
    """A hashable stand-in for an expression that tells 1, 1.0, true and "1" apart."""
    if node is None:
        return None
    if type(node) is Literal:
        v = node.value  # type: ignore[attr-defined]
        return (type(v).__name__, v) if type(v) in (int, float, str, bool) else ("lit", unparse(node))
    return ("expr", unparse(node))


def _internal_refs(ad: ClassAd, node: Node) -> list[str]:
    return [r for r in refs_node(ad, node, False) if r]


def _external_refs(ad: ClassAd, node: Node) -> list[str]:
    return [r for r in refs_node(ad, node, True) if r]


def job_references(job: ClassAd) -> set[str]:
    """Lower-case names of the job attributes its Requirements, Rank and Request*
    refer to (directly or through other attributes of the job)."""
    out: set[str] = set()
    attrs = job._attrs
    for name in _REFERRING:
        node = attrs.get(name.lower())
        if node is not None and type(node) is not Literal:
            for ref in _internal_refs(job, node):
                out.add(ref.rsplit(".", 1)[-1].lower())
    return out


def machine_references(slots: Iterable[ClassAd]) -> set[str]:
    """Lower-case names of job attributes that slots' Requirements/Rank/START read
    (``TARGET.x``, or a bare name the slot does not define)."""
    out: set[str] = set()
    seen: set[int] = set()
    for slot in slots:
        attrs = slot._attrs
        for name in _MACHINE_SIDE_EXPRS:
            node = attrs.get(name.lower())
            if node is None or type(node) is Literal or id(node) in seen:
                continue
            seen.add(id(node))
            for ref in _external_refs(slot, node):
                base, _, attr = ref.rpartition(".")
                if base.lower() in ("", "target", "other"):
                    out.add((attr or ref).lower())
    out.discard("currenttime")
    return out


def significant_attributes(job: ClassAd, machine_refs: Iterable[str] = ()) -> tuple[str, ...]:
    """The sorted lower-case names that decide how ``job`` matches."""
    names = {n.lower() for n in BASE_SIGNIFICANT}
    names.update(job_references(job))
    names.update(r.lower() for r in machine_refs)
    return tuple(sorted(names))


def autocluster_key(job: ClassAd, significant_attrs: Iterable[str]) -> tuple[Any, ...]:
    """The autocluster key of ``job``: each significant attribute's value (text for
    expressions, typed value for literals; None when the job lacks it)."""
    attrs = job._attrs
    return tuple((name, _value_key(attrs.get(name.lower()))) for name in significant_attrs)


def _attr_node(job: ClassAd, name: str) -> Node | None:
    return job._attrs.get(name.lower())


@dataclass
class Autocluster:
    """One group: its id, key, a representative ad and the member job ids."""

    id: int
    key: tuple[Any, ...]
    representative: ClassAd
    jobs: set[Any] = field(default_factory=set)


class AutoclusterIndex:
    """Incremental grouping for a schedd: add idle jobs, remove them when they leave
    the Idle state; ids are stable while the group has members.

    ``machine_refs`` is the set of job attributes the pool's machines read; when
    it changes, call :meth:`reset` (every job is regrouped).
    """

    def __init__(self, machine_refs: Iterable[str] = ()) -> None:
        self.machine_refs = frozenset(r.lower() for r in machine_refs)
        self.by_key: dict[tuple[Any, ...], Autocluster] = {}
        self.by_id: dict[int, Autocluster] = {}
        self.job_cluster: dict[Any, int] = {}
        self._next_id = 1
        self._sig_cache: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def _significant(self, job: ClassAd) -> tuple[str, ...]:
        # Jobs of one submission share Requirements/Rank/Request*: cache their attribute list by them.
        ck = tuple(_value_key(_attr_node(job, n)) for n in _REFERRING)
        sig = self._sig_cache.get(ck)
        if sig is None:
            sig = significant_attributes(job, self.machine_refs)
            if len(self._sig_cache) < 10000:
                self._sig_cache[ck] = sig
        return sig

    def add(self, job_id: Any, job: ClassAd) -> int:
        """Put a job in its autocluster (moving it if it was in another); the id."""
        key = autocluster_key(job, self._significant(job))
        ac = self.by_key.get(key)
        old = self.job_cluster.get(job_id)
        if ac is not None and old == ac.id:
            return ac.id
        if old is not None:
            self.remove(job_id)
        if ac is None:
            ac = Autocluster(self._next_id, key, job)
            self._next_id += 1
            self.by_key[key] = ac
            self.by_id[ac.id] = ac
        ac.jobs.add(job_id)
        self.job_cluster[job_id] = ac.id
        return ac.id

    def remove(self, job_id: Any) -> None:
        """Take a job out (it ran, was held or removed); empty groups disappear."""
        cid = self.job_cluster.pop(job_id, None)
        if cid is None:
            return
        ac = self.by_id[cid]
        ac.jobs.discard(job_id)
        if not ac.jobs:
            del self.by_id[cid]
            del self.by_key[ac.key]

    def cluster_of(self, job_id: Any) -> int | None:
        return self.job_cluster.get(job_id)

    def clusters(self) -> list[Autocluster]:
        """Non-empty groups, oldest id first."""
        return sorted(self.by_id.values(), key=lambda ac: ac.id)

    def reset(self, machine_refs: Iterable[str], jobs: Mapping[Any, ClassAd]) -> None:
        """Regroup every job under a new set of machine references."""
        self.__init__(machine_refs)  # type: ignore[misc]
        for job_id, job in jobs.items():
            self.add(job_id, job)


def group_jobs(jobs: Mapping[Any, ClassAd], machine_refs: Iterable[str] = ()) -> list[Autocluster]:
    """Group a batch of jobs at once (what a non-incremental caller wants)."""
    index = AutoclusterIndex(machine_refs)
    for job_id, job in jobs.items():
        index.add(job_id, job)
    return index.clusters()


__all__ = [
    "BASE_SIGNIFICANT",
    "Autocluster",
    "AutoclusterIndex",
    "autocluster_key",
    "group_jobs",
    "job_references",
    "machine_references",
    "significant_attributes",
]
