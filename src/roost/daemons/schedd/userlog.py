"""Writing job events to each job's user log (``log = ...`` in the submit file).

Writers are kept open per path (a few hundred at most) so a busy schedd does not
open and close a file per event, but each write first checks (one stat) that the
path still names the open file, so a log the user deleted or moved is recreated.
A log that cannot be written is reported in the SchedLog once and never stops the job.
"""

from __future__ import annotations

import logging
import os
import pwd
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from roost.daemons.schedd.access import may_write
from roost.eventlog import EventLogWriter
from roost.eventlog.events import Event
from roost.eventlog.writer import EventFormatter

log = logging.getLogger(__name__)

MAX_OPEN = 256
_FORMAT = EventFormatter()
TAIL = 1 << 20  # how far back a replayed event is looked for


_ids: dict[str, tuple[int, int] | None] = {}


def user_ids(owner: str) -> tuple[int, int] | None:
    """(uid, gid) of a local user named ``owner``, or None (looked up once per name)."""
    if owner in _ids:
        return _ids[owner]
    try:
        pw = pwd.getpwnam(owner)
        got: tuple[int, int] | None = (pw.pw_uid, pw.pw_gid)
    except (KeyError, TypeError):
        got = None
    if len(_ids) > 4096:
        _ids.clear()
    _ids[owner] = got
    return got


def log_path(job_get: Any) -> str | None:
    """The job's user log path (relative ones are under Iwd), or None if it has none."""
    path = job_get("UserLog")
    if not isinstance(path, str) or not path:
        return None
    if not os.path.isabs(path):
        iwd = job_get("Iwd")
        path = os.path.join(iwd if isinstance(iwd, str) else "/", path)
    return path


def log_paths(job_get: Any) -> list[str]:
    """Every log the job's events go to: its user log, and a DAG node's nodes log
    (DAGManNodesLog, the one DAGMan reads), each once."""
    out = []
    for attr in ("UserLog", "DAGManNodesLog"):
        path = job_get(attr)
        if not isinstance(path, str) or not path:
            continue
        if not os.path.isabs(path):
            iwd = job_get("Iwd")
            path = os.path.join(iwd if isinstance(iwd, str) else "/", path)
        if path not in out:
            out.append(path)
    return out


class UserLogs:
    """Open event-log writers, keyed by path."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.fsync = fsync
        self._writers: OrderedDict[str, EventLogWriter] = OrderedDict()
        self._failed: set[str] = set()

    def write(self, path: str | list[str] | None, events: Iterable[Event], owner: str | None = None) -> None:
        """Append ``events`` to the log at ``path`` (or to each of a list of logs)."""
        paths = [path] if isinstance(path, str) else (path or [])
        if not paths:
            return
        text = _FORMAT.format_many(events)
        if text:
            for p in paths:
                self.write_text(p, text, owner)

    def write_text(self, path: str | None, text: str, owner: str | None = None) -> None:
        """Append events already formatted (one write)."""
        if not path or not text:
            return
        w = self._writers.get(path)
        if w is None:
            if owner and not may_write(owner, path, replace=False):
                if path not in self._failed:
                    self._failed.add(path)
                    log.warning("user log %s: %s may not write it; no events logged there", path, owner)
                return
            created = not os.path.exists(path)
            w = EventLogWriter(path, fsync=self.fsync)
            self._writers[path] = w
            if len(self._writers) > MAX_OPEN:
                _, old = self._writers.popitem(last=False)
                old.close()
        else:
            self._writers.move_to_end(path)
            w.reopen_if_replaced()
            created = w.closed and not os.path.exists(path)
        try:
            w.write_text(text)
        except OSError as e:
            self._writers.pop(path, None)
            if path not in self._failed:
                self._failed.add(path)
                log.warning("cannot write user log %s: %s", path, e)
            return
        if created and owner and os.geteuid() == 0:
            ids = user_ids(owner)
            if ids is not None:
                try:
                    os.chown(path, ids[0], ids[1])
                except OSError:
                    pass

    def replay(self, path: str, text: str, owner: str | None) -> bool:
        """Append events a schedd committed and may not have written before it died,
        unless the log's last MiB holds them already; whether they were appended."""
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL))
                if text.encode("utf-8", "surrogateescape") in f.read():
                    return False
        except FileNotFoundError:
            pass
        except OSError:
            return False
        self.write_text(path, text, owner)
        return True

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()
