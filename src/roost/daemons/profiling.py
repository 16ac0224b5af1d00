"""A daemon run under cProfile for a bench (``ROOST_STARTD_PROFILE``,
``ROOST_SCHEDD_PROFILE``): the event loop thread's CPU time, not wall time on a busy
host, written to the named file now and then (a daemon stopped with SIGKILL writes
nothing at its end) and when it stops. Off unless the variable is set; only then is
cProfile imported."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any


class Profiled:
    """The profiler of one daemon, named by the environment variable that turns it on."""

    def __init__(self, env: str, every: float) -> None:
        self.env, self.every = env, every
        self.profiler: Any = None

    @property
    def on(self) -> bool:
        return self.profiler is not None

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()``, under the profiler when the variable names a file."""
        out = os.environ.get(self.env)
        if not out:
            return fn()
        # lazy: only a profiled run (a bench) pays for the profiler's import
        import cProfile

        self.profiler = cProfile.Profile(time.thread_time)
        try:
            return self.profiler.runcall(fn)
        finally:
            self.profiler.dump_stats(out)

    async def dump(self) -> None:
        """Write the statistics so far (the daemon's ``every`` task)."""
        out = os.environ.get(self.env)
        if self.profiler is not None and out:
            self.profiler.disable()
            try:
                self.profiler.dump_stats(out)
            finally:
                self.profiler.enable()


__all__ = ["Profiled"]
