"""Which refused claim requests are stale matches (the schedd drops them, no back-off)
and which refuse the job (its autocluster backs off): judged on a real startd's answers."""

from __future__ import annotations

import asyncio

import pytest

from roost.daemons.schedd.shadow import _stale
from roost.net.errors import RemoteError

from .startd_peer import job_ad, pool, slot_ads


async def _refusal(client, **args) -> RemoteError:
    with pytest.raises(RemoteError) as e:
        await client.call("REQUEST_CLAIM", **args)
    return e.value


def test_stale_matches_are_told_from_refusals_of_the_job() -> None:
    async def main() -> None:
        async with pool('START = TARGET.Owner != "mallory"\n') as (peer, _startd, client):
            pslot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            cid = peer.private[pslot["Name"]]["ClaimId"]
            common = {"schedd_address": peer.address, "lease": 60.0, "slot_name": pslot["Name"]}
            # the owner's START refuses the job: that is about the job
            mallory = job_ad("executable = /bin/true\nqueue\n", owner="mallory")
            assert not _stale(await _refusal(client, claim_id=cid, job_ad=mallory, **common))
            # a claim id the startd does not know (the slot is gone, or restarted)
            ok = job_ad("executable = /bin/true\nrequest_cpus = 4\nqueue\n")
            assert _stale(await _refusal(client, claim_id="1#2#gone", job_ad=ok, **common))
            # the whole machine carved; a match made on the ad from before is stale
            await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ok, **common)
            one = job_ad("executable = /bin/true\nrequest_cpus = 1\nqueue\n")
            assert _stale(await _refusal(client, claim_id=cid, job_ad=one, **common))
        assert not _stale(ConnectionError("cut"))

    asyncio.run(main())
