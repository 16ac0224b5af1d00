"""`roost status` and `roost submit` with condor_status's and condor_submit's flags, on a real pool."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from poolkit import ROOST, PoolHandle, wait_until


def _running(pool: PoolHandle, cluster: str) -> bool:
    out = pool.roost("q", cluster, "-af", "JobStatus", check=True).stdout.split()
    return out == ["2"]


def test_status_views_of_a_busy_pool(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "s.sub").write_text("executable = /bin/sleep\narguments = 300\nqueue\n")
    done = pool.roost("submit", "-terse", "s.sub", cwd=jobdir, check=True)
    first, dash, last = done.stdout.split()
    assert dash == "-" and first == last and first.endswith(".0")
    cluster = first.split(".")[0]
    try:
        wait_until(lambda: _running(pool, cluster), 60, "the sleep job to run")
        owner = pool.roost("q", cluster, "-af", "Owner", check=True).stdout.strip()

        claimed = pool.roost("status", "-claimed", check=True).stdout.splitlines()
        assert claimed[0].split() == ["Name", "OpSys", "Arch", "LoadAv", "RemoteUser", "ClientMachine"]
        rows = [ln for ln in claimed[2:] if ln and not ln.startswith(" ")]
        assert len(rows) == 1 and owner in rows[0]
        assert any(ln.split()[:2] == ["Machines", "MIPS"] for ln in claimed)
        assert pool.roost("status", "-run", check=True).stdout == "\n".join(claimed) + "\n"

        avail = pool.roost("status", "-avail", "-af", "State", "Cpus", check=True).stdout.splitlines()
        assert avail and all(ln.split()[0] == "Unclaimed" and int(ln.split()[1]) > 0 for ln in avail)
        assert pool.roost("status", "-available", "-af", "State", check=True).stdout.split() == \
            [ln.split()[0] for ln in avail]

        compact = pool.roost("status", "-compact", check=True).stdout.splitlines()
        assert compact[0].split()[:4] == ["Machine", "Platform", "Slots", "Cpus"]
        machines = {ln.split()[0] for ln in compact[2:] if ln and not ln.startswith(" ")}
        slots = json.loads(pool.roost("status", "-json", check=True).stdout)
        assert machines == {a["Machine"] for a in slots}
        total = [ln for ln in compact if ln.split()[:1] == ["Total"]][-1].split()  # the last: not the heading
        assert int(total[1]) == len(slots) and int(total[3]) == 1  # all slots; one of them claimed
        claimed_compact = pool.roost("status", "-compact", "-claimed", check=True).stdout.splitlines()
        assert claimed_compact[0].split() == ["Machine", "Platform", "Slots", "Users"]
        assert owner in claimed_compact[2]

        by_cpus = pool.roost("status", "-sort", "Cpus", "-af", "Cpus", check=True).stdout.split()
        assert by_cpus == sorted(by_cpus, key=int) and len(by_cpus) == len(slots)
        desc = pool.roost("status", "-sort", "0 - Cpus", "-af", "Cpus", check=True).stdout.split()
        assert desc == sorted(by_cpus, key=int, reverse=True)
        assert len(pool.roost("status", "-limit", "1", "-af", "Name", check=True).stdout.splitlines()) == 1
        bad = pool.roost("status", "-limit", "lots")
        assert bad.returncode == 2 and "-limit takes a number" in bad.stderr

        wide = pool.roost("status", "-wide", check=True).stdout.splitlines()
        assert wide[0].split()[-1] == "ActivityTime"
        state = pool.roost("status", "-state", check=True).stdout.splitlines()
        assert "StateTime" in state[0].split() and "KbdIdle" in state[0].split()

        names = pool.roost("status", "-format", "%s\\n", "Name", check=True).stdout.split()
        assert sorted(names) == sorted(a["Name"] for a in slots)
        types = set(pool.roost("status", "-any", "-af", "MyType", check=True).stdout.split())
        assert {"Machine", "Scheduler", "Negotiator", "Collector"} <= types
        subs = pool.roost("status", "-submitters", check=True).stdout.splitlines()
        assert subs[0].split() == ["Name", "Machine", "RunningJobs", "IdleJobs", "HeldJobs"]
        assert any(ln.split()[-3:] == ["RunningJobs", "IdleJobs", "HeldJobs"] for ln in subs[3:])
    finally:
        pool.roost("rm", cluster)


def test_submit_terse_maxjobs_and_dots(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "s.sub").write_text("executable = /bin/true\nqueue 3\n")
    refused = pool.roost("submit", "-maxjobs", "2", "s.sub", cwd=jobdir)
    assert refused.returncode == 1 and "exceed -maxjobs (2)" in refused.stderr and refused.stdout == ""
    assert pool.roost("q", "-allusers", "-af", "Cmd", check=True).stdout.count("/bin/true") == 0
    terse = pool.roost("submit", "-maxjobs", "3", "-terse", "s.sub", cwd=jobdir, check=True).stdout
    c = terse.split(".")[0]
    assert terse == f"{c}.0 - {c}.2\n"
    plain = pool.roost("submit", "s.sub", cwd=jobdir, check=True).stdout.splitlines()
    assert plain[0] == "Submitting job(s)..." and plain[1].startswith("3 job(s) submitted to cluster ")
    c2 = plain[1].split()[-1].rstrip(".")
    # a submit file "-" (stdin) implies -verbose, as in condor_submit: each job's ad, no summary
    verbose = subprocess.run([*ROOST, "submit", "-"], input="executable = /bin/true\nqueue 2\n", env=pool.env,
                             cwd=jobdir, capture_output=True, text=True, timeout=60)
    assert verbose.returncode == 0, verbose.stderr
    heads = [ln for ln in verbose.stdout.splitlines() if ln.startswith("** Proc ")]
    c3 = heads[0].split()[-1].split(".")[0]
    assert heads == [f"** Proc {c3}.0:", f"** Proc {c3}.1:"] and 'Cmd = "/bin/true"' in verbose.stdout
    assert "submitted to cluster" not in verbose.stdout
    jobs = [f"{k}.{p}" for k in (c, c2) for p in range(3)] + [f"{c3}.0", f"{c3}.1"]
    pool.wait(jobs, timeout=120)


def test_submit_spool_lets_the_submit_directory_go(pool: PoolHandle, jobdir: Path) -> None:
    sub = jobdir / "work"
    (sub / "data").mkdir(parents=True)
    (sub / "in.txt").write_text("from the input file\n")
    (sub / "data" / "more.txt").write_text("from a directory\n")
    (sub / "show.py").write_text("import sys\nprint(open('in.txt').read().strip(), open('more.txt').read().strip())\n"
                               "open('made.txt', 'w').write('made by the job\\n')\n")
    (sub / "s.sub").write_text("executable = /usr/bin/python3\narguments = show.py\ntransfer_executable = false\n"
                               "transfer_input_files = in.txt, show.py, data/\nshould_transfer_files = YES\n"
                               "output = out.txt\nerror = err.txt\nqueue\n")
    for p in (sub, sub / "data"):
        p.chmod(0o755)
    done = pool.roost("submit", "-spool", "s.sub", cwd=sub, check=True)
    lines = done.stdout.splitlines()
    assert lines[-1] == "Spooling data files for 1 jobs...", lines  # condor_submit -spool's last line
    cluster = lines[-2].split()[-1].rstrip(".")
    keep = sub.with_name("kept")
    sub.rename(keep)  # what -spool is for: the input is in the schedd's spool now
    ad = pool.wait_for(f"{cluster}.0", lambda a: a.get("JobStatus") == 4, timeout=120, what="completed")
    # a completed spooled job stays in the queue (LeaveJobInQueue) until its output is fetched
    assert ad["SUBMIT_Iwd"] == str(sub) and ad["Iwd"].startswith(str(pool.home / "spool"))
    assert ad["ExitCode"] == 0, (Path(ad["Iwd"]) / "err.txt").read_text()
    assert isinstance(ad["StageInStart"], int) and ad["StageInFinish"] >= ad["StageInStart"]
    assert ad["LastHoldReasonCode"] == 16 and ad["ReleaseReason"] == "Data files spooled"
    assert stat.S_IMODE(os.stat(ad["Iwd"]).st_mode) == 0o700  # the job's input is its owner's alone
    assert not sub.exists()
    keep.rename(sub)  # the submit directory is back: condor_transfer_data writes into it
    (sub / "out.txt").unlink(missing_ok=True)
    got = pool.roost("transfer_data", cluster, check=True)
    assert got.stdout.startswith("Fetching data files...")
    assert (sub / "out.txt").read_text() == "from the input file from a directory\n"
    assert (sub / "made.txt").read_text() == "made by the job\n"
    assert not (sub / "_spool2").exists()  # the input stays out of it
    # fetched: it left the queue, its spool directory with it
    assert pool.roost("q", cluster, "-af", "ClusterId", check=True).stdout.strip() == ""
    hist = json.loads(pool.roost("history", cluster, "-json", check=True).stdout)[0]
    assert hist["StageOutFinish"] >= hist["StageOutStart"] >= hist["StageInFinish"]
    wait_until(lambda: not os.path.exists(ad["Iwd"]), 10, "the spool directory removed")


def test_submit_interactive_opens_a_shell_in_the_job(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "i.sub").write_text("request_memory = 64\nqueue 5\n")  # its queue count is ignored
    run = subprocess.run([*ROOST, "submit", "-interactive", "i.sub"], input="echo in-job $_CONDOR_SCRATCH_DIR\n"
                         "test -f .job.ad && echo has-job-ad\nexit 3\n", env=pool.env, cwd=jobdir,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == ["Submitting job(s).", lines[1]] and lines[1].startswith("1 job(s) submitted to cluster ")
    assert any(ln.startswith("in-job /") for ln in lines) and "has-job-ad" in lines
    cluster = lines[1].split()[-1].rstrip(".")
    ad = json.loads(pool.roost("history", cluster, "-json", check=True).stdout)[0]
    assert ad["InteractiveJob"] is True and ad["JobStatus"] == 3 and ad["RequestMemory"] == 64


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_submit_interactive_removes_its_job_when_its_terminal_closes(
        pool: PoolHandle, jobdir: Path, signum: int) -> None:
    """SIGHUP (the terminal closed) or SIGTERM: the placeholder job leaves the queue
    instead of holding its slot for a day."""
    proc = subprocess.Popen([*ROOST, "submit", "-interactive"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=pool.env, cwd=jobdir, text=True)
    cluster = ""
    try:
        assert proc.stdout is not None
        line = ""
        while "submitted to cluster" not in line:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
        cluster = line.split()[-1].rstrip(".")
        wait_until(lambda: _running(pool, cluster), 60, "the interactive job to run")
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 128 + signum
        wait_until(lambda: not pool.roost("q", cluster, "-af", "JobStatus", check=True).stdout.strip(),
                   60, "the interactive job to leave the queue")
        ad = json.loads(pool.roost("history", cluster, "-json", check=True).stdout)[0]
        assert ad["JobStatus"] == 3 and ad["InteractiveJob"] is True
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if cluster:
            pool.roost("rm", cluster)


def test_submit_interactive_on_a_terminal_gets_a_terminal_in_the_job(pool: PoolHandle, jobdir: Path) -> None:
    """Driven through a pseudo-terminal, as a person at a terminal: the job's shell has
    a terminal of its own (ssh_to_job's pty), reads what is typed, and its exit ends it all."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: roost submit -interactive on the pty
        os.chdir(jobdir)
        os.execve(ROOST[0], [*ROOST, "submit", "-interactive"], pool.env)
    seen = bytearray()

    def read_until(marker: bytes, timeout: float, *others: bytes) -> bool:
        def found() -> bool:
            return any(m in seen for m in (marker, *others))
        deadline = time.monotonic() + timeout
        while not found() and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    data = os.read(fd, 4096)
                except OSError:  # the child has gone: EIO on the pty
                    break
                if not data:
                    break
                seen.extend(data)
        return found()

    try:
        assert read_until(b"submitted to cluster", 60), bytes(seen)
        # type once the job's shell prompts: until then the local terminal is not yet raw,
        # and making it raw discards what was typed (as with a real terminal)
        assert read_until(b"\n$ ", 90, b"\n# "), bytes(seen)  # sh's prompt (root's: #)
        os.write(fd, b"tty; echo marker-$((6*7)); exit 5\n")
        assert read_until(b"marker-42", 90), bytes(seen)
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 5
    text = bytes(seen).decode(errors="replace")
    assert "/dev/pts/" in text.split("marker-42")[0].split("exit 5")[-1]  # `tty` named a terminal
