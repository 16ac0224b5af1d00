"""Submitting: a submit description -> NEW_CLUSTER + SUBMIT, as condor_submit does it.

The submit language (``roost.submit``) expands a description into a cluster
ad plus per-proc differences; here those become wire objects (the
``condor_q -json`` form) without building ClassAds, so a ``queue 100000``
costs a dict per proc.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from roost.submit import ClusterSubmission, Expr, SubmitDescription, parse_submit


def wire_value(v: Any) -> Any:
    """One submit-library value in the wire form (``/Expr(...)/`` for expressions)."""
    if type(v) is Expr:
        return "/Expr(" + v + ")/"
    if type(v) is float and not math.isfinite(v):
        text = "NaN" if math.isnan(v) else ("INF" if v > 0 else "-INF")
        return f'/Expr(real("{text}"))/'
    return v


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


@dataclass
class SubmitResult:
    """What a submit did: the clusters made and how many jobs each holds."""

    clusters: list[tuple[int, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def cluster(self) -> int:
        """The first (usually only) cluster id, as ``htcondor2.SubmitResult.cluster()``."""
        return self.clusters[0][0]

    @property
    def num_procs(self) -> int:
        return sum(n for _, n in self.clusters)

    def job_ids(self) -> list[str]:
        return [f"{c}.{p}" for c, n in self.clusters for p in range(n)]


def file_size(path: str) -> int:
    """A file's size for the submit language (``RequestDisk``, transfer sizes); 0 if unreadable."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def parse_file(
    path: str,
    *,
    overrides: Mapping[str, str] | None = None,
    append: list[str] | None = None,
    cwd: str | None = None,
) -> SubmitDescription:
    """Read and parse a submit file (``-`` for stdin); SubmitError on a bad description."""
    import sys

    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return parse_text(text, file="<stdin>" if path == "-" else path, overrides=overrides,
                      append=append, cwd=cwd)


def parse_text(
    text: str,
    *,
    file: str | None = None,
    overrides: Mapping[str, str] | None = None,
    append: list[str] | None = None,
    cwd: str | None = None,
) -> SubmitDescription:
    return parse_submit(text, file=file, cwd=cwd or os.getcwd(), env=dict(os.environ),
                        overrides=dict(overrides or {}), append=list(append or []), file_size=file_size)


def submit_description(
    call: Callable[..., dict[str, Any]],
    desc: SubmitDescription,
    owner: str,
    qdate: int,
) -> SubmitResult:
    """Reserve cluster ids, expand the description with them, and submit each cluster.

    ``call`` is one connection's ``call``: reservations live as long as it does.
    A description whose queue statements change the executable makes several
    clusters; their ids need not be consecutive, so a cluster that got another id
    than the first expansion assumed is expanded again with the right one.
    """
    first = int(call("NEW_CLUSTER")["cluster"])
    clusters: list[ClusterSubmission] = desc.expand(cluster_id=first, qdate=qdate, owner=owner)
    result = SubmitResult()
    for c in clusters:
        result.warnings += [str(w) for w in c.warnings]
    for i, c in enumerate(clusters):
        cid = first if i == 0 else int(call("NEW_CLUSTER")["cluster"])
        if cid != c.cluster_id:
            c = desc.expand(cluster_id=cid - i, qdate=qdate, owner=owner)[i]
        cluster_ad, procs = wire_cluster(c)
        got = call("SUBMIT", cluster=cid, cluster_ad=cluster_ad, procs=procs)
        result.clusters.append((int(got.get("cluster", cid)), int(got.get("count", len(c)))))
    return result
