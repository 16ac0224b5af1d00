"""Tests wait on events, not on time (issue 28): no test sleeps for a state.

A sleep that waits for a state ("the job has its record by now") is a guess: too
short on a loaded 2-core machine, so the test is flaky, and too long everywhere
else, so the suite is slow. This scan reads every ``.py`` file under ``tests/`` with
``ast`` (a sleep inside a string, a job's script, is not the test's own) and refuses
each ``time.sleep(...)`` statement (also ``sleep(...)`` from ``from time import
sleep``) and each ``await asyncio.sleep(...)`` but ``asyncio.sleep(0)`` (a yield to the
loop, no wait) unless one of these holds:

1. It is inside a **polling loop** of the same function: a loop that has a bound
   and can end on the state it waits for. A ``for`` loop is bounded by what it
   iterates over; a ``while`` loop must read a clock (``time.monotonic()``,
   ``time.time()``, ``time.perf_counter()``) or a name with ``deadline`` in it, in
   its test or its body, or sit inside ``async with asyncio.timeout(...)`` (or
   ``timeout_at``) in the same function. It can end on the state when its body has a
   ``break``, ``return``, ``raise`` or ``assert``, when its test checks more than the clock, or
   when it sits in a ``try`` whose handler ends it (``os.kill(pid, 0)`` raising once
   the process is gone).
   ``while time.monotonic() < deadline: time.sleep(1)`` is a straight sleep in
   disguise and is refused; so is ``for _ in range(5): time.sleep(1)``.
2. It is **marked**: a comment ``# time is the point: <why>`` on its line or on the
   line just above it, for a sleep whose length is what the test checks (a lease
   must expire, a periodic expression must not fire within N s, a job must run for
   a while). The why may not be empty.

To wait for a state, poll it with a deadline (``poolkit.wait_until``,
``PoolHandle.wait_for``) or wait for the daemon's own word for it in its log
(``tests/daemon_logs.py``: ``log_mark`` then ``wait_log``; ``PoolHandle.wait_log``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

MARK = re.compile(r"#\s*time is the point:\s*(\S.*)?$")
_CLOCKS = {"monotonic", "time", "perf_counter", "monotonic_ns", "time_ns"}
_LOOPS = (ast.While, ast.For, ast.AsyncFor)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


def _sleep_names(tree: ast.Module) -> set[str]:
    """Bare names that mean ``time.sleep`` in this module (``from time import sleep``)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "time":
            out |= {a.asname or a.name for a in node.names if a.name == "sleep"}
    return out


def _is_sleep(call: ast.AST, bare: set[str]) -> bool:
    if isinstance(call, ast.Await):  # asyncio's, unless a bare yield: asyncio.sleep(0)
        c = call.value
        if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "sleep"
                and isinstance(c.func.value, ast.Name) and c.func.value.id == "asyncio"):
            return False
        return not (c.args and isinstance(c.args[0], ast.Constant) and c.args[0].value == 0)
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "sleep" and isinstance(f.value, ast.Name):
        return f.value.id == "time"
    return isinstance(f, ast.Name) and f.id in bare


def _own_nodes(node: ast.AST) -> list[ast.AST]:
    """``node`` and what it holds, not looking into functions or classes defined inside."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        out.append(n)
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _SCOPES))
    return out


def _is_clock(n: ast.AST) -> bool:
    if isinstance(n, ast.Call):
        f = n.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name in _CLOCKS
    if isinstance(n, ast.Name):
        return "deadline" in n.id.lower()
    if isinstance(n, ast.Attribute):
        return "deadline" in n.attr.lower()
    return False


def _has_clock(nodes: list[ast.AST]) -> bool:
    return any(_is_clock(n) for n in nodes)


def _test_checks_a_state(test: ast.AST) -> bool:
    """Whether a ``while`` test reads anything but the clock and the deadline."""
    if isinstance(test, ast.Constant):
        return False
    if isinstance(test, ast.BoolOp):
        return any(_test_checks_a_state(v) for v in test.values)
    if isinstance(test, ast.Compare):  # one that reads the clock compares times, not states
        return not any(_is_clock(n) for n in ast.walk(test))
    return not _is_clock(test)


def _in_timeout(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` runs inside ``async with asyncio.timeout(...)`` of its function."""
    up = parents.get(id(node))
    while up is not None and not isinstance(up, _SCOPES):
        if isinstance(up, ast.AsyncWith | ast.With) and any(
                isinstance(i.context_expr, ast.Call) and isinstance(i.context_expr.func, ast.Attribute)
                and i.context_expr.func.attr in ("timeout", "timeout_at") for i in up.items):
            return True
        up = parents.get(id(up))
    return False


def _in_try(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` is in the body of a ``try`` with a handler, in its function: an
    exception its body raises (the state reached) ends it."""
    child, up = node, parents.get(id(node))
    while up is not None and not isinstance(up, _SCOPES):
        if isinstance(up, ast.Try) and up.handlers and any(child is s for s in up.body):
            return True
        child, up = up, parents.get(id(up))
    return False


def _is_poll(loop: ast.AST, parents: dict[int, ast.AST]) -> bool:
    own = [n for part in (getattr(loop, "body", []) + getattr(loop, "orelse", [])) for n in _own_nodes(part)]
    exits = any(isinstance(n, ast.Break | ast.Return | ast.Raise | ast.Assert) for n in own) or (
        _in_try(loop, parents) and any(isinstance(n, ast.Call) and not _is_sleep(n, set()) and not _is_clock(n)
                                       for n in own))
    if isinstance(loop, ast.While):
        bounded = _has_clock(_own_nodes(loop.test)) or _has_clock(own) or _in_timeout(loop, parents)
        return bounded and (exits or _test_checks_a_state(loop.test))
    return exits  # a for loop: bounded by what it iterates over


def _marked(lines: list[str], lineno: int) -> bool:
    for i in (lineno - 1, lineno - 2):
        if 0 <= i < len(lines):
            m = MARK.search(lines[i])
            if m and m.group(1):
                return True
    return False


def straight_sleeps(source: str) -> list[tuple[int, str]]:
    """(line, text) for each sleep statement in ``source`` that is neither in a polling
    loop nor marked ``# time is the point: ...``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    bare = _sleep_names(tree)
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and _is_sleep(node.value, bare)):
            continue
        if _marked(lines, node.lineno):
            continue
        up = parents.get(id(node))
        polled = False
        while up is not None and not isinstance(up, _SCOPES):
            if isinstance(up, _LOOPS) and _is_poll(up, parents):
                polled = True
                break
            up = parents.get(id(up))
        if not polled:
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_test_sleeps_for_a_state() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if ".venv" in path.parts:
            continue
        for line, text in straight_sleeps(path.read_text()):
            found.append(f"{path.relative_to(TESTS.parent)}:{line}: {text}")
    assert not found, (
        "sleeps that wait for a state: poll the state with a deadline or wait for the daemon's "
        "log line (tests/daemon_logs.py); a sleep whose length is the point says so with "
        "'# time is the point: <why>'\n" + "\n".join(found))


def test_the_scan_refuses_straight_sleeps() -> None:
    refused = [
        "import time\ntime.sleep(0.3)\n",
        "import time\ndef f():\n    start()\n    time.sleep(0.3)  # past the spawn\n",
        "from time import sleep\nsleep(1)\n",
        "from time import sleep as nap\nnap(1)\n",
        # a while without a deadline can hang
        "import time\nwhile not done():\n    time.sleep(0.1)\n",
        # a deadline loop that cannot end on a state is a straight sleep
        "import time\nwhile time.monotonic() < deadline:\n    time.sleep(0.1)\n",
        "import time\nwhile time.monotonic() < t0 + 5:\n    time.sleep(0.1)\n",
        # a try around it ends nothing when nothing in the loop can raise the state
        "import time\ntry:\n    while time.monotonic() < deadline:\n        time.sleep(0.1)\nexcept OSError:\n    pass\n",
        # pacing without an exit
        "import time\nfor _ in range(5):\n    poke()\n    time.sleep(1)\n",
        # a loop outside the function the sleep is in does not count
        "import time\nwhile time.monotonic() < deadline:\n    def f():\n        time.sleep(1)\n    if f(): break\n",
        # the mark needs its why
        "import time\ntime.sleep(2)  # time is the point:\n",
        "import time\ntime.sleep(2)  # time is the point\n",
        # asyncio's straight sleeps too
        "import asyncio\nasync def f():\n    await asyncio.sleep(0.3)  # the session is under way\n",
        "import asyncio\nasync def f():\n    while not done():\n        await asyncio.sleep(0.05)\n",
    ]
    for src in refused:
        assert straight_sleeps(src), src


def test_the_scan_accepts_polls_and_marked_sleeps() -> None:
    accepted = [
        "import time\nwhile time.monotonic() < deadline:\n    if done():\n        break\n    time.sleep(0.1)\n",
        "import time\nwhile not done():\n    assert time.monotonic() < deadline\n    time.sleep(0.05)\n",
        "import time\nwhile not done() and time.monotonic() < t0 + 5:\n    time.sleep(0.05)\n",
        "import time\nfor _ in range(50):\n    if done():\n        break\n    time.sleep(0.1)\n",
        "import time\ndef f():\n    for _ in range(50):\n        if done():\n            return 1\n        time.sleep(0.1)\n",
        # the state reached raises, and the try around the loop ends it
        "import os, time\ntry:\n    while time.monotonic() < deadline:\n        os.kill(pid, 0)\n"
        "        time.sleep(0.05)\nexcept OSError:\n    pass\n",
        "import time\ntime.sleep(2)  # time is the point: the lease must expire\n",
        "import time\n# time is the point: the lease must expire\ntime.sleep(2)\n",
        # a sleep in a job's script is the job's, not the test's
        "SCRIPT = 'import time; time.sleep(5)'\n",
        # an expression that is not a bare statement (a sleep handed on) is not one
        "import time\nf = lambda: time.sleep(1)\n",
        # a yield to the loop is no wait
        "import asyncio\nasync def f():\n    await asyncio.sleep(0)\n",
        # asyncio's own deadline bounds a poll
        "import asyncio\nasync def f():\n    async with asyncio.timeout(5):\n"
        "        while not done():\n            await asyncio.sleep(0.02)\n",
    ]
    for src in accepted:
        assert not straight_sleeps(src), src
