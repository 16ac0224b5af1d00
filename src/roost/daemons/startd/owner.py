"""Is the machine's owner using it? Keyboard and console idle times, and load.

HTCondor's startd measures these and publishes them in every slot ad; the
owner policy (START, SUSPEND, CONTINUE ...) reads them:

- ``KeyboardIdle``: seconds since the last input on any terminal: the access
  times of ``/dev/tty*``, ``/dev/pts/*`` and ``/dev/input/*`` (knob
  ``STARTD_OWNER_DEVICES``, glob patterns), and the modification time of the
  *activity file* (knob ``STARTD_ACTIVITY_FILE``, default
  ``$(LOCAL_DIR)/activity``): ``touch`` it to tell the startd "the owner is
  here". Screen lockers, tests and remote desktops use that hook.
- ``ConsoleIdle``: the same, counting only console devices (``/dev/tty*``
  without pseudo terminals, ``/dev/input/*``, ``/dev/console``) and the file.
- ``TotalLoadAvg``: the one-minute load from ``/proc/loadavg``.
- ``CondorLoadAvg``: the CPUs the slot's job used, averaged like the kernel's
  load average (one minute), from the CPU time of the job's cgroup
  (``cpu.stat``) or of its process group (``/proc/<pid>/stat``).
  ``TotalCondorLoadAvg`` sums the slots; ``LoadAvg`` is the slot's
  ``CondorLoadAvg`` plus its CPU share of the load that is not roost's.

With nothing ever seen, idle times count from boot.

On a multi-core desktop the owner may lend some cores whatever they do:
``SLOTS_CONNECTED_TO_KEYBOARD`` / ``SLOTS_CONNECTED_TO_CONSOLE`` (HTCondor's
knobs) say how many slots see the keyboard / console, by slot number
(``slot2`` and its dynamic slots ``slot2_*`` are number 2). A slot that is not
connected reports, for what it does not see, the time since the startd started
plus ``DISCONNECTED_KEYBOARD_IDLE_BOOST`` (1200 s), so a policy that waits for
15 idle minutes starts jobs there at once. As in HTCondor, no slot is connected
by default; ``use POLICY : Desktop`` connects them all.
"""

from __future__ import annotations

import glob
import math
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from roost.daemons.startd import procstat

DEFAULT_DEVICES = "/dev/tty* /dev/pts/* /dev/input/*"
CONSOLE_EXCLUDES = ("/dev/pts/", "/dev/ptmx")
LOAD_WINDOW = 60.0  # seconds: the one-minute average, as the kernel's


def _boot_time() -> float:
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return time.time()


def host_load() -> float:
    """The one-minute load average of the host."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except OSError:
            return 0.0


def cpu_by_group(pgids: Iterable[int]) -> dict[int, float]:
    """User + system CPU seconds of the live processes of each process group in
    ``pgids`` (one walk of /proc for all of them; jobs without a cgroup only)."""
    want = set(pgids)
    if not want:
        return {}
    ticks = dict.fromkeys(want, 0)
    for p in procstat.processes():
        if p.pgid in want:
            ticks[p.pgid] += p.cpu_ticks
    return {g: t / procstat.TICKS for g, t in ticks.items()}


def cgroup_cpu_seconds(path: str) -> float | None:
    """``usage_usec`` of a cgroup v2 directory, in seconds; None without one."""
    try:
        with open(os.path.join(path, "cpu.stat")) as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
    except (OSError, ValueError):
        return None
    return None


class OwnerMonitor:
    """Measures idle times and loads; ``sample`` is cheap enough for every poll."""

    def __init__(self, activity_file: str | None, devices: str | None = DEFAULT_DEVICES) -> None:
        self.activity_file = activity_file or None
        self.patterns = (devices or "").split()
        self.boot = _boot_time()
        self._cpu: dict[str, tuple[float, float]] = {}  # slot -> (cpu seconds, when)
        self._load: dict[str, float] = {}  # slot -> averaged CPUs in use

    def last_activity(self) -> tuple[float, float]:
        """(last keyboard activity, last console activity), as epoch seconds."""
        keyboard = console = self.boot
        for pattern in self.patterns:
            for path in glob.glob(pattern):
                try:
                    t = os.stat(path).st_atime
                except OSError:
                    continue
                keyboard = max(keyboard, t)
                if not path.startswith(CONSOLE_EXCLUDES):
                    console = max(console, t)
        if self.activity_file:
            try:
                t = os.stat(self.activity_file).st_mtime
            except OSError:
                t = 0.0
            keyboard, console = max(keyboard, t), max(console, t)
        return keyboard, console

    def idle(self, now: float) -> tuple[int, int]:
        """(KeyboardIdle, ConsoleIdle) in whole seconds."""
        keyboard, console = self.last_activity()
        return max(int(now - keyboard), 0), max(int(now - console), 0)

    def job_load(self, slot: str, cpu_seconds: float | None, now: float) -> float:
        """The slot's CondorLoadAvg after its job used ``cpu_seconds`` in all (None: no job)."""
        if cpu_seconds is None:
            self._cpu.pop(slot, None)
            rate = 0.0
        else:
            before = self._cpu.get(slot)
            self._cpu[slot] = (cpu_seconds, now)
            if before is None or now <= before[1]:
                return self._load.get(slot, 0.0)
            rate = max(cpu_seconds - before[0], 0.0) / (now - before[1])
            dt = now - before[1]
            old = self._load.get(slot, 0.0)
            decay = math.exp(-dt / LOAD_WINDOW)
            self._load[slot] = old * decay + rate * (1 - decay)
            return self._load[slot]
        old = self._load.get(slot, 0.0)
        self._load[slot] = old * 0.5 if old > 0.01 else 0.0
        if not self._load[slot]:
            self._load.pop(slot, None)
        return self._load.get(slot, 0.0)

    def forget(self, live: Iterable[str]) -> None:
        keep = set(live)
        for d in (self._cpu, self._load):
            for name in [n for n in d if n not in keep]:
                del d[name]


@dataclass(frozen=True)
class Connected:
    """Which slots see the owner's keyboard and console (None: every slot)."""

    keyboard: int | None = None
    console: int | None = None
    disconnected_idle: int = 0  # what a slot reports for what it does not see

    def idle(self, slot: str, idle: tuple[int, int]) -> tuple[int, int]:
        """(KeyboardIdle, ConsoleIdle) of ``slot`` given the machine's."""
        number = slot_number(slot)
        kbd = idle[0] if _sees(self.keyboard, number) else self.disconnected_idle
        con = idle[1] if _sees(self.console, number) else self.disconnected_idle
        return min(kbd, con), con  # console activity is keyboard activity too


def _sees(connected: int | None, number: int | None) -> bool:
    return connected is None or (number is not None and number <= connected)


def slot_number(name: str) -> int | None:
    """``slot3`` → 3; a dynamic slot ``slot1_4`` has its parent's number, 1."""
    base = name.split("@", 1)[0]
    if not base.startswith("slot"):
        return None
    digits = base[4:].split("_", 1)[0]
    return int(digits) if digits.isdigit() else None


def slot_attrs(
    idle: tuple[int, int], total_load: float, condor_load: Mapping[str, float],
    cpus: Mapping[str, int], total_cpus: int, connected: Connected | None = None,
) -> dict[str, dict[str, float | int]]:
    """The owner attributes of each slot's ad (names as HTCondor's)."""
    total_condor = sum(condor_load.values())
    owner_load = max(total_load - total_condor, 0.0)
    out: dict[str, dict[str, float | int]] = {}
    for name, n in cpus.items():
        mine = condor_load.get(name, 0.0)
        share = owner_load * n / total_cpus if total_cpus else 0.0
        kbd, con = connected.idle(name, idle) if connected is not None else idle
        out[name] = {
            "KeyboardIdle": kbd,
            "ConsoleIdle": con,
            "TotalLoadAvg": round(total_load, 2),
            "TotalCondorLoadAvg": round(total_condor, 2),
            "CondorLoadAvg": round(mine, 2),
            "LoadAvg": round(mine + share, 2),
        }
    return out
