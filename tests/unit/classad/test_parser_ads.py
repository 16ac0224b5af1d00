"""Whole ads: new format, old format, streams, and the shortcut agreeing with the full parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.classad import parser as P
from roost.classad.ast import AdExpr, AttrRef, BinaryOp, Literal
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import iter_ads, parse_ad, parse_expr, parse_old_ad


def test_parse_ad_basic() -> None:
    pairs = parse_ad('[ a = 1; b = "x"; C = a + 1; ]')
    assert pairs == [
        ("a", Literal(1)),
        ("b", Literal("x")),
        ("C", BinaryOp("+", AttrRef("a"), Literal(1))),
    ]
    assert [n for n, _ in pairs] == ["a", "b", "C"]  # spelling kept


@pytest.mark.parametrize("text", ["[]", "[ ]", " [\n] ", "[;;a=1]", "[a=1;;]"])
def test_parse_ad_empty_and_semicolons(text: str) -> None:
    pairs = parse_ad(text)
    assert pairs in ([], [("a", Literal(1))])


@pytest.mark.parametrize(
    "text",
    ["", "a = 1", "[a = 1", "[;]", "[a = 1, b = 2]", "[1 = 2]", "[a == 1]", "['' = 1]", "x [a = 1]"],
)
def test_parse_ad_rejects(text: str) -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse_ad(text)


@pytest.mark.parametrize("text", ["[a = 1] [b = 2]", "[a = 1] x", "[a = 1][b = 2]", '[a = 1] "open', "[a = 1] ]"])
def test_parse_ad_ignores_text_after_the_record(text: str) -> None:
    # as HTCondor's ClassAd(text) does; iter_ads reads streams of ads
    assert parse_ad(text) == [("a", Literal(1))]


def test_parse_ad_repeated_names_all_reported() -> None:
    assert parse_ad("[a = 1; A = 2]") == [("a", Literal(1)), ("A", Literal(2))]


# Texts that exercise every way out of the shortcut.
TRICKY_ADS = [
    '[ a = "semi;colon"; b = 2 ]',
    '[ a = "x;y;z"; b = "p;q" ]',
    '[ a = "esc\\"aped"; b = 1 ]',
    "[ a = [ b = 1; c = 2 ]; d = 3 ]",
    "[ a = {1, 2}[0]; b = x[1] ]",
    "[ 'odd name' = 1; b = 2 ]",
    "[ a = 1 /* c; */ ; b = 2 ]",
    "[ a = 1 // c; b = 3\n; b = 2 ]",
    "[ a = f(1; 2); b = 2 ]",
    "[ a = 10 / 2; b = 3 ]",
    "[ a = x == y; b = x=?=y ]",
    "[\n  a = 1;\n  b = \"two\"\n]",
    "[a=1;b=2;]",
    '[ a = "it\'s"; b = 1 ]',
    "[ a = 1 ; ; b = 2 ]",
    '[ a = "" ; b = "]" ]',
    "[ a = -1; b = - 1; c = .5; d = 1e3 ]",
    "[ a = true; b = undefined; c = error; d = TRUE ]",
    "[ a = real(\"INF\") ]",
]


@pytest.mark.parametrize("text", TRICKY_ADS)
def test_shortcut_agrees_with_full_parser(text: str) -> None:
    assert parse_ad(text) == P._parse_ad_full(text)
    P._CACHE.clear()
    P._PIECES.clear()
    assert parse_ad(text) == P._parse_ad_full(text)
    assert parse_ad(text) == P._parse_ad_full(text)  # warm caches


_VALUES = st.sampled_from(
    ["1", " 2 ", "-3", "0", "010", "1.5", '"s"', '"a;b"', '"q\\"x"', '"x]"', "true", "a + b", "f(1;2)",
     "[c = 1]", "{1,2}", "a[1]", "'n m'", "x /* ; */", "1 // ;\n", "", " ", "1 2", ";", "==", "\"", "7;",
     '"http://h/p"', '"a//b;c"', "1 // c", "'it''s'", '"it\'s"', "[c = 1; d = 2]", "x[1] + y[2]", "a /* c */ + 1",
     "/* \" */ 1", "]", "[", "{1;2}", "-5", "-0", "0", "-"]
)
_NAMES = st.sampled_from(["a", "B", "Cmd", "'x y'", "true", "1a", "", "_u"])


@settings(max_examples=300)
@given(st.lists(st.tuples(_NAMES, _VALUES), max_size=6), st.sampled_from([";", "; ", " ;", ";;"]),
       st.booleans())
def test_shortcut_agrees_with_full_parser_fuzz(pairs: list[tuple[str, str]], sep: str, trailing: bool) -> None:
    text = "[" + sep.join(f"{n} = {v}" for n, v in pairs) + (sep if trailing else "") + "]"
    try:
        expected = P._parse_ad_full(text)
    except ClassAdSyntaxError:
        with pytest.raises(ClassAdSyntaxError):
            parse_ad(text)
        return
    assert parse_ad(text) == expected
    assert parse_ad(text) == expected


def test_nested_record_value() -> None:
    pairs = parse_ad("[ a = [ b = 1 ] ]")
    assert pairs == [("a", AdExpr((("b", Literal(1)),)))]


# ---------------------------------------------------------------- old format


def test_old_ad() -> None:
    text = 'MyType = "Job"\n# comment\n  \nClusterId = 12\n\tOwner = "bob"\nReq = a && b;\n'
    assert parse_old_ad(text) == [
        ("MyType", Literal("Job")),
        ("ClusterId", Literal(12)),
        ("Owner", Literal("bob")),
        ("Req", parse_expr("a && b")),
    ]


def test_old_ad_string_rules() -> None:
    pairs = parse_old_ad('Env = "PATH=C:\\bin\\new"\nQ = "say \\"hi\\""\nT = "ends\\"\n')
    assert pairs == [
        ("Env", Literal("PATH=C:\\bin\\new")),
        ("Q", Literal('say "hi"')),
        ("T", Literal("ends\\")),
    ]


def test_old_ad_names_are_raw_text_and_crlf() -> None:
    # HTCondor takes whatever precedes the first '=' as the name
    assert parse_old_ad("'a b' = 1\r\nc = 2\r\nMY.C = 3\n") == [
        ("'a b'", Literal(1)), ("c", Literal(2)), ("MY.C", Literal(3))
    ]


def test_old_ad_ignores_text_after_the_value() -> None:
    assert parse_old_ad("a = 1 2\nb = 2; junk\nc = x 010\nd = 1 \"open\n") == [
        ("a", Literal(1)), ("b", Literal(2)), ("c", parse_expr("x")), ("d", Literal(1))
    ]
    assert parse_old_ad("[a = 1]") == [("[a", Literal(1))]


@pytest.mark.parametrize("text", ["a = (1 +\n 2)\n", "a = {1,\n2}", "a 1", "a = ", "= 1", "a == 1", "a = 010",
                                  "a = 1\nb\n", "a = 1\n//c\nb = 2", "a = \"open", "a = 1 +"])
def test_old_ad_rejects(text: str) -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse_old_ad(text)


def test_old_ad_comment_after_value() -> None:
    assert parse_old_ad("a = 1 // c\nb = 2 /* d */") == [("a", Literal(1)), ("b", Literal(2))]


# ---------------------------------------------------------------- streams


def test_iter_ads_new() -> None:
    text = "[a = 1]\n\n[b = [c = 2]] /* c */ [d = \"]\"]\n"
    got = list(iter_ads(text))
    assert [p for p, _ in got] == [
        [("a", Literal(1))],
        [("b", AdExpr((("c", Literal(2)),)))],
        [("d", Literal("]"))],
    ]
    assert [off for _, off in got] == [7, 22, 40]
    assert text[got[-1][1]:].strip() == ""


def test_iter_ads_old() -> None:
    text = "a = 1\nb = 2\n\n  \n\nc = 3\n\n"
    got = list(iter_ads(text))
    assert [p for p, _ in got] == [[("a", Literal(1)), ("b", Literal(2))], [("c", Literal(3))]]
    assert [off for _, off in got] == [13, 24]  # as classad2's parseNext: past the blank line


def test_iter_ads_auto_and_empty() -> None:
    assert list(iter_ads("")) == []
    assert list(iter_ads("  \n ")) == []
    assert [p for p, _ in iter_ads("  [a=1]")] == [[("a", Literal(1))]]
    assert [p for p, _ in iter_ads("/* c */ [a=1]")] == [[("a", Literal(1))]]
    assert [p for p, _ in iter_ads("a=1")] == [[("a", Literal(1))]]
    with pytest.raises(ValueError):
        list(iter_ads("a=1", "xml"))
