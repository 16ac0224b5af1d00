"""The startd's side of the owner policy and of preemption, against a real startd.

The test plays collector and schedd (startd_peer); the startd's owner policy
runs on a short POLLING_INTERVAL.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import tempfile
import time
from types import SimpleNamespace

import pytest

from roost.config import Config
from roost.core.jobrun import RunState
from roost.core.slots import Claim
from roost.daemons.startd.claims import _Pending
from roost.daemons.startd.daemon import Startd
from roost.daemons.startd.jobspec import Identity
from roost.daemons.startd.peers import Peers
from roost.daemons.startd.starter import Starter
from roost.net.errors import RemoteError, RequestError

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
            other = startd.client(timeout=30)
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
        # a 5 s window: on a loaded machine the ad may be read seconds after the suspend
        "SUSPEND = KeyboardIdle < 5\nWANT_SUSPEND = True\nCONTINUE = KeyboardIdle >= 5\n"
        "SLOTS_CONNECTED_TO_KEYBOARD = 1\n"  # as in HTCondor, no slot sees the keyboard unless told
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
            # SIGSTOP lands when the woken process next runs: on a busy machine it reads R first;
            # with a cgroup the freezer may hold it before it gets there
            pid = running["pid"]
            assert await _settles(pid, lambda s: s == "T" or _frozen(pid))  # stopped
            await peer.wait_for(lambda: peer.ads[name].get("Activity") == "Busy", timeout=20)
            assert await _settles(pid, lambda s: s != "T" and not _frozen(pid))
            await client.call("RELEASE_CLAIM", claim_id=cid)

    asyncio.run(main())


def test_suspend_freezes_what_left_the_job_process_group() -> None:
    """A job that starts a busy loop in a session of its own: SIGSTOP to the job's
    process group misses it, the cgroup freezer does not."""
    policy = CONFIG + ("SUSPEND = KeyboardIdle < 30\nWANT_SUSPEND = True\nCONTINUE = False\n"
                       "SLOTS_CONNECTED_TO_KEYBOARD = 1\n")

    async def main() -> None:
        async with pool(policy) as (peer, startd, client):
            slot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            name, cid = slot["Name"], peer.private[slot["Name"]]["ClaimId"]
            ad = job_ad("executable = /bin/sh\narguments = \"-c 'setsid sh -c \"\"while :; do :; done\"\" & wait'\"\n"
                        f"should_transfer_files = NO\n+FileSystemDomain = \"{slot['FileSystemDomain']}\"\n"
                        "job_max_vacate_time = 2\nqueue\n")
            await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad, schedd_address=peer.address, lease=60)
            await client.call("ACTIVATE_CLAIM", claim_id=cid, job_ad=ad)
            job = (await peer.next_update())["pid"]
            loop_pid = await peer.wait_for(lambda: next(iter(_children(job)), None))
            assert os.getpgid(loop_pid) != os.getpgid(job)  # it left the job's group
            if not _frozen_capable(loop_pid):
                # it left the job's group: a skip must not leave it spinning (four of them
                # once ate two cores for hours)
                os.kill(loop_pid, signal.SIGKILL)
                pytest.skip("the job has no cgroup v2 with cgroup.freeze here")
            (startd.home / "activity").touch()
            await peer.wait_for(lambda: peer.ads[name].get("Activity") == "Suspended")
            assert await _settles(loop_pid, lambda s: _frozen(loop_pid))
            before = _cpu_ticks(loop_pid)
            await asyncio.sleep(0.5)  # time is the point: a running loop would gain ticks in it
            assert _cpu_ticks(loop_pid) == before  # it does not run
            await client.call("RELEASE_CLAIM", claim_id=cid)
            await peer.wait_for(lambda: not os.path.exists(f"/proc/{loop_pid}") or _proc_state(loop_pid) == "Z")

    asyncio.run(main())


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    data = f.read()
            except OSError:
                continue
            if int(data[data.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(entry))
    return out


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _cgroup_dir(pid: int) -> str | None:
    """The directory of the process's cgroup v2, when it has one of its own."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            rel = next(ln.split(":", 2)[2].strip() for ln in f if ln.startswith("0::"))
    except (OSError, StopIteration):
        return None
    if rel in ("/", ""):
        return None
    return next((f"{root}{rel}" for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")
                 if os.path.exists(f"{root}{rel}/cgroup.freeze")), None)


def _frozen_capable(pid: int) -> bool:
    return _cgroup_dir(pid) is not None


def _proc_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    return data[data.rindex(")") + 2]


def _frozen(pid: int) -> bool:
    """The process's cgroup (v2) reports itself frozen."""
    path = _cgroup_dir(pid)
    if path is None:
        return False
    try:
        with open(f"{path}/cgroup.events") as f:
            return "frozen 1" in f.read()
    except OSError:
        return False


async def _settles(pid: int, want, timeout: float = 5.0) -> bool:
    """The process's state satisfies ``want`` within ``timeout`` (signals are delivered asynchronously)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not want(_proc_state(pid)):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


# -- the startd in this process (no collector: nothing is advertised) ----------------------


def _startd(extra: str = "") -> Startd:
    home = tempfile.mkdtemp(prefix="roost-startd-")
    cfg = Config.from_text(
        f"LOCAL_DIR = {home}\nNUM_SLOTS = 1\nSTARTD_DETECT_GPUS = false\nSTARTD_USE_CGROUPS = false\n"
        f"STARTD_BUILD_LAUNCHER = false\nSTARTD_OWNER_DEVICES =\n{extra}",
        facts={"DETECTED_CPUS": "2", "DETECTED_MEMORY": "2048", "FULL_HOSTNAME": "exec.example.org",
               "ROOST_HOME": home},
    )
    return Startd(config=cfg)


def test_an_unparsable_owner_policy_knob_is_logged_once_and_never_true(caplog) -> None:
    async def main() -> None:
        d = _startd("SUSPEND = KeyboardIdle <\nPREEMPT = (((\n")
        with caplog.at_level(logging.ERROR):
            await d.start()  # no SystemExit
        assert d.owner_policy.exprs.suspend == "error" and d.owner_policy.exprs.preempt == "error"
        assert [r.getMessage().split(" = ")[0] for r in caplog.records if "ClassAd" in r.getMessage()] == \
            ["SUSPEND", "PREEMPT"]
        d.owner_policy.evaluate()
        assert d.slots["slot1"].state == "Unclaimed"

    asyncio.run(main())


class _SlowStarter:
    """A job whose kill takes a moment (abandon awaits the starter task)."""

    spec = SimpleNamespace(job_id="1.0")

    async def abandon(self) -> None:
        await asyncio.sleep(0.05)  # time is the point: the kill takes a moment


def test_two_releases_of_a_preempted_claim_hand_the_slot_to_the_preempting_claim() -> None:
    # Lease expiry, the owner policy and the schedd's RELEASE_CLAIM may end the same claim
    # at once: the one that kills the job must not end the preempting claim that took
    # the slot while it waited.
    async def main() -> None:
        d = _startd()
        await d.start()
        cid = d.slots["slot1"].claim_id
        got = await d.claims.h_request_claim({"claim_id": cid, "job_ad": {"Owner": "alice"},
                                              "schedd_address": "a:1", "lease": 60}, None)  # type: ignore[arg-type]
        assert got["claim_id"] == cid
        d.claims.starters[cid] = _SlowStarter()  # type: ignore[assignment]
        ready = asyncio.get_running_loop().create_future()
        d.claims.preempting["slot1"] = _Pending("new-claim", Claim(schedd_address="b:2", user="bob", lease=60), 0, ready)
        await asyncio.gather(d.claims.release("slot1", "lease expired"),
                             d.claims.release("slot1", "released by its schedd"))
        slot = d.slots["slot1"]
        assert ready.done() and not ready.cancelled()
        assert slot.claim_id == "new-claim" and slot.claim is not None and slot.claim.schedd_address == "b:2"
        assert (slot.state, slot.activity) == ("Claimed", "Idle")
        assert d.claims.by_claim.get("new-claim") == "slot1" and cid not in d.claims.by_claim

    asyncio.run(main())


def test_a_job_the_granted_slot_would_refuse_is_refused_at_claim_time() -> None:
    # START true for the partitionable slot but not for the dynamic slot the claim would
    # get: the startd refuses the claim before carving (ACTIVATE_CLAIM would refuse the
    # job on the dynamic slot's ad, and schedd and negotiator would go round claiming).
    async def main() -> None:
        async with pool("POLLING_INTERVAL = 0.1\nSTARTD_OWNER_DEVICES =\nSTART = DynamicSlot =!= True\n") as (
            peer, startd, client,
        ):
            slot = await peer.wait_for(lambda: slot_ads(peer).get("slot1"))
            cid = peer.private[slot["Name"]]["ClaimId"]
            ad = _sleeper(1, 0, slot)
            with pytest.raises((RemoteError, RequestError)) as e:
                await client.call("REQUEST_CLAIM", claim_id=cid, job_ad=ad, schedd_address=peer.address, lease=60)
            assert "DENIED" in str(getattr(e.value, "code", "")) + str(e.value)
            await peer.wait_for(lambda: slot_ads(peer)["slot1"].get("NumClaimRequests") == 1)
            ads = slot_ads(peer)
            assert list(ads) == ["slot1"] and ads["slot1"]["Cpus"] == slot["Cpus"]  # nothing carved

    asyncio.run(main())


def test_no_signal_reaches_a_job_group_once_the_job_is_reaped(monkeypatch) -> None:
    async def main() -> None:
        sent: list[tuple[int, int]] = []
        monkeypatch.setattr(os, "killpg", lambda pgid, sig: sent.append((pgid, sig)))
        st = Starter(spec=SimpleNamespace(job_id="1.0"), claim_id="c", slot_name="slot1",  # type: ignore[arg-type]
                     execute_dir="/nonexistent", sandbox_name="dir_x", identity=Identity(0, 0, "", ""), env={},
                     job_ad_text="", peers=Peers(), address_of=lambda: None, on_done=lambda s: None)
        st.machine.state, st.pid = RunState.RUNNING, 424242
        st._exited = asyncio.get_running_loop().create_future()
        st.suspend()
        assert sent == [(424242, signal.SIGSTOP)]
        st._exited.set_result((0, None))  # reaped; the starter task has not run on yet
        st.resume()
        st.suspend()
        st._reaped_and_killed = True
        st._kill_group(signal.SIGTERM)
        assert sent == [(424242, signal.SIGSTOP)] and not st.suspended

    asyncio.run(main())


assert os.name == "posix"


# -- SLOTS_CONNECTED_TO_KEYBOARD / _CONSOLE --------------------------------------------------


def test_connected_slots_see_the_owner_and_the_others_report_the_boost() -> None:
    from roost.daemons.startd.owner import Connected, slot_attrs, slot_number

    assert [slot_number(n) for n in ("slot3", "slot1_4", "slot12@host", "other", "slotx")] == [3, 1, 12, None, None]
    c = Connected(keyboard=1, console=2, disconnected_idle=1500)
    assert c.idle("slot1", (5, 50)) == (5, 50)
    assert c.idle("slot1_7", (5, 50)) == (5, 50)  # a dynamic slot has its parent's number
    assert c.idle("slot2", (5, 50)) == (50, 50)  # sees the console only: console activity counts
    assert c.idle("slot3", (5, 50)) == (1500, 1500)
    assert Connected(keyboard=0, console=0, disconnected_idle=9).idle("slot1", (5, 50)) == (9, 9)
    attrs = slot_attrs((5, 50), 0.0, {}, {"slot1": 1, "slot2": 1}, 2, Connected(1, 1, 1500))
    assert (attrs["slot1"]["KeyboardIdle"], attrs["slot2"]["KeyboardIdle"]) == (5, 1500)
    assert slot_attrs((5, 50), 0.0, {}, {"slot9": 1}, 1)["slot9"]["KeyboardIdle"] == 5  # unset: all connected


def test_only_connected_slots_stop_starting_jobs_when_the_owner_types(caplog) -> None:
    async def main() -> None:
        d = _startd("NUM_SLOTS = 2\nSLOTS_CONNECTED_TO_KEYBOARD = 1\nSLOTS_CONNECTED_TO_CONSOLE = 1\n"
                    "START = KeyboardIdle > 600\nDISCONNECTED_KEYBOARD_IDLE_BOOST = 2*600\n")
        await d.start()
        (d.home / "activity").touch()  # the owner is at the keyboard
        d.owner_policy.measure(time.time())
        d.owner_policy.evaluate()
        assert d.owner_policy.owner_attrs["slot1"]["KeyboardIdle"] < 600
        assert d.owner_policy.owner_attrs["slot2"]["KeyboardIdle"] >= 1200
        assert (d.slots["slot1"].state, d.slots["slot2"].state) == ("Owner", "Unclaimed")
        bad = _startd("SLOTS_CONNECTED_TO_KEYBOARD = many\n")
        assert bad.owner_policy._connected_knobs[0] == 0  # the default: not connected
        assert any("SLOTS_CONNECTED_TO_KEYBOARD" in r.getMessage() for r in caplog.records)

    asyncio.run(main())
