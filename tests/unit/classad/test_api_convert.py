"""Python <-> ClassAd conversion, checked against what classad2 does with the same objects."""

from __future__ import annotations

import datetime

import htcondor2  # noqa: F401  -- must precede classad2 (non-strict mode, as HTCondor's tools)

# isort: split
import classad2
import pytest

from roost.classad import ClassAd, ExprTree, Value
from roost.classad.ast import AdExpr, BinaryOp, FuncCall, ListExpr, Literal
from roost.classad.classad import node_to_python, to_node
from roost.classad.convert import (
    abstime_to_datetime,
    datetime_to_abstime,
    literal_value,
    time_literal,
    to_python,
)
from roost.classad.parser import parse_expr
from roost.classad.values import AbsTime, RelTime, RelTimeLiteral

UTC = datetime.UTC

# Values classad2 accepts on assignment; both sides must print the same ad.
CONVERTIBLE = [
    0, -1, 2**63 - 1, -(2**63), 1.5, -0.0, float("nan"), float("inf"), True, False, "", "s\"t\n\x01é",
    None, [], [1, "x", [2.5, None]], (1, 2), {1}, {"a": 1, "b": {"c": [True]}}, {}, b"bytes",
    datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=UTC), datetime.datetime(2020, 1, 2, 3, 4, 5, 999999, tzinfo=UTC),
]  # fmt: skip


@pytest.mark.parametrize("value", CONVERTIBLE, ids=repr)
def test_to_node_prints_like_classad2_assignment(value: object) -> None:
    ref = classad2.ClassAd()
    ref["x"] = value
    ours = ClassAd()
    ours["x"] = value
    assert repr(ours) == repr(ref)
    assert ours.printJson() == ref.printJson()


@pytest.mark.parametrize("value", CONVERTIBLE, ids=repr)
def test_getitem_returns_what_classad2_returns(value: object) -> None:
    ref = classad2.ClassAd()
    ref["x"] = value
    ours = ClassAd()
    ours["x"] = value
    got, want = ours["x"], ref["x"]
    assert repr(got) == repr(want)
    assert type(got).__name__ == type(want).__name__


def test_special_values() -> None:
    assert to_node(Value.Undefined) == Literal(Value.Undefined)
    assert to_node(Value.Error) == Literal(Value.Error)
    assert to_node(None) == Literal(Value.Undefined)
    assert to_node(True) == Literal(True) and to_node(True) != Literal(1)


def test_containers_and_expressions() -> None:
    assert to_node((1, "a")) == ListExpr((Literal(1), Literal("a")))
    assert to_node({"a": [1]}) == AdExpr((("a", ListExpr((Literal(1),))),))
    assert to_node(ExprTree("a + 1")) == BinaryOp("+", parse_expr("a"), Literal(1))
    assert to_node(ClassAd("[a = 1; b = c]")) == parse_expr("[a = 1; b = c]")


@pytest.mark.parametrize("bad", [object(), 1 + 2j, datetime.date(2020, 1, 1), {1: 2}])
def test_unconvertible_objects_raise_type_error(bad: object) -> None:
    with pytest.raises(TypeError, match="ClassAd"):
        to_node(bad)


def test_integer_overflow_is_reported() -> None:
    with pytest.raises(OverflowError, match="64 bits"):
        to_node(2**63)


def test_datetimes() -> None:
    aware = datetime.datetime(2020, 1, 1, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert datetime_to_abstime(aware) == AbsTime(1577872800, 0)  # 10:00 UTC (classad2 ignores the offset)
    naive = datetime.datetime(2020, 1, 1, 12, 0)
    assert datetime_to_abstime(naive).secs == int(naive.timestamp())  # local time, as classad2
    assert abstime_to_datetime(AbsTime(1577872800, 3600)) == datetime.datetime(2020, 1, 1, 10, 0, tzinfo=UTC)


def test_to_python() -> None:
    assert to_python(AbsTime(0, -3600)) == datetime.datetime(1970, 1, 1, tzinfo=UTC)
    assert to_python(RelTime(90)) == 90.0 and type(to_python(RelTime(90))) is float
    assert to_python([1, [RelTime(1)]]) == [1, [1.0]]
    assert to_python(Value.Error) is Value.Error


def test_literal_value_and_time_literals() -> None:
    assert literal_value(Literal(3)) == 3
    with pytest.raises(ValueError):
        literal_value(parse_expr("a + 1"))
    assert time_literal(parse_expr('relTime("1+00:00:05")')) == RelTimeLiteral(86405)
    assert time_literal(parse_expr('absTime("1970-01-01T00:01:00Z")')) == AbsTime(60, 0)
    assert time_literal(parse_expr("relTime(5)")) is None  # not folded by HTCondor's parser either
    assert time_literal(FuncCall("strcat", (Literal("x"),))) is None


def test_node_to_python_like_classad2_getitem() -> None:
    ad = classad2.ClassAd('[l = {1, a, [x = 1]}; e = a + 1; t = relTime("0:01:00")]')
    got = node_to_python(parse_expr("{1, a, [x = 1]}"))
    assert [repr(x) for x in got] == [repr(x) for x in ad["l"]]
    assert isinstance(node_to_python(parse_expr("a + 1")), ExprTree)
    assert node_to_python(parse_expr('relTime("0:01:00")')) == ad["t"] == 60.0
