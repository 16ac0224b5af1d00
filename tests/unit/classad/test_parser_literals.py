"""Literal forms of the ClassAd language as HTCondor's lexer reads them."""

from __future__ import annotations

import math

import pytest

from roost.classad.ast import AttrRef, BinaryOp, FuncCall, Literal, UnaryOp
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.lexer import tokenize
from roost.classad.parser import parse_expr
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTimeLiteral


@pytest.mark.parametrize(
    "text, value",
    [
        ("0", 0),
        ("7", 7),
        ("1700000000", 1700000000),
        ("9223372036854775807", 9223372036854775807),
        ("-9223372036854775808", -9223372036854775808),
        ("9223372036854775808", 0),  # overflow reads as 0, as in HTCondor
        ("99999999999999999999", 0),
        ("-1", -1),
        ("-0", 0),
        ("-010", -10),  # HTCondor's sign quirk: only unsigned 0-leading ints are rejected
    ],
)
def test_integers(text: str, value: int) -> None:
    node = parse_expr(text)
    assert node == Literal(value)
    assert type(node.value) is int


@pytest.mark.parametrize(
    "text, value",
    [
        ("1.5", 1.5),
        (".5", 0.5),
        ("-.5", -0.5),
        ("1e10", 1e10),
        ("1.5E-3", 1.5e-3),
        ("1e+5", 1e5),
        ("09.5", 9.5),
        ("00.5", 0.5),
        ("0e5", 0.0),
        ("-0.0", -0.0),
        ("1e400", math.inf),
        ("-1e400", -math.inf),
        ("1e-400", 0.0),
    ],
)
def test_reals(text: str, value: float) -> None:
    node = parse_expr(text)
    assert type(node) is Literal and type(node.value) is float
    assert node.value == value
    assert math.copysign(1.0, node.value) == math.copysign(1.0, value)


@pytest.mark.parametrize("text, value", [('real("INF")', math.inf), ('real("-INF")', -math.inf)])
def test_special_reals_are_calls(text: str, value: float) -> None:
    # As in HTCondor (classad2 returns ad["x"] = real("INF") as an expression, not a float).
    from roost.classad import ExprTree

    node = parse_expr(text)
    assert type(node) is FuncCall and node.name == "real"
    assert ExprTree(text).eval() == value


def test_nan_call() -> None:
    from roost.classad import ExprTree

    node = parse_expr('real("NaN")')
    assert type(node) is FuncCall
    assert math.isnan(ExprTree('real("NaN")').eval())


@pytest.mark.parametrize("text", ["010", "08", "0x10", "5.", "1.e5", "1e", "1e+", "1else", "1.a", "a.1"])
def test_bad_numbers(text: str) -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse_expr(text)


@pytest.mark.parametrize(
    "text, value",
    [
        ("true", True), ("TRUE", True), ("False", False),
        ("undefined", UNDEFINED), ("UNDEFINED", UNDEFINED), ("error", ERROR), ("Error", ERROR),
    ],
)
def test_keywords(text: str, value: object) -> None:
    node = parse_expr(text)
    assert type(node) is Literal and node.value is value


@pytest.mark.parametrize(
    "text, value",
    [
        (r'"plain"', "plain"),
        (r'""', ""),
        (r'"a\nb"', "a\nb"),
        (r'"a\tb"', "a\tb"),
        (r'"a\\b"', "a\\b"),
        (r'"a\"b"', 'a"b'),
        (r'"a\'b"', "a'b"),
        (r'"\a\b\f\r\v\?"', "\a\b\f\r\v?"),
        (r'"\101"', "A"),
        (r'"\1234"', "S4"),  # at most three octal digits
        (r'"\777"', "?7"),  # three digits only when the first is 0-3
        (r'"\400"', " 0"),
        (r'"\x41"', "x41"),  # unknown escapes stand for the character
        (r'"\q"', "q"),
        (r'"\303\251"', "é"),  # octal escapes are bytes of UTF-8
        ('"é"', "é"),
        ('"a" "b"', "ab"),  # adjacent literals join
        ('"a"\n  "b"', "ab"),
        ('"\\1" "2"', "\n"),  # joined before escapes are read, as HTCondor does
        ('"semi;colon]"', "semi;colon]"),
        ('"new\nline"', "new\nline"),
    ],
)
def test_strings(text: str, value: str) -> None:
    assert parse_expr(text) == Literal(value)


def test_octal_escape_to_invalid_utf8_round_trips_through_surrogates() -> None:
    node = parse_expr(r'"\377"')
    assert node.value.encode("utf-8", "surrogateescape") == b"\xff"


@pytest.mark.parametrize("text", [r'"a\0b"', r'"\000"', '"abc', '"a\\"', "'abc"])
def test_bad_strings(text: str) -> None:
    with pytest.raises(ClassAdSyntaxError):
        parse_expr(text)


def test_quoted_names() -> None:
    assert parse_expr("'foo bar'") == AttrRef("foo bar")
    assert parse_expr("'a'") == AttrRef("a")
    assert parse_expr("'true'") == AttrRef("true")  # quoted: a name, never a keyword
    assert parse_expr("'a' 'b'") == AttrRef("ab")
    assert parse_expr("''") == AttrRef("")
    assert parse_expr(r"'a\'b'") == AttrRef("a'b")
    assert parse_expr("'a b'.c") == AttrRef("c", base=AttrRef("a b"))


def test_names_compare_case_insensitively_but_keep_spelling() -> None:
    node = parse_expr("RequestMemory")
    assert node == parse_expr("requestmemory")
    assert node.name == "RequestMemory"


def test_negative_literal_versus_minus_operator() -> None:
    assert parse_expr("-1") == Literal(-1)
    assert parse_expr("- 1") == UnaryOp("-", Literal(1))
    assert parse_expr("a -1") == BinaryOp("-", AttrRef("a"), Literal(1))
    assert parse_expr("a - -1") == BinaryOp("-", AttrRef("a"), Literal(-1))
    assert parse_expr("1--1") == BinaryOp("-", Literal(1), Literal(-1))
    assert parse_expr("(1)-1") == BinaryOp("-", parse_expr("(1)"), Literal(1))
    assert parse_expr("x[-1]").index == Literal(-1)
    assert parse_expr("2*-1") == BinaryOp("*", Literal(2), Literal(-1))


def test_is_isnt_are_meta_operators() -> None:
    assert parse_expr("a is b") == BinaryOp("=?=", AttrRef("a"), AttrRef("b"))
    assert parse_expr("a ISNT b") == BinaryOp("=!=", AttrRef("a"), AttrRef("b"))
    assert parse_expr("a=!=b") == BinaryOp("=!=", AttrRef("a"), AttrRef("b"))


def test_comments() -> None:
    assert parse_expr("1 /* c */ + 2") == BinaryOp("+", Literal(1), Literal(2))
    assert parse_expr("1 // c\n+ 2") == BinaryOp("+", Literal(1), Literal(2))
    assert parse_expr("1 // to the end") == Literal(1)
    assert parse_expr("/* a */ 1") == Literal(1)
    with pytest.raises(ClassAdSyntaxError):
        parse_expr("1 /* never closed")
    with pytest.raises(ClassAdSyntaxError):
        parse_expr("1 /*/")


def test_time_calls_with_a_constant_string_become_literals() -> None:
    # as in HTCondor's parser; anything else stays a call
    assert parse_expr('absTime("2020-01-01T00:00:00Z")') == Literal(AbsTime(1577836800, 0))
    assert parse_expr('ABSTIME("2020-06-01T10:00:00+02:00")') == Literal(AbsTime(1590998400, 7200))
    assert parse_expr('relTime("1+00:00:05")') == Literal(RelTimeLiteral(86405))
    assert parse_expr('relTime("90")') == Literal(RelTimeLiteral(90))
    node = parse_expr("relTime(90)")
    assert type(node) is FuncCall and node.lname == "reltime"
    node = parse_expr("absTime(x)")
    assert type(node) is FuncCall
    for bad in ['absTime("garbage")', 'relTime("soon")']:
        with pytest.raises(ClassAdSyntaxError) as info:
            parse_expr(bad)
        assert info.value.column == 9


def test_elvis_token_allows_space_between() -> None:
    assert parse_expr("a ? : b") == parse_expr("a ?: b")


def test_token_offsets() -> None:
    toks = tokenize("a  + 12")
    assert [(k, o) for k, _, o in toks] == [("id", 0), ("+", 3), ("int", 5), ("end", 7)]


def test_old_string_rules() -> None:
    assert tokenize(r'"a\"b"', old=True)[0][1] == 'a"b'
    assert tokenize(r'"C:\temp\"', old=True)[0][1] == "C:\\temp\\"
    assert tokenize(r'"x\ny"', old=True)[0][1] == "x\\ny"
