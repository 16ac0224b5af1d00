"""A starter's sandbox and record: the directory made root-owned (and its cgroups,
memory and CPU limits, the keeper's exit file), the job's record in
``execute/.jobs/<sandbox>`` by which a restarted startd adopts it, and their removal
once the final report is acknowledged. ``Sandbox`` is one of the parts of ``Starter``
(starter.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from typing import Any

from roost.daemons.startd import container, launch, startfault
from roost.daemons.startd.cgroups import JobCgroups
from roost.daemons.startd.cpushare import CpuShares
from roost.daemons.startd.jobspec import JobSpec
from roost.daemons.startd.memlimit import MemoryLimits
from roost.daemons.startd.sandboxfiles import remove_tree, write_all

log = logging.getLogger("roost.daemons.startd.starter")


class Sandbox:
    """The starter's sandbox, cgroups and record (a part of ``Starter``)."""

    spec: JobSpec
    name: str
    sandbox: str
    marker: str
    exit_path: str
    slot_name: str
    job_ad_text: str
    memory_limit: int | None
    cpus: int
    cgroups: JobCgroups
    memory: MemoryLimits
    cpu: CpuShares
    container: str | None
    universes: Any
    state: str
    _container_gone: bool
    _exit_fd: int | None
    _mkdir: asyncio.Future[None] | None
    _record: dict[str, Any]

    def _make_sandbox(self) -> None:
        # Root-owned until the inputs are in (see _prepare): nothing else can meddle.
        os.mkdir(self.sandbox, 0o700)
        self.cgroups.create(self.name)
        self.memory.create(self.name, self.memory_limit, self.slot_name)
        self.cpu.create(self.name, self.cpus, self.slot_name)
        self._exit_fd = os.open(self.exit_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        # its blocks taken now: a job that fills the disk cannot stop its keeper from
        # writing its end there (the keeper overwrites these blanks in place)
        os.pwrite(self._exit_fd, b" " * launch.EXIT_RECORD_SIZE, 0)
        if self.spec.transfer:
            path = os.path.join(self.sandbox, ".job.ad")
            with open(path, "w") as f:
                f.write(self.job_ad_text)
            self._chown(path)

    def _remove_sandbox(self) -> None:
        mkdir = self._mkdir
        if mkdir is not None and not mkdir.done():  # cancelled while it was being made
            mkdir.add_done_callback(lambda _: launch.on_cleaner(self._clean))
        elif mkdir is not None:
            launch.on_cleaner(self._clean)

    def _clean(self) -> None:
        """Remove the job's cgroup (killing stragglers), sandbox and record; on the
        cleaner thread. The record goes first: a startd that dies half-way must not
        adopt a job whose sandbox is gone (or whose report was acknowledged)."""
        for path in (self.marker, self.exit_path):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self._close_exit()
        rt = self.universes.runtime if self.universes is not None else None
        if self.container is not None and rt is not None and not self._container_gone:
            container.remove(rt, self.container)  # its client died before the container
        self.cgroups.remove(self.name)
        self.memory.remove(self.name)
        self.cpu.remove(self.name)
        remove_tree(self.sandbox)

    def _close_exit(self) -> None:
        if self._exit_fd is not None:
            os.close(self._exit_fd)
            self._exit_fd = None

    def _read_exit(self) -> tuple[int, Any] | None:
        """What the job's keeper wrote to its exit file; None: nothing (it died first)."""
        try:
            fd = os.open(self.exit_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            if startfault.is_shortage(e):
                log.warning("job %s: cannot read its end: %s", self.spec.job_id, e)
            return None
        try:
            return launch.read_exit(fd)
        finally:
            os.close(fd)

    def save_record(self, text: str | None = None) -> None:
        """Write the job's record (atomically: a crash leaves the old one or the new)."""
        tmp = self.marker + ".new"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                write_all(fd, (text or json.dumps(self._record, separators=(",", ":"))).encode())
            finally:
                os.close(fd)
            os.replace(tmp, self.marker)
        except OSError as e:
            log.warning("cannot record job %s's processes: %s", self.spec.job_id, e)

    def claim_changed(self, changes: dict[str, Any]) -> None:
        """The claim's schedd moved (RECONNECT): the record says where to report."""
        if self._record and self.state in ("running", "exited"):
            self._record.setdefault("claim", {}).update(changes)
            text = json.dumps(self._record, separators=(",", ":"))  # here: the loop owns the dict
            launch.on_cleaner(lambda: self.save_record(text))

