"""A shell script written for HTCondor's commands runs unchanged against a roost pool.

compat/htcondor_commands.sh uses only condor_* names (condor_submit, condor_q -af/-format/
-totals, condor_qedit, condor_prio, condor_who, condor_hold/release, condor_rm,
condor_wait, condor_history -af/-since/-userlog) with the venv's bin/ first on PATH, as a
site's wrapper would find them after `make venv`; this test reads what it printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "compat" / "htcondor_commands.sh"
BIN = Path(sys.executable).parent


def sections(text: str) -> dict[str, list[str]]:
    """The script's output split at its "== step" markers."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== "):
            current = out.setdefault(line[3:], [])
        elif current is not None:
            current.append(line)
    return out


@pytest.mark.skipif(not (BIN / "condor_q").exists(), reason="condor_* scripts not installed: run `make venv`")
def test_htcondor_script_runs_unchanged(pool, jobdir: Path) -> None:  # type: ignore[no-untyped-def]
    env = dict(pool.env)
    env["PATH"] = f"{BIN}:/usr/bin:/bin"
    assert shutil.which("condor_q", path=env["PATH"]) == str(BIN / "condor_q")
    done = subprocess.run(["/bin/sh", str(SCRIPT), str(jobdir)], env=env, capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, f"script failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    s = sections(done.stdout)
    assert "done" in s, done.stdout
    cluster = s["submit"][0].removeprefix("cluster=")
    assert cluster.isdigit(), s["submit"]
    c = cluster
    assert s["af"] == [f"{c}.0 2 /bin/sleep", f"{c}.1 2 /bin/sleep"]
    assert s["af comma"] == [f"{c}, 0", f"{c}, 1"]
    # each -format is one column, no separator added; %v of an undefined attribute prints "undefined"
    assert s["format"] == [f"{c}.0 /bin/sleep undefined", f"{c}.1 /bin/sleep undefined"]
    assert s["totals"] == ["Total for all users: 2 jobs; 0 completed, 0 removed, 0 idle, 2 running, "
                           "0 held, 0 suspended"]
    assert s["qedit"] == ['Set attribute "Site" for 1 matching jobs.', 'Set attribute "Weight" for 1 matching jobs.',
                          'Set attribute "Site" for 1 matching jobs.']
    # -p 7 on proc 1, then +2 on the whole cluster: each job's own priority moves
    assert s["prio"] == ["0 north 2 3", "1 south 9 undefined"]
    assert s["who"][0].split() == ["OWNER", "CLIENT", "SLOT", "JOB", "RUNTIME"]
    assert s["who"][1:] == [f"{c}.0", f"{c}.1"]
    assert s["hold"] == [f"Job {c}.0 held", "5", f"Job {c}.0 released", "true"]
    assert s["rm"] == [f"All jobs in cluster {c} have been marked for removal", "All jobs done."]
    assert s["history"] == [f"{c} 0 3", f"{c} 1 3", c, "1"]
    assert s["userlog"] == [f"{c} 0 3", f"{c} 1 3"]
    # errors name the program the script ran, not roost's verb
    assert s["errors"][0] == "condor_q: unknown option -no-such-flag"
    assert s["errors"][1].startswith("condor_qedit: there were no jobs specified")
    assert os.path.exists(jobdir / "sleep.log")


def test_condor_prio_reorders_the_jobs_a_reused_claim_runs_next(jobdir: Path) -> None:
    """One slot, one claim reused job after job: a priority raised with condor_prio while
    the claim is busy decides which idle job it takes next (the schedd forgets what it
    knew of the owner's priorities when JobPrio is edited)."""
    import tempfile

    from poolkit import start_pool, stop_pool, wait_until

    from roost.eventlog import EventType, read_events

    home = Path(tempfile.mkdtemp(prefix="roost-prio-", dir="/tmp"))
    pool = start_pool(home, "NUM_CPUS = 1\n")
    try:
        (jobdir / "job.sub").write_text("executable = /bin/sleep\narguments = 2\nlog = job.log\nqueue 4\n")
        out = pool.roost("submit", "job.sub", cwd=jobdir, check=True).stdout
        c = out.rsplit("cluster ", 1)[1].strip().rstrip(".")

        def started() -> list[int]:
            if not (jobdir / "job.log").exists():
                return []
            return [e.proc for e in read_events(jobdir / "job.log", strict=False) if e.type == EventType.EXECUTE]

        # the claim has been reused once (proc 1 runs after proc 0): then raise proc 3
        wait_until(lambda: started()[:2] == [0, 1], 60, "procs 0 then 1 to start on the one slot")
        env = dict(pool.env, PATH=f"{BIN}:/usr/bin:/bin")
        subprocess.run([str(BIN / "condor_prio"), "-p", "10", f"{c}.3"], env=env, check=True, timeout=30)
        wait_until(lambda: len(started()) == 4, 60, "all four procs to start")
        assert started() == [0, 1, 3, 2]
    finally:
        stop_pool(pool)
