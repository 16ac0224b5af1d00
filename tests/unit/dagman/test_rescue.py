"""Rescue DAGs: what a failed run writes, read back, and their numbering."""

from __future__ import annotations

import pytest

from roost.dagman.language import DagError, parse_text
from roost.dagman.rescue import next_rescue, read_rescue, rescue_numbers, rescue_path, rescue_text
from roost.dagman.state import DAG_STATUS_RM

from .test_state import Sim

DAG = """\
JOB A a.sub
JOB B b.sub
JOB C c.sub
JOB D d.sub
JOB E e.sub
PARENT A CHILD B C
PARENT B C CHILD D
RETRY C 2
FINAL F f.sub
"""


def _failed_run() -> Sim:
    return Sim(DAG, jobs={"C": 1}).go()  # C fails three times: D is futile; A, B, E, F done


def test_rescue_text_has_done_lines_for_finished_nodes_only() -> None:
    sim = _failed_run()
    text = rescue_text("/x/diamond.dag", sim.run, now=0.0)
    done = sorted(line.split()[1] for line in text.splitlines() if line.startswith("DONE "))
    assert done == ["A", "B", "E"]  # not the FINAL node, not C or D
    assert "# Rescue DAG file, created after running the diamond.dag DAG file" in text
    assert "# Total number of Nodes: 6" in text and "# Nodes that failed: 1" in text
    assert any(line.startswith("#   C: Job proc (") and line.endswith("failed with status 1 (after 2 node retries)") for line in text.splitlines())
    # C used all its retries: none left (condor_dagman with DAGMAN_RESET_RETRIES_UPON_RESCUE off)
    assert [line for line in text.splitlines() if line.startswith("RETRY")] == ["RETRY C 0"]


def test_rescue_round_trip() -> None:
    sim = _failed_run()
    text = rescue_text("diamond.dag", sim.run, now=0.0, reason="the DAG failed")
    assert "# the DAG failed" in text
    done, retries = read_rescue("diamond.dag.rescue001", text, sim.run.nodes)
    assert done == set(sim.run.done_nodes()) == {"A", "B", "E"}
    assert retries == {"C": 0}
    again = Sim(DAG, done=done).go()  # the rescue run: only what was left runs
    assert sorted(again.submits()) == ["C", "D", "F"] and again.run.exit_code == 0


def test_rescue_keeps_the_retries_a_node_has_left() -> None:
    sim = Sim(DAG, jobs={"C": 1})
    sim.step()  # A
    sim.finish_job(sim.running_jobs()[0])  # A done (E too, below)
    for c in sim.running_jobs():
        sim.finish_job(c)
    sim.step()  # B and C
    for c in sim.running_jobs():
        sim.finish_job(c)  # C fails once: retried
    assert sim.run.nodes["C"].retries == 1
    sim.run.remove_dag()
    sim.step()
    assert sim.run.status == DAG_STATUS_RM
    text = rescue_text("d.dag", sim.run, now=0.0, reason="the DAG was removed")
    assert "RETRY C 1" in text.splitlines()
    done, retries = read_rescue("d.dag.rescue001", text, sim.run.nodes)
    assert retries == {"C": 1} and "A" in done and "C" not in done


def test_rescue_retry_keeps_unless_exit() -> None:
    text = DAG.replace("RETRY C 2", "RETRY C 2 UNLESS-EXIT 9")
    sim = Sim(text, jobs={"C": [1, 1, 0]})
    sim.step()
    for c in sim.running_jobs():
        sim.finish_job(c)
    sim.step()
    for c in sim.running_jobs():
        sim.finish_job(c)
    sim.run.remove_dag()
    out = rescue_text("d.dag", sim.run, now=0.0)
    assert "RETRY C 1 UNLESS-EXIT 9" in out.splitlines()
    _done, retries = read_rescue("r", out, sim.run.nodes)
    assert retries == {"C": 1}


def test_read_rescue_names_the_file_and_line_of_an_unknown_node() -> None:
    text = "# comment\n\nDONE A\nDONE Gone\n"
    with pytest.raises(DagError) as e:
        read_rescue("my.dag.rescue002", text, ["A", "B"])
    assert (e.value.file, e.value.line) == ("my.dag.rescue002", 4)
    assert str(e.value).startswith("my.dag.rescue002:4:") and "Gone" in str(e.value)


@pytest.mark.parametrize("line", ["JOB A a.sub", "DONE", "DONE A B", "RETRY A x", "RETRY A"])
def test_read_rescue_refuses_other_lines(line) -> None:
    with pytest.raises(DagError) as e:
        read_rescue("r.rescue001", f"DONE A\n{line}\n", ["A"])
    assert e.value.line == 2


def test_read_rescue_is_case_insensitive_for_keywords_not_names() -> None:
    done, retries = read_rescue("r", "done A\nretry B 2\n", ["A", "B", "a"])
    assert done == {"A"} and retries == {"B": 2}


def test_rescue_numbers_picks_this_dags_rescue_files_in_order() -> None:
    names = ["x.dag", "x.dag.rescue002", "x.dag.rescue001", "x.dag.rescue010", "y.dag.rescue003",
             "x.dag.rescue01", "x.dag.rescue001.bak", "xx.dag.rescue004", "x.dagfoo.rescue005",
             "x.dag.rescue1000", "x.dag.metrics"]
    assert rescue_numbers("/some/dir/x.dag", names) == [1, 2, 10, 1000]
    assert rescue_numbers("x.dag", []) == []


def test_next_rescue() -> None:
    assert next_rescue([]) == 1
    assert next_rescue([1, 2]) == 3
    assert next_rescue([1, 5]) == 6
    assert next_rescue([99], 100) == 100
    assert next_rescue([100], 100) == 100  # the last one is overwritten
    assert next_rescue([7], 3) == 3
    assert next_rescue([], 0) == 0  # rescue DAGs turned off


def test_rescue_path() -> None:
    assert rescue_path("/a/x.dag", 1) == "/a/x.dag.rescue001"
    assert rescue_path("x.dag", 1000) == "x.dag.rescue1000"
    assert rescue_numbers("x.dag", [rescue_path("x.dag", 42)]) == [42]


def test_a_rescue_of_an_edited_dag_with_a_new_node_still_reads() -> None:
    sim = _failed_run()
    text = rescue_text("d.dag", sim.run, now=0.0)
    edited = parse_text(DAG + "JOB G g.sub\n")
    done, _r = read_rescue("d.dag.rescue001", text, edited.nodes)
    assert done == {"A", "B", "E"}
