"""DAGMan on a real personal pool: DAGs submitted with ``roost submit_dag`` and run by
the manager as a scheduler-universe job, checked through their files and job ads."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from poolkit import PoolHandle, wait_until

from roost.eventlog import read_events

SH_JOB = 'executable = /bin/sh\narguments = "-c \'$(cmd)\'"\noutput = $(nodename).out\nqueue\n'


@pytest.fixture
def d(jobdir: Path) -> Path:
    """The DAG's directory (its manager runs as nobody for root's DAGs)."""
    return jobdir


def write(d: Path, name: str, text: str, mode: int = 0o644) -> Path:
    p = d / name
    p.write_text(text)
    p.chmod(mode)
    return p


def submit_dag(pool: PoolHandle, d: Path, dag: str = "x.dag", *args: str) -> int:
    done = pool.roost("submit_dag", *args, str(d / dag), cwd=d, check=True)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return int(m.group(1))


def wait_dag(pool: PoolHandle, d: Path, cluster: int, dag: str = "x.dag", timeout: float = 90) -> int:
    """Wait for the DAGMan job to leave the queue; its exit code."""
    try:
        pool.wait([f"{cluster}.0"], timeout=timeout)
    except TimeoutError:
        raise AssertionError(_tail(d, dag)) from None
    job = pool.job(f"{cluster}.0")
    assert job is not None
    return int(job.get("ExitCode", -1))


def _tail(d: Path, dag: str) -> str:
    parts = []
    for suffix in ("dagman.out", "lib.err"):
        p = d / f"{dag}.{suffix}"
        if p.exists():
            parts.append(f"--- {p.name}\n" + "\n".join(p.read_text().splitlines()[-40:]))
    return "\n".join(parts)


def node_submits(d: Path, dag: str = "x.dag") -> Counter[str]:
    """How many times each node's job was submitted (the nodes log's submit events)."""
    counts: Counter[str] = Counter()
    for ev in list(read_events(str(d / f"{dag}.nodes.log"))):
        if int(ev.type) == 0 and ev.log_notes.startswith("DAG Node: "):
            counts[ev.log_notes[10:]] += 1
    return counts


HEADING = " Done     Pre   Queued    Post   Ready   Un-Ready   Failed   Futile"


def node_tables(out: str) -> list[dict[str, int]]:
    """Every node table in a dagman.out (condor_dagman's layout: the heading, a rule,
    the counts; each line after an ``MM/DD/YY HH:MM:SS`` stamp)."""
    lines = [ln[18:] for ln in out.splitlines()]
    keys = HEADING.split()
    return [dict(zip(keys, map(int, lines[i + 2].split()), strict=True))
            for i, ln in enumerate(lines) if ln == HEADING]


def test_diamond_with_config_vars_dot_and_node_status_file(pool: PoolHandle, d: Path) -> None:
    """One DAG with a CONFIG file, VARS that set job attributes (My. and the old +),
    DOT UPDATE DONT-OVERWRITE and a NODE_STATUS_FILE: each does what condor_dagman's
    does, and its files read as condor_dagman writes them."""
    write(d, "job.sub", SH_JOB)
    write(d, "x.config", "DAGMAN_MAX_JOBS_SUBMITTED = 1\nDAGMAN_HOLD_CLAIM_TIME = 0\n")
    write(d, "x.dag", "JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nJOB D job.sub\n"
          'VARS ALL_NODES nodename="$(JOB)" cmd="echo $(JOB)"\nVARS D +DagNote="\\"d\\""\n'
          'VARS A My.Color="\\"red\\"" My.Size="3"\n'
          "PARENT A CHILD B C\nPARENT B C CHILD D\nNODE_STATUS_FILE x.status 1\nJOBSTATE_LOG x.jobstate\n"
          'SET_JOB_ATTR DagTag = "tag"\nDOT x.dot UPDATE DONT-OVERWRITE\nCONFIG x.config\n')
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    for n in "ABCD":
        assert (d / f"{n}.out").read_text() == f"{n}\n"
    events = list(read_events(str(d / "x.dag.nodes.log")))
    order = [(int(e.type), e.cluster) for e in events]
    clusters = {e.log_notes[10:]: e.cluster for e in events if int(e.type) == 0}
    end = {name: order.index((5, c)) for name, c in clusters.items()}
    start = {name: order.index((0, c)) for name, c in clusters.items()}
    assert end["A"] < start["B"] and end["A"] < start["C"]
    assert max(end["B"], end["C"]) < start["D"]
    # the CONFIG file's DAGMAN_MAX_JOBS_SUBMITTED = 1: B and C, both ready, one at a time
    assert end["B"] < start["C"] or end["C"] < start["B"]
    ad = pool.job(f"{clusters['D']}.0")
    assert ad is not None
    assert ad["DAGManJobId"] == cluster and ad["DAGNodeName"] == "D" and ad["DAGParentNodeNames"] == "B,C"
    assert ad["JobBatchName"] == f"x.dag+{cluster}" and ad["DagNote"] == "d"
    a = pool.job(f"{clusters['A']}.0")
    assert a is not None and a["Color"] == "red" and a["Size"] == 3
    assert "KeepClaimIdle" not in a  # DAGMAN_HOLD_CLAIM_TIME = 0 from the CONFIG file
    dagman = pool.job(f"{cluster}.0")
    assert dagman is not None and dagman["DagTag"] == "tag" and dagman["DAG_NodesDone"] == 4
    # dagman.out: the settings, condor_dagman's node tables, the verdict, the exit
    out = (d / "x.dag.dagman.out").read_text()
    assert f"Using DAGMan config file: {d / 'x.config'}" in out
    assert "DAGMAN_MAX_JOBS_SUBMITTED setting: 1" in out
    a_job = clusters["A"]
    assert re.search(rf"Event: ULOG_JOB_TERMINATED for HTCondor Node A \({a_job}\.0\.0\) {{\d\d/\d\d/\d\d ", out)
    assert f"Node A job proc ({a_job}.0.0) completed successfully.\n" in out
    tables = node_tables(out)
    assert len(tables) >= 3 and max(t["Queued"] for t in tables) == 1
    assert tables[-1] == {"Done": 4, "Pre": 0, "Queued": 0, "Post": 0, "Ready": 0, "Un-Ready": 0,
                          "Failed": 0, "Futile": 0}
    tail = [ln[18:] for ln in out.splitlines()[-8:]]
    assert tail[0] == "All jobs Completed!" and tail[1] == "DAG status: 0 (DAG_STATUS_OK)"
    assert tail[2] == "Of 4 nodes total:" and tail[3] == HEADING
    assert tail[6] == "0 job proc(s) currently held" and tail[-1].endswith("EXITING WITH STATUS 0")
    # DOT UPDATE DONT-OVERWRITE: a picture as the DAG starts, then one per change, x.dot.0, .1, ...
    dots = sorted((p for p in d.iterdir() if p.name.startswith("x.dot")), key=lambda p: int(p.suffix[1:]))
    assert [p.name for p in dots] == [f"x.dot.{i}" for i in range(len(dots))] and len(dots) >= 3
    first, last = dots[0].read_text(), dots[-1].read_text()
    assert '    "A" [shape=ellipse label="A (I)"];' in first and "(Done)" not in first
    assert all(f'    "{n}" [shape=ellipse label="{n} (Done)" style=bold];' in last for n in "ABCD")
    assert last.startswith('digraph DAG {\n    label="DAGMan Job status at ') and '    "A" -> "B";' in last
    # NODE_STATUS_FILE: its last update, in condor_dagman's layout
    status = (d / "x.status").read_text()
    assert status.startswith('[\n  Type = "DagStatus";\n  DagFiles = {\n    "x.dag"\n  };\n')
    assert '  DagStatus = 5; /* "STATUS_DONE (success)" */' in status and "  NodesDone = 4;" in status
    assert status.count('  NodeStatus = 5; /* "STATUS_DONE" */') == 4
    assert status.endswith('  NextUpdate = 0; /* "none" */\n]\n')
    metrics = json.loads((d / "x.dag.metrics").read_text())
    assert metrics["exitcode"] == 0 and metrics["jobs_succeeded"] == 4 and metrics["dagman_id"] == f"{cluster}.0"
    assert "D JOB_SUCCESS 0" in (d / "x.jobstate").read_text()


def test_retry_unless_exit_and_rescue_then_resume(pool: PoolHandle, d: Path) -> None:
    flag = d / "flag"
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", "JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nJOB D job.sub\nPARENT B CHILD D\n"
          'VARS A nodename="A" cmd="exit 3"\nRETRY A 2\n'
          'VARS B nodename="B" cmd="test -e ' + str(flag) + '"\n'
          'VARS C nodename="C" cmd="exit 5"\nRETRY C 4 UNLESS-EXIT 5\n'
          'VARS D nodename="D" cmd="echo d"\n')
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 1
    assert node_submits(d) == {"A": 3, "B": 1, "C": 1}
    out = (d / "x.dag.dagman.out").read_text()  # condor_dagman's lines for a failed DAG
    failed = out.split("ERROR: the following job(s) failed:\n", 1)[1]
    assert "      Node Name: A\n" in failed and "      Node Name: C\n" in failed
    assert "Node return val: 5\n" in failed and "          Retry: 2\n" in failed
    assert re.search(r"Node C job proc \(\d+\.0\.0\) failed with status 5\.\n", out)
    assert "Aborting DAG...\n" in failed and f"Writing Rescue DAG to {d / 'x.dag.rescue001'}..." in failed
    assert "DAG status: 2 (DAG_STATUS_NODE_FAILED)" in failed and "All jobs Completed!" not in out
    assert node_tables(out)[-1]["Failed"] == 3 and out.rstrip().endswith("EXITING WITH STATUS 1")
    rescue = (d / "x.dag.rescue001").read_text()
    assert "DONE" not in rescue.replace("Nodes premarked DONE", "")
    # Second run: A and C now succeed, B too; the rescue DAG is picked up by itself.
    write(d, "x.dag", (d / "x.dag").read_text().replace('cmd="exit 3"', 'cmd="true"').replace(
        'cmd="exit 5"', 'cmd="true"'))
    flag.write_text("")
    done = pool.roost("submit_dag", str(d / "x.dag"), cwd=d, check=True)
    assert "Running rescue DAG 1" in done.stdout
    cluster2 = int(re.search(r"cluster (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert wait_dag(pool, d, cluster2) == 0, _tail(d, "x.dag")
    assert node_submits(d) == {"A": 1, "B": 1, "C": 1, "D": 1}
    assert not (d / "x.dag.rescue002").exists()
    assert "All jobs Completed!" in (d / "x.dag.dagman.out").read_text().rsplit("EXITING WITH STATUS 1", 1)[1]


def test_rescue_skips_done_nodes(pool: PoolHandle, d: Path) -> None:
    flag = d / "flag"
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nPARENT A CHILD B\nVARS A nodename="A" cmd="true"\n'
          f'VARS B nodename="B" cmd="test -e {flag}"\nDOT x.dot\n')
    assert wait_dag(pool, d, submit_dag(pool, d)) == 1
    assert "DONE A" in (d / "x.dag.rescue001").read_text()
    # DOT's defaults, DONT-UPDATE and OVERWRITE: one picture, of the DAG as it started
    dot = (d / "x.dot").read_text()
    assert '"A" [shape=ellipse label="A (I)"];' in dot and '"B" [shape=ellipse label="B (I)"];' in dot
    assert not list(d.glob("x.dot.*"))
    flag.write_text("")
    assert wait_dag(pool, d, submit_dag(pool, d)) == 0
    assert node_submits(d) == {"B": 1}  # A was DONE in the rescue DAG: not run again
    # -f ignores (and renames) the rescue DAGs: everything runs again
    assert wait_dag(pool, d, submit_dag(pool, d, "x.dag", "-f")) == 0
    assert node_submits(d) == {"A": 1, "B": 1}
    assert (d / "x.dag.rescue001.old").exists()


def test_pre_and_post_scripts_decide_the_node(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "post.sh", '#!/bin/sh\necho "$1 $2 $3" >> posts.txt\n[ "$2" = 7 ] && exit 0\nexit "$4"\n', 0o755)
    write(d, "x.dag",
          "JOB P job.sub\nJOB Q job.sub\nJOB R job.sub\nJOB S job.sub\nPARENT Q CHILD S\n"
          'VARS P nodename="P" cmd="true"\nVARS Q nodename="Q" cmd="exit 7"\nVARS R nodename="R" cmd="true"\n'
          'VARS S nodename="S" cmd="true"\n'
          "SCRIPT PRE P /bin/false\nSCRIPT POST P post.sh $JOB $RETURN $PRE_SCRIPT_RETURN 0\n"
          "SCRIPT POST Q post.sh $JOB $RETURN $RETRY 1\n"
          "SCRIPT POST R post.sh $JOB $RETURN $RETRY 4\n")
    assert wait_dag(pool, d, submit_dag(pool, d)) == 1
    subs = node_submits(d)
    assert "P" not in subs  # its PRE script failed: no job, and no POST script
    assert subs["Q"] == 1 and subs["S"] == 1  # the POST script made Q's exit 7 a success
    posts = (d / "posts.txt").read_text().split("\n")
    assert "Q 7 0" in posts and "R 0 0" in posts and not any(p.startswith("P") for p in posts)
    status = (d / "x.dag.rescue001").read_text()
    assert "DONE Q" in status and "DONE S" in status and "DONE R" not in status
    events = [e for e in list(read_events(str(d / "x.dag.nodes.log"))) if int(e.type) == 16]
    assert sorted((e.dag_node_name, e.return_value) for e in events) == [("Q", 0), ("R", 4)]


def test_abort_dag_on_removes_running_nodes_and_final_runs(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "final.sub", "executable = /bin/echo\narguments = $(DAG_STATUS) $(FAILED_COUNT)\n"
          "output = final.out\nqueue\n")
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nPARENT A CHILD C\nFINAL F final.sub\n'
          'VARS A nodename="A" cmd="sleep 1; exit 9"\nVARS B nodename="B" cmd="sleep 60"\n'
          'VARS C nodename="C" cmd="true"\nABORT-DAG-ON A 9 RETURN 1\n')
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")  # the FINAL node's success decides
    assert (d / "final.out").read_text().split() == ["3", "2"]  # $(DAG_STATUS) abort; A and B failed
    subs = node_submits(d)
    assert "C" not in subs and subs["B"] == 1
    kinds = {(int(e.type), e.cluster) for e in list(read_events(str(d / "x.dag.nodes.log")))}
    b = next(e.cluster for e in list(read_events(str(d / "x.dag.nodes.log")))
             if int(e.type) == 0 and e.log_notes == "DAG Node: B")
    assert (9, b) in kinds  # B was removed by the abort


def test_abort_without_final_returns_its_value(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nPARENT A CHILD B\nVARS A nodename="A" cmd="exit 4"\n'
          'VARS B nodename="B" cmd="true"\nABORT-DAG-ON A 4\nRETRY A 3\n')
    cluster = submit_dag(pool, d)
    # exit value 4 is not 0-2: the DAGMan job would be restarted, as HTCondor's is; remove it
    deadline = time.monotonic() + 60
    out = d / "x.dag.dagman.out"
    while not out.exists() or "EXITING WITH STATUS 4" not in out.read_text():
        assert time.monotonic() < deadline, _tail(d, "x.dag")
        time.sleep(0.1)
    pool.roost("rm", str(cluster), check=True)
    # the restarted manager may have begun a new run (and a new nodes log): read the first
    first = out.read_text().split("EXITING WITH STATUS 4")[0]
    assert first.count("Submitted node A") == 1  # an abort overrides RETRY
    assert (d / "x.dag.rescue001").exists()


def test_splices_and_a_sub_dag(pool: PoolHandle, d: Path) -> None:
    (d / "inner").mkdir()
    (d / "inner").chmod(0o777)
    (d / "sub").mkdir()
    (d / "sub").chmod(0o777)
    job = "executable = /bin/echo\narguments = $(word)\noutput = $(word).out\nqueue\n"
    write(d / "inner", "job.sub", job)
    write(d / "inner", "inner.dag", 'JOB one job.sub\nJOB two job.sub\nPARENT one CHILD two\n'
          'VARS one word="one"\nVARS two word="two"\n')
    write(d / "sub", "job.sub", job)
    write(d / "sub", "sub.dag", 'JOB s1 job.sub\nVARS s1 word="subdag"\n')
    write(d, "job.sub", job)
    write(d, "x.dag", 'JOB X job.sub\nVARS X word="x"\nSPLICE S inner.dag DIR inner\n'
          "SUBDAG EXTERNAL Y sub/sub.dag\nPARENT X CHILD S\nPARENT S CHILD Y\n")
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert (d / "inner" / "one.out").read_text() == "one\n"
    assert (d / "inner" / "two.out").read_text() == "two\n"
    assert (d / "sub" / "subdag.out").read_text() == "subdag\n"
    assert set(node_submits(d)) == {"X", "S+one", "S+two", "Y"}
    assert "EXITING WITH STATUS 0" in (d / "sub" / "sub.dag.dagman.out").read_text()


@pytest.mark.parametrize("how,limit", [("category", 2), ("config", 1), ("option", 3)])
def test_throttles_are_never_exceeded(pool: PoolHandle, d: Path, how: str, limit: int) -> None:
    """CATEGORY + MAXJOBS, the DAG's CONFIG file (DAGMAN_MAX_JOBS_SUBMITTED) and
    submit_dag -maxjobs: the queue, sampled, never holds more node jobs than allowed."""
    write(d, "job.sub", SH_JOB)
    text = "".join(f'JOB N{i} job.sub\nVARS N{i} nodename="N{i}" cmd="sleep 0.4"\nCATEGORY N{i} slow\n'
                   for i in range(8))
    args: list[str] = []
    if how == "category":
        text += f"MAXJOBS slow {limit}\n"
    elif how == "config":
        write(d, "x.config", f"DAGMAN_MAX_JOBS_SUBMITTED = {limit}\n")
        text += "CONFIG x.config\n"
    else:
        args = ["-maxjobs", str(limit)]
    write(d, "x.dag", text)
    cluster = submit_dag(pool, d, "x.dag", *args)
    most = 0
    s = pool.schedd()
    try:
        deadline = time.monotonic() + 90
        while s.query(f"ClusterId == {cluster}", ["ClusterId"]):
            most = max(most, len(s.query(f"DAGManJobId == {cluster}", ["ClusterId"])))
            assert time.monotonic() < deadline, _tail(d, "x.dag")
            time.sleep(0.02)
    finally:
        s.close()
    assert wait_dag(pool, d, cluster) == 0
    assert most == limit, most
    assert len(node_submits(d)) == 8


def _manager_pid(dag: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"roost.dagman" in cmd and str(dag).encode() in cmd:
            return int(entry)
    return None


def _chain(d: Path, n: int = 4, sleep: float = 1.0) -> None:
    write(d, "job.sub", SH_JOB)
    text = "".join(f'JOB N{i} job.sub\nVARS N{i} nodename="N{i}" cmd="sleep {sleep}"\n' for i in range(n))
    text += "".join(f"PARENT N{i} CHILD N{i + 1}\n" for i in range(n - 1))
    write(d, "x.dag", text)


def test_kill_9_of_the_manager_recovers_from_the_nodes_log(pool: PoolHandle, d: Path) -> None:
    _chain(d)
    cluster = submit_dag(pool, d)
    wait_until(lambda: "N1" in node_submits(d) if (d / "x.dag.nodes.log").exists() else False, 60, "N1 submitted")
    pid = _manager_pid(d / "x.dag")
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert node_submits(d) == {f"N{i}": 1 for i in range(4)}  # none twice, none forgotten
    out = (d / "x.dag.dagman.out").read_text()
    assert "RECOVERY mode" in out and "EXITING WITH STATUS 0" in out


def test_kill_9_of_the_schedd_mid_dag(fresh_pool: PoolHandle, d: Path) -> None:
    pool = fresh_pool
    _chain(d)
    cluster = submit_dag(pool, d)
    wait_until(lambda: "N1" in node_submits(d) if (d / "x.dag.nodes.log").exists() else False, 60, "N1 submitted")
    old = pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)
    pool.wait_daemon_back("schedd", old, timeout=30)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert node_submits(d) == {f"N{i}": 1 for i in range(4)}
    assert "RECOVERY mode" in (d / "x.dag.dagman.out").read_text()


def test_rm_of_the_dag_removes_its_nodes_and_writes_a_rescue_dag(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nPARENT A CHILD B\nPARENT B CHILD C\n'
          'VARS A nodename="A" cmd="true"\nVARS B nodename="B" cmd="sleep 60"\nVARS C nodename="C" cmd="true"\n')
    cluster = submit_dag(pool, d)
    wait_until(lambda: "B" in node_submits(d) if (d / "x.dag.nodes.log").exists() else False, 60, "B submitted")
    pool.roost("rm", str(cluster), check=True)
    s = pool.schedd()
    try:
        wait_until(lambda: not s.query(f"DAGManJobId == {cluster}", ["ClusterId"]), 30, "node jobs removed")
    finally:
        s.close()
    wait_until(lambda: (d / "x.dag.rescue001").exists(), 30, "rescue DAG written")
    assert "DONE A" in (d / "x.dag.rescue001").read_text()
    assert "C" not in node_submits(d)


@pytest.mark.parametrize("dag,message", [
    ("JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nPARENT B CHILD A\n", "cycle: A -> B -> A"),
    ("JOB A a.sub\nRETRY A many\n", "x.dag:2: RETRY count 'many' is not a whole number"),
    ("JOB A a.sub\nFINAL F a.sub\nPARENT F CHILD A\n", "x.dag:3: the FINAL node 'F' cannot be in a PARENT line"),
    ("JOB A a.sub\nFROB A\n", "x.dag:2: unknown command 'FROB'"),
    ("JOB A a.sub\nFINAL F a.sub\nRETRY F 2\n", "x.dag:3: Final Node F cannot have RETRY specification"),
])
def test_errors_before_anything_runs(pool: PoolHandle, d: Path, dag: str, message: str) -> None:
    write(d, "a.sub", "executable = /bin/true\nqueue\n")
    write(d, "x.dag", dag)
    done = pool.roost("submit_dag", str(d / "x.dag"), cwd=d)
    assert done.returncode == 1
    assert message in done.stderr
    assert not (d / "x.dag.condor.sub").exists()


def test_a_dag_written_by_htcondor2_dags_runs_through_the_python_api(pool: PoolHandle, d: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    from htcondor2 import dags

    from roost.dagman.api import submit_dag as api_submit_dag
    from roost.dagman.api import wait_dag

    echo = {"executable": "/bin/echo", "arguments": "$(word)", "output": "$(word).out"}
    dag = dags.DAG()
    a = dag.layer(name="A", submit_description=htcondor2.Submit(echo), vars=[{"word": "a1"}, {"word": "a2"}],
                  retries=1)
    a.child_layer(name="B", submit_description=htcondor2.Submit(echo), vars=[{"word": "b"}],
                  post=dags.Script(executable="/bin/true", arguments=["$RETURN"]))
    dags.write_dag(dag, d, dag_file_name="x.dag")
    for f in d.iterdir():
        f.chmod(0o644)
    schedd = pool.schedd()
    try:
        result = api_submit_dag(d / "x.dag", schedd=schedd)
        assert wait_dag(result.cluster, schedd=schedd, timeout=90) == 0, _tail(d, "x.dag")
    finally:
        schedd.close()
    assert [(d / f"{w}.out").read_text() for w in ("a1", "a2", "b")] == ["a1\n", "a2\n", "b\n"]
    assert set(node_submits(d)) == {"A:0", "A:1", "B:0"}


def test_q_shows_a_dag_its_nodes_and_its_progress(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nPARENT A CHILD B\nPARENT B CHILD C\n'
          'VARS A nodename="A" cmd="true"\nVARS B nodename="B" cmd="sleep 60"\nVARS C nodename="C" cmd="true"\n')
    cluster = submit_dag(pool, d)
    name = f"x.dag+{cluster}"

    def batch_row() -> list[str]:
        out = pool.roost("q", check=True).stdout
        return next((ln.split() for ln in out.splitlines() if name in ln), [])

    # DONE 1 (A), RUN 1 (B), TOTAL 3 (the DAG's nodes, not its jobs in the queue)
    wait_until(lambda: (row := batch_row()) and row[4] == "1" and row[5] == "1" and row[7] == "3", 60,
              "the batch row counting the DAG's nodes")
    lines = pool.roost("q", "-dag", check=True).stdout.splitlines()
    dag_line = next(i for i, ln in enumerate(lines) if ln.split()[:1] == [f"{cluster}.0"])
    assert "|-B" in lines[dag_line + 1]
    pool.roost("rm", str(cluster), check=True)


def test_save_point_then_load_save(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nJOB B job.sub\nJOB C job.sub\nPARENT A CHILD B\nPARENT B CHILD C\n'
          'VARS ALL_NODES nodename="$(JOB)" cmd="true"\nSAVE_POINT_FILE B\n')
    assert wait_dag(pool, d, submit_dag(pool, d)) == 0
    save = d / "save_files" / "B-x.dag.save"
    text = save.read_text()
    assert "DONE A" in text and "DONE B" not in text
    assert wait_dag(pool, d, submit_dag(pool, d, "x.dag", "-load_save", "B-x.dag.save")) == 0, _tail(d, "x.dag")
    assert node_submits(d) == {"B": 1, "C": 1}


def test_noop_pre_skip_defer_and_debug(pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "defer.sh", '#!/bin/sh\nif [ -e deferred ]; then echo second; exit 0; fi\n'
          'touch deferred; echo first; exit 4\n', 0o755)
    write(d, "x.dag", "JOB S job.sub NOOP\nJOB K job.sub\nJOB D job.sub\nPARENT S K CHILD D\n"
          'VARS ALL_NODES nodename="$(JOB)" cmd="true"\n'
          "SCRIPT PRE S /bin/true\n"
          "SCRIPT PRE K /bin/sh -c 'exit 3'\nPRE_SKIP K 3\n"
          "SCRIPT DEFER 4 1 DEBUG pre.debug ALL PRE D defer.sh\n")
    started = time.monotonic()
    assert wait_dag(pool, d, submit_dag(pool, d)) == 0, _tail(d, "x.dag")
    assert time.monotonic() - started >= 1.0  # the deferred PRE script waited its second
    assert node_submits(d) == {"D": 1}  # S is a NOOP, K was skipped by its PRE script
    assert (d / "pre.debug").read_text().split() == ["first", "second"]


def test_a_running_dag_is_not_submitted_twice_and_rm_of_a_held_dag_removes_its_nodes(
        pool: PoolHandle, d: Path) -> None:
    write(d, "job.sub", SH_JOB)
    write(d, "x.dag", 'JOB A job.sub\nVARS A nodename="A" cmd="sleep 60"\n')
    cluster = submit_dag(pool, d)
    wait_until(lambda: "A" in node_submits(d) if (d / "x.dag.nodes.log").exists() else False, 60, "A submitted")
    again = pool.roost("submit_dag", "-f", str(d / "x.dag"), cwd=d)
    assert again.returncode == 1 and f"already running as DAGMan job {cluster}.0" in again.stderr
    # held, its manager stops (and would recover on release); its node job runs on
    pool.roost("hold", str(cluster), check=True)
    wait_until(lambda: _manager_pid(d / "x.dag") is None, 30, "the manager stopped")
    s = pool.schedd()
    try:
        assert s.query(f"DAGManJobId == {cluster}", ["ClusterId"])
        # removed while no manager runs: the schedd removes the node jobs itself
        pool.roost("rm", str(cluster), check=True)
        wait_until(lambda: not s.query(f"DAGManJobId == {cluster}", ["ClusterId"]), 30, "node jobs removed")
    finally:
        s.close()


def test_a_node_submit_file_uses_dagmans_own_variables(pool: PoolHandle, d: Path) -> None:
    """Issue 26: the commonest DAG idiom, ``output = $(JOB).out`` in a node's submit
    file (every OSG DAG tutorial; the manual's splice example). HTCondor's DAGMan
    defines JOB, RETRY, DAG_STATUS, FAILED_COUNT and DAG_PARENT_NAMES as submit
    variables of every node job, not only in VARS values."""
    write(d, "node.sub", "executable = /bin/sh\n"
          "arguments = \"-c 'echo $(JOB) $(RETRY) [$(DAG_PARENT_NAMES)] $(DAG_STATUS) $(FAILED_COUNT); "
          "test $(JOB)$(RETRY) != B0'\"\n"
          "output = $(JOB).out\nerror = $(JOB).err\nlog = $(JOB).log\nqueue\n")
    write(d, "x.dag", "JOB A node.sub\nJOB B node.sub\nJOB C node.sub\n"
          "PARENT A CHILD B\nPARENT A B CHILD C\nRETRY B 1\n")
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert (d / "A.out").read_text() == "A 0 [] 0 0\n"
    assert (d / "B.out").read_text() == "B 1 [A] 0 0\n"  # its retry: B0 failed
    assert (d / "C.out").read_text() == "C 0 [A,B] 0 0\n"
    assert not (d / ".out").exists()
    assert [int(ev.type) for ev in read_events(str(d / "A.log"))][-1] == 5  # its own user log, terminated


def test_an_inline_description_without_queue_queues_one_job(pool: PoolHandle, d: Path) -> None:
    """``JOB X { ... }`` and SUBMIT-DESCRIPTION blocks with no queue line: HTCondor
    queues one job for each (issue 26)."""
    write(d, "x.dag", "SUBMIT-DESCRIPTION hello {\n  executable = /bin/echo\n  arguments = described\n"
          "  output = $(JOB).out\n}\n"
          "JOB A {\n  executable = /bin/echo\n  arguments = inline\n  output = $(JOB).out\n}\n"
          "JOB B hello\nPARENT A CHILD B\n")
    cluster = submit_dag(pool, d)
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert (d / "A.out").read_text() == "inline\n" and (d / "B.out").read_text() == "described\n"
    assert node_submits(d) == {"A": 1, "B": 1}


def test_a_node_file_an_earlier_node_writes_is_looked_for_when_it_runs(pool: PoolHandle, d: Path) -> None:
    """A node's submit file and a SUBDAG EXTERNAL's DAG file that an earlier node
    writes: HTCondor looks for them when the node is about to run (issue 26), so the
    submit only warns."""
    write(d, "make.sh", "#!/bin/sh\nprintf 'executable = /bin/echo\\narguments = made\\noutput = made.out\\nqueue\\n'"
          " > later.sub\nprintf 'JOB S later.sub\\n' > inner.dag\n", 0o755)
    write(d, "make.sub", "executable = make.sh\nqueue\n")
    write(d, "x.dag", "JOB A make.sub\nJOB B later.sub\nSUBDAG EXTERNAL C inner.dag\nPARENT A CHILD B C\n")
    done = pool.roost("submit_dag", str(d / "x.dag"), cwd=d)
    assert done.returncode == 0, done.stderr
    assert "node 'B': its submit file later.sub does not exist yet" in done.stderr, done.stderr
    assert "node 'C': its DAG file inner.dag does not exist yet" in done.stderr
    cluster = int(re.search(r"submitted to cluster (\d+)", done.stdout).group(1))  # type: ignore[union-attr]
    assert wait_dag(pool, d, cluster) == 0, _tail(d, "x.dag")
    assert (d / "made.out").read_text() == "made\n"
    assert (d / "inner.dag.dagman.out").exists()  # the sub-DAG ran (its node S wrote made.out too)


def test_root_cannot_run_a_dag_where_its_manager_cannot_write(pool: PoolHandle, tmp_path: Path) -> None:
    """Root's DAGs run as nobody: a DAG in a directory nobody cannot write is refused at
    submit, one line naming the directory and the user (issue 26), not an exit 1 with
    the reason in .lib.err."""
    if os.geteuid() != 0:
        pytest.skip("root's DAGs only")
    closed = tmp_path / "mine"
    closed.mkdir(mode=0o755)
    write(closed, "a.sub", "executable = /bin/true\nqueue\n")
    write(closed, "x.dag", "JOB A a.sub\n")
    done = pool.roost("submit_dag", str(closed / "x.dag"), cwd=closed)
    assert done.returncode == 1
    err = done.stderr.strip()
    assert "\n" not in err and "nobody" in err and str(closed) in err, err
    assert not (closed / "x.dag.condor.sub").exists()
