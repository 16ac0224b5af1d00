"""Glide-ins through a real Slurm (issue 30): ``roost annex -slurm 2`` starts two Slurm
jobs (tests/slurmkit.py) whose startds join the pool with a token limited to
ADVERTISE_STARTD/READ, advertise IsGlidein/AnnexName/GLIDEIN_ToDie, run the jobs that
ask for glide-ins (a job avoiding them runs on the pool's own startd), and leave the
pool and Slurm when idle; near its end a glide-in evicts its job, which runs again
elsewhere; a slurmd killed with -9 under a running glide-in loses nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, job_dir, start_pool, stop_pool, wait_until
from poolkit import submit_text as submit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from slurmkit import SlurmCluster, missing  # noqa: E402

pytestmark = pytest.mark.skipif(missing() is not None, reason=str(missing()))


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    with SlurmCluster(cpus=2, memory_mb=1024, partitions=("debug", "short")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def pool(slurm: SlurmCluster) -> Iterator[PoolHandle]:
    home = Path(f"/tmp/roost-annex-{os.getpid()}")
    p = start_pool(home, f"SLURM_CONF = {slurm.conf}\nANNEX_POLL_INTERVAL = 0.5\nNUM_CPUS = 1\n")
    # sbatch passes the environment on: the glide-ins make their homes here
    (home / "slurm-tmp").mkdir()
    p.env["TMPDIR"] = str(home / "slurm-tmp")
    try:
        yield p
    finally:
        # slurmstepd outlives slurmd: cancel what is left, so no glide-in outlives the test
        slurm.run("scancel", "-u", "root", check=False)
        wait_until(lambda: not slurm.run("squeue", "-h", check=False).stdout.strip(), 60, "Slurm empty")
        wait_until(lambda: not list((home / "slurm-tmp").glob("roost-gi-*")), 30, "the glide-ins' homes removed")
        stop_pool(p)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def work() -> Iterator[Path]:
    with job_dir("roost-annex-work", 0o777) as d:
        yield d


def glideins(pool: PoolHandle, annex: str) -> list[dict]:
    c = pool.collector()
    try:
        return [a for a in c.query_objs("Machine", f'AnnexName =?= "{annex}"') if a.get("IsGlidein") is True]
    finally:
        c.close()


def annex(pool: PoolHandle, *args: str) -> list[str]:
    done = pool.roost("annex", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    m = re.search(r"\(jobs? ([\d, ]+)\)", done.stdout)
    assert m, done.stdout
    return [j.strip() for j in m.group(1).split(",")]


def annex_status(pool: PoolHandle) -> dict[str, dict]:
    done = pool.roost("status", "-annex", "-json")
    assert done.returncode == 0, done.stderr
    return {a["name"]: a for a in json.loads(done.stdout)}


def test_two_glideins_join_run_the_jobs_that_ask_for_them_and_leave_when_idle(
        pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    ids = annex(pool, "-slurm", "2", "-duration", "10m", "-idle", "15s", "-name", "g1", "-memory", "256",
                "-partition", "short")
    assert len(ids) == 2
    wait_until(lambda: len({a["SlurmJobId"] for a in glideins(pool, "g1")}) == 2, 90, "two glide-ins in the pool")
    ads = glideins(pool, "g1")
    assert all(a["AnnexName"] == "g1" and a["GLIDEIN_ToDie"] > time.time() + 500 for a in ads)
    assert {a["SlurmJobId"] for a in ads} == set(ids)
    assert "Partition=short" in slurm.run("scontrol", "show", "job", "-o", ids[0]).stdout
    shown = annex_status(pool)["g1"]
    assert (shown["state"], shown["requested"], shown["glideins"], shown["running"]) == ("running", 2, 2, 2)
    assert re.fullmatch(r"[0-9a-f]{32}", shown["jti"]), shown

    on_glidein = submit(pool, work, """executable = /bin/sh
arguments = "-c 'echo on $(hostname)'"
requirements = TARGET.IsGlidein =?= True
output = g.out
log = g.log
queue
""")
    done = pool.wait_for(on_glidein, lambda j: j.get("JobStatus") == 4, timeout=90, what="done on a glide-in")
    assert done["ExitCode"] == 0
    assert re.search(r"@glidein\d+@", str(done.get("RemoteHost"))), done
    avoid = submit(pool, work, """executable = /bin/true
requirements = TARGET.IsGlidein =!= True
log = a.log
queue
""")
    done = pool.wait_for(avoid, lambda j: j.get("JobStatus") == 4, timeout=90, what="done off the glide-ins")
    assert done.get("RemoteHost") and "glidein" not in done["RemoteHost"], done

    # idle: both leave the pool and end their Slurm jobs cleanly
    wait_until(lambda: not glideins(pool, "g1"), 120, "the idle glide-ins gone from the pool")
    wait_until(lambda: all(slurm.state(j) in ("COMPLETED", "gone") for j in ids), 60, "their Slurm jobs done")
    assert annex_status(pool)["g1"]["state"] == "ended"
    assert not list((pool.home / "slurm-tmp").glob("roost-gi-*")), "each glide-in removed its home"


def test_the_annex_token_is_good_for_a_startd_only(pool: PoolHandle, slurm: SlurmCluster) -> None:
    """What a glide-in carries cannot submit, read private ads or advertise a schedd."""
    from roost.net.errors import RemoteError
    from roost.net.syncclient import SyncClient

    ids = annex(pool, "-slurm", "1", "-duration", "5m", "-idle", "3s", "-name", "tok")
    # the token travels in the Slurm job's script
    script = slurm.run("scontrol", "write", "batch_script", ids[0], "-").stdout
    token = re.search(r"<<'ROOST_ANNEX_TOKEN'\n(\S+)\n", script).group(1)
    payload = json.loads(__import__("base64").urlsafe_b64decode(token.split(".")[1] + "=="))
    assert payload["scope"] == "condor:/ADVERTISE_STARTD condor:/READ"
    assert payload["roost_annex"] == "tok"  # the token is this annex's alone
    assert 5 * 60 < payload["exp"] - payload["iat"] <= 5 * 60 + 3600
    address = (pool.home / "run" / "collector.address").read_text().strip()
    c = SyncClient(address, token=token)
    try:
        with pytest.raises(RemoteError, match="refused"):
            c.call("QUERY", type="Machine", private=True)
        with pytest.raises(RemoteError, match="refused"):
            c.call("UPDATE_AD", type="Scheduler", ad={"MyType": "Scheduler", "Name": "evil"})
        assert isinstance(c.call("QUERY", type="Machine"), dict)
        # advertise ADVERTISE_STARTD does not bind a machine: the collector holds the token
        # to glide-in ads, so it cannot replace, refresh or withdraw the pool's own slots
        own = [a for a in c.call("QUERY", type="Machine")["ads"] if a.get("IsGlidein") is not True]
        name, state = own[0]["Name"], own[0]["State"]
        with pytest.raises(RemoteError, match="not a glide-in"):
            c.call("UPDATE_AD", type="Machine", ad={"Name": name, "IsGlidein": True, "AnnexName": "tok"})
        with pytest.raises(RemoteError, match="IsGlidein"):
            c.call("UPDATE_AD", type="Machine", ad={"Name": "slot1@pretender"})
        with pytest.raises(RemoteError, match="not a glide-in"):
            c.call("INVALIDATE_AD", type="Machine", name=name)
        c.call("UPDATE_ADS", type="Machine", ads=[], refresh=[{"Name": name, "State": "Owner"}])
        # nor pose as another annex's glide-ins: the token names its own
        with pytest.raises(RemoteError, match="the token is for annex 'tok', not 'other'"):
            c.call("UPDATE_AD", type="Machine", ad={"Name": "slot1@pretender", "IsGlidein": True, "AnnexName": "other"})
        again = c.call("QUERY", type="Machine", constraint=f'Name == "{name}"')["ads"]
        assert [a["State"] for a in again] == [state]
    finally:
        c.close()
    wait_until(lambda: all(slurm.state(j) in ("COMPLETED", "gone") for j in ids), 120, "the idle glide-in ended")


def test_near_its_end_a_glidein_evicts_its_job_which_runs_again_elsewhere(
        pool: PoolHandle, slurm: SlurmCluster, work: Path) -> None:
    # 40 s: it stops taking jobs 8 s before its end and evicts 4 s before it (a glide-in
    # joins in a few seconds: the job starts well before the 32 s it may start in)
    ids = annex(pool, "-slurm", "1", "-duration", "40s", "-idle", "5m", "-name", "end")
    wait_until(lambda: glideins(pool, "end"), 90, "the glide-in in the pool")
    marker = work / "started-once"
    jid = submit(pool, work, f"""executable = /bin/sh
arguments = "-c 'test -e {marker} && exit 0; touch {marker}; sleep 300'"
requirements = TARGET.IsGlidein =?= True || MY.NumJobStarts > 0
log = e.log
queue
""")
    first = pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running on the glide-in")
    assert "glidein" in str(first.get("RemoteHost")), first
    done = pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=150, what="done after the eviction")
    assert done["NumJobStarts"] == 2 and "glidein" in str(done.get("LastRemoteHost")), done
    assert "glidein" not in str(done.get("RemoteHost")), "the second run is on the pool's own startd"
    assert "\n004 (" in (work / "e.log").read_text(), "evicted, not failed"
    wait_until(lambda: all(slurm.state(j) in ("COMPLETED", "gone") for j in ids), 60,
               "the Slurm job ended by the glide-in itself, before Slurm's limit")


def test_slurmd_killed_under_a_running_glidein_loses_nothing(pool: PoolHandle, slurm: SlurmCluster,
                                                              work: Path) -> None:
    ids = annex(pool, "-slurm", "1", "-duration", "10m", "-idle", "10s", "-name", "kill")
    wait_until(lambda: glideins(pool, "kill"), 90, "the glide-in in the pool")
    jid = submit(pool, work, """executable = /bin/sleep
arguments = 5
requirements = TARGET.IsGlidein =?= True
log = k.log
queue
""")
    pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, timeout=60, what="running on the glide-in")
    pid = slurm.slurmd_pid()
    assert pid is not None, "slurmd was running"
    os.kill(pid, signal.SIGKILL)
    done = pool.wait_for(jid, lambda j: j.get("JobStatus") == 4, timeout=60, what="done with slurmd dead")
    assert done["ExitCode"] == 0 and done["NumJobStarts"] == 1
    slurm.start_node()
    wait_until(lambda: not glideins(pool, "kill"), 90, "the idle glide-in gone from the pool")
    wait_until(lambda: all(slurm.state(j) in ("COMPLETED", "gone") for j in ids), 90,
               "its Slurm job ended cleanly once slurmd is back")
