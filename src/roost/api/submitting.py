"""Submitting: a submit description -> NEW_CLUSTER + SUBMIT, as condor_submit does it.

The submit language (``roost.submit``) expands a description into a cluster
ad plus per-proc differences; ``roost.submit.wire`` makes those wire objects
without building ClassAds, and this module sends them on one connection.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from roost.submit import ClusterSubmission, SubmitDescription, SubmitError
from roost.submit.wire import wire_cluster

#: a schedd's refusal of an attribute a submit command sets -> the commands that set it,
#: so the user reads the file and line (the schedd never saw the file)
_REFUSED_ATTR = re.compile(r"SUBMIT: (AcctGroupUser|AccountingGroup) = ")
_COMMANDS_OF = {
    "AcctGroupUser": ("accounting_group_user", "MY.AcctGroupUser"),
    "AccountingGroup": ("MY.AccountingGroup", "accounting_group_user", "accounting_group", "nice_user"),
}


@dataclass
class SubmitResult:
    """What a submit did: the clusters made and how many jobs each holds."""

    clusters: list[tuple[int, int]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: each cluster's ad as submitted (JSON form), for ``htcondor2``'s ``clusterad()``
    cluster_ads: list[dict[str, Any]] = field(default_factory=list, repr=False)

    @property
    def cluster(self) -> int:
        """The first (usually only) cluster id, as ``htcondor2.SubmitResult.cluster()``."""
        return self.clusters[0][0]

    @property
    def num_procs(self) -> int:
        return sum(n for _, n in self.clusters)

    def job_ids(self) -> list[str]:
        return [f"{c}.{p}" for c, n in self.clusters for p in range(n)]


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
    if not clusters:  # only empty queue statements: nothing queued, say so
        result.warnings += [str(w) for w in desc.warnings]
    for c in clusters:
        result.warnings += [str(w) for w in c.warnings]
    for i, c in enumerate(clusters):
        cid = first if i == 0 else int(call("NEW_CLUSTER")["cluster"])
        if cid != c.cluster_id:
            c = desc.expand(cluster_id=cid - i, qdate=qdate, owner=owner)[i]
        cluster_ad, procs = wire_cluster(c)
        try:
            got = call("SUBMIT", cluster=cid, cluster_ad=cluster_ad, procs=procs)
        except Exception as e:
            raise _at_line(e, desc) from None
        result.clusters.append((int(got.get("cluster", cid)), int(got.get("count", len(c)))))
        result.cluster_ads.append(cluster_ad)
    return result


def _at_line(e: Exception, desc: SubmitDescription) -> Exception:
    """A schedd's refusal of the accounting user, as a SubmitError naming the submit
    file's line that set it (one line: file:line: the attribute, its value, the rule);
    any other error as it came."""
    message = getattr(e, "message", None) or str(e)  # RefusedError: its str; RemoteError: .message
    m = _REFUSED_ATTR.match(message) if getattr(e, "code", None) == "DENIED" and isinstance(message, str) else None
    if m is None:
        return e
    return SubmitError(message[len("SUBMIT: "):], file=desc.file, line=desc.line_of(*_COMMANDS_OF[m.group(1)]))
