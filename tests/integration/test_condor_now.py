"""condor_now (`roost now`): an idle job runs at once on a running job's slot, which the
schedd vacates and keeps the claim of; the refusals are HTCondor's."""

from __future__ import annotations

from pathlib import Path

from poolkit import PoolHandle

FILL = "executable = /bin/sleep\narguments = 600\nrequest_cpus = 4\nrequest_memory = 64\nlog = {log}\nqueue\n"


def test_now_job_takes_the_vacated_jobs_claim(pool: PoolHandle, jobdir: Path) -> None:
    # the victim fills the machine, so the now-job can run only on its slot
    victim = f"{pool.submit(FILL.format(log=jobdir / 'victim.log'), jobdir).cluster}.0"
    ran = pool.wait_for(victim, lambda j: j.get("JobStatus") == 2, what="the vacate-job running")
    now = f"{pool.submit(FILL.format(log=jobdir / 'now.log'), jobdir).cluster}.0"

    wrong = pool.roost("now", victim, now)
    assert (wrong.returncode, wrong.stderr) == (1, "Unable to reassign slot: the now-job must be idle.\n")
    missing = pool.roost("now", "999999.0", victim)
    assert missing.stderr == "Unable to reassign slot: no such job (now-job).\n"

    done = pool.roost("now", now, victim)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    got = pool.wait_for(now, lambda j: j.get("JobStatus") == 2, what="the now-job running")
    # on the vacated job's claim: same slot, and the vacate-job is back to Idle, evicted
    assert got["RemoteHost"] == ran["RemoteHost"]
    back = pool.wait_for(victim, lambda j: j.get("JobStatus") == 1, what="the vacate-job idle")
    assert back.get("LastRemoteHost") == ran["RemoteHost"]
    assert "Job was evicted." in (jobdir / "victim.log").read_text()
    pool.roost("rm", now.split(".")[0], victim.split(".")[0], check=True)


def test_condor_now_refuses_more_than_one_vacate_job_and_bad_ids(pool: PoolHandle) -> None:
    usage = pool.roost("now", "12.0")
    assert usage.returncode == 1 and "name the job to run now" in usage.stderr
    many = pool.roost("now", "999999.0", "999998.0", "999997.0")
    assert many.stderr == "Unable to reassign slot: no such job (now-job).\n"
