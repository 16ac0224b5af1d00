"""How a layer's name and a node's index become a DAGMan node name (``Layer:3``) and
back: the writer makes names with it, :func:`~roost.htcondor2.dags.rescue` reads a
rescue file's node names back into layers and indices with it."""

from __future__ import annotations

import abc

from roost.htcondor2.dags import exceptions

#: between a layer's name and a node's index in the default node names
DEFAULT_SEPARATOR = ":"


class NodeNameFormatter(abc.ABC):
    """Makes node names from (layer name, index) and parses them back; the two must be
    inverses for rescue files to be read."""

    @abc.abstractmethod
    def generate(self, layer_name: str, node_index: int) -> str:
        """The DAGMan name of node ``node_index`` of layer ``layer_name``."""

    @abc.abstractmethod
    def parse(self, node_name: str) -> tuple[str, int]:
        """The (layer name, index) a name of :meth:`generate` came from."""


class SimpleFormatter(NodeNameFormatter):
    """``LAYER{separator}{index}``: the index is formatted by ``index_format`` after
    adding ``offset`` (``offset=1`` numbers nodes from 1)."""

    def __init__(self, separator: str = DEFAULT_SEPARATOR, index_format: str = "{:d}", offset: int = 0) -> None:
        if not isinstance(separator, str) or not separator:
            raise ValueError("separator must be a non-empty string")
        self.separator = separator
        self.index_format = index_format
        self.offset = offset

    def generate(self, layer_name: str, node_index: int) -> str:
        if self.separator in layer_name:
            raise exceptions.LayerNameContainsSeparator(
                f"the layer name {layer_name!r} contains the node name separator {self.separator!r}")
        name = f"{layer_name}{self.separator}{self.index_format.format(node_index + self.offset)}"
        if self.parse(name) != (layer_name, node_index):
            raise exceptions.CannotInvertFormat(
                f"{type(self).__name__} cannot read the node name {name!r} back into layer "
                f"{layer_name!r} and index {node_index}: is index_format {self.index_format!r} an integer format?")
        return name

    def parse(self, node_name: str) -> tuple[str, int]:
        layer, sep, index = node_name.rpartition(self.separator)
        try:
            if not sep:
                raise ValueError(node_name)
            number = int(index)
        except ValueError:
            raise exceptions.CannotInvertFormat(
                f"{type(self).__name__} cannot read {node_name!r} as LAYER{self.separator}INDEX") from None
        return layer, number - self.offset
