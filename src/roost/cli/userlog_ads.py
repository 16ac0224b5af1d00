"""``history -userlog FILE``: job ads rebuilt from a job event log, as condor_history builds them.

Every job the log saw submitted gets an ad, in the order of the log: its id, times
(``QDate``, ``JobCurrentStartDate``, ``CompletionDate``, ``EnteredCurrentStatus``),
state (``JobStatus``, ``LastJobStatus``), where it ran, how it ended (``ExitCode`` or
``ExitSignal``), its CPU and wall time. What a log does not record is HTCondor's
obvious stand-in: ``Owner`` is the reader's user name, ``Cmd`` is ``???``.
"""

from __future__ import annotations

import os
import pwd
from typing import Any

from roost.vocabulary import JobStatus


def _owner() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return "???"


def ads_from_userlog(path: str) -> list[dict[str, Any]]:
    """One JSON-form ad per job submitted in the log at ``path`` (OSError if unreadable,
    EventLogError when it is not an event log)."""
    # lazy: the event log reader (~30 ms) only for -userlog
    from roost.eventlog import EventType, read_events

    jobs: dict[tuple[int, int], dict[str, Any]] = {}
    owner = _owner()

    def status(ad: dict[str, Any], new: int, when: int) -> None:
        ad["LastJobStatus"] = ad.get("JobStatus", 0)
        ad["JobStatus"] = new
        ad["EnteredCurrentStatus"] = when

    for ev in read_events(path, strict=False):
        key = (ev.cluster, ev.proc)
        when = int(ev.timestamp)
        kind = ev.type
        if kind == EventType.SUBMIT:
            jobs[key] = {
                "MyType": "Job", "TargetType": "Machine", "ClusterId": ev.cluster, "ProcId": ev.proc,
                "UserLog": os.path.abspath(path), "QDate": when, "EnteredCurrentStatus": when,
                "SubmitHost": getattr(ev, "submit_host", ""), "JobStatus": JobStatus.IDLE, "LastJobStatus": 0,
                "Owner": owner, "JobPrio": 0, "ImageSize": 0, "Cmd": "???", "CompletionDate": 0,
                "NumJobStarts": 0, "TotalSuspensions": 0, "LocalUserCpu": 0.0, "RemoteUserCpu": 0.0,
                "LocalSysCpu": 0.0, "RemoteSysCpu": 0.0, "RemoteWallClockTime": 0.0,
            }
            continue
        ad = jobs.get(key)
        if ad is None:
            continue  # HTCondor too skips what comes before a job's submit event
        if kind == EventType.EXECUTE:
            status(ad, JobStatus.RUNNING, when)
            ad["JobCurrentStartDate"] = when
            ad["NumJobStarts"] = ad.get("NumJobStarts", 0) + 1
            host = getattr(ev, "execute_host", "")
            ad["StartdIpAddr"] = ad["RemoteHost"] = host
        elif kind == EventType.JOB_TERMINATED:
            status(ad, JobStatus.COMPLETED, when)
            ad["CompletionDate"] = when
            if "RemoteHost" in ad:
                ad["LastRemoteHost"] = ad.pop("RemoteHost")
            if getattr(ev, "signal", None) is not None:
                ad["ExitBySignal"], ad["ExitSignal"] = True, ev.signal  # type: ignore[attr-defined]
            else:
                ad["ExitBySignal"], ad["ExitCode"] = False, getattr(ev, "return_value", 0)
            for name, usage in (("Remote", "total_remote_usage"), ("Local", "total_local_usage")):
                u = getattr(ev, usage, None)
                if u is not None:
                    ad[f"{name}UserCpu"], ad[f"{name}SysCpu"] = float(u.user), float(u.system)
            start = ad.get("JobCurrentStartDate")
            if isinstance(start, int):
                ad["LastRemoteWallClockTime"] = float(when - start)
                ad["RemoteWallClockTime"] = ad.get("RemoteWallClockTime", 0.0) + float(when - start)
        elif kind == EventType.JOB_ABORTED:
            status(ad, JobStatus.REMOVED, when)
            ad["RemoveReason"] = getattr(ev, "reason", "")
        elif kind == EventType.JOB_HELD:
            status(ad, JobStatus.HELD, when)
            ad["HoldReason"] = getattr(ev, "reason", "")
            ad["HoldReasonCode"] = getattr(ev, "code", 0)
        elif kind == EventType.JOB_RELEASED:
            status(ad, JobStatus.IDLE, when)
        elif kind == EventType.JOB_SUSPENDED:
            status(ad, JobStatus.SUSPENDED, when)
            ad["LastSuspensionTime"] = when
            ad["TotalSuspensions"] = ad.get("TotalSuspensions", 0) + 1
        elif kind == EventType.JOB_UNSUSPENDED:
            status(ad, JobStatus.RUNNING, when)
        elif kind == EventType.JOB_EVICTED:
            status(ad, JobStatus.IDLE, when)
            ad["LastVacateTime"] = when
            start = ad.get("JobCurrentStartDate")
            if isinstance(start, int):
                ad["RemoteWallClockTime"] = ad.get("RemoteWallClockTime", 0.0) + float(when - start)
    return list(jobs.values())
