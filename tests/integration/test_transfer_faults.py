"""Output the job owes and cannot give back is the job's fault: HTCondor's hold (code 12),
with the reason, and the slot free for the next job at once (not after the lease)."""

from __future__ import annotations

import time
from pathlib import Path

from poolkit import PoolHandle

TRANSFER = ("should_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n"
            "transfer_executable = false\nlog = t.log\n")


def _held(pool: PoolHandle, jid: str, timeout: float = 30) -> dict:
    return pool.wait_for(jid, lambda ad: ad.get("JobStatus") == 5, timeout=timeout, what="held")


def test_a_named_output_the_job_did_not_create_holds_it(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/true\n" + TRANSFER + "transfer_output_files = result.txt\nqueue\n", tmp_path)
    ad = _held(pool, r.job_ids()[0])
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (12, 2), ad
    assert "result.txt: the job did not create it" in ad["HoldReason"], ad["HoldReason"]
    assert "Job terminated" not in (tmp_path / "t.log").read_text()


def test_an_output_outside_the_sandbox_holds_the_job_and_frees_the_slot(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/sh\narguments = \"-c 'echo x > ok.txt'\"\n" + TRANSFER
                    + "transfer_output_files = ok.txt, ../../escape.txt\nqueue\n", tmp_path)
    ad = _held(pool, r.job_ids()[0])
    assert ad["HoldReasonCode"] == 12 and "outside the job's sandbox" in ad["HoldReason"], ad
    assert (tmp_path / "ok.txt").read_text() == "x\n"  # what could come back did
    t0 = time.monotonic()
    nxt = pool.submit("executable = /bin/true\nlog = n.log\nqueue\n", tmp_path).job_ids()
    assert pool.wait(nxt, timeout=30)["done"] == 1
    assert time.monotonic() - t0 < 20


def test_bytes_moved_and_committed_time_are_accounted(pool: PoolHandle, tmp_path: Path) -> None:
    (tmp_path / "in.dat").write_bytes(b"x" * 5000)
    r = pool.submit("executable = /bin/sh\narguments = \"-c 'wc -c < in.dat > n.txt; sleep 1'\"\n" + TRANSFER
                    + "transfer_input_files = in.dat\nqueue\n", tmp_path)
    jid = r.job_ids()[0]
    assert pool.wait([jid], timeout=60)["done"] == 1
    ad = pool.job(jid)
    assert ad["BytesSent"] >= 5000 and ad["BytesRecvd"] >= 5, ad  # n.txt (and the std files) came back
    assert ad["CommittedTime"] >= 1 and ad["CumulativeSlotTime"] >= 1 and ad["RemoteWallClockTime"] >= 1, ad
    assert (tmp_path / "n.txt").read_text().strip() == "5000"


def test_remove_and_hold_send_the_jobs_own_kill_signals(pool: PoolHandle) -> None:
    """kill_sig, remove_kill_sig and hold_kill_sig (condor_submit's): the job sees the
    signal it asked for before the SIGKILL that follows JobMaxVacateTime."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="roost-sig-", dir="/tmp"))
    d.chmod(0o777)
    (d / "trap.sh").write_text(
        "#!/bin/sh\n"
        "trap 'echo USR1 >> $1; exit 0' USR1\n"
        "trap 'echo USR2 >> $1; exit 0' USR2\n"
        "trap 'echo TERM >> $1; exit 0' TERM\n"
        "echo started >> $1\n"
        "while true; do sleep 0.1; done\n")
    (d / "trap.sh").chmod(0o755)
    # an absolute path: a job of root's runs as nobody, in a sandbox its files are sent to
    sub = (f"executable = trap.sh\narguments = {d}/$(Process).sig\nlog = s.log\n"
           "remove_kill_sig = SIGUSR1\nhold_kill_sig = USR2\nqueue 2\n")
    r = pool.submit(sub, d)
    ids = r.job_ids()
    for jid in ids:
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=30, what="running")
    deadline = time.monotonic() + 10
    while not all((d / f"{p}.sig").exists() for p in (0, 1)):  # both traps are set
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert pool.roost("rm", ids[0]).returncode == 0
    assert pool.roost("hold", ids[1]).returncode == 0
    deadline = time.monotonic() + 20
    while not ((d / "0.sig").read_text().endswith("USR1\n") and (d / "1.sig").read_text().endswith("USR2\n")):
        assert time.monotonic() < deadline, ((d / "0.sig").read_text(), (d / "1.sig").read_text())
        time.sleep(0.05)
