"""htcondor2's tool logging: ``enable_log`` sends this process's debug messages to
``<SUBSYS>_LOG`` (``TOOL_LOG`` unless :func:`set_subsystem` said otherwise),
``enable_debug`` to stderr instead, and ``log`` adds a message, written when its category is
on in ``<SUBSYS>_DEBUG`` (``D_ALWAYS``, ``D_ERROR`` and ``D_STATUS`` always are;
``D_FULLDEBUG`` turns on ``FullDebug``; ``D_JOB``, ``D_ALL`` … the others, with ``:2``
for their verbose level). roost's own client messages (the ``roost`` loggers) go to
the same places. The header is the time (``SubSecond``, ``PID`` as asked); the
``(fd:N) (pid:N) (D_CAT)`` fields HTCondor adds under ``D_ALL`` are not written."""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import TextIO

from roost.htcondor2.enums import LogLevel
from roost.htcondor2.errors import HTCondorException
from roost.htcondor2.param import param

_CATEGORY_MASK = 0x1F
_ALWAYS_ON = {int(LogLevel.Always), int(LogLevel.Error), int(LogLevel.Status)}
_CATEGORY_NAMES = {int(m.value): m.name.upper() for m in LogLevel if int(m.value) <= _CATEGORY_MASK}


class _Sinks:
    """Where messages go (one place at a time, as in htcondor2: the log file after
    ``enable_log``, stderr after ``enable_debug``) and the flags in force."""

    def __init__(self) -> None:
        self.file: TextIO | None = None
        self.file_path: str | None = None
        self.to_stderr = False
        self.flags: set[str] = set()
        self.handler: logging.Handler | None = None

    def stream(self) -> TextIO | None:
        return sys.stderr if self.to_stderr else self.file


_sinks = _Sinks()


class _ToolHandler(logging.Handler):
    """roost's client loggers into the tool's log and stderr, in HTCondor's line form."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.INFO and not _full_debug():
            return
        _write(time.time(), f"{record.getMessage()}", 0)


def _full_debug() -> bool:
    """D_FULLDEBUG is D_ALWAYS's verbose level (D_ALL alone does not include it)."""
    return bool({"D_FULLDEBUG", "D_ALWAYS:2", "D_ALL:2"} & _sinks.flags)


def _subsys_knob(suffix: str) -> str | None:
    return param.get(f"{param.subsystem}_{suffix}")


def _log_path() -> str:
    """``<SUBSYS>_LOG``, else HTCondor's default for a tool: ``$(LOG)/ToolLog``."""
    path = _subsys_knob("LOG")
    if path:
        return path
    log_dir = param.get("LOG")
    if not log_dir:
        raise HTCondorException(f"neither {param.subsystem}_LOG nor LOG is set: no log file to write")
    return os.path.join(log_dir, f"{param.subsystem.capitalize()}Log")


def _parse_flags(text: str | None) -> set[str]:
    return {w.upper() for w in (text or "").replace(",", " ").split()}


def _install_handler() -> None:
    logger = logging.getLogger("roost")
    if _sinks.handler is None:
        _sinks.handler = _ToolHandler()
        logger.addHandler(_sinks.handler)
    # roost's debug records only when D_FULLDEBUG asks for them (a level set on the
    # logger reaches the application's own handlers too)
    wanted = logging.DEBUG if _full_debug() else logging.INFO
    if logger.level == logging.NOTSET or logger.level > wanted:
        logger.setLevel(wanted)


def enable_log() -> None:
    """Write debug messages to ``<SUBSYS>_LOG`` (default ``$(LOG)/ToolLog``; flags:
    ``<SUBSYS>_DEBUG``), in place of stderr. A file that cannot be opened is an
    HTCondorException (HTCondor's tools exit)."""
    path = _log_path()
    if _sinks.file is not None and _sinks.file_path != path:
        _sinks.file.close()
        _sinks.file = None
    if _sinks.file is None:
        try:
            _sinks.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 -- open until the process ends
        except OSError as e:
            raise HTCondorException(f"cannot open {path}: {e.strerror}") from None
        _sinks.file_path = path
    _sinks.to_stderr = False
    _sinks.flags = _parse_flags(_subsys_knob("DEBUG"))
    _install_handler()


def enable_debug(flags: str | None = None) -> None:
    """Write debug messages to stderr, in place of the log file, with ``flags``
    (default ``<SUBSYS>_DEBUG``)."""
    if flags is not None and not isinstance(flags, str):
        raise TypeError("flags must be a string")
    _sinks.to_stderr = True
    _sinks.flags = _parse_flags(flags if flags is not None else _subsys_knob("DEBUG"))
    _install_handler()


def disable_debug() -> None:
    """Back to the default flags: only ``Always``, ``Error`` and ``Status`` messages
    are written (where they went before), as in htcondor2."""
    _sinks.flags = set()
    _install_handler()


def _enabled(level: int) -> bool:
    category = level & _CATEGORY_MASK
    verbose = bool(level & int(LogLevel.FullDebug))
    flags = _sinks.flags
    if category == int(LogLevel.Always):
        return not verbose or _full_debug()
    name = f"D_{_CATEGORY_NAMES.get(category, str(category))}"
    if verbose:
        return bool({f"{name}:2", "D_ALL:2"} & flags)
    return category in _ALWAYS_ON or any(f.split(":")[0] in (name, "D_ALL") for f in flags)


def _write(now: float, message: str, level: int) -> None:
    stream = _sinks.stream()
    if stream is None:
        return
    header = ""
    if not level & int(LogLevel.NoHeader):
        header = time.strftime("%m/%d/%y %H:%M:%S", time.localtime(now))
        if level & int(LogLevel.SubSecond):
            header += f".{int(now * 1000) % 1000:03d}"
        header += f" (pid:{os.getpid()}) " if level & int(LogLevel.PID) else " "
    line = header + message + ("" if message.endswith("\n") else "\n")
    stream.write(line)
    stream.flush()


def log(level: LogLevel | int, message: str) -> None:
    """Write ``message`` (to the log file or stderr, whichever was enabled last) when its category
    is on; ``level`` is a :class:`LogLevel` category or'd with flags."""
    if not isinstance(level, int):
        raise TypeError("level must be a LogLevel or an int")
    if not isinstance(message, str):
        raise TypeError("message must be a string")
    if _enabled(int(level)):
        _write(time.time(), message, int(level))
