"""The :class:`DAG`: the graph of logical nodes and edges, and the DAG-wide settings
(DAGMan configuration, attributes of the DAGMan job, per-category job limits, DOT
file, job state log, node status file) that :func:`write_dag` writes out."""

from __future__ import annotations

import collections
import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from roost.htcondor2.dags import exceptions
from roost.htcondor2.dags.edges import BaseEdge, ManyToMany
from roost.htcondor2.dags.node import BaseNode, FinalNode, NodeLayer, Nodes, SubDAG, _fields
from roost.htcondor2.dags.walk_order import WalkOrder


class DotConfig:
    """``DOT``: DAGMan draws the graph into ``path``, once (``update=False``) or as it
    runs, over the same file (``overwrite``) or into numbered new ones, with
    ``include_file``'s text added."""

    def __init__(self, path: str | os.PathLike[str], update: bool = False, overwrite: bool = True,
                 include_file: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path)
        self.update = update
        self.overwrite = overwrite
        self.include_file = Path(include_file) if include_file is not None else None

    def __repr__(self) -> str:
        return _fields(self, ("path", "update", "overwrite", "include_file"))


class NodeStatusFile:
    """``NODE_STATUS_FILE``: DAGMan writes each node's state into ``path``, at most every
    ``update_time`` seconds, and with ``always_update`` even when nothing changed."""

    def __init__(self, path: str | os.PathLike[str], update_time: int | None = None,
                 always_update: bool | None = False) -> None:
        self.path = Path(path)
        self.update_time = update_time
        self.always_update = always_update

    def __repr__(self) -> str:
        return _fields(self, ("path", "update_time", "always_update"))


class DAG:
    """A DAGMan workflow being built: make nodes with :meth:`layer`, :meth:`subdag` and
    :meth:`final` (and the nodes' own ``child_layer`` …), then :func:`write_dag` it.

    Nodes and edges keep the order they were added in, so the same program writes the
    same DAG file every time.
    """

    def __init__(self, dagman_config: Mapping[str, Any] | None = None,
                 dagman_job_attributes: Mapping[str, Any] | None = None,
                 max_jobs_by_category: Mapping[str, int] | None = None,
                 dot_config: DotConfig | None = None, jobstate_log: str | os.PathLike[str] | None = None,
                 node_status_file: NodeStatusFile | None = None) -> None:
        self._nodes: dict[str, BaseNode] = {}
        self._edges: dict[tuple[BaseNode, BaseNode], BaseEdge] = {}
        self._children: dict[BaseNode, dict[BaseNode, None]] = {}
        self._parents: dict[BaseNode, dict[BaseNode, None]] = {}
        self._final_node: FinalNode | None = None
        self.dagman_config = dict(dagman_config or {})
        self.dagman_job_attrs = dict(dagman_job_attributes or {})
        self.max_jobs_per_category = dict(max_jobs_by_category or {})
        self.dot_config = dot_config
        self.jobstate_log = Path(jobstate_log) if jobstate_log is not None else None
        self.node_status_file = node_status_file

    # -- making nodes ---------------------------------------------------------------

    def _check_name(self, name: object) -> None:
        taken = self._nodes.get(name) if isinstance(name, str) else None
        if taken is None and self._final_node is not None and self._final_node.name == name:
            taken = self._final_node
        if taken is not None:
            raise exceptions.DuplicateNodeName(f"the DAG already has a node named {name}: {taken!r}")

    def _add(self, node: BaseNode) -> None:
        self._nodes[node.name] = node
        self._children[node] = {}
        self._parents[node] = {}

    def layer(self, **kwargs: Any) -> NodeLayer:
        """A new layer with no parents or children (``kwargs`` as :class:`NodeLayer`'s)."""
        self._check_name(kwargs.get("name"))
        node = NodeLayer(self, **kwargs)
        self._add(node)
        return node

    def subdag(self, **kwargs: Any) -> SubDAG:
        """A new sub-DAG with no parents or children (``kwargs`` as :class:`SubDAG`'s)."""
        self._check_name(kwargs.get("name"))
        node = SubDAG(self, **kwargs)
        self._add(node)
        return node

    def final(self, **kwargs: Any) -> FinalNode:
        """The DAG's ``FINAL`` node; calling again replaces it."""
        if self._final_node is not None and self._final_node.name == kwargs.get("name"):
            self._final_node = None
        self._check_name(kwargs.get("name"))
        self._final_node = FinalNode(self, **kwargs)
        return self._final_node

    # -- edges ----------------------------------------------------------------------

    def _member(self, node: object) -> BaseNode:
        if not isinstance(node, BaseNode) or self._nodes.get(node.name) is not node:
            raise ValueError(f"{node!r} is not a node of this DAG (the final node takes no edges)")
        return node

    def _link(self, parent: BaseNode, child: BaseNode, edge: BaseEdge | None) -> None:
        if edge is not None and not isinstance(edge, BaseEdge):
            raise TypeError(f"edge must be an edge type such as OneToOne(), not {type(edge).__name__}")
        parent, child = self._member(parent), self._member(child)
        if parent is child:
            raise ValueError(f"{parent!r} cannot depend on itself")
        self._edges[(parent, child)] = edge if edge is not None else ManyToMany()
        self._children[parent][child] = None
        self._parents[child][parent] = None

    def _unlink(self, parent: BaseNode, child: BaseNode) -> None:
        self._edges.pop((parent, child), None)
        self._children.get(parent, {}).pop(child, None)
        self._parents.get(child, {}).pop(parent, None)

    def _children_of(self, node: BaseNode) -> Nodes:
        return Nodes(self._children.get(node, {}))

    def _parents_of(self, node: BaseNode) -> Nodes:
        return Nodes(self._parents.get(node, {}))

    @property
    def edges(self) -> Iterator[tuple[tuple[BaseNode, BaseNode], BaseEdge]]:
        """``((parent, child), edge)`` for every edge, in the order they were made."""
        yield from list(self._edges.items())

    # -- looking at the graph -------------------------------------------------------

    def __contains__(self, node: object) -> bool:
        if isinstance(node, str):
            return node in self._nodes
        return isinstance(node, BaseNode) and self._nodes.get(node.name) is node

    @property
    def nodes(self) -> Nodes:
        """Every node but the final one."""
        return Nodes(self._nodes.values())

    @property
    def node_to_children(self) -> dict[BaseNode, Nodes]:
        return {n: Nodes(c) for n, c in self._children.items()}

    @property
    def node_to_parents(self) -> dict[BaseNode, Nodes]:
        return {n: Nodes(p) for n, p in self._parents.items()}

    @property
    def roots(self) -> Nodes:
        """The nodes without parents."""
        return Nodes(n for n, p in self._parents.items() if not p)

    @property
    def leaves(self) -> Nodes:
        """The nodes without children."""
        return Nodes(n for n, c in self._children.items() if not c)

    def select(self, selector: Callable[[BaseNode], bool]) -> Nodes:
        """The nodes for which ``selector(node)`` is true."""
        return Nodes(n for n in self._nodes.values() if selector(n))

    def glob(self, pattern: str) -> Nodes:
        """The nodes whose names match the shell-style ``pattern`` (case matters)."""
        return self.select(lambda n: fnmatch.fnmatchcase(n.name, pattern))

    def walk(self, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        """Every node, each once, from the roots down."""
        return self._walk(self.roots, self._children, order)

    def walk_ancestors(self, node: BaseNode, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        """``node``'s parents, their parents … (not ``node`` itself)."""
        return self._walk(self._parents[self._member(node)], self._parents, order)

    def walk_descendants(self, node: BaseNode, order: WalkOrder = WalkOrder.DEPTH_FIRST) -> Iterator[BaseNode]:
        """``node``'s children, their children … (not ``node`` itself)."""
        return self._walk(self._children[self._member(node)], self._children, order)

    @staticmethod
    def _walk(start: Iterable[BaseNode], next_of: Mapping[BaseNode, Mapping[BaseNode, None]],
              order: WalkOrder) -> Iterator[BaseNode]:
        if order not in (WalkOrder.DEPTH_FIRST, WalkOrder.BREADTH_FIRST):
            raise exceptions.UnrecognizedWalkOrder(f"unrecognized WalkOrder: {order!r}")
        seen: set[BaseNode] = set()
        if order is WalkOrder.BREADTH_FIRST:
            queue = collections.deque(start)
            while queue:
                node = queue.popleft()
                if node not in seen:
                    seen.add(node)
                    yield node
                    queue.extend(next_of[node])
        else:
            stack = list(reversed(list(start)))  # the first root is visited first
            while stack:
                node = stack.pop()
                if node not in seen:
                    seen.add(node)
                    yield node
                    stack.extend(reversed(list(next_of[node])))

    def describe(self) -> str:
        """A table of the logical nodes, breadth-first: type, name, DAGMan nodes,
        children, and parents with the edge type to each."""
        rows = [("Type", "Name", "# Nodes", "# Children", "Parents")]
        for n in self.walk(WalkOrder.BREADTH_FIRST):
            kind = "Layer" if isinstance(n, NodeLayer) else "SubDAG"
            parents = ", ".join(f"{p.name}[{self._edges[(p, n)]!r}]" for p in self._parents[n])
            rows.append((kind, n.name, str(len(n)) if isinstance(n, NodeLayer) else "",
                         str(len(self._children[n])), parents))
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
                         for r in rows)
