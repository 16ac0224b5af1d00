"""A self-checkpointing Python job through every fault of issue 15: vacated, drained,
its startd kill -9ed, its schedd kill -9ed mid-run; it still finishes with the right
answer, having resumed from its latest checkpoint each time it was started again, and
redoing at most one checkpoint interval of work per restart. Also: ON_EXIT_OR_EVICT
spools an evicted job's outputs, preserve_relative_paths keeps directories, and a
checkpoint that cannot be stored (a full disk) leaves the previous one."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, wait_until

PYTHON = "/usr/bin/python3"  # a job runs as nobody: the test's own interpreter may be unreadable
pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"{PYTHON} is needed for the jobs")

N, K = 24, 3  # steps, and a checkpoint every K steps

# The sum of squares below N, one step at a time; every K steps it writes its state and
# exits with 85 (its checkpoint code). Each step done, by any run, is logged outside the
# sandbox ($1), so the test sees how much work was redone.
JOB = f"""#!{PYTHON}
import json, os, sys, time
state = {{"i": 0, "total": 0}}
if os.path.exists("state.json"):
    with open("state.json") as f:
        state = json.load(f)
    print("resumed at", state["i"], flush=True)
steps = open(sys.argv[1], "a")
while state["i"] < {N}:
    time.sleep(float(sys.argv[2]))
    i = state["i"]
    state["total"] += i * i
    state["i"] = i + 1
    print(i, file=steps, flush=True)
    if state["i"] % {K} == 0 and state["i"] < {N}:
        with open("state.tmp", "w") as f:
            json.dump(state, f)
        os.rename("state.tmp", "state.json")
        sys.exit(85)
print("total", state["total"])
"""


def _submit(pool: PoolHandle, d: Path, step: float, extra: str = "") -> str:
    (d / "sum.py").write_text(JOB)
    (d / "sum.py").chmod(0o755)
    r = pool.submit(f"executable = sum.py\narguments = {d / 'steps'} {step}\ncheckpoint_exit_code = 85\n"
                    "transfer_checkpoint_files = state.json\noutput = out.txt\nlog = job.log\n"
                    f"should_transfer_files = YES\n{extra}queue\n", d)
    return f"{r.cluster}.0"


def _steps(d: Path) -> list[int]:
    p = d / "steps"
    return [int(x) for x in p.read_text().split()] if p.exists() else []


def _after(d: Path, n: int, timeout: float = 60) -> None:
    wait_until(lambda: len(set(_steps(d))) >= n, timeout, f"step {n} done")


def _launcher_ready(pool: PoolHandle) -> None:
    pool.wait_log(r"job launcher ready")  # jobs outlive their startd once it is built


def test_a_checkpointing_job_survives_vacate_drain_and_daemon_kills(long_lease_pool: PoolHandle, jobdir: Path) -> None:
    pool = long_lease_pool
    _launcher_ready(pool)
    jid = _submit(pool, jobdir, 0.25)
    _after(jobdir, 5)
    pool.roost("vacate", check=True)  # the owner's vacate: back to Idle, then again
    _after(jobdir, 10)
    pool.roost("drain", "-quick", check=True)  # drained: vacated, and nowhere to run ...
    wait_until(lambda: (pool.job(jid) or {}).get("JobStatus") == 1, 30, "the drained job idle")
    pool.roost("drain", "-cancel", check=True)  # ... until the machine is back
    _after(jobdir, 14)
    old = pool.daemon_pid("startd")
    os.kill(old, signal.SIGKILL)  # the job carries on under its keeper; a new startd adopts it
    pool.wait_daemon_back("startd", old)
    _after(jobdir, 18)
    old = pool.daemon_pid("schedd")
    os.kill(old, signal.SIGKILL)  # the job carries on; its next checkpoint waits for the schedd
    pool.wait_daemon_back("schedd", old)
    pool.wait([jid], timeout=120)
    ad = pool.job(jid)
    assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0, ad
    out = (jobdir / "out.txt").read_text()
    assert out.endswith(f"total {sum(i * i for i in range(N))}\n"), out
    # started three times (first, after vacate, after drain); the kills did not restart it
    assert ad["NumJobStarts"] == 3, ad
    assert ad["NumCkpts"] == (N - 1) // K, ad  # every checkpoint kept, each once
    done = Counter(_steps(jobdir))
    assert set(done) == set(range(N))
    redone = sum(done.values()) - N
    assert redone <= (K - 1) * (ad["NumJobStarts"] - 1), done  # at most an interval per restart


ON_EVICT = f"""#!{PYTHON}
import os, sys, time
os.makedirs("res", exist_ok=True)
n = len(os.listdir("res"))
with open(os.path.join("res", f"part{{n}}"), "w") as f:
    f.write(str(n))
if n == 0:
    open(sys.argv[1], "w").close()
    time.sleep(120)
print("parts", sorted(os.listdir("res")))
"""


def test_on_exit_or_evict_spools_the_outputs_of_an_evicted_job(pool: PoolHandle, jobdir: Path) -> None:
    """when_to_transfer_output = ON_EXIT_OR_EVICT: what the evicted run wrote comes back
    to the next run; with preserve_relative_paths the input and outputs keep their
    directories."""
    (jobdir / "job.py").write_text(ON_EVICT)
    (jobdir / "job.py").chmod(0o755)
    (jobdir / "data" / "sub").mkdir(parents=True)
    (jobdir / "data" / "sub" / "in.txt").write_text("x\n")
    marker = jobdir / "evict-me"
    r = pool.submit(f"executable = job.py\narguments = {marker}\noutput = out.txt\nlog = job.log\n"
                    "should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT_OR_EVICT\n"
                    "transfer_input_files = data/sub/in.txt\npreserve_relative_paths = true\n"
                    "transfer_output_files = res, data/sub/in.txt\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    wait_until(marker.exists, 60, "the first run waiting")
    pool.roost("hold", jid, check=True)
    pool.roost("release", jid, check=True)
    pool.wait([jid], timeout=90)
    assert (jobdir / "out.txt").read_text() == "parts ['part0', 'part1']\n"
    assert (jobdir / "res" / "part1").read_text() == "1"
    assert (jobdir / "data" / "sub" / "in.txt").read_text() == "x\n"  # back where it came from
    assert not (jobdir / "in.txt").exists()


@contextlib.contextmanager
def _small_disk(path: Path, size: str) -> Iterator[None]:
    path.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {got.stderr.strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


BIG_SECOND = f"""#!{PYTHON}
import os, sys, time
n = int(open("ckpt").read()) if os.path.exists("ckpt") else 0
print("from", n, flush=True)
if n == 0:
    open("ckpt", "w").write("1")
    sys.exit(85)
if n == 1 and not os.path.exists(sys.argv[1]):
    open(sys.argv[1], "w").close()
    with open("ckpt", "w") as f:
        f.write("2" + " " * (2 << 20))  # does not fit where the schedd keeps checkpoints
    sys.exit(85)
open(sys.argv[2] + str(n), "w").close()
time.sleep(120)
"""


def test_a_checkpoint_that_does_not_fit_leaves_the_previous_one(fresh_pool: PoolHandle, jobdir: Path) -> None:
    pool = fresh_pool
    spool = pool.home / "spool" / "checkpoints"
    with _small_disk(spool, "1m"):
        (jobdir / "job.py").write_text(BIG_SECOND)
        (jobdir / "job.py").chmod(0o755)
        tried, waiting = jobdir / "tried-big", jobdir / "waiting"
        r = pool.submit(f"executable = job.py\narguments = {tried} {waiting}\ncheckpoint_exit_code = 85\n"
                        "transfer_checkpoint_files = ckpt\nlog = job.log\nshould_transfer_files = YES\nqueue\n",
                        jobdir)
        jid = f"{r.cluster}.0"
        # the second checkpoint was refused; the job went on from its own files, in place
        wait_until(Path(f"{waiting}2").exists, 60, "the run after the refused checkpoint")
        ad = pool.job(jid)
        assert ad is not None and ad["NumCkpts"] == 1, ad
        job_dir = spool / str(r.cluster) / "0"
        assert (job_dir / "current" / "ckpt").read_text() == "1"
        assert not [p for p in job_dir.iterdir() if p.name.startswith("tmp.")]  # the half-written one went
        pool.roost("hold", jid, check=True)  # evicted: it starts again from checkpoint 1
        pool.roost("release", jid, check=True)
        wait_until(Path(f"{waiting}1").exists, 60, "the run from the first checkpoint")
        pool.roost("rm", jid, check=True)
        wait_until(lambda: not (spool / str(r.cluster)).exists(), 30, "the checkpoint removed with the job")


def test_files_reached_through_a_link_the_job_planted_are_never_read(pool: PoolHandle, jobdir: Path) -> None:
    """The starter reads checkpoints and outputs as root: a job that links a directory of
    its sandbox to one only root may read gets none of it back, and is held saying why."""
    secret = Path(tempfile.mkdtemp(prefix="roost-secret-"))
    try:
        os.chmod(secret, 0o700)
        (secret / "shadow").write_text("root's secret\n")
        (jobdir / "job.sh").write_text(f"#!/bin/sh\nln -s {secret} etc\n"
                                       "if [ ! -f done1 ]; then touch done1; exit 85; fi\nexit 0\n")
        (jobdir / "job.sh").chmod(0o755)
        r = pool.submit("executable = job.sh\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = etc/shadow\n"
                        "transfer_output_files = etc/shadow\nlog = job.log\nshould_transfer_files = YES\n"
                        "queue\n", jobdir)
        jid = f"{r.cluster}.0"
        ad = pool.wait_for(jid, lambda j: j.get("JobStatus") in (4, 5), timeout=60, what="held or done")
        assert ad["JobStatus"] == 5 and "symbolic link" in ad.get("HoldReason", ""), ad
        leaked = [p for top in (jobdir, pool.home / "spool") for p in top.rglob("*")
                  if p.is_file() and not p.is_symlink() and b"root's secret" in p.read_bytes()]
        assert not leaked, leaked
    finally:
        shutil.rmtree(secret, ignore_errors=True)
