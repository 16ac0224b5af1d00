"""A sparse cluster's idle procs in the idle lists as one entry (issue 27).

The idle lists (``JobQueue.idle``: per owner, an ordered dict used as an ordered set)
held one entry per idle ``Job``: the first negotiation of a million-job ``queue N``
made every one of its plain procs (plainprocs.py) into a Job to list it (~1 s with
the event loop blocked). A cluster that still has plain procs is listed as one
``IdleBlock`` instead, where its procs would be. The block stands for every proc in
its cluster's submitted ranges that is idle, not busy (handed to a claim), and not
listed on its own: its plain procs, and those made into Jobs since (looked up, or
offered and taken) that have not left Idle. A proc that leaves Idle or is taken is
no longer covered (its status or ``busy`` says so); one that comes back (released,
requeued, given back) is listed on its own, as any job, so it is never in both.

``covered`` walks a block in proc order and makes a plain proc into its Job only when
it reaches it: GET_REQUESTS (autocluster_ids.py) counts a block's plain procs without
making them and hands out its members one at a time as matches come.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from roost.core.jobpolicy import IDLE

if TYPE_CHECKING:
    from roost.daemons.schedd.queuejobs import Cluster, Job


class IdleBlock:
    """One cluster's idle procs in an owner's idle list (see the module's docstring);
    ``ranges``: the cluster's submitted procs (``[lo, hi)``), kept when its plain procs
    are all made into Jobs."""

    __slots__ = ("cluster", "ranges")

    def __init__(self, cluster: Cluster, ranges: list[tuple[int, int]]) -> None:
        self.cluster = cluster
        self.ranges = ranges

    @property
    def owner(self) -> str:
        return self.cluster.owner

    def covers(self, proc: int) -> bool:
        """Whether ``proc`` is among the block's procs (idle or not)."""
        return any(lo <= proc < hi for lo, hi in self.ranges)


def covered(block: IdleBlock, listed: dict[Any, Any]) -> Iterator[Job]:
    """The block's idle procs in proc order (``listed``: the owner's idle list, whose
    own entries are not the block's), a plain one made into its Job when reached."""
    cluster = block.cluster
    procs = cluster._procs
    for lo, hi in block.ranges:
        for p in range(lo, hi):
            j = procs.get(p)
            if j is None:
                plain = cluster._plain
                if plain is None or plain.status != IDLE or not plain.has(p):
                    continue  # gone, or plain in another status (submitted held)
                j = cluster.job(p)
                if j is None:
                    continue
            if j.status == IDLE and not j.busy and j not in listed:
                yield j


def made_covered(block: IdleBlock, listed: dict[Any, Any]) -> list[Job]:
    """The block's idle procs already made into Jobs (in proc order), none made for it."""
    cluster = block.cluster
    out = [j for j in cluster._procs.values() if j.status == IDLE and not j.busy and j not in listed
           and block.covers(j.proc)]
    out.sort(key=_proc_of)
    return out


def plain_idle(cluster: Cluster) -> int:
    """How many of the cluster's procs are plain and idle."""
    plain = cluster._plain
    return plain.n if plain is not None and plain.status == IDLE else 0


def block_of(cluster: Cluster) -> IdleBlock | None:
    """A block for a cluster that has plain procs (None otherwise: its Jobs are listed)."""
    plain = cluster._plain
    if plain is None:
        return None
    return IdleBlock(cluster, list(plain.ranges))


def _proc_of(job: Job) -> int:
    return job.proc


__all__ = ["IdleBlock", "block_of", "covered", "made_covered", "plain_idle"]
