"""The one exception type of roost.config."""

from __future__ import annotations


class ConfigError(Exception):
    """A problem in a configuration source, located by file and line.

    ``line`` is 0 when the problem has no line (a missing file, an
    environment override).  ``str()`` gives one line a user can act on:
    ``file:line: message``.
    """

    def __init__(self, file: str, line: int, message: str) -> None:
        self.file = file
        self.line = line
        self.message = message
        where = f"{file}:{line}" if line else file
        super().__init__(f"{where}: {message}")
