"""condor_watch_q's picture of jobs, built from their event logs: each job's state after
its latest event, rows grouped by batch name, log or cluster, and the screen the tool
draws (table with a progress bar per row, total progress bar, summary, "Updated at").

Pure: events in, lines out; the command (``watch_q_cmd``) reads the logs and the clock.
The layout is condor_watch_q's: column names (``BATCH``, ``IDLE``, ``RUN``, ``DONE``,
``TOTAL``, ``JOB_IDS`` ...), a state's column only when some row has such jobs (IDLE,
RUN and DONE always), empty cells as ``-``, bars drawn with ``- > = > # ! ! !``.
"""

from __future__ import annotations

import os.path
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from roost.eventlog.events import Event, EventType
from roost.eventlog.run_events import FileTransferEvent, FileTransferType

REMOVED, HELD, SUSPENDED, IDLE, INPUT, RUN, OUTPUT, DONE = (
    "REMOVED", "HELD", "SUSPENDED", "IDLE", "INPUT", "RUN", "OUTPUT", "DONE")
#: the state columns, in condor_watch_q's order
STATES = (REMOVED, HELD, SUSPENDED, IDLE, INPUT, RUN, OUTPUT, DONE)
ACTIVE = frozenset({IDLE, INPUT, RUN, OUTPUT, HELD, SUSPENDED})
EXITED = frozenset({REMOVED, DONE})
TOTAL, JOB_IDS = "TOTAL", "JOB_IDS"
#: the key column's header per -groupby
GROUP_HEADERS = {"batch": "BATCH", "log": "LOG", "cluster": "CLUSTER"}
_ALWAYS = frozenset({IDLE, RUN, DONE})

#: the state a job is in after each event (040 is read by its Type)
_AFTER = {
    EventType.SUBMIT: IDLE,
    EventType.JOB_EVICTED: IDLE,
    EventType.JOB_RELEASED: IDLE,
    EventType.SHADOW_EXCEPTION: IDLE,
    EventType.JOB_RECONNECT_FAILED: IDLE,
    # condor_watch_q counts an unsuspended job as idle; it runs again, so roost says RUN
    EventType.JOB_UNSUSPENDED: RUN,
    EventType.JOB_TERMINATED: DONE,
    EventType.EXECUTE: RUN,
    EventType.JOB_HELD: HELD,
    EventType.JOB_SUSPENDED: SUSPENDED,
    EventType.JOB_ABORTED: REMOVED,
}

#: progress bar: (state, character) left to right
_BAR = ((IDLE, "-"), (INPUT, ">"), (RUN, "="), (OUTPUT, ">"), (DONE, "#"), (HELD, "!"),
        (SUSPENDED, "!"), (REMOVED, "!"))
_BAR_COLORS = {IDLE: "\033[93m", INPUT: "\033[36m", RUN: "\033[36m", OUTPUT: "\033[36m",
               DONE: "\033[32m", HELD: "\033[31m", SUSPENDED: "\033[31m", REMOVED: "\033[31m"}
_RESET = "\033[0m"
#: the summary line: its states (running counts transfers too) and words
_SUMMARY = (((DONE,), "completed"), ((REMOVED,), "removed"), ((IDLE,), "idle"),
            ((INPUT, RUN, OUTPUT), "running"), ((HELD,), "held"), ((SUSPENDED,), "suspended"))


def state_after(event: Event) -> str | None:
    """The state ``event`` puts its job in; None for events that change nothing."""
    if isinstance(event, FileTransferEvent):
        if event.transfer_type == FileTransferType.IN_STARTED:
            return INPUT
        if event.transfer_type == FileTransferType.OUT_STARTED:
            return OUTPUT
        return None
    return _AFTER.get(event.type)


@dataclass
class Cluster:
    """One cluster's jobs as its log tells them."""

    cluster_id: int
    log: str
    batch_name: str | None = None  # a DAG node's: its DAG's (the DAGMan job's batch name)
    procs: int | None = None  # TotalSubmitProcs from the queue, when it was there
    states: dict[int, str] = field(default_factory=dict)

    @property
    def num_jobs(self) -> int:
        return self.procs if self.procs is not None else len(self.states)

    def done(self) -> bool:
        """Every job it has seen has left the queue (completed or removed)."""
        return all(s in EXITED for s in self.states.values())

    def group(self, by: str) -> str:
        if by == "log":
            return self.log
        if by == "cluster":
            return str(self.cluster_id)
        return self.batch_name or f"ID: {self.cluster_id}"


class Tracker:
    """Every tracked job's state, fed the events of the logs as they grow."""

    def __init__(self, batch_names: dict[int, str | None] | None = None, procs: dict[int, int] | None = None,
                 clusters: set[int] | None = None, since: int | None = None,
                 dag_logs: dict[str, str] | None = None, dag_totals: dict[str, int] | None = None) -> None:
        """``dag_logs``: a DAG's nodes log -> the DAG's batch name (its node jobs are one
        row, whatever their own clusters); ``dag_totals``: batch name -> DAG_NodesTotal."""
        self.batch_names = dict(batch_names or {})
        self.dag_logs = dict(dag_logs or {})
        self.dag_totals = dict(dag_totals or {})
        self.hidden: set[int] = set()  # clusters tracked (for -exit) but not shown: DAGMan jobs
        self.procs = dict(procs or {})
        self.only = clusters  # None: every cluster the logs hold
        self.since = since
        self.clusters: dict[int, Cluster] = {}

    def feed(self, log: str, events: Iterable[Event]) -> None:
        for event in events:
            if self.only is not None and event.cluster not in self.only:
                continue
            if self.since is not None and event.cluster < self.since:
                continue
            state = state_after(event)
            if state is None:
                continue
            cluster = self.clusters.get(event.cluster)
            if cluster is None:
                batch = self.dag_logs.get(log) or self.batch_names.get(event.cluster)
                cluster = self.clusters[event.cluster] = Cluster(event.cluster, log, batch, self.procs.get(event.cluster))
            cluster.states[event.proc] = state

    def job_states(self) -> list[str]:
        return [s for c in self.clusters.values() for s in c.states.values()]


def exit_met(grouper: str, status: str, states: list[str]) -> bool:
    """An ``-exit GROUPER,STATUS`` condition: all/any/none of the jobs are ``status``
    (``active``: in the queue; ``done``, ``idle``, ``held``)."""
    def check(s: str) -> bool:
        if status == "active":
            return s in ACTIVE
        return s == {"done": DONE, "idle": IDLE, "held": HELD}[status]

    hits = [check(s) for s in states]
    if grouper == "all":
        return all(hits)
    if grouper == "any":
        return any(hits)
    return not any(hits)


def nice_path(path: str, home: str, cwd: str) -> str:
    """The shortest way to write ``path``: absolute, from ``~``, or from ``.`` when it is
    under the working directory (how condor_watch_q names a log)."""
    choices = [os.path.abspath(path), os.path.join("~", os.path.relpath(path, home))]
    below = os.path.relpath(path, cwd)
    if not below.startswith("../"):
        choices.append(os.path.join(".", below))
    return min(choices, key=len)


def rows(tracker: Tracker, by: str, home: str = "/", cwd: str = "/") -> tuple[list[dict[str, object]], dict[str, int]]:
    """The table's rows (active groups first, then by their first cluster id) and the
    totals over all of them; logs are named relative to ``home`` or ``cwd`` where shorter."""
    groups: dict[str, list[Cluster]] = {}
    for c in tracker.clusters.values():
        if c.cluster_id in tracker.hidden:
            continue
        groups.setdefault(c.group(by), []).append(c)
    totals = {s: 0 for s in (*STATES, TOTAL)}
    out: list[tuple[tuple[int, int], dict[str, object]]] = []
    for name, clusters in groups.items():
        row: dict[str, object] = {s: 0 for s in STATES}
        active: list[tuple[int, int]] = []
        for c in clusters:
            for proc, state in c.states.items():
                row[state] = int(row[state]) + 1  # type: ignore[call-overload]
                if state in ACTIVE:
                    active.append((c.cluster_id, proc))
        row[TOTAL] = max(sum(c.num_jobs for c in clusters), tracker.dag_totals.get(name, 0) if by == "batch" else 0)
        active.sort()
        shown = [active[0], active[-1]] if len(active) > 2 else active
        row[JOB_IDS] = (" ... " if len(active) > 2 else ", ").join(f"{c}.{p}" for c, p in shown)
        row["key"] = nice_path(name, home, cwd) if by == "log" else name
        for s in (*STATES, TOTAL):
            totals[s] += int(row[s])  # type: ignore[call-overload]
        first = min(c.cluster_id for c in clusters)
        running = any(not c.done() for c in clusters)
        out.append(((0 if running else 1, first), row))
    out.sort(key=lambda kv: kv[0])
    return [r for _, r in out], totals


def progress_bar(counts: dict[str, int] | dict[str, object], width: int, color: bool = False) -> str:
    """``[---===###]``: each state's share of the TOTAL, the rounding left-over to the
    longest part."""
    inner = min(width, 79) - 2
    total = int(counts.get(TOTAL, 0) or 0)  # type: ignore[call-overload]
    lengths = [int(inner * (int(counts.get(s, 0) or 0) / total)) if total else 0  # type: ignore[call-overload]
               for s, _ in _BAR]
    longest = lengths.index(max(lengths))
    lengths[longest] += inner - sum(lengths)
    parts = []
    for (state, char), n in zip(_BAR, lengths, strict=True):
        text = char * n
        parts.append(f"{_BAR_COLORS[state]}{text}{_RESET}" if color and text else text)
    return "[" + "".join(parts) + "]"


def _row_color(row: dict[str, object]) -> str:
    if row.get(HELD):
        return "\033[31m"
    if row.get(DONE) == row.get(TOTAL):
        return "\033[32m"
    if row.get(RUN):
        return "\033[36m"
    if row.get(IDLE):
        return "\033[33m"
    return "\033[97m"


def table(rows_: list[dict[str, object]], by: str, columns: int, row_bars: bool = True,
          color: bool = False) -> list[str]:
    """The table: a header and a line per row, with each row's progress bar where the
    terminal has more than 10 columns left."""
    headers = [GROUP_HEADERS[by]]
    headers += [s for s in STATES if s in _ALWAYS or any(r[s] for r in rows_)]
    headers += [TOTAL, JOB_IDS]
    keys = ["key", *headers[1:]]
    cells = [[(str(r[k]) if r.get(k) not in (0, None) else "-") + " " for k in keys] for r in rows_]
    widths = [max([len(h), *(len(c[i]) for c in cells)]) for i, h in enumerate(headers)]
    left = {0, len(headers) - 1}  # the key and JOB_IDS read left to right; counts are right-aligned

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) if i in left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths, strict=True)))

    out = [line(headers).rstrip()]
    plain = [line(c) for c in cells]
    remaining = columns - len(plain[0]) if plain else columns
    for r, text in zip(rows_, plain, strict=True):
        shown = f"{_row_color(r)}{text}{_RESET}" if color else text
        if row_bars and remaining > 10:
            out.append(shown + progress_bar(r, remaining, color))
        else:
            out.append(shown[:columns] if not color else shown)
    return out


def summary(totals: dict[str, int], columns: int) -> str:
    """``Total: 10 jobs; 4 completed, 6 running``, words cut short to fit ``columns``."""
    cut = 10
    while True:
        parts = []
        for states, word in _SUMMARY:
            n = sum(totals.get(s, 0) for s in states)
            if n > 0:
                parts.append(f"{n} {word[:cut]}")
        text = f"Total: {totals.get(TOTAL, 0)} jobs; " + ", ".join(parts)
        if len(text) <= columns or cut <= 2:
            return text
        cut -= 1


def summary_percentages(totals: dict[str, int]) -> str:
    """``-summary-type percentages``: every state's share, rounded as Python rounds."""
    total = totals.get(TOTAL, 0)
    parts = [f"{round(100.0 * sum(totals.get(s, 0) for s in states) / total) if total else 0}% {word}"
             for states, word in _SUMMARY]
    return f"Total: {total} jobs; " + ", ".join(parts)


def screen(tracker: Tracker, by: str, columns: int, now: str, *, show_table: bool = True,
           show_progress: bool = True, row_bars: bool = True, show_summary: bool = True,
           updated_at: bool = True, color: bool = False, home: str = "/", cwd: str = "/",
           percentages: bool = False, shorten: Callable[[str], str] | None = None) -> list[str]:
    """Everything condor_watch_q draws once, sections separated by a blank line;
    ``shorten`` rewrites the LOG column's paths (-abbreviate)."""
    rows_, totals = rows(tracker, by, home, cwd)
    if by == "log" and shorten is not None:
        for r in rows_:
            r["key"] = shorten(str(r["key"]))
    sections: list[list[str]] = []
    if show_table:
        sections.append(table(rows_, by, columns, row_bars, color))
    if show_progress:
        sections.append(["Total Progress: " + progress_bar(totals, columns - 16, color)])
    if show_summary:
        sections.append([summary_percentages(totals) if percentages else summary(totals, columns)])
    if updated_at:
        sections.append([f"Updated at {now}"])
    out: list[str] = []
    for i, s in enumerate(sections):
        if i:
            out.append("")
        out += s
    return out
