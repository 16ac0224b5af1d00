"""Submitters: the accounting names the schedd's jobs are negotiated under, and their ads.

A submitter is what the negotiator gives a fair share to: ``owner@UID_DOMAIN``, or
``group.user@UID_DOMAIN`` for jobs in an accounting group, the same name on every
submit host of the domain (``roost.core.submitters``). The schedd advertises one
Submitter ad per name with jobs (its ``ScheddName`` telling it from other schedds'
ads of the same name), and one with zeros once a name's jobs are gone, so the
negotiator forgets it. Pure functions of the queue: the daemon sends the ads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from roost.core import jobpolicy as jp
from roost.core.submitters import submitter_name as accounting_name
from roost.daemons.schedd.jobqueue import JobQueue


def submitter_name(cluster: Any, domain: str) -> str:
    """The submitter (accounting) name of a cluster's jobs, as HTCondor names it:
    ``AccountingGroup@domain`` when the job has one (``group.user``, or
    ``nice-user.user`` for nice_user jobs), else ``owner@domain``; ``domain`` is
    ``UID_DOMAIN``. Taken from the cluster ad: procs of one cluster share their
    accounting group."""
    return accounting_name(cluster.owner, cluster.ad.get("AccountingGroup"), domain)


def submitter_ads(
    queue: JobQueue, domain: str, schedd_name: str, address: str | None, advertised: dict[str, str]
) -> Iterator[tuple[str, dict[str, Any], None]]:
    """One Submitter ad per submitter name (owner, or accounting group + user) with
    jobs, and one with zeros for a name whose jobs are all gone (until that has
    been sent). ``advertised``: the names last sent with jobs (name -> owner)."""
    counts: dict[str, tuple[str, dict[int, int], float]] = {}
    for owner, c in queue.owner_totals.items():
        if any(c.values()):
            counts[accounting_name(owner, None, domain)] = (owner, dict(c), 0.0)
    weights: dict[str, float] = {}
    for cluster in queue.clusters.values():
        cc = cluster.counts
        running = cc.get(jp.RUNNING, 0)
        if running:
            cpus = cluster.ad.get("RequestCpus")
            w = running * (cpus if type(cpus) in (int, float) and cpus > 0 else 1)
        else:
            w = 0
        g = cluster.ad.get("AccountingGroup")
        name = submitter_name(cluster, domain)
        if isinstance(g, str) and g and any(cc.values()):
            default = counts.get(accounting_name(cluster.owner, None, domain))
            if default is not None:  # move these counts from the owner's plain name
                for st, n in cc.items():
                    default[1][st] = default[1].get(st, 0) - n
            entry = counts.setdefault(name, (cluster.owner, {}, 0.0))
            for st, n in cc.items():
                entry[1][st] = entry[1].get(st, 0) + n
        if w:
            weights[name] = weights.get(name, 0.0) + w
    for name, owner in advertised.items():
        counts.setdefault(name, (owner, {}, 0.0))
    for name in sorted(counts):
        owner, c, _ = counts[name]
        if not any(c.values()) and name not in advertised:
            continue  # every job of this owner is in an accounting group
        w = weights.get(name, 0.0)
        yield "Submitter", {
            "MyType": "Submitter",
            "Name": name,
            "Owner": owner,
            "User": name,
            "AccountingGroup": name.rsplit("@", 1)[0],
            "ScheddName": schedd_name,
            "ScheddAddress": address,
            "MyAddress": address,
            "IdleJobs": c.get(jp.IDLE, 0),
            "RunningJobs": c.get(jp.RUNNING, 0),
            "WeightedRunningJobs": int(w) if float(w).is_integer() else w,
            "HeldJobs": c.get(jp.HELD, 0),
            "SubmitterTag": domain,
        }, None


__all__ = ["submitter_ads", "submitter_name"]
