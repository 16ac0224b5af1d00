"""Job progress for people: a redrawn bar on a terminal, plain lines otherwise.

On a terminal the bar is redrawn in place (``\\r``); into a file or pipe a line
is written only when the numbers change, and at most once a second, so logs
of a long wait stay short.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from roost.vocabulary import JobStatus


class Progress:
    def __init__(self, out: TextIO | None = None, width: int = 30, min_interval: float = 1.0) -> None:
        self.out = out or sys.stdout
        self.tty = self.out.isatty()
        self.width = width
        self.min_interval = min_interval
        self._last_text = ""
        self._last_time = 0.0
        self._start = time.monotonic()

    def text(self, done: int, total: int, counts: dict[str, Any]) -> str:
        running, idle, held = (int(counts.get(JobStatus.TOTALS[s], 0) or 0)
                               for s in (JobStatus.RUNNING, JobStatus.IDLE, JobStatus.HELD))
        extra = f"{running} running, {idle} idle" + (f", {held} held" if held else "")
        return f"{done}/{total} done ({extra})"

    def update(self, done: int, total: int, counts: dict[str, Any] | None = None, final: bool = False) -> None:
        text = self.text(done, total, counts or {})
        now = time.monotonic()
        if self.tty:
            frac = done / total if total else 1.0
            filled = int(frac * self.width)
            bar = "#" * filled + "-" * (self.width - filled)
            elapsed = now - self._start
            self.out.write(f"\r[{bar}] {frac * 100:5.1f}% {text} {elapsed:6.1f}s\x1b[K")
            if final:
                self.out.write("\n")
            self.out.flush()
            return
        if text == self._last_text:
            return
        if not final and now - self._last_time < self.min_interval and self._last_text:
            return
        self.out.write(text + "\n")
        self.out.flush()
        self._last_text, self._last_time = text, now
