"""The job side of roost.futures and the files both sides share: calls in, results and
exceptions (with their traceback text) out, run in-process and by the system Python
with nothing but the files an executor ships."""

from __future__ import annotations

import copyreg
import os
import pickle
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import cloudpickle
import pytest

from roost.futures import RemoteError, RemoteTraceback, runner
from roost.futures import description as jobdesc
from roost.futures.outcomes import exception_from, outcome


@pytest.fixture(autouse=True)
def _plain_exception_pickling() -> Iterator[None]:
    """Exceptions pickle as in a job's fresh interpreter. ``distributed``, imported by
    other tests in the same pytest worker (dask-jobqueue's), registers a reducer for
    every exception type in ``copyreg``: then an exception that cannot travel does, and
    SystemExit loses its code, and these tests failed whenever their file followed one
    of those on a worker."""
    table = copyreg.dispatch_table
    saved = {k: v for k, v in table.items() if isinstance(k, type) and issubclass(k, BaseException)}
    for k in saved:
        del table[k]
    try:
        yield
    finally:
        table.update(saved)

SYSTEM_PYTHON = "/usr/bin/python3"


def _system_python_minor() -> tuple[int, int] | None:
    try:
        out = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out[0]), int(out[1])


def _run(calls: list) -> list[tuple[bool, object]]:
    got = runner.read_results(pickle.dumps(runner.run_calls(runner.encode_calls(calls))))
    assert "fatal" not in got, got
    return [outcome(e) for e in got["results"]]


class Picky(Exception):
    """An exception whose __init__ needs two arguments: it pickles but does not load back."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a}/{b}")


def _raise_value_error(x: int) -> None:
    raise ValueError(f"bad value {x}")


def test_values_come_back_in_order_each_call_alone() -> None:
    square = lambda x: x * x  # noqa: E731 (a lambda travels by value)
    got = _run([(square, (3,), {}), (divmod, (7, 2), {}), (sorted, ([3, 1, 2],), {"reverse": True}),
                (square, (2.5,), {})])
    assert got == [(True, 9), (True, (3, 1)), (True, [3, 2, 1]), (True, 6.25)]


def test_an_exception_comes_back_as_itself_with_its_traceback_as_cause() -> None:
    got = _run([(_raise_value_error, (4,), {}), (abs, (-1,), {})])
    ok, exc = got[0]
    assert not ok and type(exc) is ValueError and str(exc) == "bad value 4"
    assert isinstance(exc.__cause__, RemoteTraceback)
    tb = str(exc.__cause__)
    assert "Traceback (most recent call last)" in tb and "_raise_value_error" in tb
    assert tb.rstrip().endswith("ValueError: bad value 4")
    assert got[1] == (True, 1)  # the call after it still ran


def test_an_exception_that_cannot_travel_becomes_a_remote_error() -> None:
    def picky() -> None:
        raise Picky(1, 2)

    def unpicklable() -> None:
        e = RuntimeError("holds a lock")
        e.lock = __import__("threading").Lock()  # type: ignore[attr-defined]
        raise e

    (ok1, e1), (ok2, e2) = _run([(picky, (), {}), (unpicklable, (), {})])
    assert not ok1 and isinstance(e1, RemoteError) and e1.type_name.endswith("Picky")
    assert e1.message == "1/2" and "Picky: 1/2" in str(e1.__cause__)
    assert not ok2 and isinstance(e2, RemoteError) and e2.type_name == "RuntimeError"
    assert e2.message == "holds a lock"


def test_a_result_that_does_not_pickle_fails_that_call_only() -> None:
    (ok, exc), second = _run([(lambda: (x for x in ()), (), {}), (len, ("ab",), {})])
    assert not ok and "generator" in str(exc).lower()
    assert isinstance(exc.__cause__, RemoteTraceback)
    assert second == (True, 2)


def test_system_exit_in_a_call_is_its_result_not_the_runners() -> None:
    (ok, exc), = _run([(sys.exit, (3,), {})])
    assert not ok and type(exc) is SystemExit and exc.code == 3


def test_a_call_whose_function_cannot_be_loaded_fails_alone() -> None:
    mod = types.ModuleType("roost_futures_nowhere")
    exec("def f(x):\n    return x\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        data = runner.encode_calls([(mod.f, (1,), {}), (abs, (-2,), {})])  # f by reference
    finally:
        del sys.modules[mod.__name__]
    got = runner.run_calls(data)
    (ok, exc), second = (outcome(e) for e in got["results"])
    assert not ok and isinstance(exc, ModuleNotFoundError) and "roost_futures_nowhere" in str(exc)
    assert runner.LOAD_HINT in str(exc.__cause__)  # the traceback text says what to do
    assert second == (True, 2)


def test_a_function_of_a_registered_module_travels_by_value() -> None:
    mod = types.ModuleType("roost_futures_byvalue")
    exec("K = 10\ndef f(x):\n    return x + K\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    cloudpickle.register_pickle_by_value(mod)
    try:
        data = runner.encode_calls([(mod.f, (1,), {})])
    finally:
        cloudpickle.unregister_pickle_by_value(mod)
        del sys.modules[mod.__name__]
    assert [outcome(e) for e in runner.run_calls(data)["results"]] == [(True, 11)]


@pytest.mark.parametrize(("data", "why"), [
    (b"not a pickle", "UnpicklingError"),
    (pickle.dumps({"version": 99, "python": (3, 11), "calls": []}), "task file format 99"),
    (pickle.dumps({"version": runner.VERSION, "python": (2, 7), "calls": []}), "same minor version"),
])
def test_a_task_the_runner_cannot_use_is_one_fatal_error(data: bytes, why: str) -> None:
    got = runner.run_calls(data)
    assert set(got) == {"version", "fatal"}
    exc = exception_from(got["fatal"])
    assert why in f"{type(exc).__name__}: {exc}"
    assert isinstance(exc.__cause__, RemoteTraceback)


def test_read_results_refuses_what_is_not_a_result_file() -> None:
    for data in (b"", b"junk", pickle.dumps([1, 2]), pickle.dumps({"version": runner.VERSION})):
        with pytest.raises(ValueError):
            runner.read_results(data)


def test_main_writes_a_result_even_for_a_missing_task_file(tmp_path: Path) -> None:
    out = tmp_path / "t.result"
    assert runner.main([str(tmp_path / "missing.in"), str(out)]) == 0
    exc = exception_from(runner.read_results(out.read_bytes())["fatal"])
    assert isinstance(exc, FileNotFoundError)
    assert not list(tmp_path.glob("*.part"))


def test_the_system_python_runs_calls_with_only_the_shipped_files(tmp_path: Path) -> None:
    """What a job does: the executor's directory (runner + cloudpickle's .py files), the
    system Python, no roost and no site cloudpickle, as an unprivileged job would run."""
    minor = _system_python_minor()
    if minor != tuple(sys.version_info[:2]):
        pytest.skip(f"{SYSTEM_PYTHON} is {minor}, not this Python's minor version")
    shipped = jobdesc.prepare_directory(str(tmp_path))
    assert shipped == [runner.SCRIPT_NAME, "cloudpickle"]
    assert not (tmp_path / "cloudpickle" / "__pycache__").exists()
    offset = 5

    def add(x: int) -> int:
        return x + offset  # a closure: pickled by value

    here = sys.modules[__name__]
    calls = [(add, (i,), {}) for i in range(3)] + [(_raise_value_error, (7,), {})]
    by_reference = runner.encode_calls(calls)  # this module is not importable there
    cloudpickle.register_pickle_by_value(here)
    try:
        by_value = runner.encode_calls(calls)
    finally:
        cloudpickle.unregister_pickle_by_value(here)
    results = []
    for data in (by_reference, by_value):
        (tmp_path / "t.in").write_bytes(data)
        done = subprocess.run([SYSTEM_PYTHON, "-B", "-s", runner.SCRIPT_NAME, "t.in", "t.result"],
                              cwd=tmp_path, env={"PYTHONNOUSERSITE": "1"}, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        results.append([outcome(e) for e in runner.read_results((tmp_path / "t.result").read_bytes())["results"]])
    for got in results:
        assert got[:3] == [(True, 5), (True, 6), (True, 7)]
    ok, exc = results[0][3]
    assert not ok and isinstance(exc, ModuleNotFoundError) and __name__.split(".")[0] in str(exc)
    ok, exc = results[1][3]
    assert not ok and type(exc) is ValueError and "bad value 7" in str(exc.__cause__)
    assert not (tmp_path / "__pycache__").exists()  # -B: nothing new but the result goes back
    assert sorted(os.listdir(tmp_path)) == sorted([*shipped, "t.in", "t.result"])


def test_the_runner_imports_only_the_standard_library_and_cloudpickle() -> None:
    import ast

    tree = ast.parse(Path(runner.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names - {"cloudpickle", "__future__"} <= set(sys.stdlib_module_names)


def test_each_function_is_pickled_once_a_task_and_a_batch() -> None:
    def double(x: int) -> int:
        return 2 * x

    cache: dict[int, bytes] = {}
    data = runner.encode_calls([(double, (i,), {}) for i in range(3)] + [(abs, (-1,), {})], cache)
    task = pickle.loads(data)
    assert len(task["functions"]) == 2 and [fi for fi, _ in task["calls"]] == [0, 0, 0, 1]
    blob = cache[id(double)]
    again = pickle.loads(runner.encode_calls([(double, (5,), {})], cache))
    assert again["functions"] == [blob] and len(cache) == 2
    assert [outcome(e) for e in runner.run_calls(data)["results"]] == [(True, 0), (True, 2), (True, 4),
                                                                        (True, 1)]
