"""A submission's job ads in the JSON form of ClassAds, without building ClassAds.

The submit language expands a description into a cluster ad plus per-proc
differences of plain values and ``Expr`` strings. SUBMIT takes them as wire
objects (``wire_cluster``: a dict per proc, so a ``queue 100000`` costs a dict per
proc), and ``roost submit -dry-run`` prints them as ``condor_q -json`` text
(``iter_json``). Both are the JSON form that ``roost.classad.jsonform`` reads and
writes; this module adds only what the submit library's own value types need.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from roost.classad.jsonform import (
    ads_to_json,
    escape_string,
    node_to_json,
    value_to_json,
    value_to_obj,
)
from roost.classad.parser import parse_expr
from roost.submit.jobads import ClusterSubmission, to_classad
from roost.submit.values import AttrValue, Expr


def wire_value(v: Any) -> Any:
    """One submit-library value in the wire form (``/Expr(...)/`` for expressions)."""
    if type(v) is Expr:
        return "/Expr(" + v + ")/"
    return value_to_obj(v)


def wire_ad(ad: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in ad.items():
        t = type(v)
        out[k] = v if (t is int or t is str or t is bool) else wire_value(v)
    return out


def wire_procs(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Most per-proc values are plain ints and strings: keep those dicts as they are.
    out = []
    for d in diffs:
        for v in d.values():
            t = type(v)
            if not (t is int or t is str or t is bool):
                d = wire_ad(d)
                break
        out.append(d)
    return out


def wire_cluster(c: ClusterSubmission) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A cluster's ad and proc differences in the wire form SUBMIT takes."""
    cluster_ad = wire_ad(c.cluster_ad)
    # As in HTCondor's cluster ad: how many procs were submitted (condor_q's DONE column
    # counts the ones that have left the queue from it).
    cluster_ad.setdefault("TotalSubmitProcs", len(c))
    return cluster_ad, wire_procs(c.proc_diffs)


def to_json(ads: list[dict[str, AttrValue]]) -> str:
    """The JSON list ``condor_q -json`` prints."""
    return ads_to_json([to_classad(a) for a in ads])


class _JsonRenderer:
    """Per-attribute JSON text, cached: the cluster part of every proc's ad is
    rendered once, so printing 100,000 procs costs a dict merge and a join each."""

    def __init__(self) -> None:
        self._exprs: dict[str, str] = {}

    def value(self, v: AttrValue) -> str:
        if isinstance(v, Expr):
            got = self._exprs.get(v)
            if got is None:
                got = self._exprs[v] = node_to_json(parse_expr(str(v)))
            return got
        return value_to_json(v)

    def pair(self, k: str, v: AttrValue) -> str:
        return '"' + escape_string(k) + '": ' + self.value(v)


def iter_json(clusters: list[ClusterSubmission]) -> Iterator[str]:
    """The ``condor_q -json`` text of every proc, in pieces (one merged ad per proc).

    Identical to ``to_json`` over ``procs()``, without building 100,000 ClassAds.
    """
    r = _JsonRenderer()
    first = True
    for c in clusters:
        base = {k: r.pair(k, v) for k, v in c.cluster_ad.items()}
        for diff in c.proc_diffs:
            merged = base.copy()
            for k, v in diff.items():
                merged[k] = r.pair(k, v)
            yield ("[\n{\n  " if first else "\n,\n{\n  ") + ",\n  ".join(merged.values()) + "\n}"
            first = False
    if not first:
        yield "\n]\n"


__all__ = ["iter_json", "to_json", "wire_ad", "wire_cluster", "wire_procs", "wire_value"]
