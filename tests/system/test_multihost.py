"""A pool of four hosts in network namespaces (a central manager, a submit host, two
execute hosts): jobs submitted on one host run on two others, with their files sent
there and back; every daemon advertises its host's own address."""

from __future__ import annotations

import re

from hostpool import MultiHostPool

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

    hist = submit.roost("history", cluster, "-af", "ProcId", "ExitCode", "RemoteHost")
    rows = [line.split() for line in hist.stdout.splitlines() if line.strip()]
    assert len(rows) == 8, hist.stdout
    for proc, code, remote in rows:
        assert code == "0"
        assert remote.endswith("@" + ran_on[int(proc)]), (proc, remote, ran_on)


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
