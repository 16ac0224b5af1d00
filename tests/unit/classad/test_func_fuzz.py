"""Robustness and the clock/chance-dependent built-ins.

A built-in must never raise, whatever values it is handed: the evaluator
calls them on user data.  The functions that read the clock or a random
generator are checked for the properties HTCondor guarantees, and splitTime
(which builds a record) field by field against classad2.
"""

from __future__ import annotations

import math
import re
import time

import pytest
from func_oracle import Record, classad2, render
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.classad import func_time
from roost.classad.functions import FUNCTIONS, SPECIAL_FORMS, lookup
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTime

scalars = st.one_of(
    st.just(UNDEFINED),
    st.just(ERROR),
    st.booleans(),
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "a,b", "1,2.5", "%Y %j %Z %s", "(a)|(b)", "[", "\\1\\9", "x*", "1.2.10", "u@d"]),
    st.builds(AbsTime, st.one_of(st.integers(-(1 << 40), 1 << 40), st.floats()), st.integers(-100000, 100000)),
    st.builds(RelTime, st.one_of(st.integers(-(1 << 40), 1 << 40), st.floats())),
    st.builds(lambda y, m, d: Record(Year=y, Month=m, Day=d), st.integers(-5000, 5000), st.integers(-20, 20), st.integers(-40, 40)),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=8)
NAMES = sorted(FUNCTIONS)


@settings(max_examples=400)
@given(name=st.sampled_from(NAMES), args=st.lists(values, max_size=5))
def test_builtins_never_raise(name: str, args: list[object]) -> None:
    FUNCTIONS[name](*args)


@pytest.mark.parametrize("name", NAMES)
def test_wrong_argument_counts_never_raise(name: str) -> None:
    for n in range(7):
        FUNCTIONS[name](*([UNDEFINED] * n))
        FUNCTIONS[name](*(["a,b"] * n))


def test_registry_shape() -> None:
    assert all(name == name.lower() for name in FUNCTIONS)
    assert SPECIAL_FORMS.isdisjoint(FUNCTIONS)
    assert lookup("VersionLE") is FUNCTIONS["versionle"]
    assert lookup("stringList_RegexpMember") is FUNCTIONS["stringlist_regexpmember"]
    assert lookup("noSuchFunction") is None


def ref(text: str) -> object:
    return classad2.ExprTree(text).eval()


def test_time_is_now() -> None:
    before = int(time.time())
    got = FUNCTIONS["time"]()
    assert type(got) is int and before <= got <= int(time.time())
    assert FUNCTIONS["time"](1) is ERROR


def test_current_time_and_zone() -> None:
    now = FUNCTIONS["currenttime"]()
    assert type(now) is AbsTime and abs(now.secs - time.time()) < 5
    zone = FUNCTIONS["timezoneoffset"]()
    assert type(zone) is RelTime and zone.secs == ref("timeZoneOffset()")
    assert now.offset == zone.secs
    no_args = FUNCTIONS["abstime"]()
    assert type(no_args) is AbsTime and abs(no_args.secs - now.secs) < 5
    for name in ("currenttime", "timezoneoffset", "daytime"):
        assert FUNCTIONS[name](0) is ERROR


def test_day_time() -> None:
    got = FUNCTIONS["daytime"]()
    want = ref("dayTime()")
    assert type(got) is RelTime and 0 <= got.secs < 86400
    assert abs(got.secs - want) < 5 or abs(got.secs - want) > 86000  # midnight wrap


def test_format_time_now() -> None:
    got = FUNCTIONS["formattime"]()
    assert re.fullmatch(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}", got)
    assert got[:10] == ref("formatTime()")[:10]


def test_random() -> None:
    ints = {FUNCTIONS["random"](3) for _ in range(200)}
    assert ints <= {0, 1, 2} and len(ints) > 1
    reals = [FUNCTIONS["random"](2.5) for _ in range(50)]
    assert all(type(r) is float and 0 <= r < 2.5 for r in reals)
    default = FUNCTIONS["random"]()
    assert type(default) is float and 0 <= default < 1
    for bad in (0, -1, 0.0, -2.5, "3", True, UNDEFINED, [1]):
        assert FUNCTIONS["random"](bad) is ERROR
    assert FUNCTIONS["random"](1, 2) is ERROR
    assert FUNCTIONS["random"](1 << 32) is ERROR  # HTCondor reads the limit as a C int: 0


def _ref_fields(text: str) -> dict[str, object]:
    ad = ref(f"splitTime({text})")
    return {k: ad.eval(k) for k in ad.keys()}


@pytest.mark.parametrize(
    "value",
    [0, 1700000000, -1, 2.9, AbsTime(1700000000, 3600), AbsTime(0, -18000), RelTime(0), RelTime(90061),
     RelTime(-90061), RelTime(-3725.5), RelTime(-0.5), RelTime(59.25), RelTime(-59)],
)
def test_split_time_fields(value: object) -> None:
    want = _ref_fields(render(value))
    got = dict(func_time._split_fields(value) or [])
    assert set(got) == set(want)
    for k, v in want.items():
        assert type(got[k]) is type(v) and (got[k] == v or (math.isnan(v) and math.isnan(got[k]))), k


def test_split_time_rejections() -> None:
    split = FUNCTIONS["splittime"]
    assert split(UNDEFINED) is UNDEFINED
    for bad in (ERROR, "x", True, [1], Record(a=1)):
        assert split(bad) is ERROR
    assert split() is ERROR and split(1, 2) is ERROR


def test_split_time_builds_a_record() -> None:
    pytest.importorskip("roost.classad.classad")
    ad = FUNCTIONS["splittime"](RelTime(90061))
    assert len(ad) == 5 and "Days" in ad


@pytest.mark.parametrize(
    ("name", "args"),
    [("userHome", ()), ("userHome", ("a", "b", "c")), ("userHome", ("a",)), ("userHome", (1, 2)),
     ("random", (0,)), ("random", (-1,)), ("random", (1 << 32,)), ("random", (0.0,)), ("random", (-2.5,)),
     ("random", ("x",)), ("random", (1, 2)), ("random", (5,)),
     ("absTime", (1, -1)), ("absTime", (1, -1.5)), ("absTime", (1, RelTime(-1))), ("absTime", (1, (1 << 32) - 1)),
     ("absTime", (1.0, -1)), ("absTime", (1, 0)), ("absTime", (1, "x"))],
)
def test_evaluation_failures_match_htcondor(name: str, args: tuple[object, ...]) -> None:
    from func_oracle import call_text

    from roost.classad.functions import fails_evaluation

    try:
        classad2.ExprTree(call_text(name, args)).eval()
        failed = False
    except classad2.ClassAdException:
        failed = True
    assert fails_evaluation(name, args) is failed
    if failed:
        assert FUNCTIONS[name.lower()](*args) is ERROR
