"""The schedd's side of Chirp (CHIRP_ATTR, CHIRP_IO): a real schedd process, a running
job held open by a test-side startd, and the calls a starter makes for its job. These
are the shadow's checks, which hold whatever a starter forwards."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roost.eventlog import read_events
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient

from .schedd_harness import FakeStartd, ScheddProc, query, submit, wait_for


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A submit directory a root job's file helper (nobody) may use."""
    path = Path(tempfile.mkdtemp(prefix="roost-chirp-", dir="/tmp"))
    path.chmod(0o777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Any]:
    s = ScheddProc(tmp_path).start()
    startd = FakeStartd(s.home)
    startd.hang = True  # the job stays running

    def start(cwd: Path, extra: str = "", owner: str = "root") -> tuple[SyncClient, str, str]:
        with s.client() as c:
            cid, _ = submit(c, f"executable = /bin/sleep\nlog = job.log\n{extra}queue\n", str(cwd), owner)
            with s.daemon_client() as n:
                for r in n.call("GET_REQUESTS", owner=owner)["requests"]:
                    startd.send_match(s.address, r["autocluster"], "claim-1")
            wait_for(lambda: c.call("QUERY_JOBS", totals=True)["totals"]["Running"] == 1)
        claim = [a["claim_id"] for cmd, a in startd.calls if cmd == "ACTIVATE_CLAIM"][-1]
        return SyncClient(s.address, timeout=10, token=startd.token), f"{cid}.0", claim

    try:
        yield s, start
    finally:
        startd.hang = False
        s.stop()
        startd.close()


def _code(fn: Any) -> str:
    with pytest.raises(RemoteError) as e:
        fn()
    return e.value.code


def test_a_job_without_io_sets_only_delayed_update_names(running: Any, public_dir: Path) -> None:
    s, start = running
    c, jid, claim = start(public_dir)
    attr = {"claim_id": claim, "job": jid}
    with c:
        assert _code(lambda: c.call("CHIRP_ATTR", op="get", name="Owner", **attr)) == "DENIED"
        assert _code(lambda: c.call("CHIRP_ATTR", op="set", name="JobProgress", expr="1", **attr)) == "DENIED"
        c.call("CHIRP_ATTR", op="set", name="ChirpX", expr="3", **attr)
        got = c.call("CHIRP_ATTR", op="delayed", attrs={"ChirpY": "4", "Other": "1", "Owner": '"x"',
                                                         "chirpWantIOProxy": "1 +", "WantIOProxy": "true"}, **attr)
        assert got["applied"] == 1
        assert _code(lambda: c.call("CHIRP_ATTR", op="ulog", text="no", **attr)) == "DENIED"
        assert _code(lambda: c.call("CHIRP_IO", op="stat", args=["."], **attr)) == "DENIED"
        assert _code(lambda: c.call("CHIRP_ATTR", op="get", name="ChirpX", claim_id="other", job=jid)) == "NOT_FOUND"
    with s.client() as q:
        ad = query(q)[jid]
    assert ad["ChirpX"] == 3 and ad["ChirpY"] == 4 and ad["Owner"] == "root"
    assert "Other" not in ad and "WantIOProxy" not in ad and "chirpWantIOProxy" not in ad


def _io(c: SyncClient, op: str, args: list[Any], attr: dict[str, str], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
    c.send({"cmd": "CHIRP_IO", **attr, "op": op, "args": args, "size": len(payload)})
    if payload:
        c.send_bytes(payload)
    resp = c.recv()
    assert resp.get("ok") is True, resp
    return resp, c.read_exactly(resp["size"]) if resp["size"] else b""


def test_a_job_with_io_reads_and_sets_attributes_logs_and_moves_files(running: Any, public_dir: Path) -> None:
    s, start = running
    c, jid, claim = start(public_dir, "+WantIOProxy = true\n")
    attr = {"claim_id": claim, "job": jid}
    with c:
        assert c.call("CHIRP_ATTR", op="get", name="Owner", **attr)["expr"] == '"root"'
        assert c.call("CHIRP_ATTR", op="get", name="NoSuch", **attr)["expr"] == "UNDEFINED"
        c.call("CHIRP_ATTR", op="set", name="JobProgress", expr="40 + 2", **attr)
        assert c.call("CHIRP_ATTR", op="get", name="JobProgress", **attr)["expr"] == "40 + 2"
        assert _code(lambda: c.call("CHIRP_ATTR", op="set", name="Owner", expr='"x"', **attr)) == "DENIED"
        assert _code(lambda: c.call("CHIRP_ATTR", op="set", name="WantRemoteUpdates", expr="false", **attr)) == "DENIED"
        assert _code(lambda: c.call("CHIRP_ATTR", op="set", name="A", expr="1 +", **attr)) == "BAD_REQUEST"
        c.call("CHIRP_ATTR", op="ulog", text="from the job", **attr)
        resp, _ = _io(c, "open", ["out.txt", "wc", 0o644], attr)
        fd = resp["rc"]
        assert fd >= 3 and len(resp["text"].split()) == 13
        assert _io(c, "write", [fd], attr, b"hello")[0]["rc"] == 5
        assert _io(c, "pread", [fd, 100, 1], attr)[1] == b""  # opened write-only
        assert _io(c, "close", [fd], attr)[0]["rc"] == 0
        assert (public_dir / "out.txt").read_bytes() == b"hello"
        resp, data = _io(c, "getdir", ["."], attr)
        assert "out.txt" in data.decode().split("\n")
        resp, _ = _io(c, "open", ["/etc/shadow", "r", 0], attr)
        if os.geteuid() == 0:
            assert (resp["rc"], resp["errno"]) == (-1, "EACCES")  # as nobody, never as root
        resp, _ = _io(c, "open", ["out.txt", "r", 0], attr)
        fd = resp["rc"]
        c.call("CHIRP_IO", op="end", args=[], **attr)  # the job is over: its helper and fds go
        assert _io(c, "read", [fd, 5], attr)[0]["errno"] == "EBADF"  # a new helper knows no such fd
    with s.client() as q:
        assert query(q)[jid]["JobProgress"] == "/Expr(40 + 2)/"
    events = wait_for(lambda: [e for e in read_events(str(public_dir / "job.log")) if int(e.type) == 8])
    assert events[0]["Info"] == "from the job"


def test_a_job_may_not_charge_its_usage_to_another_user(running: Any, public_dir: Path) -> None:
    """A running job speaks for its owner: Chirp's set_job_attr may not name another
    accounting user (docs/security.md), a delayed update of one is dropped."""
    s, start = running
    c, jid, claim = start(public_dir, "+WantIOProxy = true\n", owner="nobody")
    attr = {"claim_id": claim, "job": jid}
    with c:
        for name, expr in (("AccountingGroup", '"group_x.alice"'), ("AcctGroupUser", '"alice"')):
            with pytest.raises(RemoteError) as e:
                c.call("CHIRP_ATTR", op="set", name=name, expr=expr, **attr)
            assert e.value.code == "DENIED" and "nobody may not charge jobs to user 'alice'" in e.value.message
        assert c.call("CHIRP_ATTR", op="delayed", attrs={"AccountingGroup": '"alice"'}, **attr)["applied"] == 0
        c.call("CHIRP_ATTR", op="set", name="AccountingGroup", expr='"group_x.nobody"', **attr)
    with s.client() as q:
        ad = query(q)[jid]
    assert ad["AccountingGroup"] == "group_x.nobody" and "AcctGroupUser" not in ad
