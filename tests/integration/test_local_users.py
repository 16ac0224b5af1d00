"""Every local user can use the pool they sit at (issue 25): two real accounts, made by
this test, each run roost's commands as themselves against a root-run pool, with
nothing set up for them but ROOST_HOME, as any account of an HTCondor submit host
runs condor_submit.

The pool runs from the test's own interpreter (the README's venv, under /root: the
users cannot execute it); the users run roost from a user-runnable install, as an
admin would install it (``user_roost``: a /usr/bin/python3 venv in a world-readable
directory with roost and its dependencies copied in). Nothing here changes the mode
of a socket or a pool directory: what the users reach, the daemons opened.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

SYSTEM_PYTHON = "/usr/bin/python3"
#: roost's run-time dependencies (pyproject.toml), as top-level names in site-packages
DEPENDENCIES = ("uvloop", "cryptography", "cffi", "_cffi_backend", "pycparser", "prometheus_client")
#: the commands a user runs (bin/), each also under its condor_* name
COMMANDS = ("roost", "condor_submit", "condor_q", "condor_rm", "condor_hold", "condor_release", "condor_qedit",
            "condor_wait", "condor_tail", "condor_ssh_to_job", "condor_submit_dag", "condor_userprio",
            "condor_status", "condor_history", "condor_suspend", "condor_continue", "condor_vacate_job",
            "condor_watch_q", "htcondor", "classad_eval")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making local accounts and a root-run pool needs root")


# -- a roost other users can run ----------------------------------------------------------

def _can_make_venv() -> str | None:
    """Why /usr/bin/python3 cannot run roost here (None: it can)."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"no {SYSTEM_PYTHON}"
    got = subprocess.run([SYSTEM_PYTHON, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if got.returncode != 0:
        return f"{SYSTEM_PYTHON} has no venv module: {got.stderr.strip()}"
    if got.stdout.strip() != here:
        return f"{SYSTEM_PYTHON} is Python {got.stdout.strip()}, the dependencies here are built for {here}"
    return None


def _site_item(name: str) -> Path:
    """Where this interpreter has ``name`` (a package directory or an extension module)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin, f"{name} is not installed"
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


@pytest.fixture(scope="session")
def user_roost() -> Iterator[Path]:
    """A roost install any local user can run: a venv of the system's Python in a
    world-readable directory, roost's source and its dependencies copied in (the
    checkout may sit where others cannot read, as this venv's interpreter does); its
    bin/ holds the commands. Yields that bin/."""
    why = _can_make_venv()
    if why:
        pytest.skip(f"no user-runnable roost: {why}")
    top = Path(tempfile.mkdtemp(prefix="roost-userinst-", dir="/tmp"))
    try:
        top.chmod(0o755)
        venv = top / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                                    "print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip())
        import roost

        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(Path(roost.__file__).parent, site / "roost", ignore=ignore)
        for name in DEPENDENCIES:
            item = _site_item(name)
            if item.is_dir():
                shutil.copytree(item, site / item.name, ignore=ignore)
            else:
                shutil.copy2(item, site / item.name)
        scripts = Path(roost.__file__).resolve().parents[2] / "bin"
        for name in COMMANDS:
            text = (scripts / name).read_text().split("\n", 1)[1]
            (venv / "bin" / name).write_text(f"#!{venv / 'bin' / 'python'}\n{text}")
        subprocess.run(["chmod", "-R", "a+rX,go-w", str(top)], check=True)
        for name in COMMANDS:
            (venv / "bin" / name).chmod(0o755)
        yield venv / "bin"
    finally:
        shutil.rmtree(top, ignore_errors=True)


# -- two local accounts ---------------------------------------------------------------------

@dataclass
class User:
    name: str
    uid: int
    gid: int
    home: Path
    bin: Path
    roost_home: Path

    def env(self) -> dict[str, str]:
        """Only what a login gives, and ROOST_HOME: no PYTHONPATH, no token, no config."""
        return {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(self.home), "USER": self.name,
                "ROOST_HOME": str(self.roost_home)}

    def run(self, *argv: str, cwd: Path | None = None, timeout: float = 60,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """``argv`` as this user (their uid, gid and groups only), in ``cwd`` (their home)."""
        done = subprocess.run(list(argv), cwd=cwd or self.home, env=self.env(), capture_output=True, text=True,
                              timeout=timeout, user=self.uid, group=self.gid, extra_groups=[])
        if check and done.returncode != 0:
            raise AssertionError(f"{self.name}: {' '.join(argv)} exited {done.returncode}:\n"
                                 f"{done.stdout}\n{done.stderr}")
        return done

    def roost(self, *args: str, cwd: Path | None = None, timeout: float = 60,
              check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.run("roost", *args, cwd=cwd, timeout=timeout, check=check)

    def write(self, name: str, text: str) -> Path:
        """A file of theirs in their home, written by them."""
        path = self.home / name
        done = subprocess.run(["/bin/sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1"', "sh", str(path)],
                              input=text, text=True, env=self.env(), user=self.uid, group=self.gid,
                              extra_groups=[], capture_output=True)
        assert done.returncode == 0, done.stderr
        return path


@contextlib.contextmanager
def _account(base: str, homes: Path, bin_dir: Path, roost_home: Path) -> Iterator[User]:
    name = f"{base}{os.getpid() % 100000}"
    home = homes / name
    subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                    "--user-group", "-K", "HOME_MODE=0700", name], check=True, capture_output=True)
    try:
        pw = pwd.getpwnam(name)
        home.chmod(0o700)  # their home is private, as a login's is (whatever useradd's default)
        yield User(name, pw.pw_uid, pw.pw_gid, home, bin_dir, roost_home)
    finally:
        subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def root_pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-lu-", dir="/tmp"))  # 0700, root's, as mkdtemp makes it
    p = start_pool(home)
    try:
        yield p
    finally:
        stop_pool(p)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def users(root_pool: PoolHandle, user_roost: Path) -> Iterator[tuple[User, User]]:
    if shutil.which("useradd") is None:
        pytest.skip("no useradd to make local accounts with")
    homes = Path(tempfile.mkdtemp(prefix="roost-homes-", dir="/tmp"))
    homes.chmod(0o755)
    try:
        with _account("roostalice", homes, user_roost, root_pool.home) as alice, \
                _account("roostbob", homes, user_roost, root_pool.home) as bob:
            yield alice, bob
    finally:
        shutil.rmtree(homes, ignore_errors=True)


def _cluster(out: str) -> str:
    for line in out.splitlines():
        if "submitted to cluster" in line:
            return line.rsplit(" ", 1)[1].rstrip(".")
    raise AssertionError(f"no cluster in: {out}")


def _status(pool: PoolHandle, jid: str) -> int | None:
    ad = pool.job(jid)
    return None if ad is None else int(ad["JobStatus"])


LONG_JOB = """executable = /bin/sh
arguments = "-c 'id -un; i=0; while [ $i -lt 600 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done'"
output = long.out
error = long.err
log = long.log
stream_output = true
queue
"""


# -- the tests ------------------------------------------------------------------------------

def test_a_user_submits_queries_waits_and_reads_history(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, bob = users
    # it stays a moment, so that condor_q finds it in the queue
    alice.write("job/job.sub", "executable = /bin/sh\narguments = \"-c 'id -un; sleep 2'\"\n"
                "output = out.txt\nerror = err.txt\nlog = job.log\nqueue\n")
    jobdir = alice.home / "job"
    got = alice.roost("submit", "job.sub", cwd=jobdir)
    assert got.returncode == 0, got.stderr
    cid = _cluster(got.stdout)
    q = alice.run("condor_q", "-af", "ClusterId", "Owner", check=True).stdout
    assert f"{cid} {alice.name}" in q.splitlines(), q
    done = alice.run("condor_wait", "-wait", "60", "job.log", cwd=jobdir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert alice.roost("wait", f"{cid}.0", timeout=60).returncode == 0
    out = jobdir / "out.txt"
    assert out.read_text().strip() == alice.name  # it ran as her
    assert out.stat().st_uid == alice.uid
    hist = alice.run("condor_history", "-af", "ClusterId", "Owner", "ExitCode", check=True).stdout
    assert f"{cid} {alice.name} 0" in hist.splitlines()
    # her files are hers: bob cannot read her output
    peek = bob.run("cat", str(out))
    assert peek.returncode != 0 and "Permission denied" in peek.stderr


def test_users_act_on_their_own_jobs_only(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, bob = users
    alice.write("acts/long.sub", LONG_JOB)
    cid = _cluster(alice.roost("submit", "long.sub", cwd=alice.home / "acts", check=True).stdout)
    jid = f"{cid}.0"
    # bob sees the job (condor_q -allusers) but may not touch it
    assert alice.name in bob.roost("q", "-allusers", "-af", "Owner", check=True).stdout
    for argv, words in ((("condor_rm", jid), "Permission denied to remove job"),
                        (("condor_hold", jid), "Permission denied to hold job"),
                        (("condor_qedit", jid, "Foo", "1"), "permission denied")):
        got = bob.run(*argv)
        assert got.returncode != 0 and words in got.stderr, (argv, got.stdout, got.stderr)
    assert "Foo" not in (root_pool.job(jid) or {})
    assert _status(root_pool, jid) in (1, 2)
    # alice may: hold, release, qedit, rm
    assert f"Job {jid} held" in alice.run("condor_hold", jid, check=True).stdout
    wait_until(lambda: _status(root_pool, jid) == 5, 30, "held")
    assert (root_pool.job(jid) or {}).get("HoldReason") == f"via condor_hold (by user {alice.name})"
    assert alice.run("condor_release", jid, check=True).returncode == 0
    wait_until(lambda: _status(root_pool, jid) in (1, 2), 30, "released")
    assert "Set attribute" in alice.run("condor_qedit", jid, "Foo", "1", check=True).stdout
    assert (root_pool.job(jid) or {}).get("Foo") == 1
    assert alice.roost("rm", jid, check=True).returncode == 0
    wait_until(lambda: _status(root_pool, jid) in (None, 3), 30, "removed")


def test_users_suspend_and_vacate_their_own_jobs_only(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, bob = users
    alice.write("pause/long.sub", LONG_JOB)
    cid = _cluster(alice.roost("submit", "long.sub", cwd=alice.home / "pause", check=True).stdout)
    jid = f"{cid}.0"
    try:
        wait_until(lambda: _status(root_pool, jid) == 2, 60, "running")
        for argv, words in ((("condor_suspend", jid), f"Permission denied to suspend job {jid}"),
                            (("condor_vacate_job", jid), f"Permission denied to vacate job {jid}"),
                            (("condor_vacate_job", "-fast", jid), f"Permission denied to fast-vacate job {jid}")):
            got = bob.run(*argv)
            assert (got.returncode, got.stderr) == (1, words + "\n"), (argv, got.stdout, got.stderr)
        assert _status(root_pool, jid) == 2
        assert alice.run("condor_suspend", jid, check=True).stdout == f"Job {jid} suspended\n"
        wait_until(lambda: _status(root_pool, jid) == 7, 30, "suspended")
        got = bob.run("condor_continue", jid)
        assert (got.returncode, got.stderr) == (1, f"Permission denied to continue job {jid}\n")
        assert _status(root_pool, jid) == 7
        assert alice.run("condor_continue", jid, check=True).stdout == f"Job {jid} continued\n"
        wait_until(lambda: _status(root_pool, jid) == 2, 30, "continued")
    finally:
        alice.roost("rm", jid)


def test_a_user_watches_her_jobs_and_asks_htcondor_about_them(root_pool: PoolHandle,
                                                              users: tuple[User, User]) -> None:
    alice, _ = users
    alice.write("watch/job.sub", "executable = /bin/sleep\narguments = 1\nlog = job.log\nqueue 2\n")
    got = alice.run("htcondor", "job", "submit", "job.sub", cwd=alice.home / "watch")
    assert got.returncode == 1 and got.stderr.endswith("Can only submit one job at a time\n")  # queue 2
    alice.write("watch/one.sub", "executable = /bin/sleep\narguments = 1\nlog = job.log\nqueue\n")
    got = alice.run("htcondor", "job", "submit", "one.sub", cwd=alice.home / "watch", check=True)
    cid = got.stderr.split()[1]
    # condor_watch_q with no arguments: her own jobs, from her own log
    watched = alice.run("condor_watch_q", "-exit", "all,done", timeout=120)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "Total: 1 jobs; 1 completed" in watched.stdout.split("\n...\n")[-2].splitlines()
    wait_until(lambda: _status(root_pool, f"{cid}.0") in (None, 4), 30, "completed")
    status = alice.run("htcondor", "job", "status", cid, check=True).stderr.splitlines()
    assert f"Job {cid} has completed." in status
    assert alice.run("classad_eval", "a = 2", "a * 3", check=True).stdout == "[ a = 2 ]\n6\n"


def test_a_user_tails_and_enters_her_running_job(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, bob = users
    alice.write("tail/long.sub", LONG_JOB)
    cid = _cluster(alice.roost("submit", "long.sub", cwd=alice.home / "tail", check=True).stdout)
    jid = f"{cid}.0"
    try:
        wait_until(lambda: _status(root_pool, jid) == 2, 60, "running")

        def ticks() -> bool:
            got = alice.run("condor_tail", jid)
            return got.returncode == 0 and "tick 3" in got.stdout

        wait_until(ticks, 30, "roost tail shows the job's output")
        inside = alice.run("condor_ssh_to_job", jid, "id", "-un", timeout=60)
        assert inside.returncode == 0 and inside.stdout.strip() == alice.name, inside.stdout + inside.stderr
        # bob may not look into it
        assert bob.roost("tail", jid).returncode != 0
        assert bob.roost("ssh_to_job", jid, "id", "-un", timeout=60).returncode != 0
    finally:
        alice.roost("rm", jid)


DAG_NODE = """executable = /bin/sh
arguments = "-c 'id -un'"
output = $(nodename).out
error = $(nodename).err
log = nodes.log
queue
"""


def test_a_user_submits_a_dag(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, _ = users
    alice.write("dag/node.sub", DAG_NODE)
    alice.write("dag/two.dag", 'JOB A node.sub\nJOB B node.sub\nVARS ALL_NODES nodename="$(JOB)"\nPARENT A CHILD B\n')
    d = alice.home / "dag"
    got = alice.run("condor_submit_dag", "two.dag", cwd=d)
    assert got.returncode == 0, got.stdout + got.stderr
    cid = _cluster(got.stdout)
    root_pool.wait([f"{cid}.0"], timeout=90)
    assert (root_pool.job(f"{cid}.0") or {}).get("ExitCode") == 0, (d / "two.dag.dagman.out").read_text()
    for node in ("A", "B"):
        out = d / f"{node}.out"
        assert out.exists(), (sorted(p.name for p in d.iterdir()), (d / "two.dag.dagman.out").read_text())
        assert out.read_text().strip() == alice.name and out.stat().st_uid == alice.uid
    assert (d / "two.dag.dagman.out").stat().st_uid == alice.uid


def test_a_user_sees_the_pool_and_the_priorities(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    alice, _ = users
    status = alice.run("condor_status", check=True).stdout
    assert "Total" in status and "slot" in alice.roost("status", "-af", "Name", check=True).stdout
    prio = alice.run("condor_userprio", "-all", check=True).stdout
    assert "User Name" in prio


CHIRP_JOB = r"""
import os, sys
sys.path.insert(0, os.getcwd())
from htchirp import HTChirp

with HTChirp() as c:
    with open("made.txt", "w") as f:
        f.write("made by the job\n")
    print("put", c.putfile("made.txt", "from_job.txt"), flush=True)
    print("got", c.getfile("on_submit.txt", "fetched.txt"), open("fetched.txt").read().strip(), flush=True)
    c.write(b"abc", "written.txt", "wc")
    print("read", c.read("written.txt", 10).decode(), flush=True)
"""


def test_a_users_job_moves_files_on_the_submit_host_through_chirp(root_pool: PoolHandle,
                                                                    users: tuple[User, User]) -> None:
    """The Chirp file helper acts as the job's owner, though the pool's interpreter
    (under /root) is one she cannot run."""
    htchirp = pytest.importorskip("htchirp")
    alice, _ = users
    d = alice.home / "chirp"
    alice.write("chirp/job.py", CHIRP_JOB)
    alice.write("chirp/on_submit.txt", "from the submit side\n")
    for f in Path(htchirp.__file__).parent.glob("*.py"):
        alice.write(f"chirp/htchirp/{f.name}", f.read_text())
    alice.write("chirp/job.sub", f"executable = {SYSTEM_PYTHON}\ntransfer_executable = false\narguments = job.py\n"
                "transfer_input_files = job.py, htchirp\nshould_transfer_files = YES\n"
                "environment = PYTHONDONTWRITEBYTECODE=1\n+WantIOProxy = true\n"
                "output = out.txt\nerror = err.txt\nlog = job.log\nqueue\n")
    cid = _cluster(alice.roost("submit", "job.sub", cwd=d, check=True).stdout)
    root_pool.wait([f"{cid}.0"], timeout=90)
    err = (d / "err.txt").read_text() if (d / "err.txt").exists() else ""
    assert (d / "out.txt").read_text().splitlines() == [f"put {len('made by the job') + 1}",
                                                        "got 21 from the submit side", "read abc"], err
    made = d / "from_job.txt"
    assert made.read_text() == "made by the job\n" and made.stat().st_uid == alice.uid
    assert (d / "written.txt").read_bytes() == b"abc" and (d / "written.txt").stat().st_uid == alice.uid



_HOLDER = """
import socket, sys, time
path, n = sys.argv[1], int(sys.argv[2])
held = []
for _ in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    held.append(s)
print("holding", flush=True)
time.sleep(float(sys.argv[3]))
alive = 0
for s in held:
    try:
        alive += s.recv(1, socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        alive += 1  # nothing to read, not closed
print(alive, flush=True)
"""


def test_one_user_cannot_hold_the_schedds_socket(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    """The socket is open to every account: bob's 300 idle connections are cut to
    MAX_CONNECTIONS_PER_LOCAL_USER (256), his idlest closed first, and alice's commands
    are answered meanwhile."""
    alice, bob = users
    sock = str(root_pool.home / "run" / "schedd.sock")
    holder = subprocess.Popen([SYSTEM_PYTHON, "-c", _HOLDER, sock, "300", "4"], env=bob.env(), cwd=bob.home,
                              stdout=subprocess.PIPE, text=True, user=bob.uid, group=bob.gid, extra_groups=[])
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        done = alice.roost("q", "-totals")
        assert done.returncode == 0, done.stderr
        out, _ = holder.communicate(timeout=60)
    finally:
        holder.kill()
    assert int(out.split()[-1]) == 256, out


def test_a_user_spools_from_her_private_home_and_fetches_the_output(root_pool: PoolHandle,
                                                                   users: tuple[User, User]) -> None:
    """condor_submit -spool as a user who cannot write the spool: her tool sends the
    input over the connection, the job runs as her from her spool directory (hers,
    0700), and condor_transfer_data brings its output back into her home; bob may do
    neither to her job."""
    alice, bob = users
    spool = root_pool.home / "spool"
    assert bob.run("/bin/sh", "-c", f"touch {spool}/x").returncode != 0  # nobody but root writes the spool
    alice.write("sp/run.sh", "#!/bin/sh\nid -un\ncat data.txt\necho made > result.txt\n")
    alice.write("sp/data.txt", "her data\n")
    alice.write("sp/s.sub", "executable = run.sh\ntransfer_input_files = data.txt\n"
                "should_transfer_files = YES\noutput = out.txt\nerror = err.txt\nqueue\n")
    work = alice.home / "sp"
    alice.run("chmod", "755", str(work / "run.sh"), check=True)
    cid = _cluster(alice.roost("submit", "-spool", "s.sub", cwd=work, check=True).stdout)
    jid = f"{cid}.0"
    alice.run("rm", "-f", str(work / "run.sh"), str(work / "data.txt"), check=True)  # in the spool now
    ad = root_pool.wait_for(jid, lambda a: a.get("JobStatus") == 4, 120, "completed")
    top = Path(ad["Iwd"])
    assert top.is_relative_to(spool) and ad["SUBMIT_Iwd"] == str(work)
    st = top.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (alice.uid, 0o700)
    assert (top / "data.txt").stat().st_uid == alice.uid
    # bob: not his job to fetch, and he cannot read her spool directory either
    got = bob.roost("transfer_data", jid)
    assert got.returncode != 0 and f"job {jid} is {alice.name}'s" in got.stderr, got.stdout + got.stderr
    assert bob.run("ls", str(top)).returncode != 0
    # nor may she point its way home elsewhere, and root does not write where her job says
    edit = alice.roost("qedit", jid, "SUBMIT_Iwd", '"/etc"')
    assert edit.returncode != 0 and "SUBMIT_Iwd is the schedd's to set" in edit.stderr + edit.stdout, edit
    got = root_pool.roost("transfer_data", jid)
    assert got.returncode != 0 and f"job {jid} is {alice.name}'s" in got.stderr, got.stdout + got.stderr
    assert not (work / "out.txt").exists()
    got = alice.roost("transfer_data", jid, check=True)
    assert (work / "out.txt").read_text() == f"{alice.name}\nher data\n"
    assert (work / "result.txt").read_text() == "made\n"
    assert (work / "out.txt").stat().st_uid == alice.uid and not (work / "data.txt").exists()
    assert alice.roost("q", jid, "-af", "ClusterId", check=True).stdout.strip() == ""


def test_condor_q_lists_a_users_own_jobs_with_her_totals(root_pool: PoolHandle, users: tuple[User, User]) -> None:
    """MyJobs, as HTCondor's schedd decides it: a user who is no queue super user gets
    her own jobs and a `Total for <her>` line; root (a super user) gets every job and none."""
    alice, bob = users
    alice.write("myq/long.sub", LONG_JOB)
    cid = _cluster(alice.roost("submit", "long.sub", cwd=alice.home / "myq", check=True).stdout)
    try:
        hers = alice.run("condor_q", "-nobatch", check=True).stdout
        assert f"{cid}.0" in hers and f"\nTotal for {alice.name}: " in hers, hers
        his = bob.roost("q", "-nobatch", check=True).stdout
        assert f"{cid}.0" not in his and f"\nTotal for {bob.name}: " in his, his
        everyone = root_pool.roost("q", "-nobatch", check=True).stdout
        assert f"{cid}.0" in everyone and "Total for root" not in everyone, everyone
    finally:
        alice.roost("rm", str(cid))
