"""Issue 12's attacks on a real startd, each a regression test: who may claim a slot,
run a job on it, drain it or turn it off.

The startd is a real process (startd_peer.pool: the test plays collector and schedd,
and reads each slot's private ClaimId as the collector would hand it to the
negotiator). The legitimate schedd presents the pool's daemon token; an attacker
comes with no token, an ordinary user's token, a token scoped to READ, or a token
signed with a key that is not the pool's.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import time
from typing import Any

import pytest

from roost.net.client import AsyncClient
from roost.net.errors import RemoteError
from roost.net.tokens import create_token

from .daemon_procs import pool_token, user_identity
from .startd_peer import PoolPeer, StartdProc, job_ad, pool, slot_ads


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def attack_ad(marker: str) -> dict[str, Any]:
    """The issue's attack: a job that would leave a file proving it ran."""
    return job_ad(f"executable = /bin/sh\narguments = \"-c 'id > {marker}'\"\n"
                  "transfer_executable = false\nqueue\n", owner="alice")


async def slot_claim_id(peer: PoolPeer) -> str:
    """The partitionable slot's ClaimId, as the collector's private ad holds it."""
    pslot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
    return peer.private[pslot["Name"]]["ClaimId"]


async def refused(client: AsyncClient, cmd: str, **args: Any) -> RemoteError:
    with pytest.raises(RemoteError) as e:
        await client.call(cmd, **args)
    assert e.value.code == "PERMISSION_DENIED", (cmd, e.value)
    return e.value


def no_job_ran(peer: PoolPeer, startd: StartdProc, marker: str) -> None:
    assert not os.path.exists(marker)
    assert peer.updates.empty()
    assert not [d for d in os.listdir(startd.home / "execute") if d.startswith("dir_")]


def test_an_unauthenticated_peer_may_not_claim_or_activate_even_with_the_claim_id(tmp_path):
    marker = str(tmp_path / "pwned")

    async def main() -> None:
        async with pool() as (peer, startd, client):
            cid = await slot_claim_id(peer)
            ad = attack_ad(marker)
            anon = AsyncClient(startd.address, timeout=10)
            try:
                e = await refused(anon, "REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                                  schedd_address=peer.address, lease=60)
                assert "REQUEST_CLAIM" in e.message and "unauthenticated" in e.message
                # a claim the real schedd holds: knowing its id is not enough either
                got = await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                                        schedd_address=peer.address, lease=60)
                held = got["claim_id"]
                await refused(anon, "ACTIVATE_CLAIM", claim_id=held, job_ad=ad)
                for cmd in ("KEEPALIVE", "DEACTIVATE_CLAIM", "RELEASE_CLAIM"):
                    await refused(anon, cmd, claim_id=held)
                await refused(anon, "DRAIN", how="fast")
                await refused(anon, "SET_OFF")
                no_job_ran(peer, startd, marker)
                # the claim is untouched: the schedd's keep-alive finds it idle
                assert (await client.call("KEEPALIVE", claim_id=held))["state"] == "Idle"
            finally:
                await anon.close()

    run(main())


def test_an_ordinary_user_may_not_activate_drain_or_turn_off_a_startd(tmp_path):
    marker = str(tmp_path / "pwned")

    async def main() -> None:
        async with pool() as (peer, startd, client):
            if getpass.getuser() == "nobody":
                pytest.skip("the pool's own account is a daemon identity")
            cid = await slot_claim_id(peer)
            ad = attack_ad(marker)
            got = await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                                    schedd_address=peer.address, lease=60)
            held = got["claim_id"]
            user = startd.client(timeout=10, token=pool_token(startd.home, user_identity(startd.home, "nobody")))
            try:
                e = await refused(user, "ACTIVATE_CLAIM", claim_id=held, job_ad=ad)
                assert user_identity(startd.home, "nobody") in e.message
                await refused(user, "REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                              schedd_address=peer.address, lease=60)
                await refused(user, "DRAIN", how="fast", reason="mine now")
                await refused(user, "SET_OFF")
                await refused(user, "VACATE")
            finally:
                await user.close()
            # the daemon identity with a token limited to READ is no better
            scoped = startd.client(timeout=10, token=pool_token(startd.home, scopes=["READ"]))
            try:
                await refused(scoped, "ACTIVATE_CLAIM", claim_id=held, job_ad=ad)
                await refused(scoped, "SET_OFF")
            finally:
                await scoped.close()
            # a token for the daemon identity signed with a key that is not the pool's
            # does not even authenticate
            forged = create_token(os.urandom(32), "POOL", "forged", "condor@forged", now=time.time())
            bad = startd.client(timeout=10, token=forged)
            try:
                with pytest.raises(RemoteError) as e:
                    await bad.call("SET_OFF")
                assert e.value.code == "AUTH_FAILED"
            finally:
                await bad.close()
            no_job_ran(peer, startd, marker)
            ads = await peer.wait_for(lambda: "slot1_1" in slot_ads(peer) and slot_ads(peer))
            assert "Draining" not in ads["slot1"] and ads["slot1_1"]["Activity"] == "Idle"
            assert (await client.call("KEEPALIVE", claim_id=held))["state"] == "Idle"
            log = (startd.home / "log" / "StartLog").read_text()
            assert f"refused SET_OFF from {user_identity(startd.home, 'nobody')}" in log

    run(main())


def test_the_daemon_token_claims_activates_drains_and_turns_off(tmp_path):
    async def main() -> None:
        async with pool() as (peer, startd, client):
            cid = await slot_claim_id(peer)
            ad = job_ad("executable = /bin/sh\narguments = \"-c 'exit 4'\"\n"
                        "transfer_executable = false\nqueue\n")
            got = await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad,
                                    schedd_address=peer.address, lease=60)
            await client.call("ACTIVATE_CLAIM", claim_id=got["claim_id"], job_ad=ad)
            update = await peer.next_update()
            while update["state"] == "running":
                update = await peer.next_update()
            assert update["state"] == "exited" and update["exit_code"] == 4
            await client.call("RELEASE_CLAIM", claim_id=got["claim_id"])
            assert (await client.call("DRAIN", how="graceful", reason="test"))["how"] == "graceful"
            await peer.wait_for(lambda: slot_ads(peer)["slot1"].get("Draining") is True)
            assert (await client.call("CANCEL_DRAIN"))["was_draining"] is True
            await client.call("SET_OFF")
            await client.call("SET_ON")

    run(main())
