"""unparse: canonical text, and parse(unparse(t)) == t for any tree."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.classad.ast import (
    BINARY_OPS,
    AdExpr,
    AttrRef,
    BinaryOp,
    Conditional,
    FuncCall,
    ListExpr,
    Literal,
    Node,
    Paren,
    Subscript,
    UnaryOp,
)
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.parser import _lit, parse_ad, parse_expr, parse_old_ad
from roost.classad.unparse import (
    format_real,
    quote,
    unparse,
    unparse_ad,
    unparse_old,
    unparse_value,
    unquote,
)
from roost.classad.values import ERROR, UNDEFINED, AbsTime, RelTime, RelTimeLiteral


@pytest.mark.parametrize(
    "text, canonical",
    [
        ("1+2*3", "1 + 2 * 3"),
        ("a+(b*2)-1", "a + (b * 2) - 1"),
        ("{1,2}", "{ 1,2 }"),
        ("{}", "{  }"),
        ("[a=1;b=a]", "[ a = 1; b = a ]"),
        ("[]", "[  ]"),
        ("1.0", "1.000000000000000E+00"),
        ("1e30", "1.000000000000000E+30"),
        ("0.1", "1.000000000000000E-01"),
        ("-0.0", "-0.0"),
        ("0.0", "0.0"),
        ("1e400", 'real("INF")'),
        ('-real("INF")', ' -real("INF")'),
        ('real("NaN")', 'real("NaN")'),
        ("MY.a", "MY.a"),
        (".a", ".a"),
        ("x[1]", "x[1]"),
        ("a ?: b", "a ?: b"),
        ("a?b:c", "a ? b : c"),
        ("ERROR", "error"),
        ("Undefined", "undefined"),
        ("TRUE", "true"),
        ("a =?= b", "a is b"),
        ("a =!= b", "a isnt b"),
        ("!a", " !a"),
        ("-a", " -a"),
        ("~1", " ~1"),
        ("-1", "-1"),
        ("strcat( \"a\" , \"b\")", 'strcat("a","b")'),
        ('"a\\nb"', '"a\\nb"'),
        ('"é"', '"\\303\\251"'),
        ("'a b'.c", "'a b'.c"),
        ("PARENT.x", "'PARENT'.x"),
        ("'true'", "'true'"),
        ("'a\\'b'", "'a\\'b'"),
        ("'a\"b'", "'a\"b'"),
        ("f(a;b)", "f(a,b)"),
    ],
)
def test_canonical_text(text: str, canonical: str) -> None:
    assert unparse(parse_expr(text)) == canonical


def test_deliberate_differences_still_round_trip() -> None:
    # HTCondor prints " -1" here, which would read back as the literal -1
    node = parse_expr("- 1")
    assert unparse(node) == " - 1"
    assert parse_expr(unparse(node)) == node
    # 0.1 + 0.2 needs 17 digits to survive
    x = 0.1 + 0.2
    assert float(format_real(x)) == x
    assert format_real(0.5) == "5.000000000000000E-01"


def test_hand_built_trees_get_needed_parentheses() -> None:
    a, b, c = AttrRef("a"), AttrRef("b"), AttrRef("c")
    t = BinaryOp("*", BinaryOp("+", a, b), c)
    assert unparse(t) == "(a + b) * c"
    t = BinaryOp("-", a, BinaryOp("-", b, c))
    assert unparse(t) == "a - (b - c)"
    t = UnaryOp("-", BinaryOp("+", a, b))
    assert unparse(t) == " -(a + b)"
    t = Subscript(Conditional(a, None, b), Literal(1))
    assert unparse(t) == "(a ?: b)[1]"
    t = AttrRef("x", base=Literal(1))
    assert parse_expr(unparse(t)) == t


def test_long_chains_unparse_iteratively() -> None:
    text = " || ".join(f"x == {i}" for i in range(5000))
    assert unparse(parse_expr(text)) == text


def test_unparse_ad_and_old() -> None:
    pairs = parse_ad('[ a = 1; b = "x\\ny"; c = {1, [d = 2.5]}; e = x is y; \'f g\' = 1.5 ]')
    assert unparse_ad(pairs) == (
        '[ a = 1; b = "x\\ny"; c = { 1,[ d = 2.500000000000000E+00 ] }; e = x is y; \'f g\' = 1.500000000000000E+00 ]'
    )
    assert unparse_old(pairs) == (
        'a = 1\nb = "x\ny"\nc = { 1,[ d = 2.5 ] }\ne = x =?= y\n\'f g\' = 1.5\n'
    )
    assert unparse_ad([]) == "[  ]"
    assert unparse_old([]) == ""


def test_old_form_reads_back() -> None:
    pairs = parse_ad('[ Env = "C:\\\\bin"; Q = "say \\"hi\\""; R = 100.0; S = 1e-7 ]')
    assert parse_old_ad(unparse_old(pairs)) == pairs


def test_unparse_value() -> None:
    assert unparse_value(5) == "5"
    assert unparse_value(True) == "true"
    assert unparse_value(2.5) == "2.500000000000000E+00"
    assert unparse_value("a\"b") == '"a\\"b"'
    assert unparse_value(UNDEFINED) == "undefined"
    assert unparse_value(ERROR) == "error"
    assert unparse_value([1, "a", [2.0], []]) == '{ 1,"a",{ 2.000000000000000E+00 },{  } }'
    assert unparse_value(AbsTime(1577836800, 0)) == 'absTime("2020-01-01T00:00:00-00:00")'
    assert unparse_value(AbsTime(1577836800, 3600)) == 'absTime("2020-01-01T01:00:00+01:00")'
    assert unparse_value(AbsTime(1577836800, -5 * 3600)) == 'absTime("2019-12-31T19:00:00-05:00")'
    assert unparse_value(RelTime(90061)) == 'relTime("1+01:01:01")'
    assert unparse_value(RelTime(65)) == 'relTime("01:05")'
    assert unparse_value(RelTime(5)) == 'relTime("05")'
    # a run-time relative time prints whole seconds (classad2: flatten of relTime(-3661.5) + v);
    # a parsed relTime("...") literal keeps the fraction
    assert unparse_value(RelTime(-3661.5)) == 'relTime("-01:01:01")'
    assert unparse_value(RelTimeLiteral(-3661.5)) == 'relTime("-01:01:1.5")'

    class FakeAd:
        def unparse(self) -> str:
            return "[ x = 1 ]"

    assert unparse_value([FakeAd()]) == "{ [ x = 1 ] }"


def test_quote_unquote() -> None:
    for s in ["", "plain", 'a"b', "a\\b", "tab\there", "é", "\x01", "it's", "new\nline"]:
        assert unquote(quote(s)) == s
    assert quote('a"b') == '"a\\"b"'
    assert unquote('"a" "b"') == "ab"
    for bad in ["abc", '"abc', '"a" + 1', "", "'a'", '"\\0"']:
        with pytest.raises(ClassAdSyntaxError):
            unquote(bad)


def test_fast_literal_matches_literal() -> None:
    for v in [0, 5, "x", ""]:
        fast = _lit(v)
        assert fast == Literal(v)
        assert type(fast) is Literal and fast._compiled is None
        with pytest.raises(AttributeError):
            fast.value = 1  # type: ignore[misc]


# ---------------------------------------------------------------- property: round trip

# NUL cannot be inside a ClassAd string (HTCondor's strings are C strings);
# lone surrogates stand for undecodable bytes and are covered separately.
_CHARS = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))
_names = st.one_of(
    st.sampled_from(["a", "B", "MY", "TARGET", "x1", "_y", "Parent", "true", "is", "error"]),
    st.text(alphabet=_CHARS, min_size=0, max_size=6),
)
_literals = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=_CHARS, max_size=8),
    st.booleans(),
    st.sampled_from([UNDEFINED, ERROR]),
    st.builds(AbsTime, st.integers(0, 4_000_000_000), st.integers(-14 * 60, 14 * 60).map(lambda m: m * 60)),
    st.builds(RelTime, st.integers(-(10**9), 10**9).map(lambda s: s / 4)),
).map(Literal)


def _extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.one_of(
        st.builds(BinaryOp, st.sampled_from(BINARY_OPS), children, children),
        st.builds(UnaryOp, st.sampled_from(["-", "+", "!", "~"]), children),
        st.builds(Conditional, children, st.one_of(st.none(), children), children),
        st.builds(Paren, children),
        st.builds(Subscript, children, children),
        st.builds(lambda n, b: AttrRef(n, base=b), _names, children),
        st.builds(FuncCall, st.sampled_from(["f", "strcat", "ifThenElse", "size"]),
                  st.lists(children, max_size=3).map(tuple)),
        st.builds(ListExpr, st.lists(children, max_size=3).map(tuple)),
        st.builds(AdExpr, st.lists(st.tuples(st.sampled_from(["a", "b", "c d"]), children), max_size=3,
                                   unique_by=lambda p: p[0]).map(tuple)),
    )


_trees = st.recursive(
    st.one_of(_literals, _names.map(AttrRef), _names.map(lambda n: AttrRef(n, absolute=True))),
    _extend,
    max_leaves=12,
)


@settings(max_examples=300)
@given(_trees)
def test_round_trip_any_tree(tree: Node) -> None:
    text = unparse(tree)
    again = parse_expr(text)
    if not _structurally_same(again, tree):
        # hand-built trees may gain parentheses; the meaning must not change
        assert _strip_parens(again) == _strip_parens(tree), text
    assert unparse(again) == text or parse_expr(unparse(again)) == again


def _structurally_same(a: Node, b: Node) -> bool:
    return a == b


_SPECIAL_REALS = {"INF": math.inf, "-INF": -math.inf, "NaN": math.nan}


def _strip_parens(n: object) -> object:
    if isinstance(n, Paren):
        return _strip_parens(n.expr)
    if (
        isinstance(n, FuncCall)
        and n.name == "real"
        and len(n.args) == 1
        and isinstance(n.args[0], Literal)
        and n.args[0].value in _SPECIAL_REALS
    ):
        # an infinite/NaN real literal prints as real("INF"), which reads back as that
        # call (as in HTCondor, see test_parser_literals.test_special_reals_are_calls)
        return _strip_parens(Literal(_SPECIAL_REALS[n.args[0].value]))
    if isinstance(n, Literal):
        v = n.value
        if isinstance(v, RelTime):
            # a relative time prints as relTime("..."), which reads back as the parser's
            # relTime literal (RelTimeLiteral; HTCondor then evaluates it as a real)
            # (a run-time one prints whole seconds, as in HTCondor)
            return ("lit", "RelTime", math.trunc(v.secs))
        return ("lit", type(v).__name__, "nan" if isinstance(v, float) and math.isnan(v) else v)
    if isinstance(n, Node):
        return (type(n).__name__,) + tuple(_strip_parens(getattr(n, f)) for f in n._fields)
    if isinstance(n, tuple):
        return tuple(_strip_parens(x) for x in n)
    return n


_EXPR_TEXTS = st.recursive(
    st.sampled_from(["a", "1", "-1", "2.5", '"s"', "true", "undefined", "'q n'", ".x", "MY.y", "-0.0", "1e400"]),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", "-", "*", " / ", "%", "<<", ">>>", "<", "==", "is",
                                          " isnt ", "=?=", "&&", "||", "&", "|", "^"]), inner).map(
            lambda t: f"{t[0]} {t[1]} {t[2]}"),
        inner.map(lambda s: f"({s})"),
        inner.map(lambda s: f"- {s}"),
        inner.map(lambda s: f"!{s}"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} ? {t[1]} : {t[2]}"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]} ?: {t[1]}"),
        st.tuples(inner, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.lists(inner, max_size=2).map(lambda xs: "{" + ", ".join(xs) + "}"),
        st.lists(inner, max_size=2).map(lambda xs: "f(" + ", ".join(xs) + ")"),
        st.lists(inner, max_size=2).map(lambda xs: "[" + "; ".join(f"v{i} = {x}" for i, x in enumerate(xs)) + "]"),
    ),
    max_leaves=8,
)


@settings(max_examples=300)
@given(_EXPR_TEXTS)
def test_round_trip_parsed_text(text: str) -> None:
    try:
        tree = parse_expr(text)
    except ClassAdSyntaxError:
        return
    out = unparse(tree)
    again = parse_expr(out)
    if again != tree:
        # only where an infinite/NaN literal (1e400) came back as real("INF"), as in HTCondor
        assert 'real("' in out and _strip_parens(again) == _strip_parens(tree), out
    assert unparse(again) == out


def test_lone_surrogates_do_not_crash() -> None:
    node = parse_expr('"a\\n\ud800"')
    assert unparse(node) == '"a\\n\\355\\240\\200"'
    assert quote("\udcff") == '"\\377"'  # an undecodable byte goes back out as that byte
    assert parse_expr(quote("\udcff")) == Literal("\udcff")
