"""roost's ClassAd library, API-compatible with HTCondor's ``classad2``.

``import roost.classad as classad`` in place of ``import classad2 as classad``.
"""

from __future__ import annotations

from typing import Any

from roost.classad.adstream import ParserType, parseAds, parseNext, parseOne
from roost.classad.classad import ClassAd, ClassAdException, ExprTree
from roost.classad.errors import ClassAdSyntaxError
from roost.classad.values import Value

Parser = ParserType  # classad2 keeps this alias for version 1 of the bindings

__all__ = [
    "ClassAd",
    "ClassAdException",
    "ClassAdSyntaxError",
    "ExprTree",
    "Parser",
    "ParserType",
    "Value",
    "parseAds",
    "parseNext",
    "parseOne",
    "quote",
    "unquote",
]


def __getattr__(name: str) -> Any:
    # quote/unquote live in the unparser, imported on first use.
    if name in ("quote", "unquote"):
        from roost.classad import unparse

        return getattr(unparse, name)
    raise AttributeError(f"module 'roost.classad' has no attribute {name!r}")
