"""roost's ClassAd library, API-compatible with HTCondor's ``classad2``.

``import roost.classad as classad`` in place of ``import classad2 as classad``.

The public names are imported on first use (PEP 562 ``__getattr__``), so a
module that needs only one piece (``roost.classad.errors``, the unparser's
``quote``) does not pay for importing the parser, evaluator and functions:
``roost submit`` starts a new process per command.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~2 ms)

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    from roost.classad.adstream import ParserType, parseAds, parseNext, parseOne
    from roost.classad.classad import ClassAd, ClassAdException, ExprTree
    from roost.classad.errors import ClassAdSyntaxError
    from roost.classad.unparse import quote, unquote
    from roost.classad.values import Value

    Parser = ParserType

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

# public name -> (module, attribute); Parser is classad2's alias of ParserType (version 1 bindings)
_LAZY: dict[str, tuple[str, str]] = {
    "ClassAd": ("roost.classad.classad", "ClassAd"),
    "ClassAdException": ("roost.classad.classad", "ClassAdException"),
    "ExprTree": ("roost.classad.classad", "ExprTree"),
    "ClassAdSyntaxError": ("roost.classad.errors", "ClassAdSyntaxError"),
    "Parser": ("roost.classad.adstream", "ParserType"),
    "ParserType": ("roost.classad.adstream", "ParserType"),
    "parseAds": ("roost.classad.adstream", "parseAds"),
    "parseNext": ("roost.classad.adstream", "parseNext"),
    "parseOne": ("roost.classad.adstream", "parseOne"),
    "Value": ("roost.classad.values", "Value"),
    "quote": ("roost.classad.unparse", "quote"),
    "unquote": ("roost.classad.unparse", "unquote"),
}


def __getattr__(name: str) -> object:
    entry = _LAZY.get(name)
    if entry is None:
        raise AttributeError(f"module 'roost.classad' has no attribute {name!r}")
    # lazy: only a public name's first use pays for importlib, not `import roost.classad.errors`
    import importlib

    value = getattr(importlib.import_module(entry[0]), entry[1])
    globals()[name] = value  # later lookups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
