"""The job side of ``roost.futures``, and the file format both sides share.

A job runs ``python -B roost_futures_runner.py TASK.in TASK.result`` in its
sandbox, with this file (under that name) and the ``cloudpickle`` package
transferred beside it. It therefore imports nothing but the standard library
and ``cloudpickle`` (found in the sandbox: the script's directory is first on
``sys.path``), so the execute host needs only a Python of the client's minor
version (code objects do not travel between minor versions; the runner checks).

``TASK.in`` (the client writes it with :func:`encode_calls`) is a pickled dict:
``version``, ``python`` (the client's ``(major, minor)``), ``functions`` (each
cloudpickled once) and ``calls``, one ``(function index, cloudpickled (args,
kwargs))`` each: pickled apart, so that a call that cannot be loaded (a module
missing on the execute host) fails alone.

``TASK.result`` (written here, read by :func:`read_results`) is a pickled dict:
``version`` and either ``results``, one entry per call in order, ``("ok", bytes)``
(the cloudpickled return value) or ``("error", (bytes | None, type name, message,
traceback text))`` (the exception cloudpickled when it can be), or ``fatal``, one
such error tuple when no call could be run at all (a wrong Python, an unreadable
task file). The runner exits 0 whenever it wrote the result file: the calls'
exceptions travel in it, not in the exit code.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from typing import Any

import cloudpickle

VERSION = 1
#: the name the runner has in a job's sandbox
SCRIPT_NAME = "roost_futures_runner.py"

ErrorInfo = tuple[bytes | None, str, str, str]


def encode_calls(calls: list[tuple[Any, tuple[Any, ...], dict[str, Any]]],
                 functions: dict[int, bytes] | None = None) -> bytes:
    """A task file's bytes for ``calls`` (``(fn, args, kwargs)`` each); raises what
    cloudpickle raises for an argument it cannot pickle. Each distinct function is
    pickled once; ``functions`` (``id(fn)`` -> its pickle) keeps them for the next
    task of a batch, whose functions must stay alive meanwhile."""
    cache = {} if functions is None else functions
    index: dict[int, int] = {}
    fn_blobs: list[bytes] = []
    entries: list[tuple[int, bytes]] = []
    for fn, args, kwargs in calls:
        key = id(fn)
        if key not in index:
            blob = cache.get(key)
            if blob is None:
                blob = cache[key] = cloudpickle.dumps(fn)
            index[key] = len(fn_blobs)
            fn_blobs.append(blob)
        entries.append((index[key], cloudpickle.dumps((args, kwargs))))
    return pickle.dumps(
        {"version": VERSION, "python": tuple(sys.version_info[:2]), "functions": fn_blobs,
         "calls": entries},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def error_info(exc: BaseException) -> ErrorInfo:
    """An exception as it travels: itself cloudpickled (None when it cannot be, or
    cannot be loaded back), its type's name, its message and its traceback text."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        data: bytes | None = cloudpickle.dumps(exc)
        pickle.loads(data)  # an exception whose __init__ needs other arguments fails here
    except Exception:
        data = None
    name = type(exc).__module__ + "." + type(exc).__qualname__
    if type(exc).__module__ == "builtins":
        name = type(exc).__qualname__
    return data, name, str(exc), tb


LOAD_HINT = ("roost.futures: this execute host could not load the call; a module it cannot "
             "import must be shipped (Executor(input_files=[...])) or pickled by value "
             "(Executor(by_value=[module]))")


def _noted(e: Exception) -> Exception:
    """``e`` with a note saying how to ship what could not be loaded."""
    if isinstance(e, ImportError | AttributeError) and hasattr(e, "add_note"):
        e.add_note(LOAD_HINT)
    return e


def run_calls(data: bytes) -> dict[str, Any]:
    """What the result file holds for the task file ``data``."""
    try:
        task = pickle.loads(data)
        version = task.get("version")
        if version != VERSION:
            raise RuntimeError(f"task file format {version}, this runner reads {VERSION}")
        client = tuple(task.get("python") or ())
        here = tuple(sys.version_info[:2])
        if client != here:
            raise RuntimeError(
                f"the worker runs Python {here[0]}.{here[1]} ({sys.executable}) but the client "
                f"pickled its calls with Python {'.'.join(map(str, client))}: cloudpickled code "
                "needs the same minor version (Executor(python=...))")
        functions = list(task["functions"])
        calls = list(task["calls"])
    except Exception as e:
        return {"version": VERSION, "fatal": error_info(e)}
    loaded: dict[int, tuple[bool, Any]] = {}
    results: list[tuple[str, Any]] = []
    for fi, blob in calls:
        if fi not in loaded:
            try:
                loaded[fi] = (True, pickle.loads(functions[fi]))
            except Exception as e:  # every call of this function fails with it
                loaded[fi] = (False, error_info(_noted(e)))
        ok, fn = loaded[fi]
        if not ok:
            results.append(("error", fn))
            continue
        try:
            args, kwargs = pickle.loads(blob)
        except Exception as e:
            results.append(("error", error_info(_noted(e))))
            continue
        try:
            value = fn(*args, **kwargs)
            results.append(("ok", cloudpickle.dumps(value)))
        except BaseException as e:  # a call's SystemExit or KeyboardInterrupt is its result too
            results.append(("error", error_info(e)))
    return {"version": VERSION, "results": results}


def write_atomically(path: str, data: bytes) -> None:
    """``data`` at ``path``, never half-written (a job killed meanwhile leaves no result)."""
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def read_results(data: bytes) -> dict[str, Any]:
    """A result file's dict (ValueError for a file that is not one)."""
    try:
        got = pickle.loads(data)
    except Exception as e:
        raise ValueError(f"not a result file: {type(e).__name__}: {e}") from None
    if not isinstance(got, dict) or got.get("version") != VERSION:
        raise ValueError(f"not a result file of version {VERSION}")
    if "fatal" not in got and not isinstance(got.get("results"), list):
        raise ValueError("a result file without results")
    return got


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {SCRIPT_NAME} TASK.in TASK.result", file=sys.stderr)
        return 2
    src, dst = argv
    try:
        with open(src, "rb") as f:
            data = f.read()
    except OSError as e:
        out: dict[str, Any] = {"version": VERSION, "fatal": error_info(e)}
    else:
        out = run_calls(data)
    write_atomically(dst, pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
