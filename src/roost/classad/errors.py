"""The ClassAd library's exceptions: the one it raises for bad input, and a failed evaluation.

Here, at the bottom of the package, so that every part (parser, code generator,
evaluator) can raise them without importing one another.
"""

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

    def with_file(self, file: str | None) -> ClassAdSyntaxError:
        """A copy naming ``file``, for callers that parse a file's text and know its name."""
        return type(self)(self.message, text=self.text, line=self.line, column=self.column, file=file)

    def with_position(self, text: str, line: int, column: int) -> ClassAdSyntaxError:
        """A copy re-anchored in a larger ``text`` (e.g. a value parsed out of a file)."""
        return type(self)(self.message, text=text, line=line, column=column, file=self.file)

    @property
    def excerpt(self) -> str:
        lines = self.text.splitlines() or [""]
        src = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        return f"{src}\n{' ' * (self.column - 1)}^"

    def _format(self) -> str:
        where = f"{self.file}:" if self.file else ""
        head = f"{where}{self.line}:{self.column}: {self.message}"
        return f"{head}\n{self.excerpt}" if self.text else head


class EvaluationFailed(Exception):
    """The evaluation itself failed (too deep a reference chain), as HTCondor's Evaluate() returning false."""
