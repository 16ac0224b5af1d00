"""What the ``htcondor`` command line (HTCondor's htcondor_cli) says about a job, a DAG
and an event log, as text: pure functions of ads, events and the time.

The sentences, units and number formats are the htcondor tool's (``Job 12 is currently
running.``, ``It requested 1.000 GB of memory.``, ``DAG 7 [diamond.dag] has been running
for  and 00:00:12``), including its quirks: times under a minute print the seconds as
they come (``3.52 seconds``), and the event log table works at a minute's resolution.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from roost.vocabulary import JobStatus

KB, MB = 2 ** 10, 2 ** 20
JOB_STATUS_WORDS = {
    JobStatus.IDLE: "idle",
    JobStatus.RUNNING: "running",
    JobStatus.REMOVED: "removed from the queue",
    JobStatus.COMPLETED: "is completed",
    JobStatus.HELD: "held",
    JobStatus.TRANSFERRING_OUTPUT: "transfering output",
    JobStatus.SUSPENDED: "suspended",
}
DAG_STATUS_WORDS = {0: "is running normally.", 1: "had an error occur.", 2: "had at least one node fail.",
                    3: "is aborting because it recieved a DAG abort value.", 4: "has recieved a signal to be remove.",
                    5: "has detected a cycle.", 6: "has been halted."}


def readable_time(seconds: float) -> str:
    """``2 seconds``, ``13 minutes``, ``5 hours``, ``1 day 6 hours``."""
    if seconds < 60:
        return f"{seconds} second{'s' if seconds > 1 else ''}"
    for size, unit in ((60, "minute"), (3600, "hour")):
        if seconds < size * (60 if size == 60 else 24):
            n = round(seconds / size)
            return f"{n} {unit}{'s' if n > 1 else ''}"
    days, hours = round(seconds / 86400), round((seconds % 86400) / 3600)
    return f"{days} day{'s' if days > 1 else ''} {hours} hour{'s' if hours > 1 else ''}"


def readable_size(n: float) -> str:
    """``256 B``, ``1.456 MB``, ``34.983 GB`` (powers of 1024, three decimals)."""
    if n < KB:
        return f"{n} B"
    for scale, unit in ((KB, "KB"), (MB, "MB"), (MB * KB, "GB"), (MB * MB, "TB")):
        if n < scale * KB:
            return f"{round(n / scale, 3):.3f} {unit}"
    return f"{round(n / 10 ** 15, 3):.3f} PB"


def plural(n: object) -> str:
    return "" if isinstance(n, int) and n == 1 else "s"


def _num(ad: dict[str, Any], name: str) -> float:
    v = ad.get(name)
    return v if isinstance(v, int | float) and not isinstance(v, bool) else 0


def job_status_lines(job_id: str, ad: dict[str, Any], now: float) -> list[str]:
    """``htcondor job status``'s sentences for the job ad ``ad`` at time ``now``."""
    status = ad.get("JobStatus")
    queued = now - _num(ad, "QDate")
    starts, execs, holds, suspends = (int(_num(ad, a)) for a in ("NumShadowStarts", "NumJobStarts", "NumHolds",
                                                                  "TotalSuspensions"))
    wall = _num(ad, "RemoteWallClockTime")
    goodput: float | None = _num(ad, "CommittedTime") / wall if wall > 0 else 0.0
    memory = disk = None
    if "MemoryUsage" in ad:
        memory = f"{readable_size(_num(ad, 'MemoryUsage') * MB)} out of {readable_size(_num(ad, 'RequestMemory') * MB)} requested"
    if "DiskUsage" in ad:
        disk = f"{readable_size(_num(ad, 'DiskUsage') * KB)} out of {readable_size(_num(ad, 'RequestDisk') * KB)} requested"
    t_in, t_in_done = ad.get("TransferInStarted"), ad.get("TransferInFinished")
    submitted = f"It was submitted {readable_time(queued)} ago."
    out: list[str] = []

    def usage(last: bool) -> None:
        word = "last" if last else "current"
        if memory:
            out.append(f"Its {word} memory usage is {memory}." if not last else f"Its last memory usage was {memory}.")
        if disk:
            out.append(f"Its {word} disk usage is {disk}." if not last else f"Its last disk usage was {disk}.")

    def attempts(least: int) -> None:
        if starts > least:
            out.append(f"HTCondor has attempted to start the job {starts} time{plural(starts)}.")
            out.append(f"The job has started {execs} time{plural(execs)}.")

    def transfer(held: bool) -> None:
        if t_in is not None:
            if t_in_done is None:
                out.append("Input file transfer was in progress when the job was held." if held
                           else "Input file transfer is in progress.")
            else:
                out.append(f"Input file transfer took {readable_time(_num(ad, 'TransferInFinished') - _num(ad, 'TransferInStarted'))}.")

    if status == JobStatus.IDLE:
        out += [f"Job {job_id} is currently idle.", submitted,
                f"It requested {readable_size(_num(ad, 'RequestMemory') * MB)} of memory.",
                f"It requested {readable_size(_num(ad, 'RequestDisk') * KB)} of disk space."]
        if holds > 0:
            out.append(f"It has been held {holds} time{plural(holds)}.")
        attempts(0)
        cool = ad.get("JobCoolDownExpiration")
        if isinstance(cool, int | float) and cool > now:
            out.append(f"The job is in cool down and will be retried in {readable_time(cool - now)}.")
    elif status == JobStatus.RUNNING:
        out += [f"Job {job_id} is currently running.",
                f"It started running {readable_time(now - _num(ad, 'JobStartDate'))} ago.", submitted]
        usage(False)
        if suspends > 0:
            out.append(f"It has been suspended {suspends} time{plural(suspends)}.")
        if holds > 0:
            out.append(f"It has been held {holds} time{plural(holds)}.")
        attempts(1)
        transfer(False)
    elif status == JobStatus.SUSPENDED:
        out += [f"Job {job_id} is currently suspended.",
                f"It has been suspended for {readable_time(now - _num(ad, 'EnteredCurrentStatus'))}.",
                f"It has been suspended {suspends} time{plural(suspends)}.", submitted]
        usage(True)
    elif status == JobStatus.TRANSFERRING_OUTPUT:
        out += [f"Job {job_id} is currently transferring output.",
                f"It started transferring output {readable_time(now - _num(ad, 'JobCurrentStartTransferOutputDate'))} ago."]
        usage(True)
    elif status == JobStatus.HELD:
        out += [f"Job {job_id} is currently held.",
                f"It has been held for {readable_time(now - _num(ad, 'EnteredCurrentStatus'))}.",
                f'It was held because "{ad.get("HoldReason")}".',
                f"It has been held {holds} time{plural(holds)}.", submitted]
        if execs >= 1:
            usage(True)
        attempts(0)
        transfer(True)
    elif status == JobStatus.REMOVED:
        out += [f"Job {job_id} was removed.",
                f"It was removed {readable_time(now - _num(ad, 'EnteredCurrentStatus'))} ago.", submitted]
        usage(True)
    elif status == JobStatus.COMPLETED:
        out += [f"Job {job_id} has completed.",
                f"It completed {readable_time(now - _num(ad, 'CompletionDate'))} ago.", submitted]
        usage(True)
    else:
        goodput = None
        out.append(f"Job {job_id} is in an unknown state (JobStatus = {status}).")
    if goodput is not None:
        tense = "had" if status == JobStatus.COMPLETED else "has"
        out.append(f"Job {tense} {goodput * 100:.1f}% goodput for {readable_time(wall)} of wall clock time.")
    return out


def dhms(seconds: float) -> str:
    """``D+HH:MM:SS``."""
    s = int(seconds)
    return f"{s // 86400}+{s % 86400 // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def dag_time(seconds: float) -> str:
    """``2 days and 03:04:05``; under a day the days part is empty (`` and 00:00:12``)."""
    days, clock = dhms(seconds).split("+")
    d = int(days)
    return f"{'' if d == 0 else ('1 day' if d == 1 else f'{d} days')} and {clock}"


def _are(n: float, past: bool = False) -> str:
    if n > 1:
        return f"{n:3.0f} have" if past else f"{n:3.0f} are"
    return f"{n:3.0f} has" if past else f"{n:3.0f} is"


def dag_status_lines(dag_id: str, ad: dict[str, Any], now: float, columns: int) -> list[str]:
    """``htcondor dag status``'s report for the DAGMan job ad ``ad``: its state, its jobs,
    its nodes and a bar of ``columns / 2`` characters."""
    out: list[str] = []
    dag_file = str(ad.get("JobBatchName", "UNKNOWN+1")).rsplit("+", 1)[0]
    status = ad.get("JobStatus")
    cool = ad.get("JobCoolDownExpiration")
    head = f"DAG {dag_id} [{dag_file}]"
    if status == JobStatus.RUNNING:
        updated = ad.get("DAG_AdUpdateTime")
        if isinstance(updated, int | float) and now - updated > 600:
            out.append(f"Warning: DAG information for ID {dag_id} has not been updated for {dag_time(now - updated)}.")
            out.append("         Information may be outdated. This indicates a possible issue with the DAG job.")
        if _num(ad, "DAG_InRecovery") == 1:
            out.append(f"{head} is in recovery mode and attempting to restore previous progress.")
        else:
            state = "halted" if ad.get("DAG_Status") == 6 else "running"
            out.append(f"{head} has been {state} for {dag_time(now - _num(ad, 'JobStartDate'))}")
    elif status == JobStatus.COMPLETED:
        when = datetime.fromtimestamp(_num(ad, "EnteredCurrentStatus")).strftime("%Y-%m-%d %H:%M:%S")
        out.append(f"{head} completed {when}")
    elif status == JobStatus.IDLE and isinstance(cool, int | float) and cool >= now:
        out.append(f"{head} is in cool down. Remaining time: {readable_time(cool - now)}")
    else:
        out.append(f"{head} has been {JOB_STATUS_WORDS.get(status, str(status))} for "  # type: ignore[arg-type]
                   f"{dag_time(now - _num(ad, 'EnteredCurrentStatus'))}")
        if status == JobStatus.HELD:
            out.append(f"Hold Reason: {ad.get('HoldReason')}")
    if ad.get("DAG_JobsSubmitted") is not None:
        idle, held, running, done = (_num(ad, a) for a in ("DAG_JobsIdle", "DAG_JobsHeld", "DAG_JobsRunning",
                                                           "DAG_JobsCompleted"))
        failed = _num(ad, "DAG_JobsSubmitted") - idle - held - running - done
        out.append(f"DAG has submitted {ad['DAG_JobsSubmitted']} job(s), of which:")
        for n, what, past in ((idle, "submitted and waiting for resources.", False), (held, "held.", False),
                              (running, "running.", False), (done, "completed.", True), (failed, "failed.", True)):
            if n > 0:
                out.append(f"\t    {_are(n, past)} {what}")
    total = _num(ad, "DAG_NodesTotal")
    if ad.get("DAG_NodesTotal") is not None:
        out.append(f"DAG contains {ad.get('DAG_NodesTotal')} node(s) total, of which:")
        pre, queued, post = _num(ad, "DAG_NodesPrerun"), _num(ad, "DAG_NodesQueued"), _num(ad, "DAG_NodesPostrun")
        running_n = pre + queued + post
        done, ready, unready = _num(ad, "DAG_NodesDone"), _num(ad, "DAG_NodesReady"), _num(ad, "DAG_NodesUnready")
        futile, failed_n = _num(ad, "DAG_NodesFutile"), _num(ad, "DAG_NodesFailed")
        if done > 0:
            out.append(f"\t[#] {_are(done, True)} completed.")
        if running_n > 0:
            parts = [f"{int(n)} {what}{'s' if n > 1 else ''}" for n, what in
                     ((pre, "pre-script"), (queued, "job"), (post, "post-script")) if n > 0]
            out.append(f"\t[=] {_are(running_n)} running: {', '.join(parts)}.")
        if ready > 0:
            out.append(f"\t[»] {_are(ready)} ready to start.")
        if unready > 0:
            out.append(f"\t[-] {_are(unready)} waiting on other nodes to finish.")
        if futile > 0:
            out.append(f"\t[!] {futile:3.0f} will never run.")
        if failed_n > 0:
            out.append(f"\t[!] {_are(failed_n, True)} failed.")
        if total > 0:
            width = round(columns / 2) - 2
            parts_ = [("#", done), ("=", running_n), ("»", ready), ("-", unready), ("!", futile), ("!", failed_n)]
            lengths = [math.ceil(n / total * width) for _, n in parts_]
            largest = 0
            for i, n in enumerate(lengths):
                if n > lengths[largest]:
                    largest = i
            left = width - sum(lengths)
            if left > 0:
                lengths[largest] += left
            bar = "[" + "".join(c * n for (c, _), n in zip(parts_, lengths, strict=True)) + "]"
            possible = (1 - (futile + failed_n) / total) * 100
            portion = f" Only {possible:.2f}% of the DAG can complete." if possible < 100.0 else ""
            out.append(f"DAG {DAG_STATUS_WORDS.get(ad.get('DAG_Status'), 'is running normally.')}{portion}")  # type: ignore[arg-type]
            out.append(f"{bar} DAG is {done / total * 100:.2f}% complete.")
    return out


# -- htcondor eventlog read ------------------------------------------------------------------

_MINUTE = "%m/%d/%y %H:%M"


def _minute(event_time: str) -> str:
    """``2024-05-01T13:04:59`` as ``5/1/24 13:04``, the table's resolution."""
    d = datetime.strptime(event_time, "%Y-%m-%dT%H:%M:%S")
    return f"{d.month}/{d.day}/{d:%y %H:%M}"


def _between(start: str, end: str) -> str:
    delta = datetime.strptime(end, _MINUTE) - datetime.strptime(start, _MINUTE)
    return f"{delta.days}+{delta.seconds // 3600:02d}:{delta.seconds // 60 % 60:02d}:{delta.seconds % 60:02d}"


def _cpu(usage: Any) -> str:
    """The user and system times of a usage, added field by field (D+HH:MM:SS)."""
    user = int(getattr(usage, "user", 0) or 0)
    system = int(getattr(usage, "system", 0) or getattr(usage, "sys", 0) or 0)
    fields = [sum(x) for x in zip(*(((s // 86400), s % 86400 // 3600, s % 3600 // 60, s % 60) for s in (user, system)),
                                   strict=True)]
    return f"{fields[0]}+{fields[1]:02d}:{fields[2]:02d}:{fields[3]:02d}"


def job_summaries(events: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Per job id, what ``htcondor eventlog read`` shows: host, start and evict times,
    evictions, wall time, good time, CPU usage. Jobs whose submit event the log lacks,
    and jobs removed before they ran, are left out."""
    out: dict[str, dict[str, Any]] = {}
    for e in events:
        jid = f"{e.cluster}.{e.proc}"
        job = out.get(jid)
        kind = int(e.type)
        if kind == 0:
            job = out.setdefault(jid, {"Evictions": 0, "executed": False})
            found = re.search(r"\d+\.\d+\.\d+\.\d+", str(e.get("SubmitHost") or ""))
            job["Host"] = found.group() if found else ""
            continue
        if job is None:
            continue
        if kind == 9 and not job["executed"]:
            del out[jid]
        elif kind == 1:
            if e.get("SlotName") is not None:
                job["Host"] = e.get("SlotName")
            job["Start Time"] = job["last_exec"] = _minute(e["EventTime"])
            job["executed"] = True
        elif kind in (4, 5):
            job["CPU Usage"] = _cpu(getattr(e, "run_remote_usage" if kind == 4 else "total_remote_usage", None))
            at = _minute(e["EventTime"])
            if kind == 4:
                job["Evictions"] += 1
            if job.get("Start Time"):
                job["Wall Time"] = _between(job["Start Time"], at)
            job["Good Time"] = _between(job.get("last_exec", at), at)
            if kind == 4:
                job["last_exec"] = at
            job["Evict Time"] = at
    return out


def eventlog_table(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """The summaries as htcondor eventlog read's table (its header again every 50 rows)."""
    def width(key: str) -> int:
        return max([len(key), *(len(str(s.get(key, ""))) for s in summaries.values())]) + 2

    w = {"Job": max([len("Job ID"), *(len(j) for j in summaries)]) + 2,
         **{k: width(k) for k in ("Host", "Start Time", "Evict Time", "Evictions")}}
    header = (f"{'Job':<{w['Job']}} {'Host':<{w['Host']}} {'Start Time':<{w['Start Time']}} "
              f"{'Evict Time':<{w['Evict Time']}} {'Evictions':<{w['Evictions']}} {'Wall Time':<13} "
              f"{'Good Time':<13} {'CPU Usage':<13}  ")
    out = [header]
    for i, (jid, s) in enumerate(summaries.items(), start=1):
        if i % 50 == 0:
            out.append(header)
        out.append(f"{jid:<{w['Job']}} {s.get('Host', ''):<{w['Host']}} {s.get('Start Time', ''):<{w['Start Time']}} "
                   f"{s.get('Evict Time', ''):<{w['Evict Time']}} {s.get('Evictions', ''):<{w['Evictions']}} "
                   f"{s.get('Wall Time', ''):<13} {s.get('Good Time', ''):<13} {s.get('CPU Usage', ''):<13} ")
    return out
