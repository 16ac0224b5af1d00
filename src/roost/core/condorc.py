"""Condor-C's decisions (issue 30, ``grid_resource = condor <schedd> <pool>``): the job
ad a local grid job becomes at another pool's schedd, what that remote job's state
means in the user's queue, and where its output goes back to. Pure: the grid manager
(``daemons/schedd/gridcondorc.py``) talks to the remote schedd and feeds the answers
here.

As HTCondor's Condor-C: the remote job is an ordinary vanilla job of the other pool,
run under its policy; it is submitted held while its input is spooled (HoldReasonCode
16, as ``condor_submit -spool``) and stays in the remote queue once completed
(``LeaveJobInQueue``) until its output has been fetched, which then removes it there.
Each submission carries a tag (``RoostSubmitTag``) committed locally before the
submit, so a grid manager killed before it could record the remote id finds the job
by its tag instead of submitting a second one.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import Any

from roost.core.gridbatch import HOLD_REMOTE_ENDED, Mirror
from roost.core.spooling import (
    LEAVE_IN_QUEUE,
    SPOOLING_HOLD_CODE,
    SPOOLING_HOLD_REASON,
    file_items,
    under_iwd,
)
from roost.vocabulary import JobStatus

#: the remote job's attribute naming the local submission it is
TAG_ATTR = "RoostSubmitTag"
#: the remote job's stdout/stderr, in its spool directory, fetched back to Out/Err
STDOUT, STDERR = "_condorc_stdout", "_condorc_stderr"
VANILLA = 5

#: what a remote job's ad must not inherit from the local one: identity and bookkeeping
#: the remote schedd gives its own, the grid attributes, the user log (written here)
_NOT_SENT = frozenset(a.lower() for a in (
    "ClusterId", "ProcId", "Owner", "User", "GlobalJobId", "QDate", "JobStatus", "EnteredCurrentStatus",
    "GridResource", "GridJobId", "GridJobStatus", "GridJobSubmitName", "NumGridSubmits", "UserLog",
    "UserLogUseXML", "DAGManJobId", "DAGNodeName", "DAGParentNodeNames", "HoldReason", "HoldReasonCode",
    "HoldReasonSubCode", "LastHoldReason", "LastHoldReasonCode", "LastHoldReasonSubCode", "ReleaseReason",
    "NumJobStarts", "NumShadowStarts", "JobRunCount", "JobCurrentStartDate", "JobStartDate", "RemoteHost",
    "LastRemoteHost", "ShadowBday", "CompletionDate", "ExitCode", "ExitBySignal", "ExitSignal", "ExitStatus",
    "RemoteWallClockTime", "CumulativeSlotTime", "CommittedTime", "LeaveJobInQueue", "StageInStart",
    "StageInFinish", "StageOutStart", "StageOutFinish", "Iwd", "Out", "Err", "In", "Cmd", "TransferInput",
    "TransferOutputRemaps", "JobUniverse", "SUBMIT_Iwd", "SUBMIT_Cmd", "SUBMIT_In", "SUBMIT_Out",
    "SUBMIT_Err", "SUBMIT_TransferInput", "SUBMIT_TransferOutputRemaps", "Notification", "NotifyUser",
    "AccountingGroup", "AcctGroup", "AcctGroupUser", "AutoClusterId", "AutoClusterAttrs", "JobPrio",
    "PeriodicHold", "PeriodicRelease", "PeriodicRemove", "OnExitHold", "OnExitRemove", "BatchQueue",
    "BatchRuntime", "BatchProject", "Environment", "Env", "GetEnv",
))


class CondorCError(ValueError):
    """A job that cannot be handed to another pool as it stands (the message says why)."""


def submit_tag(schedd: str, cluster: int, proc: int, attempt: int, nonce: str | None = None) -> str:
    """The tag a submission carries: this schedd, this job, this attempt, and a random
    nonce (committed here before the submit), so no other user of the remote pool can
    plant a job under the tag we will look for next."""
    safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", schedd)[:80]
    nonce = secrets.token_hex(8) if nonce is None else re.sub(r"[^A-Za-z0-9]", "_", nonce)[:64]
    return f"roost-condorc:{safe}#{cluster}.{proc}#{attempt}#{nonce}"


def grid_job_id(schedd: str, pool: str, remote: str) -> str:
    """HTCondor's GridJobId for a Condor-C job: ``condor <schedd> <pool> <cluster.proc>``."""
    return f"condor {schedd} {pool} {remote}"


def remote_id(grid_id: Any) -> str | None:
    """The remote ``cluster.proc`` of a GridJobId (None if it is not a Condor-C one)."""
    words = grid_id.split() if isinstance(grid_id, str) else []
    if len(words) == 4 and words[0] == "condor" and re.fullmatch(r"\d+\.\d+", words[3]):
        return words[3]
    return None


def input_names(get: Any) -> list[tuple[str, str]]:
    """(path here, name in the remote spool) of every file the job sends: its
    executable (unless ``transfer_executable = false``), stdin and each
    ``transfer_input_files`` entry. A directory or URL entry is refused:
    CondorCError naming it."""
    iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
    out: list[tuple[str, str]] = []
    cmd = get("Cmd")
    if isinstance(cmd, str) and cmd and get("TransferExecutable") is not False:
        out.append((under_iwd(iwd, cmd), os.path.basename(cmd)))
    stdin = get("In")
    if isinstance(stdin, str) and stdin and stdin != os.devnull:
        out.append((under_iwd(iwd, stdin), os.path.basename(stdin)))
    for item in file_items(get("TransferInput")):
        if "://" in item or item.endswith("/"):
            raise CondorCError(f"transfer_input_files entry {item!r}: only plain files travel to another "
                               "pool's schedd (no directories or URLs)")
        out.append((under_iwd(iwd, item), os.path.basename(item)))
    names = [n for _, n in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CondorCError(f"input files with the same name: {', '.join(twice)}")
    return out


def remote_ad(ad: dict[str, Any], tag: str) -> dict[str, Any]:
    """The cluster ad (wire form) the remote schedd is sent for local job ``ad``: a
    vanilla job, held until its input is spooled, staying in the queue once completed
    until its output has been fetched; no Owner (the remote schedd makes it the user
    its pool mapped our token to)."""
    get = ad.get
    out = {k: v for k, v in ad.items() if k.lower() not in _NOT_SENT}
    cmd = get("Cmd")
    if not isinstance(cmd, str) or not cmd:
        raise CondorCError("the job has no executable")
    sends_cmd = get("TransferExecutable") is not False
    out.update({
        "JobUniverse": VANILLA, "Cmd": os.path.basename(cmd) if sends_cmd else cmd,
        "Iwd": "/tmp", "Out": STDOUT, "Err": STDERR, TAG_ATTR: tag,
        "JobStatus": JobStatus.HELD, "HoldReason": SPOOLING_HOLD_REASON, "HoldReasonCode": SPOOLING_HOLD_CODE,
        "LeaveJobInQueue": f"/Expr({LEAVE_IN_QUEUE})/", "ShouldTransferFiles": "YES",
        "WhenToTransferOutput": "ON_EXIT",
    })
    stdin = get("In")
    if isinstance(stdin, str) and stdin and stdin != os.devnull:
        out["In"] = os.path.basename(stdin)
    items = file_items(get("TransferInput"))
    if items:
        out["TransferInput"] = ",".join(os.path.basename(i) for i in items)
    out.setdefault("Requirements", "/Expr(true)/")
    return out


def mirror(remote: dict[str, Any] | None) -> Mirror:
    """A remote job's ad (its JobStatus, HoldReason, ExitCode...) in the local queue's
    terms. None (not in the remote queue) is handled by the caller."""
    remote = remote or {}
    status = remote.get("JobStatus")
    if status == JobStatus.HELD and remote.get("HoldReasonCode") == SPOOLING_HOLD_CODE:
        return Mirror(JobStatus.IDLE, "STAGING_IN")
    if status == JobStatus.IDLE:
        return Mirror(JobStatus.IDLE, "IDLE")
    if status in (JobStatus.RUNNING, JobStatus.TRANSFERRING_OUTPUT):
        return Mirror(JobStatus.RUNNING, "RUNNING")
    if status == JobStatus.SUSPENDED:
        return Mirror(JobStatus.SUSPENDED, "SUSPENDED")
    if status == JobStatus.COMPLETED:
        if remote.get("ExitBySignal") is True:
            sig = remote.get("ExitSignal")
            return Mirror(JobStatus.COMPLETED, "COMPLETED", exit_signal=sig if isinstance(sig, int) else 9,
                          done=True)
        code = remote.get("ExitCode")
        return Mirror(JobStatus.COMPLETED, "COMPLETED", exit_code=code if isinstance(code, int) else 0, done=True)
    if status == JobStatus.HELD:
        reason = remote.get("HoldReason") or "no reason given"
        code = remote.get("HoldReasonCode")
        return Mirror(JobStatus.HELD, "HELD", hold_reason=f"the remote schedd held the job: {reason}",
                      hold_code=code if isinstance(code, int) else HOLD_REMOTE_ENDED, done=True)
    if status == JobStatus.REMOVED:
        return Mirror(JobStatus.HELD, "REMOVED", hold_reason="the job was removed from the remote schedd "
                      "outside roost", hold_code=HOLD_REMOTE_ENDED, done=True)
    return Mirror(JobStatus.IDLE, str(status))


def poll_constraint(ids: list[str]) -> str:
    """One query's constraint for every remote job of one remote schedd."""
    parts = []
    for rid in sorted(set(ids)):
        c, _, p = rid.partition(".")
        parts.append(f"(ClusterId == {int(c)} && ProcId == {int(p)})")
    return " || ".join(parts) or "false"


def wanted_outputs(get: Any) -> frozenset[str] | None:
    """The names a completed remote job may send back: its stdout and stderr and the
    base names of ``transfer_output_files``; None (every new top-level file, as
    HTCondor's file transfer does) when the job names none."""
    items = file_items(get("TransferOutput"))
    if not items:
        return None
    return frozenset({STDOUT, STDERR, *(os.path.basename(i.rstrip("/")) for i in items)})


def keep_output(name: str, wanted: frozenset[str] | None) -> bool:
    """Whether a file the remote schedd announced is written into the sandbox: a plain
    top-level name, and one the job asked for."""
    if not name or "/" in name or name.startswith(".") or name in (".", ".."):
        return False
    return wanted is None or name in wanted


def output_destination(get: Any, name: str) -> str | None:
    """Where a fetched file goes here: stdout/stderr to Out/Err (None when the job
    sends them nowhere), anything else into Iwd under its remapped name."""
    iwd = get("Iwd") if isinstance(get("Iwd"), str) else "/"
    if name in (STDOUT, STDERR):
        dst = get("Out" if name == STDOUT else "Err")
        return under_iwd(iwd, dst) if isinstance(dst, str) and dst and dst != os.devnull else None
    remaps: dict[str, str] = {}
    value = get("TransferOutputRemaps")
    if isinstance(value, str):
        for part in value.split(";"):
            src, sep, dest = part.partition("=")
            if sep and src.strip():
                remaps[src.strip()] = dest.strip()
    return under_iwd(iwd, remaps.get(name, name))


__all__ = ["STDERR", "STDOUT", "TAG_ATTR", "CondorCError", "grid_job_id", "input_names", "keep_output", "mirror",
           "output_destination", "poll_constraint", "remote_ad", "remote_id", "submit_tag", "wanted_outputs"]
