"""The submitter's job policy: what happens to a job when it exits, and periodically.

Pure decisions over a job's merged ClassAd (the schedd owns the submitter's policy,
so these run in the schedd, never in the startd). Semantics follow HTCondor:

- On exit, ``OnExitHold`` is evaluated first (true: hold, code 3 JobPolicy); then
  ``OnExitRemove`` (true or UNDEFINED: the job completes and leaves the queue; false:
  it goes back to Idle and runs again). ``max_retries``/``success_exit_code``/
  ``retry_until`` arrive folded into ``OnExitRemove`` by roost.submit, as
  condor_submit folds them; ``NumJobCompletions`` is counted before evaluating, so
  ``max_retries = 3`` means at most four runs.
- Periodically, ``PeriodicRemove`` beats ``PeriodicHold`` beats ``PeriodicRelease``;
  the pool's ``SYSTEM_PERIODIC_*`` expressions are checked after the job's own, with
  hold code 26 (SystemPolicy). A job's own hold applies to Idle and Running jobs,
  release only to held ones; neither touches Removed or Completed jobs.

Every function takes time (``now``) as a parameter and returns a plain decision.
"""

from __future__ import annotations

import signal as _signals
from dataclasses import dataclass
from typing import Any

from roost.classad import ClassAd, ExprTree, Value
from roost.core import jobstates
from roost.vocabulary import JobStatus

# the job statuses under the names the schedd's modules use (roost.vocabulary defines them)
IDLE, RUNNING, REMOVED, COMPLETED, HELD = (
    JobStatus.IDLE, JobStatus.RUNNING, JobStatus.REMOVED, JobStatus.COMPLETED, JobStatus.HELD)
TRANSFERRING_OUTPUT, SUSPENDED = JobStatus.TRANSFERRING_OUTPUT, JobStatus.SUSPENDED
STATUS_NAMES = JobStatus.WORDS

# HoldReasonCode values (HTCondor's numbering).
HOLD_USER = 1
HOLD_JOB_POLICY = 3
HOLD_FAILED_TO_CREATE_PROCESS = 6
HOLD_TRANSFER_OUTPUT_ERROR = 12
HOLD_TRANSFER_INPUT_ERROR = 13
HOLD_IWD_ERROR = 14
HOLD_SYSTEM_POLICY = 26
HOLD_OUT_OF_RESOURCES = 34  # JobOutOfResources: over its memory or disk, as HTCondor holds it
SUBCODE_DISK_EXCEEDED = 104  # HTCondor's subcode for disk (its policy templates' DISK_EXCEEDED)


@dataclass(frozen=True)
class Decision:
    """What to do with a job: ``action`` is one of ``complete``, ``requeue``, ``hold``,
    ``release``, ``remove``; ``attrs`` are attributes to set on the job with it."""

    action: str
    reason: str = ""
    code: int = 0
    subcode: int = 0
    attrs: dict[str, Any] | None = None


def _truth(ad: ClassAd, attr: str) -> bool | None:
    """The attribute's value as a boolean: None for UNDEFINED/ERROR/absent.

    Numbers count as booleans (non-zero is true), as HTCondor's policy evaluation does.
    """
    if attr not in ad:
        return None
    try:
        return _as_bool(ad.eval(attr))
    except Exception:
        return None


def _eval_in(ad: ClassAd, expr: str) -> bool | None:
    """``expr`` (text) evaluated with ``ad`` as MY; None when not a boolean."""
    try:
        return _as_bool(ExprTree(expr).eval(ad))
    except Exception:
        return None


def _as_bool(v: Any) -> bool | None:
    """A policy value as a boolean: numbers count (non-zero is true); else None."""
    if v is True or v is False:
        return v
    if type(v) is int or type(v) is float:  # not UNDEFINED/ERROR, whose enum is an int
        return v != 0
    return None


def _text(ad: ClassAd, attr: str) -> str:
    """The expression text of ``attr`` as the user wrote it (for reason messages)."""
    try:
        return str(ad.lookup(attr))
    except Exception:
        return ""


def _str_attr(ad: ClassAd, attr: str) -> str:
    if attr not in ad:
        return ""
    try:
        v = ad.eval(attr)
    except Exception:
        return ""
    return v if isinstance(v, str) else ""


def _int_attr(ad: ClassAd, attr: str, default: int = 0) -> int:
    if attr not in ad:
        return default
    try:
        v = ad.eval(attr)
    except Exception:
        return default
    if isinstance(v, bool) or v is Value.Undefined or v is Value.Error:
        return default
    if isinstance(v, int | float):
        return int(v)
    return default


def exit_attrs(ad: ClassAd, exit_code: int | None, exit_signal: int | None, now: float) -> dict[str, Any]:
    """Attributes a job gains when its process ends (set before the exit policy runs)."""
    by_signal = exit_signal is not None
    attrs: dict[str, Any] = {
        "ExitBySignal": by_signal,
        "NumJobCompletions": _int_attr(ad, "NumJobCompletions") + 1,
        "CompletionDate": int(now),
    }
    if by_signal:
        attrs["ExitSignal"] = int(exit_signal)  # type: ignore[arg-type]
    else:
        attrs["ExitCode"] = int(exit_code or 0)
    attrs["ExitStatus"] = int(exit_signal if by_signal else (exit_code or 0))  # type: ignore[arg-type]
    return attrs


def on_exit(ad: ClassAd, exit_code: int | None, exit_signal: int | None, now: float) -> Decision:
    """Decide a job's fate when its process has ended.

    ``ad`` is the merged job ad; the exit attributes are set on it here (a copy is
    not needed: the caller applies ``decision.attrs`` to its own store anyway).
    """
    attrs = exit_attrs(ad, exit_code, exit_signal, now)
    for k, v in attrs.items():
        ad[k] = v
    if _truth(ad, "OnExitHold"):
        reason = _str_attr(ad, "OnExitHoldReason") or (
            f"The job attribute OnExitHold expression '{_text(ad, 'OnExitHold')}' evaluated to TRUE"
        )
        return Decision(
            "hold", reason, HOLD_JOB_POLICY, _int_attr(ad, "OnExitHoldSubCode"), attrs
        )
    remove = _truth(ad, "OnExitRemove")
    if remove is False:
        attrs["CompletionDate"] = 0
        return Decision(
            "requeue",
            f"The job attribute OnExitRemove expression '{_text(ad, 'OnExitRemove')}' evaluated to FALSE",
            attrs=attrs,
        )
    return Decision("complete", "", attrs=attrs)


@dataclass(frozen=True)
class SystemPolicy:
    """The pool's SYSTEM_PERIODIC_* expressions (empty text: none)."""

    hold: str = ""
    release: str = ""
    remove: str = ""

    @property
    def empty(self) -> bool:
        return not (self.hold or self.release or self.remove)


def periodic(ad: ClassAd, status: int, system: SystemPolicy | None = None) -> Decision | None:
    """The periodic policy's decision for one job, or None to leave it be."""
    if status in (REMOVED, COMPLETED):
        return None
    system = system or SystemPolicy()
    if _truth(ad, "PeriodicRemove"):
        return Decision(
            "remove",
            _str_attr(ad, "PeriodicRemoveReason")
            or f"The job attribute PeriodicRemove expression '{_text(ad, 'PeriodicRemove')}' evaluated to TRUE",
            subcode=_int_attr(ad, "PeriodicRemoveSubCode"),
        )
    if system.remove and _eval_in(ad, system.remove):
        return Decision(
            "remove",
            f"The system macro SYSTEM_PERIODIC_REMOVE expression '{system.remove}' evaluated to TRUE",
        )
    if status in (IDLE, RUNNING, SUSPENDED, TRANSFERRING_OUTPUT):
        if _truth(ad, "PeriodicHold"):
            return Decision(
                "hold",
                _str_attr(ad, "PeriodicHoldReason")
                or f"The job attribute PeriodicHold expression '{_text(ad, 'PeriodicHold')}' evaluated to TRUE",
                HOLD_JOB_POLICY,
                _int_attr(ad, "PeriodicHoldSubCode"),
            )
        if system.hold and _eval_in(ad, system.hold):
            return Decision(
                "hold",
                f"The system macro SYSTEM_PERIODIC_HOLD expression '{system.hold}' evaluated to TRUE",
                HOLD_SYSTEM_POLICY,
            )
    if status == HELD:
        if _truth(ad, "PeriodicRelease"):
            return Decision(
                "release",
                f"The job attribute PeriodicRelease expression '{_text(ad, 'PeriodicRelease')}' evaluated to TRUE",
            )
        if system.release and _eval_in(ad, system.release):
            return Decision(
                "release",
                f"The system macro SYSTEM_PERIODIC_RELEASE expression '{system.release}' evaluated to TRUE",
            )
    return None


def has_periodic(ad_obj: dict[str, Any]) -> bool:
    """Whether a (cluster or diff) ad in wire form carries any periodic expression that
    could fire; literal ``false`` ones cannot. Lets the schedd skip building ads for the
    common cluster with no periodic policy."""
    for k in ("PeriodicHold", "PeriodicRelease", "PeriodicRemove"):
        v = ad_obj.get(k)
        if v is not None and v is not False and v != 0:
            return True
    return False


def transition_attrs(old_status: int, new_status: int, now: float) -> dict[str, Any]:
    """Attributes every status change sets (HTCondor keeps both on the job)."""
    return {"LastJobStatus": old_status, "JobStatus": new_status, "EnteredCurrentStatus": int(now)}


def move_attrs(old: int, new: int, now: float, who: str = "") -> dict[str, Any]:
    """What a move from status ``old`` to ``new`` sets (:func:`transition_attrs`);
    nothing when the status stays. IllegalMove (its message led by ``who``) for a move
    the job state table has not."""
    if old == new:
        return {}
    if not jobstates.is_move(old, new):
        raise jobstates.IllegalMove(f"{who}no event moves a job from {STATUS_NAMES.get(old, old)} "
                                    f"to {STATUS_NAMES.get(new, new)}")
    return transition_attrs(old, new, now)


def hold_attrs(reason: str, code: int, subcode: int = 0) -> dict[str, Any]:
    """Attributes a held job carries."""
    return {"HoldReason": reason, "HoldReasonCode": code, "HoldReasonSubCode": subcode}


# HTCondor's CONDOR_HOLD_CODE names: the attribute names in NumHoldsByReason.
HOLD_CODE_NAMES = {
    0: "Unspecified", 1: "UserRequest", 2: "GlobusGramError", 3: "JobPolicy", 4: "CorruptedCredential",
    5: "JobPolicyUndefined", 6: "FailedToCreateProcess", 7: "UnableToOpenOutput", 8: "UnableToOpenInput",
    9: "UnableToOpenOutputStream", 10: "UnableToOpenInputStream", 11: "InvalidTransferAck",
    12: "TransferOutputError", 13: "TransferInputError", 14: "IwdError", 15: "SubmittedOnHold",
    16: "SpoolingInput", 17: "JobShadowMismatch", 18: "InvalidTransferGoAhead", 19: "HookPrepareJobFailure",
    20: "MissedDeferredExecutionTime", 21: "StartdHeldJob", 22: "UnableToInitUserLog",
    23: "FailedToAccessUserAccount", 24: "NoCompatibleShadow", 25: "InvalidCronSettings", 26: "SystemPolicy",
    27: "SystemPolicyUndefined", 28: "GlexecChownSandboxToUser", 29: "PrivsepChownSandboxToUser",
    30: "GlexecChownSandboxToCondor", 31: "PrivsepChownSandboxToCondor", 32: "MaxTransferInputSizeExceeded",
    33: "MaxTransferOutputSizeExceeded", 34: "JobOutOfResources", 35: "InvalidDockerImage",
    36: "FailedToCheckpoint", 37: "EC2UserError", 38: "EC2InternalError", 39: "EC2AdminError",
    40: "EC2ConnectionProblem", 41: "EC2ServerError", 42: "EC2InstancePotentiallyLostError",
    43: "PreScriptFailed", 44: "PostScriptFailed", 45: "SingularityTestFailed", 46: "JobDurationExceeded",
    47: "JobExecuteExceeded", 48: "HookShadowPrepareJobFailure",
}


def hold_count_attrs(num_holds: Any, by_reason: Any, code: int) -> dict[str, Any]:
    """The counters each hold bumps, as HTCondor's schedd keeps them: ``NumHolds`` and
    ``NumHoldsByReason`` (a nested ad, hold-code name -> count, e.g.
    ``[ UserRequest = 1; JobPolicy = 2 ]``; returned as a new dict in wire form).
    ``num_holds``/``by_reason`` are the job's current values (anything else counts as none)."""
    n = num_holds if type(num_holds) is int else 0
    counts = dict(by_reason) if isinstance(by_reason, dict) else {}
    name = HOLD_CODE_NAMES.get(code, "Unspecified")
    prev = counts.get(name)
    counts[name] = (prev if type(prev) is int else 0) + 1
    return {"NumHolds": n + 1, "NumHoldsByReason": counts}


def start_attrs(ad: ClassAd, remote_host: str, now: float) -> dict[str, Any]:
    """Attributes a job gains when it starts running on a slot."""
    starts = _int_attr(ad, "NumJobStarts") + 1
    attrs: dict[str, Any] = {
        "NumJobStarts": starts,
        "NumShadowStarts": _int_attr(ad, "NumShadowStarts") + 1,
        "JobRunCount": _int_attr(ad, "JobRunCount") + 1,
        "JobCurrentStartDate": int(now),
        "RemoteHost": remote_host,
    }
    if _int_attr(ad, "JobStartDate") <= 0:
        attrs["JobStartDate"] = int(now)
    return attrs


def usage_attrs(ad: ClassAd, usage: dict[str, Any] | None, started: float, now: float) -> dict[str, Any]:
    """Accumulated usage after a run: wall clock and CPU times (seconds)."""
    usage = usage or {}
    reported = usage.get("RemoteWallClockTime", usage.get("wall"))
    if isinstance(reported, int | float) and not isinstance(reported, bool) and reported >= 0:
        wall = float(reported)
    else:
        wall = max(0.0, now - started) if started else 0.0

    def num(attr: str) -> float:
        if attr not in ad:
            return 0.0
        try:
            v = ad.eval(attr)
        except Exception:
            return 0.0
        return float(v) if type(v) is int or type(v) is float else 0.0  # not UNDEFINED's int enum

    def given(*names: str) -> float:
        for n in names:
            v = usage.get(n)
            if isinstance(v, int | float) and not isinstance(v, bool) and v >= 0:
                return float(v)
        return 0.0

    user = given("user", "RemoteUserCpu")
    system = given("system", "RemoteSysCpu")
    out: dict[str, Any] = {}
    for k in ("MemoryUsage", "ResidentSetSize", "DiskUsage", "ImageSize"):
        v = usage.get(k)
        if isinstance(v, int | float) and not isinstance(v, bool):
            out[k] = v
    cpus = num("RequestCpus") or 1.0
    return out | {
        # this run ended with the job's own exit: its work counts as committed
        "CommittedTime": int(num("CommittedTime") + wall),
        "CommittedSlotTime": num("CommittedSlotTime") + wall * cpus,
        "CumulativeSlotTime": num("CumulativeSlotTime") + wall * cpus,
        "RemoteWallClockTime": num("RemoteWallClockTime") + wall,
        "RemoteUserCpu": user,
        "RemoteSysCpu": system,
        "CumulativeRemoteUserCpu": num("CumulativeRemoteUserCpu") + user,
        "CumulativeRemoteSysCpu": num("CumulativeRemoteSysCpu") + system,
        "LastRemoteWallClockTime": wall,
    }


def signal_number(v: Any) -> int | None:
    """A job's signal attribute's value (``SIGUSR1``, ``USR1`` or a number) as a number;
    None when it names no signal (then the default applies)."""
    if type(v) is int and 0 < v < 65:
        return v
    if isinstance(v, str):
        text = v.strip().upper()
        if text.isdigit() and 0 < int(text) < 65:
            return int(text)
        try:
            return int(_signals.Signals[text if text.startswith("SIG") else "SIG" + text])
        except KeyError:
            return None
    return None
