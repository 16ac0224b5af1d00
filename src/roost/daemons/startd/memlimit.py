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
34), ``none`` (a memory cgroup measures, nothing limits), ``off`` (no memory cgroup:
measured from ``/proc``; it saves moving each job into a v1 cgroup, which waits for
an RCU grace period). Where neither mechanism exists, memory is measured
from ``/proc`` and nothing is enforced: the slot ad says which
(``MemoryEnforcement``), never pretending.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import errno
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from roost.daemons.startd.cgroups import (
    child_dirs,
    kill_procs,
    make_writable_dir,
    own_v1_path,
    remove_dir,
    startd_dir,
)

log = logging.getLogger(__name__)

_mover_pool: concurrent.futures.ThreadPoolExecutor | None = None
_mover_lock = threading.Lock()


def movers() -> concurrent.futures.ThreadPoolExecutor:
    """Threads that move jobs into v1 cgroups (memory, cpu: their waits overlap)."""
    global _mover_pool
    with _mover_lock:
        if _mover_pool is None:
            _mover_pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="memcg")
    return _mover_pool

V1_ROOT = "/sys/fs/cgroup/memory"


@dataclass(frozen=True)
class MemoryState:
    """A job's memory as its cgroup saw it: now, peak, and whether the kernel's OOM
    killer struck inside it (bytes)."""

    current: int
    peak: int
    oom_killed: bool


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _rss_bytes(pid: int) -> int:
    """A process's resident memory now (VmRSS), bytes; 0 if unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


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

    def __init__(self, base: str | None, version: int, policy: str, move_delay: float = 0.05) -> None:
        self.base = base
        self.version = version
        self.policy = policy
        self.move_delay = move_delay
        #: jobs killed for being over their limit before they could enter their cgroup
        self.over_limit: set[str] = set()
        self._limits: dict[str, int] = {}  # name -> its limit, bytes
        self._key: dict[str, str] = {}  # name -> its v1 directory (its slot's)
        self._dir_limit: dict[str, int] = {}  # v1 directory -> the limit written there
        self._oom_base: dict[str, int] = {}  # name -> its directory's OOM kills at its start
        self._owner: dict[str, str] = {}  # v1 directory -> the job it serves now
        self._before: dict[str, int] = {}  # name -> what it held when it entered (v1), bytes
        # v1: jobs that were moved into their directory, and directories a job entered
        # since their last reset: a job that ended before its move (most short ones)
        # leaves nothing to empty, read or kill, and costs no cgroup file at all
        self._moved: set[str] = set()
        self._dirty: set[str] = set()
        self._oom_seen: dict[str, int] = {}  # v1 directory -> its OOM kills at its last reset

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
    def detect(cls, execute_dir: str, v2_base: str | None, policy: str = "hard",
               move_delay: float = 0.05) -> MemoryLimits:
        policy = policy.strip().lower() or "hard"
        if policy not in ("hard", "none", "off"):
            log.warning("STARTD_MEMORY_LIMIT = %s: not hard, none or off; using hard", policy)
            policy = "hard"
        if policy == "off":
            return cls(None, 0, policy)
        if v2_base is not None:
            try:
                with open(os.path.join(v2_base, "cgroup.controllers")) as f:
                    if "memory" in f.read().split():
                        return cls(v2_base, 2, policy, move_delay)
            except OSError:
                pass
        own = own_v1_path("memory")
        if own is None or not os.path.isdir(V1_ROOT):
            return cls(None, 0, policy)
        base = startd_dir(os.path.join(V1_ROOT, own.lstrip("/")), execute_dir)
        try:
            make_writable_dir(base)
        except OSError as e:
            log.info("cgroup v1 memory at %s is not writable (%s): memory is measured, not enforced",
                     base, e.strerror)
            return cls(None, 0, policy)
        return cls(base, 1, policy, move_delay)

    def sweep(self, keep: frozenset[str] = frozenset()) -> list[str]:
        """Remove what a previous startd of this execute directory left (v1 job
        directories; their processes are killed), but those of adopted jobs (``keep``,
        their slots' names); the names removed."""
        if self.base is None or self.version != 1:
            return []
        gone = [name for name in child_dirs(self.base) if name not in keep]
        for name in gone:
            remove_dir(os.path.join(self.base, name))
        return gone

    def path(self, name: str) -> str | None:
        if self.base is None:
            return None
        return os.path.join(self.base, self._key.get(name, name) if self.version == 1 else name)

    def create(self, name: str, limit_bytes: int | None, slot: str | None = None) -> None:
        """The job's memory cgroup, limited to ``limit_bytes`` under the hard policy
        (blocking: on the spawner thread). A failure costs only the enforcement.

        v1: one directory per static slot, kept from job to job (``slot``), so a job
        costs no cgroup made and removed; its peak is reset and its OOM count taken
        at the start. A dynamic slot's (``slot1_3``) goes with its job."""
        if self.version == 1 and slot:
            self._key[name] = slot
        if self.version == 1:
            self._owner[self._key.get(name, name)] = name  # the job the directory serves now
        path = self.path(name)
        if path is None:
            return
        if limit_bytes:
            self._limits[name] = limit_bytes
        try:
            if self.version == 1:
                key = self._key.get(name, name)
                if not os.path.isdir(path):
                    os.makedirs(path, exist_ok=True)
                    with contextlib.suppress(OSError):  # where the kernel still can, charges follow the job
                        self._write(path, "memory.move_charge_at_immigrate", 3)
                    self._dir_limit.pop(key, None)
                elif key in self._dirty or key not in self._oom_seen:
                    with contextlib.suppress(OSError):  # the previous job's cache and peak are not this one's
                        self._write(path, "memory.force_empty", 0)
                        self._write(path, "memory.max_usage_in_bytes", 0)
                self._dirty.discard(key)
                seen = self._oom_seen.get(key)
                if seen is None:
                    seen = self._oom_seen[key] = _oom_kills(os.path.join(path, "memory.oom_control"))
                self._oom_base[name] = seen
            if limit_bytes and self.policy == "hard":
                if self.version == 1:
                    if self._dir_limit.get(key) != limit_bytes:
                        self._set_v1_limit(path, limit_bytes)
                        self._dir_limit[key] = limit_bytes
                else:
                    self._write(path, "memory.max", limit_bytes)
                    if os.path.exists(os.path.join(path, "memory.swap.max")):
                        self._write(path, "memory.swap.max", 0)
        except OSError as e:
            log.warning("cannot limit the memory of job cgroup %s: %s", path, e.strerror)

    def oom_base(self, name: str) -> int:
        """The job's directory's OOM kills at its start (its record keeps it)."""
        return self._oom_base.get(name, 0)

    def adopt(self, name: str, slot: str, limit_bytes: int | None, oom_base: int = 0) -> None:
        """A job a previous startd started, in the cgroup it made (v1: its slot's
        directory, left alone by ``sweep``); its limit is in place already. An OOM kill
        while no startd watched is still counted (``oom_base`` is from its record)."""
        if self.version == 1:
            self._key[name] = slot
            self._owner[slot] = name
            self._oom_base[name] = oom_base
            self._moved.add(name)  # it may be in there (its move happened or not): measure and clean it
            self._dirty.add(slot)
        if limit_bytes:
            self._limits[name] = limit_bytes

    def _set_v1_limit(self, path: str, limit: int) -> None:
        """memory and memory+swap (where swap is accounted: no paging past it), in the
        order the kernel accepts (memory never above memory+swap)."""
        memsw = os.path.join(path, "memory.memsw.limit_in_bytes")
        has_memsw = os.path.exists(memsw)
        current = _read_int(os.path.join(path, "memory.limit_in_bytes")) or 0
        if has_memsw and limit > current:
            self._write(path, "memory.memsw.limit_in_bytes", limit)
            self._write(path, "memory.limit_in_bytes", limit)
        else:
            self._write(path, "memory.limit_in_bytes", limit)
            if has_memsw:
                self._write(path, "memory.memsw.limit_in_bytes", limit)

    @staticmethod
    def _write(path: str, knob: str, value: int) -> None:
        with open(os.path.join(path, knob), "w") as f:
            f.write(str(value))

    def enter(self, name: str, pid: int, alive: Callable[[], bool] = lambda: True,
              later: Callable[[float, Callable[[], Any]], Any] | None = None,
              pids: Callable[[], list[int]] | None = None) -> None:
        """Move the job's process into its v1 memory cgroup (v2: it is there already).

        Soon, not now: writing a v1 ``cgroup.procs`` takes the kernel's cgroup
        threadgroup lock for an RCU grace period (~10 ms), during which no process on
        the machine can fork or exit; paid at every job's start it costs a short job a
        third of its latency. So the move happens ``move_delay`` seconds after the job
        starts (STARTD_MEMORY_MOVE_DELAY, 0.05 s), on threads of its own, and only while
        ``alive()``: a job that ends first never pays (nor does anyone else). Current
        kernels move no charges with a task, so what the job holds at the move counts
        against its limit (the cgroup gets the rest) and in its usage; a job already
        over its limit then is killed, as the kernel would have; what forks after the
        move is inside."""
        path = self.path(name)
        if path is None or self.version != 1:
            return
        def move() -> None:
            if alive():  # checked here first: a job already gone costs no thread hand-off
                movers().submit(self._move, name, path, pid, alive, pids)

        if later is not None:  # the event loop's timer (no thread per job)
            later(self.move_delay, move)
        else:
            timer = threading.Timer(self.move_delay, move)
            timer.daemon = True
            timer.start()

    def _move(self, name: str, path: str, pid: int, alive: Callable[[], bool],
              pids: Callable[[], list[int]] | None = None) -> None:
        if not alive():
            return  # ended already: even a move that finds no process would stall forks
        procs = [p for p in (pids() if pids is not None else []) if p != pid]
        try:
            # charged outside the cgroup (current kernels move no charges): the job's processes' RSS
            before = _rss_bytes(pid) + sum(_rss_bytes(p) for p in procs)
            limit = self._limits.get(name)
            if limit and self.policy == "hard":
                if before >= limit:
                    raise OSError(errno.ENOMEM, "over its limit before it could enter its cgroup")
                # what it holds already counts: the cgroup gets only the rest of the limit
                self._set_v1_limit(path, limit - before)
                self._dir_limit.pop(self._key.get(name, name), None)  # the next job sets its own
            # marked first: a job killed right after its move is still one that moved
            self._moved.add(name)
            self._dirty.add(self._key.get(name, name))
            self._oom_seen.pop(self._key.get(name, name), None)  # read again at the next reset
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            for p in procs:  # what it forked before the move (its job cgroup knows them all)
                with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.procs"), "w") as f:
                    f.write(str(p))
            moved = _read_int(os.path.join(path, "memory.usage_in_bytes")) or 0
            if before and moved >= before // 2:
                # this kernel moved the charges with the tasks: count them once, full limit
                before = 0
                if limit and self.policy == "hard":
                    self._set_v1_limit(path, limit)
            self._before[name] = before
        except ProcessLookupError:
            pass
        except OSError as e:
            if e.errno == errno.ENOMEM and self.policy == "hard":
                # already over its limit before it could be moved in: what the kernel
                # would have done inside the cgroup
                log.info("pid %d is over its memory limit before entering %s: killed", pid, path)
                self.over_limit.add(name)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, 9)
            elif e.errno not in (errno.ESRCH, errno.ENOENT):
                log.warning("cannot move pid %d into %s: %s", pid, path, e.strerror)

    def state(self, name: str) -> MemoryState | None:
        """What the job's cgroup measured; None without one."""
        path = self.path(name)
        if path is None:
            return None
        if self.version == 1 and name not in self._moved:
            # never entered its cgroup (it ended first): its rusage says it all
            return MemoryState(0, 0, True) if name in self.over_limit else None
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
        before = self._before.get(name, 0)  # held before it entered: not in the cgroup's count
        oom -= self._oom_base.get(name, 0)  # a kept cgroup counts every job's kills
        return MemoryState(current + before, max(peak or 0, current) + before, oom > 0 or name in self.over_limit)

    def remove(self, name: str, wait: float = 2.0) -> None:
        """Remove a v1 job directory (blocking: on the cleaner thread); v2's goes with the
        job's cgroup."""
        self.over_limit.discard(name)
        self._limits.pop(name, None)
        self._before.pop(name, None)
        self._oom_base.pop(name, None)
        path = self.path(name)
        key = self._key.pop(name, name)
        moved = name in self._moved
        self._moved.discard(name)
        if path is None or self.version != 1:
            return
        if self._owner.get(key) != name:
            return  # the slot's next job has it already: nothing of ours to kill or remove
        if key.startswith("slot") and "_" not in key:  # a static slot's: kept for its next job
            if not moved:
                return  # the job never entered it: nothing of it there to kill
            kill_procs(path)  # what the job left running dies
            return
        self._owner.pop(key, None)
        remove_dir(path, wait=wait)
