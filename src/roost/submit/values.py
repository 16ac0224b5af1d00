"""How roost's submit library holds a job attribute's value.

A value is a Python literal (int, float, bool, str: a ClassAd string) or an
``Expr``: expression text kept as the user wrote it (HTCondor stores
``Requirements``, ``Rank``, ``periodic_*``... as expressions). Plain values keep
the per-proc path free of parsing; ``to_classad_text`` gives the ClassAd form.
"""

from __future__ import annotations

import math


class Expr(str):
    """ClassAd expression text (not a string literal)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Expr({str.__repr__(self)})"


AttrValue = int | float | bool | str | Expr


def to_classad_text(v: AttrValue) -> str:
    """The ClassAd source text of a value."""
    if isinstance(v, Expr):
        return str(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
            return f"{v:.1f}"
        return repr(v)
    # lazy: the unparser imports typing &c. (~7 ms): not at start-up
    from roost.classad.unparse import quote

    return quote(v)
