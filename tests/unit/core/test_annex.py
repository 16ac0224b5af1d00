"""A glide-in's end of life (roost.core.annex.next_step), durations, Slurm's time
limit, and an annex's state from Slurm's view and the collector's."""

from __future__ import annotations

import pytest

from roost.core.annex import (
    Action,
    AnnexError,
    AnnexRecord,
    GlideinPolicy,
    GlideinView,
    annex_state,
    next_step,
    parse_duration,
    slurm_time_limit,
)

P = GlideinPolicy(idle_timeout=300, retire_lead=300, vacate_lead=60)
END = 10_000.0


def step(now: float, claims: int, idle_since: float | None = None, policy: GlideinPolicy = P) -> Action:
    return next_step(GlideinView(now, END, idle_since, claims), policy).action


def test_a_busy_glidein_far_from_its_end_takes_jobs() -> None:
    assert step(1000, claims=2) == Action.ACCEPT


def test_an_idle_glidein_takes_jobs_until_its_idle_limit_then_shuts_down() -> None:
    assert step(1299, claims=0, idle_since=1000) == Action.ACCEPT
    got = next_step(GlideinView(1300, END, 1000, 0), P)
    assert got.action == Action.SHUTDOWN and "STARTD_NOCLAIM_SHUTDOWN" in got.reason


def test_a_claim_resets_idleness_none_means_claimed() -> None:
    assert step(9000, claims=0, idle_since=None) == Action.ACCEPT


def test_no_idle_limit_means_never_for_idleness() -> None:
    forever = GlideinPolicy(idle_timeout=0, retire_lead=300, vacate_lead=60)
    assert step(9000, claims=0, idle_since=0, policy=forever) == Action.ACCEPT


def test_near_the_end_it_stops_taking_jobs_and_running_ones_retire() -> None:
    assert step(END - 301, claims=1) == Action.ACCEPT
    got = next_step(GlideinView(END - 300, END, None, 1), P)
    assert got.action == Action.RETIRE and "ANNEX_RETIRE_LEAD" in got.reason


def test_closer_still_what_runs_is_vacated_so_it_checkpoints_and_goes_home() -> None:
    assert step(END - 61, claims=1) == Action.RETIRE
    assert step(END - 60, claims=1) == Action.VACATE
    assert step(END - 1, claims=1) == Action.VACATE


def test_past_the_end_it_shuts_down_whatever_runs() -> None:
    assert step(END, claims=3) == Action.SHUTDOWN
    assert step(END + 50, claims=1) == Action.SHUTDOWN


def test_near_the_end_an_empty_glidein_shuts_down_at_once() -> None:
    """It would take no job anyway: giving the Slurm allocation back early is free."""
    assert step(END - 300, claims=0, idle_since=END - 301) == Action.SHUTDOWN
    assert step(END - 301, claims=0, idle_since=END - 302) == Action.ACCEPT


def test_steps_only_move_forward_in_time() -> None:
    order = [Action.ACCEPT, Action.RETIRE, Action.VACATE, Action.SHUTDOWN]
    seen = [order.index(step(t, claims=1)) for t in range(int(END) - 1000, int(END) + 10)]
    assert seen == sorted(seen) and set(seen) == {0, 1, 2, 3}


def test_leads_must_nest() -> None:
    with pytest.raises(AnnexError, match="ANNEX_RETIRE_LEAD"):
        GlideinPolicy(retire_lead=10, vacate_lead=60)


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200),
                                               ("1h30m", 5400), ("1d", 86400), ("1.5h", 5400), (" 2H ", 7200)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "10x", "-5m", "0", "1h 30", "m30"])
def test_bad_durations_name_the_option(text: str) -> None:
    with pytest.raises(AnnexError, match="-duration"):
        parse_duration(text)


@pytest.mark.parametrize(("seconds", "limit"), [(1, "0-00:01:00"), (60, "0-00:01:00"), (61, "0-00:02:00"),
                                                (3600, "0-01:00:00"), (90061, "1-01:02:00")])
def test_slurm_time_limit_rounds_up_to_minutes(seconds: float, limit: str) -> None:
    assert slurm_time_limit(seconds) == limit


REC = AnnexRecord("a1", ("11", "12", "13"), 3, 600, 0.0)


def test_annex_state_pending_starting_running_ended() -> None:
    assert annex_state(REC, {"11": "PENDING", "12": "PENDING", "13": "PENDING"}, []).state == "pending"
    starting = annex_state(REC, {"11": "RUNNING", "12": "PENDING", "13": "PENDING"}, [])
    assert (starting.state, starting.running, starting.pending) == ("starting", 1, 2)
    ads = [{"AnnexName": "a1", "SlurmJobId": "11", "Name": "slot1@glidein11", "GLIDEIN_ToDie": 700},
           {"AnnexName": "a1", "SlurmJobId": "11", "Name": "slot1_1@glidein11", "GLIDEIN_ToDie": 700},
           {"AnnexName": "other", "SlurmJobId": "12", "Name": "slot1@glidein12"}]
    running = annex_state(REC, {"11": "RUNNING", "12": "PENDING", "13": "PENDING"}, ads)
    assert (running.state, running.glideins, running.expires) == ("running", 1, 700)
    ended = annex_state(REC, {"11": "COMPLETED", "12": "CANCELLED"}, [])  # 13: Slurm forgot it
    assert (ended.state, ended.ended, ended.running) == ("ended", 3, 0)


def test_annex_records_round_trip_and_bad_ones_name_their_file() -> None:
    assert AnnexRecord.from_obj(REC.to_obj(), "x.json") == REC
    with pytest.raises(AnnexError, match=r"x\.json: not an annex record"):
        AnnexRecord.from_obj({"name": "a", "slurm_ids": [1]}, "x.json")
