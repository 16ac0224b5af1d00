"""roost's ``htcondor2.dags``: build a DAGMan workflow in Python and write its files.

The public API of HTCondor's ``htcondor2.dags`` (``DAG``, ``layer``/``subdag``/
``final``, the edge types ``ManyToMany``, ``OneToOne``, ``Grouper``, ``Slicer``,
``Nodes``, ``WalkOrder``, ``write_dag``, ``rescue``, ``find_rescue_file`` …), written
for roost, so that code doing ``from htcondor2 import dags`` runs under the shim. The
files it writes are those htcondor2.dags writes (tests/unit/htcondor2face/test_dags.py
compares them); where they differ on purpose, docs/python.md says so.
"""

from __future__ import annotations

from roost.htcondor2.dags import exceptions
from roost.htcondor2.dags.dag import DAG, DotConfig, NodeStatusFile
from roost.htcondor2.dags.edges import (
    BaseEdge,
    Grouper,
    JoinFactory,
    JoinNode,
    ManyToMany,
    OneToOne,
    Slicer,
)
from roost.htcondor2.dags.formatter import DEFAULT_SEPARATOR, NodeNameFormatter, SimpleFormatter
from roost.htcondor2.dags.node import (
    BaseNode,
    DAGAbortCondition,
    FinalNode,
    NodeLayer,
    Nodes,
    Script,
    SubDAG,
)
from roost.htcondor2.dags.rescue import find_rescue_file, rescue
from roost.htcondor2.dags.walk_order import WalkOrder
from roost.htcondor2.dags.writer import CONFIG_FILE_NAME, DEFAULT_DAG_FILE_NAME, write_dag

__all__ = [
    "CONFIG_FILE_NAME",
    "DAG",
    "DEFAULT_DAG_FILE_NAME",
    "DEFAULT_SEPARATOR",
    "BaseEdge",
    "BaseNode",
    "DAGAbortCondition",
    "DotConfig",
    "FinalNode",
    "Grouper",
    "JoinFactory",
    "JoinNode",
    "ManyToMany",
    "NodeLayer",
    "NodeNameFormatter",
    "NodeStatusFile",
    "Nodes",
    "OneToOne",
    "Script",
    "SimpleFormatter",
    "Slicer",
    "SubDAG",
    "WalkOrder",
    "exceptions",
    "find_rescue_file",
    "rescue",
    "write_dag",
]
