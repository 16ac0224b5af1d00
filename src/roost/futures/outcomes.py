"""What a call's future ends with: its value, its exception brought back, or why its
job gave no result (held, removed by someone else, ended without writing one).

A call's exception is raised as itself when it pickles both ways, else as a
:class:`RemoteError` naming its type and message; either way its ``__cause__`` is a
:class:`RemoteTraceback` holding the traceback text from the execute host, as
``concurrent.futures.ProcessPoolExecutor`` does for its workers.
"""

from __future__ import annotations

import pickle
from typing import Any

from roost.futures.runner import ErrorInfo


class RemoteTraceback(Exception):
    """The traceback of a call's exception, as text from the execute host."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


class RemoteError(Exception):
    """A call raised an exception that could not travel as itself (it would not
    pickle, or its class cannot be loaded here): ``type_name`` and ``message`` say what."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name = type_name
        self.message = message


class JobError(Exception):
    """A call's job left without a result for it; ``job_id`` is the job (``"12.3"``)."""

    def __init__(self, message: str, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class JobHeldError(JobError):
    """The call's job was put on hold (the executor removed it): ``reason`` says why."""


class JobRemovedError(JobError):
    """The call's job was removed by someone else than this executor."""


def exception_from(info: ErrorInfo) -> BaseException:
    """The exception an error entry of a result file describes, its traceback as cause."""
    data, type_name, message, tb = info
    exc: BaseException | None = None
    if data is not None:
        try:
            got = pickle.loads(data)
            if isinstance(got, BaseException):
                exc = got
        except Exception:
            exc = None
    if exc is None:
        exc = RemoteError(type_name, message)
    exc.__cause__ = RemoteTraceback(tb)
    return exc


def outcome(entry: Any) -> tuple[bool, Any]:
    """``(True, value)`` or ``(False, exception)`` for one entry of a result file."""
    kind, payload = entry
    if kind == "ok":
        try:
            return True, pickle.loads(payload)
        except Exception as e:
            err = RemoteError(type(e).__name__, f"the call's result could not be loaded here: {e}")
            return False, err
    if kind == "error":
        return False, exception_from(payload)
    return False, RemoteError("ValueError", f"unknown result entry {kind!r}")
