"""The Python API against a real pool: the calls a script written for htcondor2 would make."""

from __future__ import annotations

from pathlib import Path

import pytest
from poolkit import PoolHandle

import roost.api as roost
from roost.classad import ClassAd


def test_submit_a_dict_query_act_and_wait(pool: PoolHandle, tmp_path: Path) -> None:
    schedd = roost.Schedd(pool.home)
    result = schedd.submit({"executable": "/bin/sleep", "arguments": "300", "hold": "true",
                            "initialdir": str(tmp_path)}, count=2)
    assert result.num_procs == 2 and result.job_ids() == [f"{result.cluster}.0", f"{result.cluster}.1"]
    ads = schedd.query(f"ClusterId == {result.cluster}", ["ProcId", "JobStatus", "Cmd"])
    assert all(isinstance(a, ClassAd) for a in ads)
    assert sorted(a["ProcId"] for a in ads) == [0, 1] and {a["JobStatus"] for a in ads} == {5}
    assert schedd.totals(f"ClusterId == {result.cluster}")["Held"] == 2
    got = schedd.act("remove", str(result.cluster), reason="api test")
    assert got["count"] == 2
    assert schedd.wait(result.job_ids(), timeout=30)["done"] == 2
    hist = schedd.history(f"ClusterId == {result.cluster}", ["ProcId", "JobStatus"])
    assert sorted((h["ProcId"], h["JobStatus"]) for h in hist) == [(0, 3), (1, 3)]
    with pytest.raises(ValueError):
        schedd.act("explode", "1")
    with pytest.raises(roost.PoolError):
        schedd.query("(((")
    schedd.close()


def test_wait_times_out(pool: PoolHandle, tmp_path: Path) -> None:
    schedd = roost.Schedd(pool.home)
    r = schedd.submit({"executable": "/bin/sleep", "arguments": "300", "initialdir": str(tmp_path)})
    try:
        with pytest.raises(TimeoutError):
            schedd.wait(r.job_ids(), timeout=0.5)
    finally:
        schedd.act("remove", r.job_ids())


def test_collector_query(pool: PoolHandle) -> None:
    import htcondor2

    c = roost.Collector(pool.home)
    slots = c.query(htcondor2.AdType.Startd, projection=["Name", "State", "Cpus"])
    assert slots and all(isinstance(s, ClassAd) for s in slots)
    assert all(s["Name"].startswith("slot") for s in slots)
    schedds = c.query("Scheduler", 'MyType == "Scheduler"')
    assert len(schedds) == 1 and schedds[0]["MyAddress"]


def test_no_pool_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(roost.NoPoolError, match="no pool is running"):
        roost.Schedd(tmp_path).totals()
