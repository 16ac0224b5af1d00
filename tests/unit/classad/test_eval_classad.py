"""The ClassAd / ExprTree Python API, side by side with classad2."""

from __future__ import annotations

import datetime
import pickle

import htcondor2  # noqa: F401  -- before classad2: HTCondor's default (non-strict) mode

# isort: split
import classad2
import pytest
from eval_harness import norm

import roost.classad as rc

LIBS = [pytest.param(classad2, id="classad2"), pytest.param(rc, id="roost")]


@pytest.mark.parametrize("lib", LIBS)
def test_mapping_protocol(lib) -> None:  # type: ignore[no-untyped-def]
    ad = lib.ClassAd("[a = 1; B = \"x\"; c = a + 1; l = {1, a}; n = [q = 1]]")
    assert len(ad) == 5
    assert "A" in ad and "b" in ad and "zz" not in ad
    assert ad["A"] == 1 and ad["b"] == "x"
    assert isinstance(ad["c"], lib.ExprTree) and str(ad["c"]) == "a + 1"
    assert ad.eval("c") == 2
    items = ad["l"]
    assert items[0] == 1 and isinstance(items[1], lib.ExprTree)
    assert isinstance(ad["n"], lib.ClassAd) and ad["n"]["q"] == 1
    assert sorted(ad.keys()) == ["B", "a", "c", "l", "n"]
    assert ad.get("zz", 7) == 7 and ad.get("a") == 1
    assert ad.setdefault("new", 3) == 3 and ad["new"] == 3
    with pytest.raises(KeyError):
        ad["nosuch"]
    with pytest.raises(KeyError):
        ad.eval("nosuch")
    with pytest.raises(KeyError):
        ad.lookup("nosuch")
    with pytest.raises(KeyError):
        del ad["nosuch"]
    with pytest.raises(TypeError):
        ad[1]  # type: ignore[index]
    with pytest.raises(TypeError):
        ad[1] = 2  # type: ignore[index]
    del ad["NEW"]
    assert "new" not in ad


@pytest.mark.parametrize("lib", LIBS)
def test_assignment_keeps_first_spelling_and_converts_values(lib) -> None:  # type: ignore[no-untyped-def]
    ad = lib.ClassAd("[a = 1; b = 2]")
    ad["A"] = 5
    assert list(ad.keys()) == ["a", "b"] and ad["a"] == 5
    ad["e"] = lib.ExprTree("a * 2")
    assert ad.eval("e") == 10
    ad["d"] = {"q": 1}
    assert isinstance(ad["d"], lib.ClassAd) and ad.eval("d")["q"] == 1
    ad["u"] = None
    assert ad["u"] is lib.Value.Undefined
    ad["t"] = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    assert ad["t"] == datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
    ad.update({"z": 1})
    ad.update(lib.ClassAd("[y = 2; Z = 3; w = y + z]"))
    assert ad["z"] == 3 and ad["y"] == 2 and "Z" not in list(ad.keys())
    assert isinstance(ad["w"], lib.ExprTree) and ad.eval("w") == 5


@pytest.mark.parametrize("lib", LIBS)
def test_constructors_and_errors(lib) -> None:  # type: ignore[no-untyped-def]
    assert len(lib.ClassAd()) == 0
    d = lib.ClassAd({"a": 1, "l": [1, 2], "d": {"q": 1}, "n": None})
    assert d["l"] == [1, 2] and d["n"] is lib.Value.Undefined
    with pytest.raises(TypeError):
        lib.ClassAd(5)
    with pytest.raises(lib.ClassAdException):
        lib.ClassAd("[a = ]")
    with pytest.raises(lib.ClassAdException):
        lib.ClassAd("a = 1")  # the old syntax is not accepted here
    with pytest.raises(lib.ClassAdException):
        lib.ExprTree("a +")
    with pytest.raises(TypeError):
        lib.ExprTree("a").eval(5)
    assert lib.ExprTree(None).eval() is lib.Value.Undefined


def test_syntax_errors_are_also_classad_syntax_errors() -> None:
    with pytest.raises(rc.ClassAdSyntaxError) as info:
        rc.ExprTree("a + ")
    assert info.value.column >= 1


@pytest.mark.parametrize("lib", LIBS)
def test_equality(lib) -> None:  # type: ignore[no-untyped-def]
    assert lib.ExprTree("a + 1") == lib.ExprTree("a  +  1")
    assert lib.ExprTree("(a + 1)") != lib.ExprTree("a + 1")
    assert lib.ExprTree("a + 1") != "a + 1"
    assert lib.ClassAd("[a = 1; b = x]") == lib.ClassAd("[B = x; A = 1]")
    assert lib.ClassAd("[a = 1]") != lib.ClassAd("[a = 2]")
    # names in references and calls keep their case; record attribute names do not
    assert lib.ExprTree("X + 1") != lib.ExprTree("x + 1")
    assert lib.ExprTree("STRCAT(a)") != lib.ExprTree("strcat(a)")
    assert lib.ExprTree("TARGET.x") != lib.ExprTree("target.x")
    assert lib.ExprTree("[A = 1]") == lib.ExprTree("[a = 1]")
    assert lib.ClassAd("[x = A]") != lib.ClassAd("[x = a]")
    assert lib.ExprTree("1.0") != lib.ExprTree("1")
    assert lib.ExprTree('"a"') != lib.ExprTree('"A"')


@pytest.mark.parametrize("lib", LIBS)
def test_matches(lib) -> None:  # type: ignore[no-untyped-def]
    job = lib.ClassAd("[RequestMemory = 2048; Requirements = TARGET.Memory >= RequestMemory]")
    machine = lib.ClassAd("[Memory = 4096; Requirements = TARGET.RequestMemory <= Memory]")
    assert job.matches(machine) and machine.matches(job) and job.symmetricMatch(machine)
    small = lib.ClassAd("[Memory = 1024; Requirements = true]")
    assert small.matches(job) is False and job.symmetricMatch(small) is False
    assert job.matches(lib.ClassAd("[Requirements = 5]")) is True
    assert job.matches(lib.ClassAd("[Requirements = \"x\"]")) is False
    assert job.matches(lib.ClassAd("[Requirements = undefined]")) is False
    assert job.matches(lib.ClassAd("[b = 1]")) is False
    with pytest.raises(TypeError):
        job.matches(5)


def test_printing_forms_match_classad2() -> None:
    texts = ["[a = 1; b = a + 1; l = {1, [x = 1]}; n = [p = {2}; q = [r = 1]]]", "[]"]
    for text in texts:
        assert str(rc.ClassAd(text)) == str(classad2.ClassAd(text))
        assert repr(rc.ClassAd(text)) == repr(classad2.ClassAd(text))
    for text in ["member(1, {1,2})", "{1,{2,3},[q=1]}", "[a=1].a", "x + {1}", "x + 1", "{}"]:
        assert str(rc.ExprTree(text)) == str(classad2.ExprTree(text)), text
        assert repr(rc.ExprTree(text)) == repr(classad2.ExprTree(text)), text


@pytest.mark.parametrize(
    "text",
    ["{1, a, 2 + 3}", "l", "TARGET.l", "{[a = 1], {x}}", "size({1, 2})", "{[a=1],[a=2]}.a",
     "({x, 1} ?: 2)", "undefined ?: {y}", "true ? {z} : 1", "ifThenElse(1, {q}, 2)",
     "[l = {x}].l", "{{x}, 1}[0]", "([q = {x, 2}]).q"],
)
def test_list_results_look_like_classad2s(text: str) -> None:
    """classad2 hands back list elements unevaluated; roost shows the same."""
    scope, target = "[a = 7; l = {1, a}]", "[a = 1; l = {a, 2}]"
    want = norm(classad2.ExprTree(text).eval(classad2.ClassAd(scope), classad2.ClassAd(target)))
    got = norm(rc.ExprTree(text).eval(rc.ClassAd(scope), rc.ClassAd(target)))
    assert got == want


def test_nested_ads_come_back_detached() -> None:
    for lib in (classad2, rc):
        ad = lib.ClassAd("[x = 1; y = [z = x]]")
        assert ad.eval("y").eval("z") is lib.Value.Undefined
        assert lib.ExprTree("y.z").eval(ad) == 1


def test_pickle_and_copy() -> None:
    import copy

    ad = rc.ClassAd("[a = 1; b = a + 1]")
    assert pickle.loads(pickle.dumps(ad)) == ad
    c = copy.copy(ad)
    c["a"] = 2
    assert ad["a"] == 1 and c.eval("b") == 3
    e = rc.ExprTree("a + 1")
    assert pickle.loads(pickle.dumps(e)) == e


def test_lookup_and_unparse() -> None:
    ad = rc.ClassAd("[a = 1; b = a + 1]")
    assert isinstance(ad.lookup("B"), rc.ExprTree)
    assert ad.lookup("b").eval(ad) == 2
    assert ad.unparse() == "[ a = 1; b = a + 1 ]"


def test_simplify() -> None:
    ad = rc.ClassAd("[a = 1; b = a + 1]")
    assert str(rc.ExprTree("b * 2").simplify(ad)) == "4"


AD = '[a = 1; b = a + q; n = [z = 1]; l = {1}; s = "x"]'


@pytest.mark.parametrize(
    "text",
    ["a + x + TARGET.y + MY.b", "b", "n.z + n.w", "TARGET.n.z", "l[0] + foo(bar)", ".a + .zz",
     "ifThenElse(a, c, d)", "MY.b", "[x = 1; y = x + w].y", "strcat(s, t)", "a + a + A", "x"],
)  # fmt: skip
def test_references(text: str) -> None:
    for method in ("externalRefs", "internalRefs"):
        want = getattr(classad2.ClassAd(AD), method)(classad2.ExprTree(text))
        assert getattr(rc.ClassAd(AD), method)(rc.ExprTree(text)) == want, method


@pytest.mark.parametrize(
    "text",
    ["a + x", "b", "b * 2 + x", "x + 1 + 2", "1 + 2 + x", "a + 1 + x", "x && true", "true && x",
     "x || true", "false && x", "ifThenElse(a == 1, x, y)", "a == 1 ? x : y", "x ? a : b", "n.z",
     "n", "l", "l[0]", "TARGET.y + a", "MY.a + x", "strcat(s, x)", 'strcat(s, "y")', "(a + x)",
     "-a", "-x", "a + (x + 2)", "x * 0", "x - a - 1", "x || false", "x && false"],
)  # fmt: skip
def test_flatten(text: str) -> None:
    want = classad2.ClassAd(AD).flatten(classad2.ExprTree(text))
    got = rc.ClassAd(AD).flatten(rc.ExprTree(text))
    assert (type(got).__name__, str(got)) == (type(want).__name__, str(want))


@pytest.mark.parametrize(
    "text", ["1 // comment", "1; b = 2", "1 /* c */ + 2", "a / b", '"a;b"', "1; expression = 2", ""]
)
def test_exprtree_text_is_read_as_classad2_reads_it(text: str) -> None:
    """classad2 parses ``[expression = <text>]``; comments and ``;`` show it."""

    def read(lib) -> str:  # type: ignore[no-untyped-def]
        try:
            return repr(lib.ExprTree(text))
        except Exception:  # both raise their own exception types
            return "raised"

    assert read(rc) == read(classad2)


def test_a_tree_too_deep_to_compile_fails_the_evaluation() -> None:
    """Issue 25: a tree deeper than the parser makes (built in code) is an
    EvaluationFailed, which callers already handle, never a RecursionError."""
    from roost.classad.ast import AttrRef
    from roost.classad.errors import EvaluationFailed
    from roost.classad.evaluate import evaluate

    node = AttrRef("a")
    for _ in range(100_000):
        node = AttrRef("b", base=node)
    with pytest.raises(EvaluationFailed, match="nested too deeply"):
        evaluate(node)
