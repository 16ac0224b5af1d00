"""``/proc/<pid>/stat`` of every process: process groups of jobs that have no cgroup, and a job's live usage.

One walk of /proc answers both users: the starter's clean-up of a previous
startd's jobs (which pids of a recorded group started after the recorded
time) and the owner monitor's CondorLoadAvg (the CPU time of each job's
group). Jobs in a cgroup are measured from the cgroup instead (owner.py).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # clock ticks per second


class ProcStat(NamedTuple):
    pid: int
    pgid: int
    cpu_ticks: int  # utime + stime
    start_ticks: int  # start time, clock ticks after boot


def _parse(pid: int, data: bytes) -> ProcStat:
    # the command name (field 2) may hold spaces and parentheses: split after its last ")"
    fields = data[data.rindex(b")") + 2 :].split()
    return ProcStat(pid, int(fields[2]), int(fields[11]) + int(fields[12]), int(fields[19]))


def read(pid: int) -> ProcStat | None:
    """One process's stat; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return _parse(pid, f.read())
    except (OSError, ValueError, IndexError):
        return None


def processes() -> Iterator[ProcStat]:
    """Every process that can be read now (ones that vanish during the walk are skipped)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            got = read(int(entry))
            if got is not None:
                yield got


class TreeUsage(NamedTuple):
    rss_kib: int
    vsize_kib: int
    user_cpu: float  # seconds
    sys_cpu: float


_PAGE_KIB = (os.sysconf("SC_PAGE_SIZE") // 1024) if hasattr(os, "sysconf") else 4


#: how long one walk of /proc answers :func:`tree_usage` (seconds): 2,000 jobs report their
#: usage within a minute or so of each other, and a walk per job read /proc 2,000 times over
#: (4 million reads of /proc/<pid>/stat with 4,000 processes: most of a core for minutes)
SNAPSHOT_TTL = 10.0

_snapshot_lock = threading.Lock()
_snapshot: tuple[float, dict[int, TreeUsage], dict[int, TreeUsage]] | None = None


def _walk() -> tuple[dict[int, TreeUsage], dict[int, TreeUsage]]:
    """Every process group's and session's summed usage, from one walk of /proc."""
    groups: dict[int, list[int]] = {}
    sessions: dict[int, list[int]] = {}
    for entry in _pids():
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2:].split()
            pgid, sid = int(fields[2]), int(fields[3])
            use = (int(fields[11]), int(fields[12]), int(fields[20]) // 1024, int(fields[21]) * _PAGE_KIB)
        except (OSError, ValueError, IndexError):
            continue
        for table, key in ((groups, pgid), (sessions, sid)):
            t = table.get(key)
            if t is None:
                table[key] = list(use)
            else:
                for i in range(4):
                    t[i] += use[i]

    def done(table: dict[int, list[int]]) -> dict[int, TreeUsage]:
        return {k: TreeUsage(t[3], t[2], t[0] / TICKS, t[1] / TICKS) for k, t in table.items()}
    return done(groups), done(sessions)


def tree_usage(pgid: int, session: bool = False) -> TreeUsage | None:
    """The summed usage of every process in process group ``pgid`` (a job's), or in the
    session it leads (``session``: a container's, whose init puts its child in a group of
    its own), from /proc; None when none is left. Off the event loop: it may walk /proc.

    One walk answers every call for :data:`SNAPSHOT_TTL` seconds (usage seconds
    old, for reports sent every STARTER_UPDATE_INTERVAL); a group the last walk did not
    see (a job started since) is looked for in a fresh one."""
    global _snapshot
    with _snapshot_lock:
        now = time.monotonic()
        fresh = _snapshot is None or now - _snapshot[0] > SNAPSHOT_TTL
        if fresh:
            _snapshot = (now, *_walk())
        assert _snapshot is not None
        got = _snapshot[2 if session else 1].get(pgid)
        if got is None and not fresh:
            _snapshot = (time.monotonic(), *_walk())
            got = _snapshot[2 if session else 1].get(pgid)
        return got


def _pids() -> list[str]:
    try:
        return [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
