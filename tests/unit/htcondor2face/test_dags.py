"""roost.htcondor2.dags beside HTCondor's htcondor2.dags (PyPI ``htcondor``): the same
program writes the same DAG and submit files with both, and roost's DAG parser reads
what they write. htcondor2.dags walks sibling nodes in set order, which changes from
one run to the next, so the DAG files are compared as what DAGMan reads: the meta
lines in order, each node's lines, and the dependencies (through join nodes)."""

from __future__ import annotations

import types
from collections import Counter
from pathlib import Path

import pytest

import roost.htcondor2 as face
import roost.htcondor2.dags as face_dags
from roost.dagman.language import parse_file
from roost.htcondor2.dags import exceptions as errors

real = pytest.importorskip("htcondor2")
real_dags = pytest.importorskip("htcondor2.dags")

ECHO = {"executable": "/bin/echo", "arguments": "$(word)", "output": "$(word).out", "log": "wf.log"}


def build(lib: types.ModuleType, dags: types.ModuleType, tmp: Path) -> object:
    """One DAG using every part of the API both libraries share (without the parts
    htcondor2.dags writes wrongly: see test_where_roost_differs_on_purpose)."""
    dag = dags.DAG(
        dagman_config={"DAGMAN_MAX_JOBS_IDLE": 10, "DAGMAN_USE_STRICT": 0},
        dagman_job_attributes={"Department": '"physics"'},
        dot_config=dags.DotConfig(tmp / "wf.dot", update=True, overwrite=False, include_file=tmp / "inc.dot"),
        jobstate_log=tmp / "jobstate.log",
        node_status_file=dags.NodeStatusFile(tmp / "status.txt", update_time=30, always_update=True),
    )
    split = dag.layer(name="split", submit_description=lib.Submit(ECHO), vars=[{"word": "s"}],
                      pre=dags.Script("/bin/true", arguments=["$JOB", 1]), retries=2, retry_unless_exit=3)
    work = split.child_layer(name="work", submit_description=lib.Submit(ECHO),
                             vars=[{"word": f"w{i}", "quote": 'say "hi" \\ bye'} for i in range(4)],
                             post=dags.Script("/bin/true", arguments=["$RETURN"], retry=True, retry_status=2,
                                              retry_delay=5),
                             priority=5, category="heavy", noop={1: True}, done={2: True})
    check = work.child_layer(dags.OneToOne(), name="check", submit_description=lib.Submit(ECHO),
                             vars=[{"word": f"c{i}"} for i in range(4)], pre_skip_exit_code=7,
                             abort=dags.DAGAbortCondition(node_exit_value=9, dag_return_value=1))
    pairs = check.child_layer(dags.Grouper(2, 1), name="pairs", submit_description=lib.Submit(ECHO),
                              vars=[{"word": "p0"}, {"word": "p1"}], dir=tmp)
    first = check.child_layer(dags.Slicer(slice(0, 2), slice(None)), name="first",
                              submit_description=lib.Submit(ECHO), vars=[{"word": "f0"}, {"word": "f1"}],
                              abort=dags.DAGAbortCondition(node_exit_value=4))
    merge = dags.Nodes(pairs, first).child_layer(name="merge", submit_description=lib.Submit(ECHO),
                                                 vars=[{"word": "m0"}, {"word": "m1"}])
    sub = merge.child_subdag(name="inner", dag_file=tmp / "inner.dag", retries=1)
    sub.add_children(dag.layer(name="tail", submit_description=tmp / "existing.sub"))
    dag.final(name="cleanup", submit_description=lib.Submit({"executable": "/bin/true"}),
              post=dags.Script("/bin/true"))
    return dag


def _canonical(text: str) -> dict[str, object]:
    """What DAGMan reads from a DAG file, with join nodes named by what they join."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("# BEGIN ") or line == "# FINAL NODE":
            current = line
            sections[current] = []
        elif line.startswith("# END "):
            current = None
        else:
            assert current is not None, line
            sections[current].append(line)
    blocks: list[tuple[str, ...]] = []
    edges: list[tuple[list[str], list[str]]] = []
    joins = 0
    for line in sections["# BEGIN NODES AND EDGES"]:
        if line.startswith("PARENT "):
            p, c = line[len("PARENT "):].split(" CHILD ")
            edges.append((p.split(), c.split()))
        elif line.startswith("JOB __JOIN__:"):
            joins += 1
            assert line.endswith(" __JOIN__.sub NOOP")
        elif line.startswith(("JOB ", "SUBDAG ")):
            blocks.append((line,))
        else:
            blocks[-1] += (line,)
    through: dict[str, tuple[list[str], list[str]]] = {}
    direct = []
    for p, c in edges:
        for side, names in ((0, p), (1, c)):
            for j in (n for n in names if n.startswith("__JOIN__:")):
                through.setdefault(j, ([], []))[1 - side].extend(c if side == 0 else p)
        if not any(n.startswith("__JOIN__:") for n in p + c):
            direct.append((frozenset(p), frozenset(c)))
    via_joins = Counter((frozenset(p), frozenset(c)) for p, c in through.values())
    assert len(through) == joins
    return {"meta": sections["# BEGIN META"], "nodes": Counter(blocks), "direct": Counter(direct),
            "joins": via_joins, "final": sections.get("# FINAL NODE")}


def _files(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(directory.iterdir())}


def test_the_same_program_writes_the_same_dag_with_both(tmp_path: Path) -> None:
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    ours_path = face_dags.write_dag(build(face, face_dags, tmp_path), ours_dir, dag_file_name="wf.dag")
    theirs_path = real_dags.write_dag(build(real, real_dags, tmp_path), theirs_dir, dag_file_name="wf.dag")
    assert ours_path == ours_dir / "wf.dag" and theirs_path == theirs_dir / "wf.dag"
    ours, theirs = _canonical(ours_path.read_text()), _canonical(theirs_path.read_text())
    assert ours == theirs
    # check -> pairs: one per chunk; pairs -> merge and first -> merge: 2 x 2 nodes, one each
    assert sum(ours["joins"].values()) == 4
    ours_files, theirs_files = _files(ours_dir), _files(theirs_dir)
    # htcondor2.dags names cleanup.sub in the FINAL line but never writes it; roost does
    assert ours_files.pop("cleanup.sub") == "executable = /bin/true\nqueue\n"
    del ours_files["wf.dag"], theirs_files["wf.dag"]
    assert ours_files == theirs_files
    assert set(ours_files) == {"split.sub", "work.sub", "check.sub", "pairs.sub", "first.sub", "merge.sub",
                               "__JOIN__.sub", "dagman.config"}
    # roost's DAGMan reads the file as written (the sub-DAG's file need not exist to parse)
    parsed = parse_file(str(ours_path))
    assert {"split:0", "work:3", "__JOIN__:0", "inner:0", "tail:0"} <= set(parsed.nodes)


def test_the_same_default_dag_and_names_with_both(tmp_path: Path) -> None:
    """The smallest use: layers without vars or descriptions, default file name."""
    texts = []
    for lib, dags in ((face, face_dags), (real, real_dags)):
        dag = dags.DAG()
        a = dag.layer(name="a")
        a.child_layer(name="b", vars=[{"x": "1"}, {"x": "2"}]).child_layer(name="c")
        path = dags.write_dag(dag, tmp_path / lib.__name__)
        assert path.name == dags.DEFAULT_DAG_FILE_NAME == "dagfile.dag"
        texts.append((path.read_text(), (path.parent / "a.sub").read_text()))
    assert texts[0] == texts[1]


def test_names_constants_and_errors_are_htcondor2s() -> None:
    for name in real_dags.__dict__:
        if not name.startswith("_") and name not in ("dag", "node", "utils", "logging"):
            assert hasattr(face_dags, name), name
    for name in ("DEFAULT_DAG_FILE_NAME", "CONFIG_FILE_NAME", "DEFAULT_SEPARATOR"):
        assert getattr(face_dags, name) == getattr(real_dags, name)
    assert [m.value for m in face_dags.WalkOrder] == [m.value for m in real_dags.WalkOrder]
    for name in dir(real_dags.exceptions):
        if name[0].isupper():
            assert issubclass(getattr(face_dags.exceptions, name), face_dags.exceptions.DAGsException), name
    for dags in (face_dags, real_dags):
        f = dags.SimpleFormatter(separator="-", index_format="{:03d}", offset=1)
        assert f.generate("Layer", 4) == "Layer-005" and f.parse("Layer-005") == ("Layer", 4)
        with pytest.raises(dags.exceptions.LayerNameContainsSeparator):
            f.generate("a-b", 0)
        dag = dags.DAG()
        dag.layer(name="x")
        with pytest.raises(dags.exceptions.DuplicateNodeName):
            dag.layer(name="x")


@pytest.mark.parametrize("edge_and_sizes", [("OneToOne", (), 2, 3), ("Grouper", (2, 1), 3, 3),
                                            ("Grouper", (2, 1), 4, 3)])
def test_edges_that_cannot_join_the_layers_fail_in_both(tmp_path: Path, edge_and_sizes: tuple) -> None:
    kind, args, n_parent, n_child = edge_and_sizes
    for lib, dags in ((face, face_dags), (real, real_dags)):
        dag = dags.DAG()
        a = dag.layer(name="a", vars=[{"i": str(i)} for i in range(n_parent)])
        a.child_layer(getattr(dags, kind)(*args), name="b", vars=[{"i": str(i)} for i in range(n_child)])
        with pytest.raises(dags.exceptions.DAGsException):
            dags.write_dag(dag, tmp_path / lib.__name__)


def _graph(dags: types.ModuleType) -> tuple[object, dict[str, object]]:
    dag = dags.DAG()
    a = dag.layer(name="a")
    b = a.child_layer(name="b")
    c = a.child_layer(name="c")
    d = dags.Nodes(b, c).child_layer(name="d")
    e = d.child_subdag(name="e", dag_file="e.dag")
    return dag, {"a": a, "b": b, "c": c, "d": d, "e": e}


def test_graph_queries_answer_as_htcondor2s() -> None:
    got = []
    for dags in (face_dags, real_dags):
        dag, n = _graph(dags)
        names = lambda nodes: sorted(x.name for x in nodes)  # noqa: E731
        got.append({
            "roots": names(dag.roots), "leaves": names(dag.leaves), "nodes": names(dag.nodes),
            "glob": names(dag.glob("[bc]")), "select": names(dag.select(lambda x: x.name > "b")),
            "children": names(n["a"].children), "parents": names(n["d"].parents),
            "walk": names(dag.walk()), "bfs_first": next(iter(dag.walk(dags.WalkOrder.BREADTH_FIRST))).name,
            "ancestors": names(n["e"].walk_ancestors()), "descendants": names(n["b"].walk_descendants()),
            "in": ("a" in dag.nodes, n["a"] in dag), "len": (len(n["a"]), len(n["e"]), len(dag.nodes)),
            "repr": (repr(n["a"]), repr(dags.Nodes(n["c"], n["b"]))),
            "kinds": (type(n["e"]).__name__, type(n["a"]).__name__),
            "to_children": {k.name: names(v) for k, v in dag.node_to_children.items()},
        })
    assert got[0] == got[1]


def test_walks_visit_parents_before_children_breadth_first() -> None:
    dag, n = _graph(face_dags)
    order = [x.name for x in dag.walk(face_dags.WalkOrder.BREADTH_FIRST)]
    assert order == ["a", "b", "c", "d", "e"]
    assert [x.name for x in dag.walk(face_dags.WalkOrder.DEPTH_FIRST)] == ["a", "b", "d", "e", "c"]
    with pytest.raises(errors.UnrecognizedWalkOrder):
        list(dag.walk("sideways"))  # type: ignore[arg-type]


def test_edges_can_be_removed_and_listed() -> None:
    # htcondor2.dags's remove_children/remove_parents raise AttributeError (its edge
    # store has no ``remove``) and its DAG.edges yields keys only; roost's do what
    # their documentation says
    dag, n = _graph(face_dags)
    n["a"].remove_children(n["b"])
    n["d"].remove_parents(dags_nodes := face_dags.Nodes(n["c"]))
    assert "b" not in n["a"].children and "c" not in n["d"].parents and len(dags_nodes) == 1
    assert sorted(x.name for x in dag.roots) == ["a", "b"]
    edges = [(p.name, c.name, type(e).__name__) for (p, c), e in dag.edges]
    assert edges == [("a", "c", "ManyToMany"), ("b", "d", "ManyToMany"), ("d", "e", "ManyToMany")]
    assert "Layer" in dag.describe() and "SubDAG" in dag.describe()


def test_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    dag = face_dags.DAG()
    a = dag.layer(name="a")
    other = face_dags.DAG().layer(name="z")
    with pytest.raises(ValueError, match="not a node of this DAG"):
        a.add_children(other)
    with pytest.raises(ValueError, match="without spaces"):
        dag.layer(name="two words")
    with pytest.raises(TypeError, match="edge must be an edge type"):
        a.child_layer("OneToOne", name="b")
    with pytest.raises(TypeError, match="submit_description"):
        dag.layer(name="c", submit_description=42)
    with pytest.raises(TypeError, match="pre must be a Script"):
        dag.layer(name="d", pre="/bin/true")
    with pytest.raises(ValueError, match="chunk"):
        face_dags.Grouper(0, 1)
    with pytest.raises(errors.DuplicateNodeName):
        dag.final(name="a")
    with pytest.raises(TypeError, match="must be a DAG"):
        face_dags.write_dag("dag", tmp_path)


def test_where_roost_differs_on_purpose(tmp_path: Path) -> None:
    """max_jobs_by_category: DAGMan's command is MAXJOBS (htcondor2.dags writes
    ``CATEGORY name N``, which DAGMan reads as a node named like the category)."""
    dag = face_dags.DAG(max_jobs_by_category={"heavy": 2})
    dag.layer(name="a", category="heavy", submit_description=face.Submit({"executable": "/bin/true"}))
    path = face_dags.write_dag(dag, tmp_path)
    assert "MAXJOBS heavy 2" in path.read_text().splitlines()
    assert parse_file(str(path)).maxjobs == {"heavy": 2}


def test_a_rescue_file_marks_nodes_done_as_in_htcondor2(tmp_path: Path) -> None:
    rescue_text = "# Rescue DAG file, created after running\n#   the wf.dag DAG file\n\nDONE work:0\nDONE work:2\n"
    (tmp_path / "wf.dag.rescue002").write_text(rescue_text)
    (tmp_path / "wf.dag.rescue001").write_text("DONE work:1\n")
    done = []
    for dags in (face_dags, real_dags):
        dag = dags.DAG()
        dag.layer(name="work", vars=[{}] * 4, done=True)
        found = dags.find_rescue_file(tmp_path, "wf.dag")
        assert found.name == "wf.dag.rescue002"
        dags.rescue(dag, found)
        done.append({n.name: n.done for n in dag.nodes})
        with pytest.raises(dags.exceptions.NoRescueFileFound):
            dags.find_rescue_file(tmp_path, "other.dag")
    assert done[0] == done[1] == {"work": {0: True, 2: True}}
    # htcondor2.dags takes the last name in sorted order, a backup copy too; roost
    # takes the highest .rescueNNN, as DAGMan does
    (tmp_path / "wf.dag.rescue002.bak").write_text("DONE work:3\n")
    assert face_dags.find_rescue_file(tmp_path, "wf.dag").name == "wf.dag.rescue002"
    assert real_dags.find_rescue_file(tmp_path, "wf.dag").name == "wf.dag.rescue002.bak"
    # htcondor2.dags strips the letters D, O, N, E from the front of a name; roost does not
    (tmp_path / "x.dag.rescue001").write_text("DONE Emit:0\n")
    dag = face_dags.DAG()
    emit = dag.layer(name="Emit")
    face_dags.rescue(dag, face_dags.find_rescue_file(tmp_path, "x.dag"))
    assert emit.done == {0: True}
