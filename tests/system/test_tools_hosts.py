"""The tools on one host reach another host's schedd through the central manager's
collector: ``roost q -pool CM -name SCHEDD`` from the central manager lists the submit
host's jobs, and ``roost rm -name`` with the administrator's token removes them."""

from __future__ import annotations

import re

import pytest
from hostpool import UID_DOMAIN, MultiHostPool


@pytest.fixture
def hosts(shared_hosts: MultiHostPool) -> MultiHostPool:
    """One four-host pool for this module (conftest's ``shared_hosts``): neither test stops anything;
    each sets the central manager's tools' token it needs."""
    return shared_hosts


def test_q_and_rm_of_the_submit_hosts_schedd_from_the_central_manager(hosts: MultiHostPool) -> None:
    cm, submit = hosts["cm"], hosts["submit"]
    work = submit.host.dir / "work"
    work.mkdir()
    work.chmod(0o755)
    (work / "job.sub").write_text("executable = /bin/sleep\narguments = 60\nhold = true\nqueue 3\n")
    m = re.search(r"submitted to cluster (\d+)", submit.roost("submit", "job.sub", cwd=work).stdout)
    assert m
    cluster = m.group(1)
    names = cm.roost("status", "-schedd", "-af", "Machine", "Name").stdout.split("\n")
    name = next(line.split()[1] for line in names if line.startswith("submit "))

    # the administrator's token, where the central manager's tools look for one
    token = cm.roost("token", "create", "-identity", f"root@{UID_DOMAIN}").stdout.strip().splitlines()[-1]
    tokens = cm.home / "tokens.d"
    tokens.mkdir(exist_ok=True)
    (tokens / "zz-admin").write_text(token + "\n")

    q = cm.roost("q", "-pool", cm.address, "-name", name, cluster, "-af", "ClusterId", "ProcId")
    assert sorted(q.stdout.splitlines()) == [f"{cluster} {p}" for p in range(3)], q.stdout
    wrong = cm.roost("q", "-pool", cm.address, "-name", "nosuch", check=False)
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == f"roost q: no schedd named nosuch in the pool at {cm.address}:9618", wrong.stderr

    rm = cm.roost("rm", "-pool", cm.address, "-name", name, cluster)
    assert rm.stdout.strip() == f"All jobs in cluster {cluster} have been marked for removal"
    left = submit.roost("q", "-allusers", cluster, "-af", "JobStatus").stdout.split()
    assert set(left) <= {"3"}, left


def test_reconfig_of_another_host_through_its_master_is_for_administrators(hosts: MultiHostPool) -> None:
    """The masters of a multi-host pool listen beyond loopback and advertise a reachable
    address; `roost reconfig -pool CM -name HOST` reaches one, ADMINISTRATOR only."""
    cm, execute = hosts["cm"], hosts["exec1"]
    machine = execute.roost("status", "-master", "-af", "Machine").stdout.split()
    assert machine, "the execute host's master is in the collector"
    tokens = cm.home / "tokens.d"
    tokens.mkdir(exist_ok=True)
    user = cm.roost("token", "create", "-identity", f"bob@{UID_DOMAIN}").stdout.strip().splitlines()[-1]
    admin = cm.roost("token", "create", "-identity", f"root@{UID_DOMAIN}").stdout.strip().splitlines()[-1]
    for f in tokens.iterdir():
        f.unlink()  # only the token under test, first in name order
    (tokens / "a-user").write_text(user + "\n")
    refused = cm.roost("reconfig", "-pool", cm.address, "-name", "exec1", check=False)
    assert refused.returncode == 1, refused
    assert refused.stderr.startswith(f"roost reconfig: RECONFIG refused to bob@{UID_DOMAIN}"), refused.stderr
    assert "ADMINISTRATOR" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    (tokens / "a-user").write_text(admin + "\n")
    done = cm.roost("reconfig", "-pool", cm.address, "-name", "exec1")
    assert "master: reconfigured" in done.stdout and "startd: reconfigured" in done.stdout, done.stdout
