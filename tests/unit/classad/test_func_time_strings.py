"""absTime("...")/relTime("...") with a literal string: HTCondor reads these while
parsing; roost.classad.func_time offers the same reading to the parser.  Checked
against classad2, which applies it when it parses the call.
"""

from __future__ import annotations

import pytest
from func_oracle import classad2

from roost.classad.func_time import parse_abstime_literal, parse_reltime_literal
from roost.classad.func_values import abstime_text, string_literal

ABS = ["2020-01-02T03:04:05", "2020-01-02T03:04:05Z", "2020-01-02 03:04:05 -0530", "2020", "202",
       "2020-13-45T99:99:99+01:00", "2020-01-02T03:04:05+01:00x", "1969-12-31T23:59:59Z", "x", "",
       "  2020-06  ", "2020-06-07T08:09:10+0100", "2020-06-07T08:09:10 z", "20200607080910", "2020/6/7",
       "abc2020def", "2020-01-02T03:04:05-01:30", "1970-01-01T00:00:00Z", "2020-01-02T03:04:05+1", "99999"]
REL = ["1+02:03:04", "-5m", "1d 2h 3m 4.5s", "x", "1.5", "", "  ", "1:00", "-1:00:00", "10", "3s", "1.5.5",
       "+5", "5:", ":5", "1d", "2h", "-", " - 1:00", "99999999999", "1:2:3:4", "1e3", ".5", "5."]


def _ref(text: str) -> object:
    try:
        return classad2.ExprTree(text).eval()
    except classad2.ClassAdException:
        return None  # HTCondor rejects the string while parsing


@pytest.mark.parametrize("text", ABS)
def test_abstime_strings(text: str) -> None:
    want = _ref(f"string(absTime({string_literal(text)}))")
    got = parse_abstime_literal(text)
    assert (abstime_text(got) if got is not None else None) == want


@pytest.mark.parametrize("text", REL)
def test_reltime_strings(text: str) -> None:
    assert parse_reltime_literal(text) == _ref(f"relTime({string_literal(text)})")
