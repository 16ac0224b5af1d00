"""``roost q -analyze`` / ``-better-analyze`` against a real pool (4 CPUs, 4096 MB)."""

from __future__ import annotations

from pathlib import Path

from poolkit import PoolHandle


def test_impossible_jobs_name_the_clause_and_suggest_a_fix(pool: PoolHandle, tmp_path: Path) -> None:
    mem = pool.submit("executable = /bin/true\nrequest_memory = 999999\nqueue\n", tmp_path)
    arch = pool.submit('executable = /bin/true\nrequirements = TARGET.Arch == "SPARC"\nqueue\n', tmp_path)
    typo = pool.submit("executable = /bin/true\nrequirements = TARGET.HasFooBar == true\nqueue\n", tmp_path)
    try:
        m, a = f"{mem.cluster}.0", f"{arch.cluster}.0"
        out = pool.roost("q", "-better-analyze", m, check=True).stdout
        # HTCondor's lines first, as condor_q prints them (what scripts and guides grep)
        rid, sid = f"{mem.cluster}.000", f"{mem.cluster:03d}.000"
        lines = out.splitlines()
        order = [f"The Requirements expression for job {rid} is",
                 f"Job {rid} defines the following attributes:",
                 f"The Requirements expression for job {rid} reduces to these conditions:",
                 "Step   Matched  Condition",
                 f"{sid}:  Run analysis summary ignoring user priority.  Of 1 slots on 1 machines,",
                 "      1 slots are rejected by your job's requirements",
                 "WARNING:  Be advised:", "   No machines matched the job's constraints",
                 f"-- Job {m}: idle"]
        at = [lines.index(x) for x in order]
        assert at == sorted(at)
        assert "    RequestMemory = 999999 (mb)" in lines
        assert any(ln.startswith("[") and ln.split()[1] == "0" and "TARGET.Memory >= RequestMemory" in ln
                   for ln in lines)
        assert f"-- Job {m}: idle" in out
        assert "rejected by your job's Requirements" in out
        assert "TARGET.Memory >= RequestMemory  <- matters most" in out
        suggestion = next(ln for ln in out.splitlines() if ln.startswith("Suggestion:"))
        assert "Memory >= 999999: 0 of" in suggestion and "lower request_memory to at most" in suggestion

        out = pool.roost("q", "-analyze", a, check=True).stdout
        suggestion = next(ln for ln in out.splitlines() if ln.startswith("Suggestion:"))
        assert 'Arch == "SPARC"' in suggestion and "change the clause to `Arch ==" in suggestion
        assert "clause by clause" not in out  # that is -better-analyze's

        # An attribute no slot has is named as missing, not offered as the value "undefined".
        out = pool.roost("q", "-better", f"{typo.cluster}.0", check=True).stdout
        suggestion = next(ln for ln in out.splitlines() if ln.startswith("Suggestion:"))
        assert suggestion.startswith("Suggestion: no slot has HasFooBar (undefined on all")
        assert "HasFooBar in the pool: undefined (" in out

        # Without ids: the user's idle jobs, both of these among them.
        out = pool.roost("q", "-analyze", check=True).stdout
        assert f"-- Job {m}: idle" in out and f"-- Job {a}: idle" in out
        assert pool.job(m)["JobStatus"] == 1 and pool.job(a)["JobStatus"] == 1
    finally:
        pool.roost("rm", str(mem.cluster), str(arch.cluster), str(typo.cluster))
        pool.wait(mem.job_ids() + arch.job_ids() + typo.job_ids(), timeout=30)


def test_runnable_job_analyzes_as_matching(pool: PoolHandle, tmp_path: Path) -> None:
    # Five one-CPU jobs on four CPUs: four run, the fifth waits for a matching but busy slot.
    r = pool.submit("executable = /bin/sleep\narguments = 300\nrequest_cpus = 1\nrequest_memory = 64\n"
                    "queue 5\n", tmp_path)
    try:
        ids = r.job_ids()
        for jid in ids[:4]:
            pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
        last = ids[4]
        assert pool.job(last)["JobStatus"] == 1
        out = pool.roost("q", "-better-analyze", last, check=True).stdout
        assert f"-- Job {last}: idle" in out
        assert "No machines matched" not in out
        suggestion = next(ln for ln in out.splitlines() if ln.startswith("Suggestion:"))
        assert suggestion.startswith("Suggestion: wait:") and "matching slot(s) are busy" in suggestion
        counts = {ln.split(None, 1)[1]: int(ln.split()[0]) for ln in out.splitlines()
                  if ln.strip()[:1].isdigit() and ln.startswith("  ")}
        assert counts["rejected by your job's Requirements"] == 0
        assert counts["match, of which:"] >= 1

        out = pool.roost("q", "-analyze", ids[0], check=True).stdout
        assert "Suggestion: it is running" in out
    finally:
        pool.roost("rm", str(r.cluster))
        pool.wait(r.job_ids(), timeout=30)
