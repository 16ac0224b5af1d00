"""``roost submit -dry-run FILE``: the listing condor_submit -dry-run writes.

condor_submit -dry-run sends its job ads to a simulated schedd that prints each
attribute it is given, ``Name=value`` in old ClassAd syntax: for every proc an
empty line, then (proc 0 only) the cluster ad led by ``ClusterId``, then the proc
ad led by ``ProcId`` and ``JobStatus``; and, on stdout, "Dry-Run job(s)", a dot
per proc and "N job(s) dry-run to cluster C." HTCondor walks each ad in its hash
order; roost sorts the attributes by name (case-insensitively), so the listing
is stable. ``-dry-run -json`` keeps roost's ``condor_q -json`` listing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# attributes sent ahead of the others or only in the other ad (HTCondor's forced attributes)
_FIRST = {"clusterid", "procid", "jobstatus"}
_CLUSTER_ONLY = {"jobuniverse", "owner", "jobsetid", "jobsetname"}


def _texts(ad: dict[str, Any]) -> dict[str, str]:
    """Each attribute's value as old ClassAd text."""
    # lazy: the ClassAd library (~30 ms) only for a dry run
    from roost.classad.convert import ad_pairs
    from roost.classad.unparse import unparse_old_expr
    from roost.submit.jobads import to_classad

    return {name: unparse_old_expr(node) for name, node in ad_pairs(to_classad(ad))}


def _sorted(ad: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(ad.items(), key=lambda kv: kv[0].lower())


def iter_listing(clusters: list[Any]) -> Iterator[tuple[str, str]]:
    """(stream, text) pieces in order: ``"ads"`` for the listing, ``"out"`` for stdout's
    progress dots, so one writer can interleave them as condor_submit does."""
    for c in clusters:
        base = _texts(c.cluster_ad)
        varying = c.varying_attributes()
        for proc, diff in enumerate(c.proc_diffs):
            parts = ["\n"]
            mine = _texts(diff)
            if proc == 0:
                # what differs between procs is each proc's own, proc 0's included
                mine = {**{k: v for k, v in base.items() if k in varying}, **mine}
                parts.append(f"ClusterId={c.cluster_id}\n")
                parts += [f"{k}={v}\n" for k, v in _sorted(base) if k.lower() not in _FIRST and k not in mine]
            status = mine.get("JobStatus", base.get("JobStatus", "1"))
            parts.append(f"ProcId={diff.get('ProcId', proc)}\nJobStatus={status}\n")
            parts += [f"{k}={v}\n" for k, v in _sorted(mine)
                      if k.lower() not in _FIRST and k.lower() not in _CLUSTER_ONLY]
            yield "ads", "".join(parts)
            yield "out", "."


def write(clusters: list[Any], out: Any, ads: Any, terse: bool = False) -> None:
    """The whole dry run: ``out`` is stdout, ``ads`` the listing's file (may be ``out``);
    ``terse`` prints only ``C.0 - C.N`` on stdout, as condor_submit -terse."""
    if not terse:
        out.write("Dry-Run job(s)")
    for stream, text in iter_listing(clusters):
        if stream == "ads":
            ads.write(text)
        elif not terse:
            out.write(text)
    if terse:
        out.write("".join(f"{c.cluster_id}.0 - {c.cluster_id}.{len(c) - 1}\n" for c in clusters))
        return
    out.write("\n")
    for c in clusters:
        out.write(f"{len(c)} job(s) dry-run to cluster {c.cluster_id}.\n")
