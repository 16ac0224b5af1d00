"""The grid universe's decisions for batch systems (issue 30): how a job's requests
become Slurm's options, and what Slurm's word for a job
means in the user's queue. Pure: the grid manager runs the commands and feeds their
output here.

HTCondor's grid universe sends a job to another scheduler and mirrors it in the
user's queue: ``GridResource`` says where (``batch slurm``; ``condor <schedd> <pool>``
for another pool's schedd, Condor-C), ``GridJobId`` the remote job (``batch slurm
<id>``), ``GridJobStatus`` the remote system's own word for its state, and
``JobStatus`` follows it: pending is Idle, running is Running, done is Completed with
the job's exit code. What the remote system ends without the job's own doing (a
cancel from outside, its wall time, its memory) is a hold with the remote system's
reason, as HTCondor's gridmanager does. A node lost under the job is not the job's
doing either, but it is the one failure HTCondor reruns a job for (a vanilla job whose
machine vanishes goes back to Idle and runs again): jobs are submitted with
``--no-requeue`` so that roost, not Slurm's two-minute requeue delay, decides, and a
``NODE_FAIL``/``BOOT_FAIL`` is resubmitted as a new attempt while the job has had fewer
than :data:`NODE_FAILURE_SUBMITS` submits, then held with Slurm's reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from roost.vocabulary import JobStatus

#: HTCondor's hold codes the grid manager uses (core.jobpolicy.HOLD_CODE_NAMES): its
#: gridmanager holds a refused submit or a remote end with no code of its own (0)
HOLD_GRID_SUBMIT_FAILED = 0
HOLD_REMOTE_ENDED = 0
HOLD_OUT_OF_RESOURCES = 34  # JobOutOfResources
HOLD_DURATION_EXCEEDED = 46  # JobDurationExceeded
#: submits a job may have had (NumGridSubmits) and still be resubmitted after a node failure
NODE_FAILURE_SUBMITS = 3


class SlurmOptionError(ValueError):
    """A job attribute that cannot become a Slurm option (a partition name with spaces)."""


# -- Slurm ------------------------------------------------------------------------------


def slurm_job_name(schedd: str, cluster: int, proc: int, attempt: int) -> str:
    """The name a job is submitted under: how a restarted grid manager finds a job it
    submitted but did not live to record (no remote job twice, none lost)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", schedd)[:60]
    return f"roost.{safe}.{cluster}.{proc}.{attempt}"


def _positive(ad: dict[str, Any], name: str) -> float | None:
    v = ad.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def sbatch_args(ad: dict[str, Any], *, name: str, sandbox: str, script: str) -> list[str]:
    """``sbatch``'s arguments for a job ad (its requests evaluated to numbers):
    RequestCpus -> --cpus-per-task, RequestMemory (MB) -> --mem, BatchRuntime (s,
    HTCondor's ``batch_runtime``) -> --time in minutes, BatchQueue -> --partition,
    BatchProject -> --account; the job's stdout/stderr go to the sandbox."""
    args = ["--parsable", f"--job-name={name}", f"--chdir={sandbox}", "--nodes=1", "--ntasks=1", "--no-requeue",
            f"--output={sandbox}/_roost_stdout", f"--error={sandbox}/_roost_stderr", "--export=NONE"]
    cpus = _positive(ad, "RequestCpus")
    if cpus:
        args.append(f"--cpus-per-task={int(math.ceil(cpus))}")
    memory = _positive(ad, "RequestMemory")
    if memory:
        args.append(f"--mem={int(math.ceil(memory))}M")
    runtime = _positive(ad, "BatchRuntime")
    if runtime:
        args.append(f"--time={int(math.ceil(runtime / 60))}")
    for attr, option in (("BatchQueue", "--partition"), ("BatchProject", "--account")):
        v = ad.get(attr)
        if isinstance(v, str) and v.strip():
            if not re.fullmatch(r"[A-Za-z0-9_.,-]+", v.strip()):
                raise SlurmOptionError(f"{attr} = {v!r}: not a Slurm {option[2:]} name")
            args.append(f"{option}={v.strip()}")
    args.append(script)
    return args


def parse_sbatch(stdout: str) -> str | None:
    """The job id ``sbatch --parsable`` printed (``123`` or ``123;cluster``), or None."""
    first = stdout.strip().splitlines()[0] if stdout.strip() else ""
    job_id = first.split(";", 1)[0].strip()
    return job_id if job_id.isdigit() else None


def parse_scontrol(text: str) -> list[dict[str, str]]:
    """``scontrol show job -o`` output: one dict of Key=Value per line (values may hold
    spaces only in the last keys, Command and the like, which are not read here)."""
    jobs = []
    for line in text.splitlines():
        if not line.strip().startswith("JobId="):
            continue
        fields: dict[str, str] = {}
        for part in line.split():
            key, eq, value = part.partition("=")
            if eq and key and key[0].isupper():
                fields[key] = value
        jobs.append(fields)
    return jobs


@dataclass(frozen=True)
class Mirror:
    """What a Slurm job's state means for its roost job."""

    status: int  # JobStatus
    grid_status: str  # Slurm's word, for GridJobStatus
    exit_code: int | None = None
    exit_signal: int | None = None
    hold_reason: str | None = None
    hold_code: int = 0
    done: bool = False  # Slurm is finished with it: stage out, then complete or hold
    resubmit: bool = False  # its node failed: submit it again as a new attempt (``why`` says so)
    why: str = ""


_PENDING = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SPECIAL_EXIT",
            "STAGE_OUT", "SIGNALING", "RESV_DEL_HOLD"}
_RUNNING = {"RUNNING", "COMPLETING"}
_HOLD_REASONS = {
    "TIMEOUT": ("it ran past its wall time (batch_runtime)", HOLD_DURATION_EXCEEDED),
    "NODE_FAIL": ("its node failed", HOLD_REMOTE_ENDED),
    "BOOT_FAIL": ("its node failed to boot", HOLD_REMOTE_ENDED),
    "DEADLINE": ("it reached its deadline", HOLD_REMOTE_ENDED),
    "OUT_OF_MEMORY": ("it went over its memory (request_memory)", HOLD_OUT_OF_RESOURCES),
    "PREEMPTED": ("it was preempted", HOLD_REMOTE_ENDED),
    "CANCELLED": ("it was cancelled outside roost", HOLD_REMOTE_ENDED),
    "REVOKED": ("it was revoked", HOLD_REMOTE_ENDED),
}


def _exit(text: str) -> tuple[int | None, int | None]:
    code, _, sig = text.partition(":")
    try:
        c, s = int(code), int(sig or 0)
    except ValueError:
        return None, None
    return (None, s) if s else (c, None)


_NODE_FAILURES = {"NODE_FAIL", "BOOT_FAIL"}


def mirror(fields: dict[str, str], submits: int = 1) -> Mirror:
    """One ``scontrol show job`` record (or the same keys from squeue/sacct) in roost's
    terms; ``submits``: the job's NumGridSubmits so far (a node failure's resubmit)."""
    state = fields.get("JobState", "").split()[0].rstrip("+") if fields.get("JobState") else ""
    reason = fields.get("Reason", "")
    if state in _PENDING or state == "":
        return Mirror(JobStatus.IDLE, state or "PENDING")
    if state in _RUNNING:
        return Mirror(JobStatus.RUNNING, state)
    if state == "SUSPENDED":
        return Mirror(JobStatus.SUSPENDED, state)
    code, sig = _exit(fields.get("ExitCode", "0:0"))
    if state == "FAILED" and reason not in ("NonZeroExitCode", "None", "", "(null)"):
        # Slurm could not run it (BadConstraints, JobLaunchFailure, ...): not the job's exit
        return Mirror(JobStatus.HELD, state, hold_reason=f"Slurm: the job could not run: {state} ({reason})",
                      hold_code=HOLD_REMOTE_ENDED, done=True)
    if state in ("COMPLETED", "FAILED"):
        if code is None and sig is None:
            return Mirror(JobStatus.HELD, state, hold_reason=f"Slurm: the job {state.lower()} with no exit code",
                          hold_code=HOLD_REMOTE_ENDED, done=True)
        return Mirror(JobStatus.COMPLETED, state, exit_code=code, exit_signal=sig, done=True)
    why, hold_code = _HOLD_REASONS.get(state, (f"it ended in state {state}", HOLD_REMOTE_ENDED))
    said = f" ({reason})" if reason and reason not in ("None", "(null)") else ""
    if state in _NODE_FAILURES and submits < NODE_FAILURE_SUBMITS:
        return Mirror(JobStatus.IDLE, state, done=True, resubmit=True,
                      why=f"Slurm: {why}: {state}{said}; submitted again")
    if state in _NODE_FAILURES:
        said += f" after {submits} submits"
    return Mirror(JobStatus.HELD, state, exit_code=code, exit_signal=sig,
                  hold_reason=f"Slurm: {why}: {state}{said}", hold_code=hold_code, done=True)


def next_probe_delay(previous: float, changed: bool, shortest: float, longest: float) -> float:
    """Seconds until the grid manager's next poll. A poll that saw something change (or
    a wake: a job just submitted) is followed by another after ``shortest``
    (GRIDMANAGER_JOB_PROBE_MIN_INTERVAL); each quiet poll doubles the wait, up to
    ``longest`` (GRIDMANAGER_JOB_PROBE_INTERVAL). Short jobs end one after another while
    some are changing, so their ends are seen within about ``shortest`` instead of up
    to ``longest`` late; a quiet queue costs one poll per ``longest``."""
    shortest = min(shortest, longest)
    if changed:
        return shortest
    return min(longest, max(shortest, previous * 2))


def slurm_reason(fields: dict[str, str]) -> str:
    """Slurm's reason for a job's state (``Resources``, ``Priority``, ``NodeDown``), or ""."""
    reason = fields.get("Reason", "")
    return "" if reason in ("None", "(null)") else reason


def where_text(ad: dict[str, Any]) -> str:
    """Where a grid job is, for ``q -analyze``: the remote job, its state in the remote
    system's words and why, instead of a matchmaking analysis that does not apply."""
    resource = ad.get("GridResource") if isinstance(ad.get("GridResource"), str) else "?"
    gid = ad.get("GridJobId") if isinstance(ad.get("GridJobId"), str) and not ad["GridJobId"].startswith("/Expr(") \
        else None
    state = ad.get("GridJobStatus") if isinstance(ad.get("GridJobStatus"), str) else None
    reason = ad.get("GridJobStatusReason") if isinstance(ad.get("GridJobStatusReason"), str) else ""
    status = ad.get("JobStatus")
    system = "Slurm" if resource.split()[:2] == ["batch", "slurm"] else resource
    if status == JobStatus.HELD:
        text = f"held; not in {system}"
        if isinstance(ad.get("HoldReason"), str):
            text += f": {ad['HoldReason']}"
        return text
    if status in (JobStatus.COMPLETED, JobStatus.REMOVED):
        return "completed" if status == JobStatus.COMPLETED else "removed"
    if gid is None:
        return f"not yet submitted to {system} (the grid manager submits it)"
    remote = gid.split()[-1]
    words = {"PENDING": "pending", "RUNNING": "running", "COMPLETING": "completing", "SUSPENDED": "suspended",
             "CONFIGURING": "starting", "REQUEUED": "requeued"}
    how = words.get(state or "", (state or "submitted").lower())
    said = f": ({reason})" if reason else ""
    return f"{how} in {system} as job {remote}{said}"


__all__ = [
    "NODE_FAILURE_SUBMITS", "Mirror", "SlurmOptionError", "mirror", "next_probe_delay", "parse_sbatch", "parse_scontrol", "sbatch_args",
    "slurm_job_name", "slurm_reason", "where_text",
]
