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

from roost.classad import ClassAd, Value
from roost.core import jobpolicy as jp
from roost.submit.arglist import ArgSyntaxError, split_v2_raw


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
    #: checkpoint_exit_code (CheckpointExitCode): the job exits with it after writing a
    #: checkpoint, which is sent to the schedd, and runs again in place
    checkpoint_exit_code: int | None = None
    #: transfer_checkpoint_files (TransferCheckpoint); None: what output transfer would send
    checkpoint_files: list[str] | None = None


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


def _null(path: str | None) -> str | None:
    return None if not path or path == "/dev/null" else path


def parse_job(ad: ClassAd, fs_domain: str) -> JobSpec:
    """The starter's view of a job ad (HTCondor's attribute names)."""
    cluster, proc = ad.eval("ClusterId"), ad.eval("ProcId")
    if type(cluster) is not int or type(proc) is not int:
        raise JobSpecError("job ad has no integer ClusterId and ProcId")
    cmd = _str(ad, "Cmd")
    if not cmd:
        raise JobSpecError("job ad has no Cmd (executable)")
    try:
        arguments = _str(ad, "Arguments")
        if arguments is not None:
            args = split_v2_raw(arguments)
        else:
            args = (_str(ad, "Args") or "").split()
        env: dict[str, str] = {}
        environment = _str(ad, "Environment")
        if environment is not None:
            for word in split_v2_raw(environment):
                name, eq, value = word.partition("=")
                if eq and name:
                    env[name] = value
        elif (v1 := _str(ad, "Env")) is not None:
            for word in v1.split(";"):
                name, eq, value = word.strip().partition("=")
                if eq and name:
                    env[name] = value
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
        cmd=cmd,
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
        checkpoint_files=None if (ck := _str(ad, "TransferCheckpoint")) is None
        else [p.strip() for p in ck.split(",") if p.strip()],
    )


def _checkpoint_code(ad: ClassAd) -> int | None:
    v = ad.eval("CheckpointExitCode") if "CheckpointExitCode" in ad else None
    return v if type(v) is int and 0 < v < 256 else None


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
