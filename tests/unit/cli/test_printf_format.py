"""``-format FMT ATTR`` as condor_q prints it, and the other ad views of HTCondor's tools
(``-af`` flags, ``-xml``), checked against what HTCondor's own code does."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from roost.cli.adtext import AutoFormat, xml_text
from roost.cli.printf import PrintfFormat, format_ads, unescape
from roost.cli.restrict import split_format

JOB = {"ClusterId": 12, "ProcId": 3, "Owner": "alice", "RequestCpus": 2, "Memory": 1.5, "Done": True,
       "Requirements": '/Expr(TARGET.Memory >= 1024)/', "Rank": "/Expr(RequestCpus + 1)/",
       "Name": "/Expr(strcat(Owner, \"@x\"))/", "Tags": ["a", "b"], "Elapsed": 93784, "QDate": 0}


def cell(fmt: str, expr: str, job: dict = JOB) -> str:  # type: ignore[type-arg]
    return PrintfFormat(fmt, expr).text(job)


@pytest.mark.parametrize("fmt, expr, want", [
    ("%s", "Owner", "alice"),
    ("[%-7s]", "Owner", "[alice  ]"),
    ("[%7s]", "Owner", "[  alice]"),
    ("%d", "RequestCpus", "2"),
    ("%05d", "RequestCpus", "00002"),
    ("%.3f", "Memory", "1.500"),
    ("%d", "Memory", "1"),              # a real through %d is truncated, as C's (long long) cast
    ("%f", "RequestCpus", "2.000000"),
    ("%d", "Done", "1"),                # booleans are numbers to printf
    ("%x", "ClusterId", "c"),
    ("%u", "ClusterId", "12"),
    ("%ld", "ClusterId", "12"),         # length modifiers are C's business, not ours
    ("%d", "Rank", "3"),                # expressions are evaluated
    ("%s", "Name", "alice@x"),          # an expression that evaluates to a string
    ("%s", "Requirements", "TARGET.Memory >= 1024"),  # %s of a non-string: its ClassAd text
    ("%s", "RequestCpus", "2"),
    ("%v", "Owner", "alice"),
    ("%V", "Owner", '"alice"'),
    ("%v", "Missing", "undefined"),
    ("%V", "Tags", '{ "a","b" }'),
    ("%r", "Rank", "RequestCpus + 1"),  # raw: unevaluated
    ("%r", "Missing", "undefined"),
    ("%T", "Elapsed", "  1+02:03:04"),
    ("%d%%", "RequestCpus", "2%"),
    ("id=%d.", "ClusterId", "id=12."),
    ("RequestCpus * 2 = %d", "RequestCpus * 2", "RequestCpus * 2 = 4"),
    ("no conversion\\n", "Owner", "no conversion\n"),
])
def test_conversions(fmt: str, expr: str, want: str) -> None:
    assert cell(fmt, expr) == want


@pytest.mark.parametrize("fmt, expr", [
    ("%d\\n", "Missing"),   # undefined: the column prints nothing, its text and newline included
    ("%d", "Owner"),        # a string is no number
    ("%s", "Missing"),
    ("%s", "RequestCpus + 1"),  # an expression must evaluate to a string for %s
    ("%f", "Tags"),
])
def test_a_value_that_does_not_fit_prints_nothing(fmt: str, expr: str) -> None:
    assert cell(fmt, expr) == ""


def test_attribute_names_are_case_insensitive() -> None:
    assert cell("%s", "owner") == "alice" and cell("%d", "CLUSTERID") == "12"


def test_date_conversion_is_localtime_month_day() -> None:
    t = time.localtime(1_790_000_000)
    assert cell("%Y", "QDate", {"QDate": 1_790_000_000}) == f"{t.tm_mon:2d}/{t.tm_mday:<2d} {t.tm_hour:02d}:{t.tm_min:02d}"


def test_columns_concatenate_without_separators() -> None:
    cols = [PrintfFormat("%d.", "ClusterId"), PrintfFormat("%d ", "ProcId"), PrintfFormat("%s\\n", "Owner"),
            PrintfFormat("%d\\n", "Missing")]
    jobs = [JOB, {**JOB, "ProcId": 4, "Owner": "bob"}]
    assert format_ads(jobs, cols) == "12.3 alice\n12.4 bob\n"


def test_escapes() -> None:
    assert unescape(r"a\tb\n\\n\q") == "a\tb\n\\n\\q"


def test_split_format_takes_pairs_out_of_argv() -> None:
    rest, pairs = split_format(["-af", "A", "-format", "%d\\n", "ClusterId", "12", "-f", "%s", "Owner"])
    assert rest == ["-af", "A", "12"] and pairs == [("%d\\n", "ClusterId"), ("%s", "Owner")]
    # history's -file, -forwards: "-f" is not -format there
    rest, pairs = split_format(["-f", "x", "-fo", "%s", "Owner"], shortest=2)
    assert rest == ["-f", "x"] and pairs == [("%s", "Owner")]
    with pytest.raises(ValueError, match="needs a format and an attribute"):
        split_format(["-format", "%d"])


@pytest.mark.parametrize("flags, want", [
    ("", "alice 2 3"),
    (",", "alice, 2, 3"),     # HTCondor: a comma after each value but the last, the space stays
    ("t", "alice\t2\t3"),
    (",t", "alice,\t2,\t3"),
    ("g", "\nalice23"),       # g: no space between values, a newline before each ad
    ("n", "alice\n 2\n 3"),
    ("V", '"alice" 2 3'),
    ("r", '"alice" 2 RequestCpus + 1'),
    ("l", "Owner = alice RequestCpus = 2 Rank = 3"),
    ("j", "12.3 alice 2 3"),
    ("jl", "ID = 12.3 Owner = alice RequestCpus = 2 Rank = 3"),
])
def test_autoformat_flags(flags: str, want: str) -> None:
    assert AutoFormat(["Owner", "RequestCpus", "Rank"], flags).line(JOB) == want


def test_autoformat_headings_make_aligned_columns() -> None:
    from roost.cli.adtext import ads_text

    jobs = [JOB, {**JOB, "ProcId": 10, "Owner": "bo"}]
    text = ads_text(jobs, json=False, long=False, af=["Owner", "RequestCpus * 2"], af_flags="jh")
    assert text.splitlines() == [" ID   Owner RequestCpus * 2", "12.3  alice 4", "12.10 bo    4"]


def test_autoformat_T_and_Y() -> None:
    assert AutoFormat(["Elapsed"], "T").line(JOB) == "  1+02:03:04"


def test_xml_document_parses_and_types_values() -> None:
    text = xml_text([{"ClusterId": 1, "Owner": "a<b", "Done": False, "Memory": 1.5, "Req": "/Expr(A && B)/",
                      "Tags": ["x", 2], "Gone": None}])
    assert text.startswith('<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n<c>\n')
    root = ET.fromstring(text.split("\n", 2)[2])
    attrs = {a.get("n"): a[0] for a in root.find("c")}  # type: ignore[union-attr]
    assert attrs["ClusterId"].tag == "i" and attrs["ClusterId"].text == "1"
    assert attrs["Owner"].tag == "s" and attrs["Owner"].text == "a<b"
    assert attrs["Done"].tag == "b" and attrs["Done"].get("v") == "f"
    assert attrs["Memory"].tag == "r" and attrs["Memory"].text == "1.500000000000000E+00"
    assert attrs["Req"].tag == "e" and attrs["Req"].text == "A && B"
    assert [e.tag for e in attrs["Tags"]] == ["s", "i"]
    assert attrs["Gone"].tag == "un"
    assert xml_text([]).endswith("<classads>\n</classads>\n")


def test_af_prints_lists_and_records_as_one_line_of_classad_text() -> None:
    # HTCondor unparses them; Python's repr (or a multi-line record) would break line-per-ad parsing
    assert AutoFormat(['split("a b")', "[x = 1; y = \"z\"]"]).line(JOB) == '{ "a","b" } [ x = 1; y = "z" ]'
