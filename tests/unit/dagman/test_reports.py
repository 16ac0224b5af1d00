"""What a run tells its user: the node status file, .metrics, DOT, JOBSTATE_LOG lines."""

from __future__ import annotations

import json
import re

import roost.classad as classad
from roost.dagman.reports import (
    dag_node_status,
    dot_text,
    failed_nodes_text,
    jobstate_line,
    metrics,
    metrics_text,
    node_status_text,
    progress_text,
)
from roost.dagman.state import DONE, ERROR, FUTILE, NOT_READY, SUBMITTED

from .test_state import Sim

DAG = """\
JOB A a.sub
JOB B b.sub
JOB C c.sub
JOB D d.sub
SUBDAG EXTERNAL S s.dag
PARENT A CHILD B C
PARENT B C CHILD D
RETRY C 1
"""


def _ads(text: str) -> list:
    return list(classad.parseAds(text))


def test_node_status_file_is_classads_one_per_node() -> None:
    sim = Sim(DAG, jobs={"C": 1})
    sim.step()  # A and S submitted
    text = node_status_text(sim.run, ["/x/my.dag"], now=1000.0, next_update=1060.0)
    ads = _ads(text)
    assert [ad["Type"] for ad in ads] == ["DagStatus"] + ["NodeStatus"] * 5 + ["StatusEnd"]
    head = ads[0]
    assert list(head["DagFiles"]) == ["my.dag"]
    assert head["DagStatus"] == SUBMITTED and head["NodesTotal"] == 5 and head["NodesQueued"] == 2
    assert head["NodesUnready"] == 3 and head["NodesDone"] == 0 and head["JobProcsIdle"] == 2
    nodes = {ad["Node"]: ad for ad in ads[1:-1]}
    assert nodes["A"]["NodeStatus"] == SUBMITTED and nodes["A"]["JobProcsQueued"] == 1
    assert nodes["B"]["NodeStatus"] == NOT_READY
    assert ads[-1]["EndTime"] == 1000 and ads[-1]["NextUpdate"] == 1060
    assert text.count("/* \"STATUS_SUBMITTED\" */") >= 2


def test_node_status_file_at_the_end_of_a_failed_run() -> None:
    sim = Sim(DAG, jobs={"C": 1}).go()
    ads = _ads(node_status_text(sim.run, ["my.dag"], now=2000.0, next_update=2000.0))
    head = ads[0]
    assert head["DagStatus"] == ERROR
    assert (head["NodesDone"], head["NodesFailed"], head["NodesFutile"]) == (3, 1, 1)
    nodes = {ad["Node"]: ad for ad in ads[1:-1]}
    assert nodes["C"]["NodeStatus"] == ERROR and nodes["C"]["RetryCount"] == 1
    assert "failed with status 1" in nodes["C"]["StatusDetails"]
    assert nodes["D"]["NodeStatus"] == FUTILE and nodes["A"]["NodeStatus"] == DONE


def test_status_details_are_quoted() -> None:
    sim = Sim("JOB A a.sub\n", jobs={"A": 1}).go()
    sim.run.nodes["A"].details = 'a "quoted" back\\slash'
    ads = _ads(node_status_text(sim.run, ["a.dag"], now=0.0, next_update=0.0))
    assert ads[1]["StatusDetails"] == 'a "quoted" back\\slash'


def test_dag_node_status() -> None:
    """condor_dagman's DagStatus: SUBMITTED (no note) while it runs, DONE only when every
    node is, ERROR with why once it is over."""
    sim = Sim("JOB A a.sub\n")
    assert dag_node_status(sim.run) == (SUBMITTED, "")
    sim.step()
    assert dag_node_status(sim.run) == (SUBMITTED, "")
    sim.go()
    assert dag_node_status(sim.run) == (DONE, "success")
    failed = Sim("JOB A a.sub\n", jobs={"A": 1}).go()
    assert dag_node_status(failed.run) == (ERROR, "failed")
    aborted = Sim("JOB A a.sub\nABORT-DAG-ON A 3\n", jobs={"A": 3}).go()
    assert dag_node_status(aborted.run) == (ERROR, "aborted")


def test_node_status_file_layout_is_condor_dagmans() -> None:
    """The text itself, not only its ClassAds: scripts grep these lines."""
    sim = Sim("JOB A a.sub\nJOB B b.sub DONE\nJOB C c.sub\nPARENT A CHILD C\n", jobs={"A": 1}).go()
    text = node_status_text(sim.run, ["/d/x.dag"], now=1000.0, next_update=1060.0)
    lines = text.splitlines()
    assert lines[:5] == ["[", '  Type = "DagStatus";', "  DagFiles = {", '    "x.dag"', "  };"]
    assert lines[5].startswith("  Timestamp = 1000; /* \"") and lines[5].endswith('" */')
    assert lines[6] == '  DagStatus = 6; /* "STATUS_ERROR (failed)" */'
    assert "  JobProcsIdle = 0; /* includes held */" in lines
    ads = {ad["Node"]: ad for ad in _ads(text) if ad["Type"] == "NodeStatus"}
    assert ads["B"]["StatusDetails"] == "User defined as DONE"
    assert ads["C"]["StatusDetails"] == "Had an ancestor node fail"
    assert lines[-2] == '  NextUpdate = 0; /* "none" */' and lines[-1] == "]"


def test_node_status_file_while_running_and_service_nodes() -> None:
    sim = Sim("JOB A a.sub\nSERVICE S s.sub\n")
    sim.step()  # A and S submitted
    text = node_status_text(sim.run, ["x.dag"], now=1000.0, next_update=1060.0)
    ads = _ads(text)
    assert [ad.get("Node") for ad in ads[1:-1]] == ["A"]  # condor_dagman lists no SERVICE node
    assert ads[0]["NodesTotal"] == 1 and ads[0]["JobProcsIdle"] == 2  # but counts its procs
    assert ads[1]["StatusDetails"] == "idle" and ads[-1]["NextUpdate"] == 1060


def test_metrics_of_a_run() -> None:
    sim = Sim(DAG, jobs={"C": [1, 1], "S": 0}).go()
    m = metrics(sim.run, dagman_id="12.0", start=100.0, end=160.5, rescue_number=2, parent_id="3.0")
    assert m["client"] == "condor_dagman" and m["type"] == "metrics"
    assert (m["start_time"], m["end_time"], m["duration"]) == (100.0, 160.5, 60.5)
    assert m["exitcode"] == 1 and m["DagStatus"] == 2
    assert (m["dagman_id"], m["parent_dagman_id"], m["rescue_dag_number"]) == ("12.0", "3.0", 2)
    assert (m["jobs"], m["jobs_failed"], m["jobs_succeeded"]) == (4, 1, 2)
    assert (m["dag_jobs"], m["dag_jobs_failed"], m["dag_jobs_succeeded"]) == (1, 0, 1)
    assert m["total_jobs"] == 5 and m["total_jobs_run"] == 5  # A, B, C twice, S; not D
    assert json.loads(metrics_text(m)) == m


def test_metrics_of_a_run_not_finished() -> None:
    sim = Sim("JOB A a.sub\n")
    m = metrics(sim.run, dagman_id="1.0", start=0.0, end=0.0)
    assert m["exitcode"] == -1 and m["total_jobs_run"] == 0 and m["jobs_succeeded"] == 0


def test_dot_text() -> None:
    """condor_dagman's DOT layout: a time label, the INCLUDE file between comments, a
    node line per node with its state's tag and drawing, a blank line, the arcs."""
    sim = Sim("JOB A a.sub\nJOB B b.sub\nJOB C c.sub\nPARENT A CHILD B\n", jobs={"C": 1})
    sim.step()
    out = dot_text(sim.run, include="// mine\n", include_name="extra.dot", now=0.0)
    lines = out.splitlines()
    assert lines[0] == "digraph DAG {" and lines[-1] == "}"
    assert lines[1].startswith('    label="DAGMan Job status at ') and lines[2] == ""
    assert lines[3:7] == ["// Beginning of commands included from extra.dot.", "// mine",
                          "// End of commands included from extra.dot.", ""]
    assert '    "A" [shape=ellipse label="A (R)" peripheries=2];' in lines
    assert '    "B" [shape=ellipse label="B (I)"];' in lines
    assert lines[-3:] == ["", '    "A" -> "B";', "}"]
    sim.go()
    lines = dot_text(sim.run, now=0.0).splitlines()
    assert '    "A" [shape=ellipse label="A (Done)" style=bold];' in lines
    assert '    "C" [shape=box label="C (E)"];' in lines


def test_jobstate_line() -> None:
    assert jobstate_line(1700000000.7, "A", "SUBMIT", "12.0", "-", 1) == "1700000000 A SUBMIT 12.0 - - 1\n"
    assert jobstate_line(5, "B", "PRE_SCRIPT_STARTED") == "5 B PRE_SCRIPT_STARTED - - - -\n"


def test_dagman_out_node_table_is_condor_dagmans_layout() -> None:
    """The lines scripts grep in dagman.out: each count right under its heading, as
    condor_dagman's printf (``%5d   %5d    %5d ...``) puts it."""
    sim = Sim(DAG, jobs={"C": 1}).go()  # C fails twice: D futile, A B S done
    lines = progress_text(sim.run).splitlines()
    assert lines == [
        "DAG status: 2 (DAG_STATUS_NODE_FAILED)",
        "Of 5 nodes total:",
        " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile",
        "  ===     ===      ===     ===     ===        ===      ===      ===",
        "    3       0        0       0       0          0        1        1",
        "0 job proc(s) currently held",
    ]
    heads = [m.end() for m in re.finditer(r"\S+", lines[2])]
    assert [m.end() for m in re.finditer(r"\d+", lines[4])] == heads


def test_dagman_out_node_table_while_running() -> None:
    sim = Sim(DAG)
    sim.step()  # A and S submitted
    lines = progress_text(sim.run).splitlines()
    assert lines[0] == "DAG status: 0 (DAG_STATUS_OK)"
    assert lines[4].split() == ["0", "0", "2", "0", "0", "3", "0", "0"]


def test_failed_nodes_are_dumped_as_condor_dagman_dumps_them() -> None:
    sim = Sim(DAG, jobs={"C": 1}).go()
    text = failed_nodes_text(sim.run)
    assert text.count("---------------------- Node ----------------------") == 1
    assert "      Node Name: C\n" in text and "    Node Status: STATUS_ERROR\n" in text
    assert "Node return val: 1\n" in text and "Job Submit File: c.sub\n" in text
    assert "          Retry: 1\n" in text and " HTCondor Job ID: (" in text
    assert text.endswith("---------------------------------------\t<END>")
