"""A sparse cluster's untouched procs, kept as ranges until something touches one (issue 27).

A million idle procs of one ``queue N`` cluster that nothing has changed since submit
differ only in their ProcId: building a ``Job`` for each at start-up, with its entries in
the procs and idle dicts, was most of a restart (~3 s of CPU at a million). ``Plain``
holds them as the submitted ranges instead, with the cluster's status and, for a shaped
cluster (procshape.py), each proc's own values where they already are (the stored list);
``Cluster.job`` makes the ``Job`` of one proc when it is looked up, ``Cluster.procs``
makes them all (in proc order) when something iterates the cluster.

Nothing here is durable: a plain proc has no procs row (it is "as submitted" in the
store too), so making its ``Job`` writes nothing; the row comes with its first change.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import Any


class Plain:
    """Procs ``ranges`` (ascending, disjoint ``[lo, hi)``) less ``taken`` (procs made
    into a ``Job``, gone, or with a procs row at load), all in ``status``.

    ``owns``: for a shaped cluster, its procs' own values in the order of ``ranges``
    from proc ``first`` on (None: all templates, ``()`` each); ``sub``: for an unshaped
    one, the differences as submitted (``{"ProcId": diff}``)."""

    __slots__ = ("ranges", "_los", "_starts", "status", "shaped", "owns", "sub", "first", "taken", "n")

    def __init__(self, ranges: list[tuple[int, int]], status: int, *, shaped: bool = False,
                 owns: list[Any] | None = None, sub: dict[str, Any] | None = None, first: int = 0,
                 gone: list[tuple[int, int]] | None = None) -> None:
        # ``gone``: ranges of procs that left the queue (``gone_ranges``), cut out of
        # ``ranges``; ``owns`` stays indexed by the submitted ranges
        self.ranges, self._starts = ranges_less(ranges, gone or [], first)
        self._los = [lo for lo, _hi in self.ranges]
        self.status = status
        self.shaped = shaped
        self.owns = owns
        self.sub = sub or None
        self.first = first
        self.taken: set[int] = set()
        self.n = sum(hi - lo for lo, hi in self.ranges)

    @staticmethod
    def fits(ranges: list[list[int]]) -> bool:
        """Whether ``ranges`` are ascending and disjoint (what lookups by bisection need)."""
        return all(lo < hi for lo, hi in ranges) and all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:]))

    def _range(self, proc: int) -> int:
        """The index of the range holding ``proc``, else -1."""
        i = bisect_right(self._los, proc) - 1
        return i if i >= 0 and proc < self.ranges[i][1] else -1

    def covers(self, proc: int) -> bool:
        """Whether ``proc`` was submitted in this cluster and is not in a gone range
        (plain or not)."""
        return self._range(proc) >= 0

    def has(self, proc: int) -> bool:
        """Whether ``proc`` is still plain (no ``Job`` made, not gone)."""
        return proc not in self.taken and self._range(proc) >= 0

    def take(self, proc: int) -> None:
        """``proc`` is no longer plain (a ``Job`` was made of it, or it had a row)."""
        if proc not in self.taken and self._range(proc) >= 0:
            self.taken.add(proc)
            self.n -= 1

    def own(self, proc: int) -> Any:
        """The ``Job._diff`` a plain ``proc`` starts with."""
        if self.shaped:
            if proc < self.first:
                return None
            if self.owns is None:
                return ()
            i = self._range(proc)
            lo = self.ranges[i][0]
            return tuple(self.owns[self._starts[i] + proc - max(lo, self.first)])
        return self.sub.get(str(proc)) if self.sub else None

    def runs(self) -> Iterator[tuple[int, int, Any]]:
        """(lo, hi, owns) of each stretch of plain procs, in proc order; ``owns`` the
        stretch's ``Job._diff`` values (a list), or None when every one is ``own(proc)``
        computed alike (None or ``()``, given by ``common``)."""
        taken = sorted(self.taken)  # stretches between them, not a look per proc
        for lo, hi in self.ranges:
            p = lo
            for t in taken[bisect_left(taken, lo):bisect_left(taken, hi)]:
                if t > p:
                    yield p, t, self._owns(p, t)
                p = t + 1
            if hi > p:
                yield p, hi, self._owns(p, hi)

    def _owns(self, lo: int, hi: int) -> Any:
        if self.shaped:
            if lo >= self.first:
                if self.owns is None:
                    return None
                i = self._range(lo)
                at = self._starts[i] + lo - max(self.ranges[i][0], self.first)
                return list(map(tuple, self.owns[at:at + hi - lo]))
            return [self.own(p) for p in range(lo, hi)]
        if self.sub:
            sub = self.sub
            return [sub.get(str(p)) for p in range(lo, hi)]
        return None

    def common(self) -> Any:
        """The ``Job._diff`` of every plain proc when ``runs`` gives no list."""
        return () if self.shaped else None

    def subs_name(self, attrs: tuple[str, ...]) -> bool:
        """Whether a plain proc's submitted differences may name one of ``attrs``."""
        return bool(self.sub) and any(a in d for d in self.sub.values() if isinstance(d, dict) for a in attrs)

    def may_own(self, shape_names: tuple[str, ...], names: frozenset[str] | set[str] | None) -> bool:
        """Whether a plain proc may have attributes of its own (among ``names``, lower
        case, if given): a shaped cluster's are its ``shape_names``, an unshaped one's
        what it was submitted with."""
        if self.shaped:
            return bool(shape_names) and (names is None or any(k.lower() in names for k in shape_names))
        if not self.sub:
            return False
        return names is None or any(k.lower() in names for d in self.sub.values() if isinstance(d, dict) for k in d)

    def first_proc(self) -> int | None:
        for lo, _hi, _o in self.runs():
            return lo
        return None

    def last_proc(self) -> int | None:
        taken = self.taken
        for lo, hi in reversed(self.ranges):
            for p in range(hi - 1, lo - 1, -1):
                if p not in taken:
                    return p
        return None


def ranges_less(ranges: list[tuple[int, int]], gone: list[tuple[int, int]],
                first: int) -> tuple[list[tuple[int, int]], list[int]]:
    """``ranges`` (submitted: ascending, disjoint) less the procs in ``gone`` (any order,
    may overlap), and for each range left the index into ``owns`` its first shaped proc
    would have (``own``: owns[start + proc - max(lo, first)])."""
    merged: list[tuple[int, int]] = []
    for glo, ghi in sorted(gone):
        if glo >= ghi:
            continue
        if merged and glo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], ghi))
        else:
            merged.append((glo, ghi))
    gone = merged
    glos = [lo for lo, _hi in gone]
    out: list[tuple[int, int]] = []
    starts: list[int] = []
    at = 0  # index into owns of the submitted range's first shaped proc
    for lo, hi in ranges:
        base = max(lo, first)
        p = lo
        # the gone ranges that may reach into [lo, hi): from the last one starting at or before lo
        for glo, ghi in gone[max(0, bisect_right(glos, lo) - 1):bisect_left(glos, hi)]:
            if ghi <= p:
                continue
            if glo > p:
                out.append((p, glo))
                starts.append(at + max(p, first) - base)
            p = ghi
            if p >= hi:
                break
        if p < hi:
            out.append((p, hi))
            starts.append(at + max(p, first) - base)
        at += max(0, hi - base)
    return out, starts


def runs(procs: list[int]) -> list[tuple[int, int]]:
    """``procs`` (distinct, any order) as ascending ``[lo, hi)`` runs of consecutive ids."""
    out: list[tuple[int, int]] = []
    if not procs:
        return out
    ordered = sorted(procs)
    lo = hi = ordered[0]
    for p in ordered:
        if p != hi:
            out.append((lo, hi))
            lo = p
        hi = p + 1
    out.append((lo, hi))
    return out


__all__ = ["Plain", "ranges_less", "runs"]
