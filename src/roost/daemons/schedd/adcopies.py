"""Cheap copies of a cluster's parsed ClassAd for one job (jobqueue's ``Job.classad``).

Parsing a job's merged ad costs ~20x copying its cluster's parsed ad and setting the
proc's few own values over it; expression trees are immutable, so copies share them.
"""

from __future__ import annotations

from typing import Any

from roost.classad import ClassAd
from roost.net.adwire import obj_to_ad


def small_ad(base: ClassAd, names: frozenset[str], extra: dict[str, Any]) -> ClassAd:
    """A ClassAd of ``base``'s attributes named in ``names`` (lower case; their trees are
    shared, immutable) with ``extra`` set over them."""
    ad = ClassAd.__new__(ClassAd)
    attrs, spelled, lits = base._attrs, base._names, base._lits  # type: ignore[attr-defined]
    ad._attrs = {k: attrs[k] for k in names if k in attrs}  # type: ignore[attr-defined]
    ad._names = {k: spelled[k] for k in ad._attrs}  # type: ignore[attr-defined]
    ad._lits = {k: lits[k] for k in ad._attrs if k in lits}  # type: ignore[attr-defined]
    ad.parent = None
    ad._plain = base._plain  # type: ignore[attr-defined]
    set_values(ad, extra)
    return ad


def set_values(ad: ClassAd, values: dict[str, Any]) -> None:
    """Set wire-form ``values`` on ``ad``: plain values directly, expressions and nested
    ads through their parse."""
    for k, v in values.items():
        t = type(v)
        if t is int or t is float or t is bool or (t is str and not v.startswith("/Expr(")):
            ad[k] = v
        else:
            ad.update(obj_to_ad({k: v}))


def copy_ad(base: ClassAd) -> ClassAd:
    """A shallow copy of a ClassAd. Copies roost.classad's three attribute tables
    directly (expression trees are immutable and shared); falls back to the public
    copy if that representation ever changes."""
    try:
        ad = ClassAd.__new__(ClassAd)
        ad._attrs = base._attrs.copy()  # type: ignore[attr-defined]
        ad._names = base._names.copy()  # type: ignore[attr-defined]
        ad._lits = base._lits.copy()  # type: ignore[attr-defined]
        ad.parent = None
        ad._plain = base._plain  # type: ignore[attr-defined]
        return ad
    except AttributeError:
        return ClassAd(base)
