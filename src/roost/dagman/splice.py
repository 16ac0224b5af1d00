"""SPLICE: another DAG file's nodes become this DAG's, named ``splice+node``.

As condor_dagman does it: a splice is parsed as a DAG of its own (its VARS, RETRY,
scripts and categories stay with its nodes), its nodes are renamed with the splice
name and a ``+``, its ``DIR`` is put in front of their directories, and a PARENT or
CHILD line that names the splice means its initial nodes (as a child) or its final
nodes (as a parent). Splices nest. A splice may not hold a FINAL node. Pure: files are
read through the ``read`` callable.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from roost.dagman.language import Dag, DagError, Node, find_cycle, parse_file

MAX_DEPTH = 32


def expand_splices(dag: Dag, *, read: Callable[[str], str] | None = None, base_dir: str = "") -> Dag:
    """``dag`` with every splice (and splice of a splice) replaced by its nodes."""
    _expand(dag, read, base_dir, 0, [os.path.abspath(dag.file)])
    cycle = find_cycle(dag)
    if cycle:
        node = dag.nodes[cycle[0]]
        raise DagError(node.where[0], node.where[1], f"the DAG has a cycle: {' -> '.join(cycle + [cycle[0]])}")
    return dag


def _expand(dag: Dag, read: Callable[[str], str] | None, base_dir: str, depth: int, stack: list[str]) -> None:
    if not dag.splices:
        return
    roots: dict[str, list[str]] = {}
    leaves: dict[str, list[str]] = {}
    for name, (file, sdir, where) in dag.splices.items():
        if depth >= MAX_DEPTH:
            raise DagError(where[0], where[1], f"SPLICE {name}: splices nest more than {MAX_DEPTH} deep")
        where_dir = os.path.join(base_dir, sdir) if sdir else base_dir
        path = os.path.join(where_dir, file) if not os.path.isabs(file) else file
        if os.path.abspath(path) in stack:
            raise DagError(where[0], where[1], f"SPLICE {name}: {file} splices itself")
        try:
            inner = parse_file(path, read=read) if read else parse_file(path)
        except DagError as e:
            if e.line == 0 and e.file == path and e.message.startswith("cannot read"):
                raise DagError(where[0], where[1], f"SPLICE {name}: {path}: {e.message}") from None
            raise
        _expand(inner, read, where_dir, depth + 1, stack + [os.path.abspath(path)])
        if inner.final is not None:
            raise DagError(where[0], where[1], f"SPLICE {name}: a splice cannot hold a FINAL node ({inner.final.name})")
        prefix = name + "+"
        for node in inner.nodes.values():
            renamed = Node(**{f: getattr(node, f) for f in Node.__slots__})
            renamed.name = prefix + node.name
            renamed.parents = [prefix + p for p in node.parents]
            renamed.children = [prefix + c for c in node.children]
            if sdir:
                renamed.dir = os.path.join(sdir, node.dir) if node.dir else sdir
            if renamed.description is None and node.submit in inner.descriptions and node.inline is None:
                renamed.inline = inner.descriptions[node.submit]
            if renamed.name in dag.nodes:
                raise DagError(where[0], where[1], f"SPLICE {name}: node {renamed.name!r} is defined twice")
            dag.nodes[renamed.name] = renamed
        for cat, limit in inner.maxjobs.items():
            dag.maxjobs.setdefault(cat, limit)
        new = [prefix + n for n in inner.nodes]
        roots[name] = [n for n in new if not dag.nodes[n].parents]
        leaves[name] = [n for n in new if not dag.nodes[n].children]
    for parent, child in dag.splice_edges:
        for p in leaves.get(parent, [parent]):
            for c in roots.get(child, [child]):
                if p not in dag.nodes or c not in dag.nodes:
                    continue
                if c not in dag.nodes[p].children:
                    dag.nodes[p].children.append(c)
                    dag.nodes[c].parents.append(p)
    dag.splices.clear()
    dag.splice_edges.clear()
