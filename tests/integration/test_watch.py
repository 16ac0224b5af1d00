"""Watching a running job (issue 15): `roost tail` shows what a job wrote so far, as it
is on the execute machine, and `-f` follows it to the job's end; `roost ssh_to_job`
runs a shell or a command beside the job, as the job's user, in its sandbox, with its
environment, through the daemons' own connections. Jobs submitted by root run as
nobody, so their files live in ``jobdir``."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest
from poolkit import ROOST, PoolHandle, wait_until

from roost.api.schedd import Expr
from roost.config import Config
from roost.daemons.security import uid_domain
from roost.net.errors import RemoteError
from roost.net.signing_key import read_key_file
from roost.net.syncclient import SyncClient
from roost.net.token_store import TokenSettings
from roost.net.tokens import create_token

# Prints a numbered line every 0.2 s (stdout) and one on stderr, then waits a second
# before it exits (its last lines are there for a follower to see).
SLOW = """#!/bin/sh
ln -s /etc/shadow secret
i=0
while [ $i -lt $1 ]; do
  i=$((i+1))
  echo "line $i"
  echo "err $i" >&2
  sleep 0.2
done
sleep 1
"""


def _submit(pool: PoolHandle, d: Path, lines: int, extra: str = "") -> str:
    script = d / "slow.sh"
    script.write_text(SLOW)
    script.chmod(0o755)
    r = pool.submit(f"executable = slow.sh\narguments = {lines}\noutput = out.txt\nerror = err.txt\n"
                    f"log = job.log\n{extra}queue\n", d)
    return f"{r.cluster}.0"


def _running(pool: PoolHandle, jid: str, first_line: str = "line 2") -> None:
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running")
    wait_until(lambda: first_line in pool.roost("tail", jid).stdout, 30, f"{first_line!r} in the job's stdout")


def test_tail_shows_the_latest_lines_and_follows_to_the_end(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 25)
    _running(pool, jid)
    now = pool.roost("tail", jid, check=True).stdout.splitlines()
    assert now and now == [f"line {i}" for i in range(1, len(now) + 1)], now  # what the job wrote so far
    short = pool.roost("tail", "-maxbytes", "7", jid, check=True).stdout
    assert len(short) <= 7 and short.endswith("\n")
    err = pool.roost("tail", "-stderr", jid, check=True).stdout
    assert err.startswith("err 1\n") and "line" not in err
    s = pool.schedd()
    try:
        got = s.tail(jid, maxbytes=4096)
        assert got["data"].startswith(b"line 1\n") and got["end"] == got["offset"] + len(got["data"])
    finally:
        s.close()

    follower = subprocess.Popen([*ROOST, "tail", "-f", jid], env=pool.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        out, errs = follower.communicate(timeout=90)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, errs
    lines = out.splitlines()
    # -f printed each line once, in order, up to the job's last one
    assert lines == [f"line {i}" for i in range(int(lines[0].split()[1]), 26)], out
    pool.wait([jid], timeout=60)
    assert pool.job(jid)["JobStatus"] == 4
    assert (jobdir / "out.txt").read_text().splitlines()[-1] == "line 25"


def test_tail_refuses_a_link_out_of_the_sandbox(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 200)
    try:
        _running(pool, jid)
        shadow = Path("/etc/shadow").read_text() if Path("/etc/shadow").exists() else "root:"
        done = pool.roost("tail", "-no-stdout", jid, "secret")
        assert done.returncode == 1 and "secret is a symbolic link: not followed" in done.stderr, done
        assert done.stdout == "" and shadow.splitlines()[0] not in done.stdout
        for name in ("../secret", "/etc/shadow", ".."):
            done = pool.roost("tail", "-no-stdout", jid, name)
            assert done.returncode == 1 and "not a plain name" in done.stderr, done
        done = pool.roost("tail", "-no-stdout", jid, "job.sub")  # not in the sandbox: never sent
        assert done.returncode == 1 and "no such file" in done.stderr
    finally:
        pool.roost("rm", jid)


def test_ssh_to_job_runs_commands_as_the_job_user_in_its_sandbox(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 300, 'environment = "WATCH_ME=over-here"\n')
    try:
        _running(pool, jid)
        done = pool.roost("ssh_to_job", jid, "id", "-un", check=True)
        assert done.stdout == "nobody\n"
        pwd = pool.roost("ssh_to_job", jid, "pwd", check=True).stdout.strip()
        assert pwd.startswith(str(pool.home / "execute" / "dir_")) and (Path(pwd) / "slow.sh").exists()
        env = pool.roost("ssh_to_job", jid, 'echo "$WATCH_ME $_CONDOR_SCRATCH_DIR $_CONDOR_JOB_PIDS"', check=True)
        watch, scratch, pids = env.stdout.split()
        assert (watch, scratch) == ("over-here", pwd) and Path(f"/proc/{pids}").exists()
        cgroups = pool.roost("ssh_to_job", jid, "grep ^0:: /proc/$$/cgroup /proc/$_CONDOR_JOB_PIDS/cgroup", check=True)
        mine, job = (ln.split(":", 1)[1] for ln in cgroups.stdout.splitlines())
        assert mine == job  # the session is in the job's cgroup (v2), where it has one
        done = subprocess.run([*ROOST, "ssh_to_job", jid, "cat; echo oops >&2; exit 7"], env=pool.env,
                              input="from stdin\n", capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (7, "from stdin\n", "oops\n")

        s = pool.schedd()
        try:
            got = s.run_in_job(jid, ["printf", "%s\\n", "it's me"])  # an argv, quoted for the shell
            assert (got.returncode, got.stdout, got.stderr) == (0, b"it's me\n", b"")
            got = s.run_in_job(jid, "echo bye; kill -9 $$")
            assert (got.stdout, got.exit_signal, got.returncode) == (b"bye\n", 9, 137)
        finally:
            s.close()
    finally:
        pool.roost("rm", jid)



def test_run_in_job_gets_the_status_of_a_command_that_ended_before_its_input_was_sent(
        pool: PoolHandle, jobdir: Path) -> None:
    """More input than the sockets hold, to a command that reads none: it ends, and its
    session closes, while the input is still going; its output and status still come
    (the sending broke with EPIPE and run_in_job raised, as a quick printf did on a
    loaded machine, its stdin's end sent after the session was gone)."""
    jid = _submit(pool, jobdir, 300)
    try:
        _running(pool, jid)
        s = pool.schedd()
        try:
            got = s.run_in_job(jid, "echo early; exit 3", stdin=b"x" * (16 << 20), timeout=60)
            assert (got.returncode, got.stdout) == (3, b"early\n")
        finally:
            s.close()
    finally:
        pool.roost("rm", jid)

def test_an_interactive_shell_has_a_terminal(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 300)
    try:
        _running(pool, jid)
        master, slave = os.openpty()
        env = dict(pool.env, TERM="vt220")
        tool = subprocess.Popen([*ROOST, "ssh_to_job", jid], env=env, stdin=slave, stdout=slave, stderr=slave,
                                start_new_session=True)
        os.close(slave)
        # typed once the tool has put its terminal in raw mode (which drops what came before)
        wait_until(lambda: not termios.tcgetattr(master)[3] & termios.ICANON, 30, "the local terminal in raw mode")
        os.write(master, b"tty; echo TERM=$TERM; id -un; exit 5\n")
        out = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and select.select([master], [], [], 1)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the tool closed the terminal (it ended)
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        assert tool.wait(timeout=30) == 5, out
        text = out.decode(errors="replace")
        assert "/dev/pts/" in text and "TERM=vt220" in text and "nobody" in text, text
        assert "not a tty" not in text
    finally:
        pool.roost("rm", jid)


def _pids_of(marker: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker.encode() in cmd:
                out.append(int(entry))
    return out


def test_a_session_ends_with_its_tool_and_with_the_job(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 300)
    _running(pool, jid)
    tool = subprocess.Popen([*ROOST, "ssh_to_job", jid, "sleep 3131"], env=pool.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_until(lambda: _pids_of("3131"), 30, "the session's sleep")
    os.kill(tool.pid, signal.SIGKILL)  # the tool goes away: its session is killed
    tool.wait()
    wait_until(lambda: not _pids_of("3131"), 30, "the session killed with its tool")

    tool = subprocess.Popen([*ROOST, "ssh_to_job", jid, "sleep 3132"], env=pool.env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: _pids_of("3132"), 30, "the session's sleep")
        pool.roost("rm", jid, check=True)  # the job ends: so does the session
        _out, err = tool.communicate(timeout=60)
    finally:
        if tool.poll() is None:
            tool.kill()
    assert tool.returncode != 0, err
    wait_until(lambda: not _pids_of("3132"), 30, "the session killed with its job")


def _token_client(pool: PoolHandle, user: str) -> SyncClient:
    """A tool of ``user`` of this pool's domain, over TCP with a token of its own."""
    cfg = Config.load(str(pool.home / "roost_config"), env={"ROOST_HOME": str(pool.home)})
    settings = TokenSettings.from_config(cfg)
    token = create_token(read_key_file(settings.pool_key_file), "POOL", settings.trust_domain,
                         f"{user}@{uid_domain(cfg)}", now=time.time())
    address = (pool.home / "run" / "schedd.address").read_text().strip()
    return SyncClient(address, token=token)


def test_only_the_owner_of_a_running_job_gets_in(pool: PoolHandle, jobdir: Path) -> None:
    idle = pool.submit("executable = /bin/sleep\narguments = 60\nrequirements = false\nqueue\n", jobdir)
    iid = f"{idle.cluster}.0"
    for cmd, status in (("tail", 1), ("ssh_to_job", 255)):
        done = pool.roost(cmd, iid, *(["true"] if cmd == "ssh_to_job" else []))
        assert done.returncode == status and f"job {iid} is not running (Idle)" in done.stderr, done
    pool.roost("rm", iid)

    jid = _submit(pool, jobdir, 300)
    try:
        _running(pool, jid)
        with _token_client(pool, "mallory") as c:
            for cmd, args in (("TAIL_JOB", {}), ("SSH_TO_JOB", {"command": "id"})):
                with pytest.raises(RemoteError) as e:
                    c.call(cmd, job=jid, **args)
                assert e.value.code == "DENIED" and "user mallory may not look into job" in e.value.message
    finally:
        pool.roost("rm", jid)


def test_enable_ssh_to_job_false_refuses_sessions(pool: PoolHandle, jobdir: Path) -> None:
    config = pool.home / "roost_config"
    original = config.read_text()
    jid = _submit(pool, jobdir, 300)
    try:
        _running(pool, jid)
        for knob, where in (("STARTD.ENABLE_SSH_TO_JOB", "execute machine"), ("ENABLE_SSH_TO_JOB", "submit machine")):
            config.write_text(original + f"{knob} = False\n")
            pool.roost("reconfig", check=True)
            done = pool.roost("ssh_to_job", jid, "true")
            assert done.returncode == 255 and f"disabled on this {where}" in done.stderr, done
        assert "line" in pool.roost("tail", jid, check=True).stdout  # tail is not ssh
    finally:
        config.write_text(original)
        pool.roost("reconfig")
        pool.roost("rm", jid)


def test_auto_retry_waits_for_the_job_to_start(pool: PoolHandle, jobdir: Path) -> None:
    jid = _submit(pool, jobdir, 5, "requirements = false\n")
    tool = subprocess.Popen([*ROOST, "tail", "-auto-retry", "-f", jid], env=pool.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # time is the point: a tool that did not wait would have ended by now
        assert tool.poll() is None  # Idle: it waits
        s = pool.schedd()
        try:
            s.edit(jid, {"Requirements": Expr("true")})
        finally:
            s.close()
        out, err = tool.communicate(timeout=60)
        assert tool.returncode == 0 and out.endswith("line 5\n"), (out, err)
    finally:
        if tool.poll() is None:
            tool.kill()
        pool.roost("rm", jid)
