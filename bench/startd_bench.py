"""Speed of the startd alone: a real startd process, 8 claims, /bin/true jobs back to back.

Runnable on its own::

    .venv/bin/python bench/startd_bench.py [--jobs N] [--runs N]

A test-side peer (tests/unit/daemons/startd_peer.py) plays schedd and collector
in this process and activates the next job on a claim as soon as the previous
one's exit report arrives (claim reuse, as the schedd does). Figures, medians
of the runs:

- ``startd_cpu_per_job``: the startd process's user+system CPU per job
  (reference: HTCondor 25's startd, ~20 ms per job, /work/shared/anchors);
- ``startd_jobs_per_s``: jobs per second through this one startd (informational:
  the peer shares the CPUs).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.daemons.startd_peer import job_ad, pool, slot_ads  # noqa: E402

HTCONDOR_STARTD_MS_PER_JOB = 20.0
SLOTS = 8


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(n: int, transfer: str) -> tuple[float, float]:
    async with pool(f"NUM_CPUS = {SLOTS}\nMEMORY = 8192\n") as (peer, startd, client):
        p = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
        pslot_claim = peer.private[p["Name"]]["ClaimId"]
        fsd = p["FileSystemDomain"]
        ads = [
            job_ad(f"executable = /bin/true\ntransfer_executable = false\n"
                   f"should_transfer_files = {transfer}\n+FileSystemDomain = \"{fsd}\"\nqueue\n",
                   cluster=i + 1)
            for i in range(n)
        ]
        claims = []
        for _ in range(SLOTS):
            got = await client.call("REQUEST_CLAIM", claim_id=pslot_claim, job_ad=ads[0],
                                    schedd_address=peer.address, lease=300)
            claims.append(got["claim_id"])
        clients = [startd.client() for _ in range(SLOTS)]  # with the daemon token: ACTIVATE_CLAIM is DAEMON
        done: dict[int, asyncio.Event] = {}
        next_job = 0

        async def pump() -> None:
            while True:
                update = await peer.updates.get()
                if update["state"] != "running":
                    done[int(update["job"].split(".")[0])].set()

        async def runner(k: int) -> None:
            nonlocal next_job
            while next_job < n:
                ad = ads[next_job]
                next_job += 1
                event = done[ad["ClusterId"]] = asyncio.Event()
                await clients[k].call("ACTIVATE_CLAIM", claim_id=claims[k], job_ad=ad)
                await event.wait()

        pumping = asyncio.ensure_future(pump())
        assert startd.proc is not None
        t0, c0 = time.perf_counter(), cpu_seconds(startd.proc.pid)
        await asyncio.gather(*(runner(k) for k in range(SLOTS)))
        wall, cpu = time.perf_counter() - t0, cpu_seconds(startd.proc.pid) - c0
        pumping.cancel()
        for c in clients:
            await c.close()
        return cpu / n * 1000.0, n / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for transfer in ("NO", "YES"):
        results = [asyncio.run(one_run(args.jobs, transfer)) for _ in range(args.runs)]
        ms = statistics.median(r[0] for r in results)
        rate = statistics.median(r[1] for r in results)
        suffix = "" if transfer == "NO" else "_with_transfer"
        print(f"startd_cpu_per_job{suffix}: {ms:.2f} ms (reference: {HTCONDOR_STARTD_MS_PER_JOB:.0f}, "
              f"ratio: {HTCONDOR_STARTD_MS_PER_JOB / ms:.2f})")
        print(f"startd_jobs_per_s{suffix}: {rate:.0f} jobs/s (reference: n/a, ratio: n/a)")


if __name__ == "__main__":
    main()
