"""The startd's claims apply the claim table (roost.core.claimstates): a claim event
that is no move of it is refused, whatever the command's other checks say, and the
races the table settles come out the same on a real startd's slot table."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from roost.config import Config
from roost.daemons.startd.daemon import Startd
from roost.net.errors import RequestError
from roost.vocabulary import Activity, SlotState


def _startd() -> Startd:
    home = tempfile.mkdtemp(prefix="roost-claims-")
    cfg = Config.from_text(
        f"LOCAL_DIR = {home}\nNUM_SLOTS = 1\nSTARTD_DETECT_GPUS = false\nSTARTD_USE_CGROUPS = false\n"
        "STARTD_BUILD_LAUNCHER = false\nSTARTD_OWNER_DEVICES =\nSTARTD_DETECT_CRIU = false\n"
        "STARTD_DETECT_CONTAINERS = false\nSTARTD_DETECT_JAVA = false\n",
        facts={"DETECTED_CPUS": "2", "DETECTED_MEMORY": "2048", "FULL_HOSTNAME": "exec.example.org",
               "ROOST_HOME": home},
    )
    return Startd(config=cfg)


class _Job:
    """The starter side of a claim's job, as far as these commands touch it: what the
    startd asked of it."""

    def __init__(self, claim_id: str) -> None:
        self.claim_id = claim_id
        self.spec = SimpleNamespace(job_id="1.0")
        self.asked: list[str] = []
        self.suspended = False

    def suspend(self) -> None:
        self.asked.append("suspend")
        self.suspended = True

    def resume(self) -> None:
        self.asked.append("resume")
        self.suspended = False

    async def vacate(self, graceful: bool, why: str | None = None) -> dict[str, Any]:
        self.asked.append("vacate")
        return {"state": "vacated"}

    async def abandon(self) -> None:
        self.asked.append("abandon")


async def _claimed(d: Startd) -> str:
    await d.start()
    cid = d.slots["slot1"].claim_id
    got = await d.claims.h_request_claim({"claim_id": cid, "job_ad": {"Owner": "alice"},
                                          "schedd_address": "a:1", "lease": 60}, None)  # type: ignore[arg-type]
    assert got["claim_id"] == cid
    return cid


def _put(d: Startd, state: str, activity: str, job: str | None = "1.0") -> None:
    slot = d.slots["slot1"]
    assert slot.claim is not None
    d.slots["slot1"] = replace(slot, state=state, activity=activity, claim=replace(slot.claim, job=job))


def test_activate_on_a_claim_being_vacated_is_denied() -> None:
    async def main() -> None:
        d = _startd()
        cid = await _claimed(d)
        _put(d, SlotState.PREEMPTING, Activity.VACATING, job=None)
        with pytest.raises(RequestError, match="takes no new job: in state Preempting/Vacating"):
            await d.claims.h_activate_claim({"claim_id": cid, "job_ad": {"Owner": "alice"}}, None)  # type: ignore[arg-type]

    asyncio.run(main())


def test_a_slot_the_owner_holds_takes_no_claim() -> None:
    async def main() -> None:
        d = _startd()
        await d.start()
        slot = d.slots["slot1"]
        d.slots["slot1"] = replace(slot, state=SlotState.OWNER, activity=Activity.IDLE)
        with pytest.raises(RequestError, match="takes no claims: in state Owner/Idle"):
            await d.claims.h_request_claim({"claim_id": slot.claim_id, "job_ad": {"Owner": "alice"},
                                            "schedd_address": "a:1", "lease": 60}, None)  # type: ignore[arg-type]

    asyncio.run(main())


def test_condor_suspend_and_continue_follow_the_table() -> None:
    async def main() -> None:
        d = _startd()
        cid = await _claimed(d)
        job = _Job(cid)
        d.claims.starters[cid] = job  # type: ignore[assignment]
        _put(d, SlotState.CLAIMED, Activity.BUSY)
        got = await d.claims.h_suspend_claim({"claim_id": cid}, None)  # type: ignore[arg-type]
        assert got == {"job": "1.0", "suspended": True} and job.asked == ["suspend"]
        assert await d.claims.h_continue_claim({"claim_id": cid}, None) == {"job": "1.0", "suspended": False}  # type: ignore[arg-type]
        # the owner policy suspended it: condor_continue does not resume it
        _put(d, SlotState.CLAIMED, Activity.SUSPENDED)
        job.suspended = True
        got = await d.claims.h_continue_claim({"claim_id": cid}, None)  # type: ignore[arg-type]
        assert got == {"job": "1.0", "suspended": True} and job.asked == ["suspend", "resume"]
        # a job being killed is not stopped
        _put(d, SlotState.PREEMPTING, Activity.KILLING)
        job.suspended = False
        await d.claims.h_suspend_claim({"claim_id": cid}, None)  # type: ignore[arg-type]
        assert job.asked == ["suspend", "resume"]
        # DEACTIVATE_CLAIM vacates it on any held claim
        got = await d.claims.h_deactivate_claim({"claim_id": cid, "graceful": True}, None)  # type: ignore[arg-type]
        assert got["state"] == "vacated" and job.asked[-1] == "vacate"

    asyncio.run(main())


def test_a_job_exit_reported_after_the_claim_was_released_changes_nothing() -> None:
    async def main() -> None:
        d = _startd()
        cid = await _claimed(d)
        job = _Job(cid)
        d.claims.starters[cid] = job  # type: ignore[assignment]
        _put(d, SlotState.CLAIMED, Activity.BUSY)
        await d.claims.h_release_claim({"claim_id": cid}, None)  # type: ignore[arg-type]
        after = d.slots["slot1"]
        assert (after.state, after.activity, after.claim) == (SlotState.UNCLAIMED, Activity.IDLE, None)
        assert job.asked == ["abandon"] and after.claim_id != cid
        d.claims._starter_finished(job)  # type: ignore[arg-type]
        d.claims._starter_done(job)  # type: ignore[arg-type]
        assert d.slots["slot1"] == after
        with pytest.raises(RequestError, match="no such claim"):
            await d.claims.h_activate_claim({"claim_id": cid, "job_ad": {"Owner": "alice"}}, None)  # type: ignore[arg-type]

    asyncio.run(main())


def test_a_job_exit_leaves_a_preempting_slot_preempting_and_a_claimed_one_idle() -> None:
    async def main() -> None:
        d = _startd()
        cid = await _claimed(d)
        for (state, activity), want in [((SlotState.CLAIMED, Activity.RETIRING), (SlotState.CLAIMED, Activity.IDLE)),
                                        ((SlotState.PREEMPTING, Activity.VACATING),
                                         (SlotState.PREEMPTING, Activity.VACATING))]:
            job = _Job(cid)
            d.claims.starters[cid] = job  # type: ignore[assignment]
            _put(d, state, activity)
            d.claims._starter_finished(job)  # type: ignore[arg-type]
            slot = d.slots["slot1"]
            assert (slot.state, slot.activity) == want and slot.claim is not None and slot.claim.job is None

    asyncio.run(main())


def test_an_ending_that_is_no_move_of_the_table_is_refused(caplog) -> None:
    async def main() -> None:
        d = _startd()
        cid = await _claimed(d)
        _put(d, SlotState.CLAIMED, Activity.IDLE, job=None)
        with caplog.at_level(logging.ERROR):
            await d.claims.release("slot1", "a test", "no such ending")
        assert d.slots["slot1"].claim_id == cid and d.slots["slot1"].claim is not None
        assert any("not ended" in r.getMessage() for r in caplog.records)
        await d.claims.release("slot1", "lease", "lease_expired")
        assert d.slots["slot1"].claim is None and d.slots["slot1"].state == SlotState.UNCLAIMED

    asyncio.run(main())
