"""stream_output / stream_error: a running job's stdout and stderr appear on the
submit side while it runs; the finished job's files are whole, once."""

from __future__ import annotations

import time
from pathlib import Path

from poolkit import PoolHandle, wait_until

# Prints a line, then waits for the test to say go on ($1), then finishes.
JOB = """#!/bin/sh
echo "first line"
echo "first error" >&2
while [ ! -f "$1" ]; do sleep 0.1; done
echo "last line"
echo "last error" >&2
"""


def test_streamed_output_is_visible_while_the_job_runs(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "job.sh").write_text(JOB)
    (jobdir / "job.sh").chmod(0o755)
    (jobdir / "out.txt").write_text("an older run's output, much longer than this run's\n" * 10)
    go = jobdir / "go"
    r = pool.submit(f"executable = job.sh\narguments = {go}\noutput = out.txt\nerror = err.txt\n"
                    "stream_output = true\nstream_error = true\nshould_transfer_files = YES\n"
                    "log = job.log\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    out, err = jobdir / "out.txt", jobdir / "err.txt"
    wait_until(lambda: out.read_text() == "first line\n", 30, "stdout streamed while the job runs")
    wait_until(lambda: err.exists() and err.read_text() == "first error\n", 10, "stderr streamed")
    assert (pool.job(jid) or {}).get("JobStatus") == 2
    go.touch()
    pool.wait([jid], timeout=60)
    assert out.read_text() == "first line\nlast line\n"
    assert err.read_text() == "first error\nlast error\n"


def test_unstreamed_output_waits_for_the_end(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "job.sh").write_text(JOB)
    (jobdir / "job.sh").chmod(0o755)
    go = jobdir / "go"
    r = pool.submit(f"executable = job.sh\narguments = {go}\noutput = out.txt\nerror = err.txt\n"
                    "should_transfer_files = YES\nlog = job.log\nqueue\n", jobdir)
    jid = f"{r.cluster}.0"
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=30, what="running")
    wait_until(lambda: (jobdir / "job.log").read_text().count("Job executing") >= 1, 10, "started")
    time.sleep(1.5)  # time is the point: a streamed first line comes within a second (the test above)
    assert not (jobdir / "out.txt").exists()
    go.touch()
    pool.wait([jid], timeout=60)
    assert (jobdir / "out.txt").read_text() == "first line\nlast line\n"
