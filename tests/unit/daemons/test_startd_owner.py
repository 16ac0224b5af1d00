"""The startd's side of the owner policy and of preemption, against a real startd.

The test plays collector and schedd (startd_peer); the startd's owner policy
runs on a short POLLING_INTERVAL.
"""

from __future__ import annotations

import asyncio
import os

from roost.net.client import AsyncClient

from .startd_peer import job_ad, pool, slot_ads

CONFIG = "NUM_SLOTS = 1\nPOLLING_INTERVAL = 0.1\nSTARTD_OWNER_DEVICES =\n"


def _sleeper(cluster: int, seconds: int, slot: dict) -> dict:
    return job_ad(
        f"executable = /bin/sleep\narguments = {seconds}\nshould_transfer_files = NO\n"
        f"+FileSystemDomain = \"{slot['FileSystemDomain']}\"\njob_max_vacate_time = 2\nqueue\n",
        cluster=cluster,
    )


def test_preempting_claim_vacates_the_job_then_activates_on_the_same_slot() -> None:
    async def main() -> None:
        async with pool(CONFIG) as (peer, startd, client):
            slot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            name = slot["Name"]
            assert {"KeyboardIdle", "ConsoleIdle", "LoadAvg", "CondorLoadAvg", "TotalLoadAvg"} <= set(slot)
            cid = peer.private[name]["ClaimId"]
            old = _sleeper(1, 60, slot)
            await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=old, schedd_address=peer.address, lease=60)
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=old)
            assert (await peer.next_update())["state"] == "running"
            pid = await peer.wait_for(lambda: peer.private[name].get("PreemptClaimId"))
            assert peer.ads[name]["State"] == "Claimed"
            new = _sleeper(2, 0, slot)
            got = await client.call("REQUEST_CLAIM", claim_id=pid, job_ad=new, schedd_address=peer.address, lease=60)
            assert got["preempting"] is True and got["claim_id"] not in (cid, pid)
            new_cid = got["claim_id"]
            # the new claim's activation is answered only once the old job has left
            other = AsyncClient(startd.address, timeout=30)
            try:
                activation = asyncio.ensure_future(other.call("ACTIVATE_CLAIM", claim_id=new_cid, job_ad=new))
                update = await peer.next_update()
                assert update["job"] == "1.0" and update["state"] == "vacated"
                await asyncio.wait_for(activation, 10)
            finally:
                await other.close()
            updates = [await peer.next_update(), await peer.next_update()]
            assert [u["job"] for u in updates] == ["2.0", "2.0"]
            assert updates[-1]["state"] == "exited" and updates[-1]["exit_code"] == 0
            await peer.wait_for(lambda: peer.ads[name].get("State") == "Claimed")
            await client.call("RELEASE_CLAIM", claim_id=new_cid)

    asyncio.run(main())


def test_owner_activity_file_suspends_and_continues_the_job() -> None:
    policy = CONFIG + (
        "SUSPEND = KeyboardIdle < 2\nWANT_SUSPEND = True\nCONTINUE = KeyboardIdle >= 2\n"
    )

    async def main() -> None:
        async with pool(policy) as (peer, startd, client):
            slot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            name = slot["Name"]
            cid = peer.private[name]["ClaimId"]
            ad = _sleeper(1, 60, slot)
            await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad, schedd_address=peer.address, lease=60)
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)
            running = await peer.next_update()
            (startd.home / "activity").touch()
            await peer.wait_for(lambda: peer.ads[name].get("Activity") == "Suspended")
            assert _proc_state(running["pid"]) == "T"  # SIGSTOPped
            await peer.wait_for(lambda: peer.ads[name].get("Activity") == "Busy", timeout=10)
            assert _proc_state(running["pid"]) != "T"
            await client.call("RELEASE_CLAIM", claim_id=cid)

    asyncio.run(main())


def _proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return data[data.rindex(")") + 2]


assert os.name == "posix"
