"""SPLICE: another DAG file's nodes become this DAG's, as condor_dagman splices them."""

from __future__ import annotations

import os

import pytest

from roost.dagman.language import DagError, parse_file
from roost.dagman.splice import expand_splices

from .test_state import Sim


def _files(files: dict[str, str]):
    def read(path: str) -> str:
        key = os.path.normpath(path)
        if key not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[key]

    return read


def _dag(files: dict[str, str], top: str = "top.dag"):
    read = _files(files)
    return expand_splices(parse_file(top, read=read), read=read)


INNER = """\
JOB X x.sub
JOB Y y.sub DIR ydir
JOB Z z.sub
PARENT X CHILD Y Z
RETRY Y 2
VARS X who="inner"
SCRIPT POST Z post.sh $JOB
CATEGORY Z slow
MAXJOBS slow 2
"""


def test_nodes_are_renamed_and_keep_their_edges_and_settings() -> None:
    dag = _dag({"top.dag": "JOB A a.sub\nSPLICE S inner.dag\nPARENT A CHILD S\n", "inner.dag": INNER})
    assert sorted(dag.nodes) == ["A", "S+X", "S+Y", "S+Z"]
    x, y, z = (dag.nodes[f"S+{n}"] for n in "XYZ")
    assert x.children == ["S+Y", "S+Z"] and y.parents == ["S+X"] and "A" in x.parents
    assert (y.retry, y.dir, x.vars) == (2, "ydir", [("who", "inner")])
    assert z.scripts["POST"].command == "post.sh $JOB" and z.category == "slow"
    assert dag.maxjobs == {"slow": 2}
    assert dag.splices == {} and dag.splice_edges == []


def test_a_splice_as_a_parent_means_its_leaves_as_a_child_its_roots() -> None:
    top = "JOB A a.sub\nJOB B b.sub\nSPLICE S inner.dag\nPARENT A CHILD S\nPARENT S CHILD B\n"
    dag = _dag({"top.dag": top, "inner.dag": INNER})
    assert dag.nodes["A"].children == ["S+X"]
    assert sorted(dag.nodes["B"].parents) == ["S+Y", "S+Z"]
    assert dag.nodes["S+Y"].children == ["B"] and dag.nodes["S+Z"].children == ["B"]


def test_splice_to_splice_links_leaves_to_roots() -> None:
    top = "SPLICE S1 inner.dag\nSPLICE S2 inner.dag\nPARENT S1 CHILD S2\n"
    dag = _dag({"top.dag": top, "inner.dag": INNER})
    assert sorted(dag.nodes["S2+X"].parents) == ["S1+Y", "S1+Z"]
    assert dag.nodes["S1+X"].parents == [] and dag.nodes["S2+Y"].children == []
    # the two copies do not share their lists
    assert dag.nodes["S1+X"].vars is not dag.nodes["S2+X"].vars
    assert dag.nodes["S1+X"].children == ["S1+Y", "S1+Z"]


def test_dir_is_put_in_front_of_node_dirs_and_the_splice_file_is_read_there() -> None:
    top = "SPLICE S inner.dag DIR sp\n"
    dag = _dag({"top.dag": top, "sp/inner.dag": INNER})
    assert dag.nodes["S+X"].dir == "sp"
    assert dag.nodes["S+Y"].dir == os.path.join("sp", "ydir")


def test_nested_splices() -> None:
    files = {
        "top.dag": "JOB A a.sub\nSPLICE OUT middle.dag DIR m\nPARENT A CHILD OUT\n",
        "m/middle.dag": "JOB M m.sub\nSPLICE IN inner.dag DIR i\nPARENT M CHILD IN\n",
        "m/i/inner.dag": INNER,
    }
    dag = _dag(files)
    assert sorted(dag.nodes) == ["A", "OUT+IN+X", "OUT+IN+Y", "OUT+IN+Z", "OUT+M"]
    assert dag.nodes["A"].children == ["OUT+M"]
    assert dag.nodes["OUT+M"].children == ["OUT+IN+X"]
    assert dag.nodes["OUT+M"].dir == "m"
    assert dag.nodes["OUT+IN+X"].dir == os.path.join("m", "i")
    assert dag.nodes["OUT+IN+Y"].dir == os.path.join("m", "i", "ydir")


def test_a_splice_may_not_hold_a_final_node() -> None:
    with pytest.raises(DagError) as e:
        _dag({"top.dag": "JOB A a.sub\nSPLICE S inner.dag\n", "inner.dag": "JOB X x.sub\nFINAL F f.sub\n"})
    assert "FINAL" in str(e.value) and e.value.file == "top.dag" and e.value.line == 2


def test_a_missing_splice_file_names_the_splice_line() -> None:
    with pytest.raises(DagError) as e:
        _dag({"top.dag": "JOB A a.sub\n\nSPLICE S nothere.dag\n"})
    assert (e.value.file, e.value.line) == ("top.dag", 3) and "SPLICE S" in str(e.value)


def test_an_error_inside_a_splice_names_the_splice_file() -> None:
    with pytest.raises(DagError) as e:
        _dag({"top.dag": "SPLICE S inner.dag\n", "inner.dag": "JOB X x.sub\nBOGUS\n"})
    assert (e.value.file, e.value.line) == ("inner.dag", 2)


def test_a_splice_of_itself_is_an_error() -> None:
    with pytest.raises(DagError) as e:
        _dag({"top.dag": "SPLICE S top.dag\n"})
    assert "splices itself" in str(e.value)
    with pytest.raises(DagError):
        _dag({"top.dag": "SPLICE S a.dag\n", "a.dag": "SPLICE T b.dag\n", "b.dag": "SPLICE U a.dag\n"})


def test_a_cycle_through_a_splice_is_found() -> None:
    top = "JOB A a.sub\nSPLICE S inner.dag\nPARENT A CHILD S\nPARENT S CHILD A\n"
    with pytest.raises(DagError) as e:
        _dag({"top.dag": top, "inner.dag": INNER})
    assert "cycle" in str(e.value)


def test_a_splice_named_twice_is_an_error() -> None:
    with pytest.raises(DagError):
        _dag({"top.dag": "SPLICE S inner.dag\nSPLICE S inner.dag\n", "inner.dag": INNER})


def test_a_spliced_dag_runs_in_order() -> None:
    top = "JOB A a.sub\nJOB B b.sub\nSPLICE S inner.dag\nPARENT A CHILD S\nPARENT S CHILD B\n"
    dag = _dag({"top.dag": top, "inner.dag": INNER})
    sim = Sim(dag=dag).go()
    subs = sim.submits()
    assert subs[0] == "A" and subs[1] == "S+X" and set(subs[2:4]) == {"S+Y", "S+Z"} and subs[4] == "B"
    assert sim.kinds("S+Z") == ["submit", "post"] and sim.macros("post", "S+Z")[0]["JOB"] == "S+Z"
    assert sim.run.exit_code == 0


def test_splices_from_real_files(tmp_path) -> None:
    (tmp_path / "sp").mkdir()
    (tmp_path / "sp" / "inner.dag").write_text(INNER)
    (tmp_path / "top.dag").write_text("JOB A a.sub\nSPLICE S inner.dag DIR sp\nPARENT S CHILD A\n")
    dag = expand_splices(parse_file(str(tmp_path / "top.dag")), base_dir=str(tmp_path))
    assert sorted(dag.nodes["A"].parents) == ["S+Y", "S+Z"] and dag.nodes["S+X"].dir == "sp"
