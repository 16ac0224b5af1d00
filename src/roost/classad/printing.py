"""Whole-ad printing in the forms HTCondor's tools and bindings use.

- :func:`print_old`: ``condor_q -long`` / classad2 ``printOld()``;
- :func:`print_new`: one line of new syntax, classad2 ``repr(ad)``;
- :func:`print_pretty`: the indented new syntax of classad2 ``str(ad)``
  (HTCondor's ``PrettyPrint``: records indented by 4, lists by 3, every
  nested record or list on lines of its own, even inside an expression);
- :func:`print_json`: classad2 ``printJson()``, see :mod:`roost.classad.jsonform`.

Expression text always comes from :mod:`roost.classad.unparse` (the indented
form too: ``str(ExprTree)`` is :func:`roost.classad.unparse.pretty_expr`); this
module only lays whole ads out.
"""

from __future__ import annotations

from typing import Any

from roost.classad.convert import ad_pairs
from roost.classad.jsonform import ad_to_json
from roost.classad.unparse import _PrettyUnparser, unparse_ad, unparse_old


def print_old(ad: Any) -> str:
    """One ``Name = expr`` line per attribute; an empty ad prints as one newline, as in HTCondor."""
    return unparse_old(ad_pairs(ad)) or "\n"


def print_new(ad: Any) -> str:
    """``[ a = 1; b = a + 1 ]``: what classad2's ``repr(ad)`` prints."""
    return unparse_ad(ad_pairs(ad))


def print_json(ad: Any, indent: bool = True) -> str:
    """What classad2's ``printJson()`` prints (no trailing newline)."""
    return ad_to_json(ad, indent)


def print_pretty(ad: Any) -> str:
    """The indented form classad2's ``str(ad)`` prints (starts with a newline, none at the end)."""
    out: list[str] = []
    _PrettyUnparser().pretty_record(ad_pairs(ad), out)
    return "".join(out)
