"""What a job used, as the schedd's job ad names it: at its exit (from ``wait4`` and its
memory cgroup) and while it runs (its cgroup, else its processes' ``/proc``). Pure:
the starter gathers the numbers, these put them in HTCondor's attributes and units
(MemoryUsage MiB, ResidentSetSize and ImageSize KiB, CPU seconds)."""

from __future__ import annotations

import os
import signal
from typing import Any

from roost.daemons.startd.memlimit import MemoryState
from roost.daemons.startd.procstat import TreeUsage

MIB = 1 << 20


def _mib(n_bytes: int) -> int:
    return -(-n_bytes // MIB)


def exit_update(status: int, usage: Any, wall: float, mem: MemoryState | None,
                enforced_limit: int | None) -> dict[str, Any]:
    """The final JOB_UPDATE of a job that exited with wait ``status`` and rusage ``usage``
    after ``wall`` seconds; ``oom`` when the kernel killed it for going over
    ``enforced_limit`` bytes (its memory cgroup says so)."""
    out: dict[str, Any] = {"state": "exited"}
    if os.WIFSIGNALED(status):
        out["exit_signal"] = os.WTERMSIG(status)
        out["core_dumped"] = os.WCOREDUMP(status)
    else:
        out["exit_code"] = os.WEXITSTATUS(status)
    u: dict[str, Any] = {"RemoteWallClockTime": round(wall, 6)}
    if usage is not None:
        u["RemoteUserCpu"] = round(usage.ru_utime, 6)
        u["RemoteSysCpu"] = round(usage.ru_stime, 6)
        u["ResidentSetSize"] = int(usage.ru_maxrss)  # KiB
        u["MemoryUsage"] = -(-int(usage.ru_maxrss) // 1024)  # MiB, rounded up
    if mem is not None:  # the cgroup saw every process of the job, not only the first
        u["MemoryUsage"] = max(u.get("MemoryUsage", 0), _mib(mem.peak))
        if mem.oom_killed and out.get("exit_signal") == signal.SIGKILL and enforced_limit:
            out["oom"] = {"limit_mb": enforced_limit >> 20, "peak_mb": _mib(mem.peak)}
    out["usage"] = u
    return out


def live(mem: MemoryState | None, tree: TreeUsage | None) -> dict[str, Any]:
    """A running job's usage now: memory from its cgroup, else its processes; CPU of
    its processes so far."""
    u: dict[str, Any] = {}
    if mem is not None:
        u["MemoryUsage"] = _mib(mem.peak)
        u["ResidentSetSize"] = mem.current >> 10
    elif tree is not None:
        u["MemoryUsage"] = -(-tree.rss_kib // 1024)
        u["ResidentSetSize"] = tree.rss_kib
    if tree is not None:
        u["ImageSize"] = tree.vsize_kib
        u["RemoteUserCpu"] = round(tree.user_cpu, 3)
        u["RemoteSysCpu"] = round(tree.sys_cpu, 3)
    return u
