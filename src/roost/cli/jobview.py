"""How job listings look: HTCondor's state letters, dates, run times and command column."""

from __future__ import annotations

import os
import time
from typing import Any

from roost.vocabulary import JobStatus

#: JobStatus -> condor_q's ST letter
STATUS_LETTERS = JobStatus.LETTERS
#: (key in a totals answer, word in the totals line), in condor_q's order
TOTAL_WORDS = [(JobStatus.WORDS[s], JobStatus.WORDS[s].lower()) for s in (
    JobStatus.COMPLETED, JobStatus.REMOVED, JobStatus.IDLE, JobStatus.RUNNING, JobStatus.HELD,
    JobStatus.SUSPENDED)]
STATUS_KEYS = JobStatus.TOTALS
_IDLE = JobStatus.TOTALS[JobStatus.IDLE]


def short_date(epoch: Any) -> str:
    """``11/22 01:40``, `` 7/2  15:11`` as condor_q prints a submission time
    (HTCondor's format_date: ``%2d/%-2d %02d:%02d``)."""
    if not isinstance(epoch, (int, float)) or epoch <= 0:
        return "??/?? ??:??"
    t = time.localtime(epoch)
    return f"{t.tm_mon:>2}/{t.tm_mday:<2} {t.tm_hour:02d}:{t.tm_min:02d}"


def duration(seconds: float) -> str:
    """``D+HH:MM:SS``."""
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}+{h:02d}:{m:02d}:{s:02d}"


def run_time(job: dict[str, Any], now: float) -> float:
    """Wall time used so far: finished runs plus the current one."""
    total = job.get("RemoteWallClockTime") or 0
    total = total if isinstance(total, (int, float)) else 0
    start = job.get("JobCurrentStartDate") or job.get("ShadowBday")
    if job.get("JobStatus") == JobStatus.RUNNING and isinstance(start, (int, float)) and start > 0:
        total += now - start
    return float(total)


def command(job: dict[str, Any], wide: bool = False) -> str:
    """The CMD column: the executable's name and its arguments."""
    cmd = job.get("Cmd")
    cmd = os.path.basename(cmd) if isinstance(cmd, str) else "?"
    args = job.get("Arguments")
    if not isinstance(args, str) or not args:
        args = job.get("Args") if isinstance(job.get("Args"), str) else ""
    text = f"{cmd} {args}".rstrip()
    return text if wide else text[:60]


def size_mb(job: dict[str, Any]) -> str:
    size = job.get("ImageSize") or 0
    size = size if isinstance(size, (int, float)) else 0
    return f"{size / 1024.0:.1f}"


def totals_of(jobs: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for j in jobs:
        key = STATUS_KEYS.get(j.get("JobStatus"), _IDLE)  # type: ignore[arg-type]
        counts[key] = counts.get(key, 0) + 1
    return counts


def totals_line(label: str, counts: dict[str, int]) -> str:
    n = sum(counts.get(k, 0) for k, _ in TOTAL_WORDS)
    parts = ", ".join(f"{counts.get(k, 0)} {w}" for k, w in TOTAL_WORDS)
    return f"Total for {label}: {n} jobs; {parts}"
