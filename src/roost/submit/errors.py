"""The one exception type the submit library raises, plus non-fatal warnings.

condor_submit refuses a whole submit description on the first real error and
only warns about things such as unknown commands; roost does the same, so
every message carries the file and line a user must look at.
"""

from __future__ import annotations

from dataclasses import dataclass


class SubmitError(ValueError):
    """A submit description cannot be turned into jobs."""

    def __init__(self, message: str, *, file: str | None = None, line: int = 0) -> None:
        self.message = message
        self.file = file
        self.line = line
        super().__init__(self._format())

    def _format(self) -> str:
        where = self.file or "<submit>"
        if self.line:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class SubmitWarning:
    """Something condor_submit would warn about but still submit."""

    message: str
    file: str | None = None
    line: int = 0

    def __str__(self) -> str:
        where = self.file or "<submit>"
        if self.line:
            where = f"{where}:{self.line}"
        return f"{where}: WARNING: {self.message}"
