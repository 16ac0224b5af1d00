"""Issue 28: no class in roost.daemons grows past what a reader can hold in mind (500
lines); what grows goes into a module named for it (as Claims, Startd, Negotiator,
Starter, Shadow and JobLifecycle did)."""

from __future__ import annotations

import ast
from pathlib import Path

DAEMONS = Path(__file__).resolve().parents[3] / "src" / "roost" / "daemons"
LIMIT = 500


def test_no_class_in_the_daemons_reaches_500_lines() -> None:
    big = []
    seen = 0
    for path in sorted(DAEMONS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                seen += 1
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines >= LIMIT:
                    big.append(f"{path.relative_to(DAEMONS)}: {node.name} ({lines} lines)")
    assert seen > 50, "the scan found the daemons' classes"
    assert not big, "classes to split by what they hold: " + "; ".join(big)
