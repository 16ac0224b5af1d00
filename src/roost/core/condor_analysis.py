"""condor_q -analyze / -better-analyze's own text, as HTCondor 25 prints it.

Scripts and user guides grep these lines ("Run analysis summary", "slots are
rejected by your job's requirements", "No machines matched the job's
constraints"), so they come first, laid out as condor_q lays them out; roost's
clause counts and suggestion (:mod:`roost.core.analyze`) follow. Pure: the
job's ad and the slot ads in, text out.

Counted as condor_q counts without user priorities: dynamic slots are skipped
(their partitionable slot stands for the machine), a partitionable slot too
full for the job is judged as if drained, and a match with a ``RemoteUser``
is busy (yours or another user's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roost.classad import ClassAd
from roost.classad.evaluate import eval_attr
from roost.classad.unparse import unparse
from roost.core.analyze import _short_of, _whole, show_value, truth
from roost.core.gridbatch import where_text
from roost.core.req_steps import numbered_clauses, pretty, reduce, table
from roost.vocabulary import JobStatus

_STATUS = {
    JobStatus.RUNNING: "Job is running.",
    JobStatus.TRANSFERRING_OUTPUT: "Job is running.",
    JobStatus.SUSPENDED: "Job is running.",
    JobStatus.REMOVED: "Job is removed.",
    JobStatus.COMPLETED: "Job is completed.",
}


@dataclass
class Counts:
    """condor_q's anaCounters, the ones its summary without priorities prints."""

    slots: int = 0
    machines: int = 0
    req_rejects: int = 0       # the job's Requirements reject the slot
    off_rejects: int = 0       # the slot's own Requirements reject the job
    job_matches_slot: int = 0
    both_match: int = 0
    offline: int = 0
    running: int = 0           # matches, with a RemoteUser
    running_yours: int = 0
    available: int = 0
    available_if_drained: int = 0


def _matches(ad: ClassAd, target: ClassAd) -> bool:
    return "Requirements" in ad and truth(eval_attr(ad, "Requirements", target)) is None


def _fits(slot: ClassAd, job: ClassAd) -> bool:
    """WithinResourceLimits of a partitionable slot (what it has left) for ``job``."""
    if "WithinResourceLimits" in slot:
        return eval_attr(slot, "WithinResourceLimits", job) is True
    return not _short_of(job, slot)


def offer_of(job: ClassAd, slot: ClassAd) -> tuple[ClassAd, bool]:
    """The ad ``job`` is judged against for ``slot`` and whether it fits now: a
    partitionable slot too full for the job stands as if drained (its whole size)."""
    if eval_attr(slot, "PartitionableSlot") is True and not _fits(slot, job):
        whole = _whole(slot)
        return (whole if _fits(whole, job) else slot), False
    return slot, True


def could_ever_run(job: ClassAd, slot: ClassAd) -> bool:
    """Whether ``slot`` (not a dynamic slot) and ``job`` match both ways once the slot is
    free or drained: what -analyze counts as a match, busy or not."""
    if eval_attr(slot, "DynamicSlot") is True:
        return False
    offer, _ = offer_of(job, slot)
    return _matches(job, offer) and _matches(offer, job)


def count(job: ClassAd, slots: Sequence[ClassAd]) -> Counts:
    c = Counts()
    machines: set[object] = set()
    user = eval_attr(job, "User")
    for slot in slots:
        machine = eval_attr(slot, "Machine")
        machines.add(machine if type(machine) is str else id(slot))
        if eval_attr(slot, "DynamicSlot") is True:
            continue
        offer, within = offer_of(job, slot)
        c.slots += 1
        if not _matches(job, offer):
            c.req_rejects += 1
            continue
        c.job_matches_slot += 1
        if not _matches(offer, job):
            c.off_rejects += 1
            continue
        c.both_match += 1
        if eval_attr(offer, "Offline") is True:
            c.offline += 1
        remote = eval_attr(slot, "RemoteUser")
        if type(remote) is not str:
            if within:
                c.available += 1
            else:
                c.available_if_drained += 1
            continue
        c.running += 1
        if remote == user:
            c.running_yours += 1
    c.machines = len(machines)
    return c


def _ids(job: ClassAd) -> tuple[int, int]:
    cl, pr = eval_attr(job, "ClusterId"), eval_attr(job, "ProcId")
    return (cl if type(cl) is int else 0, pr if type(pr) is int else 0)


def _attribute_lines(job: ClassAd) -> list[str]:
    """``Attr = raw value`` for each job attribute the Requirements read (not itself)."""
    refs = job.internalRefs(job.lookup("Requirements"))
    out = []
    for name in sorted({r for r in refs if r and "." not in r and r.lower() != "requirements"}, key=str.lower):
        if name not in job:
            continue
        line = f"    {name} = {unparse(job.lookup(name).node)}"
        if name == "RequestDisk":
            line += " (kb)"
        elif name == "RequestMemory":
            line += " (mb)"
        out.append(line)
    return out


def _target_lines(job: ClassAd, slot: ClassAd) -> list[str]:
    """``TARGET.Attr = value`` for the slot attributes the Requirements read."""
    refs = job.externalRefs(job.lookup("Requirements"))
    names = sorted({r.split(".", 1)[1] if r.lower().startswith("target.") else r for r in refs
                    if r and not r.lower().startswith("my.")}, key=str.lower)
    out = []
    for name in names:
        if "." in name or name not in slot:
            continue
        line = f"    TARGET.{name} = {show_value(eval_attr(slot, name))}"
        if name == "Disk":
            line += " (kb)"
        elif name == "Memory":
            line += " (mb)"
        out.append(line)
    return out


def requirements_text(job: ClassAd, slots: Sequence[ClassAd], width: int = 80) -> str:
    """The expression, its numbered steps, the job's attributes and the reduced table."""
    if "Requirements" not in job:
        return ""
    cl, pr = _ids(job)
    rid = f"{cl}.{pr:03d}"
    node = job.lookup("Requirements").node
    out = [f"The Requirements expression for job {rid} is", "",
           "    " + pretty(unparse(node), 4, width), ""]
    out += numbered_clauses(job, node)
    out += ["", f"Job {rid} defines the following attributes:", ""]
    out += _attribute_lines(job)
    if len(slots) == 1:
        shown = _target_lines(job, slots[0])
        if shown:
            name = eval_attr(slots[0], "Name")
            out += ["", f"{name if type(name) is str else 'Target'} has the following attributes:", ""] + shown
    out += ["", f"The Requirements expression for job {rid} reduces to these conditions:", ""]
    considered = [s for s in slots if not (len(slots) > 1 and eval_attr(s, "DynamicSlot") is True)]
    out += table(reduce(job, node, considered))
    return "\n".join(out) + "\n"


def summary_text(job: ClassAd, c: Counts) -> str:
    """``NNN.PPP:  Run analysis summary ignoring user priority.`` and its counts."""
    cl, pr = _ids(job)
    out = [f"{cl:03d}.{pr:03d}:  Run analysis summary ignoring user priority.  "
           f"Of {c.slots} slots on {c.machines} machines,",
           f"  {c.req_rejects:5d} slots are rejected by your job's requirements",
           f"  {c.off_rejects:5d} slots reject your job because of their own requirements"]
    if c.running_yours:
        out.append(f"  {c.running_yours:5d} slots match and are already running your jobs")
    if c.running:
        out.append(f"  {c.running - c.running_yours:5d} slots match but are serving other users")
    if c.offline:
        out.append(f"  {c.offline:5d} slots match but are currently offline")
    out.append(f"  {c.available:5d} slots match and are willing to run your job")
    if c.available_if_drained:
        out.append(f"  {c.available_if_drained:5d} slots would match if drained")
    if not c.job_matches_slot or not c.both_match:
        out += ["", "WARNING:  Be advised:"]
        if not c.job_matches_slot:
            out.append("   No machines matched the job's constraints")
        else:
            out += ["   Job did not match any machines' constraints",
                    "   To see why, pick a machine that you think should match and add",
                    "     -reverse -machine <name>",
                    "   to your query."]
    return "\n" + "\n".join(out) + "\n"


def _int(job: ClassAd, attr: str) -> int:
    v = eval_attr(job, attr)
    return int(v) if type(v) in (int, float) else 0


def status_text(job: ClassAd, now: float | None = None) -> str:
    """The job's state when it is not simply idle (``NNN.PPP:  Job is held.``), then
    what the negotiator last said of it (``Last successful match: ...``)."""
    status = eval_attr(job, "JobStatus")
    if status == JobStatus.HELD:
        text = "Job is held."
        reason = eval_attr(job, "HoldReason")
        if type(reason) is str and reason:
            text += f"\n\nHold reason: {reason}"
    elif status == JobStatus.IDLE and now is not None and _int(job, "JobCoolDownExpiration") > now:
        text = "Job is in cool down."
    else:
        text = _STATUS.get(status, "")  # type: ignore[arg-type]
    out = ""
    if text:
        cl, pr = _ids(job)
        out = f"\n{cl:03d}.{pr:03d}:  {text}\n\n"
    matched, rejected = _int(job, "LastMatchTime"), _int(job, "LastRejMatchTime")
    if matched:
        out += f"Last successful match: {time.ctime(matched)}\n"
    elif rejected:
        out += "No successful match recorded.\n"
    if rejected > matched:
        by = eval_attr(job, "LastRejMatchNegotiator")
        out += f"Last failed match: {time.ctime(rejected)}{f' from {by}' if type(by) is str and by else ''}\n"
        why = eval_attr(job, "LastRejMatchReason")
        if type(why) is str:
            out += f"Reason for last match failure: {why}\n"
    return out


def universe_warning(job: ClassAd) -> str:
    """condor_q's warning for universes its analysis does not fully cover."""
    universe = _int(job, "JobUniverse") or 5
    if universe in (5, 10, 11, 13):  # vanilla (docker, container), java, parallel, vm
        return ""
    if universe == 9:
        resource = eval_attr(job, "GridResource")
        if type(resource) is str and "$$" in resource:
            return ""
        return "\nWARNING: Analysis is only meaningful for Grid universe jobs using matchmaking.\n"
    if universe in (7, 12):
        return "\nWARNING: Analysis is not complete for Scheduler or Local universe jobs.\n"
    return "\nWARNING: Job universe unknown.  Analysis may not be meaningful.\n"


def grid_text(job: Mapping[str, Any]) -> str:
    """A grid job handed to another system (no ``$$`` matchmaking in its GridResource):
    where it is there (``pending in Slurm as job 42: (Resources)``), in place of a
    matchmaking analysis that does not apply; "" for any other job."""
    resource = job.get("GridResource")
    if job.get("JobUniverse") != 9 or (isinstance(resource, str) and "$$" in resource):
        return ""
    cl, pr = (int(job.get(a) or 0) for a in ("ClusterId", "ProcId"))
    return f"\n{cl:03d}.{pr:03d}:  Grid job ({resource}): {where_text(dict(job))}\n"


def condor_text(job: ClassAd, slots: Sequence[ClassAd], better: bool, width: int = 80,
                now: float | None = None) -> str:
    """What condor_q prints for one job: with ``better`` (or when the job's Requirements
    reject some slot) the Requirements analysis, then the summary and the job's state.
    Scheduler and local universe jobs run on the schedd, not a slot: no summary."""
    local = _int(job, "JobUniverse") in (7, 12)
    c = Counts() if local else count(job, slots)
    out = ""
    if better or c.req_rejects:
        out += requirements_text(job, slots, width) + universe_warning(job) + "\n"
    if c.slots:
        out += summary_text(job, c)
    return out + "\n" + status_text(job, now)

