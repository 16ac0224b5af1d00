"""One job as the dashboard's job page shows it: its ad (queue or history), its event
log, and ``q -better-analyze``'s text for it.

The analysis is ``roost q -better-analyze``'s own: the same pure
:func:`roost.core.analyze.analyze` over the same inputs (the job's ClassAd, every
slot ad, the negotiator's priority table, limits and groups, gathered by the
same helper the command uses), so the page and the command never disagree.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from collections.abc import Callable
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.api.schedd import Schedd
from roost.cli.q_cmd import _negotiator_view, _submitter
from roost.core.analyze import analyze, render

#: the most of a user log read for one job's events (its tail: a job's recent events)
EVENT_LOG_MAX_BYTES = 4 << 20
_HEADER = re.compile(r"^\d{3} \((\d+)\.(\d+)\.\d+\) ")


def job_ad(schedd: Schedd, job_id: str) -> tuple[dict[str, Any] | None, str]:
    """The job's ad as JSON-form dict and where it was found (``queue`` or ``history``)."""
    got = schedd.query_objs(ids=[job_id])
    if got:
        return got[0], "queue"
    got = schedd.history(ids=[job_id])
    return (got[0], "history") if got else (None, "")


def _readable_by_owner(st: os.stat_result, owner: str) -> bool:
    """A log the dashboard may show: a regular file the job's owner owns, or one
    anybody may read. The path comes from the job's ad, which its owner wrote: the
    dashboard (often root) must not become a way to read other users' files."""
    if not stat.S_ISREG(st.st_mode):
        return False
    if st.st_mode & stat.S_IROTH:
        return True
    try:
        return pwd.getpwnam(owner).pw_uid == st.st_uid
    except KeyError:
        return False


def event_log(ad: dict[str, Any]) -> dict[str, Any]:
    """The job's events from its user log (``log =``), as HTCondor's text: the chunks
    whose header names this job. Only a log on this host can be read; otherwise the
    answer says why there are no events."""
    path = ad.get("UserLog")
    if not isinstance(path, str) or not path:
        return {"path": None, "events": [], "note": "the job has no user log (no `log =` in its submit file)"}
    if not os.path.isabs(path):
        path = os.path.join(str(ad.get("Iwd") or "/"), path)
    owner = str(ad.get("Owner") or "")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        return {"path": path, "events": [], "note": f"cannot read {path} here: {e.strerror}"}
    try:
        st = os.fstat(fd)
        if not _readable_by_owner(st, owner):
            return {"path": path, "events": [], "note": f"{path} is not the job owner's file"}
        start = max(0, st.st_size - EVENT_LOG_MAX_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, EVENT_LOG_MAX_BYTES)
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    want = (int(ad.get("ClusterId", -1)), int(ad.get("ProcId", -1)))
    events = []
    for chunk in text.split("...\n"):
        chunk = chunk.lstrip("\n")
        m = _HEADER.match(chunk)
        if m and (int(m.group(1)), int(m.group(2))) == want:
            events.append(chunk.rstrip("\n"))
    return {"path": path, "events": events, "note": "" if events else "no events for this job in its log yet"}


def pool_inputs(home: str) -> tuple[list[Any], Any, Any, Any]:
    """What an analysis needs of the pool beyond the job: every slot ad, and the
    negotiator's priority table, limits and groups (the dashboard keeps them for its
    refresh interval: they serve the analysis of every job)."""
    collector = Collector(home)
    try:
        slots = collector.query("Machine")
    finally:
        collector.close()
    users, limits, groups = _negotiator_view(home)
    return slots, users, limits, groups


def better_analyze(home: str, schedd: Schedd, job_id: str,
                   inputs: Callable[[], tuple[list[Any], Any, Any, Any]] | None = None) -> str:
    """``roost q -better-analyze JOB``'s text for one job; ``inputs`` gives the pool's
    side (:func:`pool_inputs` of ``home`` by default)."""
    jobs = schedd.query(ids=[job_id])
    if not jobs:
        return f"No job {job_id} in the queue to analyze.\n"
    slots, users, limits, groups = inputs() if inputs is not None else pool_inputs(home)
    out = ""
    if users is None:
        out = "(the negotiator gave no priority table: analyzing without user priorities)\n"
    job = jobs[0]
    obj = {k: job.get(k) for k in ("User", "Owner", "AcctGroup")}
    try:
        a = analyze(job, slots, users, _submitter(obj), limits=limits, groups=groups)
    except PoolError as e:
        return f"cannot analyze {job_id}: {e}\n"
    return out + render(a, job, better=True)
