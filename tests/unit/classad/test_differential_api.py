"""The classad2-compatible Python API: mapping behaviour, conversions, printing, JSON, quoting.

Each case is a small program run against both modules; its result (or the fact
that it raised) must agree.
"""

from __future__ import annotations

import datetime
import io
from collections.abc import Callable
from typing import Any

import pytest
from diff_harness import ad_text_token, assert_same, canon_json, canon_order

AD = '[a = 1; b = a + 1; c = "s"; d = {1, 2.5, "x"}; e = [x = 1; y = x + 1]; f = undefined; g = error; h = true; i = 2.5; j = absTime("2020-01-01T00:00:00Z"); k = relTime(90); Lower = 1]'
PY = {
    "a": 1, "b": [1, "x", 2.5, True], "c": {"x": 1, "y": "z"}, "d": None, "f": 2.5, "g": True, "s": "str",
    "i": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC), "n": [], "m": {},
}  # fmt: skip


def _mutate(lib: Any) -> Any:
    ad = lib.ClassAd(AD)
    ad["new"] = 5
    ad["a"] = "replaced"
    ad["expr"] = lib.ExprTree("a + 1")
    ad["lst"] = [1, [2, 3], {"q": 1}]
    ad["dct"] = {"z": 2.0}
    ad["none"] = None
    ad["und"] = lib.Value.Undefined
    del ad["c"]
    ad.pop("d")
    return ad_text_token(ad), sorted(ad.keys()), ad.eval("expr")


def _lines(text: str) -> list[str]:
    """printOld output, order-insensitive (attribute order is a documented deviation)."""
    return sorted(map(canon_order, text.splitlines()))


def _json(text: str) -> Any:
    """printJson output as data (dicts compare without order); the exact text is checked
    separately for a one-attribute ad, where order cannot differ."""
    return canon_json(text)


PROGRAMS: dict[str, Callable[[Any], Any]] = {
    "keys": lambda lib: sorted(lib.ClassAd(AD).keys()),
    "len": lambda lib: len(lib.ClassAd(AD)),
    "contains": lambda lib: ["a" in (ad := lib.ClassAd(AD)), "A" in ad, "zz" in ad, "lower" in ad],
    "getitem literal": lambda lib: [lib.ClassAd(AD)[k] for k in ("a", "c", "d", "e", "f", "g", "h", "i")],
    "getitem expr is ExprTree": lambda lib: str(lib.ClassAd(AD)["b"]),
    "getitem case-insensitive": lambda lib: lib.ClassAd(AD)["A"],
    "getitem missing": lambda lib: lib.ClassAd(AD)["zz"],
    "get missing": lambda lib: lib.ClassAd(AD).get("zz", 7),
    "lookup": lambda lib: [canon_order(str(lib.ClassAd(AD).lookup(k))) for k in ("a", "b", "d", "e", "j", "k")],
    "lookup missing": lambda lib: lib.ClassAd(AD).lookup("zz"),
    "eval each": lambda lib: [lib.ClassAd(AD).eval(k) for k in "abcdefghijk"],
    "eval missing": lambda lib: lib.ClassAd(AD).eval("zz"),
    "items": lambda lib: sorted((k, str(v)) for k, v in lib.ClassAd(AD).items()),
    "values count": lambda lib: len(list(lib.ClassAd(AD).values())),
    "mutate": _mutate,
    "from dict": lambda lib: ad_text_token(lib.ClassAd(PY)),
    "from dict eval": lambda lib: [lib.ClassAd(PY).eval(k) for k in PY],
    "from empty": lambda lib: ad_text_token(lib.ClassAd()),
    "from dict int wider than 64 bits": lambda lib: lib.ClassAd({"n": 2**70}),
    "setitem int wider than 64 bits": lambda lib: lib.ClassAd().__setitem__("n", -(2**64)),
    "from dict int64 limits": lambda lib: lib.ClassAd({"a": 2**63 - 1, "b": -(2**63)}).printOld(),
    "from bad dict key type": lambda lib: lib.ClassAd({1: 2}),
    "equality": lambda lib: [lib.ClassAd("[a=1]") == lib.ClassAd("[a = 1]"), lib.ClassAd("[a=1]") == lib.ClassAd("[a=2]")],
    "update": lambda lib: ad_text_token((ad := lib.ClassAd(AD), ad.update({"a": 9, "z": "q"}))[0]),
    "setdefault": lambda lib: [(ad := lib.ClassAd(AD)).setdefault("a", 5), ad.setdefault("new", 5), ad["new"]],
    "clear": lambda lib: len((ad := lib.ClassAd(AD), ad.clear())[0]),
    "printOld": lambda lib: _lines(lib.ClassAd(AD).printOld()),
    "printJson": lambda lib: _json(lib.ClassAd(AD).printJson()),
    "printOld from dict": lambda lib: _lines(lib.ClassAd(PY).printOld()),
    "printJson from dict": lambda lib: _json(lib.ClassAd(PY).printJson()),
    "str(ad)": lambda lib: canon_order(str(lib.ClassAd(AD))),
    "str(ad) exact, one attribute": lambda lib: str(lib.ClassAd("[a = {1, [b = 2]}]")),
    "printOld exact, one attribute": lambda lib: lib.ClassAd("[a = {1, [b = 2]}]").printOld(),
    "printJson exact, one attribute": lambda lib: lib.ClassAd("[a = {1, [b = 2.5]}]").printJson(),
    "printJson exact, expression": lambda lib: lib.ClassAd("[a = b + 1]").printJson(),
    "repr(ad)": lambda lib: canon_order(repr(lib.ClassAd(AD))),
    "json round trip": lambda lib: ad_text_token(next(lib.parseAds(lib.ClassAd(AD).printJson(), lib.ParserType.JSON))),
    "old round trip": lambda lib: ad_text_token(next(lib.parseAds(lib.ClassAd(AD).printOld(), lib.ParserType.Old))),
    "new round trip": lambda lib: ad_text_token(lib.ClassAd(str(lib.ClassAd(AD)))),
    "json special strings": lambda lib: lib.ClassAd({"s": 'q"uo\\te\n\t/é\x01'}).printJson(),
    "old special strings": lambda lib: lib.ClassAd({"s": 'q"uo\\te\n\t/é'}).printOld(),
    "expr str": lambda lib: str(lib.ExprTree("a+1")),
    "expr repr": lambda lib: repr(lib.ExprTree("a+1")),
    "expr equality": lambda lib: [lib.ExprTree("a+1") == lib.ExprTree("a + 1"), lib.ExprTree("a") == lib.ExprTree("b")],
    "expr eval no scope": lambda lib: lib.ExprTree("1 + 2").eval(),
    "expr eval scope": lambda lib: lib.ExprTree("b * 2").eval(lib.ClassAd(AD)),
    "expr eval target": lambda lib: lib.ExprTree("TARGET.a + MY.a").eval(lib.ClassAd("[a=1]"), lib.ClassAd("[a=10]")),
    "expr simplify": lambda lib: str(lib.ExprTree("1 + 1").simplify()),
    "externalRefs": lambda lib: sorted(lib.ClassAd(AD).externalRefs(lib.ExprTree("a + x + TARGET.y + MY.b"))),
    "internalRefs": lambda lib: sorted(lib.ClassAd(AD).internalRefs(lib.ExprTree("a + x + TARGET.y + MY.b"))),
    "flatten": lambda lib: str(lib.ClassAd(AD).flatten(lib.ExprTree("a + x"))),
    "quote": lambda lib: [lib.quote(s) for s in ("plain", 'q"', "back\\slash", "nl\n", "tab\t", "é", "")],
    "unquote": lambda lib: [lib.unquote(s) for s in ('"plain"', '"q\\""', '"b\\\\s"', '"\\n"', '"\\101"')],
    "unquote bad": lambda lib: lib.unquote("not quoted"),
    "quote unquote round trip": lambda lib: [lib.unquote(lib.quote(s)) for s in ('a"b\\c', "x\ny", "é")],
    "parseOne": lambda lib: ad_text_token(lib.parseOne("[a = 1; b = 2]")),
    "parseOne old": lambda lib: ad_text_token(lib.parseOne("a = 1\nb = 2\n")),
    "parseAds file object": lambda lib: [ad_text_token(a) for a in lib.parseAds(io.StringIO("[a=1]\n[b=2]"), lib.ParserType.New)],
    "parseAds old file object": lambda lib: [ad_text_token(a) for a in lib.parseAds(io.StringIO("A = 1\n\nB = 2\n"), lib.ParserType.Old)],
    "parseNext": lambda lib: ad_text_token(lib.parseNext("[a = 1]\n[b = 2]")),
    "parseNext old": lambda lib: ad_text_token(lib.parseNext("A = 1\nB = 2\n\nC = 3\n", lib.ParserType.Old)),
    "special reals printOld": lambda lib: _lines(lib.ClassAd({"n": float("nan"), "i": float("inf"), "m": float("-inf")}).printOld()),
    "special reals printJson": lambda lib: _json(lib.ClassAd({"n": float("nan"), "i": float("inf"), "m": float("-inf")}).printJson()),
    "special reals eval": lambda lib: [lib.ClassAd({"n": float("nan"), "i": float("inf")}).eval(k) for k in "ni"],
    "del missing": lambda lib: lib.ClassAd(AD).__delitem__("zz"),
    "pop missing default": lambda lib: lib.ClassAd(AD).pop("zz", 5),
    "pop missing": lambda lib: lib.ClassAd(AD).pop("zz"),
    "get present": lambda lib: str(lib.ClassAd(AD).get("B")),
    "parseAds iter": lambda lib: [ad_text_token(a) for a in lib.parseAds("[a=1]\n[b=2]")],
    "Value members": lambda lib: [lib.Value.Undefined.name, lib.Value.Error.name, int(lib.Value.Undefined), int(lib.Value.Error)],
    "syntax error ad": lambda lib: lib.ClassAd("[a = ]"),
    "syntax error expr": lambda lib: lib.ExprTree("1 +"),
    "matches": lambda lib: lib.ClassAd("[Requirements = TARGET.x > 1]").matches(lib.ClassAd("[x = 2]")),
    "symmetricMatch": lambda lib: lib.ClassAd("[Requirements = TARGET.x > 1; y = 1]").symmetricMatch(
        lib.ClassAd("[x = 2; Requirements = TARGET.y == 1]")),
}  # fmt: skip


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_api(name: str) -> None:
    assert_same(name, PROGRAMS[name])
