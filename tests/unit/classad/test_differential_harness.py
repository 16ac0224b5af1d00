"""The differential harness itself: it must tell apart what users can tell apart.

These run without roost: they check the comparison, not the library.
"""

from __future__ import annotations

import datetime

import classad2
import pytest
from diff_harness import RAISED, attempt, norm


@pytest.mark.parametrize(
    "a, b",
    [
        (True, 1), (1, 1.0), (0.0, -0.0), (False, 0), ("1", 1), ([1], [1.0]), ([1, 2], [2, 1]),
        (classad2.Value.Undefined, classad2.Value.Error), (None, classad2.Value.Undefined),
        (classad2.ClassAd("[a = 1]"), classad2.ClassAd("[a = 1.0]")),
        (classad2.ClassAd("[a = 1]"), classad2.ClassAd("[A = 1; b = 2]")),
        (datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC), 1577836800),
    ],
)  # fmt: skip
def test_norm_distinguishes(a: object, b: object) -> None:
    assert norm(a) != norm(b)


@pytest.mark.parametrize(
    "a, b",
    [
        (float("nan"), float("nan")), ([1, "x"], [1, "x"]),
        (classad2.ClassAd("[a = 1; b = a + 1]"), classad2.ClassAd("[A = 1; B = 2]")),  # attribute-wise, by value
        (classad2.ExprTree("undefined").eval(), classad2.Value.Undefined),
    ],
)  # fmt: skip
def test_norm_identifies(a: object, b: object) -> None:
    assert norm(a) == norm(b)


def test_attempt_turns_exceptions_into_a_token() -> None:
    raw, tok = attempt(lambda: classad2.ExprTree("1 +"))
    assert tok == RAISED and isinstance(raw, Exception)
