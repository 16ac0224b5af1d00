"""The grid universe's decisions for Grid Engine (``grid_resource = batch sge``, issue
30): how a job's requests become ``qsub``'s options, what ``qstat -xml``'s state
letters mean in the user's queue, and how a job that left ``qstat`` ended. Pure: the
grid manager runs the commands and feeds their output here.

Grid Engine forgets a job as soon as it ends (no ``MinJobAge``): the end is read from
the job's own exit file, which the job script writes in the sandbox after the command
returns (``$?``; above 128 is the shell's word for a signal), and where there is none
(killed before it could write it, or never started) from ``qacct``'s record, whose
``failed`` code and text say why; the record may take the accounting's flush time to
appear.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

from roost.core.gridbatch import HOLD_DURATION_EXCEEDED, HOLD_REMOTE_ENDED, Mirror
from roost.vocabulary import JobStatus

_NAME_OK = re.compile(r"[A-Za-z0-9_.,@-]+")
#: a queue, project or parallel environment name qsub takes without quoting
_WORD = re.compile(r"[A-Za-z0-9_.@*-]+")


class SgeOptionError(ValueError):
    """A job attribute or setting that cannot become a qsub option."""


def _positive(ad: dict[str, Any], name: str) -> float | None:
    v = ad.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        return None
    return float(v)


def _word(what: str, v: str) -> str:
    if not _WORD.fullmatch(v):
        raise SgeOptionError(f"{what} = {v!r}: not a Grid Engine name")
    return v


def qsub_args(ad: dict[str, Any], *, name: str, sandbox: str, script: str, pe: str = "",
              memory_resource: str = "") -> list[str]:
    """``qsub``'s arguments for a job ad (its requests evaluated to numbers).

    RequestCpus above 1 -> ``-pe <pe> N`` (a parallel environment is the only way Grid
    Engine gives a job more than one slot; without one configured such a job is
    refused here rather than run on one slot), RequestMemory (MB) -> ``-l
    <memory_resource>=NM`` where the site names its memory resource (``h_vmem``,
    ``mem_free``, a consumable; none by default, as sites differ), BatchRuntime (s) ->
    ``-l h_rt``, BatchQueue -> ``-q``, BatchProject -> ``-P``. Not rerunnable (``-r n``):
    a job Grid Engine lost is held here, not run twice behind roost's back."""
    args = ["-terse", "-N", name, "-wd", sandbox, "-o", f"{sandbox}/_roost_stdout",
            "-e", f"{sandbox}/_roost_stderr", "-S", "/bin/sh", "-r", "n"]
    cpus = _positive(ad, "RequestCpus")
    if cpus and cpus > 1:
        if not pe:
            raise SgeOptionError(f"request_cpus = {int(math.ceil(cpus))} needs a Grid Engine parallel environment "
                                 "and none is configured (SGE_PARALLEL_ENVIRONMENT)")
        args += ["-pe", _word("SGE_PARALLEL_ENVIRONMENT", pe), str(int(math.ceil(cpus)))]
    memory = _positive(ad, "RequestMemory")
    if memory and memory_resource:
        args += ["-l", f"{_word('SGE_MEMORY_RESOURCE', memory_resource)}={int(math.ceil(memory))}M"]
    runtime = _positive(ad, "BatchRuntime")
    if runtime:
        args += ["-l", f"h_rt={int(math.ceil(runtime))}"]
    for attr, option in (("BatchQueue", "-q"), ("BatchProject", "-P")):
        v = ad.get(attr)
        if isinstance(v, str) and v.strip():
            args += [option, _word(attr, v.strip())]
    args.append(script)
    return args


def parse_qsub(stdout: str) -> str | None:
    """The job id ``qsub -terse`` printed, or None."""
    first = stdout.strip().splitlines()[0].strip() if stdout.strip() else ""
    return first if first.isdigit() else None


@dataclass(frozen=True)
class QstatJob:
    """One job of ``qstat -u '*' -xml``."""

    id: str
    name: str
    owner: str
    state: str  # Grid Engine's letters: qw, hqw, r, t, Eqw, dr, s, ...
    queue: str  # queue@host where it runs, "" while pending


def parse_qstat_xml(text: str) -> list[QstatJob]:
    """Every job of ``qstat -u '*' -xml`` (pending and running alike); ValueError when
    the text is not qstat's XML."""
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"qstat -xml: not XML: {e}") from None
    jobs = []
    for el in root.iter("job_list"):
        def field(tag: str, el: ET.Element = el) -> str:
            return (el.findtext(tag) or "").strip()
        jobs.append(QstatJob(field("JB_job_number"), field("JB_name"), field("JB_owner"), field("state"),
                             field("queue_name")))
    return jobs


def parse_qacct(text: str) -> list[dict[str, str]]:
    """``qacct -j`` output: one dict per record (``=====`` separated), key -> the rest
    of its line."""
    records: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("====="):
            current = {}
            records.append(current)
            continue
        if current is None or not line.strip():
            continue
        key, _, value = line.partition(" ")
        current[key] = value.strip()
    return records


def mirror_state(state: str) -> Mirror:
    """A job Grid Engine still lists, in roost's terms: pending (q, h, w, R(estarted)) is
    Idle, running or being transferred (r, t) Running, suspended (s, S, T) Suspended;
    an error state (E: qsub took it, the execd could not start it) must be held with
    Grid Engine's reason and deleted (``done``)."""
    if "E" in state:
        return Mirror(JobStatus.HELD, state, hold_code=HOLD_REMOTE_ENDED, done=True,
                      hold_reason=f"Grid Engine: the job is in error state {state}")
    if "d" in state:  # being deleted: whatever it was, it is ending
        return Mirror(JobStatus.RUNNING if ("r" in state or "t" in state) else JobStatus.IDLE, state)
    if any(c in state for c in "sST"):
        return Mirror(JobStatus.SUSPENDED, state)
    if "r" in state or "t" in state:
        return Mirror(JobStatus.RUNNING, state)
    return Mirror(JobStatus.IDLE, state or "qw")


def exit_from_file(text: str) -> Mirror | None:
    """The job script's exit file (``$?`` of the command): Completed with the exit code,
    or with the signal where the shell says so (above 128); None when unreadable."""
    t = text.strip()
    if not t.isdigit():
        return None
    status = int(t)
    if status > 128:
        return Mirror(JobStatus.COMPLETED, "done", exit_signal=status - 128, done=True)
    return Mirror(JobStatus.COMPLETED, "done", exit_code=status, done=True)


def ended_without_exit(record: dict[str, str]) -> Mirror:
    """A job that left qstat with no exit file, from its ``qacct`` record: a hold with
    Grid Engine's own words (``failed`` 37: a limit qmaster enforced, h_rt for the jobs
    roost submits; 100: killed, from a qdel outside roost or a signal to the job
    script; others: it could not start)."""
    failed = record.get("failed", "").strip()
    code_text, _, why = failed.partition(":")
    code = code_text.strip()
    status = record.get("exit_status", "").split()[0] if record.get("exit_status") else "?"
    words = f"failed {code}{' (' + why.strip() + ')' if why.strip() else ''}, exit_status {status}"
    if code == "37":
        return Mirror(JobStatus.HELD, f"failed {code}", done=True, hold_code=HOLD_DURATION_EXCEEDED,
                      hold_reason=f"Grid Engine: it ran past its limit (batch_runtime): {words}")
    if code == "100":
        return Mirror(JobStatus.HELD, f"failed {code}", done=True, hold_code=HOLD_REMOTE_ENDED,
                      hold_reason=f"Grid Engine: the job was killed (a qdel outside roost, or a signal): {words}")
    if code == "0":
        return Mirror(JobStatus.HELD, "failed 0", done=True, hold_code=HOLD_REMOTE_ENDED,
                      hold_reason=f"Grid Engine: the job ended without writing its exit status: {words}")
    return Mirror(JobStatus.HELD, f"failed {code}", done=True, hold_code=HOLD_REMOTE_ENDED,
                  hold_reason=f"Grid Engine: the job could not run: {words}")


def error_reason(qstat_j: str) -> str | None:
    """The ``error reason`` line(s) of ``qstat -j <id>`` for a job in error state."""
    lines = [line.split(":", 1)[1].strip() for line in qstat_j.splitlines()
             if line.startswith("error reason") and ":" in line]
    return "; ".join(lines) or None


__all__ = [
    "QstatJob", "SgeOptionError", "ended_without_exit", "error_reason", "exit_from_file", "mirror_state",
    "parse_qacct", "parse_qstat_xml", "parse_qsub", "qsub_args",
]
