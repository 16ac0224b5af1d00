"""Code written for HTCondor's ``htcondor2`` bindings, run unchanged against a roost pool.

The scripts below import ``htcondor2`` and ``classad2`` and never name roost: they run
in a child Python whose PYTHONPATH starts with ``python -m roost.htcondor2.shim``
(docs/python.md), so those imports load roost's face. dask-jobqueue's
``HTCondorCluster`` (the real package) starts dask workers as roost jobs; a DAG
written by the real ``htcondor2.dags`` runs through ``Submit.from_dag``, and so does one
written by roost's ``htcondor2.dags`` under the shim.
"""

from __future__ import annotations

import importlib.metadata
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import ROOST, PoolHandle, wait_until

from roost.api.jobids import is_job_id
from roost.api.pool import Pool
from roost.htcondor2.shim import SHIM_DIR


def run_unchanged(pool: PoolHandle, script: str, *args: str, timeout: float = 180) -> str:
    """Run an htcondor2 script with the shim first on PYTHONPATH; its stdout."""
    env = dict(pool.env)
    env["PYTHONPATH"] = SHIM_DIR + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"script failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_shim_makes_htcondor2_and_classad2_roost(pool: PoolHandle) -> None:
    out = run_unchanged(pool, """
        import htcondor2, classad2
        import roost.htcondor2, roost.classad
        assert htcondor2 is roost.htcondor2 and classad2 is roost.classad
        print(htcondor2.version())
    """)
    assert out.startswith("$CondorVersion: ")


HTMAP_STYLE = """
    import sys, htcondor2, classad2

    d = sys.argv[1]
    schedd = htcondor2.Schedd()
    sub = htcondor2.Submit({
        "executable": "/bin/echo",
        "arguments": "component $(component)",
        "initialdir": d,
        "output": "$(component).out",
        "log": d + "/map.log",
        "+HTMapId": '"m1"',
        "+component": "$(component)",
    })
    result = schedd.submit(sub, itemdata=iter([{"component": str(i)} for i in range(3)]))
    cluster = result.cluster()
    assert isinstance(cluster, int) and result.num_procs() == 3 and result.first_proc() == 0
    assert isinstance(result.clusterad(), classad2.ClassAd) and result.clusterad()["HTMapId"] == "m1"

    done = {}
    for event in htcondor2.JobEventLog(d + "/map.log").events(stop_after=90):
        assert event.cluster == cluster and isinstance(event.timestamp, int)
        if event.type == htcondor2.JobEventType.JOB_TERMINATED:
            done[event.proc] = event["ReturnValue"]
            if len(done) == 3:
                break
    assert done == {0: 0, 1: 0, 2: 0}, done

    held = schedd.submit(htcondor2.Submit({"executable": "/bin/sleep", "arguments": "300",
                                           "hold": "true", "initialdir": d}), count=2)
    c2 = held.cluster()
    ads = schedd.query(f"ClusterId == {c2}", ["ProcId", "JobStatus"], limit=5)
    assert all(isinstance(a, classad2.ClassAd) for a in ads)
    assert sorted((a["ProcId"], a["JobStatus"]) for a in ads) == [(p, htcondor2.JobStatus.HELD) for p in (0, 1)]
    assert schedd.edit(f"ClusterId == {c2}", "HTMapTag", '"tagged"') == 2
    assert schedd.edit([f"{c2}.1"], "HTMapRank", "7") == 1
    got = {a["ProcId"]: a for a in schedd.query(f"ClusterId == {c2}", ["HTMapTag", "HTMapRank"])}
    assert got[0]["HTMapTag"] == "tagged" and got[1]["HTMapRank"] == 7 and "HTMapRank" not in got[0]
    assert schedd.query(f"ClusterId == {c2}", callback=lambda ad: ad["ProcId"] or None) == [1]
    r = schedd.act(htcondor2.JobAction.Remove, f"ClusterId == {c2} && ProcId == 0")
    assert r["TotalSuccess"] == 1
    r = schedd.act(htcondor2.JobAction.Remove, [f"{c2}.1"], reason="done with it")
    assert r["TotalSuccess"] == 1
    try:
        schedd.act("remove", str(c2))
        raise AssertionError("a string action was taken")
    except TypeError:
        pass

    import time
    deadline = time.time() + 30
    while True:
        hist = schedd.history(f"ClusterId == {cluster} || ClusterId == {c2}", ["ClusterId", "ProcId", "JobStatus"])
        if len(hist) == 5 or time.time() > deadline:
            break
        time.sleep(0.2)
    assert all(isinstance(h, classad2.ClassAd) for h in hist)
    assert sorted((h["ClusterId"], h["ProcId"], h["JobStatus"]) for h in hist) == sorted(
        [(cluster, p, 4) for p in range(3)] + [(c2, p, 3) for p in range(2)])
    assert len(schedd.history(f"ClusterId == {cluster}", [], match=2)) == 2

    coll = htcondor2.Collector()
    location = coll.locate(htcondor2.DaemonTypes.Schedd)
    assert location["MyAddress"]
    assert htcondor2.Schedd(location).query(f"ClusterId == {cluster}") == []
    slots = coll.query(htcondor2.AdTypes.Startd, projection=["Name", "Cpus"])
    assert slots and all(s["Name"].startswith("slot") for s in slots)
    assert htcondor2.param["COLLECTOR_HOST"]
    print("ok", cluster, c2)
"""


def test_htmap_style_submission_follows_the_log_and_acts(pool: PoolHandle, jobdir: Path) -> None:
    out = run_unchanged(pool, HTMAP_STYLE, str(jobdir))
    assert out.startswith("ok ")
    assert sorted((jobdir / f"{i}.out").read_text() for i in range(3)) == [f"component {i}\n" for i in range(3)]


DAG_SUBMIT = """
    import sys, htcondor2

    dag_file = sys.argv[1]
    sub = htcondor2.Submit.from_dag(dag_file, {"force": True, "maxjobs": 2})
    result = htcondor2.Schedd().submit(sub)
    for event in htcondor2.JobEventLog(dag_file + ".dagman.log").events(stop_after=150):
        if event.type == htcondor2.JobEventType.JOB_TERMINATED:
            print("exit", event["ReturnValue"])
            break
    else:
        raise SystemExit("the DAGMan job did not end")
"""


def test_a_dag_written_by_htcondor2_dags_runs_from_submit_from_dag(pool: PoolHandle, jobdir: Path) -> None:
    htcondor2 = pytest.importorskip("htcondor2")  # the real bindings write the DAG
    from htcondor2 import dags

    echo = {"executable": "/bin/echo", "arguments": "$(word)", "output": "$(word).out"}
    dag = dags.DAG()
    a = dag.layer(name="A", submit_description=htcondor2.Submit(echo), vars=[{"word": "a1"}, {"word": "a2"}])
    a.child_layer(name="B", submit_description=htcondor2.Submit(echo), vars=[{"word": "b"}],
                  post=dags.Script(executable="/bin/true", arguments=["$RETURN"]))
    dag_file = dags.write_dag(dag, jobdir, dag_file_name="wf.dag")
    for f in jobdir.iterdir():
        f.chmod(0o644)
    out = run_unchanged(pool, DAG_SUBMIT, str(dag_file))
    assert out.strip() == "exit 0", (jobdir / "wf.dag.dagman.out").read_text()
    assert [(jobdir / f"{w}.out").read_text() for w in ("a1", "a2", "b")] == ["a1\n", "a2\n", "b\n"]


ROOST_DAGS = """
    import sys
    import htcondor2
    import htcondor2.dags
    from htcondor2 import dags

    assert dags is htcondor2.dags and dags.__name__ == "roost.htcondor2.dags"
    echo = {"executable": "/bin/echo", "arguments": "$(word)", "output": "$(word).out"}
    dag = dags.DAG()
    a = dag.layer(name="A", submit_description=htcondor2.Submit(echo), vars=[{"word": "a1"}, {"word": "a2"}])
    a.child_layer(name="B", submit_description=htcondor2.Submit(echo), vars=[{"word": "b1"}, {"word": "b2"}],
                  post=dags.Script(executable="/bin/true", arguments=["$RETURN"]))
    dag.final(name="F", submit_description=htcondor2.Submit(dict(echo, arguments="final", output="final.out")))
    print(dags.write_dag(dag, sys.argv[1], dag_file_name="wf.dag"))
"""


def test_a_dag_written_by_roosts_dags_under_the_shim_runs(pool: PoolHandle, jobdir: Path) -> None:
    """Unchanged ``from htcondor2 import dags`` code, on roost: a 2 x 2 layer edge (a
    NOOP join node) and a final node whose submit file roost's writer writes."""
    dag_file = run_unchanged(pool, ROOST_DAGS, str(jobdir)).strip()
    assert dag_file == str(jobdir / "wf.dag")
    assert "JOB __JOIN__:0 __JOIN__.sub NOOP" in (jobdir / "wf.dag").read_text()
    for f in jobdir.iterdir():
        f.chmod(0o644)
    out = run_unchanged(pool, DAG_SUBMIT, dag_file)
    assert out.strip() == "exit 0", (jobdir / "wf.dag.dagman.out").read_text()
    words = ("a1", "a2", "b1", "b2", "final")
    assert [(jobdir / f"{w}.out").read_text() for w in words] == [f"{w}\n" for w in words]


DAEMON_COMMANDS = """
    import htcondor2

    print(htcondor2.param["SCHEDD_LOG"])
    master_ad = htcondor2.Collector().locate(htcondor2.DaemonTypes.Master)
    htcondor2.send_command(master_ad, htcondor2.DaemonCommands.Reconfig)
    htcondor2.send_command(master_ad, htcondor2.DaemonCommand.DaemonOff, "SCHEDD")
    print("off")
    input()
    htcondor2.send_command(master_ad, htcondor2.DaemonCommand.DaemonOn, "SCHEDD")
    print("on")
    input()
    schedd_ad = htcondor2.Collector().locate(htcondor2.DaemonTypes.Schedd)
    htcondor2.send_command(schedd_ad, htcondor2.DaemonCommands.Reconfig)
    try:
        htcondor2.send_command(schedd_ad, htcondor2.DaemonCommands.DaemonOff)
    except htcondor2.HTCondorException as e:
        print("refused:", e)
    master_param = htcondor2.RemoteParam(master_ad)
    schedd_param = htcondor2.RemoteParam(schedd_ad)
    print("remote", master_param["UPDATE_INTERVAL"], "SCHEDD_LOG" in schedd_param, len(master_param) > 100,
          schedd_param["SCHEDD_LOG"] == htcondor2.param["SCHEDD_LOG"], master_param.get("NO_SUCH_KNOB"))
    try:
        master_param["UPDATE_INTERVAL"] = "500"
    except htcondor2.HTCondorException as e:
        print("refused:", e)
    htcondor2.send_command(master_ad, htcondor2.DaemonCommands.Restart, "STARTD")
    print("restarted")
    input()
    htcondor2.send_command(master_ad, htcondor2.DaemonCommands.OffFast)
    print("down")
"""


def _advertised_schedd(pool: PoolHandle) -> bool:
    """The collector holds the ad of the schedd now running (its address file's)."""
    from roost.net.addresses import read_address

    now = read_address(pool.home / "run" / "schedd.address")
    got = pool.roost("status", "-schedd", "-af", "MyAddress").stdout.split()
    return now is not None and now in got


def test_send_command_reconfigures_turns_off_and_on_restarts_and_stops(fresh_pool: PoolHandle) -> None:
    """htcondor2.send_command through the shim, step by step, each step seen in the
    master's STATUS; RemoteParam reads the master's and the schedd's configuration;
    the log knobs name the logs the daemons write."""
    env = dict(fresh_pool.env)
    env["PYTHONPATH"] = SHIM_DIR + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(DAEMON_COMMANDS)], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        daemons = lambda: fresh_pool.master_status()["daemons"]  # noqa: E731
        assert proc.stdout.readline().strip() == str(fresh_pool.home / "log" / "SchedLog")
        assert proc.stdout.readline().strip() == "off", proc.stderr.read() if proc.stderr else ""
        wait_until(lambda: daemons()["SCHEDD"]["state"] == "off", 30, "the schedd turned off")
        startd_pid = daemons()["STARTD"]["pid"]
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "on"
        wait_until(lambda: daemons()["SCHEDD"]["state"] == "running", 30, "the schedd back")
        # the script next locates the schedd in the collector: wait for the new one's ad
        wait_until(lambda: _advertised_schedd(fresh_pool), 30, "the restarted schedd's ad")
        proc.stdin.write("\n")
        proc.stdin.flush()
        refused = proc.stdout.readline().strip()
        assert refused.startswith("refused: roost manages its schedd through the master"), (
            refused or (proc.stderr.read() if proc.poll() is not None and proc.stderr else ""))
        assert proc.stdout.readline().strip() == "remote 2 True True True None"
        assert proc.stdout.readline().startswith("refused: roost's daemons take no runtime configuration")
        assert proc.stdout.readline().strip() == "restarted"
        wait_until(lambda: daemons()["STARTD"]["pid"] not in (None, startd_pid), 30, "a new startd")
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "down"
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        wait_until(lambda: not Pool(fresh_pool.home).running(), 60, "the pool stopped")
        master_log = (fresh_pool.home / "log" / "MasterLog").read_text()
        assert "reconfig: {'MASTER': 'reconfigured'" in master_log and "SCHEDD turned off" in master_log
        assert "starting schedd" in (fresh_pool.home / "log" / "SchedLog").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- dask-jobqueue -----------------------------------------------------------------------

WORKER_PACKAGES = ("dask", "distributed", "cloudpickle", "msgpack", "tornado", "toolz")


@pytest.fixture(scope="session")
def worker_python() -> Iterator[str]:
    """A Python that user nobody (the jobs' user) can run, with the test venv's dask and
    distributed versions: a venv of Debian's /usr/bin/python3 in a directory nobody can
    read. The test venv's Python (under /root/.pyenv) is closed to nobody."""
    pytest.importorskip("dask_jobqueue")
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("no /usr/bin/python3 to build the dask workers' Python from")
    pins = [f"{p}=={importlib.metadata.version(p)}" for p in WORKER_PACKAGES]
    base = Path(tempfile.mkdtemp(prefix="roost-daskpy-", dir="/tmp"))
    base.chmod(0o755)
    try:
        made = subprocess.run(["/usr/bin/python3", "-m", "venv", str(base / "venv")], capture_output=True,
                              text=True, timeout=120)
        if made.returncode != 0:
            pytest.skip(f"cannot make a venv of /usr/bin/python3 (Debian's python3-venv?): {made.stderr[-300:]}")
        pip = subprocess.run([str(base / "venv/bin/pip"), "install", "-q", *pins], capture_output=True,
                             text=True, timeout=600)
        if pip.returncode != 0:
            pytest.skip(f"cannot pip-install {' '.join(pins)} for the workers: {pip.stderr[-500:]}")
        subprocess.run(["chmod", "-R", "a+rX", str(base)], check=True)  # whatever the umask was
        yield str(base / "venv/bin/python")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def condor_commands(tmp_path: Path) -> Iterator[str]:
    """A PATH where dask-jobqueue finds condor_submit and condor_rm: roost's own console
    scripts when installed, else (until they are) two wrapper scripts onto ``roost submit``
    and ``roost rm`` in this test's directory."""
    path = os.environ.get("PATH", "")
    bin_dir = os.path.dirname(sys.executable)
    found = [shutil.which(c, path=bin_dir + os.pathsep + path) for c in ("condor_submit", "condor_rm")]
    if all(f and not f.startswith("/usr") for f in found):
        yield bin_dir + os.pathsep + path
        return
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    for name, verb in (("condor_submit", "submit"), ("condor_rm", "rm")):
        script = wrappers / name
        script.write_text(f"#!/bin/sh\nexec {' '.join(ROOST)} {verb} \"$@\"\n")
        script.chmod(0o755)
    yield str(wrappers) + os.pathsep + path


def test_dask_jobqueue_htcondorcluster_runs_workers_as_roost_jobs(
        pool: PoolHandle, worker_python: str, condor_commands: str, jobdir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dask.distributed import Client
    from dask_jobqueue import HTCondorCluster

    monkeypatch.setenv("ROOST_HOME", str(pool.home))
    monkeypatch.setenv("PATH", condor_commands)
    monkeypatch.chdir(jobdir)
    # the workers run on this host: the scheduler listens on loopback (no route lookup)
    cluster = HTCondorCluster(cores=1, memory="200MB", disk="100MB", python=worker_python,
                              scheduler_options={"host": "127.0.0.1"}, death_timeout=60)
    try:
        with Client(cluster) as client:
            cluster.scale(jobs=2)
            client.wait_for_workers(2, timeout=120)
            futures = client.map(lambda x: x * x, range(20))
            assert client.gather(futures) == [x * x for x in range(20)]
            assert client.submit(sum, range(101)).result(timeout=60) == 5050
            # the workers run as roost jobs do: as user nobody, in their sandboxes
            assert set(client.run(os.getuid).values()) == {pwd.getpwnam("nobody").pw_uid}
            job_ids = sorted(job.job_id for job in cluster.workers.values())
            assert len(job_ids) == 2 and all(is_job_id(j) for j in job_ids)
    finally:
        cluster.close()
    schedd = pool.schedd()
    try:  # close() ran condor_rm on every worker job
        schedd.wait(job_ids, timeout=60)
        wait_until(lambda: len(schedd.history(ids=job_ids)) == 2, 10, "the workers' history records")
        hist = schedd.history(ids=job_ids, projection=["JobStatus", "Cmd"])
    finally:
        schedd.close()
    assert sorted((h["JobStatus"], h["Cmd"]) for h in hist) == [(3, "/bin/sh")] * 2


SPOOL_AND_RETRIEVE = """
    import os, sys, time, htcondor2

    os.chdir(sys.argv[1])
    sub = htcondor2.Submit({"executable": "/bin/cat", "arguments": "in.txt", "transfer_input_files": "in.txt",
                            "transfer_executable": "false", "output": "out.txt", "error": "err.txt"})
    schedd = htcondor2.Schedd()
    result = schedd.submit(sub, spool=True)
    held = schedd.query(f"ClusterId == {result.cluster()}", projection=["JobStatus", "HoldReasonCode"])
    print("held", held[0]["JobStatus"], held[0]["HoldReasonCode"])
    schedd.spool(result)
    os.unlink("in.txt")
    for _ in range(1200):
        ads = schedd.query(f"ClusterId == {result.cluster()}", projection=["JobStatus"])
        if ads and ads[0]["JobStatus"] == 4:
            break
        time.sleep(0.1)
    else:
        raise SystemExit("the job did not complete")
    schedd.retrieve(f"ClusterId == {result.cluster()}")
    print("out", open("out.txt").read().strip())
    print("left", len(schedd.query(f"ClusterId == {result.cluster()}")))
"""


def test_submit_spool_then_spool_and_retrieve_as_htcondor2_scripts_do(pool: PoolHandle, jobdir: Path) -> None:
    (jobdir / "in.txt").write_text("spooled by htcondor2\n")
    out = run_unchanged(pool, SPOOL_AND_RETRIEVE, str(jobdir))
    assert out.splitlines() == ["held 5 16", "out spooled by htcondor2", "left 0"], out
