"""condor_q -better-analyze's HTCondor-layout text (roost.core.condor_analysis, req_steps)."""

from __future__ import annotations

from roost.classad import ClassAd
from roost.core.condor_analysis import condor_text, count
from roost.core.req_steps import numbered_clauses, pretty, reduce, table

REQ = ('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && '
       '(TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)')


def _job(memory: int = 99999, status: int = 1) -> ClassAd:
    return ClassAd(f'[ClusterId = 781; ProcId = 7; JobStatus = {status}; User = "u@d"; Owner = "u"; '
                   f"RequestMemory = {memory}; RequestDisk = DiskUsage; DiskUsage = 10; Requirements = {REQ}]")


def _slot(name: str, memory: int, remote: str | None = None) -> ClassAd:
    ad = ClassAd(f'[Name = "{name}"; Machine = "{name.split("@")[-1]}"; Arch = "X86_64"; OpSys = "LINUX"; '
                 f"Disk = 100000; Memory = {memory}; HasFileTransfer = true; Requirements = START; START = true]")
    if remote:
        ad["RemoteUser"] = remote
    return ad


def test_steps_are_numbered_in_evaluation_order_and_reduced_to_what_decides() -> None:
    job = _job()
    node = job.lookup("Requirements").node
    assert numbered_clauses(job, node)[:3] == ['    [0]    : TARGET.Arch == "X86_64"',
                                               '    [1]    : TARGET.OpSys == "LINUX"', "    [2]    : [0] && [1]"]
    rows = table(reduce(job, node, [_slot("slot1@a", 1000), _slot("slot1@b", 2000)]))
    # the && chain collapses to its leaves; the clause after the zero (HasFileTransfer) is pruned
    assert rows == ["        Slots", "Step   Matched  Condition", "----- --------- ---------",
                    '[0]           2  TARGET.Arch == "X86_64"', '[1]           2  TARGET.OpSys == "LINUX"',
                    "[3]           2  TARGET.Disk >= RequestDisk", "[5]           0  TARGET.Memory >= RequestMemory"]


def test_constant_clauses_say_always_or_never() -> None:
    # a false constant decides an && without a slot: the slot clause is pruned
    job = ClassAd('[ClusterId = 1; ProcId = 0; X = 3; Requirements = (MY.X > 5) && (TARGET.Memory > 10)]')
    rows = table(reduce(job, job.lookup("Requirements").node, [_slot("s@a", 100)]))
    assert rows[3:] == ["[0]       never  MY.X > 5"]
    # a false constant in an || leaves the other side to decide
    job = ClassAd('[ClusterId = 1; ProcId = 0; X = 3; Requirements = (MY.X > 5) || (TARGET.Memory > 10)]')
    rows = table(reduce(job, job.lookup("Requirements").node, [_slot("s@a", 100)]))
    assert rows[3:] == ["[1]           1  TARGET.Memory > 10"]


def test_long_expressions_wrap_after_and_at_the_width() -> None:
    text = pretty(REQ, 4, 80)
    assert text.splitlines()[0] == '(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") &&'
    assert all(len(line) <= 80 for line in text.splitlines())


def test_no_match_prints_the_summary_and_the_warning() -> None:
    out = condor_text(_job(), [_slot("slot1@a", 1000), _slot("slot2@a", 1000)], better=True)
    lines = out.splitlines()
    assert lines[0] == "The Requirements expression for job 781.007 is"
    assert "Job 781.007 defines the following attributes:" in lines
    assert "    RequestMemory = 99999 (mb)" in lines and "    RequestDisk = DiskUsage (kb)" in lines
    assert "The Requirements expression for job 781.007 reduces to these conditions:" in lines
    i = lines.index("781.007:  Run analysis summary ignoring user priority.  Of 2 slots on 1 machines,")
    assert lines[i + 1:i + 4] == ["      2 slots are rejected by your job's requirements",
                                  "      0 slots reject your job because of their own requirements",
                                  "      0 slots match and are willing to run your job"]
    assert lines[i + 5:i + 7] == ["WARNING:  Be advised:", "   No machines matched the job's constraints"]


def test_busy_and_free_slots_are_told_apart() -> None:
    slots = [_slot("slot1@a", 4000, "u@d"), _slot("slot2@a", 4000, "v@d"), _slot("slot3@b", 4000)]
    c = count(_job(memory=100), slots)
    assert (c.slots, c.machines, c.req_rejects, c.running_yours, c.running, c.available) == (3, 2, 0, 1, 2, 1)
    out = condor_text(_job(memory=100), slots, better=False)
    assert "      1 slots match and are already running your jobs" in out
    assert "      1 slots match but are serving other users" in out
    assert "      1 slots match and are willing to run your job" in out
    assert "Be advised" not in out and "reduces to these conditions" not in out  # -analyze: all matched


def test_single_slot_shows_its_attributes_and_held_jobs_their_reason() -> None:
    job = _job(memory=100, status=5)
    job["HoldReason"] = "disk full"
    out = condor_text(job, [_slot("slot1@a", 4000)], better=True)
    assert "slot1@a has the following attributes:" in out
    assert "    TARGET.Memory = 4000 (mb)" in out
    assert out.endswith("\n781.007:  Job is held.\n\nHold reason: disk full\n\n")


def test_match_history_and_universe_warnings() -> None:
    job = _job(memory=100)
    job["LastMatchTime"] = 1764600000
    job["LastRejMatchTime"] = 1764600100
    job["LastRejMatchReason"] = "no match found"
    out = condor_text(job, [_slot("slot1@a", 4000)], better=False, now=1764600200)
    assert "Last successful match: " in out and "\nLast failed match: " in out
    assert out.endswith("Reason for last match failure: no match found\n")
    local = _job(memory=100)
    local["JobUniverse"] = 12
    out = condor_text(local, [_slot("slot1@a", 4000)], better=True)
    assert "WARNING: Analysis is not complete for Scheduler or Local universe jobs." in out
    assert "Run analysis summary" not in out
    cool = _job(memory=100)
    cool["JobCoolDownExpiration"] = 2000
    assert "781.007:  Job is in cool down." in condor_text(cool, [], better=False, now=1000)
