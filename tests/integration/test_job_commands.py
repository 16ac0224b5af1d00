"""The commands HTCondor users run that issue 26 added, on a real pool.

condor_suspend, condor_continue and condor_vacate_job: the job stops and goes on
(JobStatus 7 and back, events 010/011), a vacated job goes back to Idle with an evicted
event (004) and runs again, -fast kills where a plain vacate sends the job's kill signal;
HTCondor's lines for jobs the command cannot act on. condor_watch_q: follows the jobs'
logs until -exit's condition holds."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import htcondor2
import pytest
from poolkit import PoolHandle, wait_until

ROOT = Path(__file__).resolve().parents[2]

# Counts in a file five times a second; notes SIGTERM (a vacate's kill signal) before exiting.
_COUNTER = """#!/bin/sh
trap 'echo TERM >> signals; exit 1' TERM
i=0
while [ $i -lt 3000 ]; do i=$((i+1)); echo $i > count; sleep 0.2; done
"""


def condor(pool: PoolHandle, prog: str, *args: str, cwd: Path | None = None,
           timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run bin/<prog> (the condor_* name) against ``pool``."""
    return subprocess.run([sys.executable, str(ROOT / "bin" / prog), *args], env=pool.env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False)


def events(log: Path) -> list[htcondor2.JobEventType]:
    return [e.type for e in htcondor2.JobEventLog(str(log)).events(stop_after=0)]


def submit_counter(pool: PoolHandle, d: Path) -> str:
    script = d / "count.sh"
    script.write_text(_COUNTER)
    script.chmod(0o755)
    r = pool.submit("executable = count.sh\nlog = job.log\nshould_transfer_files = NO\nqueue\n", d)
    jid = f"{r.cluster}.0"
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=30, what="running")
    wait_until(lambda: (d / "count").exists(), 15, "the job counting")
    return jid


def count(d: Path) -> int:
    text = (d / "count").read_text().strip()
    return int(text) if text else 0


def advancing(d: Path) -> bool:
    """Whether the count moves within five ticks of the job's loop (a stopped job's
    does not: only time can show that)."""
    first = count(d)
    time.sleep(1.0)  # time is the point: a running job ticks five times in it, a stopped one none
    return count(d) > first


def test_suspend_stops_the_job_and_continue_resumes_it(pool: PoolHandle, jobdir: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    jid = submit_counter(pool, jobdir)
    got = condor(pool, "condor_suspend", jid)
    assert (got.returncode, got.stdout) == (0, f"Job {jid} suspended\n"), got.stderr
    ad = pool.wait_for(jid, lambda j: j.get("JobStatus") == 7, timeout=15, what="suspended")
    assert ad["TotalSuspensions"] == 1 and ad["LastSuspensionTime"] >= ad["JobCurrentStartDate"]
    wait_until(lambda: htcondor2.JobEventType.JOB_SUSPENDED in events(jobdir / "job.log"), 10, "event 010")
    assert not advancing(jobdir)  # stopped: the count stands still
    again = condor(pool, "condor_suspend", jid)
    assert (again.returncode, again.stdout, again.stderr) == (1, "", f"Job {jid} already suspended\n")

    cont = condor(pool, "condor_continue", jid)
    assert (cont.returncode, cont.stdout) == (0, f"Job {jid} continued\n"), cont.stderr
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=15, what="running again")
    wait_until(lambda: htcondor2.JobEventType.JOB_UNSUSPENDED in events(jobdir / "job.log"), 10, "event 011")
    before = count(jobdir)  # resumed: the count moves again (on a loaded host it may take a while)
    wait_until(lambda: count(jobdir) > before, 15, "the job counting again after condor_continue")
    again = condor(pool, "condor_continue", jid)
    assert (again.returncode, again.stderr) == (1, f"Job {jid} already running\n")
    # a cluster and a constraint read as condor_rm's family reads them
    cluster = jid.split(".")[0]
    by_cluster = condor(pool, "condor_suspend", cluster)
    assert by_cluster.stdout == f"All jobs in cluster {cluster} have been suspended\n", by_cluster.stderr
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 7, timeout=15, what="suspended by cluster")
    by_expr = condor(pool, "condor_continue", "-constraint", f"ClusterId == {cluster}")
    assert by_expr.stdout == f"All jobs matching constraint (ClusterId == {cluster}) have been continued\n"
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=15, what="continued by constraint")
    kinds = events(jobdir / "job.log")
    assert kinds.count(htcondor2.JobEventType.JOB_SUSPENDED) == 2
    wait_until(lambda: events(jobdir / "job.log").count(htcondor2.JobEventType.JOB_UNSUSPENDED) == 2, 10,
               "the second 011")
    # the same through the htcondor2 face: Schedd.act(JobAction.Suspend / Continue)
    import roost.htcondor2 as face

    monkeypatch.setenv("ROOST_HOME", str(pool.home))
    assert face.Schedd().act(face.JobAction.Suspend, [jid])["TotalSuccess"] == 1
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 7, timeout=15, what="suspended through htcondor2")
    assert face.Schedd().act(face.JobAction.Continue, [jid])["TotalSuccess"] == 1
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=15, what="continued through htcondor2")
    pool.roost("rm", jid, check=True)
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 3 and "CompletionDate" in j, timeout=30, what="removed")


def test_vacate_job_requeues_and_fast_kills(pool: PoolHandle, jobdir: Path) -> None:
    jid = submit_counter(pool, jobdir)
    got = condor(pool, "condor_vacate_job", jid)
    assert (got.returncode, got.stdout) == (0, f"Job {jid} vacated\n"), got.stderr
    # evicted (004) with the job's kill signal (SIGTERM: the job noted it), then it runs again
    wait_until(lambda: htcondor2.JobEventType.JOB_EVICTED in events(jobdir / "job.log"), 30, "event 004")
    assert (jobdir / "signals").read_text() == "TERM\n"
    wait_until(lambda: events(jobdir / "job.log").count(htcondor2.JobEventType.EXECUTE) == 2, 30,
               "a second start")
    ad = pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=30, what="running again")
    assert ad["NumJobStarts"] >= 2
    (jobdir / "count").unlink()
    wait_until(lambda: (jobdir / "count").exists(), 15, "the job counting again")

    fast = condor(pool, "condor_vacate_job", "-fast", jid)
    assert (fast.returncode, fast.stdout) == (0, f"Job {jid} fast-vacated\n"), fast.stderr
    wait_until(lambda: events(jobdir / "job.log").count(htcondor2.JobEventType.JOB_EVICTED) == 2, 30,
               "the second 004")
    assert (jobdir / "signals").read_text() == "TERM\n"  # SIGKILL: the job could note nothing
    assert pool.job(jid)["JobStatus"] in (1, 2)  # still queued: back to Idle, and may run again
    pool.roost("rm", jid, check=True)
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 3 and "CompletionDate" in j, timeout=30, what="removed")


def test_jobs_not_running_get_htcondors_lines(pool: PoolHandle, jobdir: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 60\nhold = true\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    for prog, line in (("condor_suspend", f"Job {jid} not running to be suspended"),
                       ("condor_continue", f"Job {jid} not running to be continued"),
                       ("condor_vacate_job", f"Job {jid} not running to be vacated")):
        got = condor(pool, prog, jid)
        assert (got.returncode, got.stdout, got.stderr) == (1, "", line + "\n"), prog
    fast = condor(pool, "condor_vacate_job", "-fast", jid)
    assert fast.stderr == f"Job {jid} not running to be fast-vacated\n"
    gone = condor(pool, "condor_suspend", "999999.0")
    assert (gone.returncode, gone.stderr) == (1, "Job 999999.0 not found\n")
    none = condor(pool, "condor_vacate_job", "999999")
    assert none.stderr == "Couldn't find/vacate all jobs in cluster 999999\n"
    assert pool.job(jid)["JobStatus"] == 5  # still held: nothing was done to it
    usage = condor(pool, "condor_suspend")
    assert usage.returncode == 1 and usage.stderr.startswith("condor_suspend: You did not specify any jobs")
    pool.roost("rm", jid, check=True)


def test_watch_q_follows_the_logs_until_all_are_done(pool: PoolHandle, jobdir: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 1\nlog = watch.log\nbatch_name = sweep\nqueue 3\n", jobdir)
    got = condor(pool, "condor_watch_q", "-clusters", str(r.cluster), "-exit", "all,done", cwd=jobdir, timeout=120)
    assert got.returncode == 0, got.stdout + got.stderr
    pictures = got.stdout.split("\n...\n")
    last = pictures[-1].splitlines()
    assert last[0].startswith("Exiting with code 0 because of condition \"all done\" at ")
    final = pictures[-2].splitlines()
    assert final[0].split() == ["BATCH", "IDLE", "RUN", "DONE", "TOTAL", "JOB_IDS"]
    assert final[1].startswith("sweep") and final[1].split()[1:5] == ["-", "-", "3", "3"]
    assert re.search(r"  \[#+\]$", final[1]), final[1]  # the row's bar: all done
    assert "Total: 3 jobs; 3 completed" in final
    assert final[-1].startswith("Updated at ")


def test_watch_q_exits_with_the_conditions_code(pool: PoolHandle, jobdir: Path) -> None:
    r = pool.submit("executable = /bin/sleep\narguments = 60\nlog = held.log\nqueue\n", jobdir)
    pool.roost("hold", str(r.cluster), check=True)  # a 012 in its log (hold = true at submit writes none)
    got = condor(pool, "condor_watch_q", "-clusters", str(r.cluster), "-exit", "any,held,7", "-groupby", "cluster",
                 cwd=jobdir)
    assert got.returncode == 7, got.stdout + got.stderr
    lines = got.stdout.splitlines()
    assert lines[0].split() == ["CLUSTER", "HELD", "IDLE", "RUN", "DONE", "TOTAL", "JOB_IDS"]
    assert lines[1].split()[:7] == [str(r.cluster), "1", "-", "-", "-", "1", f"{r.cluster}.0"]
    assert "Total: 1 jobs; 1 held" in lines
    assert lines[-1].startswith('Exiting with code 7 because of condition "any held" at ')
    pool.roost("rm", str(r.cluster), check=True)
    nobody = condor(pool, "condor_watch_q", "-users", "nosuchuser26")
    assert (nobody.returncode, nobody.stderr) == (0, "WARNING: No jobs found, exiting...\n")
    unlogged = pool.submit("executable = /bin/sleep\narguments = 60\nhold = true\nqueue\n", jobdir)
    got = condor(pool, "condor_watch_q", "-clusters", str(unlogged.cluster))
    assert got.returncode == 0
    assert got.stderr == (f"WARNING: Cluster {unlogged.cluster} does not have a job event log file "
                          "(set log=<path> in the submit description)\nWARNING: No jobs found, exiting...\n")
    pool.roost("rm", str(unlogged.cluster), check=True)


def test_the_htcondor_command_line(pool: PoolHandle, jobdir: Path) -> None:
    """What the OSG DAG tutorial has users run: htcondor job submit/status, dag
    submit/status, eventlog read (the tool reports on stderr, as HTCondor's does)."""
    (jobdir / "job.sub").write_text("executable = /bin/sleep\narguments = 1\nlog = one.log\nqueue\n")
    got = condor(pool, "htcondor", "job", "submit", "job.sub", cwd=jobdir)
    assert got.returncode == 0 and re.fullmatch(r"Job (\d+) was submitted\.\n", got.stderr), got.stderr
    cid = re.search(r"\d+", got.stderr).group()
    pool.wait([cid], timeout=60)
    wait_until(lambda: pool.job(f"{cid}.0") is not None and "CompletionDate" in pool.job(f"{cid}.0"), 30,
               "in the history")
    done = condor(pool, "htcondor", "job", "status", cid).stderr.splitlines()
    assert done[:2] == [f"Job {cid} was not found in the active queue, checking history...",
                        "(This may take a while, Ctrl-C to cancel.)"], done
    assert done[2] == f"Job {cid} has completed." and re.fullmatch(r"It completed .+ ago\.", done[3]), done
    assert re.fullmatch(r"It was submitted .+ ago\.", done[4])
    assert re.fullmatch(r"Job had \d+\.\d% goodput for .+ of wall clock time\.", done[-1]), done

    many = jobdir / "many.sub"
    many.write_text("executable = /bin/true\nqueue 3\n")
    bad = condor(pool, "htcondor", "job", "submit", str(many))
    assert (bad.returncode, bad.stderr) == (1, "Error while trying to run job submit:\nCan only submit one job at a time\n")
    missing = condor(pool, "htcondor", "job", "status", "999999", "--skip-history")
    assert (missing.returncode, missing.stderr) == (1, "Error while trying to run job status:\nNo job found for ID 999999.\n")

    held = pool.submit("executable = /bin/sleep\narguments = 60\nqueue\n", jobdir)
    pool.roost("hold", str(held.cluster), check=True)
    lines = condor(pool, "htcondor", "job", "status", f"{held.cluster}.0").stderr.splitlines()
    assert lines[0] == f"Job {held.cluster}.0 is currently held."
    assert lines[2] == 'It was held because "via condor_hold (by user root)".' and lines[3] == "It has been held 1 time."
    pool.roost("rm", str(held.cluster), check=True)

    (jobdir / "node.sub").write_text("executable = /bin/sleep\narguments = 3\nlog = nodes.log\nqueue\n")
    (jobdir / "two.dag").write_text("JOB A node.sub\nJOB B node.sub\nPARENT A CHILD B\n")
    got = condor(pool, "htcondor", "dag", "submit", "two.dag", cwd=jobdir)
    assert got.returncode == 0 and re.fullmatch(r"DAG (\d+) was submitted\.\n", got.stderr), got.stderr
    dag = re.search(r"\d+", got.stderr).group()

    def dag_lines() -> list[str]:
        return condor(pool, "htcondor", "dag", "status", dag).stderr.splitlines()

    wait_until(lambda: any("node(s) total" in line for line in dag_lines()), 30, "the DAG's progress in its ad")
    lines = dag_lines()
    assert re.fullmatch(rf"DAG {dag} \[two\.dag\] has been (running|idle) for (\d+ days?)? and \d\d:\d\d:\d\d", lines[0]), lines
    assert "DAG contains 2 node(s) total, of which:" in lines
    assert lines[-2] == "DAG is running normally."
    assert re.fullmatch(r"\[[#=»\-!]+\] DAG is \d+\.\d\d% complete\.", lines[-1]), lines
    not_a_dag = condor(pool, "htcondor", "dag", "status", cid)
    assert not_a_dag.returncode == 1 and not_a_dag.stderr.endswith(f"No DAG found for ID {cid}.\n")
    pool.wait([dag], timeout=120)

    table = condor(pool, "htcondor", "eventlog", "read", str(jobdir / "nodes.log"))
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split() == ["Job", "Host", "Start", "Time", "Evict", "Time", "Evictions", "Wall", "Time",
                               "Good", "Time", "CPU", "Usage"]
    assert len(rows) == 3 and all(r.split()[6] == "0" for r in rows[1:]), rows  # two jobs, never evicted


def test_watch_q_shows_a_dag_as_one_row(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "node.sub").write_text("executable = /bin/sleep\narguments = 1\nlog = node.log\nqueue\n")
    (jobdir / "chain.dag").write_text("JOB A node.sub\nJOB B node.sub\nJOB C node.sub\nPARENT A CHILD B\nPARENT B CHILD C\n")
    sub = pool.roost("submit_dag", "chain.dag", cwd=jobdir, check=True)
    dag = re.search(r"submitted to cluster (\d+)", sub.stdout).group(1)
    got = condor(pool, "condor_watch_q", "-batches", f"chain.dag+{dag}", "-exit", "all,done", cwd=jobdir, timeout=180)
    assert got.returncode == 0, got.stdout + got.stderr
    final = got.stdout.split("\n...\n")[-2].splitlines()
    # the three node jobs, each its own cluster, are one row under the DAG's batch name;
    # the DAGMan job is not a row of its own
    assert final[0].split() == ["BATCH", "IDLE", "RUN", "DONE", "TOTAL", "JOB_IDS"], final
    assert final[1].split()[:5] == [f"chain.dag+{dag}", "-", "-", "3", "3"], final
    assert len([line for line in final if line.startswith("chain.dag")]) == 1
    assert "Total: 3 jobs; 3 completed" in final
