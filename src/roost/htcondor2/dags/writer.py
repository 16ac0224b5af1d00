"""Writing a :class:`~roost.htcondor2.dags.dag.DAG` out as DAGMan's input: the DAG
file, one ``LAYER.sub`` per layer (and the final node) with a ``Submit`` description,
an empty ``__JOIN__.sub`` for the NOOP join nodes, and ``dagman.config`` when the DAG
has DAGMan configuration. The result runs with ``roost submit_dag`` or
``htcondor2.Submit.from_dag``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from roost.htcondor2.dags.dag import DAG
from roost.htcondor2.dags.edges import JoinFactory, JoinNode, Side
from roost.htcondor2.dags.formatter import NodeNameFormatter, SimpleFormatter
from roost.htcondor2.dags.node import BaseNode, FinalNode, NodeLayer, Script, SubDAG
from roost.htcondor2.dags.walk_order import WalkOrder
from roost.htcondor2.submit import Submit

DEFAULT_DAG_FILE_NAME = "dagfile.dag"
CONFIG_FILE_NAME = "dagman.config"
#: the submit file the join nodes name (NOOP nodes: DAGMan never reads it)
NOOP_SUBMIT_FILE_NAME = "__JOIN__.sub"
#: the layer name the join nodes' names are made from
JOIN_LAYER_NAME = "__JOIN__"


def write_dag(dag: DAG, dag_dir: str | os.PathLike[str], dag_file_name: str | None = DEFAULT_DAG_FILE_NAME,
              node_name_formatter: NodeNameFormatter | None = None) -> Path:
    """Write ``dag`` and its submit files into ``dag_dir`` (made if missing); the DAG
    file's path, for ``Submit.from_dag(str(path))``. Node names come from
    ``node_name_formatter`` (default ``SimpleFormatter()``: ``Layer:0``)."""
    if not isinstance(dag, DAG):
        raise TypeError(f"dag must be a DAG, not {type(dag).__name__}")
    directory = Path(dag_dir).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    writer = _Writer(dag, node_name_formatter or SimpleFormatter())
    path = directory / (dag_file_name or DEFAULT_DAG_FILE_NAME)
    text = "".join(line + "\n" for line in writer.lines())
    path.write_text(text)
    for node in [*dag.nodes, *([dag._final_node] if dag._final_node is not None else [])]:
        if isinstance(node, (NodeLayer, FinalNode)) and isinstance(node.submit_description, Submit):
            # str(Submit) ends with its queue statement
            (directory / f"{node.name}.sub").write_text(str(node.submit_description))
    if writer.joins.joins:
        (directory / NOOP_SUBMIT_FILE_NAME).touch(exist_ok=True)
    if dag.dagman_config:
        (directory / CONFIG_FILE_NAME).write_text("\n".join(f"{k} = {v}" for k, v in dag.dagman_config.items()))
    return path


def _vars_value(value: object) -> str:
    """A VARS value in DAGMan's quotes: backslashes and double quotes escaped."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _submit_file(node: NodeLayer | FinalNode) -> str:
    if isinstance(node.submit_description, Submit):
        return f"{node.name}.sub"
    return node.submit_description.absolute().as_posix()


class _Writer:
    """One DAG file's text; the join nodes are numbered as the edges are written."""

    def __init__(self, dag: DAG, names: NodeNameFormatter) -> None:
        self.dag = dag
        self.names = names
        self.joins = JoinFactory()

    def lines(self) -> Iterator[str]:
        yield "# BEGIN META"
        yield from self._meta()
        yield "# END META"
        yield "# BEGIN NODES AND EDGES"
        for node in self.dag.walk(WalkOrder.BREADTH_FIRST):
            yield from self._node(node)
            yield from self._edges_from(node)
        for join in self.joins.joins:
            yield f"JOB {self._join_name(join)} {NOOP_SUBMIT_FILE_NAME} NOOP"
        yield "# END NODES AND EDGES"
        final = self.dag._final_node
        if final is not None:
            yield "# FINAL NODE"
            yield " ".join([f"FINAL {final.name} {_submit_file(final)}", *self._job_options(final, 0)])
            yield from self._node_commands(final, final.name)
            yield "# END FINAL NODE"

    def _meta(self) -> Iterator[str]:
        dag = self.dag
        if dag.dagman_config:
            yield f"CONFIG {CONFIG_FILE_NAME}"
        if dag.jobstate_log is not None:
            yield f"JOBSTATE_LOG {dag.jobstate_log.as_posix()}"
        if dag.node_status_file is not None:
            nsf = dag.node_status_file
            yield " ".join([f"NODE_STATUS_FILE {nsf.path.as_posix()}",
                            *([str(nsf.update_time)] if nsf.update_time is not None else []),
                            *(["ALWAYS-UPDATE"] if nsf.always_update else [])])
        if dag.dot_config is not None:
            dot = dag.dot_config
            yield " ".join([f"DOT {dot.path.as_posix()}", "UPDATE" if dot.update else "DONT-UPDATE",
                            "OVERWRITE" if dot.overwrite else "DONT-OVERWRITE",
                            *([f"INCLUDE {dot.include_file.as_posix()}"] if dot.include_file is not None else [])])
        for key, value in dag.dagman_job_attrs.items():
            yield f"SET_JOB_ATTR {key} = {value}"
        for category, limit in dag.max_jobs_per_category.items():
            yield f"MAXJOBS {category} {limit}"

    def _node(self, node: BaseNode) -> Iterator[str]:
        if isinstance(node, NodeLayer):
            sub = _submit_file(node)
            for i, node_vars in enumerate(node.vars):
                name = self.names.generate(node.name, i)
                yield " ".join([f"JOB {name} {sub}", *self._job_options(node, i)])
                if node_vars:
                    yield " ".join([f"VARS {name}", *(f"{k}={_vars_value(v)}" for k, v in node_vars.items())])
                yield from self._node_commands(node, name)
        elif isinstance(node, SubDAG):
            name = self.names.generate(node.name, 0)
            yield " ".join([f"SUBDAG EXTERNAL {name} {node.dag_file}", *self._job_options(node, 0)])
            yield from self._node_commands(node, name)
        else:
            raise TypeError(f"cannot write a node of type {type(node).__name__}: {node!r}")

    @staticmethod
    def _job_options(node: BaseNode, index: int) -> list[str]:
        """What follows the submit file on the JOB (SUBDAG, FINAL) line."""
        out = ["DIR", str(node.dir)] if node.dir is not None else []
        if node.noop.get(index, False):
            out.append("NOOP")
        if node.done.get(index, False) and not isinstance(node, FinalNode):
            out.append("DONE")
        return out

    def _node_commands(self, node: BaseNode, name: str) -> Iterator[str]:
        if node.retries is not None:
            yield f"RETRY {name} {node.retries}" + (
                f" UNLESS-EXIT {node.retry_unless_exit}" if node.retry_unless_exit is not None else "")
        for which, script in (("PRE", node.pre), ("POST", node.post)):
            if script is not None:
                yield _script_line(which, name, script)
        if node.pre_skip_exit_code is not None:
            yield f"PRE_SKIP {name} {node.pre_skip_exit_code}"
        if node.priority != 0:
            yield f"PRIORITY {name} {node.priority}"
        if node.category is not None:
            yield f"CATEGORY {name} {node.category}"
        if node.abort is not None:
            yield f"ABORT-DAG-ON {name} {node.abort.node_exit_value}" + (
                f" RETURN {node.abort.dag_return_value}" if node.abort.dag_return_value is not None else "")

    def _indices_to_names(self, node: BaseNode) -> dict[int, str]:
        return {i: self.names.generate(node.name, i) for i in range(len(node))}

    def _join_name(self, join: JoinNode) -> str:
        return self.names.generate(JOIN_LAYER_NAME, join.id)

    def _side(self, side: Side, names: dict[int, str]) -> list[str]:
        return [self._join_name(side)] if isinstance(side, JoinNode) else [names[i] for i in side]

    def _edges_from(self, parent: BaseNode) -> Iterator[str]:
        parent_names = self._indices_to_names(parent)
        for child in self.dag._children[parent]:
            child_names = self._indices_to_names(child)
            edge = self.dag._edges[(parent, child)]
            for p, c in edge.get_edges(parent, child, self.joins):
                ps, cs = self._side(p, parent_names), self._side(c, child_names)
                if ps and cs:
                    yield f"PARENT {' '.join(ps)} CHILD {' '.join(cs)}"


def _script_line(which: str, name: str, script: Script) -> str:
    words = ["SCRIPT"]
    if script.retry:
        words += ["DEFER", str(script.retry_status), str(script.retry_delay)]
    words += [which, name, str(script.executable), *script.arguments]
    return " ".join(words)
