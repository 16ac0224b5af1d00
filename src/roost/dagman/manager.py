"""The DAG manager process (``python -m roost.dagman``): a thin shell around
:class:`roost.dagman.state.DagRun`.

It reads the DAG, rebuilds its state from ``FILE.dag.nodes.log`` when it is a
restart (the lock file is there), then loops: start what the state machine hands out
(scripts, submits, removes), read what the nodes' log says happened (woken by
inotify, never by polling the queue), and write ``FILE.dag.dagman.out``, the node
status file, the jobstate log and, at the end, ``FILE.dag.metrics`` and a rescue
DAG. It talks to its schedd through the connection the schedd handed it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from typing import Any

from roost.dagman import reports
from roost.dagman.language import Dag, DagError
from roost.dagman.rescue import next_rescue, read_rescue, rescue_numbers, rescue_path, rescue_text
from roost.dagman.startup import Inotify, drop_privileges, parse_args
from roost.dagman.state import (
    DAG_STATUS_ABORT,
    DAG_STATUS_RM,
    DONE,
    ERROR,
    EXIT_ABORT,
    EXIT_ERROR,
    EXIT_RESTART,
    Action,
    DagRun,
    Limits,
)
from roost.dagman.submitdag import files_of, load
from roost.eventlog import EventLogFollower, EventLogWriter, PostScriptTerminatedEvent

_SPECIAL = ("JOB", "RETRY", "MAX_RETRIES", "DAG_STATUS", "FAILED_COUNT", "JOBID", "RETURN", "PRE_SCRIPT_RETURN")


def _int_knob(cfg: Any, name: str, default: int) -> int:
    if cfg is None:
        return default
    try:
        v = cfg.get_int(name, default)
    except Exception:  # a bad value: the default, as condor_dagman falls back
        return default
    return default if v is None else v


def _bool_knob(cfg: Any, name: str, default: bool) -> bool:
    if cfg is None:
        return default
    try:
        v = cfg.get_bool(name, default)
    except Exception:
        return default
    return default if v is None else bool(v)


class Manager:
    def __init__(self, ns: argparse.Namespace) -> None:
        if len(ns.dag) > 1:
            raise DagError(ns.dag[1], 0, "one DAG file per run (combine them with INCLUDE or SPLICE)")
        self.ns = ns
        self.dag_file = os.path.abspath(ns.dag[0])
        self.dag_dir = os.path.dirname(self.dag_file)
        self.files = files_of(self.dag_file)
        if ns.lockfile:
            self.files["lock"] = os.path.abspath(ns.lockfile)
        self.out = open(self.files["dagman.out"], "a", encoding="utf-8", buffering=1 << 16)
        self.job_id = os.environ.get("CONDOR_ID", "")
        self.cluster = int(self.job_id.split(".")[0]) if self.job_id else None
        self.started = time.time()
        self.wake = asyncio.Event()
        self.stop_reason: str | None = None
        self.schedd: Any = None
        self.owner = ""
        self.cfg: Any = None
        self.nodes_log = self.files["nodes.log"]
        self.jobstate: Any = None
        self.status_file: str | None = None
        self.status_every = 60
        self.next_status = 0.0
        self.dot_count = 0
        self.rescue_number = 0
        self.run: DagRun | None = None
        self.dag: Dag | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.batch_name = ""
        self.published: dict[str, int] = {}
        self.saved: set[str] = set()
        self.start_from: str | None = None
        self.hold_claim = 20
        self.next_publish = 0.0
        self.printed: tuple[int, ...] = ()  # the counts the last node table showed

    # -- output -----------------------------------------------------------------------

    def say(self, text: str) -> None:
        stamp = time.strftime("%m/%d/%y %H:%M:%S")
        for line in text.splitlines() or [""]:
            self.out.write(f"{stamp} {line}\n")

    def state_line(self, node: str, event: str, condor_id: str = "-", seq: int | str = "-") -> None:
        if self.jobstate is not None:
            self.jobstate.write(reports.jobstate_line(time.time(), node, event, condor_id, "-", seq))

    def summary(self) -> None:
        """condor_dagman's node table, in its layout (reports.progress_text)."""
        assert self.run is not None
        self.say(reports.progress_text(self.run))
        self.printed = self._progress_key()

    def _progress_key(self) -> tuple[int, ...]:
        assert self.run is not None  # condor_dagman's: idle procs alone do not print it
        s = self.run.summary()
        return (s["total"], s["done"], s["failed"], s["queued"], s["ready"], s["pre"] + s["post"], s["held"])

    def summary_if_changed(self) -> None:
        """The table again when a count changed since it was last printed, as
        condor_dagman prints it after each cycle that changed one (here: each batch of
        events and starts, once the nodes log has nothing more)."""
        if self._progress_key() != self.printed:
            self.summary()
            if self.dag is not None and self.dag.dot is not None and self.dag.dot[1]:
                self.write_dot(time.time())

    # -- set-up -----------------------------------------------------------------------

    def configure(self) -> Limits:
        # lazy: the configuration only for the manager, not for the language's users
        from roost.config import Config, ConfigError

        try:
            self.cfg = Config.load(subsys="DAGMAN")
        except (ConfigError, OSError) as e:
            # the pool's files may be closed to the owner: the schedd passes its DAGMAN_*
            # knobs in the environment (_ROOST_DAGMAN_*), which this still reads
            self.say(f"cannot read the pool's configuration ({e}); using the schedd's DAGMAN_* settings")
            try:
                self.cfg = Config.load(env={**os.environ, "ROOST_CONFIG": "ONLY_ENV"}, subsys="DAGMAN")
            except (ConfigError, OSError) as e2:
                self.say(f"WARNING: no configuration ({e2}); DAGMAN_* defaults apply")
        assert self.dag is not None
        extra = self.ns.config or self.dag.config
        if extra:
            path = extra if os.path.isabs(extra) else os.path.join(self.dag_dir, extra)
            self.say(f"Using DAGMan config file: {path}")
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                base = self.cfg
                own = Config.from_text(text, file=path)
                self.cfg = _Layered(own, base)
            except (OSError, ConfigError) as e:
                raise DagError(path, 0, f"DAGMan config file: {e}") from None
        ns, k = self.ns, _int_knob
        always = _bool_knob(self.cfg, "DAGMAN_ALWAYS_RUN_POST", False)
        if ns.alwaysrunpost:
            always = True
        if ns.dontalwaysrunpost:
            always = False
        self.hold_claim = k(self.cfg, "DAGMAN_HOLD_CLAIM_TIME", 20)
        limits = Limits(
            max_jobs=ns.maxjobs if ns.maxjobs is not None else k(self.cfg, "DAGMAN_MAX_JOBS_SUBMITTED", 0),
            max_idle=ns.maxidle if ns.maxidle is not None else k(self.cfg, "DAGMAN_MAX_JOBS_IDLE", 1000),
            max_pre=ns.maxpre if ns.maxpre is not None else k(self.cfg, "DAGMAN_MAX_PRE_SCRIPTS", 20),
            max_post=ns.maxpost if ns.maxpost is not None else k(self.cfg, "DAGMAN_MAX_POST_SCRIPTS", 20),
            max_submits_per_interval=k(self.cfg, "DAGMAN_MAX_SUBMITS_PER_INTERVAL", 1000),
            submit_interval=float(k(self.cfg, "DAGMAN_USER_LOG_SCAN_INTERVAL", 1)),
            always_run_post=always,
            max_hold_scripts=k(self.cfg, "DAGMAN_MAX_HOLD_SCRIPTS", 20),
        )
        # the settings in force, as condor_dagman's dagman.out lists them at its start
        for knob, value in (("DAGMAN_MAX_SUBMITS_PER_INTERVAL", limits.max_submits_per_interval),
                            ("DAGMAN_USER_LOG_SCAN_INTERVAL", int(limits.submit_interval)),
                            ("DAGMAN_MAX_JOBS_IDLE", limits.max_idle),
                            ("DAGMAN_MAX_JOBS_SUBMITTED", limits.max_jobs),
                            ("DAGMAN_MAX_PRE_SCRIPTS", limits.max_pre),
                            ("DAGMAN_MAX_POST_SCRIPTS", limits.max_post),
                            ("DAGMAN_MAX_HOLD_SCRIPTS", limits.max_hold_scripts),
                            ("DAGMAN_ALWAYS_RUN_POST", limits.always_run_post),
                            ("DAGMAN_HOLD_CLAIM_TIME", self.hold_claim)):
            self.say(f"{knob} setting: {value}")
        return limits

    def read_lock(self) -> dict[str, Any] | None:
        try:
            with open(self.files["lock"], encoding="utf-8") as f:
                return json.loads(f.read() or "{}")
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}

    def write_lock(self) -> None:
        tmp = self.files["lock"] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"job": self.job_id, "pid": os.getpid(), "rescue": self.rescue_number,
                       "start_from": self.start_from, "started": self.started}, f)
        os.replace(tmp, self.files["lock"])

    def connect(self) -> None:
        # lazy: the API (sockets, the submit language) only in the manager process
        from roost.api.schedd import INHERITED_FD_ENV, Schedd, current_user

        self.schedd = Schedd.inherited() if os.environ.get(INHERITED_FD_ENV) else Schedd()
        self.owner = current_user()
        if self.cluster is not None:
            got = self.schedd.query(f"ClusterId == {self.cluster}", ["Owner", "JobBatchName"])
            if got:
                self.owner = str(got[0].get("Owner") or self.owner)
                self.batch_name = str(got[0].get("JobBatchName") or "")

    # -- the run ----------------------------------------------------------------------

    async def main(self) -> int:
        loop = asyncio.get_running_loop()  # from the start: a removal during a long replay counts
        loop.add_signal_handler(signal.SIGUSR1, self.removed)
        loop.add_signal_handler(signal.SIGTERM, self.stopped)
        self.say("******************************************************")
        self.say(f"** roost DAGMan (pid {os.getpid()}) for {self.dag_file}, job {self.job_id or '(none)'}")
        self.say("******************************************************")
        try:
            dag = self.dag = load(self.dag_file)
        except DagError as e:
            self.say(f"ERROR: {e}")
            return self.exit(EXIT_ERROR, None)
        limits = self.configure()
        lock = self.read_lock()
        recovery = lock is not None or self.ns.dorecovery
        done: set[str] = set()
        start_from: str | None = None
        if recovery and lock:  # the same start as the run this one carries on
            start_from = lock.get("start_from") if isinstance(lock.get("start_from"), str) else None
            self.rescue_number = lock["rescue"] if isinstance(lock.get("rescue"), int) else 0
        elif self.ns.load_save:
            start_from = _save_path(self.dag_dir, self.ns.load_save)
        else:
            if self.ns.dorescuefrom:
                self.rescue_number = self.ns.dorescuefrom
            elif self.ns.autorescue:
                numbers = rescue_numbers(self.dag_file, os.listdir(self.dag_dir))
                self.rescue_number = numbers[-1] if numbers else 0
            if self.rescue_number:
                start_from = rescue_path(self.dag_file, self.rescue_number)
        self.start_from = start_from
        if start_from:
            path = start_from
            try:
                with open(path, encoding="utf-8") as f:
                    done, retries = read_rescue(path, f.read(), dag.nodes)
            except (OSError, DagError) as e:
                self.say(f"ERROR: rescue DAG {path}: {e}")
                return self.exit(EXIT_ERROR, None)
            if not _bool_knob(self.cfg, "DAGMAN_RESET_RETRIES_UPON_RESCUE", True):
                for name, left in retries.items():
                    dag.nodes[name].retry = left
            self.say(f"Starting from {path}: {len(done)} node(s) DONE")
        run = self.run = DagRun(dag, limits)
        self.say(f"DAG {self.dag_file}: {len(dag.nodes)} nodes; maxjobs {limits.max_jobs}, "
                 f"maxidle {limits.max_idle}, maxpre {limits.max_pre}, maxpost {limits.max_post}")
        if dag.jobstate_log:
            path = os.path.join(self.dag_dir, dag.jobstate_log)
            self.jobstate = open(path, "a", encoding="utf-8", buffering=1 << 16)
        if dag.node_status_file:
            self.status_file = os.path.join(self.dag_dir, dag.node_status_file[0])
            self.status_every = dag.node_status_file[1]
        try:
            self.connect()
        except Exception as e:  # the schedd is not there: the job restarts
            self.say(f"ERROR: cannot reach the schedd: {e}")
            return self.exit(EXIT_RESTART, None)
        if not recovery:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.nodes_log)
        self.write_lock()
        open(self.nodes_log, "a").close()
        follower = EventLogFollower(self.nodes_log)
        run.replaying = recovery
        run.start(done)
        if recovery:
            self.say("Running in RECOVERY mode: reading the nodes log")
            events = follower.poll()
            for ev in events:
                run.event(ev)
            run.end_replay()
            self.say(f"Recovery: {len(events)} event(s) read")
            self.summary()
        if dag.dot is not None:
            self.write_dot(time.time())
        self.state_line("INTERNAL", f"*** DAGMAN_STARTED {self.job_id or '-'} ***")
        return await self.loop(follower)

    async def loop(self, follower: EventLogFollower) -> int:
        run = self.run
        assert run is not None
        loop = asyncio.get_running_loop()
        notify: Inotify | None = None
        try:
            notify = Inotify(self.nodes_log)
            loop.add_reader(notify.fd, self.wake.set)
        except (OSError, AttributeError) as e:
            self.say(f"inotify unavailable ({e}): polling the nodes log")
        while True:
            if self.stop_reason == "term":
                self.say("Received SIGTERM: stopping; the schedd restarts this DAG in recovery mode")
                return self.exit(EXIT_RESTART, None)
            if self.stop_reason == "rm":
                return self.remove_all()
            now = time.time()
            for act in run.next_actions(now):
                self.start(act, now)
            if notify is not None:
                notify.drain()
            events = follower.poll()
            for ev in events:
                self.log_event(ev)
                run.event(ev)
            if events:
                continue
            if run.finished and not self.tasks:  # its scripts (a HOLD script, say) done too
                for act in run.next_actions(now):  # removes of service nodes
                    self.start(act, now)
                break
            self.summary_if_changed()
            self.write_status(now)
            self.publish(now)
            self.out.flush()
            wake_at = run.next_wakeup(now)
            timeout = 0.25 if notify is None else 5.0
            if wake_at is not None:
                timeout = max(0.0, min(timeout, wake_at - now))
            self.wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout)
        if notify is not None:
            loop.remove_reader(notify.fd)
            notify.close()
        if run.exit_code is not None:
            code = run.exit_code
        else:
            code = EXIT_ABORT if self.stop_reason == "rm" else EXIT_ERROR
        return self.exit(code, run)

    def removed(self) -> None:
        """SIGUSR1: the DAGMan job was removed (condor_rm)."""
        self.stop_reason = "rm"
        self.wake.set()

    def remove_all(self) -> int:
        """The DAG was removed: the rescue DAG first (the schedd kills us a few seconds
        after the signal), then every node job in one request."""
        run = self.run
        assert run is not None
        self.say("Received SIGUSR1")
        self.say("Aborting DAG...")  # the DAG was removed: a rescue DAG, then its node jobs removed
        run.remove_dag()
        self.write_rescue(run, time.time())
        actions = run.next_actions(time.time())
        try:
            if self.cluster is not None:
                got = self.schedd.act("remove", constraint=f"DAGManJobId == {self.cluster}",
                                      reason=f"DAG {os.path.basename(self.dag_file)} was removed")
                self.say(f"Removed {got.get('count', 0)} node job(s)")
            else:
                for act in actions:
                    if act.kind == "remove":
                        self.start(act, time.time())
        except Exception as e:
            self.say(f"WARNING: removing the node jobs: {e}")
        return self.exit(EXIT_ABORT, run, rescued=True)

    def stopped(self) -> None:
        self.stop_reason = "term"
        self.wake.set()

    # -- starting things --------------------------------------------------------------

    def start(self, act: Action, now: float) -> None:
        run = self.run
        assert run is not None and self.dag is not None
        if act.kind in ("pre", "submit") and act.node in self.dag.save_points and act.node not in self.saved:
            self.save_point(act.node, now)
        if act.kind == "submit":
            self.submit(act.node)
        elif act.kind == "remove":
            try:
                self.schedd.act("remove", constraint=f"ClusterId == {act.cluster}",
                                reason=f"DAG node {act.node}: removed by DAGMan")
                self.say(f"Removed the job(s) of node {act.node} ({act.cluster})")
            except Exception as e:
                self.say(f"WARNING: removing node {act.node}'s job {act.cluster}: {e}")
        else:
            task = asyncio.ensure_future(self.script(act))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def submit(self, name: str) -> None:
        # lazy: the submit language only in the manager
        from roost.api.errors import PoolError
        from roost.api.submitting import submit_description
        from roost.submit import SubmitError
        from roost.submit.reading import parse_text

        run, dag = self.run, self.dag
        assert run is not None and dag is not None
        n = run.nodes[name]
        spec = n.spec
        cwd = os.path.join(self.dag_dir, spec.dir) if spec.dir else self.dag_dir
        try:
            if spec.kind == "subdag":
                path, text = self.subdag_submit(name, cwd)
            elif spec.inline is not None:
                path, text = f"{spec.where[0]}:{spec.where[1]}", _queued(spec.inline)
            elif spec.description is not None:
                path, text = f"SUBMIT-DESCRIPTION {spec.description}", _queued(dag.descriptions[spec.description])
            else:
                assert spec.submit is not None
                path = os.path.join(cwd, spec.submit)
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            append = self.node_lines(name)
            overrides = {}
            if self.batch_name:
                overrides["batch_name"] = self.batch_name
            if spec.priority:
                overrides["priority"] = str(spec.priority)
            desc = parse_text(text, file=path, cwd=cwd, overrides=overrides, append=append)
            result = submit_description(self.schedd.call, desc, owner=self.owner, qdate=int(time.time()))
        except ConnectionError:
            raise  # the schedd is gone: the manager restarts and recovers
        except (SubmitError, OSError, DagError) as e:
            self.say(f"ERROR: submitting node {name}: {e}")
            run.submit_failed(name, str(e))
            return
        except PoolError as e:
            code = getattr(e, "code", "")
            if code and code not in ("NO_SCHEDD",):
                self.say(f"ERROR: the schedd refused node {name}: {e}")
                run.submit_failed(name, str(e))
                return
            raise
        cluster, count = result.clusters[0]
        run.submitted(name, cluster, count)
        self.say(f"Submitted node {name}: {count} job proc(s) as cluster {cluster}")
        self.state_line(name, "SUBMIT", f"{cluster}.0", n.retries + 1)

    def node_lines(self, name: str) -> list[str]:
        """What DAGMan adds to a node's submit description: its VARS, then the lines
        that tie its job to this DAG."""
        run = self.run
        assert run is not None
        n = run.nodes[name]
        spec = n.spec
        special = {"JOB": name, "RETRY": str(n.retries), "DAG_STATUS": str(run.status),
                   "FAILED_COUNT": str(run.failed_count()), "MAX_RETRIES": str(spec.retry)}
        # HTCondor's DAGMan defines these as submit variables of every node job, so its
        # submit file may say `output = $(JOB).out`, `arguments = $(JOB) $(RETRY)` (the
        # commonest DAG idiom); a node's own VARS come after them and win
        lines = [f"JOB = {name}", f"RETRY = {n.retries}", f"DAG_STATUS = {run.status}",
                 f"FAILED_COUNT = {run.failed_count()}", f"DAG_PARENT_NAMES = {','.join(spec.parents)}"]
        for var, value in spec.vars:  # a macro, or (+attr, My.attr) a job attribute
            lines.append(f"{var} = {_expand_special(value, special)}")
        if self.cluster is not None:
            lines.append(f"+DAGManJobId = {self.cluster}")
        lines.append(f'+DAGNodeName = "{name}"')
        if spec.parents:
            parents = ",".join(spec.parents)
            if len(parents) < 8000:
                lines.append(f'+DAGParentNodeNames = "{parents}"')
        if spec.children and self.hold_claim > 0:
            # the schedd keeps the slot for the children (DAGMAN_HOLD_CLAIM_TIME)
            lines.append(f"+KeepClaimIdle = {self.hold_claim}")
        lines.append(f"dagman_log = {self.nodes_log}")
        lines.append(f"submit_event_notes = DAG Node: {name}")
        return lines

    def subdag_submit(self, name: str, cwd: str) -> tuple[str, str]:
        """A SUBDAG EXTERNAL node's job: the nested DAG's own DAGMan job."""
        # lazy: only SUBDAG EXTERNAL nodes
        from roost.dagman.submitdag import Options, prepare, write

        spec = self.run.nodes[name].spec  # type: ignore[union-attr]
        assert spec.submit is not None
        prepared = prepare(os.path.join(cwd, spec.submit), Options(update_submit=True))
        write(prepared)
        return prepared.sub_file, prepared.text

    async def script(self, act: Action) -> None:
        run = self.run
        assert run is not None
        n = run.nodes[act.node]
        script = n.spec.scripts[act.kind.upper()]
        argv = [_special_word(w, act.macros or {}) for w in shlex.split(script.command)]
        cwd = os.path.join(self.dag_dir, n.spec.dir) if n.spec.dir else self.dag_dir
        kind = act.kind.upper()
        self.say(f"Running {kind} script of node {act.node}: {' '.join(argv)}")
        self.state_line(act.node, f"{kind}_SCRIPT_STARTED", f"{n.cluster}.0" if n.cluster else "-", n.retries + 1)
        out: Any = asyncio.subprocess.DEVNULL
        err: Any = asyncio.subprocess.DEVNULL
        debug = None
        if script.debug_file:
            debug = open(os.path.join(cwd, script.debug_file), "ab")
            if script.debug_type in ("STDOUT", "ALL"):
                out = debug
            if script.debug_type in ("STDERR", "ALL"):
                err = debug
        exe = argv[0] if os.path.isabs(argv[0]) or "/" not in argv[0] and not os.path.exists(
            os.path.join(cwd, argv[0])) else os.path.join(cwd, argv[0])
        try:
            proc = await asyncio.create_subprocess_exec(exe, *argv[1:], cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=out, stderr=err)
            rc = await proc.wait()
        except OSError as e:
            self.say(f"ERROR: {kind} script of node {act.node} could not run: {e}")
            rc = 1
        finally:
            if debug is not None:
                debug.close()
        code = rc if rc >= 0 else rc  # a signal: its negative, as $RETURN has it
        self.say(f"{kind} script of node {act.node} exited {code}")
        if act.kind == "post":
            ev = PostScriptTerminatedEvent(n.cluster if n.cluster is not None else -1, 0, time.time(),
                                           return_value=code if code >= 0 else None,
                                           signal=-code if code < 0 else None, dag_node_name=act.node)
            with EventLogWriter(self.nodes_log) as w:  # before the result counts: recovery reads it
                w.write(ev)
            self.state_line(act.node, "POST_SCRIPT_TERMINATED", "-", n.retries + 1)
        if act.kind != "hold":
            self.state_line(act.node, f"{kind}_SCRIPT_{'SUCCESS' if code == 0 else 'FAILURE'}", "-", n.retries + 1)
        run.script_done(act.node, act.kind, code, time.time())
        self.wake.set()

    def log_event(self, ev: Any) -> None:
        run = self.run
        assert run is not None
        n = run.by_cluster.get(ev.cluster)
        name = n.spec.name if n is not None else None
        etype = int(ev.type)
        if name is None:
            if etype == 0 and getattr(ev, "log_notes", "").startswith("DAG Node: "):
                name = ev.log_notes[10:].strip()
            else:
                return
        label = {0: "SUBMIT", 1: "EXECUTE", 5: "JOB_TERMINATED", 9: "JOB_ABORTED", 12: "JOB_HELD",
                 13: "JOB_RELEASED", 4: "JOB_EVICTED", 16: "POST_SCRIPT_TERMINATED"}.get(etype)
        if label is None:
            return
        # condor_dagman's line: the event's name, the node, its job id, the event's time
        when = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(ev.timestamp))
        self.say(f"Event: ULOG_{label} for HTCondor Node {name} ({ev.cluster}.{ev.proc}.0) {{{when}}}")
        if etype == 5:
            if ev.signal is None and not ev.return_value:
                self.say(f"Node {name} job proc ({ev.cluster}.{ev.proc}.0) completed successfully.")
            elif ev.signal is None:
                self.say(f"Node {name} job proc ({ev.cluster}.{ev.proc}.0) failed with status {ev.return_value}.")
            else:
                self.say(f"Node {name} job proc ({ev.cluster}.{ev.proc}.0) failed with signal {ev.signal}.")
        if etype in (1, 5, 9, 12, 13, 4) and n is not None:
            self.state_line(name, label, f"{ev.cluster}.{ev.proc}", n.retries + 1)
            if etype == 5:
                ok = ev.signal is None and not ev.return_value
                self.state_line(name, "JOB_SUCCESS" if ok else "JOB_FAILURE",
                                str(ev.return_value if ev.signal is None else -ev.signal), n.retries + 1)

    def write_status(self, now: float, force: bool = False) -> None:
        """NODE_STATUS_FILE: when a node changed (or ALWAYS-UPDATE), at most once per
        its min-update-time; ``force``: the last one, at the end."""
        run = self.run
        assert run is not None and self.dag is not None
        if self.status_file and (force or (now >= self.next_status and (run.changed or
                                                                           self.dag.node_status_file[2]))):
            self.next_status = now + self.status_every
            text = reports.node_status_text(run, [self.dag_file], now=now, next_update=self.next_status)
            _replace(self.status_file, text)
        run.changed = False

    def write_dot(self, now: float) -> None:
        """DOT: condor_dagman writes the picture once the DAG is read and, with UPDATE,
        each time its node table changes; DONT-OVERWRITE gives each picture the first
        free ``file.N`` name, counting on from the last one."""
        run = self.run
        assert run is not None and self.dag is not None and self.dag.dot is not None
        dot_file, _update, overwrite, include = self.dag.dot
        inc = None
        if include:
            try:
                with open(os.path.join(self.dag_dir, include), encoding="utf-8") as f:
                    inc = f.read()
            except OSError as e:
                self.say(f"Can't open dot include file {include}: {e.strerror}")
        target = os.path.join(self.dag_dir, dot_file)
        if not overwrite:
            while os.path.exists(f"{target}.{self.dot_count}"):
                self.dot_count += 1
            target = f"{target}.{self.dot_count}"
            self.dot_count += 1
        try:
            _replace(target, reports.dot_text(run, inc, include or "", now=now))
        except OSError as e:
            self.say(f"Can't create dot file '{target}': {e.strerror}")

    def save_point(self, name: str, now: float) -> None:
        """SAVE_POINT_FILE: the DAG's state as this node starts, once a run, as a partial
        rescue DAG in save_files/ (``submit_dag -load_save FILE`` starts from it)."""
        assert self.dag is not None and self.run is not None
        self.saved.add(name)
        path = _save_path(self.dag_dir, self.dag.save_points[name])
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _replace(path, rescue_text(self.dag_file, self.run, now=now, reason=f"save point of node {name}"))
            self.say(f"Wrote save point file {path} (node {name})")
        except OSError as e:
            self.say(f"WARNING: save point file {path}: {e}")

    def publish(self, now: float, force: bool = False) -> None:
        """The DAG's progress in the DAGMan job's own ad (DAG_NodesDone ...), for
        ``roost q``: when it changed, at most once a second."""
        run = self.run
        if run is None or self.cluster is None or self.schedd is None:
            return
        s = run.summary()
        attrs = {"DAG_NodesTotal": s["total"], "DAG_NodesDone": s["done"], "DAG_NodesPrerun": s["pre"],
                 "DAG_NodesQueued": s["queued"], "DAG_NodesPostrun": s["post"], "DAG_NodesReady": s["ready"],
                 "DAG_NodesUnready": s["unready"], "DAG_NodesFailed": s["failed"], "DAG_NodesFutile": s["futile"],
                 "DAG_JobsIdle": s["idle"], "DAG_JobsHeld": s["held"], "DAG_JobsSubmitted": run.jobs_submitted,
                 "DAG_Status": run.status}
        if attrs == self.published or (not force and now < self.next_publish):
            return
        self.next_publish = now + 1.0
        try:
            self.schedd.edit(self.job_id, attrs)
            self.published = attrs
        except Exception as e:  # progress is informational: the DAG goes on
            self.say(f"WARNING: cannot update the DAGMan job's progress: {e}")

    def write_rescue(self, run: DagRun, now: float) -> None:
        numbers = rescue_numbers(self.dag_file, os.listdir(self.dag_dir))
        number = next_rescue(numbers, _int_knob(self.cfg, "DAGMAN_MAX_RESCUE_NUM", 100))
        if number > 0:
            path = rescue_path(self.dag_file, number)
            why = "the DAG was removed" if run.status == DAG_STATUS_RM else ""
            _replace(path, rescue_text(self.dag_file, run, now=now, reason=why))
            self.say(f"Writing Rescue DAG to {path}...")

    def exit(self, code: int, run: DagRun | None, *, rescued: bool = False) -> int:
        now = time.time()
        if run is not None:
            # condor_dagman's lines, which users and tutorials grep for: the last
            # cycle's table, the verdict, the table once more, EXITING
            self.summary_if_changed()
            if code == 0 and all(n.state == DONE for n in run.nodes.values() if n.spec.kind != "service"):
                self.say("All jobs Completed!")
            elif code != EXIT_RESTART and not rescued:
                if run.status not in (DAG_STATUS_ABORT, DAG_STATUS_RM) and any(
                        n.state == ERROR for n in run.nodes.values()):
                    self.say("ERROR: the following job(s) failed:")
                    self.say(reports.failed_nodes_text(run))
                if code != 0:
                    self.say("Aborting DAG...")
            if code not in (0, EXIT_RESTART) and not run.replaying and not rescued:
                self.write_rescue(run, now)
            self.summary()
            self.publish(now, force=True)
            metrics = reports.metrics(run, dagman_id=self.job_id, start=self.started, end=now,
                                      rescue_number=self.rescue_number)
            metrics["exitcode"] = code
            _replace(self.files["metrics"], reports.metrics_text(metrics))
            self.write_status(now, force=True)
            self.state_line("INTERNAL", f"*** DAGMAN_FINISHED {code} ***")
        if code != EXIT_RESTART:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.files["lock"])
        self.say(f"**** roost.dagman (condor_DAGMAN) pid {os.getpid()} EXITING WITH STATUS {code}")
        self.out.flush()
        if self.jobstate is not None:
            self.jobstate.flush()
        return code


class _Layered:
    """A DAG's own configuration (CONFIG / -config) over the pool's."""

    def __init__(self, own: Any, base: Any) -> None:
        self.own, self.base = own, base

    def _pick(self, method: str, name: str, default: Any) -> Any:
        if self.own.get(name) is not None:
            return getattr(self.own, method)(name, default)
        return getattr(self.base, method)(name, default) if self.base is not None else default

    def get_int(self, name: str, default: Any = None) -> Any:
        return self._pick("get_int", name, default)

    def get_bool(self, name: str, default: Any = None) -> Any:
        return self._pick("get_bool", name, default)


def _save_path(dag_dir: str, name: str) -> str:
    """A save point file's path: a bare name lives in the DAG's save_files/ directory."""
    if os.sep in name:
        return os.path.join(dag_dir, name)
    return os.path.join(dag_dir, "save_files", name)


def _replace(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _queued(text: str) -> str:
    """An inline submit description (``JOB X { ... }``, SUBMIT-DESCRIPTION) without a
    queue statement queues one job, as HTCondor's DAGMan does."""
    # lazy: the submit language, as the rest of a node's submission
    from roost.submit.lexer import is_queue_statement

    if any(is_queue_statement(line) for line in text.splitlines()):
        return text
    return text.rstrip("\n") + "\nqueue\n"


def _expand_special(value: str, special: dict[str, str]) -> str:
    """$(JOB), $(RETRY) ... in a VARS value, through the one macro scanner; every other
    reference is left for the submit language."""
    if "$" not in value:
        return value
    # lazy: only VARS values that hold a macro pay for the scanner
    from roost.config.macros import expand
    from roost.submit.macros import SUBMIT_SYNTAX

    return expand(value, lambda func, body: special.get(body.strip()) if not func else None, SUBMIT_SYNTAX)


def _special_word(word: str, macros: dict[str, str]) -> str:
    """A script argument that is exactly ``$JOB``, ``$RETURN``, ... becomes its value."""
    if word.startswith("$") and word[1:] in _SPECIAL:
        return macros.get(word[1:], word)
    return word


def main(argv: list[str] | None = None) -> int:
    ns = parse_args(sys.argv[1:] if argv is None else argv)
    drop_privileges()
    try:
        manager = Manager(ns)
    except (DagError, OSError) as e:
        print(f"roost.dagman: {e}", file=sys.stderr)
        return EXIT_ERROR
    try:
        return asyncio.run(manager.main())
    except Exception as e:
        manager.say(f"ERROR: {type(e).__name__}: {e}")
        # lazy: only a crash needs it
        import traceback

        # lazy: likewise
        from roost.api.errors import PoolError

        manager.say(traceback.format_exc())
        # the schedd went away: the job restarts and recovers; anything else would only
        # fail again, so the job ends (its lock file stays: a resubmit recovers)
        transient = isinstance(e, (ConnectionError, PoolError, OSError))
        code = EXIT_RESTART if transient else EXIT_ERROR
        manager.say(f"**** roost.dagman (condor_DAGMAN) pid {os.getpid()} EXITING WITH STATUS {code}")
        manager.out.flush()
        return code


__all__ = ["Manager", "main", "parse_args"]
