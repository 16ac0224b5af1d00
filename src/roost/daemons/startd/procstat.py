"""``/proc/<pid>/stat`` of every process: process groups of jobs that have no cgroup, and a job's live usage.

One walk of /proc answers both users: the starter's clean-up of a previous
startd's jobs (which pids of a recorded group started after the recorded
time) and the owner monitor's CondorLoadAvg (the CPU time of each job's
group). Jobs in a cgroup are measured from the cgroup instead (owner.py).
"""

from __future__ import annotations

import os
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


def tree_usage(pgid: int, session: bool = False) -> TreeUsage | None:
    """The summed usage of every process in process group ``pgid`` (a job's), or in the
    session it leads (``session``: a container's, whose init puts its child in a group of
    its own), from /proc; None when none is left. One walk of /proc (call it off the
    event loop)."""
    field = 3 if session else 2
    rss = vsize = user = system = 0
    found = False
    for entry in _pids():
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rindex(b")") + 2:].split()
            if int(fields[field]) != pgid:
                continue
            found = True
            user += int(fields[11])
            system += int(fields[12])
            vsize += int(fields[20]) // 1024
            rss += int(fields[21]) * _PAGE_KIB
        except (OSError, ValueError, IndexError):
            continue
    if not found:
        return None
    return TreeUsage(rss, vsize, user / TICKS, system / TICKS)


def _pids() -> list[str]:
    try:
        return [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return []
