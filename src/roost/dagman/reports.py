"""What a DAG's run tells its user in files: the node status file (ClassAds, as
condor_dagman writes it), the ``.metrics`` file (JSON), the DOT picture and the lines
of the JOBSTATE_LOG. Pure text from a :class:`DagRun`; the manager writes them.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from roost.dagman.state import (
    DONE,
    ERROR,
    FUTILE,
    NOT_READY,
    POSTRUN,
    PRERUN,
    READY,
    STATE_NAMES,
    SUBMITTED,
    DagRun,
)

_DAG_STATUS_TEXT = {0: "OK", 1: "ERROR", 2: "NODE_FAILED", 3: "ABORT", 4: "RM", 5: "CYCLE", 6: "HALTED"}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dag_node_status(run: DagRun) -> int:
    """The DAG's own status in the node status file's terms (STATUS_*)."""
    if not run.finished:
        return SUBMITTED if run.counts[SUBMITTED] or run.counts[POSTRUN] or run.counts[PRERUN] else READY
    return DONE if run.exit_code == 0 else ERROR


def node_status_text(run: DagRun, dag_files: list[str], *, now: float, next_update: float) -> str:
    """The node status file: a DagStatus ad, one NodeStatus ad per node, a StatusEnd ad."""
    s = run.summary()
    st = dag_node_status(run)
    out = ["[", '  Type = "DagStatus";',
           "  DagFiles = {" + ", ".join(_q(os.path.basename(f)) for f in dag_files) + "};",
           f"  Timestamp = {int(now)}; /* {_q(time.ctime(now))} */",
           f"  DagStatus = {st}; /* {_q(STATE_NAMES[st])} */",
           f"  NodesTotal = {s['total']};", f"  NodesDone = {s['done']};", f"  NodesPre = {s['pre']};",
           f"  NodesQueued = {s['queued']};", f"  NodesPost = {s['post']};", f"  NodesReady = {s['ready']};",
           f"  NodesUnready = {s['unready']};", f"  NodesFutile = {s['futile']};",
           f"  NodesFailed = {s['failed']};", f"  JobProcsHeld = {s['held']};", f"  JobProcsIdle = {s['idle']};",
           "]"]
    for name, n in run.nodes.items():
        queued = sum(1 for p in n.procs.values() if p != "done") if n.state == SUBMITTED else 0
        held = sum(1 for p in n.procs.values() if p == "held") if n.state == SUBMITTED else 0
        out += ["[", '  Type = "NodeStatus";', f"  Node = {_q(name)};",
                f"  NodeStatus = {n.state}; /* {_q(STATE_NAMES[n.state])} */",
                f"  StatusDetails = {_q(n.details)};", f"  RetryCount = {n.retries};",
                f"  JobProcsQueued = {queued};", f"  JobProcsHeld = {held};", "]"]
    out += ["[", '  Type = "StatusEnd";', f"  EndTime = {int(now)}; /* {_q(time.ctime(now))} */",
            f"  NextUpdate = {int(next_update)}; /* {_q(time.ctime(next_update))} */", "]"]
    return "\n".join(out) + "\n"


def dag_status_name(status: int) -> str:
    """``DAG_STATUS_OK`` ...: the name dagman.out and the node status file give a DAG status."""
    return "DAG_STATUS_" + _DAG_STATUS_TEXT.get(status, str(status))


def progress_text(run: DagRun) -> str:
    """The node table condor_dagman's dagman.out prints whenever a count changes, in
    its layout (scripts and tutorials grep it): the DAG's status, the counts under a
    ``Done Pre Queued ...`` header, the held procs."""
    s = run.summary()
    return (f"DAG status: {run.status} ({dag_status_name(run.status)})\n"
            f"Of {s['total']} nodes total:\n"
            " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile\n"
            "  ===     ===      ===     ===     ===        ===      ===      ===\n"
            f"{s['done']:5d}   {s['pre']:5d}    {s['queued']:5d}   {s['post']:5d}   {s['ready']:5d}      "
            f"{s['unready']:5d}    {s['failed']:5d}    {s['futile']:5d}\n"
            f"{s['held']} job proc(s) currently held")


def failed_nodes_text(run: DagRun) -> str:
    """What dagman.out says of each failed node when the DAG fails (condor_dagman's
    node dump after ``ERROR: the following job(s) failed:``), ending with ``<END>``."""
    out = []
    for order, (name, n) in enumerate(run.nodes.items()):
        if n.state != ERROR:
            continue
        out += ["---------------------- Node ----------------------",
                f"      Node Name: {name}",
                f"           Noop: {'true' if n.spec.noop else 'false'}",
                f"         NodeID: {order}",
                f"    Node Status: {STATE_NAMES[n.state]}",
                f"Node return val: {n.result if n.result is not None else 0}",
                f"          Error: {n.details}",
                f"Job Submit File: {n.spec.submit or n.spec.description or '(inline)'}"]
        for kind in ("PRE", "POST", "HOLD"):
            if kind in n.spec.scripts:
                out.append(f"{kind:>7} Script: {n.spec.scripts[kind].command}")
        if n.spec.retry > 0:
            out.append(f"          Retry: {n.spec.retry}")
        out.append(" HTCondor Job ID: " + (f"({n.cluster}.0.0)" if n.cluster is not None else "[not yet submitted]"))
    out.append("---------------------------------------\t<END>")
    return "\n".join(out)


def metrics(run: DagRun, *, dagman_id: str, start: float, end: float, rescue_number: int = 0,
            parent_id: str = "") -> dict[str, Any]:
    """The ``.metrics`` file's content (the fields condor_dagman writes)."""
    kinds = [n for n in run.nodes.values() if n.spec.kind != "subdag"]
    subs = [n for n in run.nodes.values() if n.spec.kind == "subdag"]
    return {
        "client": "condor_dagman", "version": "roost", "planner": "", "planner_version": "",
        "type": "metrics", "wf_uuid": "", "root_wf_uuid": "",
        "start_time": round(start, 3), "end_time": round(end, 3), "duration": round(end - start, 3),
        "exitcode": run.exit_code if run.exit_code is not None else -1,
        "dagman_id": dagman_id, "parent_dagman_id": parent_id, "rescue_dag_number": rescue_number,
        "jobs": len(kinds), "jobs_failed": sum(n.state == ERROR for n in kinds),
        "jobs_succeeded": sum(n.state == DONE for n in kinds),
        "dag_jobs": len(subs), "dag_jobs_failed": sum(n.state == ERROR for n in subs),
        "dag_jobs_succeeded": sum(n.state == DONE for n in subs),
        "total_jobs": len(run.nodes), "total_jobs_run": run.jobs_submitted,
        "DagStatus": run.status,
    }


def metrics_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=4) + "\n"


_DOT_STYLE = {DONE: "filled", ERROR: "bold", FUTILE: "dashed", SUBMITTED: "filled",
              PRERUN: "filled", POSTRUN: "filled", READY: "solid", NOT_READY: "solid"}


def dot_text(run: DagRun, include: str | None = None) -> str:
    """The DAG as a graphviz ``digraph`` with each node's state, as condor_dagman's DOT."""
    out = ["digraph DAG {"]
    if include:
        out.append(include.rstrip("\n"))
    for name, n in run.nodes.items():
        state = STATE_NAMES[n.state].removeprefix("STATUS_").lower()
        label = f"{name}\\n{state}"
        out.append(f'    "{name}" [shape=ellipse label="{label}" style={_DOT_STYLE[n.state]}];')
    for name, n in run.nodes.items():
        for c in n.spec.children:
            out.append(f'    "{name}" -> "{c}";')
    out.append("}")
    return "\n".join(out) + "\n"


def jobstate_line(now: float, node: str, event: str, condor_id: str = "-", tag: str = "-",
                  sequence: int | str = "-") -> str:
    """One JOBSTATE_LOG line: ``time node EVENT condorID job-tag - sequence``."""
    return f"{int(now)} {node} {event} {condor_id} {tag} - {sequence}\n"
