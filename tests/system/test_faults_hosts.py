"""Faults of the network and of the central manager, across hosts in namespaces: a
partition between submit and execute host shorter than the job's lease (the job goes
on and its result arrives), longer (it runs again elsewhere and the orphan is killed),
and the central manager down (running jobs go on, claims take further jobs, matching
resumes when it is back)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hostpool import MultiHostPool, RoostHost

from daemon_logs import log_mark, wait_log


@pytest.fixture
def hosts(shared_hosts: MultiHostPool) -> MultiHostPool:
    """One four-host pool for this module (conftest's ``shared_hosts``): each test mends its cut
    and starts the central manager it stopped again, and works in its own directory."""
    return shared_hosts


# Appends where it ran to a file of the shared disk at its end: a run that was killed
# never writes, one that finished twice writes twice.
JOB = """#!/bin/sh
sleep $1
echo "$(hostname)" >> {ran}
echo done > result.txt
"""


# The long partition's job: its first run sleeps past any deadline of the test (the
# orphan must be killed, not end by itself); the run after it ends at once.
ONCE_LONG = """#!/bin/sh
mkdir {first} 2>/dev/null && sleep 60
echo "$(hostname)" >> {ran}
echo done > result.txt
"""


def _work(submit: RoostHost, name: str, job: str = JOB) -> Path:
    work = submit.host.dir / name
    work.mkdir()
    work.chmod(0o777)
    (work / "job.sh").write_text(job.format(ran=work / "ran.txt", first=work / "first"))
    (work / "job.sh").chmod(0o755)
    return work


def _submit(submit: RoostHost, work: Path, secs: float, n: int = 1, extra: str = "") -> str:
    (work / "job.sub").write_text(
        f"executable = job.sh\narguments = {secs}\nshould_transfer_files = YES\n"
        f"transfer_output_files = result.txt\nlog = jobs.log\nrequest_memory = 64\n{extra}queue {n}\n")
    done = submit.roost("submit", "job.sub", cwd=work)
    m = re.search(r"submitted to cluster (\d+)", done.stdout)
    assert m, done.stdout
    return m.group(1)


def _ads(submit: RoostHost, cluster: str, *attrs: str) -> list[list[str]]:
    done = submit.roost("q", cluster, "-af", *attrs, check=False)
    if not done.stdout.strip():
        done = submit.roost("history", cluster, "-af", *attrs, check=False)
    return [line.split() for line in done.stdout.splitlines() if line.strip()]


def _running_on(submit: RoostHost, cluster: str, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = _ads(submit, cluster, "JobStatus", "RemoteHost")
        if rows and rows[0][0] == "2" and len(rows[0]) > 1 and "@" in rows[0][1]:
            return rows[0][1].split("@", 1)[1].split(".")[0]
        time.sleep(0.2)
    raise AssertionError(f"cluster {cluster} never ran: {_ads(submit, cluster, 'JobStatus', 'HoldReason')}")


def _started(host: RoostHost, cluster: str) -> int:
    """The pid of the cluster's job on ``host`` once it runs there with its record written
    and its start reported (the startd's milestone line)."""
    m = wait_log(host.home / "log" / "StartLog", rf"job {cluster}\.0: started, pid (\d+), record written")
    return int(m.group(1))


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (an unreaped zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _events(work: Path, code: str) -> int:
    return sum(1 for line in (work / "jobs.log").read_text().splitlines() if line.startswith(code + " "))


def test_partition_shorter_than_the_lease_the_job_goes_on(hosts: MultiHostPool) -> None:
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "short")
    cluster = _submit(submit, work, 6)
    where = _running_on(submit, cluster)
    _started(hosts[where], cluster)
    hosts.net.cut(where)
    time.sleep(3)  # time is the point: a partition shorter than the lease (JOB_LEASE_DURATION is 6)
    hosts.net.mend(where)
    submit.roost("wait", "-quiet", "-wait", "60", cluster, timeout=70)
    [[status, starts, code, last]] = _ads(submit, cluster, "JobStatus", "NumJobStarts", "ExitCode", "LastRemoteHost")
    assert (status, starts, code) == ("4", "1", "0"), (status, starts, code)
    assert (work / "ran.txt").read_text().split() == [where]
    assert (work / "result.txt").read_text() == "done\n"
    assert _events(work, "005") == 1 and _events(work, "001") == 1
    assert _events(work, "022") == 1 and _events(work, "023") == 1  # disconnected, reconnected


def test_partition_longer_than_the_lease_reruns_elsewhere_and_kills_the_orphan(hosts: MultiHostPool) -> None:
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "long", ONCE_LONG)
    cluster = _submit(submit, work, 0)
    where = _running_on(submit, cluster)
    other = "exec2" if where == "exec1" else "exec1"
    orphan = _started(hosts[where], cluster)
    start_log = hosts[where].home / "log" / "StartLog"
    mark = log_mark(start_log)  # the pool is the module's: an earlier test's expiry must not answer
    hosts.net.cut(where)
    try:
        # the lease (6 s) runs out on both sides: the cut host's startd kills the orphan,
        # the schedd requeues the job and it runs (at once, to its end) on the other host
        wait_log(start_log, "lease expired", after=mark, timeout=60)
        deadline = time.monotonic() + 30
        while not _gone(orphan):  # killed, long before its own end (60 s): it never writes
            assert time.monotonic() < deadline, f"the orphan (pid {orphan}) outlived its lease"
            time.sleep(0.1)
        submit.roost("wait", "-quiet", "-wait", "60", cluster, timeout=70)
    finally:
        hosts.net.mend(where)
    [[status, starts, code]] = _ads(submit, cluster, "JobStatus", "NumJobStarts", "ExitCode")
    assert (status, code) == ("4", "0") and int(starts) == 2, (status, starts, code)
    assert (work / "ran.txt").read_text().split() == [other]  # the orphan never finished
    assert _events(work, "005") == 1
    assert _events(work, "022") == 1 and _events(work, "024") == 1  # disconnected, reconnect failed
    log = start_log.read_bytes()[mark:].decode(errors="replace")
    assert "lease expired" in log, log[-2000:]


def test_central_manager_down_running_jobs_go_on_and_claims_take_more(hosts: MultiHostPool) -> None:
    submit, cm = hosts["submit"], hosts["cm"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "cmdown")
    first = _submit(submit, work, 6, n=4)  # long enough that all four run at once, in a cycle or two
    deadline = time.monotonic() + 30
    while sum(1 for r in _ads(submit, first, "JobStatus") if r == ["2"]) < 4:
        assert time.monotonic() < deadline, _ads(submit, first, "JobStatus", "HoldReason")
        time.sleep(0.2)
    cm.roost("down", "-timeout", "20", timeout=30)
    more = _submit(submit, work, 1, n=4)  # the same kind: the claims take them, no negotiator
    big = _submit(submit, work, 1, extra="request_cpus = 2\n")  # needs a new match
    submit.roost("wait", "-quiet", "-wait", "60", first, more, timeout=70)
    assert all(r == ["4"] for r in _ads(submit, first, "JobStatus") + _ads(submit, more, "JobStatus"))
    time.sleep(2)  # time is the point: a negotiation interval passes with no negotiator to match it
    assert _ads(submit, big, "JobStatus") == [["1"]]  # idle: nobody to match it
    cm.roost("up", "-timeout", "30", timeout=45)
    submit.roost("wait", "-quiet", "-wait", "60", big, timeout=70)
    assert _ads(submit, big, "JobStatus") == [["4"]]
    assert len((work / "ran.txt").read_text().split()) == 9


# Counts to 12, half a second a step, checkpointing every 3 steps (exit 85); each start
# says where it ran and from which step, on the shared disk.
COUNTER = """#!/bin/sh
i=0
if [ -f ckpt ]; then i=$(cat ckpt); fi
echo "$(hostname) $i" >> {starts}
while [ $i -lt 12 ]; do
  sleep 0.5
  i=$((i+1))
  if [ $((i % 3)) -eq 0 ] && [ $i -lt 12 ]; then echo $i > ckpt; exit 85; fi
done
echo done > result.txt
"""


def test_a_checkpointing_job_whose_host_is_lost_resumes_on_another_from_its_checkpoint(
        hosts: MultiHostPool) -> None:
    """Migration: the job's host is cut off past its lease; the schedd requeues it and it
    starts on the other host from its latest checkpoint, not from the beginning."""
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = _work(submit, "migrate")
    starts = work / "starts.txt"
    (work / "job.sh").write_text(COUNTER.format(starts=starts))
    cluster = _submit(submit, work, 0, extra="checkpoint_exit_code = 85\ntransfer_checkpoint_files = ckpt\n")
    where = _running_on(submit, cluster)
    other = "exec2" if where == "exec1" else "exec1"
    deadline = time.monotonic() + 30
    while (_ads(submit, cluster, "NumCkpts") or [["0"]])[0][0] in ("0", "undefined"):
        assert time.monotonic() < deadline, "no checkpoint kept"
        time.sleep(0.2)
    hosts.net.cut(where)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _running_on(submit, cluster, timeout=60) != other:
            time.sleep(0.5)
    finally:
        hosts.net.mend(where)
    submit.roost("wait", "-quiet", "-wait", "60", cluster, timeout=70)
    [[status, code, ckpts]] = _ads(submit, cluster, "JobStatus", "ExitCode", "NumCkpts")
    assert (status, code) == ("4", "0") and int(ckpts) >= 3, (status, code, ckpts)
    runs = [line.split() for line in starts.read_text().splitlines()]
    assert runs[0] == [where, "0"], runs
    moved = [int(step) for host, step in runs if host == other]
    assert moved and moved[0] >= 3, runs  # resumed from a checkpoint on the other host
    assert (work / "result.txt").read_text() == "done\n"
