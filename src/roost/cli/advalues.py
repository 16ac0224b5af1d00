"""Values of JSON-form ads (``roost.net.adwire``) as HTCondor's tools print them: shared by
``adtext`` (-af, -long, -json, -xml) and ``printf`` (-format), with no ClassAd library
until a value needs it."""

from __future__ import annotations

from typing import Any


def is_expr(v: Any) -> bool:
    return type(v) is str and v.startswith("/Expr(") and v.endswith(")/")


def to_classad(obj: dict[str, Any]) -> Any:
    # lazy: the ClassAd library (~25 ms) only when a view needs an ad (module docstring)
    from roost.net.adwire import obj_to_ad

    return obj_to_ad(obj)


def value_text(v: Any) -> str:
    """A value as ``-af`` prints it: strings bare, reals and the rest as ClassAd text."""
    t = type(v)
    if t is str:
        return v[6:-2] if is_expr(v) else v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if v is None:
        return "undefined"
    if t is float:
        # lazy: the ClassAd library only when a value needs it (module docstring)
        from roost.classad.unparse import format_real_old

        return format_real_old(v)
    # lists and nested ads
    # lazy: the ClassAd library only when a value needs it (module docstring)
    from roost.classad.convert import ad_pairs
    from roost.classad.jsonparse import json_to_ad
    from roost.classad.unparse import unparse

    return unparse(ad_pairs(json_to_ad({"v": v}))[0][1])
