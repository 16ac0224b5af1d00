"""What a glide-in's token may do to the collector's ads (pure).

``roost annex`` gives its glide-ins a token limited to ADVERTISE_STARTD and READ: enough
to advertise slots and be claimed, nothing else. ADVERTISE_STARTD alone is not tied to
one machine (HTCondor's is not either), so without more a stolen glide-in token could
replace or withdraw any of the pool's own Machine ads for as long as it lives. The
collector therefore holds such a token to glide-in ads: what it sends must say
``IsGlidein = True`` with an ``AnnexName``, and what it replaces, refreshes or withdraws
must be a glide-in ad of the same annex. A token ``roost annex`` made names its annex
(``roost_annex``): its holder may advertise, replace and withdraw that annex's ads
only, so a token stolen from one annex's glide-ins cannot pose as another's; a
startd-only token naming no annex (made by hand) may take a new annex name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

#: levels that make a token more than a startd's: its holder is a daemon or an admin
_BEYOND_STARTD = frozenset({"DAEMON", "ADMINISTRATOR", "ADVERTISE_SCHEDD", "ADVERTISE_MASTER", "NEGOTIATOR",
                            "CONFIG", "OWNER", "WRITE"})


def startd_only(scopes: Iterable[str]) -> bool:
    """A token limited to advertising a startd (and reading): a glide-in's. An unlimited
    token (no scopes) or one with any daemon or admin level is not."""
    levels = {s.upper() for s in scopes}
    return "ADVERTISE_STARTD" in levels and not levels & _BEYOND_STARTD


def _get(ad: Mapping[str, Any], attr: str) -> Any:
    if attr in ad:
        return ad[attr]
    low = attr.lower()
    return next((v for k, v in ad.items() if k.lower() == low), None)


def annex_of(ad: Mapping[str, Any] | None) -> str | None:
    """The annex a glide-in ad belongs to; None for an ad that is not a glide-in's."""
    if ad is None or _get(ad, "IsGlidein") is not True:
        return None
    name = _get(ad, "AnnexName")
    return name if isinstance(name, str) and name else None


def update_refusal(ad_type: str, new: Mapping[str, Any], old: Mapping[str, Any] | None,
                   token_annex: str = "") -> str | None:
    """Why a startd-only token (of ``token_annex`` when it names one) may not put
    ``new`` in place of ``old`` (None: it may)."""
    if ad_type.lower() != "machine":
        return f"a glide-in's token advertises Machine ads only, not {ad_type}"
    annex = annex_of(new)
    if annex is None:
        return "a glide-in's token advertises only ads with IsGlidein = True and an AnnexName"
    if token_annex and annex != token_annex:
        return f"the token is for annex {token_annex!r}, not {annex!r}"
    return replace_refusal(old, annex)


def replace_refusal(old: Mapping[str, Any] | None, annex: str | None, token_annex: str = "") -> str | None:
    """Why a startd-only token of ``annex`` (the token's own ``token_annex`` when it
    names one) may not change or withdraw ``old``."""
    if old is None:
        return None
    annex = token_annex or annex
    mine = annex_of(old)
    if mine is None:
        return "a glide-in's token cannot change or withdraw an ad that is not a glide-in's"
    if annex is not None and mine != annex:
        return f"the ad belongs to annex {mine!r}, not {annex!r}"
    return None
