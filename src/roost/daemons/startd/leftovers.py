"""What a previous startd left behind: job process groups and sandboxes.

Every running job's process group is written by its starter to
``execute/.jobs/<sandbox>`` (a root-only directory the job cannot touch) as one
line, ``<pgid> <start time in clock ticks since boot> <job id>``; a restarted
startd reads those files before it offers any slot and kills what is still
running (``cleanup_leftovers``). Separate from the starter because it runs once,
at start, with no job.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal

from roost.daemons.startd import procstat

JOBS_DIR = ".jobs"


def _group_members(pgid: int, not_before: int) -> list[int]:
    """Pids in process group ``pgid`` started no earlier than ``not_before``."""
    return [p.pid for p in procstat.processes() if p.pgid == pgid and p.start_ticks >= not_before]


def cleanup_leftovers(execute_dir: str) -> list[str]:
    """Kill the process groups a previous startd recorded and remove old sandboxes.

    Returns what was cleaned (for the log). A recorded group is killed only
    if its processes started after the recorded time, so a pid reused since
    is left alone.
    """
    done = []
    jobs = os.path.join(execute_dir, JOBS_DIR)
    if os.path.isdir(jobs):
        for name in os.listdir(jobs):
            path = os.path.join(jobs, name)
            try:
                with open(path) as f:
                    pgid_text, ticks_text = f.read().split()[:2]
                pgid, ticks = int(pgid_text), int(ticks_text)
            except (OSError, ValueError):
                pgid = 0
                ticks = 0
            if pgid > 1:
                for pid in _group_members(pgid, ticks):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                        done.append(f"killed pid {pid} of job group {pgid} ({name})")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
    for name in os.listdir(execute_dir):
        if name.startswith("dir_"):
            shutil.rmtree(os.path.join(execute_dir, name), ignore_errors=True)
            done.append(f"removed sandbox {name}")
    return done
