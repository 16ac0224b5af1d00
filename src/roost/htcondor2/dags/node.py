"""The logical nodes of a :class:`~roost.htcondor2.dags.dag.DAG` (layers of jobs that
share a submit description, sub-DAGs, the final node), the scripts and abort
conditions they carry, and :class:`Nodes`, a set of them that can be wired as one."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from roost.htcondor2.dags.walk_order import WalkOrder
from roost.htcondor2.submit import Submit

if TYPE_CHECKING:
    from roost.htcondor2.dags.dag import DAG
    from roost.htcondor2.dags.edges import BaseEdge

#: a submit description: written out as LAYER.sub, or a submit file already on disk
SubmitDescription = Submit | Path
NodesLike = Union["BaseNode", "Nodes", Iterable["BaseNode"]]


def _fields(obj: object, names: Iterable[str]) -> str:
    return f"{type(obj).__name__}({', '.join(f'{n} = {getattr(obj, n)}' for n in names)})"


class Script:
    """A PRE or POST script: ``executable`` with ``arguments`` (made strings now, so
    DAGMan macros such as ``$RETURN`` pass through). ``retry`` defers the node when the
    script exits with ``retry_status``, for ``retry_delay`` seconds (``SCRIPT DEFER``)."""

    def __init__(self, executable: str | os.PathLike[str], arguments: Iterable[Any] | None = None,
                 retry: bool = False, retry_status: int = 1, retry_delay: int = 0) -> None:
        self.executable = executable
        self.arguments = [str(a) for a in (arguments or [])]
        self.retry = retry
        self.retry_status = retry_status
        self.retry_delay = retry_delay

    def __repr__(self) -> str:
        return _fields(self, ("executable", "arguments", "retry", "retry_status", "retry_delay"))


class DAGAbortCondition:
    """``ABORT-DAG-ON``: the whole DAG stops when a node exits with ``node_exit_value``,
    and exits with ``dag_return_value`` (None: with the node's own exit value)."""

    def __init__(self, node_exit_value: int, dag_return_value: int | None = None) -> None:
        self.node_exit_value = node_exit_value
        self.dag_return_value = dag_return_value

    def __repr__(self) -> str:
        return _fields(self, ("node_exit_value", "dag_return_value"))


def _by_index(value: bool | Mapping[int, bool], what: str) -> dict[int, bool]:
    if isinstance(value, bool):
        return {0: value}
    if isinstance(value, Mapping):
        return {int(k): bool(v) for k, v in value.items()}
    raise TypeError(f"{what} must be a bool or a mapping of node index to bool, not {type(value).__name__}")


def _submit_description(value: Any) -> SubmitDescription:
    if value is None:
        return Submit({})
    if isinstance(value, Submit):
        return value
    if isinstance(value, (str, os.PathLike)):
        return Path(value)
    raise TypeError(f"submit_description must be an htcondor2.Submit or the path of a submit file, "
                    f"not {type(value).__name__}")


class BaseNode:
    """What every logical node has: its name and the per-node DAG commands (``DIR``,
    ``NOOP``, ``DONE``, ``RETRY``, scripts, ``PRE_SKIP``, ``PRIORITY``, ``CATEGORY``,
    ``ABORT-DAG-ON``). Nodes are made by :class:`DAG`'s and other nodes' methods, which
    attach them to the same DAG. ``noop`` and ``done`` may map node indices of a layer
    to True/False."""

    def __init__(self, dag: DAG, *, name: str, dir: str | os.PathLike[str] | None = None,  # noqa: A002
                 noop: bool | Mapping[int, bool] = False, done: bool | Mapping[int, bool] = False,
                 retries: int | None = None, retry_unless_exit: int | None = None,
                 pre: Script | None = None, post: Script | None = None, pre_skip_exit_code: int | None = None,
                 priority: int = 0, category: str | None = None, abort: DAGAbortCondition | None = None) -> None:
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise ValueError(f"a node's name must be a non-empty string without spaces, not {name!r}")
        for what, script in (("pre", pre), ("post", post)):
            if script is not None and not isinstance(script, Script):
                raise TypeError(f"{what} must be a Script, not {type(script).__name__}")
        if abort is not None and not isinstance(abort, DAGAbortCondition):
            raise TypeError(f"abort must be a DAGAbortCondition, not {type(abort).__name__}")
        self._dag = dag
        self.name = name
        self.dir = Path(dir) if dir is not None else None
        self.noop = _by_index(noop, "noop")
        self.done = _by_index(done, "done")
        self.retries = retries
        self.retry_unless_exit = retry_unless_exit
        self.pre = pre
        self.post = post
        self.pre_skip_exit_code = pre_skip_exit_code
        self.priority = priority
        self.category = category
        self.abort = abort

    def __len__(self) -> int:
        """How many DAGMan nodes this logical node writes."""
        return 1

    def __iter__(self) -> Iterator[BaseNode]:
        # a node is a collection of one wherever nodes are accepted
        yield self

    def __repr__(self) -> str:
        return _fields(self, ("name",))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, BaseNode):
            return NotImplemented
        return self.name < other.name

    # -- building the graph ---------------------------------------------------------

    def child_layer(self, edge: BaseEdge | None = None, **kwargs: Any) -> NodeLayer:
        """A new layer (``kwargs`` as :class:`NodeLayer`'s) whose nodes depend on this one."""
        node = self._dag.layer(**kwargs)
        self._dag._link(self, node, edge)
        return node

    def parent_layer(self, edge: BaseEdge | None = None, **kwargs: Any) -> NodeLayer:
        """A new layer this node depends on."""
        node = self._dag.layer(**kwargs)
        self._dag._link(node, self, edge)
        return node

    def child_subdag(self, edge: BaseEdge | None = None, **kwargs: Any) -> SubDAG:
        """A new sub-DAG (``kwargs`` as :class:`SubDAG`'s) that depends on this node."""
        node = self._dag.subdag(**kwargs)
        self._dag._link(self, node, edge)
        return node

    def parent_subdag(self, edge: BaseEdge | None = None, **kwargs: Any) -> SubDAG:
        """A new sub-DAG this node depends on."""
        node = self._dag.subdag(**kwargs)
        self._dag._link(node, self, edge)
        return node

    def add_children(self, *nodes: NodesLike, edge: BaseEdge | None = None) -> BaseNode:
        """Make ``nodes`` depend on this node (an existing edge is replaced); returns self."""
        for node in _flatten(nodes):
            self._dag._link(self, node, edge)
        return self

    def remove_children(self, *nodes: NodesLike) -> BaseNode:
        """Make sure ``nodes`` do not depend on this node; returns self."""
        for node in _flatten(nodes):
            self._dag._unlink(self, node)
        return self

    def add_parents(self, *nodes: NodesLike, edge: BaseEdge | None = None) -> BaseNode:
        """Make this node depend on ``nodes``; returns self."""
        for node in _flatten(nodes):
            self._dag._link(node, self, edge)
        return self

    def remove_parents(self, *nodes: NodesLike) -> BaseNode:
        """Make sure this node does not depend on ``nodes``; returns self."""
        for node in _flatten(nodes):
            self._dag._unlink(node, self)
        return self

    @property
    def children(self) -> Nodes:
        return self._dag._children_of(self)

    @property
    def parents(self) -> Nodes:
        return self._dag._parents_of(self)

    def walk_ancestors(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return self._dag.walk_ancestors(self, order)

    def walk_descendants(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return self._dag.walk_descendants(self, order)


class NodeLayer(BaseNode):
    """A layer of ``JOB`` nodes sharing one submit description: one node per mapping in
    ``vars`` (its ``VARS``); without ``vars``, one node with none."""

    def __init__(self, dag: DAG, *, submit_description: SubmitDescription | None = None,
                 vars: Iterable[Mapping[str, Any]] | None = None, **kwargs: Any) -> None:  # noqa: A002
        super().__init__(dag, **kwargs)
        self.submit_description = _submit_description(submit_description)
        self.vars = [dict(v) for v in vars] if vars is not None else [{}]

    def __len__(self) -> int:
        return len(self.vars)


class SubDAG(BaseNode):
    """A ``SUBDAG EXTERNAL`` node: the DAG in ``dag_file`` runs as one node of this one."""

    def __init__(self, dag: DAG, *, dag_file: str | os.PathLike[str], **kwargs: Any) -> None:
        super().__init__(dag, **kwargs)
        self.dag_file = Path(dag_file)


class FinalNode(BaseNode):
    """The ``FINAL`` node: it runs last, whether the rest of the DAG succeeded or not."""

    def __init__(self, dag: DAG, submit_description: SubmitDescription | None = None, **kwargs: Any) -> None:
        super().__init__(dag, **kwargs)
        self.submit_description = _submit_description(submit_description)


def _flatten(nodes: Iterable[NodesLike]) -> Iterator[BaseNode]:
    for item in nodes:
        if isinstance(item, BaseNode):
            yield item
        elif isinstance(item, Iterable) and not isinstance(item, (str, bytes)):
            yield from _flatten(item)
        else:
            raise TypeError(f"expected nodes, not {type(item).__name__}")


class Nodes:
    """A set of logical nodes (in the order first given) that can be wired like one:
    ``dag.glob("sim*").child_layer(name="merge")`` makes a layer depending on them all."""

    def __init__(self, *nodes: NodesLike) -> None:
        self._nodes: dict[BaseNode, None] = dict.fromkeys(_flatten(nodes))

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Iterator[BaseNode]:
        return iter(list(self._nodes))

    def __contains__(self, node: object) -> bool:
        if isinstance(node, str):
            return any(n.name == node for n in self._nodes)
        return node in self._nodes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Nodes):
            return NotImplemented
        return set(self._nodes) == set(other._nodes)

    __hash__ = None  # type: ignore[assignment]  # mutable-looking collection, as a set

    def __repr__(self) -> str:
        return f"Nodes({', '.join(repr(n) for n in sorted(self._nodes, key=lambda n: n.name))})"

    def __str__(self) -> str:
        return f"Nodes({', '.join(str(n) for n in sorted(self._nodes, key=lambda n: n.name))})"

    def _any(self) -> BaseNode:
        if not self._nodes:
            raise ValueError("an empty Nodes has no DAG to add a node to")
        return next(iter(self._nodes))

    def child_layer(self, type: BaseEdge | None = None, **kwargs: Any) -> NodeLayer:  # noqa: A002
        """A new layer depending on every node here, by edges of ``type``."""
        node = self._any()._dag.layer(**kwargs)
        node.add_parents(self, edge=type)
        return node

    def parent_layer(self, type: BaseEdge | None = None, **kwargs: Any) -> NodeLayer:  # noqa: A002
        """A new layer every node here depends on."""
        node = self._any()._dag.layer(**kwargs)
        node.add_children(self, edge=type)
        return node

    def child_subdag(self, type: BaseEdge | None = None, **kwargs: Any) -> SubDAG:  # noqa: A002
        node = self._any()._dag.subdag(**kwargs)
        node.add_parents(self, edge=type)
        return node

    def parent_subdag(self, type: BaseEdge | None = None, **kwargs: Any) -> SubDAG:  # noqa: A002
        node = self._any()._dag.subdag(**kwargs)
        node.add_children(self, edge=type)
        return node

    def add_children(self, *nodes: NodesLike, type: BaseEdge | None = None) -> Nodes:  # noqa: A002
        for n in self:
            n.add_children(*nodes, edge=type)
        return self

    def remove_children(self, *nodes: NodesLike) -> Nodes:
        for n in self:
            n.remove_children(*nodes)
        return self

    def add_parents(self, *nodes: NodesLike, type: BaseEdge | None = None) -> Nodes:  # noqa: A002
        for n in self:
            n.add_parents(*nodes, edge=type)
        return self

    def remove_parents(self, *nodes: NodesLike) -> Nodes:
        for n in self:
            n.remove_parents(*nodes)
        return self

    def walk_ancestors(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return itertools.chain.from_iterable(n.walk_ancestors(order) for n in self)

    def walk_descendants(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        return itertools.chain.from_iterable(n.walk_descendants(order) for n in self)
