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
    DAG_STATUS_ABORT,
    DAG_STATUS_RM,
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
    NodeRun,
)

_DAG_STATUS_TEXT = {0: "OK", 1: "ERROR", 2: "NODE_FAILED", 3: "ABORT", 4: "RM", 5: "CYCLE", 6: "HALTED"}


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _counted(run: DagRun) -> list[tuple[str, NodeRun]]:
    """The nodes condor_dagman counts and lists: all but the SERVICE nodes, which it
    keeps apart from the DAG's own."""
    return [(name, n) for name, n in run.nodes.items() if n.spec.kind != "service"]


_STATE_KEYS = {DONE: "done", PRERUN: "pre", SUBMITTED: "queued", POSTRUN: "post", READY: "ready",
               NOT_READY: "unready", ERROR: "failed", FUTILE: "futile"}


def _counts(run: DagRun) -> dict[str, int]:
    """The run's counts less its SERVICE nodes; as cheap as the few SERVICE nodes (the
    node table is printed after every change of a 100,000-node DAG)."""
    s = run.summary()
    for name in run.services:
        s["total"] -= 1
        s[_STATE_KEYS[run.nodes[name].state]] -= 1
    return s


def _final_pending(run: DagRun) -> bool:
    return run.final is not None and run.nodes[run.final].state not in (DONE, ERROR)


def dag_node_status(run: DagRun) -> tuple[int, str]:
    """The DAG's own status in the node status file (a node status, STATUS_*) and its
    note, as condor_dagman decides them: DONE only when every node is done, ERROR once
    the DAG failed, was aborted or removed (and no FINAL node is still to run),
    SUBMITTED while it runs."""
    nodes = _counted(run)
    if all(n.state == DONE for _name, n in nodes):
        return DONE, "success"
    stopped = run.status in (DAG_STATUS_ABORT, DAG_STATUS_RM)
    note = "aborted" if run.status == DAG_STATUS_ABORT else "removed" if run.status == DAG_STATUS_RM else "failed"
    if run.finished:
        return ERROR, note
    if stopped:
        return (SUBMITTED, note) if _final_pending(run) else (ERROR, note)
    return SUBMITTED, ""


def _ctime(t: float) -> str:
    return time.ctime(t)


def node_status_text(run: DagRun, dag_files: list[str], *, now: float, next_update: float) -> str:
    """The node status file, as condor_dagman lays it out: a DagStatus ad, one
    NodeStatus ad per node, a StatusEnd ad (``NextUpdate = 0; /* "none" */`` once the
    DAG is over). Once the DAG is over (or stopped with no FINAL node to run) nodes
    still running count as failed, their jobs being removed, as condor_dagman marks them."""
    st, note = dag_node_status(run)
    over = run.finished or (run.status in (DAG_STATUS_ABORT, DAG_STATUS_RM) and not _final_pending(run))
    mark = over or st == DONE
    s = _counts(run)
    held, idle = s["held"], s["idle"] + s["held"]
    if mark:
        s["failed"] += s["pre"] + s["queued"] + s["post"]
        s["pre"] = s["queued"] = s["post"] = held = idle = 0
    out = ["[", '  Type = "DagStatus";', "  DagFiles = {",
           ",\n".join(f"    {_q(os.path.basename(f))}" for f in dag_files), "  };",
           f"  Timestamp = {int(now)}; /* {_q(_ctime(now))} */",
           f"  DagStatus = {st}; /* {_q(f'{STATE_NAMES[st]} ({note})')} */",
           f"  NodesTotal = {s['total']};", f"  NodesDone = {s['done']};", f"  NodesPre = {s['pre']};",
           f"  NodesQueued = {s['queued']};", f"  NodesPost = {s['post']};", f"  NodesReady = {s['ready']};",
           f"  NodesUnready = {s['unready']};", f"  NodesFutile = {s['futile']};",
           f"  NodesFailed = {s['failed']};", f"  JobProcsHeld = {held};",
           f"  JobProcsIdle = {idle}; /* includes held */", "]"]
    for name, n in _counted(run):
        state, details = n.state, ""
        queued = sum(1 for p in n.procs.values() if p != "done") if n.state == SUBMITTED else 0
        held_procs = sum(1 for p in n.procs.values() if p == "held") if n.state == SUBMITTED else 0
        if state in (SUBMITTED, PRERUN, POSTRUN) and mark:
            details, state, queued, held_procs = f"Was {STATE_NAMES[state]}", ERROR, 0, 0
        elif state == SUBMITTED:
            details = "idle" if n.procs.get(min(n.procs, default=0)) in (None, "idle") else "not_idle"
        elif state == ERROR:
            details = n.details
        elif state == FUTILE:
            details = "Had an ancestor node fail"
        elif state == DONE and n.spec.done:
            details = "User defined as DONE"
        out += ["[", '  Type = "NodeStatus";', f"  Node = {_q(name)};",
                f"  NodeStatus = {state}; /* {_q(STATE_NAMES[state])} */",
                f"  StatusDetails = {_q(details)};", f"  RetryCount = {n.retries};",
                f"  JobProcsQueued = {queued};", f"  JobProcsHeld = {held_procs};", "]"]
    nxt, nxt_text = (0, "none") if over or st == DONE else (int(next_update), _ctime(next_update))
    out += ["[", '  Type = "StatusEnd";', f"  EndTime = {int(now)}; /* {_q(_ctime(now))} */",
            f"  NextUpdate = {nxt}; /* {_q(nxt_text)} */", "]"]
    return "\n".join(out) + "\n"


def dag_status_name(status: int) -> str:
    """``DAG_STATUS_OK`` ...: the name dagman.out and the node status file give a DAG status."""
    return "DAG_STATUS_" + _DAG_STATUS_TEXT.get(status, str(status))


def progress_text(run: DagRun) -> str:
    """The node table condor_dagman's dagman.out prints whenever a count changes, in
    its layout (scripts and tutorials grep it): the DAG's status, the counts under a
    ``Done Pre Queued ...`` header, the held procs (SERVICE nodes not counted)."""
    s = _counts(run)
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
    for order, (name, n) in enumerate(_counted(run)):
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


#: each state's label suffix and drawing in condor_dagman's DOT file
_DOT_NODE = {READY: ("I", ""), PRERUN: ("Pre", " style=dotted"), SUBMITTED: ("R", " peripheries=2"),
             POSTRUN: ("Post", " style=dotted"), DONE: ("Done", " style=bold")}


def dot_text(run: DagRun, include: str | None = None, include_name: str = "", *, now: float) -> str:
    """The DAG as a graphviz ``digraph`` with each node's state, laid out as
    condor_dagman's DOT file: a label with the time, the INCLUDE file's lines between
    two comments, a line per node (``A (Done)``, a box for a failed one), then the arcs."""
    out = ["digraph DAG {", f'    label="DAGMan Job status at {_ctime(now)}";', ""]
    if include is not None:
        out.append(f"// Beginning of commands included from {include_name}.")
        out += include.splitlines()
        out += [f"// End of commands included from {include_name}.", ""]
    for name, n in _counted(run):
        if n.state == ERROR:
            out.append(f'    "{name}" [shape=box label="{name} (E)"];')
        else:
            tag, style = _DOT_NODE.get(n.state, ("I", ""))
            out.append(f'    "{name}" [shape=ellipse label="{name} ({tag})"{style}];')
    out.append("")
    for name, n in _counted(run):
        for c in n.spec.children:
            out.append(f'    "{name}" -> "{c}";')
    out.append("}")
    return "\n".join(out) + "\n"


def jobstate_line(now: float, node: str, event: str, condor_id: str = "-", tag: str = "-",
                  sequence: int | str = "-") -> str:
    """One JOBSTATE_LOG line: ``time node EVENT condorID job-tag - sequence``."""
    return f"{int(now)} {node} {event} {condor_id} {tag} - {sequence}\n"
