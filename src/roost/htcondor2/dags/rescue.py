"""Reading a DAGMan rescue file back into a :class:`~roost.htcondor2.dags.dag.DAG`: the
nodes it lists as ``DONE`` become done, so writing the DAG again skips them."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path

from roost.htcondor2.dags import exceptions
from roost.htcondor2.dags.dag import DAG
from roost.htcondor2.dags.formatter import NodeNameFormatter, SimpleFormatter
from roost.htcondor2.dags.writer import DEFAULT_DAG_FILE_NAME


def rescue(dag: DAG, rescue_file: str | os.PathLike[str], formatter: NodeNameFormatter | None = None) -> None:
    """Set every node's ``done`` from ``rescue_file`` (what it does not list becomes not
    done). ``formatter`` must be the one the DAG was written with, to read node names."""
    done = _done_nodes(Path(rescue_file).read_text(), formatter or SimpleFormatter())
    for node in dag.nodes:
        node.done = dict.fromkeys(sorted(done.get(node.name, ())), True)


def _done_nodes(text: str, formatter: NodeNameFormatter) -> dict[str, set[int]]:
    done: dict[str, set[int]] = defaultdict(set)
    for line in text.splitlines():
        words = line.split()
        if len(words) < 2 or words[0].upper() != "DONE":
            continue  # comments, blank lines, and what else a rescue file may say
        layer, index = formatter.parse(words[1])
        done[layer].add(index)
    return done


_RESCUE_NUMBER = re.compile(r"\.rescue(\d+)$")


def find_rescue_file(dag_dir: str | os.PathLike[str], dag_file_name: str = DEFAULT_DAG_FILE_NAME) -> Path:
    """The newest rescue file of ``dag_file_name`` in ``dag_dir`` (the highest
    ``.rescueNNN``), the one DAGMan itself would use."""
    directory = Path(dag_dir)
    found: list[tuple[int, Path]] = []
    for path in directory.glob(f"{dag_file_name}.rescue*"):
        m = _RESCUE_NUMBER.search(path.name)
        if m and path.name == f"{dag_file_name}.rescue{m.group(1)}":
            found.append((int(m.group(1)), path))
    if not found:
        raise exceptions.NoRescueFileFound(f"no rescue file of {dag_file_name} in {directory}")
    return max(found)[1]
