"""Memory held to request_memory and reported while jobs run (issue 13): a job over its
request is killed by the kernel and held with HTCondor's code 34; the schedd sees a
running job's memory every STARTER_UPDATE_INTERVAL, so periodic_hold on MemoryUsage
fires while it runs; the slot ad says what enforces memory. Disk (held 34/104 over the
slot's Disk) and CPU (request_cpus as a share of a busy core) beside it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from poolkit import PoolHandle, start_pool, stop_pool

from roost.daemons.startd.memlimit import MemoryLimits

PARTITIONABLE = "\nuse FEATURE : PartitionableSlot\n"
HOG = "import time; x = bytearray({mb} << 20); time.sleep({secs})"


@pytest.fixture(scope="module")
def mpool() -> Iterator[PoolHandle]:
    home = Path(tempfile.mkdtemp(prefix="roost-mem-", dir="/tmp"))
    p = start_pool(home, PARTITIONABLE)
    try:
        yield p
    finally:
        stop_pool(p)


def _enforced(pool: PoolHandle) -> str:
    c = pool.collector()
    try:
        ads = c.query_objs("Machine", projection=["MemoryEnforcement"])
    finally:
        c.close()
    return str(ads[0].get("MemoryEnforcement"))


def _job(mb: int, secs: float, extra: str = "") -> str:
    program = HOG.format(mb=mb, secs=secs)
    return f"executable = /usr/bin/python3\narguments = \"-c '{program}'\"\nlog = m.log\n{extra}queue\n"


def test_a_job_over_its_request_is_held_with_code_34(mpool: PoolHandle, jobdir: Path) -> None:
    mechanism = _enforced(mpool)
    if "hard limit" not in mechanism:
        pytest.skip(f"memory is not enforced on this host: {mechanism}")
    r = mpool.submit(_job(400, 1, "request_memory = 64\n"), jobdir)
    ad = mpool.wait_for(r.job_ids()[0], lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    assert ad["HoldReasonCode"] == 34, ad
    # the limit is the job's slot (request_memory, rounded up as partitionable slots do)
    assert "Job has gone over cgroup memory limit of" in ad["HoldReason"], ad["HoldReason"]
    # a job within its request runs to the end
    ok = mpool.submit(_job(20, 0.2, "request_memory = 128\n"), jobdir).job_ids()
    assert mpool.wait(ok, timeout=60)["done"] == 1
    assert mpool.job(ok[0])["ExitCode"] == 0


def test_usage_is_reported_while_the_job_runs_and_periodic_hold_sees_it(mpool: PoolHandle, jobdir: Path) -> None:
    r = mpool.submit(_job(150, 30, "request_memory = 1024\nperiodic_hold = MemoryUsage > 100\n"), jobdir)
    jid = r.job_ids()[0]
    ad = mpool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=40, what="held by periodic_hold")
    # held while it ran (not at its end, 30 s later), on the usage the starter reported
    assert ad["HoldReasonCode"] == 3 and ad["MemoryUsage"] > 100, ad
    assert ad["ResidentSetSize"] > 100 * 1024 and ad["ImageSize"] > ad["ResidentSetSize"], ad
    log = (jobdir / "m.log").read_text()
    assert "Image size of job updated" in log


def test_the_slot_ad_says_what_enforces_memory(mpool: PoolHandle) -> None:
    mechanism = _enforced(mpool)
    probe = MemoryLimits.detect(str(mpool.home / "execute"), None)
    assert mechanism == probe.mechanism


def test_a_job_over_its_request_disk_is_held_34_104(mpool: PoolHandle, jobdir: Path) -> None:
    """Its sandbox is measured with each usage report (STARTER_UPDATE_INTERVAL, 1 s
    here): over the slot's Disk, it is killed and held, DiskUsage in its ad."""
    c = mpool.collector()
    try:
        [slot] = c.query_objs("Machine", projection=["DiskEnforcement"])[:1]
    finally:
        c.close()
    assert "held (34/104)" in slot["DiskEnforcement"], slot
    text = ("executable = /bin/sh\narguments = \"-c 'dd if=/dev/zero of=big bs=1M count=60 2>/dev/null; sleep 30'\"\n"
            "should_transfer_files = YES\nrequest_disk = 4096\nlog = d.log\n"
            # not on a claim an earlier job of this module left with more disk (claim reuse
            # serves the same submitter only)
            "accounting_group = disk\nqueue\n")
    jid = mpool.submit(text, jobdir).job_ids()[0]
    ad = mpool.wait_for(jid, lambda j: j.get("JobStatus") == 5, timeout=60, what="held")
    assert (ad["HoldReasonCode"], ad["HoldReasonSubCode"]) == (34, 104), ad
    assert "exceeded its allocated disk" in ad["HoldReason"] and "request_disk" in ad["HoldReason"]
    assert ad["DiskUsage"] >= 60 * 1024, ad
    assert ad["NumHoldsByReason"] == {"JobOutOfResources": 1}


SPIN = "import time; t = time.time() + 3\nwhile time.time() < t: pass"


def test_request_cpus_is_a_share_of_a_busy_cpu(mpool: PoolHandle, jobdir: Path) -> None:
    """Two jobs spinning on the same core: the one that asked for 3 CPUs gets about 3
    times the CPU time of the one that asked for 1 (cgroup cpu shares)."""
    c = mpool.collector()
    try:
        [slot] = c.query_objs("Machine", projection=["CpuEnforcement"])[:1]
    finally:
        c.close()
    if str(slot.get("CpuEnforcement", "")).startswith("none"):
        pytest.skip(f"CPU is not shared out on this host: {slot}")
    (jobdir / "spin.py").write_text(SPIN)
    text = ("executable = /usr/bin/taskset\narguments = -c 0 /usr/bin/python3 spin.py\n"
            "should_transfer_files = YES\ntransfer_input_files = spin.py\nlog = c.log\n"
            "request_cpus = 3\nqueue\nrequest_cpus = 1\nqueue\n")
    ids = mpool.submit(text, jobdir).job_ids()
    assert mpool.wait(ids, timeout=60)["done"] == 2
    big, small = (mpool.job(j) for j in ids)
    assert big is not None and small is not None
    ratio = big["RemoteUserCpu"] / max(small["RemoteUserCpu"], 0.01)
    assert ratio > 2.0, (big["RemoteUserCpu"], small["RemoteUserCpu"])


def test_a_core_dump_comes_back_with_the_job(mpool: PoolHandle, jobdir: Path) -> None:
    """coresize lets the job dump core (RLIMIT_CORE); the core file is a new file of its
    sandbox, so it comes back when transfer_output_files does not leave it out, and the
    job ad says JobCoreDumped."""
    import os

    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"this host's cores go elsewhere (core_pattern = {pattern})")
    text = ("executable = /usr/bin/python3\narguments = \"-c 'import os; os.abort()'\"\n"
            "should_transfer_files = YES\ncoresize = 500000000\nlog = core.log\nqueue\n")
    jid = mpool.submit(text, jobdir).job_ids()[0]
    assert mpool.wait([jid], timeout=60)["done"] == 1
    ad = mpool.job(jid)
    assert ad is not None and ad["ExitBySignal"] is True and ad["ExitSignal"] == 6, ad
    assert ad["JobCoreDumped"] is True, ad
    cores = [p for p in os.listdir(jobdir) if p == "core" or p.startswith("core.")]
    assert cores and (jobdir / cores[0]).stat().st_size > 0, os.listdir(jobdir)
