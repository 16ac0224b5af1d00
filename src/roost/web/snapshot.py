"""What the dashboard shows, read from the pool through ``roost.api`` and summarized.

A :class:`Snapshot` is one consistent look at the pool: every schedd's queue (only
the few attributes a listing needs, in QUERY_JOBS's compact form), the slot ads,
the negotiator's user priorities and last cycles, and the jobs finished recently
(from each schedd's history). Pages and ``/metrics`` are answered from the latest
snapshot, never from the pool directly, so a 100,000-job queue is read once per
refresh however many browsers or scrapers ask, and a page never waits on a query
(only the very first request does).

:class:`PoolView` keeps the snapshot fresh: a request finding it older than the
refresh interval starts one refresh in a background thread and is answered with
what there is. Throughput over time comes from timestamps the pool keeps
(``QDate``, ``CompletionDate``/``EnteredCurrentStatus`` of finished jobs), so the
chart covers the last hour even right after the dashboard starts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roost.api.collector import Collector
from roost.api.errors import PoolError
from roost.api.home import read_address, run_path
from roost.api.negotiator import negotiator_connection
from roost.api.schedd import Schedd
from roost.vocabulary import JobStatus

log = logging.getLogger("roost.web")

#: JobStatus -> the name pages and metrics use (HTCondor's)
STATUS = {
    JobStatus.IDLE: "idle",
    JobStatus.RUNNING: "running",
    JobStatus.REMOVED: "removed",
    JobStatus.COMPLETED: "completed",
    JobStatus.HELD: "held",
    JobStatus.TRANSFERRING_OUTPUT: "transferring_output",
    JobStatus.SUSPENDED: "suspended",
}
#: what the queue listing needs of each job
JOB_ATTRS = ["Owner", "JobStatus", "QDate", "JobBatchName", "Cmd", "RemoteHost",
             "EnteredCurrentStatus", "RequestCpus", "HoldReason"]
SLOT_ATTRS = ["Name", "Machine", "State", "Activity", "Cpus", "Memory", "GPUs", "RemoteOwner",
              "RemoteUser", "JobId", "SlotType", "PartitionableSlot", "TotalSlotCpus",
              "TotalSlotMemory", "EnteredCurrentActivity"]
FINISHED_ATTRS = ["Owner", "JobStatus", "QDate", "CompletionDate", "EnteredCurrentStatus"]
#: the throughput chart's span and bucket, seconds
WINDOW_S = 3600
BUCKET_S = 60
#: the window the submit and completion rates of /metrics average over
RATE_WINDOW_S = 300


@dataclass(slots=True)
class Job:
    """One job of a queue listing (a tuple would be smaller; 100,000 of these are fine)."""

    schedd: str
    cluster: int
    proc: int
    owner: str
    status: int
    qdate: int
    batch: str
    cmd: str
    host: str
    since: int
    cpus: float
    hold_reason: str

    @property
    def id(self) -> str:
        return f"{self.cluster}.{self.proc}"

    def row(self) -> list[Any]:
        """The JSON form a page gets: a list, not an object (100 rows are 100 lists)."""
        return [self.schedd, self.id, self.owner, STATUS.get(self.status, str(self.status)),
                self.qdate, self.batch, self.cmd, self.host, self.since, self.hold_reason]


ROW_FIELDS = ["schedd", "id", "owner", "status", "qdate", "batch", "cmd", "host", "since", "hold_reason"]


@dataclass
class Snapshot:
    taken: float = 0.0
    took: float = 0.0
    jobs: list[Job] = field(default_factory=list)
    schedds: list[dict[str, Any]] = field(default_factory=list)
    slots: list[dict[str, Any]] = field(default_factory=list)
    users: list[dict[str, Any]] | None = None
    cycles: dict[str, Any] | None = None
    #: the connected pools (FLOCK_STATUS, docs/flocking.md); empty where flocking is off
    flock: list[dict[str, Any]] = field(default_factory=list)
    #: (schedd, cluster, proc) -> (finished at, JobStatus, QDate) of jobs finished in the window
    finished: dict[tuple[str, int, int], tuple[int, int, int]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    _by_user: dict[str, Counter[str]] | None = field(default=None, repr=False)
    _queued_ids: set[tuple[str, int, int]] | None = field(default=None, repr=False)
    _running_on: dict[str, Job] | None = field(default=None, repr=False)
    #: (submitted, completed) per second over RATE_WINDOW_S, as of ``taken``
    rate: tuple[float, float] = (0.0, 0.0)

    # -- summaries ------------------------------------------------------------------
    def by_user(self) -> dict[str, Counter[str]]:
        """Jobs per user and status name (computed once: a snapshot never changes)."""
        if self._by_user is None:
            counts: Counter[tuple[str, int]] = Counter((j.owner, j.status) for j in self.jobs)
            out: dict[str, Counter[str]] = {}
            for (owner, status), n in sorted(counts.items()):
                out.setdefault(owner, Counter())[STATUS.get(status, str(status))] += n
            self._by_user = out
        return self._by_user

    def running_on(self) -> dict[str, Job]:
        """Running jobs by the slot they run on (their RemoteHost), computed once."""
        if self._running_on is None:
            self._running_on = {j.host: j for j in self.jobs if j.status == JobStatus.RUNNING and j.host}
        return self._running_on

    def slot_states(self) -> Counter[str]:
        return Counter(str(s.get("State") or "Unknown") for s in self.slots)

    def throughput(self, now: float, window: int = WINDOW_S, bucket: int = BUCKET_S) -> dict[str, Any]:
        """Submissions and completions per ``bucket`` over the last ``window`` seconds."""
        n = window // bucket
        start = int(now) - n * bucket
        submitted, completed, removed = [0] * n, [0] * n, [0] * n

        def put(series: list[int], t: int) -> None:
            i = (t - start) // bucket
            if 0 <= i < n:
                series[i] += 1

        for j in self.jobs:
            put(submitted, j.qdate)
            if j.status == JobStatus.COMPLETED:
                put(completed, j.since)
        queued = self._queued()
        for key, (t, status, qdate) in self.finished.items():
            if key not in queued:  # a finished job left in the queue is counted there
                put(completed if status == JobStatus.COMPLETED else removed, t)
                put(submitted, qdate)
        return {"start": start, "bucket": bucket, "submitted": submitted, "completed": completed,
                "removed": removed}

    def rates(self, now: float, window: int = RATE_WINDOW_S) -> tuple[float, float]:
        """(submitted, completed) jobs per second over the last ``window`` seconds."""
        since = now - window
        sub = sum(1 for j in self.jobs if j.qdate >= since)
        done = sum(1 for j in self.jobs if j.status == JobStatus.COMPLETED and j.since >= since)
        queued = self._queued() if self.finished else set()
        for key, (t, status, qdate) in self.finished.items():
            if key in queued:  # a finished job left in the queue is counted there
                continue
            done += status == JobStatus.COMPLETED and t >= since
            sub += qdate >= since
        return sub / window, done / window

    def _queued(self) -> set[tuple[str, int, int]]:
        """The jobs still queued (a finished job left in the queue is counted once)."""
        if self._queued_ids is None:
            self._queued_ids = {(j.schedd, j.cluster, j.proc) for j in self.jobs}
        return self._queued_ids


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _int(v: Any) -> int:
    return int(v) if type(v) in (int, float) else 0


def _values(ad: dict[str, Any]) -> tuple[Any, ...]:
    """A job's fields after (schedd, cluster, proc), from its ad."""
    cpus = ad.get("RequestCpus")
    return (_str(ad.get("Owner")), _int(ad.get("JobStatus")), _int(ad.get("QDate")), _str(ad.get("JobBatchName")),
            _str(ad.get("Cmd")), _str(ad.get("RemoteHost")), _int(ad.get("EnteredCurrentStatus")),
            float(cpus) if type(cpus) in (int, float) else 1.0, _str(ad.get("HoldReason")))


def jobs_of(schedd: str, raw: dict[str, Any]) -> Iterable[Job]:
    """Jobs from a QUERY_JOBS answer in its compact form (cluster ad + proc differences):
    a proc that differs from its cluster only in ProcId shares the cluster's values."""
    clusters = raw.get("clusters") or {}
    shared: dict[int, tuple[Any, ...]] = {}
    for c, p, diff in raw.get("jobs") or ():
        if diff and (len(diff) > 1 or "ProcId" not in diff):
            vals = _values({**(clusters.get(str(c)) or {}), **diff})
        else:
            vals = shared.get(c)
            if vals is None:
                vals = shared[c] = _values(clusters.get(str(c)) or {})
        yield Job(schedd, int(c), int(p), *vals)


class PoolView:
    """The latest :class:`Snapshot` of the pool at ``home``, refreshed on demand."""

    def __init__(self, home: str, refresh_s: float = 2.0, timeout: float = 30.0) -> None:
        self.home = home
        self.refresh_s = refresh_s
        self.timeout = timeout
        self.snapshot = Snapshot()
        self._lock = threading.Lock()
        self._refreshing = False
        self._done = threading.Condition(self._lock)

    # -- keeping it fresh ------------------------------------------------------------
    def current(self, max_age: float | None = None) -> Snapshot:
        """The latest snapshot; a refresh is started when it is older than ``max_age``
        (the refresh interval by default). Only a pool never read yet is waited for."""
        age = time.time() - self.snapshot.taken
        if age > (self.refresh_s if max_age is None else max_age):
            self._start_refresh()
            if not self.snapshot.taken:
                with self._done:
                    self._done.wait_for(lambda: not self._refreshing, self.timeout)
        return self.snapshot

    def _start_refresh(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True
        threading.Thread(target=self._refresh, name="web-refresh", daemon=True).start()

    def _refresh(self) -> None:
        try:
            snap = self.read(self.snapshot)
        except Exception:  # a bug must not stop the dashboard's refreshes for good
            log.exception("reading the pool failed")
            snap = None
        with self._done:
            if snap is not None:
                self.snapshot = snap
            self._refreshing = False
            self._done.notify_all()

    # -- reading the pool --------------------------------------------------------------
    def read(self, previous: Snapshot) -> Snapshot:
        """One snapshot, from scratch except for the finished jobs already known."""
        t0 = time.time()
        snap = Snapshot(taken=t0)
        collector = Collector(self.home, timeout=self.timeout)
        try:
            snap.schedds = collector.query_objs("Scheduler", projection=["Name", "Machine", "MyAddress"])
            snap.slots = collector.query_objs("Machine", projection=SLOT_ATTRS)
        except PoolError as e:
            snap.errors.append(f"collector: {e}")
        finally:
            collector.close()
        names = [s["Name"] for s in snap.schedds if isinstance(s.get("Name"), str)] or [None]
        for name in names:
            self._read_schedd(name, snap, previous)
        self._read_negotiator(snap)
        snap.rate = snap.rates(t0)
        snap.by_user()
        snap.took = time.time() - t0
        snap.slots.sort(key=lambda s: (str(s.get("Machine", "")), str(s.get("Name", ""))))
        return snap

    def schedd(self, name: str | None, token: str | None = None) -> Schedd:
        """A client of schedd ``name`` (None or this host's: through ``run/``, else found
        through the collector); ``token``: acting for its holder, on TCP only."""
        local = read_address(run_path(self.home, "schedd.address"))
        ad = next((s for s in self.snapshot.schedds if s.get("Name") == name), None)
        if name is None or name == "local" or ad is None or (local and ad.get("MyAddress") == local):
            return Schedd(self.home, timeout=self.timeout, token=token)
        return Schedd(self.home, name=name, timeout=self.timeout, token=token)

    def _read_schedd(self, name: str | None, snap: Snapshot, previous: Snapshot) -> None:
        label = name or "local"
        local = read_address(run_path(self.home, "schedd.address"))
        ad = next((s for s in snap.schedds if s.get("Name") == name), {})
        if name is None or (local and ad.get("MyAddress") == local):
            schedd = Schedd(self.home, timeout=self.timeout)
        else:
            schedd = Schedd(self.home, name=name, timeout=self.timeout)
        try:
            raw = schedd.query_raw(None, JOB_ATTRS)
            snap.jobs.extend(jobs_of(label, raw))
            # finished jobs: those already known in the window, plus the ones since
            since = snap.taken - WINDOW_S
            known = {k: v for k, v in previous.finished.items() if k[0] == label and v[0] >= since}
            newest = max((v[0] for v in known.values()), default=int(since))
            got = schedd.history(f"EnteredCurrentStatus >= {int(newest) - 1}", FINISHED_ATTRS)
            for ad in got:
                t = _int(ad.get("CompletionDate")) or _int(ad.get("EnteredCurrentStatus"))
                if t >= since:
                    known[(label, int(ad["ClusterId"]), int(ad["ProcId"]))] = (
                        t, _int(ad.get("JobStatus")), _int(ad.get("QDate")))
            snap.finished.update(known)
        except PoolError as e:
            snap.errors.append(f"schedd {label}: {e}")
        finally:
            schedd.close()

    def _read_negotiator(self, snap: Snapshot) -> None:
        try:
            conn = negotiator_connection(self.home, min(self.timeout, 10.0))
        except PoolError as e:
            snap.errors.append(f"negotiator: {e}")
            return
        try:
            users = conn.call("USERPRIO").get("users")
            snap.users = [u for u in users if isinstance(u, dict)] if isinstance(users, list) else []
            snap.cycles = conn.call("CYCLE_STATS")
            try:
                pools = conn.call("FLOCK_STATUS").get("pools")
                snap.flock = [p for p in pools if isinstance(p, dict)] if isinstance(pools, list) else []
            except PoolError:
                snap.flock = []  # a negotiator from before flocking
        except (PoolError, OSError) as e:
            snap.errors.append(f"negotiator: {e}")
        finally:
            conn.close()
