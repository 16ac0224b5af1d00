"""roost.futures against a real pool: calls run as jobs of the system Python (readable by
nobody, whom root's jobs run as), results and exceptions come back through the user
log, map batches 10,000 calls into one cluster, cancelling removes jobs.

This module's functions are pickled by value (``register_pickle_by_value``): the
execute host cannot import a test module, as it could not import most users' scripts.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import os
import sys
import time
from pathlib import Path

import cloudpickle
import pytest
from poolkit import PoolHandle, wait_until

from roost.futures import Executor, JobError, JobHeldError, RemoteTraceback
from roost.submit import SubmitError

cloudpickle.register_pickle_by_value(sys.modules[__name__])

PYTHON = "/usr/bin/python3"  # Debian's, the venv's minor version; /root/.pyenv is not nobody's
TIMEOUT = 120

pytestmark = pytest.mark.skipif(not os.access(PYTHON, os.X_OK), reason=f"{PYTHON} is needed for the jobs")


def add(x: int, y: int = 0) -> int:
    return x + y


def whoami() -> tuple[str, int]:
    return os.getcwd(), os.getuid()


def fails(x: int) -> None:
    raise KeyError(f"no such key {x}")


class ModelDiverged(Exception):
    """A class of this module, pickled by value there and back: it comes back as itself."""


def diverges(step: int) -> None:
    raise ModelDiverged(f"diverged at step {step}")


def nap(seconds: float) -> float:
    time.sleep(seconds)  # time is the point: the call's work lasts this long
    return seconds


def first_fails(x: int) -> int:
    if x == 0:
        raise ArithmeticError("the first call fails at once")
    time.sleep(300)  # time is the point: the others run until they are cancelled
    return x


def _gone(pool: PoolHandle, job_ids: list[str]) -> None:
    """Wait until the jobs left the queue; they are in the history as removed (3)."""
    s = pool.schedd()
    try:
        wait_until(lambda: not s.query_objs(ids=job_ids, projection=["JobStatus"]), 30,
                   f"jobs {job_ids} to leave the queue")
        hist = s.history(ids=job_ids, projection=["JobStatus"])
        assert sorted(h["JobStatus"] for h in hist) == [3] * len(job_ids), hist
    finally:
        s.close()


def test_submit_returns_the_result_and_a_call_runs_in_its_sandbox(pool: PoolHandle) -> None:
    with Executor(pool.home, python=PYTHON) as ex:
        f = ex.submit(add, 2, y=40)
        g = ex.submit(lambda s: s.upper(), "closure")
        h = ex.submit(whoami)
        assert f.result(TIMEOUT) == 42 and g.result(TIMEOUT) == "CLOSURE"
        cwd, uid = h.result(TIMEOUT)
        assert cwd != ex.directory and uid == 65534  # root's job runs as nobody, in its sandbox
        assert f.job_id and f.done() and not f.cancelled()
        directory = ex.directory
    assert not os.path.exists(directory)  # cleaned up once the executor shut down


def test_user_modules_travel_as_input_files_or_by_value(pool: PoolHandle, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "rf_shipped"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("def triple(x):\n    return 3 * x\n")
    (tmp_path / "rf_byvalue.py").write_text("K = 4\ndef times_k(x):\n    return K * x\n")
    (tmp_path / "rf_missing.py").write_text("def same(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    shipped, byvalue, missing = (importlib.import_module(m) for m in ("rf_shipped", "rf_byvalue", "rf_missing"))
    try:
        with Executor(pool.home, python=PYTHON, input_files=[str(pkg)], by_value=[byvalue]) as ex:
            f, g, h = ex.submit(shipped.triple, 2), ex.submit(byvalue.times_k, 3), ex.submit(missing.same, 1)
            assert f.result(TIMEOUT) == 6  # by reference, imported from the sandbox
            assert g.result(TIMEOUT) == 12  # by value: nothing of it on the execute host
            with pytest.raises(ModuleNotFoundError, match="rf_missing") as info:
                h.result(TIMEOUT)
            assert "Executor(by_value=[module])" in str(info.value.__cause__)
    finally:
        cloudpickle.unregister_pickle_by_value(byvalue)
        for m in ("rf_shipped", "rf_byvalue", "rf_missing"):
            sys.modules.pop(m, None)


def test_an_exception_comes_back_with_its_traceback(pool: PoolHandle) -> None:
    with Executor(pool.home, python=PYTHON) as ex:
        f = ex.submit(fails, 7)
        with pytest.raises(KeyError, match="no such key 7") as info:
            f.result(TIMEOUT)
        cause = info.value.__cause__
        assert isinstance(cause, RemoteTraceback)
        assert "in fails" in cause.tb and "KeyError: 'no such key 7'" in cause.tb
        assert isinstance(f.exception(), KeyError)
        with pytest.raises(ModelDiverged, match="at step 12"):
            ex.submit(diverges, 12).result(TIMEOUT)


def test_map_over_10000_calls_in_one_cluster(pool: PoolHandle) -> None:
    with Executor(pool.home, python=PYTHON) as ex:
        got = list(ex.map(add, range(10_000), range(0, 20_000, 2), chunksize=500, timeout=300))
        assert got == [3 * i for i in range(10_000)]
        assert len(ex.clusters) == 1
        cluster = ex.clusters[0]
    s = pool.schedd()
    try:
        hist = s.history(f"ClusterId == {cluster}", ["ProcId", "JobStatus", "ExitCode"])
    finally:
        s.close()
    assert sorted(h["ProcId"] for h in hist) == list(range(20))  # 10,000 calls, 500 a job
    assert {(h["JobStatus"], h["ExitCode"]) for h in hist} == {(4, 0)}


def test_cancel_removes_the_job_running_or_idle(pool: PoolHandle) -> None:
    with Executor(pool.home, python=PYTHON) as ex:
        f = ex.submit(nap, 300)
        wait_until(f.running, TIMEOUT, "the call to run")
        assert f.cancel() and f.cancelled() and f.done()
        with pytest.raises(cf.CancelledError):
            f.result(0)
        _gone(pool, [f.job_id])
    with Executor(pool.home, python=PYTHON, submit={"requirements": "false"}) as idle:
        g = idle.submit(nap, 1)
        wait_until(lambda: g.job_id is not None, TIMEOUT, "the call to be submitted")
        assert not g.running() and g.cancel()
        _gone(pool, [g.job_id])
        assert g.cancel() and f.cancel()  # cancelling again is still True


def test_leaving_map_early_cancels_the_rest(pool: PoolHandle) -> None:
    with Executor(pool.home, python=PYTHON) as ex:
        results = ex.map(first_fails, range(4))
        with pytest.raises(ArithmeticError):
            next(results)
        cluster = ex.clusters[0]
    _gone(pool, [f"{cluster}.{p}" for p in (1, 2, 3)])  # the first completed, the rest removed


def test_shutdown_cancel_futures_removes_every_job(pool: PoolHandle) -> None:
    ex = Executor(pool.home, python=PYTHON, submit={"requirements": "false"})
    fs = [ex.submit(add, i) for i in range(5)]
    fs += [ex.submit(nap, 300)]
    wait_until(lambda: all(f.job_id for f in fs), TIMEOUT, "the calls to be submitted")
    ex.shutdown(wait=True, cancel_futures=True)
    assert all(f.cancelled() for f in fs)
    done, not_done = cf.wait(fs, timeout=0)
    assert len(done) == 6 and not not_done  # waiters hear of cancelled futures
    _gone(pool, sorted({f.job_id for f in fs if f.job_id}))
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(add, 1)
    assert not os.path.exists(ex.directory)


def test_a_job_that_cannot_run_fails_its_futures(pool: PoolHandle) -> None:
    with Executor(pool.home, python="/bin/false") as ex:
        f = ex.submit(add, 1)
        with pytest.raises(JobError, match=r"exited with code 1 without a result"):
            f.result(TIMEOUT)
    with Executor(pool.home, python=PYTHON, submit={"requirements": "((("}) as ex:
        k = ex.submit(add, 1)  # the batch cannot be submitted: its futures say why
        with pytest.raises(SubmitError, match="requirements"):
            k.result(TIMEOUT)
    with Executor(pool.home, python="/nonexistent/python3") as ex:
        g = ex.submit(add, 1)
        with pytest.raises(JobHeldError) as info:
            g.result(TIMEOUT)
        _gone(pool, [info.value.job_id])  # the executor removed the held job


def test_map_of_10000_single_calls_is_one_cluster_removed_at_once(pool: PoolHandle) -> None:
    """chunksize=1: 10,000 jobs in one cluster (kept idle here: running them is the
    pool's throughput, measured by bench/futures_bench.py); shutdown removes them all."""
    ex = Executor(pool.home, python=PYTHON, submit={"requirements": "false"})
    results = ex.map(abs, range(-10_000, 0))
    wait_until(lambda: len(ex.clusters) == 1 and len(ex._jobs) == 10_000, 300, "10,000 jobs submitted")
    cluster = ex.clusters[0]
    s = pool.schedd()
    try:
        assert s.totals(f"ClusterId == {cluster}")["Idle"] == 10_000
        ex.shutdown(wait=True, cancel_futures=True)
        wait_until(lambda: s.totals(f"ClusterId == {cluster}")["Total"] == 0, 120, "the cluster to leave")
        assert len(s.history(f"ClusterId == {cluster} && JobStatus == 3", ["ProcId"])) == 10_000
    finally:
        s.close()
    with pytest.raises(cf.CancelledError):
        next(results)


def test_a_cancel_while_the_pool_is_down_removes_the_job_when_it_is_back(fresh_pool: PoolHandle) -> None:
    """A removal that fails is retried: a cancelled call never runs on (found by review:
    cancelled while the pool was down, the job ran again once it was up)."""
    pool = fresh_pool
    ex = Executor(pool.home, python=PYTHON, submit={"requirements": "false"})
    f = ex.submit(nap, 1)
    wait_until(lambda: f.job_id is not None, TIMEOUT, "the call to be submitted")
    pool.roost("down", check=True)
    assert f.cancel()  # the removal fails now: no pool
    pool.roost("up", check=True)
    pool.master_pid = int((pool.home / "run" / "master.pid").read_text())
    _gone(pool, [f.job_id])
    ex.shutdown(wait=True)
