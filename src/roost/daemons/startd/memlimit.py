"""Each job's memory: limited to what it asked for (``request_memory``), measured while
it runs, and an out-of-memory kill told apart from the job's own death.

Two mechanisms, whichever the host has:

- cgroup v2 with the ``memory`` controller delegated to us: the job's own cgroup
  (:mod:`roost.daemons.startd.cgroups`) gets ``memory.max``; peak ``memory.peak``.
- cgroup v1's ``memory`` hierarchy (what this machine family offers beside a v2 tree
  with no controllers): one directory per job under our own, with
  ``memory.limit_in_bytes`` (and ``memsw`` where swap is accounted, so the job cannot
  page its way past the limit); the starter's spawner thread moves the job's pid in
  right after its exec.

``STARTD_MEMORY_LIMIT`` (roost's, like HTCondor's ``CGROUP_MEMORY_LIMIT_POLICY``):
``hard`` (default: the kernel kills a job over its request; the schedd holds it, code
34), ``none`` (measured only). Where neither mechanism exists, memory is measured
from ``/proc`` and nothing is enforced: the slot ad says which
(``MemoryEnforcement``), never pretending.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)

PARENT = "roost-startd"
V1_ROOT = "/sys/fs/cgroup/memory"


@dataclass(frozen=True)
class MemoryState:
    """A job's memory as its cgroup saw it: now, peak, and whether the kernel's OOM
    killer struck inside it (bytes)."""

    current: int
    peak: int
    oom_killed: bool


def _own_v1_path() -> str | None:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "memory" in controllers.split(","):
                    return path
    except (OSError, ValueError):
        return None
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _oom_kills(path: str) -> int:
    """``oom_kill N`` of a v1 ``memory.oom_control`` or a v2 ``memory.events``."""
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


class MemoryLimits:
    """Per-job memory cgroups, or nothing (``mechanism`` says which)."""

    def __init__(self, base: str | None, version: int, policy: str) -> None:
        self.base = base
        self.version = version
        self.policy = policy

    @property
    def mechanism(self) -> str:
        if self.base is None:
            return "none (measured from /proc, not enforced)"
        limit = "hard limit" if self.policy == "hard" else "measured, not limited"
        return f"cgroup v{self.version} memory ({limit})"

    @property
    def enforced(self) -> bool:
        return self.base is not None and self.policy == "hard"

    @classmethod
    def detect(cls, execute_dir: str, v2_base: str | None, policy: str = "hard") -> MemoryLimits:
        policy = policy.strip().lower() or "hard"
        if policy not in ("hard", "none"):
            log.warning("STARTD_MEMORY_LIMIT = %s: not hard or none; using hard", policy)
            policy = "hard"
        if v2_base is not None:
            try:
                with open(os.path.join(v2_base, "cgroup.controllers")) as f:
                    if "memory" in f.read().split():
                        return cls(v2_base, 2, policy)
            except OSError:
                pass
        own = _own_v1_path()
        if own is None or not os.path.isdir(V1_ROOT):
            return cls(None, 0, policy)
        tag = hashlib.sha1(os.path.realpath(execute_dir).encode()).hexdigest()[:12]
        base = os.path.join(V1_ROOT, own.lstrip("/"), f"{PARENT}-{tag}")
        try:
            os.makedirs(base, exist_ok=True)
            probe = os.path.join(base, f"probe-{os.getpid()}")
            os.mkdir(probe)
            os.rmdir(probe)
        except OSError as e:
            log.info("cgroup v1 memory at %s is not writable (%s): memory is measured, not enforced",
                     base, e.strerror)
            return cls(None, 0, policy)
        return cls(base, 1, policy)

    def path(self, name: str) -> str | None:
        return None if self.base is None else os.path.join(self.base, name)

    def create(self, name: str, limit_bytes: int | None) -> None:
        """The job's memory cgroup, limited to ``limit_bytes`` under the hard policy
        (blocking: on the spawner thread). A failure costs only the enforcement."""
        path = self.path(name)
        if path is None:
            return
        try:
            if self.version == 1:
                os.makedirs(path, exist_ok=True)
            if limit_bytes and self.policy == "hard":
                if self.version == 1:
                    self._write(path, "memory.limit_in_bytes", limit_bytes)
                    # with swap accounted, the same limit for memory + swap: no paging past it
                    if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
                        self._write(path, "memory.memsw.limit_in_bytes", limit_bytes)
                else:
                    self._write(path, "memory.max", limit_bytes)
                    if os.path.exists(os.path.join(path, "memory.swap.max")):
                        self._write(path, "memory.swap.max", 0)
        except OSError as e:
            log.warning("cannot limit the memory of job cgroup %s: %s", path, e.strerror)

    @staticmethod
    def _write(path: str, knob: str, value: int) -> None:
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(value))

    def enter(self, name: str, pid: int) -> None:
        """Move the job's process into its v1 memory cgroup (v2: it is there already)."""
        path = self.path(name)
        if path is None or self.version != 1:
            return
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        except OSError as e:
            log.warning("cannot move pid %d into %s: %s", pid, path, e.strerror)

    def state(self, name: str) -> MemoryState | None:
        """What the job's cgroup measured; None without one."""
        path = self.path(name)
        if path is None:
            return None
        if self.version == 1:
            current = _read_int(os.path.join(path, "memory.usage_in_bytes"))
            peak = _read_int(os.path.join(path, "memory.max_usage_in_bytes"))
            oom = _oom_kills(os.path.join(path, "memory.oom_control"))
        else:
            current = _read_int(os.path.join(path, "memory.current"))
            peak = _read_int(os.path.join(path, "memory.peak"))
            oom = _oom_kills(os.path.join(path, "memory.events"))
        if current is None:
            return None
        return MemoryState(current, max(peak or 0, current), oom > 0)

    def remove(self, name: str, wait: float = 2.0) -> None:
        """Remove a v1 job directory (blocking: on the cleaner thread); v2's goes with the
        job's cgroup."""
        path = self.path(name)
        if path is None or self.version != 1:
            return
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    log.warning("cannot remove memory cgroup %s", path)
                    return
                with contextlib.suppress(OSError):  # what is left there dies
                    with open(os.path.join(path, "cgroup.procs")) as f:
                        for pid in f.read().split():
                            with contextlib.suppress(ProcessLookupError, ValueError):
                                os.kill(int(pid), 9)
                time.sleep(0.01)
