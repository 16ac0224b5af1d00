"""``roost submit``'s fast path: the schedd parses the submit text (SUBMIT_TEXT) with the
tool's working directory and environment, and refuses (SUBMIT_LOCALLY) where it does
not hold the user's rights, so the tool parses and submits itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from poolkit import PoolHandle

from roost.api.connection import pool_token
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient


def test_cli_submit_uses_the_tools_cwd_environment_and_options(pool: PoolHandle, tmp_path: Path) -> None:
    (tmp_path / "items.txt").write_text("alpha\nbeta\n")
    (tmp_path / "s.sub").write_text(
        "executable = /bin/echo\n"
        "arguments = $(word) $ENV(ROOST_TEST_WORD) $(extra)\n"
        "output = out.$(word)\n"
        "queue word from items.txt\n"
        "executable = /bin/true\n"
        "queue\n"
    )
    pool.env["ROOST_TEST_WORD"] = "from-the-tool"
    try:
        done = pool.roost("submit", "s.sub", "extra=cmdline", "-a", "+Tag = \"appended\"",
                          cwd=tmp_path, check=True)
    finally:
        del pool.env["ROOST_TEST_WORD"]
    lines = done.stdout.splitlines()
    assert lines[0] == "Submitting job(s)..."  # a dot per job, as condor_submit
    clusters = [ln.split()[-1].rstrip(".") for ln in lines[1:]]
    # every queue statement lands in one cluster, even with a new executable (as condor_submit)
    assert [ln.split()[0] for ln in lines[1:]] == ["3"]
    assert pool.roost("wait", "-wait", "60", *clusters, timeout=90).returncode == 0
    assert (tmp_path / "out.alpha").read_text() == "alpha from-the-tool cmdline\n"
    assert (tmp_path / "out.beta").read_text() == "beta from-the-tool cmdline\n"
    job = pool.job(f"{clusters[0]}.1")
    assert job is not None and job["Tag"] == "appended" and job["Iwd"] == str(tmp_path)
    assert job["ClusterId"] == int(clusters[0])
    third = pool.job(f"{clusters[0]}.2")
    assert third is not None and third["Cmd"] == "/bin/true"


def test_only_empty_queue_statements_say_so(pool: PoolHandle, tmp_path: Path) -> None:
    (tmp_path / "z.sub").write_text("executable = /bin/true\nqueue 0\nqueue x in ()\n")
    done = pool.roost("submit", "z.sub", cwd=tmp_path, check=True)
    assert done.stdout.splitlines() == ["Submitting job(s)"]  # no dot: no job
    assert 'has only empty "queue" commands -- no jobs queued' in done.stderr


def test_schedd_sets_user_and_global_job_id(pool: PoolHandle, tmp_path: Path) -> None:
    """User = owner@UID_DOMAIN and GlobalJobId = <schedd name>#<cluster>.<proc>#<queued at>,
    set by the schedd as HTCondor's does; a `queue ... from COMMAND |` is read by the tool."""
    (tmp_path / "c.sub").write_text("executable = /bin/true\nhold = true\nqueue from /usr/bin/seq 2 |\n")
    done = pool.roost("submit", "c.sub", cwd=tmp_path, check=True)
    cid = done.stdout.splitlines()[-1].split()[-1].rstrip(".")
    assert done.stdout.splitlines()[-1].split()[0] == "2"
    for proc in (0, 1):
        job = pool.job(f"{cid}.{proc}")
        assert job is not None
        owner = job["Owner"]
        assert isinstance(job["User"], str) and job["User"].startswith(f"{owner}@")
        name, jid, stamp = job["GlobalJobId"].split("#")
        assert name and jid == f"{cid}.{proc}" and abs(int(stamp) - job["QDate"]) <= 5
    pool.roost("rm", cid, check=True)


def test_an_included_command_is_run_by_the_tool(pool: PoolHandle, tmp_path: Path) -> None:
    """``include : COMMAND |`` (the manual's list-infiles.sh example): the schedd hands the
    description back (SUBMIT_LOCALLY) and ``roost submit`` runs the command in the submit
    directory and submits what it printed."""
    gen = tmp_path / "list-infiles.sh"
    gen.write_text('#!/bin/sh\necho "transfer_input_files = $(ls -m infiles/*.dat | tr -d \'\\n\')"\n'
                   'echo "+Made = \\"$1\\""\n')
    gen.chmod(0o755)
    (tmp_path / "infiles").mkdir()
    for name in ("A.dat", "B.dat"):
        (tmp_path / "infiles" / name).write_text(name)
    (tmp_path / "inc.sub").write_text("executable = /bin/true\nhold = true\ninclude : ./list-infiles.sh here |\n"
                                      "queue\n")
    done = pool.roost("submit", "inc.sub", cwd=tmp_path, check=True)
    cid = done.stdout.splitlines()[-1].split()[-1].rstrip(".")
    job = pool.job(f"{cid}.0")
    assert job is not None and job["Made"] == "here"
    assert job["TransferInput"] == "infiles/A.dat,infiles/B.dat"
    pool.roost("rm", cid, check=True)


def test_cli_submit_errors_name_the_file_and_line(pool: PoolHandle, tmp_path: Path) -> None:
    (tmp_path / "bad.sub").write_text("executable = /bin/true\nuniverse = bogus\nqueue\n")
    bad = pool.roost("submit", "bad.sub", cwd=tmp_path)
    assert bad.returncode == 1
    assert bad.stderr.startswith("ERROR: bad.sub:2:") and "bogus" in bad.stderr
    (tmp_path / "nofile.sub").write_text("executable = /bin/true\nqueue x from missing.txt\n")
    bad = pool.roost("submit", "nofile.sub", cwd=tmp_path)
    assert bad.returncode == 1 and "missing.txt" in bad.stderr


def test_submit_text_is_refused_to_a_peer_without_the_schedds_rights(pool: PoolHandle, tmp_path: Path) -> None:
    """Over TCP: an unauthenticated peer may not submit at all (PERMISSION_DENIED); an
    authenticated one, even the pool's owner, is told to parse and submit itself
    (SUBMIT_LOCALLY): a token proves who the peer is, not that the schedd shares its
    file rights, so the schedd reads no files for it. Nothing is queued either way."""
    tcp = (pool.home / "run" / "schedd.address").read_text().strip()
    text = "executable = /bin/true\nqueue\n"
    with SyncClient(tcp, timeout=10) as anon:
        with pytest.raises(RemoteError) as e:
            anon.call("SUBMIT_TEXT", text=text, cwd=str(tmp_path))
        assert e.value.code == "PERMISSION_DENIED"
        assert e.value.message.startswith("SUBMIT_TEXT refused to an unauthenticated peer: ")
        assert "\n" not in e.value.message
    owner = pool_token(str(pool.home))  # what `roost up` gave the pool's owner
    assert owner is not None
    with SyncClient(tcp, timeout=10, token=owner) as client:
        with pytest.raises(RemoteError) as e:
            client.call("SUBMIT_TEXT", text=text, cwd=str(tmp_path))
        assert e.value.code == "SUBMIT_LOCALLY"
        with pytest.raises(RemoteError) as e:  # malformed arguments are still refused
            client.call("SUBMIT_TEXT", text="queue\n", cwd=str(tmp_path), env={"A": 1})
        assert e.value.code in ("BAD_REQUEST", "SUBMIT_LOCALLY")
    with pool.schedd() as s:
        assert s.query_objs(f'Iwd == "{tmp_path}"', ["ClusterId"]) == []


def test_submit_text_over_the_socket_answers_clusters_and_warnings(pool: PoolHandle, tmp_path: Path) -> None:
    s = pool.schedd()
    try:
        got = s.call("SUBMIT_TEXT", text="executable = /bin/true\nunused_knob = 1\nqueue 3\n",
                     file="t.sub", cwd=str(tmp_path), env={})
        with pytest.raises(Exception) as e:
            s.call("SUBMIT_TEXT", text="executable = /bin/true\nrequest_cpus = )\nqueue\n",
                   file="t.sub", cwd=str(tmp_path), env={})
    finally:
        s.close()
    [[cluster, count]] = got["clusters"]
    assert count == 3
    assert any("unused_knob" in w for w in got["warnings"])
    assert "t.sub:2" in str(e.value)
    assert pool.wait([f"{cluster}.{p}" for p in range(3)], timeout=60)["done"] == 3
