"""Turning event attributes (name -> expression text) into a roost ClassAd.

Separate from events.py so the ClassAd library is imported only when someone
asks for an ad, never on the log writing or reading path.  The text is parsed
with the old-ad rules because that is how HTCondor writes these lines.
"""

from __future__ import annotations

from typing import Any

from roost.classad.ast import AdExpr
from roost.classad.classad import ClassAd
from roost.classad.parser import parse_old_ad


def attributes_to_classad(attributes: dict[str, str]) -> Any:
    """Build a ``roost.classad`` ClassAd from ordered name -> expression text pairs."""
    pairs = parse_old_ad("\n".join(f"{k} = {v}" for k, v in attributes.items()))
    return ClassAd(AdExpr(tuple(pairs)))
