"""Whole-ad printing in the forms HTCondor's tools and bindings use.

- :func:`print_old`: ``condor_q -long`` / classad2 ``printOld()``;
- :func:`print_new`: one line of new syntax, classad2 ``repr(ad)``;
- :func:`print_pretty`: the indented new syntax of classad2 ``str(ad)``
  (HTCondor's ``PrettyPrint``: records indented by 4, lists by 3, every
  nested record or list on lines of its own, even inside an expression);
- :func:`print_json`: classad2 ``printJson()``, see :mod:`roost.classad.jsonform`.

Expression text always comes from :mod:`roost.classad.unparse`; this module
only lays whole ads out.
"""

from __future__ import annotations

from typing import Any

from roost.classad.ast import AdExpr, ListExpr, Node
from roost.classad.convert import ad_pairs
from roost.classad.jsonform import ad_to_json
from roost.classad.unparse import _Unparser, quote_name, unparse_ad, unparse_old


def print_old(ad: Any) -> str:
    """One ``Name = expr`` line per attribute; an empty ad prints as one newline, as in HTCondor."""
    return unparse_old(ad_pairs(ad)) or "\n"


def print_new(ad: Any) -> str:
    """``[ a = 1; b = a + 1 ]``: what classad2's ``repr(ad)`` prints."""
    return unparse_ad(ad_pairs(ad))


def print_json(ad: Any, indent: bool = True) -> str:
    """What classad2's ``printJson()`` prints (no trailing newline)."""
    return ad_to_json(ad, indent)


class _PrettyUnparser(_Unparser):
    """The compact unparser with records and lists laid out on indented lines."""

    __slots__ = ("level",)

    AD_INDENT = 4
    LIST_INDENT = 3

    def __init__(self) -> None:
        super().__init__(False)
        self.level = 0

    def node(self, n: Node, out: list[str]) -> None:
        t = type(n)
        if t is AdExpr:
            self.pretty_record(n.attrs, out)  # type: ignore[attr-defined]
        elif t is ListExpr:
            self.pretty_list(n.items, out)  # type: ignore[attr-defined]
        else:
            super().node(n, out)

    def pretty_record(self, attrs: tuple[tuple[str, Node], ...] | list[tuple[str, Node]], out: list[str]) -> None:
        self.level += self.AD_INDENT
        out.append("\n" + " " * self.level + "[")
        self.level += self.AD_INDENT
        last = len(attrs) - 1
        for i, (name, expr) in enumerate(attrs):
            out.append("\n" + " " * self.level + quote_name(name) + " = ")
            self.node(expr, out)
            if i != last:
                out.append("; ")
        self.level -= self.AD_INDENT
        out.append("\n" + " " * self.level + "]")
        self.level -= self.AD_INDENT

    def pretty_list(self, items: tuple[Node, ...], out: list[str]) -> None:
        self.level += self.LIST_INDENT
        out.append("\n" + " " * self.level + "{")
        self.level += self.LIST_INDENT
        last = len(items) - 1
        for i, item in enumerate(items):
            out.append("\n" + " " * self.level)
            self.node(item, out)
            if i != last:
                out.append(",")
        self.level -= self.LIST_INDENT
        out.append("\n" + " " * self.level + "}")
        self.level -= self.LIST_INDENT


def pretty_expr(node: Node) -> str:
    """One expression in the indented form classad2's ``str(ExprTree)`` prints."""
    out: list[str] = []
    _PrettyUnparser().node(node, out)
    return "".join(out)


def print_pretty(ad: Any) -> str:
    """The indented form classad2's ``str(ad)`` prints (starts with a newline, none at the end)."""
    out: list[str] = []
    _PrettyUnparser().pretty_record(ad_pairs(ad), out)
    return "".join(out)
