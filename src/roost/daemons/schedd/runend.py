"""What the end of a run does to its job: the starter's last report (exited, failed,
vacated) or the claim's loss, turned into one change through ``JobLifecycle``.

Split out of shadow.py (issue 28) because it is one decision with many branches
(removed or held meanwhile, lost, evicted, a failed start that is the machine's or
the job's fault, over memory or disk, output that could not come back, an exit the
job policy judges) and none of it is about keeping a claim: the shadow hands over
the facts of the run (``RunFacts``) and learns whether its claim may take another
job.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from roost.core import jobpolicy as jp
from roost.daemons.schedd.jobqueue import Job
from roost.daemons.schedd.lifecycle import JobLifecycle
from roost.eventlog import TerminatedEvent, Usage

#: a job whose runs the infrastructure keeps failing (input transfers cut) is held after
#: this many shadow exceptions rather than requeued for ever
MAX_TRANSFER_RETRIES = 10


class RunFacts(Protocol):
    """What the shadow knows of the run that ended."""

    jobs: JobLifecycle
    slot_name: str
    transfer_error: tuple[int, str] | None  # a transfer the job is to blame for (its code, message)
    bytes_sent: int
    bytes_recvd: int
    started_at: float
    now_job: tuple[int, int] | None  # condor_now: the job its claim runs next


async def settle(run: RunFacts, job: Job, update: dict[str, Any]) -> bool:
    """Apply the end of ``job``'s run (``update``: the starter's report); True when the
    claim may take another job."""
    s = run.jobs
    state = update.get("state")
    if not job.cluster.holds(job):
        return True  # gone already (removed and moved to history)
    if job.status == jp.REMOVED:
        await s.finish_removed(job)
        return state != "lost"
    if job.status == jp.HELD:
        await s.clear_claim(job)
        return state != "lost"
    if state == "lost":
        await s.requeue(job, str(update.get("error") or "claim lost"))
        return False
    if state == "vacated":
        await s.evicted(job, update)
        return run.now_job is not None  # condor_now: the claim runs the now-job next
    if state == "failed":
        await _failed(run, job, update)
        return False
    oom = update.get("oom")
    if isinstance(oom, dict):
        # killed by the kernel for going over its memory: HTCondor's hold, code 34
        msg = (f"Error from {run.slot_name}: Job has gone over cgroup memory limit of "
               f"{oom.get('limit_mb')} megabytes. Peak usage: {oom.get('peak_mb')} megabytes. "
               "Consider resubmitting with a higher request_memory.")
        usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
        await _out_of_resources(s, job, msg, 0, "MemoryUsage", usage.get("MemoryUsage"))
        return True
    disk = update.get("disk")
    if isinstance(disk, dict):
        # its sandbox outgrew the slot's disk (request_disk): held, HTCondor's 34/104
        msg = (f"Error from {run.slot_name}: Job has exceeded its allocated disk of "
               f"{disk.get('limit_kb')} KiB: its sandbox held {disk.get('usage_kb')} KiB. "
               "Consider resubmitting with a higher request_disk.")
        await _out_of_resources(s, job, msg, jp.SUBCODE_DISK_EXCEEDED, "DiskUsage", disk.get("usage_kb"))
        return True
    output_error = update.get("output_error")
    if isinstance(output_error, str) and output_error:
        # the job ran, but its output could not all come back: HTCondor holds it (12/2)
        msg = f"Error from {run.slot_name}: Failed to transfer output files: {output_error}"
        await s.hold(job, msg[:2000], jp.HOLD_TRANSFER_OUTPUT_ERROR, 2, vacate=False)
        return True
    await exited(run, job, update)
    return True


async def _failed(run: RunFacts, job: Job, update: dict[str, Any]) -> None:
    """The job did not start (or its input did not arrive): requeued when the machine
    or the infrastructure is to blame, held when the job is."""
    s = run.jobs
    n = job.get("NumShadowExceptions", 0)
    if update.get("machine") is True and run.transfer_error is None:
        # the execute side was short of something (descriptors, processes, memory, disk):
        # never the job's fault, however often (issue 27); the requeue's back-off spaces
        # the tries
        await s.requeue(job, f"Error from {run.slot_name}: {update.get('error') or 'cannot start'}")
        return
    if (update.get("retry") is True and run.transfer_error is None
            and (n if isinstance(n, int) else 0) < MAX_TRANSFER_RETRIES):
        # the infrastructure's fault (a transfer cut, this schedd restarting): run it again
        await s.requeue(job, f"Error from {run.slot_name}: {update.get('error') or 'interrupted'}")
        return
    default = jp.HOLD_TRANSFER_INPUT_ERROR if update.get("retry") is True else jp.HOLD_FAILED_TO_CREATE_PROCESS
    said = update.get("hold_code")  # the startd names HTCondor's code (14: its Iwd, say)
    if type(said) is int and said in jp.HOLD_CODE_NAMES:
        default = said
    code, msg = run.transfer_error or (
        default, f"Error from {run.slot_name}: {update.get('error') or 'the job could not be started'}",
    )
    await s.hold(job, msg, code, 0, vacate=False)


async def _out_of_resources(jobs: JobLifecycle, job: Job, msg: str, subcode: int, attr: str, used: Any) -> None:
    """Held for going over its memory or disk (JobOutOfResources), what it used in its ad."""
    if isinstance(used, int):
        await jobs.live_usage(job, {attr: used})
    await jobs.hold(job, msg, jp.HOLD_OUT_OF_RESOURCES, subcode, vacate=False)


async def exited(run: RunFacts, job: Job, update: dict[str, Any]) -> None:
    """The job's program exited (or was killed by a signal): the job policy decides
    what becomes of it (``jobpolicy.on_exit``), with the run's usage and transfers."""
    now = time.time()
    code = update.get("exit_code")
    sig = update.get("exit_signal")
    code = code if isinstance(code, int) else None
    sig = sig if isinstance(sig, int) and not isinstance(sig, bool) and sig > 0 else None
    ad = job.classad()
    usage = update.get("usage") if isinstance(update.get("usage"), dict) else {}
    uattrs = jp.usage_attrs(ad, usage, run.started_at, now)
    for k, v in uattrs.items():
        ad[k] = v
    decision = jp.on_exit(ad, code, sig, now)
    attrs = dict(uattrs)
    if sig is not None:
        attrs["JobCoreDumped"] = update.get("core_dumped") is True
    for attr, moved in (("BytesSent", run.bytes_sent), ("BytesRecvd", run.bytes_recvd)):
        prev = job.get(attr, 0)
        attrs[attr] = float((prev if type(prev) in (int, float) else 0) + moved)
    attrs["TransferOutputSizeMB"] = -(-run.bytes_recvd // (1 << 20))  # this run's output, MiB up
    attrs.update(decision.attrs or {})
    run_usage = Usage(int(uattrs["RemoteUserCpu"]), int(uattrs["RemoteSysCpu"]))
    total_usage = Usage(int(uattrs["CumulativeRemoteUserCpu"]), int(uattrs["CumulativeRemoteSysCpu"]))
    term = TerminatedEvent(
        job.cluster.id,
        job.proc,
        now,
        return_value=None if sig is not None else (code or 0),
        signal=sig,
        run_remote_usage=run_usage,
        total_remote_usage=total_usage,
    )
    await run.jobs.apply_exit(job, decision, attrs, term)


__all__ = ["MAX_TRANSFER_RETRIES", "RunFacts", "exited", "settle"]
