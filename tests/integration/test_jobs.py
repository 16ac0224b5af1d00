"""Jobs through a real personal pool: their life, files, exit codes, policies, universes.

Each test submits through the Python API (as ``roost submit`` does), waits for
the jobs to leave the queue, then checks what a user would look at: output
files, the event log (read with HTCondor's own ``htcondor2.JobEventLog``),
and the job's ad in history.
"""

from __future__ import annotations

import stat
from pathlib import Path

import htcondor2
import pytest
from poolkit import PoolHandle


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _events(log: Path) -> list[htcondor2.JobEvent]:
    return list(htcondor2.JobEventLog(str(log)).events(stop_after=0))


def _types(events: list[htcondor2.JobEvent], proc: int | None = None) -> list[htcondor2.JobEventType]:
    return [e.type for e in events if proc is None or e.proc == proc]


def test_a_job_runs_from_submit_to_history(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit(
        "executable = /bin/echo\narguments = hello $(Process)\n"
        "output = out.$(Process)\nerror = err.$(Process)\nlog = job.log\nqueue 2\n",
        tmp_path,
    )
    assert r.num_procs == 2
    done = pool.wait(r.job_ids(), timeout=60)
    assert done["done"] == done["total"] == 2
    for p in range(2):
        assert (tmp_path / f"out.{p}").read_text() == f"hello {p}\n"
        assert (tmp_path / f"err.{p}").read_text() == ""
    events = _events(tmp_path / "job.log")
    for p in range(2):
        kinds = _types(events, p)
        assert kinds[0] == htcondor2.JobEventType.SUBMIT
        assert htcondor2.JobEventType.EXECUTE in kinds
        assert kinds[-1] == htcondor2.JobEventType.JOB_TERMINATED
        term = [e for e in events if e.proc == p and e.type == htcondor2.JobEventType.JOB_TERMINATED][0]
        assert term["TerminatedNormally"] is True and term["ReturnValue"] == 0
        assert term.cluster == r.cluster
    ad = pool.job(f"{r.cluster}.0")
    assert ad is not None and ad["JobStatus"] == 4 and ad["ExitCode"] == 0
    # gone from the queue, listed by history
    assert pool.schedd().query_objs(ids=[str(r.cluster)]) == []
    hist = pool.roost("history", str(r.cluster), check=True).stdout
    assert f"{r.cluster}.0" in hist and f"{r.cluster}.1" in hist


def test_input_and_output_files_are_transferred(pool: PoolHandle, tmp_path: Path) -> None:
    _script(tmp_path / "square.sh", 'read n < input.txt\necho $((n * n)) > result.txt\necho done\n')
    (tmp_path / "input.txt").write_text("12\n")
    r = pool.submit(
        "executable = square.sh\nshould_transfer_files = YES\nwhen_to_transfer_output = ON_EXIT\n"
        "transfer_input_files = input.txt\ntransfer_output_files = result.txt\n"
        "output = square.out\nlog = square.log\nqueue\n",
        tmp_path,
    )
    pool.wait(r.job_ids(), timeout=60)
    assert (tmp_path / "result.txt").read_text() == "144\n"
    assert (tmp_path / "square.out").read_text() == "done\n"
    ad = pool.job(f"{r.cluster}.0")
    assert ad is not None and ad["ExitCode"] == 0


def test_initialdir_and_output_remaps(pool: PoolHandle, tmp_path: Path) -> None:
    run = tmp_path / "run1"
    run.mkdir()
    _script(tmp_path / "mk.sh", "echo made > product.dat\n")
    r = pool.submit(
        f"executable = {tmp_path}/mk.sh\ninitialdir = run1\nshould_transfer_files = YES\n"
        "transfer_output_remaps = \"product.dat = renamed.dat\"\nlog = mk.log\nqueue\n",
        tmp_path,
    )
    pool.wait(r.job_ids(), timeout=60)
    assert (run / "renamed.dat").read_text() == "made\n"
    assert (run / "mk.log").exists()


def test_exit_codes_and_signals_are_reported(pool: PoolHandle, tmp_path: Path) -> None:
    _script(tmp_path / "exit3.sh", "exit 3\n")
    _script(tmp_path / "killself.sh", "kill -9 $$\n")
    r1 = pool.submit("executable = exit3.sh\nlog = codes.log\nqueue\n", tmp_path)
    r2 = pool.submit("executable = killself.sh\nlog = codes.log\nqueue\n", tmp_path)
    pool.wait([*r1.job_ids(), *r2.job_ids()], timeout=60)
    a1 = pool.job(f"{r1.cluster}.0")
    a2 = pool.job(f"{r2.cluster}.0")
    assert a1 is not None and a1["ExitCode"] == 3 and a1.get("ExitBySignal") is False
    assert a2 is not None and a2["ExitBySignal"] is True and a2["ExitSignal"] == 9
    events = _events(tmp_path / "codes.log")
    terms = {e.cluster: e for e in events if e.type == htcondor2.JobEventType.JOB_TERMINATED}
    assert terms[r1.cluster]["ReturnValue"] == 3
    assert terms[r2.cluster]["TerminatedNormally"] is False
    assert terms[r2.cluster]["TerminatedBySignal"] == 9


def test_on_exit_remove_reruns_until_success(pool: PoolHandle, tmp_path: Path, jobdir: Path) -> None:
    counter = jobdir / "count"
    _script(tmp_path / "flaky.sh", f'n=$(cat {counter} 2>/dev/null || echo 0)\nn=$((n + 1))\n'
                                   f'echo $n > {counter}\n[ $n -ge 3 ]\n')
    r = pool.submit("executable = flaky.sh\non_exit_remove = ExitCode == 0\nlog = flaky.log\nqueue\n", tmp_path)
    pool.wait(r.job_ids(), timeout=60)
    assert counter.read_text() == "3\n"
    ad = pool.job(f"{r.cluster}.0")
    assert ad is not None and ad["ExitCode"] == 0 and ad["NumJobStarts"] == 3


def test_max_retries_gives_up(pool: PoolHandle, tmp_path: Path, jobdir: Path) -> None:
    counter = jobdir / "tries"
    _script(tmp_path / "fail.sh", f"echo x >> {counter}\nexit 1\n")
    r = pool.submit("executable = fail.sh\nmax_retries = 2\nlog = fail.log\nqueue\n", tmp_path)
    pool.wait(r.job_ids(), timeout=60)
    assert counter.read_text().count("x") == 3  # the first run and two retries
    ad = pool.job(f"{r.cluster}.0")
    assert ad is not None and ad["ExitCode"] == 1 and ad["JobStatus"] == 4


def test_periodic_hold_release_and_remove(pool: PoolHandle, tmp_path: Path) -> None:
    # Held once it has run a second; released after its first run only; removed once
    # held after its second run.
    r = pool.submit(
        "executable = /bin/sleep\narguments = 60\nlog = periodic.log\n"
        "periodic_hold = JobStatus == 2 && time() - EnteredCurrentStatus >= 1\n"
        "periodic_release = NumJobStarts < 2\n"
        "periodic_remove = JobStatus == 5 && NumJobStarts >= 2\nqueue\n",
        tmp_path,
    )
    pool.wait(r.job_ids(), timeout=90)
    ad = pool.job(f"{r.cluster}.0")
    assert ad is not None and ad["JobStatus"] == 3 and ad["NumJobStarts"] == 2
    kinds = _types(_events(tmp_path / "periodic.log"))
    assert kinds.count(htcondor2.JobEventType.JOB_HELD) == 2
    assert kinds.count(htcondor2.JobEventType.JOB_RELEASED) == 1
    assert kinds[-1] == htcondor2.JobEventType.JOB_ABORTED


def test_local_universe_runs_on_the_submit_side(pool: PoolHandle, jobdir: Path) -> None:
    # A local job runs in its Iwd as its owner (nobody for root): not in pytest's private tmp_path.
    r = pool.submit("universe = local\nexecutable = /bin/echo\narguments = local hello\n"
                    "output = local.out\nlog = local.log\nqueue\n", jobdir)
    pool.wait(r.job_ids(), timeout=60)
    assert (jobdir / "local.out").read_text() == "local hello\n"
    kinds = _types(_events(jobdir / "local.log"))
    assert kinds[0] == htcondor2.JobEventType.SUBMIT and kinds[-1] == htcondor2.JobEventType.JOB_TERMINATED


@pytest.mark.parametrize("universe", ["vanilla", "local"])
def test_an_old_syntax_env_reaches_the_job(pool: PoolHandle, jobdir: Path, universe: str) -> None:
    """``env = A=1;B=2`` makes ``Env``/``EnvDelim`` (as condor_submit), not ``Environment``:
    the starter (vanilla) and the schedd (local) both give it to the job."""
    r = pool.submit(f"universe = {universe}\nexecutable = /bin/sh\ntransfer_executable = false\n"
                    "arguments = \"-c 'echo $GREETING, $WHO'\"\nenv = GREETING=hello;WHO=old syntax\n"
                    f"output = env.{universe}.out\nqueue\n", jobdir)
    pool.wait(r.job_ids(), timeout=60)
    assert (jobdir / f"env.{universe}.out").read_text() == "hello, old syntax\n"
    ad = pool.job(r.job_ids()[0])
    assert ad is not None and ad["Env"] == "GREETING=hello;WHO=old syntax" and "Environment" not in ad


@pytest.mark.parametrize("n", [40])
def test_many_short_jobs_all_finish(pool: PoolHandle, tmp_path: Path, n: int) -> None:
    r = pool.submit(f"executable = /bin/true\nlog = many.log\nqueue {n}\n", tmp_path)
    got = pool.wait(r.job_ids(), timeout=120)
    assert got["done"] == n
    terms = [e for e in _events(tmp_path / "many.log") if e.type == htcondor2.JobEventType.JOB_TERMINATED]
    assert sorted(e.proc for e in terms) == list(range(n))


def test_jobs_one_after_another_on_an_idle_pool_never_wait_for_the_periodic_cycle(
    pool: PoolHandle, tmp_path: Path
) -> None:
    """Each short job claims, runs and releases a piece of the partitionable slot before
    the next is submitted, leaving an ad identical to the one matched against. The
    negotiator must still see its promise kept (it once withheld the slot until the
    60 s periodic cycle)."""
    for i in range(5):
        r = pool.submit(f"executable = /bin/true\nlog = seq{i}.log\nqueue\n", tmp_path)
        got = pool.wait(r.job_ids(), timeout=15)
        assert got["done"] == 1, f"job {i} still waiting after 15 s: {got}"


def test_a_deleted_user_log_is_written_again(pool: PoolHandle, tmp_path: Path) -> None:
    r = pool.submit("executable = /bin/true\nlog = again.log\nqueue\n", tmp_path)
    assert pool.wait(r.job_ids(), timeout=60)["done"] == 1
    (tmp_path / "again.log").unlink()
    r = pool.submit("executable = /bin/true\nlog = again.log\nqueue\n", tmp_path)
    assert pool.wait(r.job_ids(), timeout=60)["done"] == 1
    events = _events(tmp_path / "again.log")
    assert {e.cluster for e in events} == {r.cluster}
    assert _types(events)[0] == htcondor2.JobEventType.SUBMIT
    assert _types(events)[-1] == htcondor2.JobEventType.JOB_TERMINATED


def test_an_executable_that_cannot_be_executed_holds_the_job_with_code_6(pool: PoolHandle, tmp_path: Path) -> None:
    """A program without execute permission is the job's fault: held (HTCondor's
    FailedToCreateProcess, code 6, with its "Failed to execute" words), not run as an
    exit of 126 and not requeued as the machine's."""
    plain = tmp_path / "plain.sh"
    plain.write_text("#!/bin/sh\necho never\n")
    plain.chmod(0o644)
    r = pool.submit(f"executable = {plain}\ntransfer_executable = false\narguments = a b\nlog = x.log\nqueue\n",
                    tmp_path)
    ad = pool.wait_for(r.job_ids()[0], lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    assert ad["HoldReasonCode"] == 6, ad
    assert ad["HoldReason"].endswith(f"Failed to execute '{plain}' with arguments a b: "
                                     "(errno=13: 'Permission denied')"), ad["HoldReason"]
    assert ad["HoldReason"].startswith("Error from slot"), ad["HoldReason"]
    assert htcondor2.JobEventType.JOB_HELD in _types(_events(tmp_path / "x.log"))
