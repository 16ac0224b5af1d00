"""Writing job events to each job's user log (``log = ...`` in the submit file).

Writers are kept open per path (a few hundred at most) so a busy schedd does not
open and close a file per event, but each write first checks (one stat) that the
path still names the open file, so a log the user deleted or moved is recreated.
A log that cannot be written is reported in the SchedLog once and never stops the job.

Forms: a job's user log is text unless the job asks for XML (``log_xml = true``:
``UserLogUseXML`` true or 1) or JSON (``UserLogUseXML = 2``, HTCondor's JSON
format bit), or the job says nothing and ``DEFAULT_USERLOG_FORMAT_OPTIONS``
names XML or JSON.  A DAG's nodes log is always text (DAGMan reads it).

The pool event log (``EVENT_LOG``) gets every job's events whether or not the job
has a log, in the form ``EVENT_LOG_FORMAT_OPTIONS`` says, each followed by a 028
event of the job's ``EVENT_LOG_JOB_AD_INFORMATION_ATTRS``; it is rotated at
``EVENT_LOG_MAX_SIZE`` bytes (``MAX_EVENT_LOG``, 1,000,000) keeping
``EVENT_LOG_MAX_ROTATIONS`` old files (1: ``<log>.old``; more: ``<log>.1`` newest).
A cluster's submit events reach it in one write (a few, if it rotates in between),
not one per job.  Root writes it, so it is opened without following a symlink, only
in a directory no other user may write to (not others; group only if it is the
schedd's own, as under umask 002), and only if it is a plain file of the schedd's
user with one link; otherwise the SchedLog says why and nothing is written.  It is created 0644, readable by every local user (docs/eventlog.md).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from roost.daemons.accounts import account
from roost.daemons.schedd.access import may_write
from roost.eventlog import EventLogWriter, JobAdInformationEvent
from roost.eventlog.events import Event
from roost.eventlog.writer import EventFormatter, Formatter, parse_format_options

log = logging.getLogger(__name__)


class UnsafeLog(OSError):
    """The pool's event log may not be written where it is (see the module docstring)."""

MAX_OPEN = 256
_FORMAT = EventFormatter()
TAIL = 1 << 20  # how far back a replayed event is looked for


def user_ids(owner: str) -> tuple[int, int] | None:
    """(uid, gid) of a local user named ``owner``, or None (looked up once per name)."""
    pw = account(owner)
    return (pw.pw_uid, pw.pw_gid) if pw is not None else None


def _path_of(job_get: Any, attr: str) -> str | None:
    """A log path attribute of the job (relative ones are under Iwd), or None."""
    path = job_get(attr)
    if not isinstance(path, str) or not path:
        return None
    if not os.path.isabs(path):
        iwd = job_get("Iwd")
        path = os.path.join(iwd if isinstance(iwd, str) else "/", path)
    return path


def log_path(job_get: Any) -> str | None:
    """The job's user log path (relative ones are under Iwd), or None if it has none."""
    return _path_of(job_get, "UserLog")


def log_paths(job_get: Any) -> list[str]:
    """Every log the job's events go to: its user log, and a DAG node's nodes log
    (DAGManNodesLog, the one DAGMan reads), each once."""
    out: list[str] = []
    for attr in ("UserLog", "DAGManNodesLog"):
        path = _path_of(job_get, attr)
        if path is not None and path not in out:
            out.append(path)
    return out


def _nodes_log(job_get: Any) -> str | None:
    return _path_of(job_get, "DAGManNodesLog")


class PoolEventLog:
    """The pool-wide event log (``EVENT_LOG``): every job's events, rotated by size."""

    def __init__(self, path: str, formatter: Formatter, max_size: int, rotations: int,
                 ad_attrs: list[str], fsync: bool = False) -> None:
        self.path = path
        self.formatter = formatter
        self.max_size = max_size
        self.rotations = rotations if max_size > 0 else 0
        self.ad_attrs = ad_attrs
        self._writer = EventLogWriter(path, fsync=fsync, formatter=formatter, flags=os.O_NOFOLLOW)
        self._size: int | None = None
        self._failed = False

    @classmethod
    def from_config(cls, config: Any) -> PoolEventLog | None:
        path = (config.get("EVENT_LOG") or "").strip() if config is not None else ""
        if not path:
            return None
        opts = config.get("EVENT_LOG_FORMAT_OPTIONS") or ""
        if config.get_bool("EVENT_LOG_USE_XML", False):
            opts += " XML"
        size = config.get_int("EVENT_LOG_MAX_SIZE", -1)
        if size is None or size < 0:
            size = config.get_int("MAX_EVENT_LOG", 1_000_000) or 0
        rotations = max(0, config.get_int("EVENT_LOG_MAX_ROTATIONS", 1) or 0)
        attrs = config.get_list("EVENT_LOG_JOB_AD_INFORMATION_ATTRS", []) or []
        return cls(path, parse_format_options(opts), size, rotations, attrs,
                   fsync=config.get_bool("EVENT_LOG_FSYNC", False) is True)

    def _rotate(self) -> None:
        self._writer.close()
        self._check_dir()
        if self.rotations == 1:
            os.replace(self.path, self.path + ".old")
        else:
            for i in range(self.rotations - 1, 0, -1):
                if os.path.exists(f"{self.path}.{i}"):
                    os.replace(f"{self.path}.{i}", f"{self.path}.{i + 1}")
            os.replace(self.path, self.path + ".1")
        self._size = 0

    def write(self, events: Iterable[Event], job_get: Any = None) -> None:
        """Append ``events`` (with their 028 job-ad events); failures are logged once."""
        self.write_many([(events, job_get)])

    def write_many(self, groups: Iterable[tuple[Iterable[Event], Any]]) -> None:
        """Append several jobs' events, each ``(events, job_get)``, in as few writes as
        the rotation size allows (one, unless the file fills up in between)."""
        pieces = []
        for events, job_get in groups:
            text = self.formatter.format_many(self._with_ad_events(events, job_get))
            if text:
                pieces.append(text.encode("utf-8", "surrogateescape"))
        if not pieces:
            return
        try:
            self._open()
            assert self._size is not None
            chunk: list[bytes] = []
            pending = 0
            for piece in pieces:
                if self.max_size > 0 and self._size + pending > 0 and self._size + pending + len(piece) > self.max_size:
                    self._append(chunk, pending)
                    chunk, pending = [], 0
                    self._roll()
                    self._open()
                chunk.append(piece)
                pending += len(piece)
            self._append(chunk, pending)
            self._failed = False
        except OSError as e:
            self._writer.close()
            self._size = None
            if not self._failed:
                self._failed = True
                level = logging.ERROR if isinstance(e, UnsafeLog) else logging.WARNING
                log.log(level, "cannot write the event log %s: %s", self.path, e)

    def _with_ad_events(self, events: Iterable[Event], job_get: Any) -> list[Event]:
        attrs: dict[str, str] = {}
        if self.ad_attrs and job_get is not None:  # the same job for every event: read once
            for name in self.ad_attrs:
                v = job_get(name)
                if v is not None:
                    attrs[name] = _ad_text(v)
        out: list[Event] = []
        for e in events:
            out.append(e)
            if attrs:
                out.append(JobAdInformationEvent(e.cluster, e.proc, e.timestamp, attributes=dict(attrs)))
        return out

    def _open(self) -> None:
        """Open the file if it is not (or no longer names the open one), with the checks
        of the module docstring; its size known."""
        self._writer.reopen_if_replaced()
        if not self._writer.closed and self._size is not None:
            return
        self._writer.close()
        self._check_dir()
        try:
            fd = self._writer.fileno()
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UnsafeLog("it is a symbolic link: not followed, not written") from None
            raise
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
            self._writer.close()
            raise UnsafeLog(f"not a plain file of uid {os.geteuid()} with one link (uid {st.st_uid}, "
                            f"{st.st_nlink} links, mode {stat.filemode(st.st_mode)}): not written")
        self._size = st.st_size

    def _check_dir(self) -> None:
        d = os.path.dirname(os.path.abspath(self.path))
        st = os.stat(d)
        others = st.st_mode & stat.S_IWOTH or (st.st_mode & stat.S_IWGRP and st.st_gid != os.getegid())
        if st.st_uid not in (0, os.geteuid()) or others:
            raise UnsafeLog(f"its directory {d} is {stat.filemode(st.st_mode)}, owned by uid {st.st_uid}: "
                            "others could replace the log; make it writable by the schedd's user only")

    def _append(self, chunk: list[bytes], size: int) -> None:
        if chunk:
            self._writer.write_bytes(b"".join(chunk))
            assert self._size is not None
            self._size += size

    def _roll(self) -> None:
        if self.rotations > 0:
            self._rotate()
            self._size = None
        else:  # the open file itself, whatever its name now names
            os.ftruncate(self._writer.fileno(), 0)
            self._size = 0

    def close(self) -> None:
        self._writer.close()


def _ad_text(value: Any) -> str:
    """A job attribute's value as ClassAd expression text (028 events hold text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, int | float):
        return repr(value)
    return str(value)


def _unwritten(tail: bytes, data: bytes) -> bytes:
    """What of ``data`` the log (ending in ``tail``) lacks: all of it, unless the log
    ends in a first part of it (a write cut short), then the rest."""
    first = data.find(b"\n...\n")  # the first event of the text (text form's separator)
    if first < 0 or first + 5 >= len(data):
        return data
    at = tail.rfind(data[: first + 5])
    if at >= 0 and data.startswith(tail[at:]):
        return data[len(tail) - at :]
    return data


class LogBatch:
    """Many jobs' events gathered into one text per log (a bulk action's 009, 012 or
    013 events): one pending_events row and one write per log, not one per job."""

    def __init__(self, logs: UserLogs) -> None:
        self.logs = logs
        self._parts: dict[tuple[str, str | None], list[str]] = {}
        self._pool: list[tuple[list[Event], Any]] = []
        self._alike: dict[int, tuple[str, str]] = {}  # id(formatter) -> text around the job id

    def add_alike(self, logs: list[tuple[str, Formatter]], sample: Event, cluster: int, proc: int,
                  owner: str | None, job_get: Any, make: Callable[[], list[Event]]) -> None:
        """One job's event that is ``sample`` but for its job id: text logs get the
        sample's text with the id set (``EventFormatter.alike``), other forms and the
        pool's log the events ``make`` makes."""
        for p, form in logs:
            if type(form) is EventFormatter:
                parts = self._alike.get(id(form))
                if parts is None:
                    parts = self._alike[id(form)] = form.alike(sample)
                self._parts.setdefault((p, owner), []).append("%s%03d.%03d%s" % (parts[0], cluster, proc, parts[1]))  # noqa: UP031
            else:
                self._parts.setdefault((p, owner), []).append(form.format_many(make()))
        if self.logs.pool is not None:
            self._pool.append((make(), job_get))

    def texts(self) -> list[tuple[str, str | None, str]]:
        """(path, owner, text) of each log, its jobs' events in the order added."""
        return [(p, owner, "".join(parts)) for (p, owner), parts in self._parts.items()]

    def to_pool(self) -> None:
        """The events to the pool's event log (one write); it has no replay."""
        if self._pool:
            self.logs.to_pool_many(self._pool)


class UserLogs:
    """Open event-log writers, keyed by path; the pool's event log, if configured."""

    def __init__(self, *, fsync: bool = False, config: Any = None) -> None:
        self.fsync = fsync
        self._writers: OrderedDict[str, EventLogWriter] = OrderedDict()
        self._failed: set[str] = set()
        opts = config.get("DEFAULT_USERLOG_FORMAT_OPTIONS") if config is not None else None
        self._default: Formatter = parse_format_options(opts) if opts else _FORMAT
        self._text: Formatter = parse_format_options(opts, form="text") if opts else _FORMAT
        self._xml: Formatter = parse_format_options(opts, form="xml")
        self._json: Formatter = parse_format_options(opts, form="json")
        self.pool = PoolEventLog.from_config(config)

    def formatter(self, job_get: Any, path: str | None = None) -> Formatter:
        """The form of the job's log at ``path``: see the module docstring."""
        if job_get is None:
            return self._default
        if path is not None and path == _nodes_log(job_get) and path != log_path(job_get):
            return self._text
        use = job_get("UserLogUseXML")
        if use is None:
            return self._default
        if use is True or (type(use) is int and use & 1):
            return self._xml
        if type(use) is int and use & 2:
            return self._json
        return self._text

    def forms(self, paths: list[str], job_get: Any) -> list[tuple[str, Formatter]]:
        """Each of a job's logs with the form it is written in."""
        return [(p, self.formatter(job_get, p)) for p in paths]

    def texts(self, paths: list[str], events: list[Event], job_get: Any = None) -> dict[str, str]:
        """``events`` formatted for each log in ``paths`` (one formatting per form)."""
        done: dict[int, str] = {}
        out: dict[str, str] = {}
        for p in paths:
            f = self.formatter(job_get, p)
            text = done.get(id(f))
            if text is None:
                text = done[id(f)] = f.format_many(events)
            out[p] = text
        return out

    def to_pool(self, events: Iterable[Event], job_get: Any = None) -> None:
        """Append to the pool's event log, if there is one."""
        if self.pool is not None:
            self.pool.write(events, job_get)

    def to_pool_many(self, groups: Iterable[tuple[Iterable[Event], Any]]) -> None:
        """Append several jobs' events (``(events, job_get)`` each) in one write."""
        if self.pool is not None:
            self.pool.write_many(groups)

    def write(self, path: str | list[str] | None, events: Iterable[Event], owner: str | None = None,
              job_get: Any = None) -> None:
        """Append ``events`` to the log at ``path`` (or to each of a list of logs), in the
        form the job (``job_get``) asks for, and to the pool's event log."""
        events = list(events)
        if self.pool is not None:
            self.pool.write(events, job_get)
        paths = [path] if isinstance(path, str) else (path or [])
        if not paths:
            return
        for p, text in self.texts(paths, events, job_get).items():
            if text:
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

    def replay(self, path: str, text: str, owner: str | None, back: int = 0) -> bool:
        """Append events a schedd committed and may not have written before it died,
        unless the log's last MiB (and ``back`` bytes more: the other pending texts of
        this log, which may follow it) holds them already; whether any were appended.
        A bulk action's text (thousands of events in one write) that a kill cut short
        is completed: only what the log lacks of it is appended, so none is doubled."""
        data = text.encode("utf-8", "surrogateescape")
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - TAIL - back - len(data)))
                tail = f.read()
        except FileNotFoundError:
            tail = b""
        except OSError:
            return False
        if data in tail:
            return False
        rest = _unwritten(tail, data)
        if not rest:
            return False
        self.write_text(path, rest.decode("utf-8", "surrogateescape"), owner)
        return True

    def close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers.clear()
        if self.pool is not None:
            self.pool.close()
