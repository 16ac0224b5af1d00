"""Checkpoint traffic scheduling (issue 15): the schedd admits checkpoint uploads one at
a time when MAX_CONCURRENT_CHECKPOINT_UPLOADS = 1, and a job that asks for periodic
checkpoint signals (+WantCheckpointSignal) gets its CheckpointSig, writes its state,
exits with its checkpoint code and resumes from it."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until

from roost.eventlog import read_events

# one upload at a time, each slowed to 20 MB/s, so that two arriving together must queue
CONFIG = """
MAX_CONCURRENT_CHECKPOINT_UPLOADS = 1
CHECKPOINT_UPLOAD_BANDWIDTH = 20
"""

UPLOAD_LINE = re.compile(r"job (\S+): checkpoint upload queued ([\d.]+) start ([\d.]+) end ([\d.]+) "
                         r"bytes (\d+) (ok|failed)")


@pytest.fixture(scope="module")
def pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-itc-", dir="/tmp"))
    p = start_pool(home, CONFIG)
    try:
        yield p
    finally:
        stop_pool(p)


def _uploads(pool: PoolHandle) -> list[tuple[str, float, float, float, int, str]]:
    text = (pool.home / "log" / "SchedLog").read_text(errors="replace")
    return [(m[1], float(m[2]), float(m[3]), float(m[4]), int(m[5]), m[6]) for m in UPLOAD_LINE.finditer(text)]


# Two checkpoints of 8 MB each; before each it says it is ready and waits for the test's
# go, so both jobs' uploads arrive together. At the end it removes its checkpoint files:
# they are not outputs (both jobs would send them to one name in jobdir).
TWICE = """#!/bin/sh
n=0
if [ -f count.txt ]; then n=$(cat count.txt); fi
if [ "$n" -ge 2 ]; then echo "done $n"; rm -f ckpt.dat count.txt; exit 0; fi
head -c 8000000 /dev/zero > ckpt.dat
echo $((n+1)) > count.txt
touch "$2/ready.$1.$n"
while [ ! -f "$2/go.$n" ]; do sleep 0.05; done
exit 85
"""


def test_with_one_upload_at_a_time_two_jobs_uploads_never_overlap(pool: PoolHandle, jobdir: Path) -> None:
    script = jobdir / "twice.sh"
    script.write_text(TWICE)
    script.chmod(0o755)
    r = pool.submit(f"executable = twice.sh\narguments = $(Process) {jobdir}\ncheckpoint_exit_code = 85\n"
                    "transfer_checkpoint_files = ckpt.dat, count.txt\noutput = out.$(Process).txt\n"
                    "log = job.log\nshould_transfer_files = YES\nqueue 2\n", jobdir)
    jids = [f"{r.cluster}.0", f"{r.cluster}.1"]
    for n in range(2):
        wait_until(lambda n=n: all((jobdir / f"ready.{p}.{n}").exists() for p in (0, 1)), 90,
                   f"both jobs ready to checkpoint ({n})")
        (jobdir / f"go.{n}").touch()
    pool.wait(jids, timeout=120)
    for p in (0, 1):
        assert (jobdir / f"out.{p}.txt").read_text() == "done 2\n"
        ad = pool.job(f"{r.cluster}.{p}")
        assert ad is not None and ad["ExitCode"] == 0 and ad["NumCkpts"] == 2
    ups = sorted(u for u in _uploads(pool) if u[0] in jids)
    ups = sorted(ups, key=lambda u: u[2])
    assert len(ups) == 4 and all(u[5] == "ok" and u[4] >= 8_000_000 for u in ups), ups
    for before, after in zip(ups, ups[1:], strict=False):
        assert after[2] >= before[3], f"uploads overlap: {before} and {after}"
    # and they did arrive together: of each pair, one waited for the other's end
    assert sum(1 for u in ups if u[2] - u[1] > 0.05) >= 2, ups


# Counts in tenths of a second; on SIGUSR2 (its checkpoint signal) it writes where it is
# and exits with its checkpoint code. Started again from that checkpoint it says so and ends.
ON_SIGNAL = """#!/bin/sh
i=0
if [ -f state.txt ]; then i=$(cat state.txt); echo "resumed at $i"; echo "done"; exit 0; fi
trap 'echo $i > state.txt; exit 85' USR2
while [ $i -lt 600 ]; do
  i=$((i+1))
  sleep 0.1 & wait $!
done
echo "never signalled"
"""


def test_a_job_gets_its_periodic_checkpoint_signal_and_resumes(pool: PoolHandle, jobdir: Path) -> None:
    script = jobdir / "sig.sh"
    script.write_text(ON_SIGNAL)
    script.chmod(0o755)
    r = pool.submit("executable = sig.sh\ncheckpoint_exit_code = 85\ntransfer_checkpoint_files = state.txt\n"
                    "+WantCheckpointSignal = true\n+CheckpointSig = \"SIGUSR2\"\n+CheckpointInterval = 2\n"
                    "output = out.txt\nlog = job.log\nshould_transfer_files = YES\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    pool.wait([jid], timeout=90)
    out = (jobdir / "out.txt").read_text()
    assert re.fullmatch(r"resumed at [1-9]\d*\ndone\n", out), out
    ad = pool.job(jid)
    assert ad is not None and ad["ExitCode"] == 0 and ad["NumCkpts"] == 1
    assert [int(e.type) for e in read_events(str(jobdir / "job.log"))].count(3) == 1
    start_log = (pool.home / "log" / "StartLog").read_text(errors="replace")
    # the schedd gave it a phase (the first job of its cluster: 0)
    assert f"job {jid}: checkpoint signal {12} sent (every 2 s, phase 0 s)" in start_log
