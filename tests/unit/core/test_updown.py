"""Up-Down, the seeds' schedule index over submit machines (pure; time passed in)."""

from __future__ import annotations

import math

import pytest

from roost.core.updown import UpDown, UpDownRates, preemption_priority

H = 3600.0


def test_holding_raises_waiting_lowers_and_idle_drifts_back_to_zero() -> None:
    ud = UpDown()
    ud.advance({"a": 4.0}, {"b"}, now=0.0)  # the first call only starts the clock
    assert ud.index == {"a": 0.0, "b": 0.0}
    ud.advance({"a": 4.0}, {"b"}, now=H / 2)
    assert ud.index == pytest.approx({"a": 2.0, "b": -0.5})
    # b got a slot and a stopped: b goes up, a drifts down towards 0
    ud.advance({"b": 1.0}, set(), now=H)
    assert ud.index == pytest.approx({"a": 1.5, "b": 0.0})
    ud.advance({}, set(), now=3 * H)  # two idle hours: a reaches 0 and does not cross it
    assert ud.index == {}  # at 0 with nothing held or wanted: forgotten
    # a waiting station that holds something still goes up (it is being served)
    ud.advance({"c": 1.0}, {"c"}, now=4 * H)
    assert ud.index == pytest.approx({"c": 1.0})


def test_rates_and_negative_drift_back() -> None:
    ud = UpDown()
    rates = UpDownRates(up=0.5, down=2.0, decay=4.0)
    ud.advance({}, {"w"}, now=0.0, rates=rates)
    ud.advance({}, {"w"}, now=H, rates=rates)
    assert ud.index["w"] == pytest.approx(-2.0)
    ud.advance({}, set(), now=H + H / 4, rates=rates)  # decay 4/h for 15 min: back to -1
    assert ud.index["w"] == pytest.approx(-1.0)
    ud.advance({"w": 2.0}, set(), now=2 * H, rates=rates)
    assert ud.index["w"] == pytest.approx(-1.0 + 0.5 * 2.0 * 0.75)
    ud.advance({}, {"w"}, now=H)  # time ran backwards: nothing moves
    assert ud.index["w"] == pytest.approx(-0.25)


def test_order_is_lowest_index_first_then_name() -> None:
    ud = UpDown(index={"heavy": 5.0, "light": -1.0})
    assert ud.order(["heavy", "new", "light", "also-new"]) == ["light", "also-new", "new", "heavy"]


def test_json_round_trip_and_damage() -> None:
    ud = UpDown(index={"a": 1.5, "b": -2.0}, last=123.0)
    assert UpDown.from_json(ud.to_json()) == ud
    bad = UpDown.from_json({"index": {"a": "x", "b": float("nan"), 3: 1.0, "c": 1e9}, "last": "soon"})
    assert bad.index == {"c": 1000.0} and bad.last is None
    assert UpDown.from_json(None) == UpDown() and UpDown.from_json([1]) == UpDown()


def test_preemption_priority_is_positive_monotone_and_ratio_meaningful() -> None:
    assert preemption_priority(0.0) == 1.0
    assert preemption_priority(1.0) == 2 * preemption_priority(0.0)
    assert preemption_priority(-3.0) < preemption_priority(-2.9) < preemption_priority(5.0)
    assert math.isfinite(preemption_priority(1e9)) and preemption_priority(-1e9) > 0


def _simulate(hours: int, slots: int) -> tuple[UpDown, list[float]]:
    """A heavy station always wants every slot; a light one submits one one-hour job
    every 3 hours. Each 6-minute step, a finished job frees its slot and free slots go
    to the waiting station with the lowest index (strict order, no preemption)."""
    ud, step = UpDown(), H / 10
    running: list[tuple[str, float]] = []  # (station, ends)
    light_queue: list[float] = []  # submit times of the light station's idle jobs
    waits: list[float] = []
    for k in range(int(hours * H / step)):
        now = k * step
        running = [(s, end) for s, end in running if end > now]
        if k % 30 == 0:
            light_queue.append(now)
        while len(running) < slots:
            waiting = ["heavy"] + (["light"] if light_queue else [])
            first = ud.order(waiting)[0]
            if first == "light":
                waits.append(now - light_queue.pop(0))
            running.append((first, now + H))
        held: dict[str, float] = {}
        for s, _ in running:
            held[s] = held.get(s, 0.0) + 1.0
        ud.advance(held, {"heavy"} | ({"light"} if light_queue else set()), now)
    return ud, waits


def test_a_light_station_is_served_before_a_heavy_one_all_day() -> None:
    ud, waits = _simulate(hours=24, slots=4)
    assert ud.index["heavy"] > 10 * max(1.0, ud.index.get("light", 0.0))
    # the light station waits at most for the next slot to free (an hour-long job on 4 slots)
    assert len(waits) == 8 and max(waits) <= H
