"""Self-checkpointing jobs (issue 15, first part): a job that exits with its
checkpoint_exit_code has its checkpoint kept in the schedd's spool and runs again in
place; after an eviction it starts again from the latest checkpoint."""

from __future__ import annotations

import time
from pathlib import Path

from poolkit import PoolHandle, wait_until

from roost.daemons.startd import criu
from roost.eventlog import read_events

# Counts to 4. At 2 it checkpoints (exit 85: the starter sends ckpt.txt and runs it
# again); at 3, the first time (the marker is outside the sandbox), it waits to be
# evicted. Each start from a checkpoint says so on stdout.
JOB = """#!/bin/sh
i=0
if [ -f ckpt.txt ]; then i=$(cat ckpt.txt); echo "resumed at $i"; fi
while [ $i -lt 4 ]; do
  i=$((i+1))
  if [ $i -eq 2 ] && [ ! -f ckpt.txt ]; then sleep 1; echo 2 > ckpt.txt; exit 85; fi
  if [ $i -eq 3 ] && [ ! -f "$1" ]; then touch "$1"; sleep 120; fi
done
echo "done $i"
"""


def _start_counter(pool: PoolHandle, d: Path, program: str) -> tuple[int, str]:
    """Submit ``program`` (checkpoint code 85, checkpoint ckpt.txt) in ``d``, a directory
    its user (nobody, for root) can write; back once it waits at step 3 to be evicted."""
    script = d / "count.sh"
    script.write_text(program)
    script.chmod(0o755)
    marker = d / "evict-me"
    r = pool.submit(f"executable = count.sh\narguments = {marker}\ncheckpoint_exit_code = 85\n"
                    "transfer_checkpoint_files = ckpt.txt\noutput = out.txt\nlog = job.log\n"
                    "should_transfer_files = YES\nqueue\n", d)
    wait_until(marker.exists, 60, "the job waiting at step 3")
    return r.cluster, f"{r.cluster}.0"


def test_a_checkpointing_job_resumes_from_its_checkpoint_after_eviction(pool: PoolHandle, jobdir: Path) -> None:
    cluster, jid = _start_counter(pool, jobdir, JOB)
    ad = pool.job(jid)
    assert ad is not None and ad.get("NumCkpts") == 1 and ad.get("LastCheckpointTime")
    assert 1 <= ad["CommittedTime"] <= time.time() - ad["QDate"] + 1  # the second before it
    spool = pool.home / "spool" / "checkpoints" / str(cluster) / "0"
    assert (spool / "current" / "ckpt.txt").read_text() == "2\n"
    row = [ln.split() for ln in pool.roost("q", "-io", jid, check=True).stdout.splitlines()
           if ln.split()[:1] == [jid]]
    assert row and row[0][2] == "R" and row[0][6] == "1", row  # q -io: running, one checkpoint
    # evicted (held and released): it starts again on a fresh sandbox from the checkpoint
    pool.roost("hold", jid, check=True)
    pool.roost("release", jid, check=True)
    pool.wait([jid], timeout=90)
    assert (jobdir / "out.txt").read_text() == "resumed at 2\ndone 4\n"
    ad = pool.job(jid)
    assert ad is not None and ad["ExitCode"] == 0 and ad["NumJobStarts"] == 2
    kinds = [int(e.type) for e in read_events(str(jobdir / "job.log"))]
    assert kinds.count(3) == 1  # one checkpointed event
    wait_until(lambda: not spool.exists(), 10, "the checkpoint removed with the job")


# Counts slowly; on SIGTERM (the vacate signal) it writes where it is and exits with
# its checkpoint code, as a self-checkpointing program does. The marker comes once its
# trap is set and its wait begun: a vacate from then on finds it at step 3.
ON_VACATE = """#!/bin/sh
i=0
if [ -f ckpt.txt ]; then i=$(cat ckpt.txt); echo "resumed at $i"; fi
trap 'echo $i > ckpt.txt; exit 85' TERM
while [ $i -lt 6 ]; do
  i=$((i+1))
  if [ $i -eq 3 ] && [ ! -f "$1" ]; then sleep 120 & touch "$1"; wait $!; fi
done
echo "done $i"
"""


def test_a_checkpoint_written_on_the_vacate_signal_is_kept(pool: PoolHandle, jobdir: Path) -> None:
    _cluster, jid = _start_counter(pool, jobdir, ON_VACATE)
    pool.roost("hold", jid, check=True)
    wait_until(lambda: (pool.job(jid) or {}).get("NumCkpts") == 1, 30, "the checkpoint taken on the vacate signal")
    pool.roost("release", jid, check=True)
    pool.wait([jid], timeout=90)
    assert (jobdir / "out.txt").read_text() == "resumed at 3\ndone 6\n"


def test_criu_is_advertised_only_where_criu_check_passes(pool: PoolHandle) -> None:
    """Transparent checkpoints need a host where `criu check` passes: the startd says in
    its log what it found, and advertises HasCRIU only then (never a stand-in)."""
    ok, _why = criu.probe()
    wait_until(lambda: "CRIU: " in (pool.home / "log" / "StartLog").read_text(), 30, "the startd's CRIU line")
    c = pool.collector()
    try:
        ads = c.query_objs("Machine", projection=["Name", "HasCRIU"])
    finally:
        c.close()
    assert ads and all((a.get("HasCRIU") is True) == ok for a in ads), ads
