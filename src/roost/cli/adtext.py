"""Printing ads the way HTCondor's tools do: ``-long``, ``-json``, ``-af``.

Ads arrive as JSON-form dicts (``roost.net.adwire``); plain values print
straight from them, and only expressions or ``-af`` expressions that are not
attribute names pay for building a ClassAd. The ClassAd library is imported
on first use, so listings that need none of this stay fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from roost.cli.advalues import is_expr, to_classad, value_text

_ATTR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class AutoFormat:
    """``-af[:jlhtrV,ngTY] ATTR|EXPR ...``: one line per ad, values separated by spaces.

    Flags as in HTCondor: ``j`` prefix the job id, ``l`` label each value
    (``Name = value``), ``h`` print a heading line, ``t`` a tab before each value
    instead of a space, ``,`` a comma after each value but the last, ``n`` a newline
    after each value but the last, ``g`` no space before values and a newline
    before each ad, ``r`` raw (unevaluated ClassAd text), ``V`` ClassAd text
    (strings quoted), ``T`` seconds as ``D+HH:MM:SS``, ``Y`` a Unix time as a date.
    """

    def __init__(self, exprs: list[str], flags: str = "") -> None:
        self.exprs = exprs
        self.flags = flags
        self.prefix: str = " "  # before each value but the first
        self.suffix: str = ""   # after each value but the last
        self.row: str = ""      # before each ad
        for f in flags:
            if f == ",":
                self.suffix = ","
            elif f == "n":
                self.suffix = "\n"
            elif f == "g":
                self.prefix, self.row = "", "\n"
            elif f == "t":
                self.prefix = "\t"
        self.sep = self.suffix + self.prefix
        self._plain = [bool(_ATTR.match(e)) for e in exprs]
        self._printf = None
        for letter in "rVYT":
            if letter in flags:
                # lazy: %V, %T, %Y of -format (and the ClassAd helpers) only for these flags
                from roost.cli.printf import PrintfFormat

                self._printf = [PrintfFormat("%" + ("r" if letter == "r" else letter), e) for e in exprs]
                break

    def headings(self) -> list[str] | None:
        """``h``: the column headings (`` ID`` for ``j``, then each attribute or expression)."""
        if "h" not in self.flags:
            return None
        return ([" ID"] if "j" in self.flags else []) + self.exprs

    def table(self, objs: list[dict[str, Any]]) -> str:
        """``h``: the headings and the values in columns as wide as their widest cell,
        left-aligned, as HTCondor's tools print ``-af:h`` (no trailing blanks)."""
        rows = [self.headings() or []] + [self.cells(o) for o in objs]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out = []
        for r in rows:
            line = self.sep.join(c.ljust(w) for c, w in zip(r, widths))
            out.append(self.row + line.rstrip() + "\n")
        return "".join(out)

    def _value(self, obj: dict[str, Any], expr: str, plain: bool, ad: list[Any]) -> str:
        if plain:
            # Attribute names are case-insensitive; most requests hit the exact spelling.
            v = obj.get(expr, _MISSING)
            if v is _MISSING:
                low = expr.lower()
                v = next((val for k, val in obj.items() if k.lower() == low), None)
            if not is_expr(v):
                return value_text(v)
        if not ad:
            ad.append(to_classad(obj))
        # lazy: the ClassAd library only for expressions (module docstring)
        from roost.classad import ExprTree

        try:
            result = ExprTree(expr).eval(ad[0])
        except Exception:
            return "error"
        return _eval_text(result)

    def line(self, obj: dict[str, Any]) -> str:
        return self.row + self.sep.join(self.cells(obj))

    def cells(self, obj: dict[str, Any]) -> list[str]:
        ad: list[Any] = []
        if self._printf is not None:
            vals = [f.text(obj, ad) or value_text(None) for f in self._printf]
        else:
            vals = [self._value(obj, e, p, ad) for e, p in zip(self.exprs, self._plain)]
        if "l" in self.flags:
            vals = [f"{e} = {v}" for e, v in zip(self.exprs, vals)]
        if "j" in self.flags:
            job = f"{obj.get('ClusterId')}.{obj.get('ProcId')}"
            vals.insert(0, f"ID = {job}" if "l" in self.flags else job)
        return vals


_MISSING = object()


def _eval_text(result: Any) -> str:
    # lazy: adtext loads the ClassAd library only for expressions (module docstring)
    from roost.classad import Value

    if result is Value.Undefined:
        return "undefined"
    if result is Value.Error:
        return "error"
    if isinstance(result, str):
        return result
    if isinstance(result, bool):
        return "true" if result else "false"
    if isinstance(result, (int, float)):
        return value_text(result)
    # a list or a record: ClassAd text on one line, as HTCondor's -af unparses it
    from roost.classad.unparse import unparse_value  # lazy: as above

    return unparse_value(result)



def long_text(objs: Iterable[dict[str, Any]]) -> str:
    """``-long``: each ad as ``Name = value`` lines, sorted by name, a blank line after each."""
    # lazy: the ClassAd library (~25 ms) only when a view needs it (module docstring)
    from roost.classad.convert import ad_pairs
    from roost.classad.unparse import unparse_old

    out = []
    for obj in objs:
        pairs = sorted(ad_pairs(to_classad(obj)), key=lambda p: p[0].lower())
        out.append(unparse_old(pairs).rstrip("\n") + "\n\n")
    return "".join(out)


def json_text(objs: Iterable[dict[str, Any]]) -> str:
    """``-json``: the ``condor_q -json`` array (nothing at all for no ads)."""
    # lazy: the ClassAd library (~25 ms) only when a view needs it (module docstring)
    from roost.classad.jsonform import ads_to_json

    return ads_to_json(to_classad(o) for o in objs)


def ads_text(ads: list[dict[str, Any]], *, json: bool, long: bool, af: Any, af_flags: str) -> str:
    """The raw-ad views shared by q, status and history: ``-json``, ``-long``, or ``-af`` columns.

    With neither ``-json`` nor ``-af`` (e.g. ``-attributes`` alone) the long form is printed.
    """
    if json:
        return json_text(ads)
    if long or not af:
        return long_text(ads)
    fmt = AutoFormat(af, af_flags)
    if fmt.headings() is not None:
        return fmt.table(ads)
    return "".join(fmt.line(a) + "\n" for a in ads)


def _xml_escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _xml_value(v: Any) -> str:
    t = type(v)
    if t is str:
        if is_expr(v):
            return f"<e>{_xml_escape(v[6:-2])}</e>"
        return f"<s>{_xml_escape(v)}</s>"
    if t is bool:
        return f'<b v="{"t" if v else "f"}"/>'
    if t is int:
        return f"<i>{v}</i>"
    if t is float:
        if v != v:
            return "<r>NaN</r>"
        if v in (float("inf"), float("-inf")):
            return "<r>INF</r>" if v > 0 else "<r>-INF</r>"
        return "<r>0.0</r>" if v == 0 else f"<r>{v:1.15E}</r>"
    if v is None:
        return "<un/>"
    if t is list:
        return "<l>" + "".join(_xml_value(x) for x in v) + "</l>"
    if t is dict:
        return "<c>" + "".join(f'<a n="{_xml_escape(str(k))}">{_xml_value(x)}</a>' for k, x in v.items()) + "</c>"
    return f"<s>{_xml_escape(str(v))}</s>"


def xml_text(objs: Iterable[dict[str, Any]]) -> str:
    """``-xml``: HTCondor's XML ClassAd document (``<classads><c><a n=...>``), one ``<c>`` per ad."""
    out = ['<?xml version="1.0"?>\n<!DOCTYPE classads SYSTEM "classads.dtd">\n<classads>\n']
    for obj in objs:
        out.append("<c>\n")
        for name, v in obj.items():
            out.append(f'    <a n="{_xml_escape(name)}">{_xml_value(v)}</a>\n')
        out.append("</c>\n")
    out.append("</classads>\n")
    return "".join(out)
