"""The master's restart back-off: how long to wait before restarting a daemon that died.

Pure (times are parameters) so the policy is unit-tested without processes.
A daemon that dies again and again is restarted ever more slowly (``constant *
factor**n`` seconds, capped at ``ceiling``), so a daemon that crashes on start
does not spin the host; one that stayed up ``recover`` seconds is forgiven and
the next death is restarted after ``constant`` again.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    constant: float = 1.0
    factor: float = 2.0
    ceiling: float = 60.0
    recover: float = 60.0
    #: consecutive quick deaths so far
    failures: int = 0
    started_at: float | None = None

    def started(self, now: float) -> None:
        self.started_at = now

    def died(self, now: float) -> float:
        """Record a death at ``now``; return the seconds to wait before restarting."""
        if self.started_at is not None and now - self.started_at >= self.recover:
            self.failures = 0
        delay = min(self.ceiling, self.constant * self.factor**self.failures)
        self.failures += 1
        self.started_at = None
        return max(0.0, delay)

    def reset(self) -> None:
        """An operator asked for the restart (RESTART_DAEMON): no penalty."""
        self.failures = 0
