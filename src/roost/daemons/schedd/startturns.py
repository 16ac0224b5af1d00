"""Turns to start a job on one startd: at most SCHEDD_MAX_STARTING_PER_STARTD at once.

A negotiation cycle can hand one schedd thousands of matches on one startd at once.
Each start is a claim request, an activation and then the startd's own work before
the job's process exists (a sandbox, the input files, the spawn), and the startd does
that work one event loop, one spawner thread. Sent all at once, 10,000 activations
made 10,000 starters wait there together: every job counted Running in the queue
long before its process existed, the startd's queues grew to thousands, and the
claims' keep-alives waited behind them (issue 27). So a shadow takes a turn from
its startd's ``StartTurns`` before it asks for the claim (or activates a reused
one) and hands it back once the starter says the job runs, the run ends, or the
start failed; a turn not handed back after ``HOLD_LIMIT`` seconds (a lost report)
is taken back, so a lost message slows a startd, never stops it.

A turn is a claim on the startd's time, not on a slot, so the limit is per startd
address and counts new claims and reused ones alike; a preempting activation, which
waits for the victim's retirement, gives its turn back before it waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

#: seconds a turn is held at most: a start whose "running" report is lost gives it back
HOLD_LIMIT = 60.0


class Turn:
    """One start in flight; ``done()`` hands it back (once, whoever calls it first)."""

    __slots__ = ("_give", "_timer")

    def __init__(self, give: Callable[[], None], timer: asyncio.TimerHandle | None) -> None:
        self._give: Callable[[], None] | None = give
        self._timer = timer

    def done(self) -> None:
        give, self._give = self._give, None
        if give is None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        give()


class StartTurns:
    """Starts in flight per startd address, at most ``limit`` each (0: unlimited)."""

    def __init__(self, limit: int, hold_limit: float = HOLD_LIMIT) -> None:
        if limit < 0:
            raise ValueError(f"SCHEDD_MAX_STARTING_PER_STARTD must be 0 (no limit) or more, not {limit}")
        self.limit = limit
        self.hold_limit = hold_limit
        self._gates: dict[str, asyncio.Semaphore] = {}
        self._busy: dict[str, int] = {}  # turns out per address

    async def take(self, address: str) -> Turn:
        """Wait for a turn on ``address`` (first come, first served)."""
        if self.limit == 0:
            return Turn(lambda: None, None)
        gate = self._gates.get(address)
        if gate is None:
            gate = self._gates[address] = asyncio.Semaphore(self.limit)
        await gate.acquire()
        self._busy[address] = self._busy.get(address, 0) + 1

        def give() -> None:
            self._busy[address] -= 1
            gate.release()

        turn = Turn(give, None)
        turn._timer = asyncio.get_running_loop().call_later(self.hold_limit, turn.done)
        return turn

    def in_flight(self, address: str) -> int:
        """Starts in flight on ``address`` now."""
        return self._busy.get(address, 0)


__all__ = ["HOLD_LIMIT", "StartTurns", "Turn"]
