"""A starter's signals to its job: the process group (never once the job is reaped and
its group killed: the id may be someone else's then), the cgroup (kill, freeze) and a
container job's container (pause, remove). Which signal goes when is the job-run
machine's (core/jobrun.py); ``Signals``, one of the parts of ``Starter`` (starter.py),
sends them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from roost.core.jobrun import JobRun, RunState
from roost.daemons.startd import container, launch
from roost.daemons.startd.cgroups import JobCgroups

#: the machine's states in which the job has a process (it may have just been reaped)
_LIVE = (RunState.RUNNING, RunState.SUSPENDED, RunState.VACATING)


class Signals:
    """The starter's signals (a part of ``Starter``)."""

    machine: JobRun
    pid: int | None
    name: str
    cgroups: JobCgroups
    container: str | None
    universes: Any
    _reaped: bool
    _reaped_and_killed: bool
    _container_gone: bool
    _exited: asyncio.Future[Any] | None

    def _end_group(self) -> None:
        """Kill what a run that just ended (and was reaped) left in its process group,
        at once, and send that group nothing more until the next run starts. Not the
        cgroup: its kill, asynchronous, could reach the next run started into it."""
        if self.pid is not None and not self._reaped_and_killed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self._reaped_and_killed = True

    def _kill_group(self, sig: int) -> None:
        # Once the job is reaped and its group killed, the group id may name someone
        # else's processes: nothing more is sent.
        if self.pid is None or self._reaped_and_killed:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)
        if sig == signal.SIGKILL:
            self.cgroups.kill(self.name)
            if not self._reaped:
                self._remove_container()  # the runtime's client cannot pass SIGKILL on

    def _pause_container(self, on: bool) -> None:
        """A container job's container frozen or thawed (on the cleaner thread, in order)."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            name = self.container
            launch.on_cleaner(lambda: container.pause(rt, name, on))

    def _remove_container(self) -> None:
        """Kill and remove a container job's container (on the cleaner thread)."""
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            name = self.container
            launch.on_cleaner(lambda: container.remove(rt, name))

    def _alive(self) -> bool:
        """The job's process exists (not yet reaped: its group id is still its own)."""
        return self.machine.state in _LIVE and self._exited is not None and not self._exited.done()

    def _stop(self) -> bool:
        """SIGSTOP the job's process group and freeze its cgroup and container (the
        freezer also stops what left the group, ``setsid``). False: no process to stop."""
        if not self._alive():
            return False
        self._kill_group(signal.SIGSTOP)
        self.cgroups.freeze(self.name, True)
        self._pause_container(True)
        return True

    def _cont(self) -> bool:
        """Thaw the job's cgroup and container, SIGCONT its process group (while it
        lives). False: the job is gone (only thawed, for what it left to die)."""
        self.cgroups.freeze(self.name, False)
        self._pause_container(False)
        if not self._alive():
            return False
        self._kill_group(signal.SIGCONT)
        return True
