"""``roost q``'s default view: one row per batch (a batch name, else a cluster), with
counts of done, running, idle and held jobs, as condor_q prints it.

It reads a QUERY_JOBS answer in either form: a row per job, or (``batch``) procs
counted per cluster and status, so a million jobs of one cluster are one entry.
"""

from __future__ import annotations

from typing import Any

from roost.cli import q_layout
from roost.cli.jobview import short_date
from roost.vocabulary import JobStatus


def batch_view(raw: dict[str, Any], out: Any, display: int | None = None, global_view: bool = False) -> None:
    """One row per (owner, batch): a batch name groups clusters, else each cluster is one.
    A batch answer's ``counts`` (procs counted per cluster and status) add to the rows
    its ``jobs`` make, as if each counted proc had come as a job of its cluster."""
    clusters = raw.get("clusters") or {}
    batches: dict[tuple[str, str], dict[str, Any]] = {}
    cluster_key: dict[int, tuple[str, str]] = {}

    def batch_of(c: int, cad: dict[str, Any], diff: dict[str, Any], counted: bool) -> dict[str, Any]:
        key = None if counted else cluster_key.get(c)  # counted procs have their cluster's
        if key is None or "Owner" in diff or "JobBatchName" in diff:
            j = dict(cad)
            j.update(diff)
            name = j.get("JobBatchName")
            key = (str(j.get("Owner", "?")), name if isinstance(name, str) and name else f"ID: {c}")
            cluster_key.setdefault(c, key)
        b = batches.get(key)
        if b is None:
            b = batches[key] = {"qdate": 0, "counts": [0, 0, 0, 0], "ids": {}, "submitted": {}}
        return b

    def add(c: int, cad: dict[str, Any], diff: dict[str, Any], st: Any, n: int, lo: int, hi: int,
            counted: bool = False) -> None:
        """``n`` procs of cluster ``c`` in status ``st``, ProcIds ``lo`` to ``hi``."""
        b = batch_of(c, cad, diff, counted)
        total_nodes = diff.get("DAG_NodesTotal", cad.get("DAG_NodesTotal"))
        if isinstance(total_nodes, int):
            # a DAGMan job: the batch counts the DAG's nodes, not this job
            b["dag"] = (total_nodes, diff.get("DAG_NodesDone", cad.get("DAG_NodesDone")) or 0)
            q = cad.get("QDate")
            if isinstance(q, (int, float)) and (not b["qdate"] or q < b["qdate"]):
                b["qdate"] = q
            b["ids"].setdefault(c, (lo, lo))
            return
        if c not in b["ids"]:
            total = cad.get("TotalSubmitProcs")
            if isinstance(total, int):
                b["submitted"][c] = total
            q = cad.get("QDate")
            if isinstance(q, (int, float)) and (not b["qdate"] or q < b["qdate"]):
                b["qdate"] = q
        # DONE, RUN, IDLE, HOLD
        idx = 0 if st in JobStatus.ENDED else 1 if st in JobStatus.ON_A_SLOT else 3 if st == JobStatus.HELD else 2
        b["counts"][idx] += n
        lo_hi = b["ids"].get(c)
        b["ids"][c] = (lo, hi) if lo_hi is None else (lo_hi[0] if lo_hi[0] < lo else lo, lo_hi[1] if lo_hi[1] > hi else hi)

    # in queue order (cluster, then ProcId: a counted cluster stands at its first proc),
    # so rows come out in the order their batches are first met, as condor_q's
    counted = raw.get("counts") or ()
    jobs = raw.get("jobs") or ()
    items: Any = [(c, p, diff, None) for c, p, diff in jobs]
    if counted:
        order = {int(c): i for i, c in enumerate(clusters)}
        items += [(int(e[0]), int(e[2]), {}, e) for e in counted]
        items.sort(key=lambda it: (order.get(it[0], len(order)), it[1]))
    for c, p, diff, entry in items:
        cad = clusters.get(str(c)) or {}
        if entry is None:
            add(c, cad, diff, diff["JobStatus"] if "JobStatus" in diff else cad.get("JobStatus"), 1, p, p)
            continue
        for st, n in sorted(entry[1].items()):
            add(c, cad, {}, int(st), n, entry[2], entry[3], counted=True)
    any_held = any(b["counts"][3] for b in batches.values())
    rows = []
    for (owner, name), b in batches.items():
        done, run, idle, hold = b["counts"]
        present = run + idle + hold + done
        # Finished jobs leave the queue; the cluster's submitted count tells how many did.
        submitted = sum(b["submitted"].values()) if len(b["submitted"]) == len(b["ids"]) else 0
        if "dag" in b:
            total, done = b["dag"]
            total = max(total, done + run + idle + hold)
        else:
            if submitted > present:
                done += submitted - present
            total = done + run + idle + hold
        rows.append((owner, name, short_date(b["qdate"]), [done, run, idle, hold, total], id_ranges(b["ids"])))
    out.write("\n".join(q_layout.batch_table(rows, any_held or global_view, display)) + "\n")


def id_ranges(ids: dict[int, tuple[int, int]]) -> str:
    """JOB_IDS: the batch's first and last job (``12.0-9``, ``12.0 ... 14.3``), as condor_q."""
    first, last = min(ids), max(ids)
    lo, hi = ids[first][0], ids[last][1]
    if first == last:
        return f"{first}.{lo}" if lo == hi else f"{first}.{lo}-{hi}"
    return f"{first}.{lo} ... {last}.{hi}"
