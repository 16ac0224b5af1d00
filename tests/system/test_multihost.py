"""A pool of four hosts in network namespaces (a central manager, a submit host, two
execute hosts): jobs submitted on one host run on two others, with their files sent
there and back; every daemon advertises its host's own address."""

from __future__ import annotations

import re

import pytest
from hostpool import MultiHostPool


@pytest.fixture
def hosts(shared_hosts: MultiHostPool) -> MultiHostPool:
    """One four-host pool for this module (conftest's ``shared_hosts``): each test leaves it whole
    (exec2 stopped is started again) and works in its own directory."""
    return shared_hosts


JOB = """#!/bin/sh
read word < input.txt
echo "$(hostname) $word $1" > result.txt
hostname
sleep 1
"""

SUBMIT = """\
executable = job.sh
arguments = $(Process)
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_input_files = input.txt
transfer_output_files = result.txt
transfer_output_remaps = "result.txt = result.$(Process).txt"
output = job.$(Process).out
error = job.$(Process).err
log = jobs.log
request_cpus = 1
request_memory = 64
queue 8
"""


def test_jobs_from_a_submit_host_run_on_both_execute_hosts(hosts: MultiHostPool) -> None:
    submit = hosts["submit"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = submit.host.dir / "work"
    work.mkdir()
    (work / "job.sh").write_text(JOB)
    (work / "job.sh").chmod(0o755)
    (work / "input.txt").write_text("hello\n")
    (work / "job.sub").write_text(SUBMIT)
    work.chmod(0o755)

    done = submit.roost("submit", "job.sub", cwd=work)
    m = re.search(r"(\d+) job\(s\) submitted to cluster (\d+)", done.stdout)
    assert m and m.group(1) == "8", done.stdout
    cluster = m.group(2)
    submit.roost("wait", "-quiet", "-wait", "90", cluster, timeout=100)

    ran_on = {}
    for proc in range(8):
        result = (work / f"result.{proc}.txt").read_text().split()
        assert result[1:] == ["hello", str(proc)], result
        assert (work / f"job.{proc}.out").read_text().strip() == result[0]
        ran_on[proc] = result[0]
    assert set(ran_on.values()) == {"exec1", "exec2"}, ran_on

    hist = submit.roost("history", cluster, "-af", "ProcId", "ExitCode", "RemoteHost", "ExecuteUser")
    rows = [line.split() for line in hist.stdout.splitlines() if line.strip()]
    assert len(rows) == 8, hist.stdout
    for proc, code, remote, user in rows:
        assert code == "0"
        assert remote.endswith("@" + ran_on[int(proc)]), (proc, remote, ran_on)
        assert user == "nobody", rows  # root's jobs run as the slot user, never as root


def test_every_daemon_advertises_an_address_other_hosts_reach(hosts: MultiHostPool) -> None:
    hosts.wait_for_slots({"exec1", "exec2"})
    # asked from the submit host: its tools find the central manager's collector
    # through COLLECTOR_HOST, as its daemons do
    submit = hosts["submit"]
    seen: dict[str, str] = {}
    for kind in ("-schedd", "-negotiator", "-collector", "-startd"):
        out = submit.roost("status", kind, "-af", "Machine", "MyAddress").stdout
        for line in out.splitlines():
            machine, address = line.split()
            seen[machine] = address.rsplit(":", 1)[0]
    assert seen == {h.name: h.address for h in hosts.hosts.values()}, seen


SLEEPERS = """\
executable = /bin/sh
arguments = "-c 'sleep 2; hostname > done.$(Process)'"
transfer_executable = false
should_transfer_files = YES
when_to_transfer_output = ON_EXIT
transfer_output_files = done.$(Process)
log = sleepers.log
request_cpus = 1
request_memory = 64
queue 6
"""


def _jobs_on(submit, cluster: str) -> dict[str, str]:
    out = submit.roost("q", cluster, "-af", "ProcId", "JobStatus", "RemoteHost").stdout
    return {f[0]: f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] == "2"}


def test_an_execute_host_leaves_and_joins_with_nothing_lost(hosts: MultiHostPool) -> None:
    """exec2 (token only, no pool key) stops while jobs run on it and starts again:
    every job completes exactly once, its output back on the submit host."""
    import time

    submit, exec2 = hosts["submit"], hosts["exec2"]
    hosts.wait_for_slots({"exec1", "exec2"})
    work = submit.host.dir / "leave"
    work.mkdir()
    work.chmod(0o777)
    (work / "job.sub").write_text(SLEEPERS)
    done = submit.roost("submit", "job.sub", cwd=work)
    cluster = re.search(r"submitted to cluster (\d+)", done.stdout).group(1)  # type: ignore[union-attr]
    deadline = time.monotonic() + 30
    while not any(h.endswith("@exec2") for h in _jobs_on(submit, cluster).values()):
        assert time.monotonic() < deadline, submit.roost("q", cluster, "-af", "JobStatus", "RemoteHost").stdout
        time.sleep(0.2)
    exec2.roost("down", "-timeout", "20", timeout=30)
    exec2.roost("up", "-timeout", "30", timeout=45)
    submit.roost("wait", "-quiet", "-wait", "90", cluster, timeout=100)
    hist = submit.roost("history", cluster, "-af", "ProcId", "ExitCode").stdout.split("\n")
    rows = sorted(line.split() for line in hist if line.strip())
    assert rows == [[str(p), "0"] for p in range(6)], rows  # each once, each exit 0
    for p in range(6):
        assert (work / f"done.{p}").read_text().strip() in ("exec1", "exec2")


def test_remote_admin_of_a_host_without_the_pool_key(hosts: MultiHostPool) -> None:
    """exec2 holds no key: its startd checks an administrator's token, and a revoked
    one, with the central manager."""
    cm = hosts["cm"]
    hosts.wait_for_slots({"exec2"})
    root = cm.roost("token", "create", "-identity", "root@roost.test").stdout.strip().splitlines()[-1]
    gone = cm.roost("token", "create", "-identity", "root@roost.test").stdout.strip().splitlines()[-1]
    import base64
    import json

    def claims(tok: str) -> dict:
        part = tok.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))

    cm.roost("token", "revoke", "-jti", claims(gone)["jti"])
    startd = (hosts["exec2"].home / "run" / "startd.address").read_text().strip()
    code = """
import json, sys
from roost.net.errors import RemoteError
from roost.net.syncclient import SyncClient
from roost.net.tls import ClientTLS
out = []
for tok in sys.argv[2:]:
    try:
        with SyncClient(sys.argv[1], token=tok, tls=ClientTLS("REQUIRED")) as c:
            out.append([c.call("DRAIN", reason="admin").get("state", "ok"), c.call("CANCEL_DRAIN") and "ok"])
    except RemoteError as e:
        out.append([e.code, e.message])
print(json.dumps(out))
"""
    got = json.loads(hosts["submit"].python(code, startd, root, gone).stdout)
    assert got[0][1] == "ok", got
    assert got[1][0] == "AUTH_FAILED" and "revoked" in got[1][1], got


def test_a_host_whose_name_does_not_resolve_finds_its_address(network) -> None:
    """IP_ADDRESS (what daemons advertise when NETWORK_INTERFACE says nothing) comes
    from the host's interfaces when its name gives no address, never 127.x."""
    import sys

    h = network.add_host("noname")
    code = "from roost.config import Config; print(Config.load(env={}).get('IP_ADDRESS'))"
    done = h.run([sys.executable, "-c", code])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == h.address
