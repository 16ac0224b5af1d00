"""What a previous startd left behind: running jobs to adopt, the rest to clean.

Every started job has a record in ``execute/.jobs/<sandbox>`` (a root-only
directory the job cannot touch), written by its starter right after the exec
and kept until its final report is acknowledged: one JSON object with the
job's pid and start time (clock ticks since boot), its keeper's pid and start
time, its claim (slot, resources, schedd, lease) and its ad. The keeper writes
the job's end to ``<sandbox>.exit``. A restarted startd reads the records
before it offers any slot (``remove_strays``, then ``read_records``, which only
reads, so a test may watch a running startd with it): a job whose keeper still runs,
or whose end its keeper wrote, is adopted (the claims take their slots back,
the starter carries on); anything else is killed and its sandbox removed.
Separate from the starter because it runs once, at start, with no job.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from dataclasses import dataclass, field
from typing import Any

from roost.daemons.startd import procstat

JOBS_DIR = ".jobs"


def _started_at(pid: int) -> int | None:
    got = procstat.read(pid) if pid > 1 else None
    return got.start_ticks if got is not None else None


@dataclass
class Record:
    """One job's record, as read back."""

    name: str  # the sandbox's name (dir_...)
    path: str
    pid: int = 0  # the job (its process group)
    ticks: int = 0
    keeper: int = 0  # the process that waits for it (0: none: started without the helper)
    keeper_ticks: int = 0
    started: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_path(self) -> str:
        return self.path + ".exit"

    def alive(self) -> bool:
        """The job's keeper still runs (the same process: its start time says so)."""
        return self.keeper > 1 and _started_at(self.keeper) == self.keeper_ticks

    def ended(self) -> bool:
        """The keeper wrote the job's end (over the blanks the starter left for it)."""
        try:
            with open(self.exit_path, "rb") as f:
                return bool(f.read(256).strip())
        except OSError:
            return False

    def adoptable(self) -> bool:
        """A job the next startd can carry on with: kept, its claim and ad recorded."""
        d = self.data
        return (self.keeper > 1 and isinstance(d.get("claim"), dict) and isinstance(d.get("slot"), dict)
                and isinstance(d.get("job_ad"), dict) and isinstance(d.get("claim_id"), str)
                and (self.alive() or self.ended()))

    def kill(self) -> list[str]:
        """Kill what is left of the job (its group's processes started since it was,
        and its keeper) and forget the record; what was done, for the log."""
        done = []
        if self.pid > 1 and self.ticks > 0:  # without its start time a group id could be anyone's
            for pid in _group_members(self.pid, self.ticks):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    done.append(f"killed pid {pid} of job group {self.pid} ({self.name})")
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.keeper, signal.SIGKILL)
        for path in (self.path, self.exit_path, self.path + ".new"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        return done


def _group_members(pgid: int, not_before: int) -> list[int]:
    """Pids in process group ``pgid`` started no earlier than ``not_before``."""
    return [p.pid for p in procstat.processes() if p.pgid == pgid and p.start_ticks >= not_before]


def _parse(name: str, path: str, text: str) -> Record:
    rec = Record(name, path)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        rec.data = data
        for key in ("pid", "ticks", "keeper", "keeper_ticks"):
            v = data.get(key)
            setattr(rec, key, v if type(v) is int else 0)
        started = data.get("started")
        rec.started = float(started) if isinstance(started, int | float) else 0.0
        return rec
    with contextlib.suppress(ValueError):  # an older startd's line: "<pgid> <ticks> <job>"
        pid, ticks = text.split()[:2]
        rec.pid, rec.ticks = int(pid), int(ticks)
    return rec


def read_records(execute_dir: str) -> list[Record]:
    """Every job record under ``execute_dir`` (unreadable ones as empty records, to be
    killed and removed). Only reads: a running startd's half-written files (a record's
    ``.new``, an exit file made before its record) are left alone; ``remove_strays``
    clears what a dead startd left of them."""
    jobs = os.path.join(execute_dir, JOBS_DIR)
    out = []
    with contextlib.suppress(FileNotFoundError):
        for name in sorted(os.listdir(jobs)):
            if name.startswith(".") or name.endswith((".new", ".exit")):
                continue  # the startd's own notes (.port); half-written or exit files
            path = os.path.join(jobs, name)
            try:
                with open(path) as f:
                    text = f.read()
            except OSError:
                text = ""
            out.append(_parse(name, path, text))
    return out


def remove_strays(execute_dir: str) -> None:
    """What a previous startd left half-made under ``.jobs``: a record being rewritten
    (``.new``: the old one stands) and an exit file whose record was never written or
    is gone. Only at start, before any job of this startd: a running one's are in use."""
    jobs = os.path.join(execute_dir, JOBS_DIR)
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(jobs):
            path = os.path.join(jobs, name)
            stray = name.endswith(".new") or (name.endswith(".exit") and not os.path.exists(path[: -len(".exit")]))
            if stray and not name.startswith("."):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)


def remove_sandboxes(execute_dir: str, keep: set[str]) -> list[str]:
    """Remove the sandboxes of jobs not adopted; what was removed, for the log."""
    done = []
    for name in os.listdir(execute_dir):
        if name.startswith("dir_") and name not in keep:
            shutil.rmtree(os.path.join(execute_dir, name), ignore_errors=True)
            done.append(f"removed sandbox {name}")
    return done
