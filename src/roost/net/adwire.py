"""ClassAds arriving on the wire: a decoded JSON object checked and read as a ClassAd.

The form itself (``condor_q -json``'s, as decoded objects) is written by
:func:`roost.classad.jsonform.ad_to_obj` and read by
:func:`roost.classad.jsonparse.json_to_ad`; this module only turns what a peer
may get wrong into the protocol's BAD_REQUEST, so that handlers can pass wire
input straight in.
"""

from __future__ import annotations

from typing import Any

from roost.classad import ClassAd, ClassAdSyntaxError
from roost.classad.jsonparse import json_to_ad
from roost.net.errors import RequestError


def obj_to_ad(obj: dict[str, Any]) -> ClassAd:
    """A ClassAd from a decoded JSON object; RequestError(BAD_REQUEST) if it is not one
    or an ``/Expr(...)/`` does not parse.

    As in HTCondor's JSON form, a string value that itself reads ``/Expr(...)/``
    comes back as that expression.
    """
    if type(obj) is not dict:
        raise RequestError("BAD_REQUEST", f"a ClassAd must be a JSON object, not {type(obj).__name__}")
    try:
        return json_to_ad(obj)
    except ClassAdSyntaxError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RequestError("BAD_REQUEST", f"bad expression in ClassAd: {first}") from None
    except (TypeError, OverflowError, ValueError) as e:
        raise RequestError("BAD_REQUEST", f"bad ClassAd: {e}") from None
