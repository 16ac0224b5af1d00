"""One job as the dashboard's job page shows it: its ad (queue or history), its event
log, and ``q -better-analyze``'s text for it.

The analysis is ``roost q -better-analyze``'s own: the same pure
:func:`roost.core.analyze.analyze` over the same inputs (the job's ClassAd, every
slot ad, the negotiator's priority table, limits and groups, gathered by the
same helper the command uses), so the page and the command never disagree.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from collections.abc import Callable
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.api.negotiator import negotiator_view, priority_name
from roost.api.schedd import Schedd
from roost.core.analyze import analyze, render
from roost.core.condor_analysis import condor_text

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


#: what a visitor is told about any log the dashboard will not show: the same words
#: whether it is missing, private, or not a file, so the page tells nothing about it
NOT_SHOWN = ("the job's user log is shown here only when everybody on this host may read it "
             "(a regular file, world-readable, in world-searchable directories); "
             "its events are in the log itself")
_MAX_LINKS = 40


def open_world_readable(path: str) -> int:
    """A descriptor for reading ``path``, only if anybody on this host could read it:
    the path is walked from ``/`` one component at a time as the kernel would walk it
    for a user in no group of the files' (every directory searchable by others, each
    symbolic link followed from where it is, at most 40), and the file is a regular
    file others may read. The path comes from a job's ad, which its owner wrote, and
    the dashboard often runs as root: it must not read for anonymous visitors what
    the owner keeps private, tell whether a path exists, or open a device or a FIFO
    (opening some has effects). Each component is reached with ``O_PATH |
    O_NOFOLLOW`` (nothing is opened for reading, links are seen, not followed), and
    the file is opened for reading only after its checks, through the very inode
    checked (``/proc/self/fd``): a component swapped meanwhile changes nothing.
    OSError when it may not be shown."""
    if not os.path.isabs(path):
        raise OSError(errno.EINVAL, "not an absolute path", path)
    todo = [p for p in path.split("/") if p]
    links = 0
    dirfd = os.open("/", os.O_PATH | os.O_DIRECTORY)
    try:
        while todo:
            name = todo.pop(0)
            if name == ".":
                continue
            if not os.fstat(dirfd).st_mode & stat.S_IXOTH:
                raise OSError(errno.EACCES, "a directory others may not search", path)
            if name == "..":  # as the kernel: the parent of where the walk is (/ stays /)
                fd = os.open("..", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dirfd)
                os.close(dirfd)
                dirfd = fd
                continue
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=dirfd)
            st = os.fstat(fd)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                target = os.readlink(name, dir_fd=dirfd)
                os.close(fd)
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many symbolic links", path)
                todo[:0] = [p for p in target.split("/") if p]
                if target.startswith("/"):
                    os.close(dirfd)
                    dirfd = os.open("/", os.O_PATH | os.O_DIRECTORY)
                continue
            if todo:
                if not stat.S_ISDIR(st.st_mode):
                    os.close(fd)
                    raise OSError(errno.ENOTDIR, "not a directory", path)
                os.close(dirfd)
                dirfd = fd
                continue
            try:
                if not stat.S_ISREG(st.st_mode) or not st.st_mode & stat.S_IROTH:
                    raise OSError(errno.EACCES, "not a regular file others may read", path)
                return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            finally:
                os.close(fd)
        raise OSError(errno.EISDIR, "a directory", path)
    finally:
        os.close(dirfd)


def event_log(ad: dict[str, Any]) -> dict[str, Any]:
    """The job's events from its user log (``log =``), as HTCondor's text: the chunks
    whose header names this job. Shown only when the log is on this host and anybody
    here may read it (:func:`open_world_readable`); otherwise the answer says the
    events are in the log, in the same words whatever the reason."""
    path = ad.get("UserLog")
    if not isinstance(path, str) or not path:
        return {"path": None, "events": [], "note": "the job has no user log (no `log =` in its submit file)"}
    if not os.path.isabs(path):
        path = os.path.join(str(ad.get("Iwd") or "/"), path)
    try:
        fd = open_world_readable(path)
    except OSError:
        return {"path": path, "events": [], "note": NOT_SHOWN}
    try:
        st = os.fstat(fd)
        start = max(0, st.st_size - EVENT_LOG_MAX_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, EVENT_LOG_MAX_BYTES)
    except OSError:
        return {"path": path, "events": [], "note": NOT_SHOWN}
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
    users, limits, groups = negotiator_view(home)
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
        a = analyze(job, slots, users, priority_name(obj), limits=limits, groups=groups)
    except PoolError as e:
        return f"cannot analyze {job_id}: {e}\n"
    # as the command prints it: condor_q's own text first, then roost's
    return out + condor_text(job, slots, True, 80, time.time()) + "\n" + render(a, job, better=True)
