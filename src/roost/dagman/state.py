"""The node state machine of a running DAG: pure, no processes, no sockets, no clock.

The manager (``roost.dagman.manager``) feeds it what happened (a script's exit, a
submit's cluster id, each event of the nodes' log) and asks it what to start now
(:meth:`DagRun.next_actions`, within every throttle); it never decides anything
itself. Recovery is the same code: the events of the nodes' log are fed in again,
with ``replaying`` set so that nothing is started until the log is read through.

The rules are condor_dagman's: the last part of a node to run (PRE script, job,
POST script) decides its success; a failed PRE script skips the job (and the POST
script unless ALWAYS_RUN_POST, which then sees ``$RETURN`` -1004); PRE_SKIP's exit
code marks the node done; RETRY reruns the whole node unless its result is the
UNLESS-EXIT value; ABORT-DAG-ON stops the DAG when the PRE script, the job (with no
POST script) or the POST script returns its value; the FINAL node runs last, after
success, failure or abort, and its result is the DAG's.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from roost.dagman.language import Dag, Node

# Node states, numbered as in condor_dagman's node status file (STATUS_*).
NOT_READY, READY, PRERUN, SUBMITTED, POSTRUN, DONE, ERROR, FUTILE = range(8)
STATE_NAMES = ("STATUS_NOT_READY", "STATUS_READY", "STATUS_PRERUN", "STATUS_SUBMITTED",
               "STATUS_POSTRUN", "STATUS_DONE", "STATUS_ERROR", "STATUS_FUTILE")

# $DAG_STATUS values (the DAGMan job's DAG_Status attribute).
DAG_STATUS_OK, DAG_STATUS_ERROR, DAG_STATUS_NODE_FAILED, DAG_STATUS_ABORT, DAG_STATUS_RM = 0, 1, 2, 3, 4
DAG_STATUS_CYCLE, DAG_STATUS_HALTED = 5, 6

# condor_dagman's exit codes; the DAGMan job leaves the queue on 0-2 and is restarted
# (in recovery) on anything else.
EXIT_OKAY, EXIT_ERROR, EXIT_ABORT, EXIT_RESTART = 0, 1, 2, 3

# $RETURN values that are not a job's exit code.
RETURN_SUBMIT_FAILED = -1001
RETURN_REMOVED = -1002
RETURN_PRE_FAILED = -1004

# Event numbers the machine reads (roost.eventlog.EventType values).
_SUBMIT, _EXECUTE, _EVICTED, _TERMINATED, _ABORTED, _HELD, _RELEASED, _POST = 0, 1, 4, 5, 9, 12, 13, 16
_BACK_TO_IDLE = {_EVICTED, 7}  # evicted, shadow exception: the job is idle again
_BACKGROUND = ("service", "provisioner")  # nodes that do not keep the DAG going


def _value(ev: Any) -> int:
    """A terminated event's value as $RETURN has it: the exit code, or minus the signal."""
    if ev.signal is not None and ev.return_value is None:
        return -int(ev.signal)
    return int(ev.return_value or 0)


@dataclass(frozen=True, slots=True)
class Limits:
    """Throttles: 0 means no limit (condor_submit_dag -maxjobs/-maxidle/-maxpre/-maxpost)."""

    max_jobs: int = 0
    max_idle: int = 0
    max_pre: int = 0
    max_post: int = 0
    max_submits_per_interval: int = 0
    submit_interval: float = 1.0
    always_run_post: bool = False
    max_hold_scripts: int = 0


@dataclass(frozen=True, slots=True)
class Action:
    """Something to start: a ``pre``/``post``/``hold`` script, a ``submit`` of the node's
    job, or a ``remove`` of its cluster. ``macros`` are the script's $-macros."""

    kind: str
    node: str
    macros: dict[str, str] | None = None
    cluster: int | None = None
    not_before: float = 0.0


@dataclass(slots=True)
class NodeRun:
    """What the machine knows of one node."""

    spec: Node
    order: int
    state: int = NOT_READY
    waiting: int = 0  # parents not yet done
    retries: int = 0  # attempts that failed and were retried ($RETRY)
    cluster: int | None = None
    procs: dict[int, str] = field(default_factory=dict)  # proc -> idle/run/held/done
    procs_expected: int = 0
    job_return: int | None = None  # the first failure's value, or 0
    pre_return: int | None = None
    details: str = ""
    result: int | None = None  # the value that decided the node's last attempt (PRE, job or POST)
    removing: bool = False  # we removed its job (abort, failure of another proc)
    submit_pending: bool = False  # a submit action was handed out, no cluster yet


class DagRun:
    """A DAG's run: states of its nodes, throttles, and the DAG's own end."""

    def __init__(self, dag: Dag, limits: Limits | None = None) -> None:
        self.dag = dag
        self.limits = limits or Limits()
        self.nodes: dict[str, NodeRun] = {}
        for i, (name, spec) in enumerate(dag.nodes.items()):
            self.nodes[name] = NodeRun(spec, i, waiting=len(spec.parents))
        self.final = dag.final.name if dag.final else None
        self.by_cluster: dict[int, NodeRun] = {}
        self._ready: list[tuple[int, int, str]] = []  # (-priority, order, name)
        self._to_post: deque[str] = deque()
        self._to_remove: list[tuple[str, int]] = []
        self._hold_scripts: deque[str] = deque()
        self._deferred: list[tuple[float, int, Action]] = []
        self._defer_seq = 0
        self.replaying = False
        self.pre_running = 0
        self.post_running = 0
        self.hold_running = 0
        self.jobs_queued = 0  # nodes whose job is in the queue (maxjobs)
        self.idle_procs = 0
        self.submits_pending = 0  # submits handed out, not yet answered (count as idle)
        self.held_procs = 0
        self.category_running: dict[str, int] = {}
        self._submit_times: deque[float] = deque()
        self._now = 0.0  # the time of the last next_actions
        self.status = DAG_STATUS_OK
        self.abort_return: int | None = None
        self.removed = False
        self.finished = False
        self.exit_code: int | None = None
        self.final_started = False
        self.counts = [0] * 8
        self.counts[NOT_READY] = len(self.nodes)
        self.jobs_submitted = 0  # every submit, retries included (metrics' total_jobs_run)
        self.provisioner = next((n for n, s in dag.nodes.items() if s.kind == "provisioner"), None)
        self._provisioner_up = self.provisioner is None
        self.changed = True  # for the node status file: set on every state change
        self.services = [name for name, spec in dag.nodes.items() if spec.kind == "service"]
        self._background = [0] * 8  # SERVICE and PROVISIONER nodes by state
        self._background[NOT_READY] = sum(1 for s in dag.nodes.values() if s.kind in _BACKGROUND)

    # -- start ----------------------------------------------------------------------

    def start(self, done: Iterable[str] = ()) -> None:
        """Mark DONE nodes (the DAG's DONE lines, a rescue DAG's) and queue the ready ones."""
        for name in done:
            if name in self.nodes:
                self.nodes[name].spec.done = True
        for n in self.nodes.values():
            if n.spec.done and n.spec.kind != "final":
                self._set(n, DONE)
                for c in n.spec.children:
                    self.nodes[c].waiting -= 1
        for n in self.nodes.values():
            if n.state == NOT_READY and n.waiting == 0 and n.spec.kind != "final":
                self._make_ready(n)
        self._check_end()

    # -- what to start ----------------------------------------------------------------

    def next_actions(self, now: float) -> list[Action]:
        """Everything that may start now, within the throttles; the caller starts them and
        reports back through :meth:`script_done`, :meth:`submitted` and :meth:`event`."""
        self._now = now
        out: list[Action] = []
        while self._to_remove:
            name, cluster = self._to_remove.pop()
            out.append(Action("remove", name, cluster=cluster))
        if self.replaying or self.finished:
            return out
        while self._deferred and self._deferred[0][0] <= now:
            _, _, act = heapq.heappop(self._deferred)
            if not self._script_slot(act.kind):
                # its time has come; a script that ends frees the slot (and wakes the caller)
                heapq.heappush(self._deferred, (now, self._next_seq(), act))
                break
            self._script_started(act.kind)
            out.append(act)
        while self._to_post and self._script_slot("post"):
            n = self.nodes[self._to_post.popleft()]
            self._script_started("post")
            out.append(Action("post", n.spec.name, self._macros(n, post=True)))
        while self._hold_scripts and self._script_slot("hold"):
            n = self.nodes[self._hold_scripts.popleft()]
            self._script_started("hold")
            out.append(Action("hold", n.spec.name, self._macros(n)))
        if self.status in (DAG_STATUS_ABORT, DAG_STATUS_RM) and not self.final_started:
            return out
        skipped: list[tuple[int, int, str]] = []
        while self._ready:
            item = self._ready[0]
            n = self.nodes[item[2]]
            if n.state != READY or n.submit_pending:
                heapq.heappop(self._ready)
                continue
            if not self._provisioner_up and n.spec.kind != "provisioner" and n.spec.kind != "service":
                skipped.append(heapq.heappop(self._ready))
                continue
            if "PRE" in n.spec.scripts and n.pre_return is None:
                if not self._script_slot("pre"):  # only PRE scripts wait for the PRE throttle
                    skipped.append(heapq.heappop(self._ready))
                    continue
                heapq.heappop(self._ready)
                self._set(n, PRERUN)
                self._script_started("pre")
                out.append(Action("pre", n.spec.name, self._macros(n)))
                continue
            if n.spec.noop:
                heapq.heappop(self._ready)
                self._set(n, SUBMITTED)
                self._job_finished(n, 0)
                continue
            why = self._submit_blocked(n, now)
            if why == "category":
                skipped.append(heapq.heappop(self._ready))
                continue
            if why:
                break
            heapq.heappop(self._ready)
            n.submit_pending = True
            self.submits_pending += 1
            self._set(n, SUBMITTED)
            self._count_job(n, +1)
            if self.limits.max_submits_per_interval:
                self._submit_times.append(now)
            out.append(Action("submit", n.spec.name))
        for item in skipped:
            heapq.heappush(self._ready, item)
        return out

    def next_wakeup(self, now: float | None = None) -> float | None:
        """When time alone next lets something start (a deferred script's time, the
        submit interval's window); None if only an event can. Never a time already
        past: a due script waiting for a slot is started by a script's end."""
        now = self._now if now is None else now
        times = [t for t, _, _ in self._deferred if t > now]
        times = [min(times)] if times else []
        lim = self.limits
        if lim.max_submits_per_interval and self._ready:
            while self._submit_times and self._submit_times[0] <= now - lim.submit_interval:
                self._submit_times.popleft()
            if len(self._submit_times) >= lim.max_submits_per_interval:
                times.append(self._submit_times[0] + lim.submit_interval)
        return min(times) if times else None

    def _submit_blocked(self, n: NodeRun, now: float) -> str:
        lim = self.limits
        if lim.max_jobs and self.jobs_queued >= lim.max_jobs:
            return "maxjobs"
        if lim.max_idle and self.idle_procs + self.submits_pending >= lim.max_idle:
            return "maxidle"
        cat = n.spec.category
        if cat and cat in self.dag.maxjobs and self.dag.maxjobs[cat] > 0:
            if self.category_running.get(cat, 0) >= self.dag.maxjobs[cat]:
                return "category"
        if lim.max_submits_per_interval:
            while self._submit_times and self._submit_times[0] <= now - lim.submit_interval:
                self._submit_times.popleft()
            if len(self._submit_times) >= lim.max_submits_per_interval:
                return "interval"
        return ""

    def _script_slot(self, kind: str) -> bool:
        lim = {"pre": self.limits.max_pre, "post": self.limits.max_post, "hold": self.limits.max_hold_scripts}[kind]
        running = {"pre": self.pre_running, "post": self.post_running, "hold": self.hold_running}[kind]
        return not lim or running < lim

    def _script_started(self, kind: str) -> None:
        if kind == "pre":
            self.pre_running += 1
        elif kind == "post":
            self.post_running += 1
        else:
            self.hold_running += 1

    def _next_seq(self) -> int:
        self._defer_seq += 1
        return self._defer_seq

    def failed_count(self) -> int:
        return self.counts[ERROR]

    def _macros(self, n: NodeRun, *, post: bool = False) -> dict[str, str]:
        m = {"JOB": n.spec.name, "RETRY": str(n.retries), "MAX_RETRIES": str(n.spec.retry),
             "DAG_STATUS": str(self.status), "FAILED_COUNT": str(self.failed_count())}
        if post:
            m["JOBID"] = f"{n.cluster}.{max(n.procs) if n.procs else 0}" if n.cluster is not None else ""
            m["RETURN"] = str(n.job_return if n.job_return is not None else RETURN_PRE_FAILED)
            m["PRE_SCRIPT_RETURN"] = str(n.pre_return if n.pre_return is not None else -1)
        return m

    # -- what happened ----------------------------------------------------------------

    def script_done(self, name: str, kind: str, code: int, now: float = 0.0) -> None:
        """A script exited with ``code`` (a signal as its negative)."""
        n = self.nodes[name]
        if kind == "hold":
            self.hold_running -= 1
            return
        if kind == "pre":
            self.pre_running -= 1
        else:
            self.post_running -= 1
        script = n.spec.scripts[kind.upper()]
        if script.defer_status is not None and code == script.defer_status and not self._stopping():
            macros = self._macros(n, post=kind == "post")
            heapq.heappush(self._deferred, (now + script.defer_time, self._next_seq(), Action(kind, name, macros)))
            return
        if kind == "pre":
            n.pre_return = code
            if n.spec.pre_skip is not None and code == n.spec.pre_skip:
                n.details = f"PRE script exited {code}: node skipped (PRE_SKIP)"
                self._result(n, 0, check_abort=False)
                return
            if self._abort_on(n, code):
                return
            if code != 0:
                n.details = f"PRE Script failed with status {code}"
                if self.limits.always_run_post and "POST" in n.spec.scripts:
                    n.job_return = RETURN_PRE_FAILED
                    self._set(n, POSTRUN)
                    self._to_post.append(name)
                else:
                    self._result(n, code, check_abort=False)
                return
            if self._stopping() and n.spec.kind != "final":
                self._set(n, READY)
                self._check_end()
                return
            self._set(n, READY)
            heapq.heappush(self._ready, (-n.spec.priority, n.order, name))
            return
        if code != 0:  # condor_dagman's words
            job = n.job_return if n.job_return is not None else 0
            n.details = ((f"Job exited with status {job} and " if job > 0 else
                          f"Job died on signal {-job} and " if -64 <= job < 0 else
                          f"Job failed due to DAGMAN error {job} and ") + f"POST Script failed with status {code}")
        self._result(n, code, check_abort=True)

    def submitted(self, name: str, cluster: int, count: int) -> None:
        """The node's job is in the queue as ``cluster`` with ``count`` procs."""
        n = self.nodes[name]
        if n.submit_pending:
            self.submits_pending -= 1
        n.submit_pending = False
        self.jobs_submitted += 1
        if n.cluster != cluster:
            self._new_cluster(n, cluster)
        n.procs_expected = max(n.procs_expected, count)
        for p in range(count):
            if p not in n.procs:
                n.procs[p] = "idle"
                self.idle_procs += 1
        if (self._stopping() or self.finished) and n.spec.kind != "final":
            n.removing = True
            self._to_remove.append((name, cluster))
        self._maybe_job_done(n)

    def submit_failed(self, name: str, why: str) -> None:
        """The schedd refused the node's job: a job failure with $RETURN -1001."""
        n = self.nodes[name]
        if n.submit_pending:
            self.submits_pending -= 1
        n.submit_pending = False
        n.details = f"submit failed: {why}"
        self._job_finished(n, RETURN_SUBMIT_FAILED)

    def event(self, ev: Any) -> None:
        """One event of the nodes' log (any roost.eventlog Event)."""
        etype = int(ev.type)
        if etype == _SUBMIT:
            notes = getattr(ev, "log_notes", "") or ""
            if notes.startswith("DAG Node: "):
                name = notes[10:].strip()
                n = self.nodes.get(name)
                if n is not None:
                    if n.cluster != ev.cluster:
                        if self.replaying:
                            self._replayed_submit(n)
                        self._new_cluster(n, ev.cluster)
                    if ev.proc not in n.procs:
                        n.procs[ev.proc] = "idle"
                        self.idle_procs += 1
                    if self.replaying:
                        n.procs_expected = max(n.procs_expected, len(n.procs))
            return
        if etype == _POST:
            name = getattr(ev, "dag_node_name", "") or ""
            n = self.nodes.get(name)
            if n is not None and self.replaying and n.state == POSTRUN and name in self._to_post:
                self._to_post.remove(name)
                self.post_running += 1
                code = _value(ev)
                self.script_done(name, "post", code)
            return
        n = self.by_cluster.get(ev.cluster)
        if n is None or n.cluster != ev.cluster or n.state != SUBMITTED:
            return
        proc = ev.proc
        was = n.procs.get(proc)
        if was is None or was == "done":
            return
        if etype == _EXECUTE:
            self._proc(n, proc, "run")
            if n.spec.kind == "provisioner" and not self._provisioner_up:
                self._provisioner_up = True
                self.changed = True
        elif etype in _BACK_TO_IDLE or etype == _RELEASED:
            if was in ("run", "held") and not (etype == _EVICTED and was == "held"):
                self._proc(n, proc, "idle")
        elif etype == _HELD:
            self._proc(n, proc, "held")
            if "HOLD" in n.spec.scripts and not self.replaying:
                self._hold_scripts.append(n.spec.name)
        elif etype == _TERMINATED:
            self._proc(n, proc, "done")
            value = _value(ev)
            if value != 0 and n.job_return in (None, 0):
                n.job_return = value
                n.details = (f"Job proc ({ev.cluster}.{proc}.0) failed with status {value}" if ev.signal is None
                             else f"Job proc ({ev.cluster}.{proc}.0) failed with signal {ev.signal}")
                self._remove_rest(n)
            elif n.job_return is None:
                n.job_return = 0
            self._maybe_job_done(n)
        elif etype == _ABORTED:
            self._proc(n, proc, "done")
            if not n.removing and n.job_return in (None, 0):
                n.job_return = RETURN_REMOVED
                n.details = f"HTCondor reported ULOG_JOB_ABORTED event for job proc ({ev.cluster}.{proc}.0)"
                self._remove_rest(n)
            elif n.job_return is None:
                n.job_return = RETURN_REMOVED
            self._maybe_job_done(n)

    def remove_dag(self) -> None:
        """The DAGMan job was removed (condor_rm): remove every node job, start nothing."""
        self.removed = True
        self.final_started = True  # the schedd kills a removed DAGMan job soon: no FINAL
        if self.status not in (DAG_STATUS_ABORT,):
            self.status = DAG_STATUS_RM
        self._remove_all()
        self._check_end()

    def end_replay(self) -> None:
        """The nodes' log has been read through: from now on actions are handed out."""
        self.replaying = False
        self._check_end()

    # -- transitions ------------------------------------------------------------------

    def _set(self, n: NodeRun, state: int) -> None:
        self.counts[n.state] -= 1
        self.counts[state] += 1
        if n.spec.kind in _BACKGROUND:
            self._background[n.state] -= 1
            self._background[state] += 1
            if n.spec.kind == "provisioner" and state in (DONE, ERROR, FUTILE):
                self._provisioner_up = True  # it will not run: the rest need not wait for it
        n.state = state
        self.changed = True

    def _make_ready(self, n: NodeRun) -> None:
        if self._stopping() and n.spec.kind != "final":
            return
        n.pre_return = None
        n.job_return = None
        self._set(n, READY)
        heapq.heappush(self._ready, (-n.spec.priority, n.order, n.spec.name))

    def _new_cluster(self, n: NodeRun, cluster: int) -> None:
        n.cluster = cluster
        n.procs = {}
        n.procs_expected = 0
        n.job_return = None
        n.removing = False
        self.by_cluster[cluster] = n
        if n.state != SUBMITTED:
            # seen in the log before (recovery): the job was submitted, PRE passed
            if n.state == READY or n.state == PRERUN:
                if n.state == PRERUN:
                    self.pre_running = max(0, self.pre_running - 1)
                self._set(n, SUBMITTED)
                self._count_job(n, +1)
                self.jobs_submitted += 1

    def _replayed_submit(self, n: NodeRun) -> None:
        """Recovery: a node's job was submitted, so every ancestor had finished, even
        those whose end the log cannot show (NOOP nodes, PRE_SKIP, a PRE script that
        failed and was retried): mark them done the way they would have been."""
        if n.spec.kind == "final" and n.state == NOT_READY:
            self.final_started = True
            self._make_ready(n)
            return
        if n.state != NOT_READY:
            return
        stack = [p for p in n.spec.parents if self.nodes[p].state != DONE]
        order: list[NodeRun] = []
        seen: set[str] = set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            order.append(self.nodes[name])
            stack.extend(p for p in self.nodes[name].spec.parents if self.nodes[p].state != DONE)
        for p in reversed(order):  # ancestors first
            if p.state == PRERUN:
                self.pre_running = max(0, self.pre_running - 1)
            if p.state != DONE:
                self._result(p, 0, check_abort=False)

    def _proc(self, n: NodeRun, proc: int, state: str) -> None:
        was = n.procs.get(proc)
        if was == "idle":
            self.idle_procs -= 1
        elif was == "held":
            self.held_procs -= 1
        n.procs[proc] = state
        if state == "idle":
            self.idle_procs += 1
        elif state == "held":
            self.held_procs += 1
        self.changed = True

    def _remove_rest(self, n: NodeRun) -> None:
        if any(s != "done" for s in n.procs.values()) and not n.removing and n.cluster is not None:
            n.removing = True
            self._to_remove.append((n.spec.name, n.cluster))

    def _maybe_job_done(self, n: NodeRun) -> None:
        if n.state != SUBMITTED or n.submit_pending or not n.procs:
            return
        if len(n.procs) < n.procs_expected or any(s != "done" for s in n.procs.values()):
            return
        self._job_finished(n, n.job_return if n.job_return is not None else 0)

    def _count_job(self, n: NodeRun, step: int) -> None:
        """A node's job entering (+1) or leaving (-1) the queue, for MAXJOBS and the
        categories; SERVICE and PROVISIONER jobs last the DAG's life and do not count
        (else ``-maxjobs 1`` and one of them would wait forever)."""
        if n.spec.kind in _BACKGROUND:
            return
        self.jobs_queued = max(0, self.jobs_queued + step)
        cat = n.spec.category
        if cat:
            self.category_running[cat] = max(0, self.category_running.get(cat, 0) + step)

    def _job_finished(self, n: NodeRun, value: int) -> None:
        n.job_return = value
        if not n.spec.noop:
            self._count_job(n, -1)
        if self._stopping() and n.removing:
            self._set(n, ERROR)  # removed by an abort or rm: no POST script
            self._check_end()
            return
        if "POST" in n.spec.scripts:
            self._set(n, POSTRUN)
            self._to_post.append(n.spec.name)
            return
        if value != 0 and not n.details:
            n.details = f"job failed with status {value}"
        self._result(n, value, check_abort=True)

    def _abort_on(self, n: NodeRun, value: int) -> bool:
        if n.spec.abort_on is None or n.spec.abort_on[0] != value:
            return False
        self._set(n, ERROR)
        n.result = value
        n.details = f"ABORT-DAG-ON: node returned {value}"
        if self.status != DAG_STATUS_RM:
            self.status = DAG_STATUS_ABORT
            ret = n.spec.abort_on[1]
            self.abort_return = ret if ret is not None else value
        self._remove_all()
        self._check_end()
        return True

    def _result(self, n: NodeRun, value: int, *, check_abort: bool) -> None:
        """The node's outcome: 0 is success, anything else failure (retried if it may be)."""
        n.result = value
        if check_abort and self._abort_on(n, value):
            return
        if value == 0:
            self._set(n, DONE)
            n.details = n.details if n.details.endswith("(PRE_SKIP)") else ""
            for c in n.spec.children:
                child = self.nodes[c]
                child.waiting -= 1
                if child.waiting == 0 and child.state == NOT_READY:
                    self._make_ready(child)
        elif (n.retries < n.spec.retry and not self._stopping()
              and (n.spec.unless_exit is None or value != n.spec.unless_exit)):
            n.retries += 1
            self._make_ready(n)
        else:
            self._set(n, ERROR)
            if n.spec.retry > 0:
                n.details += f" (after {n.retries} node retries)"
            if n.spec.kind != "final" and n.spec.kind not in _BACKGROUND and self.status == DAG_STATUS_OK:
                self.status = DAG_STATUS_NODE_FAILED
        self._check_end()

    def _stopping(self) -> bool:
        return self.status in (DAG_STATUS_ABORT, DAG_STATUS_RM)

    def _remove_all(self) -> None:
        for name, n in self.nodes.items():
            if n.state == SUBMITTED and n.cluster is not None and not n.removing and n.spec.kind != "final":
                n.removing = True
                self._to_remove.append((name, n.cluster))
            elif n.state == READY and n.spec.kind != "final":
                self._set(n, NOT_READY)

    def _busy(self) -> bool:
        """Anything but SERVICE/PROVISIONER nodes still in flight (a script, a job, a
        ready node that may yet start)."""
        if self._deferred or self._to_post:
            return True
        for s in (PRERUN, SUBMITTED, POSTRUN):
            if self.counts[s] - self._background[s] > 0:
                return True
        if not self._stopping():
            final_ready = 1 if self.final and self.nodes[self.final].state == READY else 0
            if self.counts[READY] - self._background[READY] - final_ready > 0:
                return True
        return False

    def _check_end(self) -> None:
        if self.replaying or self.finished or self._busy():
            return
        if self.final and not self.final_started:
            self.final_started = True
            f = self.nodes[self.final]
            if f.state == NOT_READY:
                self._make_ready(f)
            return
        if self.final and self.nodes[self.final].state not in (DONE, ERROR, NOT_READY):
            return
        for n in self.nodes.values() if self._background[SUBMITTED] else ():
            if n.spec.kind in _BACKGROUND and n.state == SUBMITTED and n.cluster is not None and not n.removing:
                n.removing = True
                self._to_remove.append((n.spec.name, n.cluster))
        self._finish()

    def _finish(self) -> None:
        for n in self.nodes.values():
            if n.state in (NOT_READY, READY) and n.spec.kind != "final":
                self._set(n, FUTILE)
        if self.final is not None and self.final_started:
            ok = self.nodes[self.final].state == DONE
            code = EXIT_OKAY if ok else EXIT_ERROR
            if self.removed:
                code = EXIT_ABORT
            elif ok:
                self.status = DAG_STATUS_OK
        elif self.removed:
            code = EXIT_ABORT
        elif self.status == DAG_STATUS_ABORT:
            code = (self.abort_return or 0) & 0xFF if self.abort_return is not None else EXIT_ABORT
        elif self.status == DAG_STATUS_OK and all(n.state == DONE or n.spec.kind in _BACKGROUND
                                                   for n in self.nodes.values()):
            code = EXIT_OKAY
        else:
            code = EXIT_ERROR
            if self.status == DAG_STATUS_OK:
                self.status = DAG_STATUS_NODE_FAILED
        self.exit_code = code
        self.finished = True
        self.changed = True

    # -- reading ----------------------------------------------------------------------

    def done_nodes(self) -> list[str]:
        return [name for name, n in self.nodes.items() if n.state == DONE and n.spec.kind != "final"]

    def summary(self) -> dict[str, int]:
        c = self.counts
        return {"total": len(self.nodes), "done": c[DONE], "pre": c[PRERUN], "queued": c[SUBMITTED],
                "post": c[POSTRUN], "ready": c[READY], "unready": c[NOT_READY], "failed": c[ERROR],
                "futile": c[FUTILE], "held": self.held_procs, "idle": self.idle_procs}
