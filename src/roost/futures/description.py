"""The jobs an executor submits: their directory and the submit text of one batch.

Every batch of calls is one cluster: ``queue Task from ( ... )`` with one item per
task (a task is one call, or ``chunksize`` calls of a ``map``). A job runs the
runner on its task file and sends back every new file of its sandbox, which is the
task's result file; its stdout and stderr land beside it, its events in the
executor's one user log, which the executor follows.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable

import cloudpickle

from roost.futures import runner

#: the attribute every job of an executor carries, its value the executor's tag
TAG_ATTR = "RoostFuturesExecutor"
LOG_NAME = "jobs.log"


def prepare_directory(path: str) -> list[str]:
    """Put the runner and cloudpickle (its ``.py`` files, no byte code) in ``path``;
    the names, relative to it, every job transfers."""
    shutil.copyfile(runner.__file__, os.path.join(path, runner.SCRIPT_NAME))
    src = os.path.dirname(cloudpickle.__file__)
    dst = os.path.join(path, "cloudpickle")
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if name.endswith(".py"):
            shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
    return [runner.SCRIPT_NAME, "cloudpickle"]


#: submit commands the executor sets itself: ``submit=`` may not change them
RESERVED = frozenset({"executable", "arguments", "transfer_executable", "transfer_input_files",
                      "should_transfer_files", "when_to_transfer_output", "initialdir", "output",
                      "error", "log", "queue", "universe", "transfer_output_files"})


def _quoted(value: str) -> str:
    """An ``arguments`` value in the new syntax (a literal double quote doubled)."""
    return '"' + value.replace('"', '""') + '"'


def check_path(path: str, what: str) -> str:
    """``path`` made absolute; ValueError for one a submit file cannot list."""
    path = os.path.abspath(path)
    if any(c in path for c in ",\n\r\"'") or path != path.strip():
        raise ValueError(f"{what} {path!r}: a path with a comma, a quote, a line break or "
                         "surrounding spaces cannot be listed in transfer_input_files")
    return path


def batch_text(*, directory: str, python: str, tasks: Iterable[str], tag: str,
               shipped: list[str], input_files: list[str], request_cpus: int,
               request_memory: str | None, extra: dict[str, str]) -> str:
    """The submit text of one cluster running ``tasks`` (their names)."""
    lines = {
        "universe": "vanilla",
        "executable": python,
        "transfer_executable": "false",
        "arguments": _quoted(f"-B {runner.SCRIPT_NAME} $(Task).in $(Task).result"),
        "should_transfer_files": "YES",
        "when_to_transfer_output": "ON_EXIT",
        "transfer_input_files": ", ".join([*shipped, "$(Task).in", *input_files]),
        "initialdir": directory,
        "output": "$(Task).stdout",
        "error": "$(Task).stderr",
        "log": LOG_NAME,
        "request_cpus": str(int(request_cpus)),
        f"+{TAG_ATTR}": f'"{tag}"',
    }
    if request_memory is not None:
        lines["request_memory"] = str(request_memory)
    lines.update(extra)
    body = "".join(f"{k} = {v}\n" for k, v in lines.items())
    names = list(tasks)
    return body + "queue Task from (\n" + "".join(f"{n}\n" for n in names) + ")\n"
