"""Master-worker jobs on a real personal pool (docs/mw.md): a parameter search run by
worker jobs that the test vacates at random, three ways (the job removed, held and
released, the whole machine vacated); every task's result must be right and reported
once. Then the master's clean-up and its answer to worker jobs that cannot start."""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest
from poolkit import PoolHandle, wait_until

from roost.mw import (
    Master,
    MWError,
    TaskDone,
    TaskRequeued,
    WorkerJoined,
    WorkerLeft,
    WorkersSubmitted,
)
from roost.mw.workerjobs import TAG_ATTR

#: the task module, as a user writes one: the standard library only
SEARCH = '''
import math

def integrate(p):
    """Simpson's rule for the integral over [0, 3] of exp(-b x^2) sin(a x)^2."""
    a, b, n = p["a"], p["b"], p["n"]
    h = 3.0 / n
    s = 0.0
    for i in range(n + 1):
        x = i * h
        w = 1 if i in (0, n) else (4 if i % 2 else 2)
        s += w * math.exp(-b * x * x) * math.sin(a * x) ** 2
    return {"a": a, "b": b, "value": s * h / 3}
'''


def _local() -> Any:
    scope: dict[str, Any] = {}
    exec(SEARCH, scope)
    return scope["integrate"]


def _alive_worker_jobs(pool: PoolHandle, tag: str) -> list[dict[str, Any]]:
    s = pool.schedd()
    try:
        return [a for a in s.query_objs(f'{TAG_ATTR} =?= "{tag}"', ["JobStatus"]) if a["JobStatus"] in (1, 2, 5)]
    finally:
        s.close()


def test_a_search_is_right_while_its_workers_are_vacated_at_random(pool: PoolHandle) -> None:
    grid = [{"a": 0.5 + 0.05 * i, "b": 0.1 + 0.1 * j, "n": 20000} for i in range(30) for j in range(10)]
    rng = random.Random(1)
    vacate_at = {30: "remove", 80: "hold", 130: "machine", 180: "remove", 230: "hold"}
    schedd = pool.schedd()
    with Master("integrate", source=SEARCH, schedd=schedd, workers=4, heartbeat=1.0, poll=0.5) as m:
        ids = m.add_many(grid)
        # the secret reaches the workers as a file, never through the job ad, which
        # anyone who may query the queue reads
        ads = pool.schedd().query_objs(f'{TAG_ATTR} =?= "{m.tag}"')
        assert len(ads) == 4 and m._secret.decode() not in repr(ads)
        live: dict[str, str] = {}  # worker -> its job
        done: Counter[int] = Counter()
        seen: list[Any] = []
        acted: list[str] = []
        for ev in m.events(timeout=50):
            seen.append(ev)
            if isinstance(ev, WorkerJoined):
                live[ev.worker] = ev.job
            elif isinstance(ev, WorkerLeft):
                live.pop(ev.worker, None)
            elif isinstance(ev, TaskDone):
                done[ev.task] += 1
                how = vacate_at.get(sum(done.values()))
                if how and live:
                    job = live[rng.choice(sorted(live))]
                    acted.append(how)
                    if how == "remove":  # the job leaves the queue: the master submits another
                        pool.schedd().act("remove", [job])
                    elif how == "hold":  # the job is killed and back to Idle once released
                        s = pool.schedd()
                        s.act("hold", [job])
                        s.act("release", [job])
                        s.close()
                    else:  # the machine's owner evicts every job: they go back to Idle
                        pool.roost("vacate", check=True)
        # the removed jobs are replaced (the keeper may look only after the last task)
        wait_until(lambda: m.stats()["jobs_replaced"] >= acted.count("remove"), 20, "the removed jobs replaced")
        tag = m.tag
        stats = m.stats()
        results = m.results()
    schedd.close()
    integrate = _local()
    assert set(done) == set(ids) and set(done.values()) == {1}  # every task reported once
    assert results == {t: integrate(p) for t, p in zip(ids, grid)}  # and right, to the last bit
    best = max(results.values(), key=lambda r: r["value"])
    assert math.isclose(best["value"], max(integrate(p)["value"] for p in grid))
    assert len(acted) >= 3 and "machine" in acted, acted
    left = [e for e in seen if isinstance(e, WorkerLeft)]
    assert len(left) >= len(acted) and {e.why for e in left} == {"disconnected"}
    assert any(isinstance(e, TaskRequeued) for e in seen)  # a vacated worker was mid-task
    assert stats["requeued"] == sum(isinstance(e, TaskRequeued) for e in seen)
    assert isinstance(seen[0], WorkersSubmitted) and len(seen[0].jobs) == 4
    # close() removed the worker jobs
    wait_until(lambda: not _alive_worker_jobs(pool, tag), 20, "the worker jobs removed")


def test_worker_jobs_that_cannot_start_stop_the_master_with_the_reason(pool: PoolHandle) -> None:
    schedd = pool.schedd()
    m = Master("integrate", source=SEARCH, schedd=schedd, workers=1, python="/nonexistent/python3",
               poll=0.3, max_failed_starts=2)
    try:
        m.add({"a": 1.0, "b": 1.0, "n": 10})
        with pytest.raises(MWError, match=r"2 worker jobs in a row ended before their worker joined"):
            m.wait(timeout=40)
        assert m.stats()["jobs_submitted"] == 2  # no more after giving up
    finally:
        m.close()
        schedd.close()
