"""The attacks of issue 12 against a real personal pool, each from another local user
(``nobody``, a process of its own) who can reach every TCP port but holds no token.

Before the security layer each of these worked: reading a slot's ClaimId, claiming and
activating a slot to run a command as any user, holding another user's jobs, removing
a slot's ad, changing priorities, draining, restarting daemons. Now each is refused
with PERMISSION_DENIED and its one-line reason, and nothing changed in the pool.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from poolkit import PoolHandle

from roost.config import Config
from roost.daemons.security import DAEMON_USER, uid_domain
from roost.net.signing_key import read_key_file
from roost.net.syncclient import SyncClient
from roost.net.token_store import TokenSettings
from roost.net.tokens import create_token

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run a process as another user")

# The attacker speaks the wire protocol itself (a 4-byte length, then JSON): it needs
# nothing of roost, so it runs from a Python that user nobody may execute.
_ATTACKER = textwrap.dedent("""
    import json, socket, struct, sys
    out = []
    for address, cmd, args in json.loads(sys.argv[1]):
        host, port = address.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                body = json.dumps(dict(args, cmd=cmd)).encode()
                s.sendall(struct.pack(">I", len(body)) + body)
                f = s.makefile("rb")
                (n,) = struct.unpack(">I", f.read(4))
                resp = json.loads(f.read(n))
            if resp.get("ok"):
                out.append({"ok": True, "result": resp})
            else:
                out.append({"ok": False, "code": resp.get("code"), "error": resp.get("error")})
        except Exception as e:
            out.append({"ok": False, "code": type(e).__name__, "error": str(e)})
    print(json.dumps(out))
""")


def _python_for_nobody() -> str | None:
    for exe in (sys.executable, "/usr/bin/python3"):
        try:
            done = subprocess.run([exe, "-c", "pass"], user=NOBODY, group=NOBODY, extra_groups=[], cwd="/",
                                  capture_output=True, check=False, timeout=30)
        except OSError:
            continue  # not executable by nobody (under /root, say)
        if done.returncode == 0:
            return exe
    return None


def attack(calls: list[tuple[str, str, dict]]) -> list[dict]:
    """Run ``calls`` (address, command, arguments) as user nobody; their answers."""
    exe = _python_for_nobody()
    if exe is None:
        pytest.skip("no Python that user nobody may run")
    done = subprocess.run(
        [exe, "-c", _ATTACKER, json.dumps(calls)], capture_output=True, text=True, timeout=60,
        user=NOBODY, group=NOBODY, extra_groups=[], cwd="/", env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def address(pool: PoolHandle, daemon: str) -> str:
    return (pool.home / "run" / f"{daemon}.address").read_text().strip()


def daemon_client(pool: PoolHandle, daemon: str) -> SyncClient:
    """A client with the pool's daemon token: what the test itself uses to look."""
    cfg = Config.load(str(pool.home / "roost_config"), env={"ROOST_HOME": str(pool.home)})
    settings = TokenSettings.from_config(cfg)
    token = create_token(read_key_file(settings.pool_key_file), "POOL", settings.trust_domain,
                         f"{DAEMON_USER}@{uid_domain(cfg)}", now=time.time())
    return SyncClient(address(pool, daemon), token=token)


def denied(answer: dict) -> bool:
    return not answer["ok"] and answer["code"] == "PERMISSION_DENIED" and "\n" not in answer["error"]


def test_another_user_can_neither_steal_a_claim_nor_run_as_anyone(pool: PoolHandle, tmp_path: Path) -> None:
    with daemon_client(pool, "collector") as c:
        slots = c.call("QUERY", type="Machine", private=True)["ads"]
    claim_ids = [s["ClaimId"] for s in slots if isinstance(s.get("ClaimId"), str)]
    assert claim_ids, "the personal pool advertises its slots' claim ids to the negotiator"
    proof = tmp_path / "owned"
    job = {"Owner": "root", "Cmd": "/bin/sh", "Arguments": f"-c 'id > {proof}'", "ClusterId": 1, "ProcId": 0,
           "Iwd": "/", "JobUniverse": 5, "RequestCpus": 1, "RequestMemory": 1}
    coll, startd = address(pool, "collector"), address(pool, "startd")
    got = attack([
        (coll, "QUERY", {"type": "Machine", "private": True}),
        (coll, "QUERY", {"type": "Machine"}),
        (startd, "REQUEST_CLAIM", {"claim_id": claim_ids[0], "job_ad": job, "schedd_address": coll, "lease": 60}),
        (startd, "ACTIVATE_CLAIM", {"claim_id": claim_ids[0], "job_ad": job}),
    ])
    assert denied(got[0]) and "NEGOTIATOR" in got[0]["error"]
    assert got[1]["ok"] and got[1]["result"]["ads"]
    assert not any("ClaimId" in ad or any(cid in json.dumps(ad) for cid in claim_ids)
                   for ad in got[1]["result"]["ads"])
    assert denied(got[2]) and denied(got[3]) and "DAEMON" in got[3]["error"]
    time.sleep(0.5)  # time is the point: a job started in spite of the refusal would have written its proof
    assert not proof.exists()


def test_another_user_cannot_change_the_pool(pool: PoolHandle, tmp_path: Path) -> None:
    result = pool.submit("executable = /bin/sleep\narguments = 60\nhold = true\nqueue\n", tmp_path)
    jid = f"{result.cluster}.0"
    with daemon_client(pool, "collector") as c:
        names = [a["Name"] for a in c.call("QUERY", type="Machine", projection=["Name"])["ads"]]
    coll, schedd, neg = address(pool, "collector"), address(pool, "schedd"), address(pool, "negotiator")
    startd, master = address(pool, "startd"), address(pool, "master")
    got = attack([
        (schedd, "ACT", {"action": "remove", "ids": [jid]}),
        (schedd, "NEW_CLUSTER", {}),
        (coll, "INVALIDATE_AD", {"type": "Machine", "name": names[0]}),
        (coll, "UPDATE_AD", {"type": "Machine", "ad": {"Name": "fake@slot", "MyType": "Machine"}}),
        (neg, "SET_FACTOR", {"user": f"root@{names[0]}", "factor": 1e6}),
        (neg, "RESET_USAGE", {}),
        (startd, "DRAIN", {}),
        (startd, "SET_OFF", {}),
        (master, "RESTART_DAEMON", {"daemon": "SCHEDD"}),
        (schedd, "QUERY_JOBS", {}),
    ])
    for answer in got[:-1]:
        assert denied(answer), answer
    assert got[-1]["ok"]  # reading the queue stays open
    assert pool.job(jid) is not None and pool.job(jid)["JobStatus"] == 5
    with daemon_client(pool, "collector") as c:
        after = [a["Name"] for a in c.call("QUERY", type="Machine", projection=["Name"])["ads"]]
    assert sorted(after) == sorted(names)
    pool.schedd().act("remove", jid)


def test_reconfig_applies_a_new_policy_and_keeps_the_jobs(fresh_pool: PoolHandle, tmp_path: Path) -> None:
    pool = fresh_pool
    held = pool.submit("executable = /bin/sleep\narguments = 60\nhold = true\nqueue\n", tmp_path)
    coll = address(pool, "collector")
    assert attack([(coll, "QUERY", {"type": "Machine"})])[0]["ok"]
    assert denied(attack([(address(pool, "master"), "RECONFIG", {})])[0])

    config = pool.home / "roost_config"
    config.write_text(config.read_text() + "DENY_READ = unauthenticated@unmapped\n")
    done = pool.roost("reconfig", check=True)
    for name in ("master", "collector", "negotiator", "schedd", "startd"):
        assert f"{name}: reconfigured" in done.stdout
    got = attack([(coll, "QUERY", {"type": "Machine"})])[0]
    assert denied(got) and "DENY_READ" in got["error"]
    assert pool.job(f"{held.cluster}.0")["JobStatus"] == 5  # the queue is what it was

    lines = config.read_text().splitlines()
    config.write_text(config.read_text() + "ALLOW_WRITE = +staff\n")
    bad = pool.roost("reconfig")
    assert bad.returncode == 1 and f"roost_config:{len(lines) + 1}: ALLOW_WRITE" in bad.stderr + bad.stdout
    assert denied(attack([(coll, "QUERY", {"type": "Machine"})])[0])  # the last good policy still holds
    assert pool.master_status()["ready"]
