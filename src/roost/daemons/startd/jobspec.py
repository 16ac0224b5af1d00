"""What a starter needs from a job ad: command line, environment, files, identity.

Read once per activation from the job ad the schedd sent; errors here are
the job's fault (bad Arguments syntax, say) and become a ``failed`` report.
"""

from __future__ import annotations

import os
import posixpath
import pwd
import signal
from dataclasses import dataclass, field
from typing import Any

from roost.classad import ClassAd, Value
from roost.core import jobpolicy as jp
from roost.submit.arglist import ArgSyntaxError, ad_environment, split_v2_raw
from roost.universes import registry


class JobSpecError(Exception):
    """The job ad cannot be run as written."""


@dataclass
class JobSpec:
    job_id: str  # "C.P"
    cmd: str  # as in the ad (absolute on the submit side, or relative to Iwd)
    args: list[str]
    env: dict[str, str]
    iwd: str
    transfer: bool  # files move through GET_FILES / PUT_FILES; the job runs in the sandbox
    transfer_executable: bool
    stdin: str | None  # None: /dev/null
    stdout: str | None
    stderr: str | None
    transfer_output: list[str] | None  # None: every new or changed file in the sandbox
    owner: str
    max_vacate_time: float
    extra_env: dict[str, str] = field(default_factory=dict)
    #: kill_sig (vacate, preemption), remove_kill_sig (condor_rm), hold_kill_sig (hold)
    kill_sig: int = signal.SIGTERM
    remove_kill_sig: int | None = None
    hold_kill_sig: int | None = None
    #: coresize (CoreSize): the job's core file limit, bytes; None leaves the startd's
    core_size: int | None = None
    #: checkpoint_exit_code (SuccessCheckpointExitCode): the job exits with it after writing a
    #: checkpoint, which is sent to the schedd, and runs again in place
    checkpoint_exit_code: int | None = None
    #: transfer_checkpoint_files (TransferCheckpoint); None: what output transfer would send
    checkpoint_files: list[str] | None = None
    #: +WantCheckpointSignal with +CheckpointInterval (seconds): the starter sends this
    #: signal (+CheckpointSig, else kill_sig, as HTCondor's) every interval; the job writes
    #: its checkpoint and exits with its checkpoint code (ckpt_signal.py). None: no signal
    checkpoint_signal: int | None = None
    checkpoint_interval: float = 0.0
    #: CheckpointStaggerOffset, from the schedd: the job's phase within the interval
    #: (None: one interval after the start, not staggered)
    checkpoint_stagger_offset: float | None = None
    #: +SuccessCheckpointExitBySignal / SuccessCheckpointExitSignal: a job that says it
    #: checkpointed by dying of this signal (the wiki's "working around the assumptions")
    checkpoint_exit_signal: int | None = None
    #: when_to_transfer_output = ON_EXIT_OR_EVICT: an evicted job's outputs are kept in
    #: the spool (as a checkpoint) and come back to its next run
    evict_transfer: bool = False
    #: preserve_relative_paths: a relative entry of a transfer list keeps its directories
    #: in the sandbox and on the way back (not just its base name)
    preserve_relative_paths: bool = False
    #: stream_output / stream_error (StreamOut, StreamErr): sent while the job runs
    stream_out: bool = False
    stream_err: bool = False
    #: Chirp (startd/chirp.py): WantIOProxy; WantRemoteUpdates and WantDelayedUpdates
    #: (None: the ad does not say, HTCondor's defaults apply)
    want_io_proxy: bool = False
    want_remote_updates: bool | None = None
    want_delayed_updates: bool | None = None
    #: the ad itself: Chirp's get_job_attr_delayed answers from it
    job_ad: ClassAd | None = field(default=None, repr=False, compare=False)


def _str(ad: ClassAd, name: str) -> str | None:
    v = ad.eval(name) if name in ad else Value.Undefined
    return v if isinstance(v, str) else None


def _num(ad: ClassAd, name: str, default: float) -> float:
    if name not in ad:
        return default
    v = ad.eval(name)
    if type(v) in (int, float):
        return float(v)
    return default


def _bool(ad: ClassAd, name: str, default: bool) -> bool:
    if name not in ad:
        return default
    v = ad.eval(name)
    return v if isinstance(v, bool) else default


def _ad_bool(ad: ClassAd, name: str) -> bool | None:
    """A boolean as HTCondor's EvaluateAttrBool reads it (a number counts); None when
    the ad does not set it or it is no boolean."""
    if name not in ad:
        return None
    v = ad.eval(name)
    if isinstance(v, bool):
        return v
    return v != 0 if type(v) in (int, float) else None


def _null(path: str | None) -> str | None:
    return None if not path or path == "/dev/null" else path


def parse_job(ad: ClassAd, fs_domain: str) -> JobSpec:
    """The starter's view of a job ad (HTCondor's attribute names)."""
    cluster, proc = ad.eval("ClusterId"), ad.eval("ProcId")
    if type(cluster) is not int or type(proc) is not int:
        raise JobSpecError("job ad has no integer ClusterId and ProcId")
    cmd = _str(ad, "Cmd")
    universe = registry.for_job(lambda a: ad.eval(a) if a in ad else None)
    if not cmd and (universe is None or universe.needs_cmd):
        raise JobSpecError("job ad has no Cmd (executable)")  # a container's image may say what to run
    try:
        arguments = _str(ad, "Arguments")
        if arguments is not None:
            args = split_v2_raw(arguments)
        else:
            args = (_str(ad, "Args") or "").split()
        env = dict(ad_environment(lambda name: _str(ad, name)))  # Environment, else Env (env = A=1;B=2)
    except ArgSyntaxError as e:
        raise JobSpecError(str(e)) from None
    should = (_str(ad, "ShouldTransferFiles") or "YES").upper()
    if should == "IF_NEEDED":
        transfer = _str(ad, "FileSystemDomain") != fs_domain
    else:
        transfer = should != "NO"
    out = _str(ad, "TransferOutput")
    return JobSpec(
        job_id=f"{cluster}.{proc}",
        cmd=cmd or "",
        args=args,
        env=env,
        iwd=_str(ad, "Iwd") or "/",
        transfer=transfer,
        transfer_executable=_bool(ad, "TransferExecutable", True),
        stdin=_null(_str(ad, "In")),
        stdout=_null(_str(ad, "Out")),
        stderr=_null(_str(ad, "Err")),
        transfer_output=None if out is None else [p.strip() for p in out.split(",") if p.strip()],
        owner=_str(ad, "Owner") or "",
        max_vacate_time=_num(ad, "JobMaxVacateTime", 10.0),
        kill_sig=_signal(ad, "KillSig") or signal.SIGTERM,
        remove_kill_sig=_signal(ad, "RemoveKillSig"),
        hold_kill_sig=_signal(ad, "HoldKillSig"),
        core_size=_core_size(ad),
        checkpoint_exit_code=_checkpoint_code(ad),
        **_periodic_checkpoint(ad),
        checkpoint_exit_signal=_checkpoint_signal(ad),
        evict_transfer=(_str(ad, "WhenToTransferOutput") or "").upper() == "ON_EXIT_OR_EVICT",
        preserve_relative_paths=_bool(ad, "PreserveRelativePaths", False),
        stream_out=_bool(ad, "StreamOut", False),
        stream_err=_bool(ad, "StreamErr", False),
        want_io_proxy=_ad_bool(ad, "WantIOProxy") or False,
        want_remote_updates=_ad_bool(ad, "WantRemoteUpdates"),
        want_delayed_updates=_ad_bool(ad, "WantDelayedUpdates"),
        job_ad=ad,
        checkpoint_files=None if (ck := _str(ad, "TransferCheckpoint")) is None
        else [p.strip() for p in ck.split(",") if p.strip()],
    )


def _periodic_checkpoint(ad: ClassAd) -> dict[str, Any]:
    """The periodic checkpoint signal's fields: HTCondor's +WantCheckpointSignal and
    +CheckpointSig; the interval is the job's +CheckpointInterval (roost: HTCondor's
    startd decides with PERIODIC_CHECKPOINT, which roost does not read)."""
    interval = _num(ad, "CheckpointInterval", 0.0)
    if not _bool(ad, "WantCheckpointSignal", False) or not interval > 0:
        return {}
    offset = _num(ad, "CheckpointStaggerOffset", -1.0)
    return {
        "checkpoint_signal": _signal(ad, "CheckpointSig") or _signal(ad, "KillSig") or signal.SIGTERM,
        "checkpoint_interval": interval,
        "checkpoint_stagger_offset": offset if offset >= 0 else None,
    }


def _checkpoint_code(ad: ClassAd) -> int | None:
    """checkpoint_exit_code (SuccessCheckpointExitCode; CheckpointExitCode in ads roost wrote before)."""
    for name in ("CheckpointExitCode", "SuccessCheckpointExitCode"):
        v = ad.eval(name) if name in ad else None
        if type(v) is int and 0 < v < 256:
            return v
    return None


def _checkpoint_signal(ad: ClassAd) -> int | None:
    """+SuccessCheckpointExitBySignal's signal; never SIGKILL (what a memory or disk
    limit kills with must not pass for a checkpoint)."""
    if not _bool(ad, "SuccessCheckpointExitBySignal", False) or "SuccessCheckpointExitSignal" not in ad:
        return None
    sig = jp.signal_number(ad.eval("SuccessCheckpointExitSignal"))
    return None if sig == signal.SIGKILL else sig


def _core_size(ad: ClassAd) -> int | None:
    """condor_submit's ``coresize`` (bytes; -1: no limit)."""
    v = ad.eval("CoreSize") if "CoreSize" in ad else None
    if type(v) is int or (type(v) is float and v == v):
        return -1 if v < 0 else int(v)
    return None


def _signal(ad: ClassAd, name: str) -> int | None:
    """A job's signal attribute as a number; None when absent or unknown (then the
    default applies)."""
    if name not in ad:
        return None
    return jp.signal_number(ad.eval(name))


def executable_path(spec: JobSpec, sandbox: str) -> str:
    """Where the program is on this machine: in the sandbox when it was transferred."""
    if spec.transfer and spec.transfer_executable:
        return os.path.join(sandbox, posixpath.basename(spec.cmd))
    return spec.cmd if os.path.isabs(spec.cmd) else os.path.join(spec.iwd, spec.cmd)


def job_file(spec: JobSpec, path: str | None, sandbox: str) -> str | None:
    """stdin/stdout/stderr on this machine: the basename in the sandbox when transferring."""
    if path is None:
        return None
    if spec.transfer:
        return os.path.join(sandbox, posixpath.basename(path))
    return path if os.path.isabs(path) else os.path.join(spec.iwd, path)


@dataclass(frozen=True)
class Identity:
    """Who a job runs as."""

    uid: int
    gid: int
    name: str
    home: str
    real_owner: bool = False  # the job's own Owner (gets its supplementary groups)

    @property
    def switch(self) -> bool:
        """Whether starting the job must change user (only when we are root)."""
        return os.geteuid() == 0


def local_owner(owner: str, user: str, uid_domain: str) -> str:
    """The account a job may run as here: its ``Owner`` when its submitter (``User``,
    ``owner@UID_DOMAIN``) is of this host's UID_DOMAIN, else none (a slot user): the
    same name in another domain is another person."""
    if "@" not in user:
        return ""  # a job ad that does not say whose it is runs as nobody in particular
    return owner if user.rpartition("@")[2].lower() == uid_domain.lower() else ""


def slot_number(slot_name: str) -> str | None:
    """``slot3``, ``slot3_2``, ``slot3@host`` -> ``"3"`` (for SLOT<N>_USER)."""
    number = slot_name.split("@", 1)[0].removeprefix("slot").split("_", 1)[0]
    return number if number.isdigit() else None


def job_identity(owner: str, allow_owner: bool, slot_user: str) -> Identity:
    """HTCondor's rule: as root, run as the job's Owner when that is a real non-root
    user and STARTER_ALLOW_RUNAS_OWNER is true, otherwise as SLOT_USER (nobody);
    when not root, as ourselves."""
    if os.geteuid() != 0:
        pw = pwd.getpwuid(os.geteuid())
        return Identity(pw.pw_uid, pw.pw_gid, pw.pw_name, pw.pw_dir)
    if allow_owner and owner:
        try:
            pw = pwd.getpwnam(owner)
        except KeyError:
            pw = None
        if pw is not None and pw.pw_uid != 0:
            return Identity(pw.pw_uid, pw.pw_gid, pw.pw_name, pw.pw_dir, real_owner=True)
    try:
        pw = pwd.getpwnam(slot_user)
    except KeyError:
        raise JobSpecError(f"SLOT_USER {slot_user!r} does not exist on this machine") from None
    if pw.pw_uid == 0:
        raise JobSpecError("refusing to run a job as root (SLOT_USER is root)")
    return Identity(pw.pw_uid, pw.pw_gid, pw.pw_name, pw.pw_dir)
