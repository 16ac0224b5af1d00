"""Edge types: how the nodes of a parent layer are joined to those of a child layer.

An edge type turns (parent, child) into edge specifications for the writer: pairs of
(parent indices, child indices), either side of which may instead be a :class:`JoinNode`,
a NOOP node the writer adds so that N parents and M children take N + M edges
instead of N × M. A :class:`SubDAG` (and the final node) has the one index 0.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Union

from roost.htcondor2.dags import exceptions

if TYPE_CHECKING:
    from roost.htcondor2.dags.node import BaseNode

#: one side of an edge specification: node indices of a layer, or a join node
Side = Union[tuple[int, ...], "JoinNode"]
EdgeSpec = tuple[Side, Side]


class JoinNode:
    """A NOOP node standing between parents and children; ``id`` numbers it in its DAG file."""

    def __init__(self, id: int) -> None:  # noqa: A002 -- htcondor2.dags's argument name
        self.id = id

    def __repr__(self) -> str:
        return f"JoinNode(id = {self.id})"


class JoinFactory:
    """Hands out the join nodes of one DAG file, numbered from 0, and remembers them
    so the writer can declare each one."""

    def __init__(self) -> None:
        self._ids = itertools.count()
        self.joins: list[JoinNode] = []

    def get_join_node(self) -> JoinNode:
        join = JoinNode(next(self._ids))
        self.joins.append(join)
        return join


class BaseEdge(abc.ABC):
    """An edge type; subclasses say which underlying nodes depend on which."""

    @abc.abstractmethod
    def get_edges(self, parent: BaseNode, child: BaseNode, join_factory: JoinFactory) -> Iterable[EdgeSpec]:
        """The edge specifications joining ``parent``'s nodes to ``child``'s."""

    def __repr__(self) -> str:
        return type(self).__name__


class ManyToMany(BaseEdge):
    """Every child node depends on every parent node (the default edge). Between two
    layers of more than one node each, through one join node."""

    def get_edges(self, parent: BaseNode, child: BaseNode, join_factory: JoinFactory) -> Iterator[EdgeSpec]:
        parents, children = tuple(range(len(parent))), tuple(range(len(child)))
        if not parents or not children:
            return
        if len(parents) == 1 or len(children) == 1:
            yield parents, children
            return
        join = join_factory.get_join_node()
        yield parents, join
        yield join, children


class OneToOne(BaseEdge):
    """Child node i depends on parent node i; the layers must be the same size."""

    def get_edges(self, parent: BaseNode, child: BaseNode, join_factory: JoinFactory) -> Iterator[EdgeSpec]:
        if len(parent) != len(child):
            raise exceptions.OneToOneEdgeNeedsSameNumberOfVars(
                f"parent layer {parent!r} has {len(parent)} nodes but child layer {child!r} has {len(child)}")
        for i in range(len(parent)):
            yield (i,), (i,)


class Grouper(BaseEdge):
    """Both layers cut into consecutive chunks (``parent_chunk_size`` and
    ``child_chunk_size`` nodes); child chunk k depends on parent chunk k, through a join
    node. The layers must cut evenly into the same number of chunks."""

    def __init__(self, parent_chunk_size: int = 1, child_chunk_size: int = 1) -> None:
        for what, size in (("parent_chunk_size", parent_chunk_size), ("child_chunk_size", child_chunk_size)):
            if not isinstance(size, int) or size < 1:
                raise ValueError(f"{what} must be a positive integer, not {size!r}")
        self.parent_chunk_size = parent_chunk_size
        self.child_chunk_size = child_chunk_size

    def get_edges(self, parent: BaseNode, child: BaseNode, join_factory: JoinFactory) -> Iterator[EdgeSpec]:
        p, c = len(parent), len(child)
        for layer, n, size, what in ((parent, p, self.parent_chunk_size, "parent"),
                                     (child, c, self.child_chunk_size, "child")):
            if n % size:
                raise exceptions.IncompatibleGrouper(
                    f"{self!r} cannot cut {what} layer {layer!r} ({n} nodes) into chunks of {size}")
        if p // self.parent_chunk_size != c // self.child_chunk_size:
            raise exceptions.IncompatibleGrouper(
                f"{self!r} cuts {parent!r} into {p // self.parent_chunk_size} chunks but "
                f"{child!r} into {c // self.child_chunk_size}")
        for k in range(p // self.parent_chunk_size):
            join = join_factory.get_join_node()
            yield tuple(range(k * self.parent_chunk_size, (k + 1) * self.parent_chunk_size)), join
            yield join, tuple(range(k * self.child_chunk_size, (k + 1) * self.child_chunk_size))

    def __repr__(self) -> str:
        return f"Grouper(parent_chunk_size = {self.parent_chunk_size}, child_chunk_size = {self.child_chunk_size})"


class Slicer(BaseEdge):
    """The parent nodes ``parent_slice`` selects are paired in order with the child
    nodes ``child_slice`` selects; each child depends on its pair (the shorter
    selection decides how many pairs)."""

    def __init__(self, parent_slice: slice = slice(None), child_slice: slice = slice(None)) -> None:
        for what, s in (("parent_slice", parent_slice), ("child_slice", child_slice)):
            if not isinstance(s, slice):
                raise TypeError(f"{what} must be a slice, not {type(s).__name__}")
        self.parent_slice = parent_slice
        self.child_slice = child_slice

    def get_edges(self, parent: BaseNode, child: BaseNode, join_factory: JoinFactory) -> Iterator[EdgeSpec]:
        parents = range(len(parent))[self.parent_slice]
        children = range(len(child))[self.child_slice]
        for p, c in zip(parents, children, strict=False):
            yield (p,), (c,)

    def __repr__(self) -> str:
        return f"Slicer(parent_slice = {self.parent_slice}, child_slice = {self.child_slice})"
