"""The errors of :mod:`roost.htcondor2.dags`, by htcondor2.dags's names, so that code
catching ``htcondor2.dags.exceptions.DuplicateNodeName`` works unchanged."""

from __future__ import annotations


class DAGsException(Exception):
    """Every error this package raises about a DAG's shape or names."""


class OneToOneEdgeNeedsSameNumberOfVars(DAGsException):
    """A ``OneToOne`` edge joins layers with different numbers of nodes."""


class IncompatibleGrouper(DAGsException):
    """A ``Grouper``'s chunk sizes do not divide the layers into the same number of chunks."""


class DuplicateNodeName(DAGsException):
    """The DAG already has a node of that name."""


class UnrecognizedWalkOrder(DAGsException):
    """A walk asked for an order that is not a ``WalkOrder``."""


class LayerNameContainsSeparator(DAGsException):
    """A layer's name holds the formatter's separator, so node names could not be parsed back."""


class NoRescueFileFound(DAGsException):
    """``find_rescue_file`` found no ``FILE.rescueNNN`` next to the DAG file."""


class CannotInvertFormat(DAGsException):
    """A formatter's node name does not parse back into its layer and index."""
