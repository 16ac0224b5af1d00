"""The parallel universe's node ads, node placement and dedicated requests (issue 16):
pure pieces of the schedd's dedicated scheduler, checked without a pool."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from roost.classad import ClassAd
from roost.daemons.schedd.dedicated import _assign, is_dedicated
from roost.daemons.schedd.jobqueue import Cluster, Job
from roost.daemons.schedd.parallel import PLACEHOLDER, host_of, node_ad
from roost.net.adwire import obj_to_ad
from roost.submit.arglist import split_v2_raw


def _job(cid: int, proc: int, ad: dict[str, Any], diff: dict[str, Any] | None = None) -> Job:
    cluster = Cluster(cid, "alice", ad)
    job = Job(cluster, proc, 1, diff)
    cluster.procs[proc] = job
    return job


def test_node_ad_fills_in_the_node_and_its_environment() -> None:
    ad = {"Out": f"out.{PLACEHOLDER}", "Args": f"-n {PLACEHOLDER} x", "Environment": "A=1 B='x y'", "Cmd": "/bin/sh"}
    got = node_ad(ad, 2, 4, spool_dir="/spool/parallel/7", host="10.0.0.5", scheduler="DedicatedScheduler@s",
                  secret="ab" * 32, run_id="r1", hosts=["10.0.0.4", "10.0.0.5"])
    assert got["Out"] == "out.2" and got["Args"] == "-n 2 x" and got["Node"] == 2 and got["Cmd"] == "/bin/sh"
    assert got["Scheduler"] == "DedicatedScheduler@s"  # what a dedicated slot's RANK looks for
    env = dict(w.split("=", 1) for w in split_v2_raw(got["Environment"]))
    assert env == {"A": "1", "B": "x y", "_CONDOR_PROCNO": "2", "_CONDOR_NPROCS": "4",
                   "_CONDOR_REMOTE_SPOOL_DIR": "/spool/parallel/7", "ROOST_NODE_HOST": "10.0.0.5",
                   "_ROOST_PARALLEL_SECRET": "ab" * 32, "_ROOST_PARALLEL_RUN": "r1",
                   "_ROOST_PARALLEL_HOSTS": "10.0.0.4 10.0.0.5"}
    assert ad["Out"] == f"out.{PLACEHOLDER}"  # the proc's own ad is left as it was


def test_node_ad_without_an_environment() -> None:
    got = node_ad({}, 0, 1, spool_dir="/s p", host="")
    env = dict(w.split("=", 1) for w in split_v2_raw(got["Environment"]))
    assert env["_CONDOR_REMOTE_SPOOL_DIR"] == "/s p" and env["_CONDOR_NPROCS"] == "1"


def test_node_ad_of_an_old_syntax_env() -> None:
    # `env = A=1;B=x y` makes Env/EnvDelim (as condor_submit); the node gets one Environment
    got = node_ad({"Env": "A=1;B=x y", "EnvDelim": ";"}, 1, 2, spool_dir="/s", host="h")
    env = dict(w.split("=", 1) for w in split_v2_raw(got["Environment"]))
    assert env["A"] == "1" and env["B"] == "x y" and env["_CONDOR_PROCNO"] == "1"
    assert "Env" not in got and "EnvDelim" not in got


def test_host_of_an_address() -> None:
    assert host_of("10.1.2.3:9618") == "10.1.2.3"
    assert host_of("[fd00::2]:9618") == "fd00::2"
    assert host_of("/run/roost/startd.sock") == ""


def test_which_jobs_are_dedicated() -> None:
    assert is_dedicated(_job(1, 0, {"JobUniverse": 11}))
    assert is_dedicated(_job(2, 0, {"JobUniverse": 5, "WantDedicated": True}))
    assert not is_dedicated(_job(3, 0, {"JobUniverse": 5}))


def _slot(name: str, arch: str) -> tuple[str, ClassAd]:
    return name, obj_to_ad({"Name": name, "Arch": arch, "Requirements": True})


def test_multi_executable_procs_each_get_slots_they_match() -> None:
    """Two procs of one job (MPMD): proc 1 needs ARM, proc 0 runs anywhere; the most
    particular proc is placed first, so proc 0 does not take the ARM slot."""
    base = {"JobUniverse": 11, "MaxHosts": 1, "Requirements": True}
    cluster = Cluster(5, "alice", base)
    p0 = Job(cluster, 0, 1, {"MaxHosts": 2})
    p1 = Job(cluster, 1, 1, {"Requirements": "/Expr(TARGET.Arch == \"ARM\")/"})
    cluster.procs.update({0: p0, 1: p1})
    slots = [_slot("s1", "ARM"), _slot("s2", "X86_64"), _slot("s3", "X86_64")]
    got = _assign([p0, p1], slots)
    assert got == [(p0, "s2"), (p0, "s3"), (p1, "s1")]
    assert _assign([p0, p1], [_slot("s1", "X86_64"), _slot("s2", "X86_64"), _slot("s3", "X86_64")]) is None


class _Config:
    def get(self, name: str, default: Any = None) -> Any:
        return default

    def get_float(self, name: str, default: Any = None) -> Any:
        return default

    def get_bool(self, name: str, default: Any = None) -> Any:
        return default


def test_estimates_are_given_or_learned_from_the_owners_runs() -> None:
    from types import SimpleNamespace

    from roost.daemons.schedd.dedicated import DedicatedScheduler

    async def none(_name: str) -> list[dict[str, Any]]:
        return []

    ds = DedicatedScheduler(SimpleNamespace(jobs=None), schedd_name="s", spool="/tmp", config=_Config(),  # type: ignore[arg-type]
                            query_slots=none, reschedule=lambda: None, ads_changed=lambda: None)
    given = _job(1, 0, {"JobUniverse": 11, "EstimatedRuntime": 40})
    plain = _job(2, 0, {"JobUniverse": 11})
    assert ds.estimate([given]) == 40.0
    assert ds.estimate([plain]) is None
    for secs in (10.0, 30.0):
        ds._lengths.setdefault("alice", deque(maxlen=20)).append(secs)
    assert ds.estimate([plain]) is None  # two runs are not yet a history
    ds._lengths["alice"].append(20.0)
    assert ds.estimate([plain]) == pytest.approx(33.0)  # a tenth over the longest
