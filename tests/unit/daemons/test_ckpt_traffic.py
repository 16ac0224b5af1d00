"""Checkpoint traffic, the daemons' side: the schedd's admission of uploads (futures and
knobs around core.ckptsched), the phases it hands out, the job ad's periodic checkpoint
signal fields and the starter's signal task."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from typing import Any

from roost.classad import ClassAd
from roost.config import Config
from roost.daemons.schedd.ckpt_admission import CheckpointAdmission
from roost.daemons.startd import ckpt_signal
from roost.daemons.startd.jobspec import parse_job


def _config(text: str) -> Config:
    return Config.from_text(text, facts={"DETECTED_CPUS": "2", "DETECTED_MEMORY": "2048",
                                         "FULL_HOSTNAME": "h.example.org", "ROOST_HOME": "/tmp"})


def test_the_knobs_and_their_defaults() -> None:
    a = CheckpointAdmission.from_config(_config(""))
    assert a.sched.max_concurrent == 10 and a.sched.bandwidth == 0 and a.stagger
    a.configure(_config("MAX_CONCURRENT_CHECKPOINT_UPLOADS = 0\nCHECKPOINT_UPLOAD_BANDWIDTH = 50\n"
                        "CHECKPOINT_STAGGER = false\n"))
    assert a.sched.max_concurrent == 0 and a.sched.bandwidth == 50e6 and not a.stagger


def test_uploads_wait_their_turn_and_a_cancelled_wait_leaves_the_queue() -> None:
    async def main() -> None:
        a = CheckpointAdmission(max_concurrent=1)
        first = await a.admit("1.0", "u", 10)
        second = asyncio.ensure_future(a.admit("1.1", "u", 10))
        gone = asyncio.ensure_future(a.admit("1.2", "u", 10))
        third = asyncio.ensure_future(a.admit("1.3", "u", 10))
        await asyncio.sleep(0)
        assert not second.done() and a.sched.queued == 3
        gone.cancel()  # its starter went while it waited
        await asyncio.sleep(0)
        assert a.sched.queued == 2
        first.release(ok=True)
        t2 = await asyncio.wait_for(second, 5)
        assert not third.done()
        t2.release(ok=False)
        t3 = await asyncio.wait_for(third, 5)
        t3.release(ok=True)
        t3.release(ok=True)  # twice: nothing more
        assert a.sched.running == 0 and a.sched.queued == 0

    asyncio.run(main())


class _Cluster:
    def __init__(self, cid: int) -> None:
        self.id = cid


class _Job:
    def __init__(self, cluster: _Cluster, proc: int, ad: dict[str, Any]) -> None:
        self.cluster, self.proc, self.ad = cluster, proc, ad

    @property
    def id(self) -> str:
        return f"{self.cluster.id}.{self.proc}"

    @property
    def key(self) -> tuple[int, int]:
        return (self.cluster.id, self.proc)

    def get(self, attr: str, default: Any = None) -> Any:
        return self.ad.get(attr, default)


def test_running_jobs_of_a_cluster_get_spread_phases() -> None:
    a = CheckpointAdmission()
    c = _Cluster(7)
    want = {"WantCheckpointSignal": True, "CheckpointInterval": 60}
    jobs = [_Job(c, p, want) for p in range(4)]
    running: dict[tuple[int, int], Any] = {}
    got = []
    for j in jobs:
        got.append(a.activation_attrs(j, running.__contains__)["CheckpointStaggerOffset"])  # type: ignore[arg-type]
        running[j.key] = j
    assert got == [0.0, 30.0, 15.0, 45.0]
    del running[jobs[1].key]  # 7.1 ended: its gap goes to the next job
    nxt = _Job(c, 4, want)
    assert a.activation_attrs(nxt, running.__contains__) == {"CheckpointStaggerOffset": 30.0}  # type: ignore[arg-type]
    # another cluster, another interval, no signal wanted, or staggering off: their own or none
    assert a.activation_attrs(_Job(_Cluster(8), 0, want), running.__contains__) == {"CheckpointStaggerOffset": 0.0}  # type: ignore[arg-type]
    assert a.activation_attrs(_Job(c, 9, {"CheckpointInterval": 60}), running.__contains__) == {}  # type: ignore[arg-type]
    a.stagger = False
    assert a.activation_attrs(_Job(c, 10, want), running.__contains__) == {}  # type: ignore[arg-type]


def _ad(**attrs: Any) -> ClassAd:
    return ClassAd({"ClusterId": 3, "ProcId": 1, "Cmd": "/bin/true", **attrs})


def test_the_job_ad_asks_for_the_signal() -> None:
    spec = parse_job(_ad(WantCheckpointSignal=True, CheckpointSig="SIGUSR2", CheckpointInterval=30,
                         CheckpointStaggerOffset=12.5), "d")
    assert spec.checkpoint_signal == signal.SIGUSR2 and spec.checkpoint_interval == 30.0
    assert spec.checkpoint_stagger_offset == 12.5
    # no CheckpointSig: kill_sig, as HTCondor; no offset: not staggered
    spec = parse_job(_ad(WantCheckpointSignal=True, KillSig="SIGINT", CheckpointInterval=30), "d")
    assert spec.checkpoint_signal == signal.SIGINT and spec.checkpoint_stagger_offset is None
    # an interval without WantCheckpointSignal, or the signal without an interval: none
    assert parse_job(_ad(CheckpointInterval=30), "d").checkpoint_signal is None
    assert parse_job(_ad(WantCheckpointSignal=True), "d").checkpoint_signal is None


TRAPS = """
import signal, sys, time
got = []
signal.signal(signal.SIGUSR2, lambda *_: got.append(1))
print("ready", flush=True)
while len(got) < 2:
    time.sleep(0.01)
print("two", flush=True)
"""


def test_the_signal_task_signals_the_running_job_and_skips_when_it_is_not() -> None:
    proc = subprocess.Popen([sys.executable, "-c", TRAPS], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        spec = parse_job(_ad(WantCheckpointSignal=True, CheckpointSig="SIGUSR2", CheckpointInterval=0.2), "d")
        skipped = {"n": 0}

        def pid() -> int | None:
            if skipped["n"] < 1:  # the first tick finds it between runs
                skipped["n"] += 1
                return None
            return proc.pid

        async def main() -> None:
            task = ckpt_signal.start(spec, pid)
            assert task is not None
            try:
                deadline = time.monotonic() + 30
                while proc.poll() is None and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
            finally:
                task.cancel()

        asyncio.run(main())
        assert proc.wait(5) == 0 and proc.stdout.read() == "two\n"
        assert skipped["n"] == 1
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def test_no_task_without_the_signal() -> None:
    spec = parse_job(_ad(CheckpointInterval=1), "d")
    assert ckpt_signal.start(spec, lambda: None) is None
