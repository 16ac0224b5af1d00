"""Summarise a differential run's disagreements for triage.

    ROOST_DIFF_LOG=/tmp/diff.jsonl .venv/bin/pytest -n 2 tests/unit/classad/test_differential*.py
    .venv/bin/python tests/unit/classad/diff_report.py /tmp/diff.jsonl [--all]

Groups disagreements by operation and by the pair of result kinds, and prints
one example per group (all of them with --all), so each group can be routed to
the module that owns it.
"""

from __future__ import annotations

import collections
import json
import os
import re
import sys


def kind(result: str) -> str:
    if result.startswith("raised"):
        return result.split(":")[0]
    m = re.search(r"\((\w+)\)$", result)
    return m.group(1) if m else "?"


def main(argv: list[str]) -> int:
    path = argv[1] if len(argv) > 1 else "/tmp/diff.jsonl"
    show_all = "--all" in argv
    rows = []
    seen = set()
    if not os.path.exists(path):  # the harness writes the file only when something disagrees
        print(f"no disagreements logged ({path} does not exist)")
        return 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["what"] not in seen:  # hypothesis may replay an example
                seen.add(r["what"])
                rows.append(r)
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = collections.defaultdict(list)
    for r in rows:
        op = r["what"].split("(")[0].split(" ")[0]
        groups[(op, kind(r["roost"]), kind(r["classad2"]))].append(r)
    print(f"{len(rows)} distinct disagreements in {len(groups)} groups")
    for (op, mine, ref), rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n## {len(rs)} x {op}: roost {mine} vs classad2 {ref}")
        for r in rs if show_all else rs[:3]:
            what = r["what"].replace("\n", " | ")
            print(f"  {what}\n      roost:    {r['roost']}\n      classad2: {r['classad2']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
