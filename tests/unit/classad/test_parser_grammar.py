"""Grammar: precedence, associativity, postfix forms, records, lists, calls."""

from __future__ import annotations

import pytest

from roost.classad.ast import (
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
from roost.classad.parser import parse_expr


def A(name: str) -> AttrRef:
    return AttrRef(name)


def B(op: str, left: Node, right: Node) -> BinaryOp:
    return BinaryOp(op, left, right)


a, b, c, d, e = A("a"), A("b"), A("c"), A("d"), A("e")
one, two, three = Literal(1), Literal(2), Literal(3)


@pytest.mark.parametrize(
    "text, tree",
    [
        ("1+2*3", B("+", one, B("*", two, three))),
        ("1*2+3", B("+", B("*", one, two), three)),
        ("a - b - c", B("-", B("-", a, b), c)),  # left associative
        ("a / b * c", B("*", B("/", a, b), c)),
        ("a || b && c", B("||", a, B("&&", b, c))),
        ("a && b || c", B("||", B("&&", a, b), c)),
        ("a | b ^ c & d", B("|", a, B("^", b, B("&", c, d)))),
        ("a == b < c", B("==", a, B("<", b, c))),
        ("a < b << c", B("<", a, B("<<", b, c))),
        ("a << b + c", B("<<", a, B("+", b, c))),
        ("a >>> b >> c", B(">>", B(">>>", a, b), c)),
        ("a =?= b != c", B("!=", B("=?=", a, b), c)),
        ("a && b == c || d", B("||", B("&&", a, B("==", b, c)), d)),
        ("a ? b : c ? d : e", Conditional(a, b, Conditional(c, d, e))),  # right associative
        ("a ? b ? c : d : e", Conditional(a, Conditional(b, c, d), e)),
        ("a || b ? c : d", Conditional(B("||", a, b), c, d)),
        ("(a ? b : c) ? d : e", Conditional(Paren(Conditional(a, b, c)), d, e)),
        ("-a * b", B("*", UnaryOp("-", a), b)),
        ("!a && b", B("&&", UnaryOp("!", a), b)),
        ("- - a", UnaryOp("-", UnaryOp("-", a))),
        ("!~+a", UnaryOp("!", UnaryOp("~", UnaryOp("+", a)))),
        ("-a.b", UnaryOp("-", AttrRef("b", base=a))),
        ("-a[1]", UnaryOp("-", Subscript(a, one))),
        ("(1+2)*3", B("*", Paren(B("+", one, two)), three)),
    ],
)
def test_precedence_and_associativity(text: str, tree: Node) -> None:
    assert parse_expr(text) == tree


@pytest.mark.parametrize(
    "text, tree",
    [
        # elvis lives at postfix level in HTCondor's grammar
        ("a ?: b", Conditional(a, None, b)),
        ("1 + a ?: b", B("+", one, Conditional(a, None, b))),
        ("a ?: b + 1", B("+", Conditional(a, None, b), one)),
        ("-a ?: b", UnaryOp("-", Conditional(a, None, b))),
        ("a ?: b ?: c", Conditional(a, None, Conditional(b, None, c))),
        ("a ?: b[1]", Conditional(a, None, Subscript(b, one))),
        ("a[1] ?: c", Conditional(Subscript(a, one), None, c)),
        ("a ?: b ? c : d", Conditional(Conditional(a, None, b), c, d)),
    ],
)
def test_elvis(text: str, tree: Node) -> None:
    assert parse_expr(text) == tree


def test_postfix_chains() -> None:
    assert parse_expr("MY.x") == AttrRef("x", base=AttrRef("MY"))
    assert parse_expr("TARGET.Memory") == AttrRef("Memory", base=AttrRef("TARGET"))
    assert parse_expr(".a") == AttrRef("a", absolute=True)
    assert parse_expr("a.b.c") == AttrRef("c", base=AttrRef("b", base=a))
    assert parse_expr("a[1][2]") == Subscript(Subscript(a, one), two)
    assert parse_expr("a.b[1].c") == AttrRef("c", base=Subscript(AttrRef("b", base=a), one))
    assert parse_expr("{1,2}[0]") == Subscript(ListExpr((one, two)), Literal(0))
    assert parse_expr("[x=1].x") == AttrRef("x", base=AdExpr((("x", one),)))
    assert parse_expr('"s".a') == AttrRef("a", base=Literal("s"))
    assert parse_expr("1 .a") == AttrRef("a", base=one)
    # HTCondor's lexer reads ".." as one selection token
    assert parse_expr("a..b") == parse_expr("a.b")
    assert parse_expr("..a") == parse_expr(".a")
    assert parse_expr("TARGET..x") == parse_expr("TARGET.x")


def test_calls() -> None:
    assert parse_expr("f()") == FuncCall("f", ())
    assert parse_expr("strcat( \"a\" , \"b\")") == FuncCall("strcat", (Literal("a"), Literal("b")))
    assert parse_expr("f(a;b)") == FuncCall("f", (a, b))  # old-semantics separator
    assert parse_expr("IfThenElse(a, b, c)") == parse_expr("ifthenelse(a,b,c)")
    assert parse_expr("f(g(h(1)))") == FuncCall("f", (FuncCall("g", (FuncCall("h", (one,)),)),))
    assert parse_expr("'my fn'(1)") == FuncCall("my fn", (one,))


def test_lists_and_records() -> None:
    assert parse_expr("{}") == ListExpr(())
    assert parse_expr("{1, {2}, {}}") == ListExpr((one, ListExpr((two,)), ListExpr(())))
    assert parse_expr("[]") == AdExpr(())
    assert parse_expr("[a = 1; b = [c = 2]]") == AdExpr((("a", one), ("b", AdExpr((("c", two),)))))
    assert parse_expr("[a=1;]") == AdExpr((("a", one),))
    assert parse_expr("[a=1;;b=2;;]") == AdExpr((("a", one), ("b", two)))
    assert parse_expr("[;a=1]") == AdExpr((("a", one),))
    assert parse_expr("['a b' = 1]") == AdExpr((("a b", one),))
    # a repeated name keeps its first spelling and place, and takes the last value
    node = parse_expr("[a = 1; b = 2; A = 3]")
    assert node == AdExpr((("a", three), ("b", two)))
    assert node.attrs[0][0] == "a"


@pytest.mark.parametrize(
    "text",
    ["{1,}", "{1;2}", "f(1,)", "f(,)", "[;]", "[a=1,b=2]", "[true = 1]", "[a]", "[a=]", "['' = 1]", "a.true", "x.-1", "a. .b", "..5",
     "a ? b", "a ?", "()", "(", ")", "a b", "a[1", "[a=1", "{1", "f(1", "=", "a = 1", ".", ".1.", "a...b"],
)
def test_grammar_errors(text: str) -> None:
    from roost.classad.errors import ClassAdSyntaxError

    with pytest.raises(ClassAdSyntaxError):
        parse_expr(text)


def test_long_chains_parse_without_recursion() -> None:
    text = " || ".join(f'Name == "host{i}"' for i in range(3000))
    node = parse_expr(text)
    assert type(node) is BinaryOp and node.op == "||"
    depth = 0
    while type(node) is BinaryOp and node.op == "||":
        node = node.left
        depth += 1
    assert depth == 2999


def test_cache_returns_shared_immutable_trees() -> None:
    t1 = parse_expr("RequestMemory * 2 > 100")
    t2 = parse_expr("RequestMemory * 2 > 100")
    assert t1 is t2
    with pytest.raises(AttributeError):
        t1.op = "<"  # type: ignore[misc]
