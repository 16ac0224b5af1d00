"""Bad input gives ClassAdSyntaxError with a usable position, and nothing else escapes."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import MAX_DEPTH, iter_ads, parse_ad, parse_expr, parse_old_ad
from roost.classad.unparse import unquote


def error_of(fn, text: str) -> ClassAdSyntaxError:  # type: ignore[no-untyped-def]
    with pytest.raises(ClassAdSyntaxError) as info:
        fn(text)
    return info.value


def test_position_and_caret() -> None:
    err = error_of(parse_expr, "a +\n  (b * )")
    assert (err.line, err.column) == (2, 8)
    assert str(err).splitlines() == ["2:8: expected an expression, found ')'", "  (b * )", "       ^"]


def test_unterminated_string_points_at_its_start() -> None:
    err = error_of(parse_expr, 'x == "abc')
    assert (err.line, err.column) == (1, 6)
    assert "unterminated" in err.message


def test_trailing_garbage() -> None:
    err = error_of(parse_expr, "1 2")
    assert err.column == 3


def test_with_file_rebuilds_message() -> None:
    err = error_of(parse_expr, "a +").with_file("job.sub")
    assert err.file == "job.sub"
    assert str(err).startswith("job.sub:1:4: ")


def test_ad_errors_point_into_the_ad() -> None:
    err = error_of(parse_ad, '[\n  a = 1;\n  b = (2;\n]')
    assert err.line == 3


def test_old_ad_errors_point_at_the_line() -> None:
    err = error_of(parse_old_ad, "A = 1\nB = 2 +\nC = 3\n")
    assert (err.line, err.column) == (2, 8)
    err = error_of(parse_old_ad, "A = 1\nnot an attribute\n")
    assert err.line == 2


def test_iter_ads_errors_point_into_the_stream() -> None:
    err = error_of(lambda t: list(iter_ads(t, "new")), "[a = 1]\n[b = ]\n")
    assert (err.line, err.column) == (2, 6)
    err = error_of(lambda t: list(iter_ads(t, "old")), "a = 1\n\nb = 1 +\n")
    assert err.line == 3


@pytest.mark.parametrize("opener, closer", [("(", ")"), ("{", "}"), ("[a=", "]"), ("x[", "]"), ("f(", ")")])
def test_deep_nesting_is_a_clean_error(opener: str, closer: str) -> None:
    ok = opener * 50 + "1" + closer * 50
    parse_expr(ok)
    deep = opener * (MAX_DEPTH + 50) + "1" + closer * (MAX_DEPTH + 50)
    err = error_of(parse_expr, deep)
    assert "nested" in err.message
    very_deep = opener * 100_000
    error_of(parse_expr, very_deep)


def test_deep_ternary_and_unary_chains() -> None:
    error_of(parse_expr, "1?" * 5000 + "1" + ":1" * 5000)
    error_of(parse_expr, "-" * 100_000 + " 1")
    error_of(parse_expr, "a ?: " * 5000 + "b")
    parse_expr("- " * 300 + "1")


@pytest.mark.parametrize("link", [".b", "[0]", ".b[0]"])
def test_long_postfix_chains_are_a_clean_error(link: str) -> None:
    """Issue 25: a.b.b... is built in a loop, but nests a level per link and the
    compiler recursed through 100,000 of them (RecursionError, INTERNAL)."""
    parse_expr("a" + link * 50)
    err = error_of(parse_expr, "a" + link * 100_000)
    assert f"nested more than {MAX_DEPTH} levels deep" in err.message
    err = error_of(parse_expr, "(" * 150 + "a" + link * 100 + ")" * 150)
    assert "nested" in err.message


def test_deep_nesting_in_ads() -> None:
    error_of(parse_ad, "[a = " + "[b = " * 5000 + "1" + "]" * 5001)
    error_of(parse_old_ad, "a = " + "(" * 5000 + "1" + ")" * 5000)


def test_random_bytes_only_raise_syntax_errors() -> None:
    rng = random.Random(1234)
    alphabet = 'abcXYZ019_ .,;:?!~^&|<>=+-*/%()[]{}"\'\\\n\t#@$\x00é'
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for fn in (parse_expr, parse_ad, parse_old_ad):
            try:
                fn(text)
            except ClassAdSyntaxError:
                pass


@settings(max_examples=300)
@given(st.text(max_size=60))
def test_fuzz_any_text(text: str) -> None:
    for fn in (parse_expr, parse_ad, parse_old_ad, unquote, lambda t: list(iter_ads(t))):
        try:
            fn(text)
        except ClassAdSyntaxError:
            pass


_TOKENS = st.sampled_from(
    ["a", "B", "1", "-1", "2.5", '"s"', "'q n'", "true", "undefined", "error", "is", "isnt",
     "+", "-", "*", "/", "%", "<<", ">>", ">>>", "<", "<=", "==", "!=", "=?=", "=!=", "&&", "||",
     "&", "|", "^", "!", "~", "?", ":", "?:", ".", "(", ")", "[", "]", "{", "}", ",", ";", "=",
     "f", " ", "//c\n", "/*c*/"]
)


@settings(max_examples=400)
@given(st.lists(_TOKENS, max_size=25))
def test_fuzz_token_soup(tokens: list[str]) -> None:
    text = " ".join(tokens)
    for fn in (parse_expr, parse_ad, parse_old_ad):
        try:
            fn(text)
        except ClassAdSyntaxError:
            pass
    try:
        parse_ad("[ x = " + text + " ]")
    except ClassAdSyntaxError:
        pass
