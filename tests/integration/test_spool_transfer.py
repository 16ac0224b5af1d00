"""SPOOL_FILES and TRANSFER_DATA (condor_submit -spool, condor_transfer_data) against
hostile or broken peers: names that leave the job's directory, another user's job,
more than the schedd takes, a stream cut halfway (both ways), malformed requests, and
links, hard links and FIFOs a local owner could plant in a spool directory. After
each, the schedd still answers and the job is as it was."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool, wait_until
from rawwire import connect, frame, read_frame

from roost.config import Config
from roost.core.spooling import SUBMIT_LINES, job_spool_dir
from roost.daemons.security import uid_domain
from roost.net.signing_key import read_key_file
from roost.net.token_store import TokenSettings
from roost.net.tokens import create_token

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root-run pool: another user's token, planted links")


@pytest.fixture(scope="module")
def spool_pool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-sp-", dir="/tmp"))
    p = start_pool(home, "SPOOL_MAX_INPUT_MB = 1\nSPOOL_MAX_INPUT_FILES = 5\nPERIODIC_EXPR_INTERVAL = 1\n")
    try:
        yield p
    finally:
        stop_pool(p)
        shutil.rmtree(home, ignore_errors=True)


def _unix(pool: PoolHandle) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(str(pool.home / "run" / "schedd.sock"))
    return s


def _ask(s: socket.socket, obj: dict) -> dict:
    s.sendall(frame(obj))
    got = read_frame(s)
    assert got is not None, f"the schedd closed the connection on {obj.get('cmd')}"
    return got


def _held_job(pool: PoolHandle, jobdir: Path, body: str = "executable = /bin/cat\narguments = in.txt\n"
              "transfer_executable = false\ntransfer_input_files = in.txt\noutput = out.txt\n") -> str:
    """A job waiting for its input (as -spool queues it), nothing sent yet."""
    (jobdir / "in.txt").write_text("submitted\n")
    (jobdir / "h.sub").write_text(body + "\n".join(SUBMIT_LINES) + "\nqueue\n")
    done = pool.roost("submit", "h.sub", cwd=jobdir, check=True)
    return done.stdout.splitlines()[-1].split()[-1].rstrip(".") + ".0"


def _spool_dir(pool: PoolHandle, jid: str) -> Path:
    c, p = (int(x) for x in jid.split("."))
    return Path(job_spool_dir(str(pool.home / "spool"), c, p))


def _still_waiting(pool: PoolHandle, jid: str) -> None:
    ad = pool.job(jid)
    assert ad is not None and ad["JobStatus"] == 5 and ad["HoldReasonCode"] == 16, ad
    assert "StageInFinish" not in ad and ad["Iwd"] != str(_spool_dir(pool, jid))


def _send_files(s: socket.socket, jid: str, files: dict[str, bytes]) -> dict:
    go = _ask(s, {"cmd": "SPOOL_FILES", "job": jid,
                  "files": [{"name": n, "size": len(b), "mode": 0o644} for n, b in files.items()]})
    assert go.get("go") is True, go
    s.sendall(b"".join(files.values()))
    got = read_frame(s)
    assert got is not None
    return got


def test_names_that_leave_the_job_directory_are_refused(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        for name in ("../escaped", "/tmp/escaped", "a/../../escaped", "a//b", "", ".", "x\x00y"):
            got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": name, "size": 1, "mode": 0o644}]})
            assert got["ok"] is False and got["code"] == "BAD_PATH", (name, got)
        got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "a", "size": 1}, {"name": "a", "size": 1}]})
        assert got["code"] == "BAD_PATH" and "twice" in got["error"]
        # a file and then a file "inside" it: refused when it is written, the rest read and dropped
        got = _send_files(s, jid, {"a": b"1", "a/b": b"2"})
        assert got["ok"] is False and got["code"] == "SPOOL_FAILED", got
    assert not (_spool_dir(spool_pool, jid).parent.parent / "escaped").exists()
    assert not list(_spool_dir(spool_pool, jid).parent.glob("*"))  # nothing left half made
    _still_waiting(spool_pool, jid)


def _token(pool: PoolHandle, user: str) -> str:
    cfg = Config.load(str(pool.home / "roost_config"), env={"ROOST_HOME": str(pool.home)})
    settings = TokenSettings.from_config(cfg)
    return create_token(read_key_file(settings.pool_key_file), "POOL", settings.trust_domain,
                        f"{user}@{uid_domain(cfg)}", now=time.time())


def test_another_users_job_is_refused_both_ways(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    address = (spool_pool.home / "run" / "schedd.address").read_text().strip()
    with connect(address, _token(spool_pool, "nobody")) as s:
        got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 3}]})
        assert got["ok"] is False and got["code"] == "DENIED" and "root's" in got["error"], got
        got = _ask(s, {"cmd": "TRANSFER_DATA", "job": jid})
        assert got["ok"] is False and got["code"] == "DENIED", got
    _still_waiting(spool_pool, jid)


def test_more_than_the_schedd_takes_is_refused_before_a_byte(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "big", "size": (1 << 20) + 1}]})
        assert got["code"] == "TOO_BIG" and "SPOOL_MAX_INPUT_MB" in got["error"], got
        got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": f"f{i}", "size": 0} for i in range(6)]})
        assert got["code"] == "TOO_BIG" and "SPOOL_MAX_INPUT_FILES" in got["error"], got
        # the same connection goes on: nothing was expected after the refusal
        assert _ask(s, {"cmd": "QUERY_JOBS", "ids": [jid]})["ok"] is True
    _still_waiting(spool_pool, jid)


def test_malformed_requests_are_answered_and_change_nothing(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        for files in ("x", [1], [{"name": "a", "size": -1}], [{"name": "a", "size": "1"}],
                      [{"name": "a", "size": 1, "mode": "rwx"}], [{"name": ["a"], "size": 1}]):
            got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": files})
            assert got["ok"] is False and got["code"] in ("BAD_REQUEST", "BAD_PATH"), (files, got)
        for job in ("x", "1.2.3", "99999.0"):
            got = _ask(s, {"cmd": "SPOOL_FILES", "job": job, "files": []})
            assert got["ok"] is False and got["code"] in ("BAD_REQUEST", "NOT_FOUND"), (job, got)
        got = _ask(s, {"cmd": "TRANSFER_DATA", "job": jid})
        assert got["code"] == "NOT_SPOOLED", got
    _still_waiting(spool_pool, jid)


def test_a_cut_input_stream_leaves_nothing_and_a_retry_runs_the_job(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        go = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 100000}]})
        assert go["go"] is True
        s.sendall(b"x" * 40000)  # and then the tool dies
    parent = _spool_dir(spool_pool, jid).parent
    wait_until(lambda: not list(parent.glob("*")), 15, "the half-received input removed")
    _still_waiting(spool_pool, jid)
    with _unix(spool_pool) as s:
        got = _send_files(s, jid, {"in.txt": b"whole at last\n"})
    assert got["ok"] is True and got["iwd"] == str(_spool_dir(spool_pool, jid)), got
    ad = spool_pool.wait_for(jid, lambda a: a["JobStatus"] == 4, 120, "completed")
    assert ad["ReleaseReason"] == "Data files spooled" and ad["SUBMIT_Iwd"] == str(jobdir)
    assert (_spool_dir(spool_pool, jid) / "out.txt").read_text() == "whole at last\n"
    with _unix(spool_pool) as s:  # a second SPOOL_FILES is no way to replace the input
        got = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 1}]})
        assert got["code"] == "NOT_SPOOLING", got


def test_fetch_sends_no_link_hard_link_or_fifo_and_a_cut_fetch_keeps_the_job(spool_pool: PoolHandle,
                                                                               jobdir: Path) -> None:
    (jobdir / "in.txt").write_text("input\n")
    (jobdir / "s.sub").write_text("executable = /bin/cat\narguments = in.txt\ntransfer_executable = false\n"
                                  "transfer_input_files = in.txt\noutput = out.txt\nqueue\n")
    done = spool_pool.roost("submit", "-spool", "s.sub", cwd=jobdir, check=True)
    jid = done.stdout.splitlines()[-2].split()[-1].rstrip(".") + ".0"  # the last: "Spooling data files ..."
    (jobdir / "in.txt").unlink()
    spool_pool.wait_for(jid, lambda a: a["JobStatus"] == 4, 120, "completed")
    top = _spool_dir(spool_pool, jid)
    # what a local owner could plant in their own spool directory for root to read
    os.symlink("/etc/shadow", top / "shadow")
    os.mkdir(top / "sub")
    os.symlink("/etc", top / "sub" / "etc")
    os.link(top / "out.txt", top / "hard.txt")
    os.mkfifo(top / "fifo")
    with _unix(spool_pool) as s:  # the tool gets the list and dies
        got = _ask(s, {"cmd": "TRANSFER_DATA", "job": jid})
        assert got["ok"] is True and sorted(f["name"] for f in got["files"]) == [], got  # out.txt has 2 links now
    os.unlink(top / "hard.txt")
    wait_until(lambda: "StageOutStart" in (spool_pool.job(jid) or {}), 10, "stage-out recorded")
    ad = spool_pool.job(jid)
    assert ad is not None and ad["JobStatus"] == 4 and "StageOutFinish" not in ad  # still there to fetch
    got = spool_pool.roost("transfer_data", jid, check=True)
    assert (jobdir / "out.txt").read_text() == "input\n"
    for planted in ("shadow", "sub", "fifo", "hard.txt", "in.txt"):
        assert not (jobdir / planted).exists(), planted
    assert spool_pool.roost("q", jid, "-af", "ClusterId", check=True).stdout.strip() == ""
    hist = json.loads(spool_pool.roost("history", jid, "-json", check=True).stdout)[0]
    assert hist["StageOutFinish"] >= hist["StageOutStart"]


def test_remote_submit_spools_over_tcp_and_transfer_data_fetches_by_name(tmp_path: Path) -> None:
    """condor_submit -remote NAME (-name and -spool): the schedd is reached through the
    collector over TCP, as from another host; nothing is copied into its spool but what
    comes over the connection; condor_transfer_data -name fetches the output."""
    home = Path(tempfile.mkdtemp(prefix="roost-sp2-", dir="/tmp"))
    pool = start_pool(home, "DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD SCHEDD2 STARTD\n"
                            "SCHEDD2.SCHEDD_NAME = second\n")
    try:
        c = pool.collector()
        try:
            ad2 = next(a for a in c.query_objs("Scheduler", projection=["Name", "MyAddress"])
                       if str(a["Name"]).startswith("second@"))
            name, address = str(ad2["Name"]), str(ad2["MyAddress"])
        finally:
            c.close()
        (tmp_path / "in.txt").write_text("over the wire\n")
        (tmp_path / "r.sub").write_text("executable = /bin/cat\narguments = in.txt\ntransfer_executable = false\n"
                                        "transfer_input_files = in.txt\noutput = out/r.out\nqueue 2\n")
        (tmp_path / "out").mkdir()
        got = pool.roost("submit", "-remote", name, "r.sub", cwd=tmp_path, check=True).stdout
        assert "2 job(s) submitted to cluster 1." in got, got
        (tmp_path / "in.txt").unlink()
        for p in (0, 1):
            ad = pool.roost("q", "-name", name, f"1.{p}", "-json", check=True).stdout
            iwd = json.loads(ad)[0]["Iwd"]
            assert iwd == job_spool_dir(str(home / "spool" / "schedd2"), 1, p), iwd
        wait_until(lambda: pool.roost("q", "-name", name, "1", "-af", "JobStatus", check=True).stdout.split()
                   == ["4", "4"], 120, "both completed")
        assert not (tmp_path / "out" / "r.out").exists()
        by_addr = pool.roost("transfer_data", "-addr", f"<{address}>", "1.0", check=True)  # as HTCondor writes one
        assert (tmp_path / "out" / "r.out").read_text() == "over the wire\n"
        assert pool.roost("q", "-name", name, "1", "-af", "ProcId", check=True).stdout.split() == ["1"], by_addr
        (tmp_path / "out" / "r.out").unlink()
        fetched = pool.roost("transfer_data", "-name", name, "1", check=True)
        assert fetched.stdout.startswith("Fetching data files..."), fetched.stdout
        assert (tmp_path / "out" / "r.out").read_text() == "over the wire\n"  # back at its submitted path
        assert pool.roost("q", "-name", name, "1", "-af", "ClusterId", check=True).stdout.strip() == ""
    finally:
        stop_pool(pool)
        shutil.rmtree(home, ignore_errors=True)


def test_a_completed_job_leaves_once_its_leave_in_queue_turns_false(spool_pool: PoolHandle, jobdir: Path) -> None:
    """LeaveJobInQueue is asked again while the job waits (-spool's holds it 10 days at
    most): here one that lets it go 5 s after it completed, output never fetched."""
    (jobdir / "l.sub").write_text("executable = /bin/true\nleave_in_queue = JobStatus == 4 && "
                                  "(time() - CompletionDate) < 5\nqueue\n")
    done = spool_pool.roost("submit", "l.sub", cwd=jobdir, check=True)
    cid = done.stdout.splitlines()[-1].split()[-1].rstrip(".")
    wait_until(lambda: spool_pool.roost("q", cid, "-af", "JobStatus", check=True).stdout.strip() == "4", 120,
               "completed and kept in the queue")
    wait_until(lambda: spool_pool.roost("q", cid, "-af", "JobStatus", check=True).stdout.strip() == "", 60,
               "gone once its LeaveJobInQueue is false")
    assert json.loads(spool_pool.roost("history", cid, "-json", check=True).stdout)[0]["JobStatus"] == 4


def test_a_job_removed_while_its_input_comes_keeps_no_directory(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        go = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 2000}]})
        assert go["go"] is True
        s.sendall(b"y" * 1000)
        spool_pool.roost("rm", jid, check=True)
        s.sendall(b"y" * 1000)
        got = read_frame(s)
    assert got is not None and got["code"] == "SPOOL_FAILED" and "removed" in got["error"], got
    assert not _spool_dir(spool_pool, jid).exists() and not list(_spool_dir(spool_pool, jid).parent.glob("*"))
    assert spool_pool.roost("q", jid, "-af", "ClusterId", check=True).stdout.strip() == ""


def test_the_schedd_serves_others_while_a_transfer_stalls(spool_pool: PoolHandle, jobdir: Path) -> None:
    jid = _held_job(spool_pool, jobdir)
    with _unix(spool_pool) as s:
        go = _ask(s, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 1 << 20}]})
        assert go["go"] is True
        s.sendall(b"z" * 300000)  # and then nothing for a while
        q = spool_pool.roost("q", jid, "-af", "JobStatus", "HoldReasonCode", check=True).stdout.split()
        assert q == ["5", "16"], q
        with _unix(spool_pool) as other:  # one transfer per job at a time
            got = _ask(other, {"cmd": "SPOOL_FILES", "job": jid, "files": [{"name": "in.txt", "size": 1}]})
            assert got["code"] == "BUSY", got
        s.sendall(b"z" * ((1 << 20) - 300000))
        got = read_frame(s)
    assert got is not None and got["ok"] is True, got
    spool_pool.wait_for(jid, lambda a: a["JobStatus"] == 4, 120, "completed")
