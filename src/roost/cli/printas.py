"""The PRINTAS functions of HTCondor's print format files (``-print-format``), as 25.0.13's
print_format_tables.cpp and condor_q's own table (queue.cpp) define them.

A *render* function sees the column's value, the whole ad and the column, and returns
(valid, value); the column's printf (the table's) then prints that value. A *formatter*
gets the value (a number, for "int"/"float") and returns the text itself; no printf
applies. condor_q's versions win where the two tables differ (CPU_TIME, JOB_STATUS...).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from roost.classad import Value
from roost.cli.jobview import STATUS_LETTERS
from roost.vocabulary import Activity, JobStatus, SlotState

_UNIVERSES = {1: "Standard", 2: "Pipe", 3: "Linda", 4: "PVM", 5: "Vanilla", 6: "PVMD", 7: "Scheduler", 8: "MPI",
              9: "Grid", 10: "Java", 11: "Parallel", 12: "Local", 13: "VM"}
_RAW_STATUS = {1: "Idle   ", 2: "Running", 3: "Removed", 4: "Complet", 5: "Held   ", 6: "XFerOut", 7: "Suspend",
               8: "Failed ", 9: "Blocked"}


def attr(ad: dict[str, Any], name: str) -> Any:
    v = ad.get(name)
    if v is None:
        low = name.lower()
        v = next((val for k, val in ad.items() if k.lower() == low), None)
    return v


def _int(v: Any) -> int | None:
    if type(v) is bool:
        return None
    if type(v) is int:
        return v
    if type(v) is float:
        return int(v)
    return None


def _str(ad: dict[str, Any], name: str) -> str | None:
    v = attr(ad, name)
    return v if type(v) is str and not v.startswith("/Expr(") else None


def _r_owner(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    owner = _str(ad, "Owner")
    return owner is not None, owner


def _r_dag_owner(v: Any, ad: dict[str, Any], now: float, _c: Any = None) -> tuple[bool, Any]:
    node = _str(ad, "DAGNodeName")
    if attr(ad, "DAGManJobId") is not None and node is not None:
        return True, node
    return _r_owner(v, ad, now)


def _r_job_id(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    cluster = _int(attr(ad, "ClusterId"))
    if cluster is None:
        return False, None
    return True, f"{cluster}.{_int(attr(ad, 'ProcId')) or 0}"


def _r_job_status(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    status = _int(attr(ad, "JobStatus"))
    if status is None:
        return False, None
    first, second = STATUS_LETTERS.get(status, {8: "F", 9: "B"}.get(status, " ")), " "
    queued = attr(ad, "TransferQueued") is True
    if attr(ad, "TransferringInput") is True:
        first, second = "<", "q" if queued else " "
    if attr(ad, "TransferringOutput") is True or status == JobStatus.TRANSFERRING_OUTPUT:
        first, second = "q" if queued else " ", ">"
    return True, first + second


def _r_cpu_time(_v: Any, ad: dict[str, Any], now: float, _c: Any = None) -> tuple[bool, Any]:
    """condor_q's RUN_TIME: earlier runs' wall clock plus the current run's (job_time)."""
    if not isinstance(attr(ad, "RemoteUserCpu"), (int, float)):
        return False, None
    status = _int(attr(ad, "JobStatus"))
    clock = attr(ad, "ServerTime")
    clock = clock if isinstance(clock, (int, float)) and not isinstance(clock, bool) else now
    total = attr(ad, "RemoteWallClockTime")
    total = float(total) if isinstance(total, (int, float)) else 0.0
    bday = attr(ad, "ShadowBday")
    if status in JobStatus.ON_A_SLOT and isinstance(bday, (int, float)) and bday:
        total += clock - bday
    return True, total


def _r_memory_usage(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    """MemoryUsage (MB), else ImageSize (KB) in MB."""
    used = _int(attr(ad, "MemoryUsage"))
    if used is not None:
        return True, float(used)
    size = _int(attr(ad, "ImageSize"))
    if size is not None:
        return True, size / 1024.0
    return False, None


def _r_batch_name(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    name = _str(ad, "JobBatchName")
    if name is not None:
        return True, name
    if _int(attr(ad, "JobUniverse")) == 7:
        return True, f"DAG: {_int(attr(ad, 'ClusterId')) or 0}"
    node = _str(ad, "DAGNodeName")
    if attr(ad, "DAGManJobId") is not None and node is not None:
        return True, "NODE: " + node
    return False, None


def _args(ad: dict[str, Any]) -> str:
    args = _str(ad, "Arguments")
    return args if args else (_str(ad, "Args") or "")


def _r_job_description(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    cmd = _str(ad, "Cmd")
    if cmd is None:
        return False, None
    desc = _str(ad, "MATCH_EXP_JobDescription") or _str(ad, "JobDescription")
    if desc:
        return True, f"({desc})"
    args = _args(ad)
    return True, os.path.basename(cmd) + (" " + args if args else "")


def _r_job_command(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    cmd = _str(ad, "Cmd")
    if cmd is None:
        return False, None
    args = _str(ad, "Args") or _str(ad, "Arguments")
    return True, cmd + (" " + args if args else "")


def _r_remote_host(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    if _int(attr(ad, "JobUniverse")) == 9:
        host = _str(ad, "EC2RemoteVirtualMachineName") or _str(ad, "GridResource")
        return host is not None, host
    host = _str(ad, "RemoteHost")
    return host is not None, host


def _r_cpu_util(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    cpu, committed = attr(ad, "RemoteUserCpu"), attr(ad, "CommittedTime")
    if not isinstance(cpu, (int, float)) or not isinstance(committed, (int, float)) or committed <= 0:
        return False, None
    util = min(100.0, cpu / committed * 100.0)
    return util >= 0, util


# condor_status's functions (machine ads)
_STATE_LETTERS = SlotState.LETTERS
_ACT_LETTERS = Activity.LETTERS


def _r_activity_code(v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    """State and Activity as two letters (``Ci``); the column names either one."""
    v = v if type(v) is str else ""
    if v in _ACT_LETTERS:
        return True, _STATE_LETTERS.get(_str(ad, "State") or "", " ") + _ACT_LETTERS[v]
    if v in _STATE_LETTERS:
        return True, _STATE_LETTERS[v] + _ACT_LETTERS.get(_str(ad, "Activity") or "", " ")
    return False, "  "


def _number_or_zero(v: Any) -> int:
    return int(v) if type(v) in (int, float) else 0


def _r_activity_time(v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    """Seconds since the value (EnteredCurrentActivity), by the ad's own clock."""
    now = _int(attr(ad, "MyCurrentTime"))
    now = _int(attr(ad, "LastHeardFrom")) if now is None else now
    if now is None:
        return False, None
    return True, max(0, now - _number_or_zero(v))


def _r_elapsed_time(v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    heard = _int(attr(ad, "LastHeardFrom"))
    return (False, None) if heard is None else (True, heard - _number_or_zero(v))


def _r_due_date(v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    heard = _int(attr(ad, "LastHeardFrom"))
    return (False, None) if heard is None else (True, heard + _number_or_zero(v))


def _r_platform(_v: Any, ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    # lazy: only PRINTAS PLATFORM needs condor_status's platform rule
    from roost.cli.status_layout import platform

    text = platform(ad)
    return text is not None, text


def _r_condor_platform(v: Any, _ad: dict[str, Any], _now: float, _c: Any = None) -> tuple[bool, Any]:
    """``$CondorPlatform: X86_64-Ubuntu_22.04 $`` as ``x86_64_Ubuntu_22``."""
    if type(v) is not str or not v:
        return False, v
    words = v.split(" ", 1)
    rest = words[1].lstrip(" ") if len(words) > 1 else ""
    end = min([i for i in (rest.find(" "), rest.find("."), rest.find("$")) if i >= 0] or [len(rest)])
    text = rest[:end]
    if text.startswith("X"):
        text = "x" + text[1:]
    text = text.replace("-", "_")
    if "WINDOWS_" in text:
        text = text[:text.index("WINDOWS_") + 7]
    return True, text


def _r_condor_version(v: Any, _ad: dict[str, Any], _now: float, c: Any = None) -> tuple[bool, Any]:
    """``$CondorVersion: 25.0.13 2025-10-01 BuildID: 123 $`` as ``25.0.13``, with ``.123``
    when the column is wide enough (10 or more, or AUTO)."""
    if type(v) is not str or not v:
        return False, v
    words = v.split()
    version = words[1] if len(words) > 1 else ""
    rest = words[2:]
    if rest and len(rest[0]) == 10 and rest[0][4:5] == "-" and rest[0][7:8] == "-":
        rest = rest[1:]  # YYYY-MM-DD
    else:
        rest = rest[3:]  # Mon DD YYYY
    if rest and rest[0].startswith("B"):
        rest = rest[1:]
    wide = c is not None and (c.auto or c.width >= 10)
    if rest and not rest[0].startswith("$") and wide:
        version += "." + rest[0].split("-")[0]
    return True, version


def _metric_units(n: float) -> str:
    power, units = 0, ("B ", "KB", "MB", "GB", "TB")
    while n > 1024.0 and power < len(units) - 1:
        n, power = n / 1024.0, power + 1
    return f"{n:.1f} {units[power]}"


def _readable(scale: float) -> Callable[[Any], str]:
    def fmt(v: Any) -> str:
        if type(v) in (int, float):
            return _metric_units(v * scale)
        return "        "
    return fmt


def date(v: Any) -> str:
    """``%Y``, QDATE, DATE: `` 7/2  15:11`` (format_date); a negative time is unknown."""
    if v < 0:
        return "    ???    "
    t = time.localtime(v)
    return f"{t.tm_mon:2d}/{t.tm_mday:<2d} {t.tm_hour:02d}:{t.tm_min:02d}"


def _factory_mode(v: Any) -> str:
    if isinstance(v, Value) or v is None:
        return ""
    if type(v) in (int, float):
        return {-1: "Errs", 0: "Norm", 1: "Held", 2: "Done", 3: "Gone"}.get(int(v), "Unk")
    return "????"


#: name -> (kind, default printf, attributes it reads besides the column's, function);
#: kind is "render" or the type a formatter takes ("int", "float", "value")
FUNCTIONS: dict[str, tuple[str, str | None, tuple[str, ...], Callable[..., Any]]] = {
    "ACTIVITY_CODE": ("render", None, ("State", "Activity"), _r_activity_code),
    "ACTIVITY_TIME": ("render", "%T", ("LastHeardFrom", "MyCurrentTime"), _r_activity_time),
    "CONDOR_PLATFORM": ("render", None, (), _r_condor_platform),
    "CONDOR_VERSION": ("render", None, (), _r_condor_version),
    "DUE_DATE": ("render", "%Y", ("LastHeardFrom",), _r_due_date),
    "ELAPSED_TIME": ("render", "%T", ("LastHeardFrom",), _r_elapsed_time),
    "LOAD_AVG": ("float", None, (), lambda v: f"{v:.3f}"),
    "PLATFORM": ("render", None, ("Arch", "OpSys", "OpSysAndVer", "OpSysShortName"), _r_platform),
    "RUNTIME": ("float", None, (), lambda v: duration(int(v))),
    "TIME": ("int", None, (), lambda v: duration(v)),
    "BATCH_NAME": ("render", None, ("JobBatchName", "Cmd", "DAGManJobId", "DAGNodeName", "JobUniverse"),
                   _r_batch_name),
    "CPU_TIME": ("render", "%T", ("JobStatus", "ServerTime", "ShadowBday", "RemoteWallClockTime",
                                  "RemoteUserCpu"), _r_cpu_time),
    "CPU_UTIL": ("render", "%.1f", ("RemoteUserCpu", "CommittedTime"), _r_cpu_util),
    "DAG_OWNER": ("render", None, ("Owner", "DAGManJobId", "DAGNodeName"), _r_dag_owner),
    "DATE": ("int", None, (), date),
    "JOB_COMMAND": ("render", None, ("Cmd", "Args", "Arguments"), _r_job_command),
    "JOB_DESCRIPTION": ("render", None, ("Cmd", "Args", "Arguments", "JobDescription", "MATCH_EXP_JobDescription"),
                        _r_job_description),
    "JOB_FACTORY_MODE": ("value", None, (), _factory_mode),
    "JOB_ID": ("render", None, ("ClusterId", "ProcId"), _r_job_id),
    "JOB_STATUS": ("render", None, ("JobStatus", "TransferringInput", "TransferringOutput", "TransferQueued"),
                   _r_job_status),
    "JOB_STATUS_RAW": ("int", None, (), lambda v: _RAW_STATUS.get(v, "Unk    ")),
    "JOB_UNIVERSE": ("int", None, (), lambda v: _UNIVERSES.get(v, "Unknown")),
    "MEMORY_USAGE": ("render", "%.1f", ("ImageSize", "MemoryUsage"), _r_memory_usage),
    "OWNER": ("render", None, ("Owner",), _r_owner),
    "QDATE": ("int", None, (), date),
    "READABLE_BYTES": ("value", None, (), _readable(1.0)),
    "READABLE_KB": ("value", None, (), _readable(1024.0)),
    "READABLE_MB": ("value", None, (), _readable(1024.0 * 1024.0)),
    "REMOTE_HOST": ("render", None, ("JobUniverse", "RemoteHost", "EC2RemoteVirtualMachineName", "GridResource"),
                    _r_remote_host),
}


def duration(secs: int) -> str:
    """``%T``: ``  D+HH:MM:SS`` (format_time)."""
    days, secs = divmod(secs, 86400)
    hours, secs = divmod(secs, 3600)
    mins, secs = divmod(secs, 60)
    return f"{days:3d}+{hours:02d}:{mins:02d}:{secs:02d}"
