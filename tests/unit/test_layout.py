"""The package layout of docs/architecture.md, checked: no import circle, each package
imports only the packages below it, big modules say why they are big, and every
import written inside a function says why it is not at the top.

Read from the source with ``ast`` (nothing is imported). An import inside a function
counts as an edge like any other: it runs, just later, so hiding a circle in a
function does not remove it. Imports under ``if TYPE_CHECKING:`` never run and
do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

#: what each top-level part of roost may import (docs/architecture.md's table)
ALLOWED: dict[str, set[str]] = {
    "": set(),  # roost/__init__.py
    "classad": set(),
    "config": {"classad", "poolhome"},  # where a pool lives: the same lookup as every command
    "submit": {"vocabulary", "classad", "config", "universes"},
    # one module per universe and the registry; core: pure rules a universe's submit checks
    # share with its runner (issue 30's core.gridbatch reads grid_resource)
    "universes": {"core"},
    "eventlog": {"vocabulary", "classad"},
    "core": {"vocabulary", "classad"},
    "net": {"classad", "config"},
    "poolhome": set(),
    "vocabulary": set(),  # job statuses, slot states, event numbers: the words all parts share
    "daemons": {"vocabulary", "classad", "config", "core", "eventlog", "net", "submit", "poolhome", "universes"},
    "api": {"vocabulary", "classad", "config", "core", "eventlog", "net", "submit", "poolhome"},  # core: rules both ends share
    # htcondor2: the `htcondor` command line speaks through htcondor2's face, as HTCondor's does
    "cli": {"vocabulary", "api", "classad", "config", "core", "dagman", "eventlog", "htcondor2", "net", "submit", "poolhome"},
    "demo": {"vocabulary", "api", "cli", "config", "eventlog", "poolhome"},
    "dagman": {"vocabulary", "api", "classad", "config", "core", "eventlog", "submit"},
    "mw": {"vocabulary", "api", "classad", "config", "core", "eventlog", "submit"},
    "htcondor2": {"vocabulary", "api", "classad", "config", "core", "dagman", "eventlog", "net", "submit"},  # htcondor2's face
    "classad2": {"classad"},  # roost.classad under classad2's name
    "futures": {"api", "eventlog"},  # concurrent.futures over roost.api; its runner is stdlib + cloudpickle
    "mpi": set(),  # openmpiscript's path (the script itself is stdlib Python, run by jobs)
    # the dashboard reads the pool through roost.api only; q -better-analyze's helpers from cli
    "web": {"vocabulary", "api", "classad", "cli", "config", "core", "poolhome"},
}
SIZE_LIMIT = 800  # lines; a bigger module's docstring has a paragraph starting "Size:"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "roost").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


class _Imports(ast.NodeVisitor):
    """Every import of a roost module in one file, with whether it sits in a function."""

    def __init__(self, name: str, is_package: bool) -> None:
        self.name = name
        self.is_package = is_package
        self.found: list[tuple[str, int, bool]] = []  # (module, line, inside a function)
        self.inner: list[ast.stmt] = []  # every import statement inside a function
        self._depth = 0

    def _target(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = self.name.split(".")
        if not self.is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def _add(self, node: ast.Import | ast.ImportFrom) -> None:
        if self._depth:
            self.inner.append(node)
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            prefix = self._target(node)
            targets = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix for a in node.names]
        for t in targets:
            if t in MODULES and t != self.name:
                self.found.append((t, node.lineno, bool(self._depth)))

    visit_Import = _add
    visit_ImportFrom = _add

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        self.generic_visit(node)


def _scan() -> dict[str, _Imports]:
    out = {}
    for name, path in MODULES.items():
        v = _Imports(name, path.name == "__init__.py")
        v.visit(ast.parse(path.read_text(), str(path)))
        out[name] = v
    return out


SCAN = _scan()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else ""


def test_no_import_circle() -> None:
    graph = {m: {t for t, _, _ in v.found} for m, v in SCAN.items()}
    # A package's __init__ runs before any of its modules: ``roost.x.y`` importing
    # ``roost.x`` is no circle when roost/x/__init__.py only re-exports lazily.
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_packages_import_only_what_is_below_them() -> None:
    wrong = []
    for module, v in SCAN.items():
        part = _part(module)
        allowed = ALLOWED.get(part)
        if allowed is None:
            wrong.append(f"{module}: roost.{part} is not in the layout table (docs/architecture.md)")
            continue
        for target, line, _inner in v.found:
            tpart = _part(target)
            if tpart and tpart != part and tpart not in allowed:
                wrong.append(f"{MODULES[module].relative_to(SRC)}:{line}: roost.{part} imports {target}")
    assert wrong == []


def test_big_modules_say_why() -> None:
    unexplained = []
    for module, path in MODULES.items():
        lines = path.read_text().count("\n")
        if lines > SIZE_LIMIT:
            doc = ast.get_docstring(ast.parse(path.read_text())) or ""
            if not any(p.startswith("Size:") for p in doc.split("\n\n")):
                unexplained.append(f"{module} ({lines} lines)")
    assert unexplained == []


def test_imports_inside_functions_say_why() -> None:
    """An import written inside a function carries a ``# lazy: <why>`` comment on its
    line or the line above (start-up time of a command, an optional dependency)."""
    silent = []
    for module, v in SCAN.items():
        text = MODULES[module].read_text().splitlines()
        for node in v.inner:
            here = text[node.lineno - 1]
            above = text[node.lineno - 2] if node.lineno > 1 else ""
            if "# lazy:" not in here and not above.strip().startswith("# lazy:"):
                # a group of imports under one comment: the comment heads the group
                k = node.lineno - 2
                while k >= 0 and text[k].strip().startswith(("from ", "import ")):
                    k -= 1
                if k < 0 or not text[k].strip().startswith("# lazy:"):
                    silent.append(f"{MODULES[module].relative_to(SRC)}:{node.lineno}")
    assert silent == []


def _doc_table() -> dict[str, set[str]]:
    """docs/architecture.md's layer table: package -> the parts its "may import" column
    names (outside parentheses, which hold the reasons)."""
    text = (SRC.parent / "docs" / "architecture.md").read_text()
    out: dict[str, set[str]] = {}
    for line in text.split("\n"):
        if not line.startswith("| `roost."):
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        part = cells[0].strip("`").removeprefix("roost.")
        depth, plain = 0, []
        for c in cells[-1]:
            depth += c == "("
            if not depth:
                plain.append(c)
            depth -= c == ")"
        words = {w.strip(" .`") for w in "".join(plain).replace(" and ", ",").split(",")}
        out[part] = {w for w in words if w in ALLOWED}
    return out


def test_the_architecture_doc_shows_the_layers_of_the_code() -> None:
    """The table a newcomer reads is the one this test enforces."""
    doc = _doc_table()
    parts = {k for k in ALLOWED if k}
    assert set(doc) == parts, f"rows missing or extra in docs/architecture.md: {sorted(set(doc) ^ parts)}"
    wrong = {p: (sorted(doc[p]), sorted(ALLOWED[p])) for p in parts if doc[p] != ALLOWED[p]}
    assert not wrong, f"docs/architecture.md's 'may import' column differs (doc, code): {wrong}"
