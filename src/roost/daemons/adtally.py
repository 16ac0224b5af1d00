"""Counts of the distinct values of a few attributes over a table of ads, kept as ads
come and go: the collector's answer to a grouped QUERY (``roost status -totals``) that
was asked before, without looking at 100,000 ads again.

A tally is exact or gone: a value it cannot count (a list, a nested ad) drops it, and
the store drops it too when ads start spelling one of its names another way; the next
grouped query then counts afresh and registers a new one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any


class Uncountable(Exception):  # noqa: N818 -- says what the value is
    """A value among the tallied attributes is not hashable (a list, a nested ad)."""


class Tally:
    """How many ads hold each combination of the values of ``keys`` (exact spellings;
    a missing attribute and a null one count alike: both are UNDEFINED)."""

    __slots__ = ("keys", "counts")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.counts: Counter[tuple[Any, ...]] = Counter()

    def key(self, obj: dict[str, Any]) -> tuple[Any, ...]:
        k = tuple(map(obj.get, self.keys))
        try:
            hash(k)
        except TypeError:
            raise Uncountable(self.keys) from None
        return k

    def add(self, obj: dict[str, Any]) -> None:
        self.counts[self.key(obj)] += 1

    def remove(self, obj: dict[str, Any]) -> None:
        k = self.key(obj)
        n = self.counts[k] - 1
        if n > 0:
            self.counts[k] = n
        else:
            del self.counts[k]

    def answer(self) -> dict[str, Any]:
        """QUERY's ``group`` answer: each distinct projected ad once, with its count."""
        keys = self.keys
        return {"ads": [{k: v for k, v in zip(keys, key) if v is not None} for key in self.counts],
                "counts": list(self.counts.values())}
