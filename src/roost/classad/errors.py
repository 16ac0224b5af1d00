"""The one exception type the ClassAd library raises for bad input."""

from __future__ import annotations


class ClassAdSyntaxError(ValueError):
    """A ClassAd text could not be parsed.

    Carries where (file, line, column; 1-based) and a caret excerpt so the
    message alone tells a user what to fix.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str = "",
        line: int = 1,
        column: int = 1,
        file: str | None = None,
    ) -> None:
        self.message = message
        self.text = text
        self.line = line
        self.column = column
        self.file = file
        super().__init__(self._format())

    @property
    def excerpt(self) -> str:
        lines = self.text.splitlines() or [""]
        src = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        return f"{src}\n{' ' * (self.column - 1)}^"

    def _format(self) -> str:
        where = f"{self.file}:" if self.file else ""
        head = f"{where}{self.line}:{self.column}: {self.message}"
        return f"{head}\n{self.excerpt}" if self.text else head
