"""Differential harness: run the same ClassAd operation in roost.classad and in
HTCondor's own library (PyPI ``htcondor``: ``classad2``) and compare results.

``htcondor2`` is imported before ``classad2`` on purpose: until it is imported,
classad2 runs in *strict* mode, while every HTCondor daemon and tool runs in
the default (non-strict) mode we must match.

Results are compared as *normalised tokens*, type-aware on purpose:
``True`` != ``1`` != ``1.0``; ``NaN`` == ``NaN``; ``-0.0`` != ``0.0``; lists
element-wise; nested ads attribute-wise (lower-cased names, each attribute
evaluated inside the ad); the two libraries' ``Value.Undefined``/``Value.Error``
(different enum classes) map to one token; any exception maps to a token naming
the operation that raised, since the two libraries' exception classes differ.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from collections.abc import Callable
from typing import Any

# htcondor2 must be imported before classad2: it selects HTCondor's default (non-strict) mode.
import htcondor2  # noqa: F401

# isort: split
import classad2

try:  # roost is being written in parallel; report a missing API as a test failure, not a crash
    import roost.classad as roost_classad

    _ROOST_ERR: str | None = None if hasattr(roost_classad, "ClassAd") else "no ClassAd yet"
except Exception as e:  # pragma: no cover - depends on the state of the tree
    roost_classad = None  # type: ignore[assignment]
    _ROOST_ERR = f"{type(e).__name__}: {e}"

REF = classad2

# A token standing for "this raised"; both libraries raise different classes.
RAISED = ("raised",)
SYNTAX = ("syntax-error",)


def roost() -> Any:
    """The roost.classad module, or an AssertionError saying why it is not usable.

    ``ROOST_DIFF_SELF=1`` puts classad2 on both sides: the tables must then all
    pass, which proves them deterministic and the harness sound.
    """
    if os.environ.get("ROOST_DIFF_SELF") == "1":
        return REF
    if _ROOST_ERR is not None:
        raise AssertionError(f"roost.classad is not importable/complete: {_ROOST_ERR}")
    return roost_classad


def libs() -> tuple[Any, Any]:
    return roost(), REF


def _is_ad(v: Any) -> bool:
    return isinstance(v, REF.ClassAd) or (
        roost_classad is not None
        and hasattr(roost_classad, "ClassAd")
        and isinstance(v, roost_classad.ClassAd)
    )


def _is_expr(v: Any) -> bool:
    return isinstance(v, REF.ExprTree) or (
        roost_classad is not None
        and hasattr(roost_classad, "ExprTree")
        and isinstance(v, roost_classad.ExprTree)
    )


def norm(v: Any, depth: int = 0) -> Any:
    """A hashable, library-independent token for a value returned by either library."""
    if depth > 20:
        return ("too-deep",)
    t = type(v)
    if t is bool:
        return ("bool", v)
    if t is int:
        return ("int", v)
    if t is float:
        if math.isnan(v):
            return ("real", "nan")
        return ("real", repr(v))
    if t is str:
        # string(<record>), strcat(<record>)... embed the record's text: attribute order is a
        # documented deviation, so such strings compare with record attributes sorted
        return ("str", canon_order(v) if "[" in v and " = " in v else v)
    if t is list or t is tuple:
        return ("list", tuple(norm(x, depth + 1) for x in v))
    if t is dict:  # e.g. parsed JSON: compared without order
        return ("dict", tuple(sorted((str(k), norm(x, depth + 1)) for k, x in v.items())))
    if isinstance(v, datetime.datetime):
        return ("abstime", v.isoformat())
    name = getattr(v, "name", None)
    if name in ("Undefined", "Error") and type(v).__name__ == "Value":
        return (name.lower(),)
    if _is_ad(v):
        items = []
        for k in sorted(v.keys(), key=str.lower):
            try:
                items.append((k.lower(), norm(v.eval(k), depth + 1)))
            except Exception as e:
                items.append((k.lower(), ("raised-in-eval", type(e).__name__)))
        return ("ad", tuple(items))
    if _is_expr(v):
        return ("expr", canon_order(str(v)))
    if v is None:
        return ("none",)
    return ("other", t.__name__, repr(v))


def attempt(fn: Callable[[], Any]) -> tuple[Any, Any]:
    """(raw result or exception, token) for one call."""
    try:
        raw = fn()
    except Exception as e:
        return e, RAISED
    try:
        return raw, norm(raw)
    except Exception as e:  # normalising touched something that raised
        return e, ("raised-in-norm", type(e).__name__)


def _fmt(raw: Any) -> str:
    if isinstance(raw, Exception):
        return f"raised {type(raw).__name__}: {str(raw)[:200]}"
    return f"{raw!r} ({type(raw).__name__})"


def same_exception_kind(lib: Any, mine: BaseException, ref: BaseException) -> bool:
    """Would code that catches classad2's exception also catch roost's?

    classad2 raises its own ClassAdException (parse and evaluation failures),
    KeyError, TypeError and ValueError; roost must raise something the same
    ``except`` clause catches. A SystemError is classad2 failing internally
    (e.g. an int wider than 64 bits): any exception will do.
    """
    if type(ref).__name__ == "ClassAdException":
        return isinstance(mine, lib.ClassAdException)
    if isinstance(ref, SystemError):
        return True
    for base in (KeyError, IndexError, TypeError, ValueError, StopIteration):
        if isinstance(ref, base):
            return isinstance(mine, base)
    return type(mine) is type(ref)


def _log(what: str, mine_raw: Any, ref_raw: Any) -> None:
    """``ROOST_DIFF_LOG=path``: append every disagreement as a JSON line (for triage reports)."""
    path = os.environ.get("ROOST_DIFF_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"what": what, "roost": _fmt(mine_raw), "classad2": _fmt(ref_raw)}) + "\n")


def assert_same(what: str, fn: Callable[[Any], Any], *, loose_exceptions: bool = True) -> Any:
    """Run ``fn(lib)`` for both libraries and assert equal tokens.

    Returns the reference token so callers can add their own checks.
    """
    lib = roost()  # outside attempt(): a missing library is a failure, never a "both raised"
    mine_raw, mine = attempt(lambda: fn(lib))
    ref_raw, ref = attempt(lambda: fn(REF))
    if mine == ref == RAISED and not same_exception_kind(lib, mine_raw, ref_raw):
        mine = ("raised", type(mine_raw).__name__, "not catchable as classad2's exception")
    if mine != ref:
        _log(what, mine_raw, ref_raw)
        raise AssertionError(
            f"{what}\n  roost   : {_fmt(mine_raw)}\n  classad2: {_fmt(ref_raw)}"
            f"\n  roost token   : {mine!r}\n  classad2 token: {ref!r}"
        )
    return ref


def _eval(lib: Any, expr: str, my: str | None, target: str | None) -> Any:
    tree = lib.ExprTree(expr)
    scope = lib.ClassAd(my) if my is not None else None
    tgt = lib.ClassAd(target) if target is not None else None
    return tree.eval(scope=scope, target=tgt)


def check_eval(expr: str, my: str | None = None, target: str | None = None) -> Any:
    """Evaluate ``expr`` (optionally in ad ``my`` against ad ``target``) in both libraries."""
    what = f"eval {expr!r}"
    if my is not None:
        what += f"\n  my    = {my}"
    if target is not None:
        what += f"\n  target= {target}"
    return assert_same(what, lambda lib: _eval(lib, expr, my, target))


def check_attr(ad_text: str, attr: str) -> Any:
    """``ClassAd(ad_text).eval(attr)`` in both libraries."""
    return assert_same(f"ClassAd({ad_text!r}).eval({attr!r})", lambda lib: lib.ClassAd(ad_text).eval(attr))


def check_match(job: str, machine: str) -> Any:
    """matches both ways and symmetricMatch, in both libraries."""

    def go(lib: Any) -> Any:
        j, m = lib.ClassAd(job), lib.ClassAd(machine)
        return [j.matches(m), m.matches(j), j.symmetricMatch(m), m.symmetricMatch(j)]

    return assert_same(f"match\n  job    = {job}\n  machine= {machine}", go)


def accepts(lib: Any, text: str, kind: str) -> bool:
    try:
        if kind == "expr":
            lib.ExprTree(text)
        else:
            lib.ClassAd(text)
    except Exception:
        return False
    return True


def check_accept(text: str, kind: str = "expr") -> bool:
    """Both libraries accept, or both reject, ``text`` as an expression (or ad)."""
    return assert_same(f"accept {kind} {text!r}", lambda lib: accepts(lib, text, kind))[1]


def check_unparse(text: str) -> Any:
    """``str(ExprTree(text))`` is identical."""
    return assert_same(f"str(ExprTree({text!r}))", lambda lib: canon_order(str(lib.ExprTree(text))))


def check_all(cases: list[Any], check: Callable[..., Any] = check_eval, limit: int = 40) -> None:
    """Run ``check(*case)`` for every case and fail once with every disagreement listed.

    One assertion per table keeps the suite fast (no per-case pytest overhead)
    and the failure message is the complete disagreement list for that table.
    """
    failures = []
    for case in cases:
        args = case if isinstance(case, tuple) else (case,)
        try:
            check(*args)
        except AssertionError as e:
            failures.append(str(e))
    if failures:
        shown = "\n".join(failures[:limit])
        more = f"\n... and {len(failures) - limit} more" if len(failures) > limit else ""
        raise AssertionError(f"{len(failures)} of {len(cases)} cases disagree:\n{shown}{more}")


def ad_text_token(ad: Any) -> tuple[Any, ...]:
    """An ad as sorted (attribute name as written, unparsed expression text) pairs.

    Sorted: attribute order is a documented deviation (see canon_order).
    """
    return tuple(sorted((k, canon_order(str(ad.lookup(k)))) for k in ad.keys()))


def check_parse_ads(text: str, parser: str | None = None) -> Any:
    """``parseAds(text[, ParserType.<parser>])``: same ads, same attributes, same unparsed text."""

    def go(lib: Any) -> Any:
        args = (text,) if parser is None else (text, getattr(lib.ParserType, parser))
        return [ad_text_token(a) for a in lib.parseAds(*args)]

    return assert_same(f"parseAds({text!r}, {parser})", go)


# --- attribute order ------------------------------------------------------------------------
# HTCondor keeps an ad's attributes in a hash table and prints them in its hash order; roost
# keeps insertion order (a documented deviation, docs/classad.md). Texts are therefore compared
# with every record's attributes sorted.

_SUBSCRIPT_BEFORE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_)]}\"'")


def _skip_quoted(s: str, i: int) -> int:
    q = s[i]
    i += 1
    while i < len(s) and s[i] != q:
        i += 2 if s[i] == "\\" else 1
    return i + 1


def _canon(s: str, i: int, close: str | None) -> tuple[str, int]:
    """Canonicalise from s[i] up to (not including) ``close``; returns (text, index of close)."""
    out: list[str] = []
    while i < len(s):
        c = s[i]
        if close is not None and c == close:
            return "".join(out), i
        if c in "\"'":
            j = _skip_quoted(s, i)
            out.append(s[i:j])
            i = j
        elif c == "[":
            before = "".join(out).rstrip()
            prev = before[-1:]
            word = re.search(r"\w*$", before).group(0).lower()  # type: ignore[union-attr]
            if prev and prev in _SUBSCRIPT_BEFORE and word not in ("is", "isnt"):  # a subscript
                inner, i = _canon(s, i + 1, "]")
                out.append("[" + inner + "]")
            else:
                body, i = _canon_record(s, i + 1)
                out.append(body)
            i += 1
        elif c in "({":
            inner, i = _canon(s, i + 1, ")" if c == "(" else "}")
            out.append(c + inner + s[i : i + 1])
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out), i


def _canon_record(s: str, i: int) -> tuple[str, int]:
    """The record whose body starts at s[i], attributes sorted; returns (text, index of its ']')."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c in "\"'":
            k = _skip_quoted(s, j)
            cur.append(s[j:k])
            j = k
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        if c == ";" and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        j += 1
    items.append("".join(cur))
    parts = sorted(p for p in (canon_order(x).strip() for x in items) if p)
    return "[" + "; ".join(parts) + "]", j


def canon_order(text: str) -> str:
    """``text`` with the attributes of every ``[...]`` record in sorted order."""
    try:
        return _canon(text, 0, None)[0]
    except Exception:  # unbalanced text: compare as written
        return text


def canon_json(text: str) -> Any:
    """printJson output as data, order-insensitive, records inside ``/Expr(...)/`` sorted."""

    def walk(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str) and v.startswith("/Expr("):
            return canon_order(v)
        return v

    return walk(json.loads(text))
