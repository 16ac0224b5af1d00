"""The job-run machine (roost.core.jobrun): every state x event, and the races of the
execute side decided without a process."""

from __future__ import annotations

import signal

import pytest

from roost.core.jobrun import (
    IGNORED,
    MOVES,
    Act,
    Action,
    Ev,
    IllegalEvent,
    JobRun,
    Report,
    RunState,
)

S = RunState
KILL, STOP, CONT = Action(Act.KILL), Action(Act.STOP), Action(Act.CONT)
RELEASE, OUTPUT, FINAL = Action(Act.RELEASE_SLOT), Action(Act.TRANSFER_OUTPUT), Action(Act.REPORT, report=Report.FINAL)
RUNNING_REPORT = Action(Act.REPORT, report=Report.RUNNING)
SUSPENDED_REPORT = Action(Act.REPORT, report=Report.SUSPENDED)
RESUMED_REPORT = Action(Act.REPORT, report=Report.RESUMED)


def kinds(acts: list[Action]) -> list[str]:
    return [a.kind for a in acts]


def run(*events: str, **kw: object) -> JobRun:
    """A run with ``events`` fed in order (from NEW)."""
    r = JobRun(**kw)  # type: ignore[arg-type]
    for e in events:
        r.handle(e, 0.0)
    return r


def running(**kw: object) -> JobRun:
    return run(Ev.START, Ev.PREPARED, Ev.TRANSFER_IN_DONE, Ev.SPAWNED, **kw)


# -- the table -----------------------------------------------------------------------


def test_no_pair_is_both_a_move_and_ignored() -> None:
    assert not set(MOVES) & IGNORED
    assert all(s in S.ALL and e in Ev.ALL for s, e in [*MOVES, *IGNORED])
    assert all(t in S.ALL for targets in MOVES.values() for t in targets)


@pytest.mark.parametrize("state", S.ALL)
@pytest.mark.parametrize("event", Ev.ALL)
def test_every_state_and_event(state: str, event: str) -> None:
    """A move goes where the table says; an ignored event changes nothing and asks for
    nothing; any other raises, naming the state and the event."""
    r = JobRun(state=state, transfer=True, checkpoint_sig=int(signal.SIGUSR2))
    if state == S.VACATING or state == S.CHECKPOINTING:
        r.vacating = state == S.VACATING
    key = (state, event)
    if key in MOVES:
        r.handle(event, 5.0, checkpointed=False)
        assert r.state in MOVES[key]
    elif key in IGNORED:
        assert r.handle(event, 5.0) == [] and r.state == state
    else:
        with pytest.raises(IllegalEvent, match=f"{event}.*{state}"):
            r.handle(event, 5.0)
        assert r.state == state


def test_an_unknown_event_is_refused() -> None:
    with pytest.raises(IllegalEvent, match="unknown event"):
        JobRun().handle("teleport", 0.0)


def test_every_event_from_outside_is_taken_or_dropped_in_every_started_state() -> None:
    """What the owner policy, the schedd and the startd send may come at any moment
    once the run has begun: never an error there."""
    outside = (Ev.SUSPEND, Ev.CONTINUE, Ev.VACATE, Ev.HOLD, Ev.HARD_KILL, Ev.CLAIM_LOST, Ev.DETACH,
               Ev.CHECKPOINT_REQUESTED, Ev.OVER_LIMIT)
    for state in S.ALL:
        if state == S.NEW:
            continue
        for event in outside:
            assert (state, event) in MOVES or (state, event) in IGNORED, (state, event)


# -- the life of a job -----------------------------------------------------------------


def test_a_job_with_files_from_sandbox_to_acknowledged_report() -> None:
    r = JobRun(transfer=True)
    assert r.handle(Ev.START, 1.0) == [Action(Act.PREPARE)] and r.state == S.PREPARING
    assert r.handle(Ev.PREPARED, 1.0) == [Action(Act.TRANSFER_INPUT)]
    assert r.handle(Ev.TRANSFER_IN_DONE, 2.0) == [Action(Act.SPAWN)] and r.state == S.SPAWNING
    assert r.phase() == "starting"
    assert r.handle(Ev.SPAWNED, 3.0) == [RUNNING_REPORT] and r.state == S.RUNNING and r.phase() == "running"
    assert r.handle(Ev.EXITED, 4.0) == [KILL, RELEASE, OUTPUT, FINAL] and r.phase() == "exited"
    assert r.handle(Ev.REPORT_ACKED, 5.0) == [Action(Act.CLEAN)] and r.state == S.DONE
    assert r.changed_at == 5.0 and r.history[-1] == (S.REPORTING, Ev.REPORT_ACKED, S.DONE)


def test_a_job_without_file_transfer_spawns_at_once_and_sends_no_outputs() -> None:
    r = run(Ev.START, transfer=False)
    assert r.handle(Ev.PREPARED, 0) == [Action(Act.SPAWN)]
    r.handle(Ev.SPAWNED, 0)
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, FINAL]


@pytest.mark.parametrize("failed", [Ev.SPAWN_FAILED, Ev.TRANSFER_IN_FAILED])
def test_a_failed_start_is_reported_without_outputs(failed: str) -> None:
    r = run(Ev.START, Ev.PREPARED, *([Ev.TRANSFER_IN_DONE] if failed == Ev.SPAWN_FAILED else []))
    assert r.handle(failed, 0) == [KILL, RELEASE, FINAL] and r.state == S.REPORTING
    assert r.handle(Ev.REPORT_ABANDONED, 0) == [Action(Act.CLEAN)]


def test_the_sandbox_failing_ends_the_start() -> None:
    r = run(Ev.START)
    assert r.handle(Ev.SPAWN_FAILED, 0) == [KILL, RELEASE, FINAL]


# -- suspend ----------------------------------------------------------------------


def test_suspend_and_continue_while_running() -> None:
    r = running()
    assert r.handle(Ev.SUSPEND, 0) == [STOP, SUSPENDED_REPORT] and r.state == S.SUSPENDED
    assert r.handle(Ev.SUSPEND, 0) == []  # already
    assert r.handle(Ev.CONTINUE, 0) == [CONT, RESUMED_REPORT] and r.state == S.RUNNING
    assert r.handle(Ev.CONTINUE, 0) == []


@pytest.mark.parametrize("before", [[Ev.START], [Ev.START, Ev.PREPARED], [Ev.START, Ev.PREPARED, Ev.TRANSFER_IN_DONE]])
def test_a_suspend_before_the_spawn_finished_is_applied_right_after_it(before: list[str]) -> None:
    """The bug on main: the owner's SUSPEND 40 ms before the spawn finished was lost."""
    r = run(*before)
    assert r.handle(Ev.SUSPEND, 0) == [] and r.suspend_pending
    for e in [Ev.PREPARED, Ev.TRANSFER_IN_DONE][len(before) - 1:]:
        r.handle(e, 0)
    assert r.handle(Ev.SPAWNED, 0) == [RUNNING_REPORT, STOP, SUSPENDED_REPORT]
    assert r.state == S.SUSPENDED and not r.suspend_pending
    assert r.handle(Ev.CONTINUE, 0) == [CONT, RESUMED_REPORT]


def test_a_continue_before_the_spawn_takes_the_pending_suspend_back() -> None:
    r = run(Ev.START, Ev.PREPARED)
    r.handle(Ev.SUSPEND, 0)
    r.handle(Ev.CONTINUE, 0)
    r.handle(Ev.TRANSFER_IN_DONE, 0)
    assert r.handle(Ev.SPAWNED, 0) == [RUNNING_REPORT] and r.state == S.RUNNING


def test_exit_during_suspend_thaws_what_is_left_and_reports_the_exit() -> None:
    r = running()
    r.handle(Ev.SUSPEND, 0)
    assert r.handle(Ev.EXITED, 0) == [CONT, KILL, RELEASE, OUTPUT, FINAL] and r.state == S.REPORTING


# -- vacate --------------------------------------------------------------------------


def test_vacate_during_input_transfer_stops_the_start_and_reports_vacated() -> None:
    r = run(Ev.START, Ev.PREPARED)
    assert r.handle(Ev.VACATE, 0) == [Action(Act.CANCEL_START)] and r.state == S.VACATING and r.vacating
    assert r.phase() == "running"  # its start is stopping: no longer "starting"
    assert r.handle(Ev.START_STOPPED, 0) == [KILL, RELEASE, FINAL]  # no outputs, no spawn
    assert r.state == S.REPORTING


def test_vacate_when_the_transfer_had_just_ended_still_spawns_nothing() -> None:
    """The cancel came too late for the transfer: its end arrives after the vacate."""
    r = run(Ev.START, Ev.PREPARED)
    r.handle(Ev.VACATE, 0)
    assert r.handle(Ev.TRANSFER_IN_DONE, 0) == [KILL, RELEASE, FINAL]


def test_vacate_during_the_spawn_kills_the_process_once_it_exists() -> None:
    r = run(Ev.START, Ev.PREPARED, Ev.TRANSFER_IN_DONE)
    r.handle(Ev.SUSPEND, 0)
    assert r.handle(Ev.VACATE, 0) == [Action(Act.CANCEL_START)] and not r.suspend_pending
    assert r.handle(Ev.SPAWNED, 0) == [KILL] and r.state == S.VACATING
    assert r.handle(Ev.START_STOPPED, 0) == [KILL, RELEASE, FINAL]


def test_a_detached_startd_kills_nothing_it_started_while_vacating() -> None:
    r = run(Ev.START, Ev.PREPARED, Ev.TRANSFER_IN_DONE)
    r.handle(Ev.VACATE, 0)
    r.handle(Ev.DETACH, 0)
    assert r.handle(Ev.SPAWNED, 0) == []


@pytest.mark.parametrize(("event", "why", "sig"), [
    (Ev.VACATE, None, signal.SIGINT), (Ev.VACATE, "remove", signal.SIGQUIT), (Ev.HOLD, None, signal.SIGHUP),
])
def test_the_kill_signal_by_why(event: str, why: str | None, sig: int) -> None:
    r = running(kill_sig=int(signal.SIGINT), remove_kill_sig=int(signal.SIGQUIT), hold_kill_sig=int(signal.SIGHUP))
    assert r.handle(event, 0, why=why) == [Action(Act.SIGNAL, signal=sig)]
    assert r.vacate_why == (why or ("hold" if event == Ev.HOLD else None))


def test_remove_and_hold_signals_fall_back_on_the_kill_signal() -> None:
    r = running(kill_sig=int(signal.SIGUSR1))
    assert r.handle(Ev.HOLD, 0) == [Action(Act.SIGNAL, signal=signal.SIGUSR1)]


def test_exit_during_vacate_is_a_vacate_without_outputs() -> None:
    r = running()
    r.handle(Ev.VACATE, 0)
    assert r.handle(Ev.VACATE, 0) == []  # its signal went already
    assert r.handle(Ev.HARD_KILL, 0) == [KILL]  # JobMaxVacateTime is over
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, FINAL] and r.state == S.REPORTING


def test_vacate_of_a_suspended_job_lets_it_run_to_see_its_signal() -> None:
    r = running()
    r.handle(Ev.SUSPEND, 0)
    assert r.handle(Ev.VACATE, 0) == [Action(Act.SIGNAL, signal=signal.SIGTERM), CONT, RESUMED_REPORT]
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, FINAL]  # thawed already


def test_a_hard_kill_of_a_suspended_job_thaws_what_is_left_when_it_ends() -> None:
    r = running()
    r.handle(Ev.SUSPEND, 0)
    assert r.handle(Ev.VACATE, 0, graceful=False) == [KILL] and r.hard_killed
    assert r.handle(Ev.EXITED, 0) == [CONT, KILL, RELEASE, FINAL]


def test_a_vacated_job_that_wrote_a_checkpoint_sends_it_before_it_is_reported() -> None:
    r = running()
    r.handle(Ev.VACATE, 0)
    assert r.handle(Ev.EXITED, 0, checkpointed=True) == [KILL, Action(Act.UPLOAD_CHECKPOINT)]
    assert r.state == S.CHECKPOINTING
    assert r.handle(Ev.CHECKPOINT_WRITTEN, 0) == [KILL, RELEASE, FINAL]  # not started again


def test_evict_time_outputs_go_to_the_spool_unless_the_job_is_removed() -> None:
    r = running()
    r.handle(Ev.VACATE, 0)
    assert kinds(r.handle(Ev.EXITED, 0, evict_files=True)) == [Act.KILL, Act.UPLOAD_CHECKPOINT]
    removed = running()
    removed.handle(Ev.VACATE, 0, why="remove")
    assert removed.handle(Ev.EXITED, 0, evict_files=True) == [KILL, RELEASE, FINAL]


# -- checkpoints -------------------------------------------------------------------


def test_a_self_checkpointing_job_sends_its_checkpoint_and_runs_again_in_place() -> None:
    r = running()
    assert r.handle(Ev.EXITED, 0, checkpointed=True) == [Action(Act.END_RUN), Action(Act.UPLOAD_CHECKPOINT)]
    assert r.phase() == "running"  # between two runs: still the job's
    assert r.handle(Ev.CHECKPOINT_WRITTEN, 0) == [Action(Act.SPAWN, restart=True)] and r.restarts == 1
    assert r.handle(Ev.SPAWNED, 0) == []  # no second running report
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, OUTPUT, FINAL]


def test_without_file_transfer_a_checkpoint_exit_is_an_exit() -> None:
    r = run(Ev.START, Ev.PREPARED, Ev.SPAWNED, transfer=False)
    assert r.handle(Ev.EXITED, 0, checkpointed=True) == [KILL, RELEASE, FINAL]


def test_vacate_during_the_checkpoint_upload_ends_the_run_after_it() -> None:
    r = running()
    r.handle(Ev.EXITED, 0, checkpointed=True)
    assert r.handle(Ev.VACATE, 0) == [] and r.state == S.CHECKPOINTING
    assert r.handle(Ev.HARD_KILL, 0) == []  # no process to kill
    assert r.handle(Ev.CHECKPOINT_WRITTEN, 0) == [KILL, RELEASE, FINAL]  # never started again


def test_a_suspend_between_two_runs_stops_the_next_one() -> None:
    r = running()
    r.handle(Ev.EXITED, 0, checkpointed=True)
    r.handle(Ev.SUSPEND, 0)
    r.handle(Ev.CHECKPOINT_WRITTEN, 0)
    assert r.handle(Ev.SPAWNED, 0) == [STOP, SUSPENDED_REPORT] and r.state == S.SUSPENDED


def test_the_periodic_checkpoint_signal_only_reaches_a_running_job() -> None:
    sig = int(signal.SIGUSR2)
    r = running(checkpoint_sig=sig)
    assert r.handle(Ev.CHECKPOINT_REQUESTED, 0) == [Action(Act.CHECKPOINT_SIGNAL, signal=sig)]
    r.handle(Ev.SUSPEND, 0)
    assert r.handle(Ev.CHECKPOINT_REQUESTED, 0) == []  # stopped: it cannot write one
    r.handle(Ev.CONTINUE, 0)
    r.handle(Ev.HOLD, 0)
    assert r.handle(Ev.CHECKPOINT_REQUESTED, 0) == []  # held: leaving
    assert running().handle(Ev.CHECKPOINT_REQUESTED, 0) == []  # asks for no signal
    between = running(checkpoint_sig=sig)
    between.handle(Ev.EXITED, 0, checkpointed=True)
    assert between.handle(Ev.CHECKPOINT_REQUESTED, 0) == []


def test_checkpoint_requested_during_vacate_is_dropped() -> None:
    r = running(checkpoint_sig=int(signal.SIGUSR2))
    r.handle(Ev.VACATE, 0)
    assert r.handle(Ev.CHECKPOINT_REQUESTED, 0) == [] and r.state == S.VACATING


# -- adoption, lost claims, limits ----------------------------------------------------------


def test_an_adopted_job_that_runs_is_watched_and_reported_running() -> None:
    r = JobRun()
    assert r.handle(Ev.ADOPTED, 0, alive=True) == [Action(Act.WATCH), RUNNING_REPORT] and r.adopted
    assert r.state == S.RUNNING


def test_an_adopted_job_that_had_already_ended_is_not_reported_running() -> None:
    r = JobRun(transfer=True)
    assert r.handle(Ev.ADOPTED, 0, alive=False) == [Action(Act.WATCH)]
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, OUTPUT, FINAL]  # its end, from its file


@pytest.mark.parametrize("state", [s for s in S.ALL if s not in (S.NEW, S.DONE)])
def test_a_lost_claim_kills_and_aborts_from_any_live_state(state: str) -> None:
    r = JobRun(state=state)
    assert r.handle(Ev.CLAIM_LOST, 0) == [KILL, Action(Act.ABORT)] and r.state == S.DONE and r.claim_lost
    for e in Ev.ALL:  # everything after is late
        assert r.handle(e, 0) == []


def test_a_job_over_its_disk_is_killed_and_its_exit_reported_with_outputs() -> None:
    r = running()
    assert r.handle(Ev.OVER_LIMIT, 0) == [KILL] and r.state == S.RUNNING
    assert r.handle(Ev.EXITED, 0) == [KILL, RELEASE, OUTPUT, FINAL]


def test_events_after_the_end_change_nothing() -> None:
    r = running()
    r.handle(Ev.EXITED, 0)
    for e in (Ev.VACATE, Ev.SUSPEND, Ev.HARD_KILL, Ev.CHECKPOINT_REQUESTED):
        assert r.handle(e, 0) == [] and r.state == S.REPORTING
    with pytest.raises(IllegalEvent):
        r.handle(Ev.EXITED, 0)  # a second end is a shell's bug
