"""Issue 28: the startd's Claims and Startd and the Negotiator stay classes a reader
can hold in mind (under 500 lines each); what grows goes into a module named for it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DAEMONS = Path(__file__).resolve().parents[3] / "src" / "roost" / "daemons"
LIMIT = 500


@pytest.mark.parametrize(("path", "name"), [
    ("startd/claims.py", "Claims"), ("startd/daemon.py", "Startd"), ("negotiator.py", "Negotiator"),
])
def test_the_class_stays_under_500_lines(path: str, name: str) -> None:
    tree = ast.parse((DAEMONS / path).read_text())
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, f"no class {name} in {path}"
    node = found[0]
    assert node.end_lineno is not None
    assert node.end_lineno - node.lineno + 1 < LIMIT
