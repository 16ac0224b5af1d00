"""The suite's order for ``pytest -n 2`` (tests/conftest.py, docs/architecture.md "The
suite on two cores"): a file named in ``SLOW_FIRST`` that was renamed or removed would
silently lose its place and run among the quick files, late, and the two workers would
end far apart again; pyproject's addopts must keep sending whole files in that order."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _slow_first() -> list[str]:
    tree = ast.parse((TESTS / "conftest.py").read_text())
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "SLOW_FIRST" for t in targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("tests/conftest.py has no SLOW_FIRST")


def test_every_slow_file_named_first_exists_once() -> None:
    names = _slow_first()
    assert len(names) >= 10, names
    assert len(set(names)) == len(names), [n for n in names if names.count(n) > 1]
    missing = [n for n in names if not (TESTS / n).is_file()]
    assert not missing, f"SLOW_FIRST names files that are not there: {missing}"


def test_whole_files_go_to_the_workers_in_the_conftests_order() -> None:
    opts = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    args = opts["addopts"].split()
    assert "--no-loadscope-reorder" in args, args
    assert args[args.index("--dist") + 1] == "loadfile", args
