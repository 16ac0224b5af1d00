"""Secrets at rest (issue 25): nothing another local user can read under ROOST_HOME
gives away a claim, a token, a key or a job's ad.

A pool is run with every kind of state it writes: a running job, a finished one
(history), a DAG, a checkpointing job and a Chirp job. Then the whole ROOST_HOME is
walked. A file "holds a secret" by what is in it, not by its name: any claim id the
startd made (``<birth>#<n>#<24 hex>``, and each one the collector's private ads
name), any token (a JWT) or the bytes of a signing key or private key, a Chirp
cookie, or a job's ad (each job carries a random marker attribute). Known-secret
paths (keys, tokens, the job queue database and its -wal/-shm) count even when what
is in them could not be recognised. Such a file must be closed to group and others,
or lie under a directory that only its owner may enter (a job's sandbox, owned by the
job's user). Every failure is listed, with its mode and what it holds.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until
from test_checkpoint import JOB as COUNTER
from test_checkpoint import _start_counter
from test_security import daemon_client

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root-run pool: other users exist to be kept out")

CLAIM_ID = re.compile(rb"\d+#\d+#[0-9a-f]{24}")
JWT = re.compile(rb"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")
PRIVATE_KEY = re.compile(rb"-----BEGIN [A-Z ]*PRIVATE KEY-----")
CHIRP_COOKIE = re.compile(rb"ChirpCookie|cookie\s*[=:]\s*\"?[0-9a-f]{32}", re.I)
#: paths that hold secrets whatever could be recognised in them, relative to ROOST_HOME:
#: keys, tokens, any SQLite database (the job queue and history) with its side files,
#: and the daemons' private state (each user's usage, the reservations)
KNOWN_SECRET = re.compile(r"(^|/)(passwords\.d|tokens\.d)/|\.key$|\.db(-wal|-shm|-journal)?$"
                          r"|(^|/)(accountant|reservations)\.json$")


@pytest.fixture
def busy_pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-sec-", dir="/tmp"))  # short: socket paths
    home.chmod(0o755)  # as an installed pool's home: others must reach run/ and the config
    p = start_pool(home)
    try:
        yield p
    finally:
        # its jobs removed first: a DAG's manager (a scheduler-universe job, in a session
        # of its own) outlives a schedd that merely stops
        p.roost("rm", "-all")
        wait_until(lambda: not _managers(home), 20, "the DAG manager ended with its removal")
        stop_pool(p)


def _managers(home: Path) -> list[int]:
    """DAG managers of this pool still running (submit_dag passes ROOST_HOME on: in the
    job's environment the schedd hands a manager)."""
    out = []
    mark = str(home).encode()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"roost.dagman" in cmd and mark in Path(f"/proc/{pid}/environ").read_bytes():
                    out.append(int(pid))
            except OSError:
                continue
    return out


def _others_may_reach(path: Path, home: Path) -> bool:
    """Whether a user other than ``path``'s owner (and root) can get to it: no directory
    on the way from ROOST_HOME is closed to group and others."""
    d = path.parent
    while True:
        st = d.stat()
        if not st.st_mode & 0o011:
            return False
        if d == home or d == d.parent:
            return True
        d = d.parent


def _what_it_holds(data: bytes, rel: str, needles: dict[bytes, str]) -> list[str]:
    found = []
    if CLAIM_ID.search(data):
        found.append("a claim id")
    if JWT.search(data):
        found.append("a token")
    if PRIVATE_KEY.search(data):
        found.append("a private key")
    if CHIRP_COOKIE.search(data):
        found.append("a Chirp cookie")
    for needle, what in needles.items():
        if needle in data and what not in found:
            found.append(what)
    if KNOWN_SECRET.search(rel):
        found.append("a known-secret path")
    return found


def exposed_secrets(home: Path, needles: dict[bytes, str]) -> list[str]:
    """Every file under ``home`` that holds a secret and that group or others may read
    or write; every group/other-writable directory above a secret."""
    bad: list[str] = []
    for root, _dirs, files in os.walk(home):
        for name in files:
            path = Path(root, name)
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue  # sockets, links: no content to leak
            rel = str(path.relative_to(home))
            try:
                data = path.read_bytes()
            except OSError:
                continue  # gone meanwhile
            holds = _what_it_holds(data, rel, needles)
            if not holds:
                continue
            mode = stat.S_IMODE(st.st_mode)
            if mode & 0o066 and _others_may_reach(path, home):
                bad.append(f"{rel} (mode {mode:04o}, uid {st.st_uid}): {', '.join(holds)}")
            d = path.parent
            while d != home.parent:
                dmode = stat.S_IMODE(d.stat().st_mode)
                if dmode & 0o022 and not dmode & 0o1000 and _others_may_reach(d, home):
                    bad.append(f"{d.relative_to(home.parent)}/ (mode {dmode:04o}) is open to writing above {rel}")
                d = d.parent
    return sorted(set(bad))


def _collector_claim_ids(pool: PoolHandle) -> set[str]:
    with daemon_client(pool, "collector") as c:
        ads = c.call("QUERY", type="Machine", private=True)["ads"]
    return {ad["ClaimId"] for ad in ads if isinstance(ad.get("ClaimId"), str)}


def _key_needles(home: Path) -> dict[bytes, str]:
    """The signing keys' bytes (a key is raw bytes: look for them, and their hex)."""
    needles: dict[bytes, str] = {}
    for key in (home / "passwords.d").glob("*") if (home / "passwords.d").is_dir() else ():
        raw = key.read_bytes()
        if len(raw) >= 32:
            needles[raw] = "signing-key bytes"
            needles[raw.hex().encode()] = "signing-key bytes"
    return needles


def _records_written(start_log: Path, after: int) -> int:
    """How many jobs the startd has started (and written the records of) past ``after``."""
    with open(start_log, "rb") as f:
        f.seek(after)
        return len(re.findall(rb": started, pid \d+, record written", f.read()))


def _workdir(jobdir: Path, name: str) -> Path:
    """A directory the jobs' user (nobody, for root's jobs) may write."""
    d = jobdir / name
    d.mkdir()
    d.chmod(0o777)
    return d


def test_nothing_secret_under_roost_home_is_open_to_other_users(busy_pool: PoolHandle, jobdir: Path) -> None:
    pool = busy_pool
    marker = secrets.token_hex(16)
    probe = f'+SecretProbe = "{marker}"\n'
    # a finished job: its ad goes to history
    done = pool.submit(f"executable = /bin/true\nlog = job.log\n{probe}queue\n", _workdir(jobdir, "done"))
    pool.wait([f"{done.cluster}.0"], timeout=60)
    mark = pool.log_mark()
    # a running job
    running = pool.submit(f"executable = /bin/sleep\narguments = 300\nlog = job.log\n{probe}queue\n",
                          _workdir(jobdir, "run"))
    # a DAG whose node runs on
    dag = _workdir(jobdir, "dag")
    (dag / "node.sub").write_text(f"executable = /bin/sleep\narguments = 300\nlog = node.log\n{probe}queue\n")
    (dag / "x.dag").write_text("JOB A node.sub\n")
    pool.roost("submit_dag", str(dag / "x.dag"), cwd=dag, check=True)
    # a checkpointing job, checkpointed once and running on
    ckpt_cluster, _ = _start_counter(pool, _workdir(jobdir, "ckpt"), COUNTER)
    # a Chirp job that sets attributes and then waits
    chirp = _workdir(jobdir, "chirp")
    chirp_ready = chirp / "chirped"
    (chirp / "job.py").write_text(
        "import os, sys, time\nsys.path.insert(0, os.getcwd())\nfrom htchirp import HTChirp\n"
        "with HTChirp() as c:\n    c.set_job_attr('JobProgress', '42')\n    c.ulog('hello')\n"
        f"open({str(chirp_ready)!r}, 'w').close()\ntime.sleep(300)\n")
    htchirp = pytest.importorskip("htchirp")
    shutil.copytree(Path(htchirp.__file__).parent, chirp / "htchirp", ignore=shutil.ignore_patterns("__pycache__"))
    pool.submit("executable = /usr/bin/python3\ntransfer_executable = false\narguments = job.py\n"
                "transfer_input_files = job.py, htchirp\nshould_transfer_files = YES\n+WantIOProxy = true\n"
                f"environment = PYTHONDONTWRITEBYTECODE=1\nlog = job.log\n{probe}queue\n", chirp)
    wait_until(chirp_ready.exists, 60, "the Chirp job chirping")
    pool.wait_for(f"{running.cluster}.0", lambda ad: ad.get("JobStatus") == 2, 60, "the sleeper running")
    wait_until(lambda: len(_collector_claim_ids(pool)) >= 4, 30, "four claims advertised")
    start_log = pool.log_path("startd")
    wait_until(lambda: _records_written(start_log, mark) >= 4, 30, "the four running jobs' records written")
    wait_until((pool.home / "spool" / "accountant.json").exists, 30, "the accountant written")
    assert (pool.home / "spool" / "checkpoints" / str(ckpt_cluster)).is_dir()

    claim_ids = _collector_claim_ids(pool)
    assert all(CLAIM_ID.fullmatch(c.encode()) for c in claim_ids), claim_ids  # the shape looked for
    needles = {c.encode(): "a claim id" for c in claim_ids}
    needles[marker.encode()] = "a job's ad"
    needles.update(_key_needles(pool.home))
    tokens = [p for p in (pool.home / "tokens.d").glob("*")] if (pool.home / "tokens.d").is_dir() else []
    assert tokens, "the master writes the pool owner's token"
    for t in tokens:
        for line in t.read_bytes().split():
            needles[line] = "a token"
    bad = exposed_secrets(pool.home, needles)
    assert not bad, "secrets other users can read or replace:\n" + "\n".join(bad)
    # and nothing was hidden that others need: the schedd's socket and the addresses
    run = pool.home / "run"
    assert stat.S_IMODE(run.stat().st_mode) & 0o005 == 0o005
    for p in run.glob("*.address"):
        assert stat.S_IMODE(p.stat().st_mode) & 0o004, p
