"""roost's deliberate deviations from HTCondor, each pinned on both sides.

Each test asserts what classad2 does (so we notice if HTCondor changes) and what
roost does instead (so we notice if roost drifts). Every deviation here is
listed, with its reason, in docs/classad.md, "Deliberate deviations from
HTCondor"; the general differential tables avoid exactly these cases (attribute
order is compared sorted, generated reals are ones 16 digits read back).
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import classad2
import pytest
from diff_harness import roost


def _both() -> tuple[Any, Any]:
    if os.environ.get("ROOST_DIFF_SELF") == "1":
        pytest.skip("deviations compare two different libraries")
    return roost(), classad2


def test_attribute_order_is_insertion_order() -> None:
    # HTCondor iterates and prints an ad in the order of its hash table.
    text = "[zeta = 1; Alpha = 2; mid = 3; Owner = true; Memory = -10; Rank = -2.25]"
    written = ["zeta", "Alpha", "mid", "Owner", "Memory", "Rank"]
    r, c = _both()
    assert list(r.ClassAd(text).keys()) == written
    assert [ln.split(" = ")[0] for ln in r.ClassAd(text).printOld().splitlines()] == written
    assert list(c.ClassAd(text).keys()) != written
    assert sorted(c.ClassAd(text).keys()) == sorted(written)


def test_reals_unparse_with_17_digits_when_16_lose_the_last_bit() -> None:
    r, c = _both()
    x = 0.1 + 0.2  # 0.30000000000000004
    assert str(c.ExprTree(repr(x))) == "3.000000000000000E-01"  # reads back as 0.3
    assert str(r.ExprTree(repr(x))) == "3.0000000000000004E-01"
    assert r.ExprTree(str(r.ExprTree(repr(x)))).eval() == x
    assert str(r.ExprTree("0.1")) == str(c.ExprTree("0.1")) == "1.000000000000000E-01"


def test_json_reals_round_trip_exactly() -> None:
    r, c = _both()
    x = 0.1 + 0.2
    assert r.ClassAd({"x": x}).printJson() != c.ClassAd({"x": x}).printJson()
    assert next(r.parseAds(r.ClassAd({"x": x}).printJson(), r.ParserType.JSON)).eval("x") == x
    assert next(c.parseAds(c.ClassAd({"x": x}).printJson(), c.ParserType.JSON)).eval("x") != x


def test_unary_minus_on_a_literal_keeps_its_space() -> None:
    # HTCondor prints "- 5" as " -5", which reads back as the literal -5, a different tree.
    r, c = _both()
    assert str(c.ExprTree("- 5")) == " -5"
    assert str(r.ExprTree("- 5")) == " - 5"
    assert str(r.ExprTree("-5")) == str(c.ExprTree("-5")) == "-5"


def test_selection_from_an_integer_keeps_its_space() -> None:
    # HTCondor prints "1 .a" as "1.a", which does not parse back the same.
    r, c = _both()
    assert str(c.ExprTree("1 .a")) == "1.a"
    assert str(r.ExprTree("1 .a")) == "1 .a"


def test_json_array_of_ads_is_read() -> None:
    # condor_q -json prints a JSON array; classad2 cannot read it back.
    text = '[{"a": 1}, {"b": 2}]'
    r, c = _both()
    assert [dict(a) for a in r.parseAds(text, r.ParserType.JSON)] == [{"a": 1}, {"b": 2}]
    assert [dict(a) for a in r.parseAds(text)] == [{"a": 1}, {"b": 2}]
    for parser in (c.ParserType.JSON, c.ParserType.Auto):
        try:
            got = list(c.parseAds(text, parser))
        except Exception:
            got = None
        assert got is None


def test_auto_recognises_json() -> None:
    r, c = _both()
    assert [dict(a) for a in r.parseAds('{"a": 1}')] == [{"a": 1}]
    assert list(c.parseAds('{"a": 1}')) == []


def test_json_unicode_escapes_decode() -> None:
    text = '{"s": "\\u00e9\\ud83d\\ude00"}'
    r, c = _both()
    assert next(r.parseAds(text, r.ParserType.JSON)).eval("s") == "é\U0001f600"
    assert next(c.parseAds(text, c.ParserType.JSON)).eval("s") != "é\U0001f600"


def test_json_integer_wider_than_64_bits_reads_as_real() -> None:
    text = '{"n": 99999999999999999999}'
    r, c = _both()
    assert next(r.parseAds(text, r.ParserType.JSON)).eval("n") == 1e20
    assert next(c.parseAds(text, c.ParserType.JSON)).eval("n") == 0


def test_json_empty_object_is_an_empty_ad() -> None:
    r, c = _both()
    assert [len(a) for a in r.parseAds("{}", r.ParserType.JSON)] == [0]
    assert list(c.parseAds("{}", c.ParserType.JSON)) == []


def test_old_format_bad_line_is_an_error_not_a_silent_truncation() -> None:
    text = "A = 1\nB = = 2\nC = 3\n"
    r, c = _both()
    assert [dict(a) for a in c.parseAds(text, c.ParserType.Old)] == [{"A": 1}]
    try:
        list(r.parseAds(text, r.ParserType.Old))
    except r.ClassAdSyntaxError as e:
        assert e.line == 2
    else:
        raise AssertionError("roost read a bad old-format line without an error")


@pytest.mark.parametrize(
    "text, parser",
    [
        ("[a = ]", None), ("[a = ]", "New"), ("[a = ]", "Old"), ("[a = 1]\n[b = ]\n[c = 3]", "Old"),
        ("[a = 1] junk", None), ("[a = 1] junk", "New"), ("A = 1\nB = \n", None), ("A = 1\nB = \n", "Old"),
        ("[a = 1", None), ("[a = 1", "New"), ("{", None), ("{", "New"), ("{", "Old"),
    ],
)  # fmt: skip
def test_malformed_stream_is_an_error_not_fewer_ads(text: str, parser: str | None) -> None:
    # classad2 returns the ads before the bad one (or none) and says nothing
    r, c = _both()
    args = (text,) if parser is None else (text, getattr(c.ParserType, parser))
    list(c.parseAds(*args))  # does not raise
    args = (text,) if parser is None else (text, getattr(r.ParserType, parser))
    with pytest.raises(r.ClassAdSyntaxError):
        list(r.parseAds(*args))


def test_aware_datetime_keeps_its_offset() -> None:
    when = datetime.datetime(2020, 1, 1, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    r, c = _both()
    assert r.ClassAd({"t": when}).eval("t") == when  # 10:00 UTC
    assert c.ClassAd({"t": when}).eval("t") == when.replace(tzinfo=datetime.UTC)  # offset dropped


@pytest.mark.parametrize("text", ["[a = ]", "[a = 1] junk", "A = 1\nB = \n"])
def test_malformed_parse_one_is_an_error(text: str) -> None:
    r, c = _both()
    c.parseOne(text)  # does not raise
    with pytest.raises(r.ClassAdSyntaxError):
        r.parseOne(text)


def test_string_that_is_not_utf8_is_a_str_with_escaped_bytes() -> None:
    # ClassAd strings are bytes; "\\377" is no UTF-8. classad2 fails converting it to Python.
    r, c = _both()
    with pytest.raises(UnicodeDecodeError):
        c.ExprTree('"\\377"').eval()
    got = r.ExprTree('"\\377"').eval()
    assert got == "\udcff" and got.encode("utf-8", "surrogateescape") == b"\xff"
    assert r.ExprTree('size("\\377")').eval() == c.ExprTree('size("\\377")').eval() == 1
