"""Chirp from a real job: the ``htchirp`` package (PyPI), run by the system's Python as
the job's user, talks to its starter's server; attribute updates reach the queue while
the job runs, its message reaches its event log, its files move on the submit side as
its owner may move them (a root-submitted job: as ``nobody``), and delayed updates
arrive with the starter's reports.

The venv's interpreter lives under /root, where ``nobody`` cannot read: jobs run
``/usr/bin/python3`` with the htchirp package sent along as an input directory.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from poolkit import PoolHandle, wait_until

from roost.eventlog import read_events

htchirp = pytest.importorskip("htchirp")
PYTHON = "/usr/bin/python3"
pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"no {PYTHON} to run jobs with")

# Everything a job can ask, then it waits (attributes visible meanwhile) for "go".
JOB = r"""
import os, sys, time
sys.path.insert(0, os.getcwd())
from htchirp import HTChirp

d = sys.argv[1]
with HTChirp() as c:
    c.set_job_attr("JobProgress", "42")
    c.set_job_attr("JobNote", '"half way"')
    print("progress", c.get_job_attr("JobProgress"), flush=True)
    print("owner", c.get_job_attr("Owner"), flush=True)
    try:
        c.set_job_attr("Owner", '"mallory"')
    except HTChirp.NotAuthorized:
        print("owner refused", flush=True)
    try:
        c.set_job_attr("WantIOProxy", "false")  # what decides its Chirp: not the job's to change
    except HTChirp.NotAuthorized:
        print("want refused", flush=True)
    c.ulog("hello from the job")
    with open("local.txt", "w") as f:
        f.write("made on the execute side\n")
    print("put", c.putfile("local.txt", "from_job.txt"), flush=True)
    print("got", c.getfile("on_submit.txt", "fetched.txt"), open("fetched.txt").read().strip(), flush=True)
    c.write(b"abc", "written.txt", "wc")
    print("read", c.read("written.txt", 10).decode(), flush=True)
    try:
        c.getfile(os.path.join(d, "private", "key"), "stolen.txt")
    except HTChirp.NotAuthorized:
        print("private refused", flush=True)
    c.set_job_attr_delayed("ChirpStage", "1")
    for i in range(99):
        c.set_job_attr_delayed("ChirpN%d" % i, str(i))
    try:
        c.set_job_attr_delayed("ChirpOneTooMany", "1")
    except HTChirp.TooManyOpen:
        print("cap refused", flush=True)
    c.set_job_attr("JobReady", "true")
go = os.path.join(d, "go")
for _ in range(1200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
with HTChirp() as c:
    c.set_job_attr_delayed("ChirpStage", "2")
print("done", flush=True)
"""

# A job that did not ask for remote I/O: delayed updates only (HTCondor's default).
PLAIN = r"""
import os, sys
sys.path.insert(0, os.getcwd())
from htchirp import HTChirp

with HTChirp() as c:
    c.set_job_attr_delayed("ChirpOnly", "7")
    for what, call in (("set", lambda: c.set_job_attr("JobProgress", "1")),
                       ("read", lambda: c.read("on_submit.txt", 5)),
                       ("ulog", lambda: c.ulog("no"))):
        try:
            call()
            print(what, "allowed", flush=True)
        except HTChirp.NotAuthorized:
            print(what, "refused", flush=True)
"""


def _prepare(d: Path, program: str) -> None:
    """The job's script, the htchirp package beside it, and the submit side's files."""
    (d / "job.py").write_text(program)
    src = Path(htchirp.__file__).parent
    shutil.copytree(src, d / "htchirp", ignore=shutil.ignore_patterns("__pycache__"))
    (d / "on_submit.txt").write_text("from the submit side\n")
    private = d / "private"
    private.mkdir(mode=0o700)  # root's: the job's I/O (as nobody) may not enter
    (private / "key").write_text("secret\n")


def _submit(pool: PoolHandle, d: Path, io: bool) -> str:
    extra = "+WantIOProxy = true\n" if io else ""
    r = pool.submit(f"executable = {PYTHON}\ntransfer_executable = false\narguments = job.py {d}\n"
                    "transfer_input_files = job.py, htchirp\nshould_transfer_files = YES\n"
                    "environment = PYTHONDONTWRITEBYTECODE=1\n"
                    f"output = out.txt\nerror = err.txt\nlog = job.log\n{extra}queue\n", d)
    return f"{r.cluster}.0"


def test_a_job_chirps_attributes_log_and_files_while_it_runs(pool: PoolHandle, jobdir: Path) -> None:
    _prepare(jobdir, JOB)
    jid = _submit(pool, jobdir, io=True)
    ad = pool.wait_for(jid, lambda a: a.get("JobReady") is True, 60, "the job's JobReady")
    # set_job_attr reached the queue at once: seen while the job runs
    assert ad["JobStatus"] == 2 and ad["JobProgress"] == 42 and ad["JobNote"] == "half way"
    assert ad["Owner"] == "root"  # refused
    long = pool.roost("q", "-l", jid, check=True).stdout
    assert "JobProgress = 42" in long
    # delayed updates come with the starter's next report (STARTER_UPDATE_INTERVAL = 1)
    ad = pool.wait_for(jid, lambda a: a.get("ChirpStage") == 1, 30, "the delayed updates")
    assert ad["JobStatus"] == 2 and ad["ChirpN98"] == 98 and "ChirpOneTooMany" not in ad
    assert _file_helpers(pool.daemon_pid("schedd"))  # started for its first file operation
    (jobdir / "go").touch()
    pool.wait([jid], timeout=60)
    ad = pool.job(jid)
    assert ad is not None and ad["ExitCode"] == 0, (jobdir / "err.txt").read_text()
    assert ad["ChirpStage"] == 2  # the last one, with the final report
    out = (jobdir / "out.txt").read_text().splitlines()
    assert out == ["progress 42", 'owner "root"', "owner refused", "want refused", f"put {len('made on the execute side')+1}",
                   "got 21 from the submit side", "read abc", "private refused", "cap refused", "done"], out
    # the job's files on the submit side, made as its owner may (root's job: nobody)
    made = jobdir / "from_job.txt"
    assert made.read_text() == "made on the execute side\n"
    assert made.stat().st_uid == 65534 or os.geteuid() != 0
    assert (jobdir / "written.txt").read_bytes() == b"abc"
    assert not (jobdir / ".chirp.config").exists()  # never sent back as output
    generic = [e for e in read_events(str(jobdir / "job.log")) if int(e.type) == 8]
    assert [e["Info"] for e in generic] == ["hello from the job"]
    schedd = pool.daemon_pid("schedd")
    wait_until(lambda: not _file_helpers(schedd), 10, "the job's file helper ended with the job")


def _file_helpers(parent: int) -> list[int]:
    """The schedd's Chirp file helpers still running (children of ``parent``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and b"chirpio" in cmd:
            found.append(int(entry.name))
    return found


def test_a_job_that_asked_for_no_io_gets_only_delayed_updates(pool: PoolHandle, jobdir: Path) -> None:
    _prepare(jobdir, PLAIN)
    jid = _submit(pool, jobdir, io=False)
    pool.wait([jid], timeout=60)
    ad = pool.job(jid)
    assert ad is not None and ad["ExitCode"] == 0, (jobdir / "err.txt").read_text()
    assert ad["ChirpOnly"] == 7 and "JobProgress" not in ad
    assert (jobdir / "out.txt").read_text().splitlines() == ["set refused", "read refused", "ulog refused"]
    wait_until(lambda: not any(p.name.startswith("dir_") for p in (pool.home / "execute").iterdir()), 10,
               "the sandbox removed")


# Sets an attribute, waits for "go" (meanwhile its startd is killed and adopts it), then
# talks to its Chirp server again: the new startd serves it on the same port and cookie.
ADOPTED = r"""
import os, sys, time
sys.path.insert(0, os.getcwd())
from htchirp import HTChirp

d = sys.argv[1]
with HTChirp() as c:
    c.set_job_attr("JobPhase", "1")
go = os.path.join(d, "go")
for _ in range(1200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
with HTChirp() as c:
    c.set_job_attr("JobPhase", "2")
    c.write(b"after the restart", "adopted.txt", "wc")
"""


def test_a_restarted_startd_serves_its_adopted_jobs_chirp(long_lease_pool: PoolHandle, jobdir: Path) -> None:
    pool = long_lease_pool
    pool.wait_log(r"job launcher ready")  # jobs outlive their startd once it is built
    _prepare(jobdir, ADOPTED)
    mark = pool.log_mark()
    jid = _submit(pool, jobdir, io=True)
    pool.job_pid(jid, after=mark, timeout=60)  # it runs and has its record: the next startd adopts it
    pool.wait_for(jid, lambda a: a.get("JobPhase") == 1, 60, "the job's first update")
    old = pool.daemon_pid("startd")
    os.kill(old, signal.SIGKILL)
    pool.wait_daemon_back("startd", old)
    (jobdir / "go").touch()
    pool.wait([jid], timeout=90)
    ad = pool.job(jid)
    assert ad is not None and ad["ExitCode"] == 0, (jobdir / "err.txt").read_text()
    assert ad["JobPhase"] == 2 and ad["NumJobStarts"] == 1
    assert (jobdir / "adopted.txt").read_bytes() == b"after the restart"
