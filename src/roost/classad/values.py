"""ClassAd runtime values.

Values are plain Python objects wherever a Python type fits exactly, because
the evaluator's speed depends on not wrapping them:

- integer  -> ``int`` (64-bit two's complement; arithmetic wraps as HTCondor does)
- real     -> ``float`` (NaN and +/-inf allowed)
- string   -> ``str``
- boolean  -> ``bool`` (careful: ``bool`` is a subclass of ``int``; test with
  ``type(v) is int``, never ``isinstance(v, int)``)
- UNDEFINED / ERROR -> the two members of :class:`Value` (compare with ``is``)
- list     -> ``list`` of values (never mutated once built)
- record   -> a ``roost.classad.ClassAd``
- absolute time -> :class:`AbsTime`;  relative time -> :class:`RelTime`
"""

from __future__ import annotations

import enum


class Value(enum.IntEnum):
    """The two special ClassAd values, numbered as HTCondor's ``classad2.Value``."""

    Error = 1
    Undefined = 2


UNDEFINED = Value.Undefined
ERROR = Value.Error

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

RECORD_CLASS: type = None  # type: ignore[assignment]
"""The class of records, ``roost.classad.classad.ClassAd``, set when that module is
imported (:func:`roost.classad.evaluate.use_classad`). ClassAd sits above what makes
records (``splitTime()``, ``flatten``), so they find it here instead of importing it."""


def wrap_int(n: int) -> int:
    """Wrap an arbitrary Python int to a signed 64-bit value, as C++ arithmetic does."""
    if INT64_MIN <= n <= INT64_MAX:
        return n
    n &= (1 << 64) - 1
    return n - (1 << 64) if n > INT64_MAX else n


class AbsTime:
    """An absolute time: seconds since the Unix epoch (UTC) plus the zone offset it was written in.

    The offset only affects how the time is printed; comparisons use ``secs``.
    """

    __slots__ = ("secs", "offset")

    def __init__(self, secs: float, offset: int = 0) -> None:
        self.secs = secs
        self.offset = offset

    def __eq__(self, other: object) -> bool:
        return type(other) is AbsTime and self.secs == other.secs and self.offset == other.offset

    def __hash__(self) -> int:
        return hash(("abstime", self.secs, self.offset))

    def __repr__(self) -> str:
        return f"AbsTime({self.secs!r}, {self.offset!r})"


class RelTime:
    """A relative time (a duration) in seconds."""

    __slots__ = ("secs",)

    def __init__(self, secs: float) -> None:
        self.secs = secs

    def __eq__(self, other: object) -> bool:
        return type(other) is RelTime and self.secs == other.secs

    def __hash__(self) -> int:
        return hash(("reltime", self.secs))

    def __repr__(self) -> str:
        return f"RelTime({self.secs!r})"


class RelTimeLiteral(RelTime):
    """``relTime("1:00")`` as the parser reads it: a relative-time *literal*.

    HTCondor quirk: such a literal evaluates to a real (its seconds), while a
    relative time computed at run time (``relTime(60)``), even when made a
    literal again (flatten), stays a relative time. It prints as ``relTime("...")``.
    Only ever the value of a parsed Literal node, never a runtime value.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return type(other) is RelTimeLiteral and self.secs == other.secs

    def __hash__(self) -> int:
        return hash(("reltime-literal", self.secs))

    def __repr__(self) -> str:
        return f"RelTimeLiteral({self.secs!r})"
