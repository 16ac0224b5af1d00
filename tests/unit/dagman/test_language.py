"""The DAG file language, pure: commands, options, and one clear error per problem."""

from __future__ import annotations

import pytest

from roost.dagman.language import DagError, check, find_cycle, parse_file, parse_text

DIAMOND = """\
# a diamond
JOB  A  a.sub
JOB  B  b.sub DIR sub
JOB  C  c.sub NOOP
Job  D  d.sub DONE
PARENT A CHILD B C
PARENT B C CHILD D
RETRY B 3 UNLESS-EXIT 42
RETRY ALL_NODES 1
SCRIPT PRE A pre.sh $JOB $RETRY
SCRIPT DEFER 4 30 POST B post.sh $RETURN
SCRIPT DEBUG b.debug ALL HOLD B hold.sh
PRE_SKIP A 99
VARS A x="1" y="two words" z="a \\"quoted\\" one"
VARS ALL_NODES PREPEND w="all"
PRIORITY D 5
CATEGORY B big
CATEGORY C big
MAXJOBS big 1
ABORT-DAG-ON C 3 RETURN 7
FINAL F f.sub
SCRIPT POST F cleanup.sh $DAG_STATUS $FAILED_COUNT
CONFIG dag.config
DOT dag.dot UPDATE DONT-OVERWRITE
NODE_STATUS_FILE status.txt 30 ALWAYS-UPDATE
JOBSTATE_LOG jobstate.log
SET_JOB_ATTR Project = "roost"
ENV SET A=1;B=two
ENV GET HOME PATH
SAVE_POINT_FILE B
SPLICE S1 inner.dag DIR inner
SUBDAG EXTERNAL E outer.dag
"""


def test_every_common_command_reads_as_condor_dagman_reads_it() -> None:
    dag = parse_text(DIAMOND, "diamond.dag")
    a, b, c, d = (dag.nodes[n] for n in "ABCD")
    assert a.children == ["B", "C"] and d.parents == ["B", "C"]
    assert (b.dir, c.noop, d.done) == ("sub", True, True)
    assert (b.retry, b.unless_exit, a.retry, c.retry) == (1, None, 1, 1)  # ALL_NODES came later
    assert a.scripts["PRE"].command == "pre.sh $JOB $RETRY"
    post = b.scripts["POST"]
    assert (post.command, post.defer_status, post.defer_time) == ("post.sh $RETURN", 4, 30)
    assert (b.scripts["HOLD"].debug_file, b.scripts["HOLD"].debug_type) == ("b.debug", "ALL")
    assert a.pre_skip == 99
    assert a.vars == [("x", "1"), ("y", "two words"), ("z", 'a "quoted" one'), ("w", "all")]
    assert (d.priority, b.category, dag.maxjobs) == (5, "big", {"big": 1})
    assert c.abort_on == (3, 7)
    assert dag.final is not None and dag.final.name == "F" and dag.final.scripts["POST"].command.endswith("$FAILED_COUNT")
    assert "w" not in dict(dag.final.vars)  # ALL_NODES leaves the FINAL node out
    assert dag.config == "dag.config" and dag.dot == ("dag.dot", True, False, None)
    assert dag.node_status_file == ("status.txt", 30, True) and dag.jobstate_log == "jobstate.log"
    assert dag.job_attrs == [("Project", '"roost"')]
    assert dag.env_set == [("A", "1"), ("B", "two")] and dag.env_get == ["HOME", "PATH"]
    assert dag.save_points == {"B": "B-diamond.dag.save"}
    assert dag.splices["S1"][:2] == ("inner.dag", "inner")
    assert dag.nodes["E"].kind == "subdag" and dag.nodes["E"].submit == "outer.dag"


def test_inline_descriptions_and_includes(tmp_path) -> None:
    (tmp_path / "more.dag").write_text("JOB C c.sub\nPARENT B CHILD C\n")
    (tmp_path / "main.dag").write_text(
        "SUBMIT-DESCRIPTION sleeper {\n  executable = /bin/sleep\n  arguments = 1\n  queue\n}\n"
        "JOB A {\n  executable = /bin/true\n  queue\n}\nJOB B sleeper\nINCLUDE more.dag\nPARENT A CHILD B\n")
    dag = parse_file(str(tmp_path / "main.dag"))
    assert dag.nodes["A"].inline == "executable = /bin/true\nqueue\n"
    assert dag.descriptions["sleeper"].startswith("executable = /bin/sleep")
    assert dag.nodes["C"].parents == ["B"]
    assert check(dag, lambda p: p == "c.sub") == [] and dag.nodes["B"].description == "sleeper"


@pytest.mark.parametrize("text,line,problem", [
    ("JOB A a.sub\nJOB A b.sub\n", 2, "defined twice (first at x.dag:1)"),
    ("JOB A a.sub\nPARENT A CHILD B\n", 2, "no node named 'B'"),
    ("JOB A a.sub\nRETRY A many\n", 2, "RETRY count 'many' is not a whole number"),
    ("JOB A a.sub\nRETRY A 2 UNLESS-EXIT x\n", 2, "UNLESS-EXIT value 'x' is not a whole number"),
    ("JOB A a.sub\nRETRY A -1\n", 2, "out of range"),
    ("JOB A a.sub\nFINAL F f.sub\nPARENT F CHILD A\n", 3, "FINAL node 'F' cannot be in a PARENT line"),
    ("JOB A a.sub\nFROB A\n", 2, "unknown command 'FROB'"),
    ("JOB A a.sub\nVARS A x=1\n", 2, 'expected name="value"'),
    ("JOB A a.sub FAST\n", 1, "unknown option 'FAST'"),
    ("JOB A {\n executable = x\n", 1, "no closing }"),
    ("JOB A a.sub\nSCRIPT PRE A\n", 2, "SCRIPT: expected"),
    ("JOB A a.sub\nPARENT A CHILD A\n", 2, "its own parent"),
    ("JOB A a.sub\nABORT-DAG-ON A 1 RETURN 300\n", 2, "out of range"),
    # condor_dagman's parse errors for a FINAL or SERVICE node in these commands
    ("JOB A a.sub\nFINAL F f.sub\nRETRY F 2\n", 3, "Final Node F cannot have RETRY specification"),
    ("FINAL F f.sub\nABORT-DAG-ON F 1\n", 2, "Final Node F cannot have ABORT-DAG-ON specification"),
    ("FINAL F f.sub\nPRIORITY F 4\n", 2, "Final Node F cannot have PRIORITY specification"),
    ("FINAL F f.sub\nCATEGORY F big\n", 2, "Final Node F cannot have CATEGORY specification"),
    ("SERVICE S s.sub\nRETRY S 1\n", 2, "SERVICE node S cannot have RETRY specification"),
    ("SERVICE S s.sub\nPRIORITY S 1\n", 2, "SERVICE node S cannot have PRIORITY specification"),
])
def test_each_problem_is_one_line_with_file_and_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(DagError) as e:
        parse_text(text, "x.dag")
    assert e.value.line == line and problem in str(e.value), str(e.value)
    assert str(e.value).startswith(f"x.dag:{line}: ")


def test_all_nodes_leaves_out_the_final_and_service_nodes() -> None:
    """RETRY ALL_NODES is no error in a DAG with a FINAL and a SERVICE node: condor_dagman
    skips them there (they are refused only when named)."""
    dag = parse_text("JOB A a.sub\nFINAL F f.sub\nSERVICE S s.sub\nRETRY ALL_NODES 2\nPRIORITY ALL_NODES 3\n"
                     'SCRIPT POST F post.sh\nVARS ALL_NODES x="1"\n', "x.dag")
    a, f, s = (dag.nodes[n] for n in "AFS")
    assert (a.retry, a.priority, a.vars) == (2, 3, [("x", "1")])
    assert (f.retry, f.priority, f.vars, s.retry, s.priority, s.vars) == (0, 0, [], 0, 0, [])
    assert f.scripts["POST"].command == "post.sh"


def test_a_cycle_is_named_node_by_node() -> None:
    with pytest.raises(DagError, match=r"cycle: (B -> C -> D -> B|C -> D -> B -> C|D -> B -> C -> D)"):
        parse_text("JOB A a\nJOB B b\nJOB C c\nJOB D d\nPARENT A CHILD B\nPARENT B CHILD C\n"
                   "PARENT C CHILD D\nPARENT D CHILD B\n", "c.dag")


def test_missing_submit_files_are_found_before_anything_runs() -> None:
    dag = parse_text("JOB A a.sub\nJOB B b.sub DIR there\nJOB C c.sub NOOP\nSUBDAG EXTERNAL S s.dag\n", "m.dag")
    problems = [str(p) for p in check(dag, lambda p: p == "a.sub")]
    assert problems == ["m.dag:2: node 'B': its submit file there/b.sub does not exist",
                        "m.dag:4: node 'S': its DAG file s.dag does not exist"]


def test_a_long_chain_parses_and_has_no_cycle() -> None:
    n = 20000
    text = "".join(f"JOB N{i} n.sub\n" for i in range(n)) + "".join(f"PARENT N{i} CHILD N{i + 1}\n" for i in range(n - 1))
    dag = parse_text(text, "chain.dag")
    assert len(dag.nodes) == n and find_cycle(dag) is None and dag.nodes["N5"].parents == ["N4"]


def test_commands_may_name_nodes_defined_further_down() -> None:
    """condor_dagman reads the nodes first: RETRY, VARS and PARENT may come before JOB."""
    dag = parse_text('RETRY B 2\nVARS B x="1"\nPARENT A CHILD B\nJOB A a.sub\nJOB B b.sub\n', "f.dag")
    assert dag.nodes["B"].retry == 2 and dag.nodes["B"].vars == [("x", "1")] and dag.nodes["B"].parents == ["A"]
