"""Submitters across schedds: the accounting name, and one user's ads from several schedds.

HTCondor's rule: a submitter, the name the accountant charges and the pie shares
among, is ``user@UID_DOMAIN`` (``AccountingGroup@UID_DOMAIN`` for jobs in an
accounting group: ``group.user``, or ``nice-user.user``), the same user on every
submit host of that ``UID_DOMAIN``. Each schedd advertises a Submitter ad of its own
for the name (told apart by ``ScheddName``; the collector keeps one per pair, see
:func:`ad_key`), and the negotiator asks each schedd for its own requests and sends
each its own matches, yet ranks, shares and charges the name once
(:func:`merge_requests`): alice submitting from two hosts gets one accountant record
and one slice, not two. ``UID_DOMAIN`` defaults to ``$(FULL_HOSTNAME)``, so a
personal pool's names are ``user@host`` as before.

Pure: names and ads in, names and requests out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

R = TypeVar("R")


def submitter_name(owner: str, accounting_group: Any, uid_domain: str) -> str:
    """The accounting name of a job: ``AccountingGroup@UID_DOMAIN`` when it has one
    (a non-empty string), else ``owner@UID_DOMAIN``. Never the submit host's name."""
    base = accounting_group if isinstance(accounting_group, str) and accounting_group else owner
    return f"{base}@{uid_domain}"


def ad_key(ad_type: str, obj: Mapping[str, Any], name: str) -> tuple[str, str, str]:
    """The collector's key of an ad: (type, Name, ScheddName), lower case; ScheddName
    only for Submitter ads (one per submitter and schedd, as HTCondor's collector
    keys them), empty for every other type."""
    t = ad_type.lower()
    schedd = ""
    if t == "submitter":
        v = obj.get("ScheddName")
        if v is None:
            v = next((val for k, val in obj.items() if k.lower() == "scheddname"), None)
        schedd = v.lower() if isinstance(v, str) else ""
    return (t, name.lower(), schedd)


def merge_requests(per_ad: Iterable[tuple[str, Sequence[R]]]) -> tuple[dict[str, list[R]], list[str]]:
    """Each submitter's requests from all the schedds that asked under its name, as one
    list: ``per_ad`` is (Submitter ad Name, that schedd's requests in its order), in the
    order the ads were asked. The lists of one name are interleaved (first of each
    schedd, then second of each, ...) so no schedd of a user waits behind another's
    whole queue; each request still carries its own schedd. Returns (requests by name,
    names in first-seen order), names without requests left out."""
    lists: dict[str, list[Sequence[R]]] = {}
    for name, reqs in per_ad:
        if reqs:
            lists.setdefault(name, []).append(reqs)
    merged: dict[str, list[R]] = {}
    for name, parts in lists.items():
        if len(parts) == 1:
            merged[name] = list(parts[0])
            continue
        out: list[R] = []
        for i in range(max(len(p) for p in parts)):
            out.extend(p[i] for p in parts if i < len(p))
        merged[name] = out
    return merged, list(merged)


__all__ = ["ad_key", "merge_requests", "submitter_name"]
