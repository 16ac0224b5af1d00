"""One vocabulary: job status codes, slot states and activities, and event numbers are
written as ``roost.vocabulary``'s names everywhere, never as bare numbers or strings.

The scan reads the source with ``ast`` (docstrings are prose and are skipped). What
counts as a bare job status: an int 1-7 compared with something named like a job
status (``status``, ``job.status``, ``ad["JobStatus"]``), an int given as a
``JobStatus`` value, a table keyed by those numbers alone, or a second definition
(``IDLE = 1``). What counts as a bare
slot state or activity: any string constant that is one of their names, except
``"Owner"``, which is also the job attribute: that one counts only where it is
compared with something named like a state.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from roost import vocabulary
from roost.htcondor2 import JobEventType, JobStatus
from roost.vocabulary import Activity, SlotState

SRC = Path(__file__).resolve().parents[2] / "src" / "roost"

_STATUS_NAME = re.compile(r"(?:^|[^A-Za-z0-9_])(?:status|st|job_status|JobStatus|LastJobStatus)\b(?!\.)|\.status\b")
_STATUS_NAMES = set(vocabulary.JobStatus.members())
_STATE_NAME = re.compile(r"(?i)state")
_WORDS = {v for k, v in vars(SlotState).items() if k.isupper() and isinstance(v, str)} | {
    v for k, v in vars(Activity).items() if k.isupper() and isinstance(v, str)}


def _status_const(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and 1 <= node.value <= 7


def _consts(node: ast.AST) -> list[ast.AST]:
    return list(node.elts) if isinstance(node, (ast.Tuple, ast.Set, ast.List)) else [node]


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.add(id(body[0].value))
    return out


def bare_words(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each bare job status, slot state or activity in ``tree``."""
    found: list[tuple[int, str]] = []
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            texts = [ast.unparse(p) for p in parts]
            if any(_STATUS_NAME.search(t) for t in texts) and any(
                    _status_const(c) for p in parts for c in _consts(p)):
                found.append((node.lineno, "job status number: " + ast.unparse(node)))
            if any(_STATE_NAME.search(t) for t in texts) and any(
                    isinstance(c, ast.Constant) and c.value == SlotState.OWNER for p in parts for c in _consts(p)):
                found.append((node.lineno, "slot state string: " + ast.unparse(node)))
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if len(keys) >= 4 and all(_status_const(k) for k in keys):
                found.append((node.lineno, "table keyed by job status numbers"))
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and k.value == "JobStatus" and _status_const(v):
                    found.append((node.lineno, "JobStatus given as a number"))
        elif isinstance(node, ast.Assign):
            names = [n.id for t in node.targets for n in _consts(t) if isinstance(n, ast.Name)]
            if set(names) & _STATUS_NAMES and any(_status_const(c) for c in _consts(node.value)):
                found.append((node.lineno, "a job status defined again: " + ast.unparse(node)))
        elif isinstance(node, ast.keyword) and node.arg == "JobStatus" and _status_const(node.value):
            found.append((node.value.lineno, "JobStatus given as a number"))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _WORDS
              and node.value != SlotState.OWNER and id(node) not in docs):
            found.append((node.lineno, f"slot state/activity string {node.value!r}"))
    return sorted(found)


def test_no_bare_job_status_or_slot_state_outside_the_vocabulary() -> None:
    wrong = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "vocabulary.py":
            continue
        for line, what in bare_words(ast.parse(path.read_text())):
            wrong.append(f"{path.relative_to(SRC.parent)}:{line}: {what}")
    assert not wrong, "use roost.vocabulary's names:\n" + "\n".join(wrong)


def test_the_scan_finds_what_it_is_for() -> None:
    """The scan itself can fail: each kind of bare word is caught, the named forms are not."""
    bad = ast.parse(
        "if job.status == 5: pass\n"
        "if ad.get('JobStatus') in (2, 6, 7): pass\n"
        "x = {1: 'I', 2: 'R', 3: 'X', 4: 'C', 5: 'H'}\n"
        "y = dict(JobStatus=1)\n"
        "z = {'JobStatus': 4}\n"
        "if slot.state == 'Claimed': pass\n"
        "if state == 'Owner': pass\n"
        "a = transition(slot, 'Unclaimed', 'Idle', now)\n"
        "IDLE, HELD = 1, 5\n"
    )
    assert sorted(line for line, _ in bare_words(bad)) == [1, 2, 3, 4, 5, 6, 7, 8, 8, 9]
    good = ast.parse(
        "if job.status == JobStatus.HELD: pass\n"
        "if exit_status == 1: pass\n"
        "owner = ad['Owner']\n"
        "if st.state == SlotState.OWNER: pass\n"
        "def f():\n    '''Claimed'''\n"
    )
    assert bare_words(good) == []


def test_htcondor2_enums_are_the_vocabulary() -> None:
    assert {m.name: int(m) for m in JobStatus} == vocabulary.JobStatus.members()
    assert JobStatus.HELD == vocabulary.JobStatus.HELD == 5
    assert JobEventType is vocabulary.JobEventType
    assert set(vocabulary.JobStatus.WORDS) == set(vocabulary.JobStatus.LETTERS) == set(JobStatus)


def test_slot_states_and_activities_are_htcondors() -> None:
    assert set(vocabulary.SLOT_ACTIVITIES) == _WORDS & {
        "Owner", "Unclaimed", "Matched", "Claimed", "Preempting", "Drained"}
    for activities in vocabulary.SLOT_ACTIVITIES.values():
        assert activities <= _WORDS
