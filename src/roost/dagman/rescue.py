"""Rescue DAGs: ``FILE.dag.rescue001``, ``002``, ... written when a DAG does not succeed.

A rescue DAG is condor_dagman's *partial* kind: comments with the run's figures, a
``DONE`` line per finished node and a ``RETRY`` line per unfinished node that used
some of its retries (the retries it has left). It is read together with the
original DAG file (which holds the structure), so an edited DAG still runs. Pure:
the file system is touched only by the caller.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable

from roost.dagman.language import DagError
from roost.dagman.state import DONE, DagRun

_RESCUE = re.compile(r"\.rescue(\d{3,})\Z")


def rescue_path(dag_file: str, number: int) -> str:
    return f"{dag_file}.rescue{number:03d}"


def rescue_numbers(dag_file: str, names: Iterable[str]) -> list[int]:
    """The numbers of the rescue DAGs of ``dag_file`` among ``names`` (a directory's
    listing), in order."""
    base = os.path.basename(dag_file)
    out = []
    for name in names:
        if name.startswith(base) and (m := _RESCUE.search(name[len(base):])) and name[len(base):].startswith(".rescue"):
            out.append(int(m.group(1)))
    return sorted(out)


def next_rescue(numbers: list[int], max_num: int = 100) -> int:
    """The number the next rescue DAG gets (the last is overwritten at ``max_num``)."""
    return min((numbers[-1] + 1) if numbers else 1, max_num)


def rescue_text(dag_file: str, run: DagRun, *, now: float | None = None, reason: str = "") -> str:
    """The partial rescue DAG of ``run`` as it stands."""
    s = run.summary()
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now if now is not None else time.time()))
    lines = [
        f"# Rescue DAG file, created after running the {os.path.basename(dag_file)} DAG file",
        f"# Created {when}",
        "# Rescue DAG version: 2.0.1 (partial)",
        "#",
        f"# Total number of Nodes: {s['total']}",
        f"# Nodes premarked DONE: {sum(1 for n in run.nodes.values() if n.spec.done)}",
        f"# Nodes that failed: {s['failed']}",
    ]
    failed = [name for name, n in run.nodes.items() if n.details and n.state != DONE]
    for name in failed[:20]:
        lines.append(f"#   {name}: {run.nodes[name].details}")
    if len(failed) > 20:
        lines.append(f"#   ... and {len(failed) - 20} more")
    if reason:
        lines.append(f"# {reason}")
    lines.append("")
    for name in run.done_nodes():
        lines.append(f"DONE {name}")
    for name, n in run.nodes.items():
        if n.state != DONE and n.retries and n.spec.retry:
            left = max(0, n.spec.retry - n.retries)
            extra = f" UNLESS-EXIT {n.spec.unless_exit}" if n.spec.unless_exit is not None else ""
            lines.append(f"RETRY {name} {left}{extra}")
    return "\n".join(lines) + "\n"


def read_rescue(path: str, text: str, nodes: Iterable[str]) -> tuple[set[str], dict[str, int]]:
    """The DONE nodes and the RETRY counts a rescue DAG sets; DagError (file:line) for a
    line it cannot use or a node the DAG no longer has."""
    known = set(nodes)
    done: set[str] = set()
    retries: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        command = words[0].upper()
        if command == "DONE" and len(words) == 2:
            name = words[1]
        elif command == "RETRY" and len(words) in (3, 5):
            name = words[1]
            try:
                retries[name] = int(words[2])
            except ValueError:
                raise DagError(path, number, f"RETRY count {words[2]!r} is not a whole number") from None
        else:
            raise DagError(path, number, f"a rescue DAG holds DONE and RETRY lines only, not {line!r}")
        if name not in known:
            raise DagError(path, number, f"no node named {name!r} in the DAG")
        if command == "DONE":
            done.add(name)
    return done, retries
