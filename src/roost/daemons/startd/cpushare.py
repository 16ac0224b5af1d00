"""Each job's share of the CPUs: ``request_cpus`` as a weight, so that on a busy
machine a job that asked for 4 CPUs gets 4 times the CPU time of a 1-CPU job, and a
job that runs more threads than it asked for takes its extra only from idle CPUs
(HTCondor's default: a share, not a hard quota).

Two mechanisms, whichever the host has:

- cgroup v2 with the ``cpu`` controller delegated: the job's own cgroup
  (:mod:`roost.daemons.startd.cgroups`) gets ``cpu.weight`` = 100 per CPU.
- cgroup v1's ``cpu`` hierarchy (this machine family): a directory per static slot
  (kept from job to job) or per dynamic slot, under our own, with ``cpu.shares`` =
  1024 per CPU; the job's processes move in ``STARTD_MEMORY_MOVE_DELAY`` after its
  start on the same mover threads as the memory cgroup's (a v1 move waits for an RCU
  grace period: a job that ends sooner never pays, nor does anyone else).

``STARTD_CPU_SHARES = False`` turns it off. Where neither exists the slot ad says so
(``CpuEnforcement``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from roost.daemons.startd.cgroups import child_dirs, make_writable_dir, own_v1_path, startd_dir
from roost.daemons.startd.memlimit import movers

log = logging.getLogger(__name__)

V1_ROOT = "/sys/fs/cgroup/cpu"
SHARES_PER_CPU = 1024  # v1 cpu.shares (its default for one task group)
WEIGHT_PER_CPU = 100  # v2 cpu.weight (its default), 1..10000


class CpuShares:
    """Per-job CPU weights, or nothing (``mechanism`` says which)."""

    def __init__(self, base: str | None, version: int, move_delay: float = 0.05) -> None:
        self.base = base
        self.version = version
        self.move_delay = move_delay
        self._key: dict[str, str] = {}  # job (sandbox) name -> its v1 directory (its slot's)
        self._shares: dict[str, int] = {}  # v1 directory -> the shares written there

    @property
    def mechanism(self) -> str:
        if self.base is None:
            return "none (not limited)"
        if self.version == 2:
            return "cgroup v2 cpu.weight (100 per requested CPU)"
        return "cgroup v1 cpu.shares (1024 per requested CPU)"

    @classmethod
    def detect(cls, execute_dir: str, v2_base: str | None, enabled: bool = True,
               move_delay: float = 0.05) -> CpuShares:
        if not enabled:
            return cls(None, 0)
        if v2_base is not None:
            with contextlib.suppress(OSError):
                with open(os.path.join(v2_base, "cgroup.controllers")) as f:
                    if "cpu" in f.read().split():
                        with open(os.path.join(v2_base, "cgroup.subtree_control"), "w") as f:
                            f.write("+cpu")
                        return cls(v2_base, 2, move_delay)
        own = own_v1_path("cpu")
        if own is None or not os.path.isdir(V1_ROOT):
            return cls(None, 0)
        base = startd_dir(os.path.join(V1_ROOT, own.lstrip("/")), execute_dir)
        try:
            make_writable_dir(base)
        except OSError as e:
            log.info("cgroup v1 cpu at %s is not writable (%s): CPU is not shared out", base, e.strerror)
            return cls(None, 0)
        return cls(base, 1, move_delay)

    def sweep(self, keep: frozenset[str] = frozenset()) -> list[str]:
        """Remove the v1 directories a previous startd left, but adopted jobs' (``keep``)."""
        if self.base is None or self.version != 1:
            return []
        gone = []
        for name in child_dirs(self.base):
            if name not in keep:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(self.base, name))
                    gone.append(name)
        return gone

    def path(self, name: str) -> str | None:
        if self.base is None:
            return None
        return os.path.join(self.base, self._key.get(name, name))

    def create(self, name: str, cpus: int, slot: str | None = None) -> None:
        """The job's weight (blocking: on the spawner thread; a failure costs only the
        sharing). v2: in the job's own cgroup, which exists by now."""
        if self.base is None:
            return
        try:
            if self.version == 2:
                self._write(os.path.join(self.base, name), "cpu.weight",
                            min(max(WEIGHT_PER_CPU * max(cpus, 1), 1), 10000))
                return
            key = slot or name
            self._key[name] = key
            path = os.path.join(self.base, key)
            shares = max(SHARES_PER_CPU * max(cpus, 1), 2)
            if not os.path.isdir(path):
                os.makedirs(path, exist_ok=True)
                self._shares.pop(key, None)
            if self._shares.get(key) != shares:
                self._write(path, "cpu.shares", shares)
                self._shares[key] = shares
        except OSError as e:
            log.warning("cannot set the CPU share of job %s: %s", name, e.strerror)

    def adopt(self, name: str, slot: str) -> None:
        """A job a previous startd started: its v1 directory is its slot's."""
        if self.version == 1:
            self._key[name] = slot

    @staticmethod
    def _write(path: str, knob: str, value: int) -> None:
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(value))

    def enter(self, name: str, pid: int, alive: Callable[[], bool],
              later: Callable[[float, Callable[[], Any]], Any],
              pids: Callable[[], list[int]] | None = None) -> None:
        """v1: move the job's processes in ``move_delay`` seconds from now, if it still
        runs (v2: it is in its cgroup already)."""
        path = self.path(name)
        if path is None or self.version != 1:
            return

        def move() -> None:
            if not alive():
                return
            with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            for p in pids() if pids is not None else []:
                if p != pid:
                    with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.procs"), "w") as f:
                        f.write(str(p))

        def soon() -> None:
            if alive():  # a job already gone costs no thread hand-off
                movers().submit(move)

        later(self.move_delay, soon)

    def remove(self, name: str) -> None:
        """A dynamic slot's directory goes with its job (blocking: the cleaner thread);
        a static slot's stays for its next job."""
        key = self._key.pop(name, name)
        if self.base is None or self.version != 1:
            return
        if key.startswith("slot") and "_" not in key:
            return
        self._shares.pop(key, None)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.join(self.base, key))
