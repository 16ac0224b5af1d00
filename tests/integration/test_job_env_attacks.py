"""Issue 25's root exploit, as a submitter would try it: a job's environment, working
directory and files must never reach a process that runs as root.

Before the fix, ``environment = "LD_PRELOAD=/tmp/x/evil.so"`` in an ordinary vanilla job
made the startd's launcher (a root helper, dynamically linked, started with the job's
environment in the job's sandbox) load the library as uid 0. Each test gives the
payload (tests/integration/payloads.py) to a job through one channel and reads its log:
the payload ran as the job's user (nobody: root's jobs run as nobody) or not at all,
never as root. The last test looks at the mechanism itself: the keeper that waits for a
job has roost's environment and working directory, not the job's.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import payloads
import pytest
from poolkit import PoolHandle, wait_until

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a root-run pool: jobs switch to their users")

# the variables a submitter could aim at a privileged process, and what a loader or
# interpreter would do with them
PYTHON_VARS = ("PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT")


@pytest.fixture(scope="module")
def evil() -> Iterator[payloads.Payloads]:
    where = Path(tempfile.mkdtemp(prefix="roost-evil-", dir="/tmp"))
    try:
        got = payloads.build(where)
        if got is None:
            pytest.skip("no C compiler to build the payload library")
        yield got
    finally:
        subprocess.run(["rm", "-rf", str(where)], check=False)


@pytest.fixture
def log(evil: payloads.Payloads) -> payloads.Payloads:
    evil.clear()
    return evil


def _hostile_env(evil: payloads.Payloads, library: str | None = None) -> dict[str, str]:
    lib = library or str(evil.library)
    py = str(evil.python_dir)
    return {
        "LD_PRELOAD": lib, "LD_AUDIT": lib, "LD_LIBRARY_PATH": str(evil.dir),
        "GCONV_PATH": str(evil.dir), "PYTHONPATH": py, "PYTHONSTARTUP": f"{py}/startup.py",
        "PYTHONHOME": py, "PYTHONUSERBASE": py, "PYTHONINSPECT": "1",
    }


def _env_line(env: dict[str, str]) -> str:
    return 'environment = "' + " ".join(f"{k}={v}" for k, v in env.items()) + '"'


def _run(pool: PoolHandle, jobdir: Path, text: str, timeout: float = 60) -> dict:
    result = pool.submit(text, jobdir)
    jid = f"{result.cluster}.0"
    ad = pool.wait_for(jid, lambda j: j.get("JobStatus") in (4, 5), timeout=timeout, what="completed or held")
    return ad


def _assert_job_user_only(evil: payloads.Payloads, ran: bool = True) -> None:
    assert evil.as_root() == [], "the payload ran as root:\n" + "\n".join(evil.as_root())
    if ran:
        assert NOBODY in evil.uids(), f"the payload never ran as the job's user: {evil.lines()}"


@pytest.mark.parametrize("var", ["LD_PRELOAD", "LD_AUDIT"])
def test_a_library_named_in_environment_runs_only_as_the_job(pool: PoolHandle, jobdir: Path,
                                                               log: payloads.Payloads, var: str) -> None:
    ad = _run(pool, jobdir, f"""
        executable = /bin/true
        transfer_executable = false
        environment = "{var}={log.library}"
        log = job.log
        queue
    """)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    _assert_job_user_only(log)


def test_every_hostile_variable_at_once_and_the_job_still_runs(pool: PoolHandle, jobdir: Path,
                                                                log: payloads.Payloads) -> None:
    ad = _run(pool, jobdir, f"""
        executable = /bin/sh
        arguments = "-c 'echo ran > out.txt'"
        transfer_executable = false
        should_transfer_files = yes
        transfer_output_files = out.txt
        {_env_line(_hostile_env(log))}
        queue
    """)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    assert (jobdir / "out.txt").read_text() == "ran\n"
    _assert_job_user_only(log)


def test_a_transferred_library_named_relative_to_the_sandbox(pool: PoolHandle, jobdir: Path,
                                                              log: payloads.Payloads) -> None:
    """``./evil.so`` shipped with the job: relative to the working directory, which was
    the sandbox for the root launcher too."""
    ad = _run(pool, jobdir, f"""
        executable = /bin/true
        transfer_executable = false
        should_transfer_files = yes
        transfer_input_files = {log.library}
        environment = "LD_PRELOAD=./evil.so LD_AUDIT=./evil.so"
        queue
    """)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    _assert_job_user_only(log)


def test_getenv_brings_the_submitters_loader_variables(pool: PoolHandle, jobdir: Path,
                                                       log: payloads.Payloads) -> None:
    """``getenv = true``: the variables come from the submitter's own environment (set
    here for the submission only; this process's loader has long run)."""
    saved = dict(os.environ)
    os.environ.update(_hostile_env(log))
    try:
        result = pool.submit("executable = /bin/true\ntransfer_executable = false\ngetenv = true\nqueue\n",
                             jobdir)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    ad = pool.wait_for(f"{result.cluster}.0", lambda j: j.get("JobStatus") in (4, 5), what="completed")
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    _assert_job_user_only(log)


def test_local_universe_applies_the_environment_after_the_switch(pool: PoolHandle, jobdir: Path,
                                                                 log: payloads.Payloads) -> None:
    ad = _run(pool, jobdir, f"""
        universe = local
        executable = /bin/true
        {_env_line(_hostile_env(log))}
        queue
    """)
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    _assert_job_user_only(log)


def test_a_dag_managers_environment_reaches_only_the_owners_processes(pool: PoolHandle, jobdir: Path,
                                                                      log: payloads.Payloads) -> None:
    """DAGMan's manager is a scheduler-universe job the schedd starts as root: the DAG's
    ``ENV SET`` (and getenv's PYTHONPATH) apply to the owner's side only (its PRE
    script runs with them, as nobody)."""
    # a PRE script in Python: PYTHONPATH's sitecustomize runs in it, as the owner (no
    # PYTHONHOME or PYTHONINSPECT here: those would stop any Python the owner starts)
    env = {k: v for k, v in _hostile_env(log).items() if k not in ("PYTHONHOME", "PYTHONINSPECT")}
    if not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("no /usr/bin/python3 for the PRE script")
    (jobdir / "node.sub").write_text("executable = /bin/true\ntransfer_executable = false\nqueue\n")
    (jobdir / "env.dag").write_text(
        "JOB A node.sub\nSCRIPT PRE A /usr/bin/python3 -c pass\n"
        "ENV SET " + ";".join(f"{k}={v}" for k, v in env.items()) + "\n")
    done = pool.roost("submit_dag", "env.dag", cwd=jobdir)
    assert done.returncode == 0, done.stderr
    cluster = re.search(r"submitted to cluster (\d+)", done.stdout).group(1)  # type: ignore[union-attr]
    ad = pool.wait_for(f"{cluster}.0", lambda j: j.get("JobStatus") in (4, 5), timeout=90, what="DAG done")
    assert ad["JobStatus"] == 4, ad.get("HoldReason")
    assert (jobdir / "env.dag.dagman.out").exists()
    _assert_job_user_only(log)
    assert any(ln.startswith("py ") for ln in log.lines()), log.lines()  # PYTHONPATH reached the owner's side


def _keeper_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def test_the_root_keeper_has_roosts_environment_not_the_jobs(pool: PoolHandle, jobdir: Path,
                                                             log: payloads.Payloads) -> None:
    """The mechanism: while the job runs, its parent (the root keeper the launcher stays
    as) has a fixed environment and ``/`` as its working directory; the job has its own."""
    env = _hostile_env(log) | {"ROOST_MARK": "job-env-marker"}
    result = pool.submit(f"""
        executable = /bin/sleep
        arguments = 60
        transfer_executable = false
        coresize = 12345
        {_env_line(env)}
        queue
    """, jobdir)
    jid = f"{result.cluster}.0"
    try:
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, what="running")
        pids: list[int] = []

        def found() -> bool:
            pids[:] = [int(p) for p in os.listdir("/proc") if p.isdigit() and _is_marked(int(p))]
            return bool(pids)

        wait_until(found, 20, "the job's process")
        job = pids[0]
        assert os.stat(f"/proc/{job}").st_uid == NOBODY
        keeper = _keeper_of(job)
        if os.stat(f"/proc/{keeper}").st_uid != 0:
            pytest.skip("no launcher helper here (no C compiler): the job is the startd's own child")
        keeper_env = Path(f"/proc/{keeper}/environ").read_bytes().split(b"\0")
        leaked = [e for e in keeper_env if e.split(b"=", 1)[0].decode() in env]
        assert leaked == [], f"the root keeper got the job's environment: {leaked}"
        assert os.readlink(f"/proc/{keeper}/cwd") == "/"
        assert "12345" not in Path(f"/proc/{keeper}/limits").read_text()
        assert "12345" in Path(f"/proc/{job}/limits").read_text()  # coresize reached the job itself
    finally:
        pool.roost("rm", jid)
    _assert_job_user_only(log, ran=False)


def _is_marked(pid: int) -> bool:
    try:
        return b"ROOST_MARK=job-env-marker" in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


def test_ssh_to_job_starts_its_shell_as_the_job(pool: PoolHandle, jobdir: Path, log: payloads.Payloads) -> None:
    """condor_ssh_to_job's shell takes the job's environment: through the same launcher."""
    result = pool.submit(f"""
        executable = /bin/sleep
        arguments = 60
        transfer_executable = false
        environment = "LD_PRELOAD={log.library}"
        queue
    """, jobdir)
    jid = f"{result.cluster}.0"
    try:
        pool.wait_for(jid, lambda j: j.get("JobStatus") == 2, what="running")
        log.clear()
        done = pool.roost("ssh_to_job", jid, "id -u", timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(NOBODY)
    finally:
        pool.roost("rm", jid)
    _assert_job_user_only(log)
