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
making them and hands out its members one at a time as matches come. A proc that left
the block does not come back to it, so the block keeps where its first covered proc
may be (``at``, ``start``): a walk does not pass again over the procs that ran or left
before it (a cluster of a million worked through from its start).
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

    __slots__ = ("cluster", "ranges", "at", "start")

    def __init__(self, cluster: Cluster, ranges: list[tuple[int, int]]) -> None:
        self.cluster = cluster
        self.ranges = ranges
        self.at = 0  # no covered proc before ranges[at], nor before proc ``start`` in it
        self.start = ranges[0][0] if ranges else 0

    @property
    def owner(self) -> str:
        return self.cluster.owner

    def covers(self, proc: int) -> bool:
        """Whether ``proc`` is among the block's procs still to walk (idle or not): in
        its ranges, and not before its mark."""
        for i, (lo, hi) in enumerate(self.ranges):
            if lo <= proc < hi:
                return (i, proc) >= (self.at, self.start)
        return False


def covered(block: IdleBlock, listed: dict[Any, Any]) -> Iterator[Job]:
    """The block's idle procs in proc order (``listed``: the owner's idle list, whose
    own entries are not the block's), a plain one made into its Job when reached."""
    cluster = block.cluster
    ranges = block.ranges
    first, start = block.at, block.start
    ahead = True  # nothing covered met yet: the block's mark may move on
    for i in range(first, len(ranges)):
        lo, hi = ranges[i]
        for p in range(max(lo, start) if i == first else lo, hi):
            j = cluster._procs.get(p)  # (looked up each time: Cluster.procs replaces the dict when it makes all)
            if j is None:
                plain = cluster._plain
                if plain is not None and plain.status == IDLE and plain.has(p):
                    j = cluster.job(p)
            if j is not None and j.status == IDLE and not j.busy and j not in listed:
                if ahead:
                    ahead = False
                    if (i, p) > (block.at, block.start):
                        block.at, block.start = i, p
                yield j
            elif ahead and (i, p + 1) > (block.at, block.start):
                block.at, block.start = i, p + 1  # gone, busy, or no longer idle


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
