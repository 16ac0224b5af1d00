"""A submitted cluster as HTCondor stores it: one cluster ad plus per-proc differences.

100,000 procs that differ only in ``Arguments`` and ``Out`` cost one cluster
ad and 100,000 two-entry dicts, not 100,000 full ads. ``proc_ad(i)`` merges
lazily; ``to_classad`` gives the roost ClassAd (``roost.submit.wire`` the wire
and ``condor_q -json`` forms).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from roost.submit.errors import SubmitWarning
from roost.submit.values import AttrValue, Expr
from roost.vocabulary import JobStatus

JOB_STATUS = JobStatus.WORDS


@dataclass
class ClusterSubmission:
    """One cluster: ``cluster_ad`` (attribute -> value) and ``proc_diffs[i]`` for proc i.

    Every proc diff holds at least ``ProcId``; the cluster ad holds
    ``ClusterId`` and every attribute the procs share (taken from proc 0, as
    HTCondor's cluster ad is).
    """

    cluster_id: int
    cluster_ad: dict[str, AttrValue]
    proc_diffs: list[dict[str, AttrValue]]
    warnings: list[SubmitWarning] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.proc_diffs)

    def proc_ad(self, proc: int) -> dict[str, AttrValue]:
        """The full ad of proc ``proc`` (index in this cluster), merged on demand."""
        ad = dict(self.cluster_ad)
        ad.update(self.proc_diffs[proc])
        return ad

    def procs(self) -> Iterator[dict[str, AttrValue]]:
        for i in range(len(self.proc_diffs)):
            yield self.proc_ad(i)

    def cluster_classad(self):  # type: ignore[no-untyped-def]
        """The cluster ad as a roost ClassAd (what a schedd stores once per cluster)."""
        return to_classad(self.cluster_ad)

    def proc_classad(self, proc: int):  # type: ignore[no-untyped-def]
        """The merged ad of proc ``proc`` as a roost ClassAd."""
        return to_classad(self.proc_ad(proc))

    def varying_attributes(self) -> set[str]:
        out: set[str] = set()
        for d in self.proc_diffs:
            out.update(d)
        out.discard("ProcId")
        return out


def to_classad(ad: dict[str, AttrValue]):  # type: ignore[no-untyped-def]
    """A roost ClassAd holding ``ad`` (expressions parsed, literals as values)."""
    # lazy: the ClassAd library (~35 ms) only for the API and daemons, not `roost submit`
    from roost.classad import ClassAd, ExprTree

    out = ClassAd()
    for k, v in ad.items():
        out[k] = ExprTree(str(v)) if isinstance(v, Expr) else v
    return out
