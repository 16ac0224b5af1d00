"""The one exception type of roost.eventlog."""

from __future__ import annotations


class EventLogError(ValueError):
    """A malformed event log: says where (file, line) and what is wrong."""

    def __init__(self, message: str, file: str | None = None, line: int | None = None) -> None:
        self.message = message
        self.file = file
        self.line = line
        where = ""
        if file is not None:
            where = f"{file}:"
        if line is not None:
            where += f"{line}:"
        super().__init__(f"{where} {message}" if where else message)
