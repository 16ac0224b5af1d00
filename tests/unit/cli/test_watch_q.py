"""condor_watch_q's screen from event logs: the expected texts are what HTCondor's own
condor_watch_q (25.x, `-files LOG -no-color`, COLUMNS=120 or 60) printed for the same
log; the job states after each event; -exit's conditions."""

from __future__ import annotations

from pathlib import Path

import pytest

from roost.cli.watch_q_cmd import abbreviate_path, exit_condition
from roost.cli.watchq_table import (
    DONE,
    HELD,
    IDLE,
    RUN,
    SUSPENDED,
    Tracker,
    exit_met,
    nice_path,
    screen,
)
from roost.eventlog import (
    AbortedEvent,
    Event,
    ExecuteEvent,
    HeldEvent,
    SubmitEvent,
    SuspendedEvent,
    TerminatedEvent,
    UnsuspendedEvent,
)
from roost.eventlog.run_events import FileTransferEvent, FileTransferType

T = 1700000000.0


def sample() -> list[Event]:
    """Cluster 10: 4 jobs, 3 started, 1 done; 11: 12 jobs, one each held, suspended,
    transferring input, removed; 12: 2 jobs, both done."""
    ev: list[Event] = [SubmitEvent(10, p, T) for p in range(4)]
    ev += [ExecuteEvent(10, p, T + 1) for p in range(3)]
    ev.append(TerminatedEvent(10, 0, T + 2, return_value=0))
    ev += [SubmitEvent(11, p, T + 3) for p in range(12)]
    ev += [HeldEvent(11, 3, T + 4, reason="x", code=1), SuspendedEvent(11, 4, T + 4),
           FileTransferEvent(11, 5, T + 4, transfer_type=FileTransferType.IN_STARTED), AbortedEvent(11, 6, T + 4)]
    ev += [SubmitEvent(12, p, T + 5) for p in range(2)]
    ev += [TerminatedEvent(12, p, T + 6, return_value=0) for p in range(2)]
    return ev


BATCH_120 = (
    "BATCH    REMOVED  HELD  SUSPENDED  IDLE  INPUT  RUN  DONE  TOTAL  JOB_IDS\n"
    "ID: 10        -     -          -     1      -    2     1      4   10.1 ... 10.3  [---------===================#########]\n"
    "ID: 11        1     1          1     8      1    -     -     12   11.0 ... 11.11 [------------------------->>>!!!!!!!!!]\n"
    "ID: 12        -     -          -     -      -    -     2      2                  [#####################################]\n"
    "\n"
    "Total Progress: [----------------------------------------->>>>========############!!!!!!!!!!!!]\n"
    "\n"
    "Total: 18 jobs; 3 completed, 1 removed, 9 idle, 3 running, 1 held, 1 suspended\n"
    "\n"
    "Updated at TIME")
LOG_120 = (
    "LOG       REMOVED  HELD  SUSPENDED  IDLE  INPUT  RUN  DONE  TOTAL  JOB_IDS\n"
    "./a.log        1     1          1     9      1    2     3     18   10.1 ... 11.11 [------------------>>====######!!!!!!]")
CLUSTER_120 = (
    "CLUSTER  REMOVED  HELD  SUSPENDED  IDLE  INPUT  RUN  DONE  TOTAL  JOB_IDS\n"
    "10            -     -          -     1      -    2     1      4   10.1 ... 10.3  [---------===================#########]\n"
    "11            1     1          1     8      1    -     -     12   11.0 ... 11.11 [------------------------->>>!!!!!!!!!]\n"
    "12            -     -          -     -      -    -     2      2                  [#####################################]")
BATCH_60 = (
    "BATCH    REMOVED  HELD  SUSPENDED  IDLE  INPUT  RUN  DONE  TOTAL  JOB_IDS\n"
    "ID: 10        -     -          -     1      -    2     1    \n"
    "ID: 11        1     1          1     8      1    -     -    \n"
    "ID: 12        -     -          -     -      -    -     2    \n"
    "\n"
    "Total Progress: [----------------------->>====#######!!!!!!]\n"
    "\n"
    "Total: 18 jobs; 3 com, 1 rem, 9 idl, 3 run, 1 hel, 1 sus\n"
    "\n"
    "Updated at TIME")


def tracked() -> Tracker:
    t = Tracker()
    t.feed("/w/a.log", sample())
    return t


def test_screens_as_htcondors_tool_draws_them() -> None:
    t = tracked()
    assert "\n".join(screen(t, "batch", 120, "TIME")) == BATCH_120
    assert "\n".join(screen(t, "log", 120, "TIME", home="/root", cwd="/w")).split("\n\n")[0] == LOG_120
    assert "\n".join(screen(t, "cluster", 120, "TIME")).split("\n\n")[0] == CLUSTER_120
    # a narrow terminal: rows cut to its width, no row bars, the summary's words shortened
    assert "\n".join(screen(t, "batch", 60, "TIME")) == BATCH_60


def test_batch_names_and_proc_counts_from_the_queue() -> None:
    t = Tracker({20: "sweep"}, {20: 5})
    t.feed("/w/b.log", [SubmitEvent(20, 0, T), SubmitEvent(20, 1, T), ExecuteEvent(20, 0, T)])
    lines = screen(t, "batch", 100, "TIME", show_progress=False, show_summary=False, updated_at=False)
    assert lines == ["BATCH   IDLE  RUN  DONE  TOTAL  JOB_IDS",  # TOTAL: the 5 procs queued, 3 not yet seen
                     "sweep     1    1     -      5   20.0, 20.1 [" + "-" * 44 + "=" * 11 + "]"]


def test_states_follow_the_latest_event() -> None:
    t = Tracker()
    t.feed("l", [SubmitEvent(1, 0, T), ExecuteEvent(1, 0, T), SuspendedEvent(1, 0, T)])
    assert t.job_states() == [SUSPENDED]
    t.feed("l", [UnsuspendedEvent(1, 0, T)])
    assert t.job_states() == [RUN]  # running again (HTCondor's tool counts it idle)
    t.feed("l", [HeldEvent(1, 0, T)])
    assert t.job_states() == [HELD]
    only = Tracker(clusters={2}, since=None)
    only.feed("l", [SubmitEvent(1, 0, T), SubmitEvent(2, 0, T)])
    assert list(only.clusters) == [2]
    later = Tracker(since=2)
    later.feed("l", [SubmitEvent(1, 0, T), SubmitEvent(3, 0, T)])
    assert list(later.clusters) == [3]


def test_exit_conditions() -> None:
    assert exit_condition("all,done") == ("all", "done", 0)
    assert exit_condition("any,held,1") == ("any", "held", 1)
    for bad in ("all", "every,done", "all,gone", "all,done,x"):
        try:
            exit_condition(bad)
        except Exception as e:  # argparse.ArgumentTypeError: argparse prints it as the option's error
            assert str(e)
        else:
            raise AssertionError(bad)
    assert exit_met("all", "done", [DONE, DONE]) and not exit_met("all", "done", [DONE, RUN])
    assert exit_met("any", "held", [RUN, HELD]) and exit_met("none", "held", [RUN, IDLE])
    assert exit_met("all", "active", [IDLE, RUN, HELD, SUSPENDED]) and not exit_met("any", "active", [DONE])


def test_nice_path() -> None:
    assert nice_path("/home/u/run/a.log", "/home/u", "/home/u/run") == "./a.log"
    assert nice_path("/home/u/x/a.log", "/home/u", "/tmp") == "~/x/a.log"
    assert nice_path("/a.log", "/home/u", "/tmp") == "/a.log"


def test_percentages_summary() -> None:
    lines = screen(tracked(), "batch", 120, "TIME", percentages=True)
    # HTCondor's tool: every state, rounded as Python rounds
    assert lines[-3] == "Total: 18 jobs; 17% completed, 6% removed, 50% idle, 17% running, 6% held, 6% suspended"


def test_abbreviated_log_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # /h/f/wizb/events.log when /home/foobar also holds wizard (condor_watch_q's example)
    (tmp_path / "foobar" / "wizbang").mkdir(parents=True)
    (tmp_path / "foobar" / "wizard").mkdir()
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(tmp_path)
    assert abbreviate_path("./foobar/wizbang/events.log") == "./f/wizb/events.log"
    assert abbreviate_path("other/x.log") == "o/x.log"
    t = Tracker()
    t.feed(str(tmp_path / "foobar" / "wizbang" / "events.log"), [SubmitEvent(1, 0, T)])
    lines = screen(t, "log", 100, "TIME", home="/nonexistent", cwd=str(tmp_path), shorten=abbreviate_path)
    assert lines[1].startswith("./f/wizb/events.log ")
