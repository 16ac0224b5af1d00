"""Loading the job queue at start-up (``JobQueue.load``): the store's clusters and
procs rows made into Clusters and Jobs, counted and indexed.

Split out of jobqueue.py (which keeps what changes a running queue): a sparse cluster
whose procs are untouched since submit stays ranges (``Plain``) until something looks
at them, so a restart with a million idle jobs builds none of them.
"""

from __future__ import annotations

import json
from itertools import repeat
from typing import TYPE_CHECKING, Any

from roost.core.jobpolicy import IDLE
from roost.daemons.schedd.plainprocs import Plain
from roost.daemons.schedd.queuejobs import _PLAIN_STATUSES, GONE, Cluster, Job, _add_plain

if TYPE_CHECKING:
    from roost.daemons.schedd.jobqueue import JobQueue


def load_into(q: JobQueue) -> None:
    """Read the whole queue from ``q``'s store into it (at start-up): clusters, their
    procs (sparse ones as ranges where they can stay so), counts and indexes."""
    q._idle = None  # made when first asked for (``idle``)
    q.next_cluster = int(q.store.meta("next_cluster", "1") or 1)
    submitted: dict[int, Any] = {}  # {ProcId: diff}, or a shaped cluster's {"values": [...]}
    layouts: dict[int, list[list[int]]] = {}
    loads = json.loads
    for cid, owner, ad_text, procs_text, layout_text in q.store.load_clusters():
        layout = loads(layout_text) if layout_text else None
        gjid = layout.get("gjid") if layout else None
        shape = layout.get("shape") if layout else None
        cluster = Cluster(cid, owner, loads(ad_text), tuple(gjid) if gjid else None, layout is not None,
                          tuple((k, tuple(t) if t else None) for k, t in shape) if shape else None)
        q.clusters[cid] = cluster
        if layout is not None:
            layouts[cid] = layout.get("ranges") or []
            if "shape_from" in layout:
                q._shape_from[cid] = int(layout["shape_from"])
        if procs_text and procs_text != "{}":
            submitted[cid] = loads(procs_text)
        q.next_cluster = max(q.next_cluster, cid + 1)
    for cid, n in q.store.history_counts():
        cluster = q.clusters.get(cid)
        if cluster is not None:
            cluster.finished = n
    changed: dict[int, dict[int, tuple[int, str | None, str | None]]] = {}
    for cid, proc, status, diff_text, claim_text in q.store.load_procs():
        cluster = q.clusters.get(cid)
        if cluster is None:
            continue
        if cluster.sparse:
            changed.setdefault(cid, {})[proc] = (status, diff_text, claim_text)
            continue
        if diff_text is not None:  # changed since submit: the row holds the whole diff
            diff = loads(diff_text) or None
        else:
            sub = submitted.get(cid)
            diff = sub.get(str(proc)) if sub else None
        job = Job(cluster, proc, status, diff)
        if claim_text:
            job.claim = loads(claim_text)
        cluster.procs[proc] = job
    gone: dict[int, list[tuple[int, int]]] = {}  # sparse clusters' procs gone by range (queuefinish.py)
    for cid, lo, hi in q.store.load_gone():
        gone.setdefault(cid, []).append((lo, hi))
    uniform: dict[int, int] = {}  # clusters whose procs all have the cluster's status
    for cid, ranges in layouts.items():
        cluster = q.clusters[cid]
        if Plain.fits(ranges) and cluster.ad.get("JobStatus", IDLE) in _PLAIN_STATUSES:
            _keep_plain(q, cluster, ranges, submitted.get(cid) or {}, changed.get(cid) or {}, gone.get(cid))
            continue
        rows = changed.get(cid) or {}
        if cid in gone:  # a proc in a gone range is gone, whatever its row says
            rows = {**rows, **{p: (GONE, None, None) for lo, hi in gone[cid] for p in range(lo, hi)}}
        _build_sparse(q, cluster, ranges, submitted.get(cid) or {}, rows)
        if not rows:
            uniform[cid] = cluster.ad.get("JobStatus", IDLE)
    for cluster in q.clusters.values():
        q._index(cluster, uniform.get(cluster.id))


def _keep_plain(q: JobQueue, cluster: Cluster, ranges: list[list[int]], sub: Any,
                changed: dict[int, tuple[int, str | None, str | None]],
                gone: list[tuple[int, int]] | None) -> None:
    """A sparse cluster's procs as ranges (plainprocs.py), less its ``gone`` ranges:
    only those with a procs row (changed since submit, or gone) are looked at now, the
    rest when touched."""
    status = cluster.ad.get("JobStatus", IDLE)
    shaped = cluster.shape is not None
    first = q._shape_from.pop(cluster.id, ranges[0][0] if ranges else 0)
    plain = Plain([(lo, hi) for lo, hi in ranges], status, shaped=shaped,
                  owns=sub.get("values") if shaped and sub else None, sub=None if shaped else sub, first=first,
                  gone=gone)
    loads = json.loads
    procs = cluster._procs
    for proc, (st, diff_text, claim_text) in changed.items():
        if not plain.covers(proc):
            continue  # (a row of a proc never submitted, or in a gone range: left out)
        own = plain.own(proc)
        plain.take(proc)
        if st == GONE:
            continue
        job = procs[proc] = Job(cluster, proc, st, (loads(diff_text) or None) if diff_text is not None else own)
        if claim_text:
            job.claim = loads(claim_text)
    cluster._plain = plain


def _build_sparse(q: JobQueue, cluster: Cluster, ranges: list[list[int]], sub: Any,
                  changed: dict[int, tuple[int, str | None, str | None]]) -> None:
    """A sparse cluster's procs: its submitted ids, less those gone, with their changes."""
    if cluster.shape is not None:
        first = q._shape_from.pop(cluster.id, ranges[0][0] if ranges else 0)
        _build_shaped(q, cluster, ranges, sub.get("values") if sub else None, changed, first)
        return
    procs = cluster.procs
    status = cluster.ad.get("JobStatus", IDLE)
    loads = json.loads
    for lo, hi in ranges:
        if not sub and not changed:  # the usual million: one status, no differences
            _add_plain(cluster, lo, hi, status)
            continue
        for proc in range(lo, hi):
            row = changed.get(proc)
            if row is None:
                procs[proc] = Job(cluster, proc, status, sub.get(str(proc)) if sub else None)
                continue
            st, diff_text, claim_text = row
            if st == GONE:
                continue
            diff = (loads(diff_text) or None) if diff_text is not None else sub.get(str(proc))
            job = procs[proc] = Job(cluster, proc, st, diff)
            if claim_text:
                job.claim = loads(claim_text)


def _build_shaped(q: JobQueue, cluster: Cluster, ranges: list[list[int]], values: list[list[Any]] | None,
                  changed: dict[int, tuple[int, str | None, str | None]], first: int) -> None:
    """``_build_sparse`` of a shaped cluster: procs from ``first`` on have the shape
    (those before it, proc 0 whose values are the cluster ad's, none), ``values``
    (None: all templates) their own values in the order of ``ranges``."""
    owns: list[tuple[Any, ...]] | None = list(map(tuple, values)) if values is not None else None
    status = cluster.ad.get("JobStatus", IDLE)
    procs = cluster.procs
    loads = json.loads
    at = 0
    for lo, hi in ranges:
        if not changed:
            if lo < first:
                _add_plain(cluster, lo, min(first, hi), status)
            start = max(lo, first)
            if start < hi:
                _add_plain(cluster, start, hi, status,
                           repeat((), hi - start) if owns is None else owns[at:at + hi - start])
                at += hi - start
            continue
        for proc in range(lo, hi):
            own: tuple[Any, ...] | None = None
            if proc >= first:
                own = () if owns is None else owns[at]
                at += 1
            row = changed.get(proc)
            if row is None:
                procs[proc] = Job(cluster, proc, status, own)
                continue
            st, diff_text, claim_text = row
            if st == GONE:
                continue
            job = procs[proc] = Job(cluster, proc, st, (loads(diff_text) or None) if diff_text is not None else own)
            if claim_text:
                job.claim = loads(claim_text)
