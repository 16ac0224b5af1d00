"""Job ads from a file, queried as ``roost q`` queries a schedd (``-userlog``, ``-jobads``).

condor_q can list the jobs of a job event log (``-userlog FILE``: each job's ad
rebuilt from its events) or of a file of job ads (``-jobads FILE``: what
``condor_q -long`` or ``-json`` wrote, or a history file with its ``***`` lines)
in any of its views. :class:`FileQueue` answers the few calls the views make of a
schedd (``query_objs``, ``query_raw``, ``QUERY_JOBS`` totals) from those ads, with
constraints evaluated here. ``history -file`` reads history files the same way.
"""

from __future__ import annotations

import json
from typing import Any

from roost.api.jobids import parse_job_id
from roost.cli.jobview import STATUS_KEYS
from roost.vocabulary import JobStatus


def read_jobads(path: str) -> list[dict[str, Any]]:
    """The ads of a ``condor_q -long`` / ``-json`` / history file at ``path``, in the
    JSON object form (ValueError naming the file and the ad when one does not parse)."""
    # lazy: only file sources need the ClassAd parser
    import roost.classad as classad
    from roost.classad.jsonform import ad_to_obj

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"can't open {path}: {e.strerror or e}") from None
    if text.lstrip().startswith("["):
        try:
            got = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: not a JSON array of ads: {e.msg}") from None
        return [o for o in got if isinstance(o, dict)]
    if text.lstrip().startswith("<"):
        raise ValueError(f"{path}: XML ads are not read here: give condor_q -long or -json output")
    ads: list[dict[str, Any]] = []
    block: list[str] = []
    start = 1

    def flush(lineno: int) -> None:
        if not any(ln.strip() for ln in block):
            return
        try:
            ad = classad.parseOne("\n".join(block), classad.ParserType.Old)
        except Exception as e:  # ClassAdSyntaxError and the like: say where, in the file
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            where, _, rest = first.partition(": ")
            line, _, col = where.partition(":")
            if line.isdigit() and col.isdigit():
                raise ValueError(f"{path}:{start + int(line) - 1}:{col}: {rest}") from None
            raise ValueError(f"{path}:{start}: the ad starting here does not parse: {first}") from None
        ads.append(ad_to_obj(ad))

    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("***") or not line.strip():  # a history banner or a blank line ends an ad
            flush(i)
            block, start = [], i + 1
        else:
            block.append(line)
    flush(len(text.splitlines()))
    return ads


def _status(j: dict[str, Any]) -> str:
    return STATUS_KEYS.get(j.get("JobStatus"), STATUS_KEYS[JobStatus.IDLE])  # type: ignore[arg-type]


class FileQueue:
    """Jobs read from a file, answering roost q's schedd calls; ``label`` heads the listing."""

    def __init__(self, label: str, jobs: list[dict[str, Any]], home_dir: str) -> None:
        self.label = label
        self.jobs = jobs
        self.home_dir = home_dir
        self.pool = None
        self.name = None
        self.address = None

    def select(self, constraint: str | None = None, owner: str | None = None,
               ids: list[str] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        jobs = self.jobs
        if owner:
            jobs = [j for j in jobs if j.get("Owner") == owner or str(j.get("User", "")).split("@")[0] == owner]
        if ids:
            want = [parse_job_id(i) for i in ids]
            jobs = [j for j in jobs if any(j.get("ClusterId") == c and p in (None, j.get("ProcId")) for c, p in want)]
        if constraint:
            # lazy: only a constraint needs ClassAd evaluation
            from roost.classad import ExprTree
            from roost.net.adwire import obj_to_ad

            expr = ExprTree(constraint)
            jobs = [j for j in jobs if expr.eval(obj_to_ad(j)) is True]
        return jobs[:limit] if limit is not None else list(jobs)

    def query_objs(self, constraint: str | None = None, projection: list[str] | None = None, *,
                   owner: str | None = None, ids: list[str] | None = None,
                   limit: int | None = None) -> list[dict[str, Any]]:
        jobs = self.select(constraint, owner, ids, limit)
        if projection:
            keep = {a.lower() for a in projection} | {"clusterid", "procid"}
            jobs = [{k: v for k, v in j.items() if k.lower() in keep} for j in jobs]
        return jobs

    def query_raw(self, constraint: str | None = None, projection: list[str] | None = None, *,
                  owner: str | None = None, ids: list[str] | None = None,
                  limit: int | None = None) -> dict[str, Any]:
        jobs = self.select(constraint, owner, ids, limit)
        clusters: dict[str, Any] = {}
        for j in jobs:  # each cluster's first job stands for its cluster ad (QDate, batch name)
            clusters.setdefault(str(j.get("ClusterId", 0)), j)
        return {"clusters": clusters, "jobs": [[j.get("ClusterId", 0), j.get("ProcId", 0), j] for j in jobs]}

    def call(self, command: str, **args: Any) -> dict[str, Any]:
        if command != "QUERY_JOBS" or not args.get("totals"):
            raise ValueError(f"{self.label}: a file answers no {command}")
        counts = dict.fromkeys(STATUS_KEYS.values(), 0)
        for j in self.select(args.get("constraint"), args.get("owner"), args.get("ids")):
            counts[_status(j)] += 1
        counts["Total"] = sum(counts.values())
        return {"totals": counts}
