"""The DAG node state machine, driven as the manager drives it: HTCondor's rules of
node success and failure, RETRY, ABORT-DAG-ON, FINAL, throttles, and recovery from
the nodes' log.

:class:`Sim` plays the manager: it asks :meth:`DagRun.next_actions`, answers each
submit with ``submitted()`` and the events the schedd would write to the nodes' log,
each script with ``script_done()``, each remove with the aborted events, and keeps
the nodes' log it wrote so that a run can be recovered from any point of it.
"""

from __future__ import annotations

from collections import Counter

import pytest

from roost.dagman.language import parse_text
from roost.dagman.state import (
    DAG_STATUS_ABORT,
    DAG_STATUS_NODE_FAILED,
    DAG_STATUS_OK,
    DAG_STATUS_RM,
    DONE,
    ERROR,
    FUTILE,
    NOT_READY,
    POSTRUN,
    PRERUN,
    READY,
    SUBMITTED,
    Action,
    DagRun,
    Limits,
)
from roost.eventlog import (
    AbortedEvent,
    ExecuteEvent,
    HeldEvent,
    PostScriptTerminatedEvent,
    ReleasedEvent,
    SubmitEvent,
    TerminatedEvent,
)

RM = "rm"  # a job "value": the job is removed from outside (condor_rm of the node job)


def sig(n: int) -> tuple[str, int]:
    """A job "value": killed by signal ``n``."""
    return ("sig", n)


class Sim:
    """A tiny manager around a DagRun. Script and job results come from ``pre``,
    ``post`` and ``jobs`` (node -> value, or a list of values indexed by the node's
    retry count; 0 when not given). Everything handed out is in ``actions``; the nodes'
    log written is ``log``."""

    def __init__(self, text: str | None = None, limits: Limits | None = None, *, dag=None,
                 pre=None, post=None, jobs=None, procs=None, done=(), replay=None) -> None:
        self.dag = dag if dag is not None else parse_text(text or "")
        self.run = DagRun(self.dag, limits)
        self.codes = {"pre": dict(pre or {}), "post": dict(post or {}), "job": dict(jobs or {})}
        self.procs = dict(procs or {})
        self.now = 0.0
        self.next_cluster = 100
        self.log: list = []
        self.actions: list[Action] = []
        self.scripts: list[Action] = []  # running
        self.jobs: dict[int, tuple[str, dict[int, str]]] = {}  # cluster -> node, proc -> state
        self.peak: Counter[str] = Counter()
        if replay is not None:
            self.run.replaying = True
            self.log = list(replay)
        self.run.start(done)
        if replay is not None:
            for ev in replay:
                self.run.event(ev)
                self._note(ev)
            self.run.end_replay()

    def _note(self, ev) -> None:
        """Recovery: the jobs the replayed log leaves in the queue are this manager's too."""
        if isinstance(ev, SubmitEvent):
            self.jobs.setdefault(ev.cluster, (ev.log_notes[10:], {}))[1][ev.proc] = "idle"
            self.next_cluster = max(self.next_cluster, ev.cluster + 1)
        elif isinstance(ev, ExecuteEvent):
            self.jobs[ev.cluster][1][ev.proc] = "run"
        elif isinstance(ev, (TerminatedEvent, AbortedEvent)):
            self.jobs[ev.cluster][1][ev.proc] = "done"

    # -- the nodes' log --------------------------------------------------------------
    def emit(self, ev) -> None:
        self.log.append(ev)
        self.run.event(ev)

    def value(self, kind: str, node: str):
        v = self.codes[kind].get(node, 0)
        if isinstance(v, list):
            v = v[min(self.run.nodes[node].retries, len(v) - 1)]
        return v

    # -- one round ---------------------------------------------------------------------
    def step(self) -> list[Action]:
        acts = self.run.next_actions(self.now)
        for act in acts:
            self.actions.append(act)
            if act.kind == "submit":
                cluster = self.next_cluster
                self.next_cluster += 1
                count = self.procs.get(act.node, 1)
                self.run.submitted(act.node, cluster, count)
                self.jobs[cluster] = (act.node, {p: "idle" for p in range(count)})
                for p in range(count):
                    self.emit(SubmitEvent(cluster, p, self.now, submit_host="<127.0.0.1:9618>",
                                          log_notes=f"DAG Node: {act.node}"))
            elif act.kind == "remove":
                assert act.cluster is not None
                _node, procs = self.jobs[act.cluster]
                for p, s in procs.items():
                    if s != "done":
                        procs[p] = "done"
                        self.emit(AbortedEvent(act.cluster, p, self.now, reason="removed by DAGMan"))
            else:
                self.scripts.append(act)
        self._peaks()
        return acts

    def _peaks(self) -> None:
        running = [name for name, procs in self.jobs.values() if any(s != "done" for s in procs.values())]
        self.peak["jobs"] = max(self.peak["jobs"], len(running))
        for kind in ("pre", "post"):
            self.peak[kind] = max(self.peak[kind], sum(1 for a in self.scripts if a.kind == kind))
        for cat, n in Counter(self.dag.nodes[x].category for x in running).items():
            if cat:
                self.peak["cat:" + cat] = max(self.peak["cat:" + cat], n)
        idle = sum(1 for _n, procs in self.jobs.values() for s in procs.values() if s == "idle")
        self.peak["idle"] = max(self.peak["idle"], idle)

    def finish_script(self, act: Action) -> None:
        self.scripts.remove(act)
        if act.kind == "hold":
            self.run.script_done(act.node, "hold", 0, self.now)
            return
        code = self.value(act.kind, act.node)
        if act.kind == "post":  # as the manager: the 016 event is written before the result counts
            cluster = self.run.nodes[act.node].cluster
            self.log.append(PostScriptTerminatedEvent(
                cluster if cluster is not None else -1, 0, self.now, return_value=code if code >= 0 else None,
                signal=-code if code < 0 else None, dag_node_name=act.node))
        self.run.script_done(act.node, act.kind, code, self.now)

    def execute(self, cluster: int) -> None:
        _node, procs = self.jobs[cluster]
        for p, s in procs.items():
            if s == "idle":
                procs[p] = "run"
                self.emit(ExecuteEvent(cluster, p, self.now, execute_host="<127.0.0.1:9620>"))

    def finish_job(self, cluster: int) -> None:
        node, procs = self.jobs[cluster]
        v = self.value("job", node)
        for p, s in list(procs.items()):
            if s == "done":
                continue
            pv = v.get(p, 0) if isinstance(v, dict) else v
            if s == "idle":
                procs[p] = "run"
                self.emit(ExecuteEvent(cluster, p, self.now, execute_host="<127.0.0.1:9620>"))
            procs[p] = "done"
            if pv == RM:
                self.emit(AbortedEvent(cluster, p, self.now, reason="removed by someone"))
            elif isinstance(pv, tuple):
                self.emit(TerminatedEvent(cluster, p, self.now, signal=pv[1]))
            else:
                self.emit(TerminatedEvent(cluster, p, self.now, return_value=pv))

    def running_jobs(self) -> list[int]:
        return [c for c, (_n, procs) in self.jobs.items() if any(s != "done" for s in procs.values())]

    def go(self, *, one_at_a_time: bool = False, rounds: int = 500) -> Sim:
        """Run to the end: each round hands out what may start, then finishes every
        running script and job (or only the oldest one)."""
        for _ in range(rounds):
            acts = self.step()
            if self.run.finished and not self.scripts and not self.running_jobs():
                self.step()  # the removes of the end (service nodes)
                return self
            work: list = [("s", a) for a in self.scripts] + [("j", c) for c in self.running_jobs()]
            if not work:
                wake = self.run.next_wakeup()
                if wake is not None and not acts:
                    self.now = max(self.now + 1, wake)
                    continue
                if not acts:
                    raise AssertionError(f"stuck: nothing runs and the DAG is not finished ({self.states()})")
                continue
            for what, item in work[:1] if one_at_a_time else work:
                if what == "s":
                    self.finish_script(item)
                else:
                    self.finish_job(item)
            self.now += 1
        raise AssertionError("the DAG did not finish")

    # -- reading -------------------------------------------------------------------------
    def kinds(self, node: str) -> list[str]:
        return [a.kind for a in self.actions if a.node == node]

    def submits(self) -> list[str]:
        return [a.node for a in self.actions if a.kind == "submit"]

    def macros(self, kind: str, node: str) -> list[dict[str, str]]:
        return [a.macros or {} for a in self.actions if a.kind == kind and a.node == node]

    def states(self) -> dict[str, int]:
        return {name: n.state for name, n in self.run.nodes.items()}


DIAMOND = """\
JOB A a.sub
JOB B b.sub
JOB C c.sub
JOB D d.sub
PARENT A CHILD B C
PARENT B C CHILD D
"""


# -- node success and failure ---------------------------------------------------------------


def test_a_diamond_runs_in_order_and_succeeds() -> None:
    sim = Sim(DIAMOND).go()
    subs = sim.submits()
    assert subs[0] == "A" and set(subs[1:3]) == {"B", "C"} and subs[3] == "D" and len(subs) == 4
    assert sim.run.finished and sim.run.exit_code == 0 and sim.run.status == DAG_STATUS_OK
    assert set(sim.states().values()) == {DONE}
    assert sim.run.summary()["done"] == 4


def test_nothing_is_handed_out_before_start_is_seen_through() -> None:
    run = DagRun(parse_text(DIAMOND))
    run.start()
    first = run.next_actions(0.0)
    assert [(a.kind, a.node) for a in first] == [("submit", "A")]
    assert run.next_actions(0.0) == []  # not handed out twice
    assert run.nodes["A"].state == SUBMITTED and run.nodes["B"].state == NOT_READY


def test_a_failed_job_fails_its_node_its_descendants_are_futile_the_rest_runs() -> None:
    sim = Sim(DIAMOND + "JOB X x.sub\nJOB Y y.sub\nPARENT X CHILD Y\n", jobs={"B": 1}).go()
    assert sim.run.nodes["B"].state == ERROR
    assert sim.run.nodes["D"].state == FUTILE
    assert sim.run.nodes["C"].state == DONE and sim.run.nodes["Y"].state == DONE  # as much as possible runs
    assert "D" not in sim.submits()
    assert sim.run.exit_code == 1 and sim.run.status == DAG_STATUS_NODE_FAILED
    assert "failed with status 1" in sim.run.nodes["B"].details


def test_the_post_script_decides_and_sees_the_jobs_return() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nSCRIPT POST A post.sh\nSCRIPT POST B post.sh\n"
    sim = Sim(text, jobs={"A": 3, "B": 0}, post={"A": 0, "B": 1}).go()
    assert sim.run.nodes["A"].state == DONE  # job failed, POST succeeded: success
    assert sim.run.nodes["B"].state == ERROR  # job succeeded, POST failed: failure
    (ma,) = sim.macros("post", "A")
    assert ma["RETURN"] == "3" and ma["JOB"] == "A" and ma["RETRY"] == "0"
    assert ma["JOBID"] == f"{sim.run.nodes['A'].cluster}.0"
    assert ma["PRE_SCRIPT_RETURN"] == "-1"  # no PRE script
    assert sim.run.exit_code == 1


def test_the_post_script_sees_the_pre_scripts_return() -> None:
    sim = Sim("JOB A a.sub\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh\n", jobs={"A": 4}).go()
    assert sim.kinds("A") == ["pre", "submit", "post"]
    (m,) = sim.macros("post", "A")
    assert (m["PRE_SCRIPT_RETURN"], m["RETURN"]) == ("0", "4")


def test_a_failed_pre_script_skips_the_job_and_the_post_script() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh\n"
    sim = Sim(text, pre={"A": 3}).go()
    assert sim.kinds("A") == ["pre"]
    assert sim.run.nodes["A"].state == ERROR and sim.run.nodes["B"].state == FUTILE
    assert "PRE Script failed with status 3" in sim.run.nodes["A"].details
    assert sim.run.exit_code == 1


@pytest.mark.parametrize("post_code, state", [(0, DONE), (2, ERROR)])
def test_always_run_post_runs_the_post_script_after_a_failed_pre(post_code, state) -> None:
    text = "JOB A a.sub\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh\n"
    sim = Sim(text, Limits(always_run_post=True), pre={"A": 3}, post={"A": post_code}).go()
    assert sim.kinds("A") == ["pre", "post"]  # no job
    (m,) = sim.macros("post", "A")
    assert (m["RETURN"], m["PRE_SCRIPT_RETURN"]) == ("-1004", "3")
    assert sim.run.nodes["A"].state == state
    assert sim.run.exit_code == (0 if state == DONE else 1)


def test_always_run_post_without_a_post_script_fails_on_the_pre() -> None:
    sim = Sim("JOB A a.sub\nSCRIPT PRE A pre.sh\n", Limits(always_run_post=True), pre={"A": 3}).go()
    assert sim.kinds("A") == ["pre"] and sim.run.nodes["A"].state == ERROR


def test_pre_skip_marks_the_node_done_without_job_or_post() -> None:
    text = ("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh\n"
            "PRE_SKIP A 7\n")
    sim = Sim(text, pre={"A": 7}).go()
    assert sim.kinds("A") == ["pre"]
    assert sim.run.nodes["A"].state == DONE and sim.submits() == ["B"]
    assert sim.run.exit_code == 0


def test_pre_skip_with_another_non_zero_code_is_a_failure() -> None:
    text = "JOB A a.sub\nSCRIPT PRE A pre.sh\nPRE_SKIP A 7\n"
    sim = Sim(text, pre={"A": 6}).go()
    assert sim.run.nodes["A"].state == ERROR and sim.submits() == []


def test_a_noop_node_runs_no_job_and_its_children_run() -> None:
    sim = Sim("JOB A a.sub NOOP\nJOB B b.sub\nPARENT A CHILD B\n").go()
    assert sim.submits() == ["B"]
    assert sim.run.nodes["A"].state == DONE and sim.run.exit_code == 0


def test_done_nodes_are_not_run() -> None:
    text = DIAMOND.replace("JOB A a.sub", "JOB A a.sub DONE")
    sim = Sim(text).go()
    assert sorted(sim.submits()) == ["B", "C", "D"]
    sim2 = Sim(DIAMOND, done=["A", "B"]).go()  # a rescue DAG's DONE lines
    assert sim2.submits() == ["C", "D"] and sim2.run.exit_code == 0


def test_a_dag_of_done_nodes_finishes_at_start() -> None:
    run = DagRun(parse_text("JOB A a.sub DONE\n"))
    run.start()
    assert run.finished and run.exit_code == 0 and run.next_actions(0.0) == []


def test_signal_nine_gives_return_minus_nine() -> None:
    sim = Sim("JOB A a.sub\nSCRIPT POST A post.sh\nJOB B b.sub\n", jobs={"A": sig(9), "B": sig(9)},
              post={"A": 1}).go()
    (m,) = sim.macros("post", "A")
    assert m["RETURN"] == "-9"
    assert "signal 9" in sim.run.nodes["B"].details and sim.run.nodes["B"].job_return == -9


def test_a_job_removed_from_outside_gives_minus_1002() -> None:
    sim = Sim("JOB A a.sub\nSCRIPT POST A post.sh\nJOB B b.sub\n", jobs={"A": RM, "B": RM}, post={"A": 0}).go()
    (m,) = sim.macros("post", "A")
    assert m["RETURN"] == "-1002"
    assert sim.run.nodes["A"].state == DONE  # the POST script decides
    assert sim.run.nodes["B"].state == ERROR and "ULOG_JOB_ABORTED" in sim.run.nodes["B"].details
    assert sim.run.exit_code == 1


def test_a_failed_submit_is_a_job_failure_with_minus_1001_and_is_retried() -> None:
    run = DagRun(parse_text("JOB A a.sub\nRETRY A 1\nSCRIPT POST A post.sh $RETURN\n"))
    run.start()
    (act,) = run.next_actions(0.0)
    assert act.kind == "submit"
    run.submit_failed("A", "no such file")
    (post,) = run.next_actions(0.0)
    assert post.kind == "post" and post.macros["RETURN"] == "-1001"
    run.script_done("A", "post", 1)
    (again,) = run.next_actions(0.0)
    assert again.kind == "submit" and run.nodes["A"].retries == 1


def test_a_multi_proc_job_fails_on_its_first_failed_proc_and_the_rest_are_removed() -> None:
    run = DagRun(parse_text("JOB A a.sub\n"))
    run.start()
    run.next_actions(0.0)
    run.submitted("A", 7, 3)
    for p in range(3):
        run.event(SubmitEvent(7, p, 0.0, log_notes="DAG Node: A"))
        run.event(ExecuteEvent(7, p, 0.0))
    run.event(TerminatedEvent(7, 0, 1.0, return_value=0))
    assert run.nodes["A"].state == SUBMITTED
    run.event(TerminatedEvent(7, 1, 1.0, return_value=5))
    assert [(a.kind, a.cluster) for a in run.next_actions(1.0)] == [("remove", 7)]
    assert run.nodes["A"].state == SUBMITTED  # proc 2 still there
    run.event(AbortedEvent(7, 2, 2.0, reason="removed by DAGMan"))
    assert run.nodes["A"].state == ERROR and run.nodes["A"].job_return == 5
    assert run.finished and run.exit_code == 1


def test_a_multi_proc_job_succeeds_when_every_proc_does() -> None:
    sim = Sim("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\n", procs={"A": 4}).go()
    assert sim.submits() == ["A", "B"] and sim.run.exit_code == 0


def test_held_jobs_run_the_hold_script_and_go_on_when_released() -> None:
    run = DagRun(parse_text("JOB A a.sub\nSCRIPT HOLD A hold.sh\n"))
    run.start()
    run.next_actions(0.0)
    run.submitted("A", 3, 1)
    run.event(SubmitEvent(3, 0, 0.0, log_notes="DAG Node: A"))
    run.event(HeldEvent(3, 0, 1.0, reason="because"))
    assert run.summary()["held"] == 1 and run.summary()["idle"] == 0
    acts = run.next_actions(1.0)
    assert [(a.kind, a.node) for a in acts] == [("hold", "A")]
    run.script_done("A", "hold", 0)
    run.event(ReleasedEvent(3, 0, 2.0, reason="ok"))
    assert run.summary()["held"] == 0 and run.summary()["idle"] == 1
    run.event(ExecuteEvent(3, 0, 3.0))
    run.event(TerminatedEvent(3, 0, 4.0, return_value=0))
    assert run.finished and run.exit_code == 0


# -- RETRY ---------------------------------------------------------------------------------------


def test_retry_reruns_the_whole_node_with_retry_counting_up() -> None:
    text = "JOB A a.sub\nSCRIPT PRE A pre.sh $RETRY\nSCRIPT POST A post.sh\nRETRY A 2\n"
    sim = Sim(text, jobs={"A": [1, 1, 0]}, post={"A": [1, 1, 0]}).go()
    assert sim.kinds("A") == ["pre", "submit", "post"] * 3
    assert [m["RETRY"] for m in sim.macros("pre", "A")] == ["0", "1", "2"]
    assert [m["RETRY"] for m in sim.macros("post", "A")] == ["0", "1", "2"]
    assert {m["MAX_RETRIES"] for m in sim.macros("pre", "A")} == {"2"}
    assert sim.run.nodes["A"].state == DONE and sim.run.nodes["A"].retries == 2
    assert sim.run.exit_code == 0 and sim.run.jobs_submitted == 3


def test_retry_gives_up_after_its_count() -> None:
    sim = Sim("JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nRETRY A 2\n", jobs={"A": 1}).go()
    assert sim.submits() == ["A", "A", "A"]
    assert sim.run.nodes["A"].state == ERROR and sim.run.nodes["B"].state == FUTILE
    assert sim.run.exit_code == 1


def test_retry_reruns_a_node_whose_pre_script_failed() -> None:
    sim = Sim("JOB A a.sub\nSCRIPT PRE A pre.sh\nRETRY A 1\n", pre={"A": [1, 0]}).go()
    assert sim.kinds("A") == ["pre", "pre", "submit"]
    assert sim.run.nodes["A"].state == DONE


def test_retry_unless_exit_stops_retrying_on_that_value() -> None:
    sim = Sim("JOB A a.sub\nRETRY A 3 UNLESS-EXIT 42\n", jobs={"A": [1, 42, 0]}).go()
    assert sim.submits() == ["A", "A"]
    assert sim.run.nodes["A"].state == ERROR and sim.run.nodes["A"].retries == 1


def test_retry_unless_exit_looks_at_the_post_scripts_value() -> None:
    text = "JOB A a.sub\nSCRIPT POST A post.sh\nRETRY A 3 UNLESS-EXIT 42\n"
    sim = Sim(text, jobs={"A": 42}, post={"A": [1, 0]}).go()
    assert sim.submits() == ["A", "A"] and sim.run.nodes["A"].state == DONE


# -- ABORT-DAG-ON --------------------------------------------------------------------------------


def _abort_dag(abort_line: str, **codes) -> Sim:
    text = ("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT B CHILD C\n" + abort_line)
    sim = Sim(text, **codes)
    acts = sim.step()
    assert sorted(a.node for a in acts if a.kind == "submit") == ["A", "B"]
    (cluster_a,) = [c for c, (n, _p) in sim.jobs.items() if n == "A"]
    sim.finish_job(cluster_a)  # A ends while B still runs
    return sim


@pytest.mark.parametrize("line, code", [("ABORT-DAG-ON A 5 RETURN 9\n", 9), ("ABORT-DAG-ON A 5\n", 5)])
def test_abort_dag_on_a_job_value_removes_running_jobs_and_exits(line, code) -> None:
    sim = _abort_dag(line, jobs={"A": 5})
    assert sim.run.status == DAG_STATUS_ABORT
    acts = sim.step()
    b = sim.run.nodes["B"]
    assert [(a.kind, a.node, a.cluster) for a in acts] == [("remove", "B", b.cluster)]
    assert b.state == ERROR and sim.run.nodes["C"].state == FUTILE
    assert "C" not in sim.submits()
    assert sim.run.finished and sim.run.exit_code == code
    assert sim.step() == []


def test_abort_dag_on_other_values_does_not_abort() -> None:
    sim = _abort_dag("ABORT-DAG-ON A 5\n", jobs={"A": 4})
    sim.go()
    assert sim.run.status == DAG_STATUS_NODE_FAILED and sim.submits().count("C") == 1
    assert sim.run.exit_code == 1


def test_abort_dag_on_a_pre_scripts_value() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nSCRIPT PRE A pre.sh\nABORT-DAG-ON A 3 RETURN 4\n"
    sim = Sim(text, pre={"A": 3})
    acts = sim.step()
    assert sorted((a.kind, a.node) for a in acts) == [("pre", "A"), ("submit", "B")]
    sim.finish_script(sim.scripts[0])
    assert [a.kind for a in sim.step()] == ["remove"]
    assert sim.run.finished and sim.run.exit_code == 4 and "A" not in sim.submits()


def test_abort_dag_on_looks_at_the_post_script_not_the_job_when_there_is_one() -> None:
    text = "JOB A a.sub\nSCRIPT POST A post.sh\nABORT-DAG-ON A 5\n"
    sim = Sim(text, jobs={"A": 5}, post={"A": 0}).go()
    assert sim.run.status == DAG_STATUS_OK and sim.run.exit_code == 0
    sim2 = Sim(text, jobs={"A": 0}, post={"A": 5}).go()
    assert sim2.run.status == DAG_STATUS_ABORT and sim2.run.exit_code == 5


def test_abort_dag_on_wins_over_retry() -> None:
    sim = Sim("JOB A a.sub\nRETRY A 3\nABORT-DAG-ON A 5 RETURN 1\n", jobs={"A": 5}).go()
    assert sim.submits() == ["A"] and sim.run.exit_code == 1 and sim.run.status == DAG_STATUS_ABORT


def test_an_abort_starts_nothing_new_not_even_a_queued_retry() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nRETRY B 3\nABORT-DAG-ON A 5\n"
    sim = Sim(text, jobs={"A": 5, "B": 1})
    sim.step()
    (ca,) = [c for c, (n, _p) in sim.jobs.items() if n == "A"]
    (cb,) = [c for c, (n, _p) in sim.jobs.items() if n == "B"]
    sim.finish_job(cb)  # B fails: ready to retry
    sim.finish_job(ca)  # A aborts the DAG before B's retry is handed out
    assert sim.step() == []
    assert sorted(sim.submits()) == ["A", "B"]
    assert sim.run.finished and sim.run.exit_code == 5


def test_an_abort_while_another_pre_script_runs_waits_for_it_then_ends() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nSCRIPT PRE B pre.sh\nABORT-DAG-ON A 5\n"
    sim = Sim(text, jobs={"A": 5}, pre={"B": 0})
    sim.step()  # A submitted, B's PRE running
    (ca,) = sim.running_jobs()
    sim.finish_job(ca)
    assert not sim.run.finished  # B's PRE script still runs
    sim.finish_script(sim.scripts[0])
    assert sim.step() == []  # B's job is not submitted after an abort
    assert "B" not in sim.submits()
    assert sim.run.finished and sim.run.exit_code == 5


def test_an_abort_while_another_pre_script_runs_then_runs_the_final_node() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nSCRIPT PRE B pre.sh\nABORT-DAG-ON A 5\nFINAL F f.sub\n"
    sim = Sim(text, jobs={"A": 5}, pre={"B": 0})
    sim.step()
    (ca,) = sim.running_jobs()
    sim.finish_job(ca)
    sim.finish_script(sim.scripts[0])
    sim.go()
    assert sim.submits() == ["A", "F"] and sim.run.finished and sim.run.exit_code == 0


# -- FINAL -----------------------------------------------------------------------------------------


FINAL_DAG = DIAMOND + "FINAL F f.sub\nSCRIPT PRE F pre.sh $DAG_STATUS $FAILED_COUNT\n"


def test_the_final_node_runs_last_after_success() -> None:
    sim = Sim(FINAL_DAG).go()
    assert sim.submits()[-1] == "F" and len(sim.submits()) == 5
    (m,) = sim.macros("pre", "F")
    assert (m["DAG_STATUS"], m["FAILED_COUNT"]) == ("0", "0")
    assert sim.run.exit_code == 0 and sim.run.status == DAG_STATUS_OK
    assert "F" not in sim.run.done_nodes()


def test_the_final_node_runs_after_a_failure_and_its_success_decides() -> None:
    sim = Sim(FINAL_DAG, jobs={"B": 1}).go()
    assert sim.submits()[-1] == "F"
    (m,) = sim.macros("pre", "F")
    assert (m["DAG_STATUS"], m["FAILED_COUNT"]) == (str(DAG_STATUS_NODE_FAILED), "1")
    assert sim.run.nodes["F"].state == DONE
    assert sim.run.exit_code == 0


def test_a_failed_final_node_fails_a_dag_that_had_succeeded() -> None:
    sim = Sim(FINAL_DAG, jobs={"F": 1}).go()
    assert sim.run.nodes["F"].state == ERROR and sim.run.exit_code == 1


def test_the_final_node_is_not_started_while_anything_else_runs() -> None:
    sim = Sim("JOB A a.sub\nJOB B b.sub\nFINAL F f.sub\n")
    sim.step()
    ca, cb = sim.running_jobs()
    sim.finish_job(ca)
    assert "F" not in [a.node for a in sim.step()]
    sim.finish_job(cb)
    assert [a.node for a in sim.step()] == ["F"]


def test_the_final_node_runs_after_an_abort_with_dag_status_3() -> None:
    text = ("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT B CHILD C\nABORT-DAG-ON A 5 RETURN 9\n"
            "FINAL F f.sub\nSCRIPT POST F post.sh $DAG_STATUS\n")
    sim = _abort_dag_with(text, jobs={"A": 5})
    sim.go()
    assert sim.submits()[-1] == "F" and "C" not in sim.submits()
    (m,) = sim.macros("post", "F")
    assert m["DAG_STATUS"] == str(DAG_STATUS_ABORT)
    assert sim.run.exit_code == 0  # the FINAL node succeeded


def test_a_failed_final_node_after_an_abort_exits_1() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nABORT-DAG-ON A 5 RETURN 9\nFINAL F f.sub\n"
    sim = _abort_dag_with(text, jobs={"A": 5, "F": 3})
    sim.go()
    assert sim.run.nodes["F"].state == ERROR and sim.run.exit_code == 1


def _abort_dag_with(text: str, **codes) -> Sim:
    sim = Sim(text, **codes)
    sim.step()
    (ca,) = [c for c, (n, _p) in sim.jobs.items() if n == "A"]
    sim.finish_job(ca)
    return sim


# -- condor_rm of the DAG ----------------------------------------------------------------------------


def test_remove_dag_removes_every_job_starts_nothing_and_exits_2() -> None:
    sim = Sim(DIAMOND + "JOB X x.sub\nFINAL F f.sub\n")
    sim.step()  # A and X
    assert sorted(sim.submits()) == ["A", "X"]
    sim.run.remove_dag()
    acts = sim.step()
    assert sorted((a.kind, a.node) for a in acts) == [("remove", "A"), ("remove", "X")]
    assert sim.run.finished and sim.run.exit_code == 2 and sim.run.status == DAG_STATUS_RM
    assert sorted(sim.submits()) == ["A", "X"]
    assert sim.run.nodes["B"].state == FUTILE


# -- $DAG_STATUS and $FAILED_COUNT of ordinary nodes -------------------------------------------------


def test_dag_status_and_failed_count_follow_failures() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nPARENT A CHILD B\nJOB X x.sub\nSCRIPT PRE B pre.sh\n"
    sim = Sim(text, jobs={"X": 1})
    sim.step()
    for c in sim.running_jobs():
        sim.finish_job(c)  # A succeeds, X fails
    sim.go()
    (m,) = sim.macros("pre", "B")
    assert (m["DAG_STATUS"], m["FAILED_COUNT"]) == (str(DAG_STATUS_NODE_FAILED), "1")


# -- DEFER -----------------------------------------------------------------------------------------


def test_a_deferred_script_runs_again_after_its_time() -> None:
    run = DagRun(parse_text("JOB A a.sub\nSCRIPT DEFER 4 30 PRE A pre.sh\n"))
    run.start()
    (pre,) = run.next_actions(0.0)
    run.script_done("A", "pre", 4, 10.0)
    assert run.next_actions(20.0) == [] and run.next_wakeup() == 40.0
    assert not run.finished
    (again,) = run.next_actions(40.0)
    assert again.kind == "pre"
    run.script_done("A", "pre", 0, 41.0)
    assert [a.kind for a in run.next_actions(41.0)] == ["submit"]


# -- throttles -------------------------------------------------------------------------------------


WIDE = "".join(f"JOB N{i} n.sub\n" for i in range(8))


def test_max_jobs_is_never_exceeded_and_everything_runs() -> None:
    sim = Sim(WIDE, Limits(max_jobs=3)).go(one_at_a_time=True)
    assert sim.peak["jobs"] == 3 and len(sim.submits()) == 8 and sim.run.exit_code == 0


def test_max_jobs_counts_nodes_not_procs_and_noop_nodes_are_free() -> None:
    text = WIDE + "JOB Z z.sub NOOP\nPARENT Z CHILD N0\n"
    run = DagRun(parse_text(text), Limits(max_jobs=2))
    run.start()
    acts = run.next_actions(0.0)
    assert len([a for a in acts if a.kind == "submit"]) == 2
    for a in acts:
        run.submitted(a.node, 10 + int(a.node[1]), 5)
    assert run.next_actions(0.0) == []


def test_max_idle_counts_idle_procs() -> None:
    # one submit per call (the submit interval), so that each submit's procs are known
    sim = Sim(WIDE, Limits(max_idle=2, max_submits_per_interval=1, submit_interval=1.0))
    assert len(sim.step()) == 1
    sim.now = 1.0
    assert len(sim.step()) == 1
    sim.now = 2.0
    assert sim.step() == []  # two idle procs: nothing more
    for c in sim.running_jobs():
        sim.execute(c)  # running now, not idle
    assert len(sim.step()) == 1
    sim.go()
    assert sim.peak["idle"] == 2 and len(sim.submits()) == 8


def test_max_idle_counts_every_proc_of_a_cluster() -> None:
    sim = Sim(WIDE, Limits(max_idle=3, max_submits_per_interval=1, submit_interval=1.0), procs={"N0": 5})
    assert [a.node for a in sim.step()] == ["N0"]
    sim.now = 1.0
    assert sim.step() == []  # 5 idle procs >= 3


def test_max_idle_is_not_exceeded_within_one_call() -> None:
    sim = Sim(WIDE, Limits(max_idle=2))
    assert len(sim.step()) == 2
    assert sim.step() == []
    sim.go()
    assert sim.peak["idle"] == 2


def test_max_pre_and_max_post_are_never_exceeded() -> None:
    text = WIDE + "SCRIPT PRE ALL_NODES pre.sh\nSCRIPT POST ALL_NODES post.sh\n"
    sim = Sim(text, Limits(max_pre=2, max_post=1)).go(one_at_a_time=True)
    assert sim.peak["pre"] == 2 and sim.peak["post"] == 1
    assert sim.run.exit_code == 0 and all(sim.kinds(f"N{i}") == ["pre", "submit", "post"] for i in range(8))


def test_max_pre_does_not_hold_back_nodes_without_a_pre_script() -> None:
    text = "JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nSCRIPT PRE A pre.sh\nSCRIPT PRE B pre.sh\n"
    run = DagRun(parse_text(text), Limits(max_pre=1))
    run.start()
    acts = run.next_actions(0.0)
    assert sorted((a.kind, a.node) for a in acts) == [("pre", "A"), ("submit", "C")]


def test_max_submits_per_interval() -> None:
    run = DagRun(parse_text(WIDE), Limits(max_submits_per_interval=3, submit_interval=10.0))
    run.start()
    assert len(run.next_actions(0.0)) == 3
    assert run.next_actions(5.0) == []
    assert run.next_wakeup() == 10.0
    assert len(run.next_actions(10.0)) == 3
    assert len(run.next_actions(20.0)) == 2


def test_category_maxjobs_throttles_only_its_category() -> None:
    text = WIDE + "CATEGORY N0 big\nCATEGORY N1 big\nCATEGORY N2 big\nMAXJOBS big 1\n"
    run = DagRun(parse_text(text))
    run.start()
    acts = run.next_actions(0.0)
    names = sorted(a.node for a in acts)
    assert names == ["N0", "N3", "N4", "N5", "N6", "N7"]  # N1 and N2 wait for N0
    sim = Sim(text).go(one_at_a_time=True)
    assert sim.peak["cat:big"] == 1 and len(sim.submits()) == 8


def test_priority_orders_ready_nodes_higher_first_then_file_order() -> None:
    text = WIDE + "PRIORITY N5 10\nPRIORITY N2 5\nPRIORITY N7 5\nPRIORITY N0 -1\n"
    sim = Sim(text, Limits(max_jobs=1)).go()
    assert sim.submits() == ["N5", "N2", "N7", "N1", "N3", "N4", "N6", "N0"]


def test_priority_applies_to_pre_scripts_too() -> None:
    text = WIDE + "SCRIPT PRE ALL_NODES pre.sh\nPRIORITY N6 3\n"
    run = DagRun(parse_text(text), Limits(max_pre=1))
    run.start()
    assert [(a.kind, a.node) for a in run.next_actions(0.0)] == [("pre", "N6")]


# -- recovery from the nodes' log ----------------------------------------------------------------


CHAIN = ("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A CHILD B\nPARENT B CHILD C\n"
         "SCRIPT POST A post.sh\n")


def _log_of(text: str, **kw) -> list:
    return Sim(text, **kw).go().log


def test_recovery_does_not_resubmit_a_submitted_node_and_goes_on() -> None:
    log = _log_of(CHAIN)
    # A: submit, execute, terminated, 016; B: submit (crash here)
    cut = [i for i, ev in enumerate(log) if isinstance(ev, SubmitEvent) and ev.log_notes.endswith("B")][0] + 1
    sim = Sim(CHAIN, replay=log[:cut])
    assert sim.run.nodes["A"].state == DONE and sim.run.nodes["B"].state == SUBMITTED
    assert sim.step() == []  # nothing submitted twice, A's POST not run again
    b = sim.run.nodes["B"].cluster
    sim.emit(ExecuteEvent(b, 0, 1.0))
    sim.emit(TerminatedEvent(b, 0, 2.0, return_value=0))
    sim.go()
    assert sim.submits() == ["C"] and sim.run.exit_code == 0


def test_recovery_runs_a_post_script_whose_event_is_missing() -> None:
    log = _log_of(CHAIN)
    cut = [i for i, ev in enumerate(log) if isinstance(ev, PostScriptTerminatedEvent)][0]
    sim = Sim(CHAIN, replay=log[:cut])
    assert sim.run.nodes["A"].state == POSTRUN
    acts = sim.step()
    assert [(a.kind, a.node) for a in acts] == [("post", "A")]
    assert acts[0].macros["RETURN"] == "0"
    sim.go()
    assert sim.submits() == ["B", "C"] and sim.kinds("A") == ["post"]


def test_recovery_does_not_rerun_a_post_script_whose_event_is_there() -> None:
    log = _log_of(CHAIN)
    cut = [i for i, ev in enumerate(log) if isinstance(ev, PostScriptTerminatedEvent)][0] + 1
    sim = Sim(CHAIN, replay=log[:cut])
    assert sim.run.nodes["A"].state == DONE
    assert [(a.kind, a.node) for a in sim.step()] == [("submit", "B")]


def test_recovery_reads_a_failed_post_script_and_retries() -> None:
    text = "JOB A a.sub\nSCRIPT POST A post.sh\nRETRY A 1\n"
    log = _log_of(text, post={"A": [1, 0]})
    cut = [i for i, ev in enumerate(log) if isinstance(ev, PostScriptTerminatedEvent)][0] + 1
    sim = Sim(text, post={"A": [1, 0]}, replay=log[:cut])
    assert sim.run.nodes["A"].retries == 1
    sim.go()
    assert sim.kinds("A") == ["submit", "post"] and sim.run.exit_code == 0


def test_recovery_after_a_noop_parent_with_no_events() -> None:
    text = "JOB N n.sub NOOP\nJOB M m.sub NOOP\nJOB B b.sub\nJOB C c.sub\nPARENT N CHILD M\nPARENT M CHILD B\nPARENT B CHILD C\n"
    log = _log_of(text)
    cut = [i for i, ev in enumerate(log) if isinstance(ev, SubmitEvent)][0] + 1  # B's submit only
    sim = Sim(text, replay=log[:cut])
    assert sim.run.nodes["N"].state == DONE and sim.run.nodes["M"].state == DONE
    assert sim.run.nodes["B"].state == SUBMITTED
    assert sim.step() == []
    sim.go()
    assert sim.submits() == ["C"] and sim.run.exit_code == 0


def test_recovery_of_a_node_with_a_pre_script_does_not_rerun_it_once_submitted() -> None:
    text = "JOB A a.sub\nSCRIPT PRE A pre.sh\nJOB B b.sub\nPARENT A CHILD B\n"
    log = _log_of(text)
    sim = Sim(text, replay=log[:1])
    assert sim.run.nodes["A"].state == SUBMITTED and sim.run.pre_running == 0
    assert sim.step() == []


def test_recovery_of_a_finished_log_finishes() -> None:
    log = _log_of(DIAMOND)
    sim = Sim(DIAMOND, replay=log)
    assert sim.run.finished and sim.run.exit_code == 0 and sim.step() == []


def test_recovery_replays_retried_jobs() -> None:
    text = "JOB A a.sub\nRETRY A 2\nJOB B b.sub\nPARENT A CHILD B\n"
    log = _log_of(text, jobs={"A": [1, 0]})
    first_b = [i for i, ev in enumerate(log) if isinstance(ev, SubmitEvent) and ev.log_notes.endswith("B")][0]
    sim = Sim(text, jobs={"A": [1, 0]}, replay=log[:first_b])
    assert sim.run.nodes["A"].state == DONE and sim.run.nodes["A"].retries == 1
    assert [a.node for a in sim.step()] == ["B"]


def test_nothing_is_handed_out_while_replaying() -> None:
    run = DagRun(parse_text(DIAMOND))
    run.replaying = True
    run.start()
    assert run.next_actions(0.0) == []
    run.end_replay()
    assert [a.node for a in run.next_actions(0.0)] == ["A"]


PROPERTY_DAG = """\
JOB A a.sub
JOB B b.sub
JOB C c.sub NOOP
JOB D d.sub
JOB E e.sub
JOB G g.sub
PARENT A CHILD B C
PARENT B C CHILD D
PARENT E CHILD G
SCRIPT PRE A pre.sh
SCRIPT POST A post.sh
SCRIPT POST B post.sh
SCRIPT POST E post.sh
RETRY B 1
RETRY E 2
"""
PROPERTY_CODES = {"jobs": {"B": [3, 0], "E": [1, 1, 0]}, "post": {"B": [1, 0], "E": [2, 4, 0]}}


def test_recovery_from_every_point_of_the_log_finishes_the_run_the_same_way() -> None:
    full = Sim(PROPERTY_DAG, **PROPERTY_CODES).go()
    want_submits = Counter(full.submits())
    want_posts = Counter(a.node for a in full.actions if a.kind == "post")
    assert full.run.exit_code == 0 and want_submits == Counter({"A": 1, "B": 2, "D": 1, "E": 3, "G": 1})
    for cut in range(len(full.log) + 1):
        prefix = full.log[:cut]
        sim = Sim(PROPERTY_DAG, **PROPERTY_CODES, replay=prefix)
        sim.go()
        logged = Counter(ev.log_notes[10:] for ev in prefix if isinstance(ev, SubmitEvent))
        posts = Counter(ev.dag_node_name for ev in prefix if isinstance(ev, PostScriptTerminatedEvent))
        assert logged + Counter(sim.submits()) == want_submits, f"cut at {cut}"
        assert posts + Counter(a.node for a in sim.actions if a.kind == "post") == want_posts, f"cut at {cut}"
        assert sim.run.exit_code == 0, f"cut at {cut}"


def test_recovery_does_not_resubmit_the_final_node() -> None:
    text = "JOB A a.sub\nFINAL F f.sub\n"
    log = _log_of(text)
    cut = [i for i, ev in enumerate(log) if isinstance(ev, SubmitEvent) and ev.log_notes.endswith("F")][0] + 1
    sim = Sim(text, replay=log[:cut])
    assert sim.step() == []
    assert sim.run.nodes["F"].state == SUBMITTED


def test_recovery_of_a_finished_final_node() -> None:
    text = "JOB A a.sub\nFINAL F f.sub\n"
    log = _log_of(text)
    sim = Sim(text, replay=log)
    assert sim.run.finished and sim.run.exit_code == 0 and sim.step() == []


# -- bookkeeping -----------------------------------------------------------------------------------


def test_counts_add_up_at_every_step() -> None:
    text = FINAL_DAG + "JOB X x.sub\nSCRIPT POST X post.sh\nRETRY X 1\n"
    sim = Sim(text, jobs={"X": 1, "C": 2})
    for _ in range(50):
        sim.step()
        assert sum(sim.run.counts) == len(sim.run.nodes)
        assert Counter(sim.states().values()) == Counter(
            {s: c for s, c in enumerate(sim.run.counts) if c}), sim.states()
        if sim.run.finished:
            break
        for a in list(sim.scripts):
            sim.finish_script(a)
        for c in sim.running_jobs():
            sim.finish_job(c)
    assert sim.run.finished
    assert {s for s in sim.states().values()} <= {DONE, ERROR, FUTILE}
    assert sim.run.jobs_queued == 0 and sim.run.idle_procs == 0
    assert sim.run.pre_running == 0 and sim.run.post_running == 0


def test_states_during_a_node() -> None:
    run = DagRun(parse_text("JOB A a.sub\nSCRIPT PRE A pre.sh\nSCRIPT POST A post.sh\n"))
    assert run.nodes["A"].state == NOT_READY
    run.start()
    assert run.nodes["A"].state == READY
    run.next_actions(0.0)
    assert run.nodes["A"].state == PRERUN
    run.script_done("A", "pre", 0)
    run.next_actions(0.0)
    assert run.nodes["A"].state == SUBMITTED
    run.submitted("A", 1, 1)
    run.event(TerminatedEvent(1, 0, 0.0, return_value=0))
    assert run.nodes["A"].state == POSTRUN
    run.next_actions(0.0)
    run.script_done("A", "post", 0)
    assert run.nodes["A"].state == DONE and run.finished


# -- review fixes: background nodes and wake-ups ------------------------------------------

def test_a_provisioner_gates_the_dag_and_a_run_with_it_succeeds() -> None:
    sim = Sim("PROVISIONER P p.sub\nJOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\n")
    assert [(a.kind, a.node) for a in sim.step()] == [("submit", "P")]
    (p,) = sim.running_jobs()
    assert sim.step() == []  # the rest waits until the provisioner's job runs
    sim.execute(p)
    assert [(a.kind, a.node) for a in sim.step()] == [("submit", "A")]
    for _node in ("A", "B"):
        (c,) = [c for c in sim.running_jobs() if c != p]
        sim.finish_job(c)
        sim.step()
    assert sim.run.finished and sim.run.exit_code == 0  # the provisioner, removed at the end, is no failure
    assert ("remove", "P") in [(a.kind, a.node) for a in sim.actions]


def test_a_provisioner_that_never_runs_does_not_hang_the_dag() -> None:
    sim = Sim("PROVISIONER P p.sub\nJOB A a.sub\nSCRIPT PRE P pre.sh\n", pre={"P": 1})
    sim.go()
    assert sim.run.finished and sim.submits() == ["A"]


def test_service_nodes_do_not_count_against_maxjobs() -> None:
    sim = Sim("SERVICE S s.sub\nJOB A a.sub\nJOB B a.sub\n", Limits(max_jobs=1))
    assert sorted(a.node for a in sim.step() if a.kind == "submit") == ["A", "S"]


def test_next_wakeup_is_never_a_time_already_past() -> None:
    """Blocked by maxjobs with a submit interval: only an event can let the next node
    start, so the manager must sleep, not spin on a wake-up time in the past."""
    run = DagRun(parse_text("".join(f"JOB N{i} a.sub\n" for i in range(5))),
                 Limits(max_jobs=1, max_submits_per_interval=100, submit_interval=1.0))
    run.start()
    assert len(run.next_actions(0.0)) == 1
    assert run.next_actions(5.0) == []
    assert run.next_wakeup(5.0) is None
