"""StartTurns: at most N starts in flight per startd, handed back once, taken back
when a report is lost (startturns.py)."""

from __future__ import annotations

import asyncio

import pytest

from roost.daemons.schedd.startturns import StartTurns


def test_a_startd_gets_at_most_its_limit_and_others_are_not_held_up() -> None:
    async def main() -> None:
        turns = StartTurns(2)
        a1, a2 = await turns.take("a"), await turns.take("a")
        third = asyncio.ensure_future(turns.take("a"))
        b = await asyncio.wait_for(turns.take("b"), 1)  # another startd: its own turns
        await asyncio.sleep(0.01)  # time is the point: a waiter over the limit is not served meanwhile
        assert not third.done() and turns.in_flight("a") == 2
        a1.done()
        a1.done()  # handed back once only
        a3 = await asyncio.wait_for(third, 1)
        assert turns.in_flight("a") == 2
        fourth = asyncio.ensure_future(turns.take("a"))
        await asyncio.sleep(0.01)  # time is the point: nor is this one
        assert not fourth.done()  # the double done() did not free a second turn
        for t in (a2, a3, b):
            t.done()
        (await asyncio.wait_for(fourth, 1)).done()
        assert turns.in_flight("a") == 0 and turns.in_flight("b") == 0

    asyncio.run(main())


def test_a_turn_not_handed_back_is_taken_back_after_the_hold_limit() -> None:
    async def main() -> None:
        turns = StartTurns(1, hold_limit=0.05)
        lost = await turns.take("a")  # its "running" report never comes
        again = await asyncio.wait_for(turns.take("a"), 2)
        lost.done()  # late: must not free a turn that is not its own
        assert turns.in_flight("a") == 1
        again.done()

    asyncio.run(main())


def test_zero_is_no_limit_and_a_negative_limit_is_refused() -> None:
    async def main() -> None:
        turns = StartTurns(0)
        held = [await asyncio.wait_for(turns.take("a"), 1) for _ in range(1000)]
        for t in held:
            t.done()

    asyncio.run(main())
    with pytest.raises(ValueError, match="SCHEDD_MAX_STARTING_PER_STARTD"):
        StartTurns(-1)
