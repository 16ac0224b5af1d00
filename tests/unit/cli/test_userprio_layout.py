"""condor_userprio's columns, headings and footer (roost.cli.userprio_layout)."""

from __future__ import annotations

import time

from roost.cli import userprio_layout as layout
from roost.cli.userprio_cmd import parse

NOW = time.mktime((2026, 12, 1, 21, 30, 0, 0, 0, -1))
USERS = [
    {"name": "alice@example.org", "effective": 500.5, "priority": 0.5005, "factor": 1000.0, "resources_used": 2,
     "accumulated_usage": 23760.0, "begin_usage": NOW - 86000, "last_usage": NOW, "floor": None, "ceiling": None},
    {"name": "bob@example.org", "effective": 1500.0, "priority": 1.5, "factor": 1000.0, "resources_used": 0,
     "accumulated_usage": 360.0, "begin_usage": NOW - 5000, "last_usage": NOW - 4000, "floor": 2, "ceiling": 10},
    {"name": "old@example.org", "effective": 600.0, "priority": 0.6, "factor": 1000.0, "resources_used": 0,
     "accumulated_usage": 36000.0, "begin_usage": NOW - 9 * 86400, "last_usage": NOW - 8 * 86400},
]


def test_default_view_has_condor_userprio_25_columns_and_footer() -> None:
    lines = layout.table(USERS, NOW).splitlines()
    assert lines[0] == "Last Priority Update: 12/1  21:30"
    assert lines[1] == ("                    Effective   Priority  Wghted Total Usage  Time Since "
                        "Submitter Submitter")
    assert lines[2] == ("User Name            Priority    Factor   In Use (wghted-hrs) Last Usage   "
                        "Floor    Ceiling ")
    assert lines[3] == "------------------ ------------ --------- ------ ------------ ---------- --------- ---------"
    # best (lowest) effective priority first; old@ (idle 8 days) is left out
    assert lines[4].split() == ["alice@example.org", "500.50", "1000.00", "2", "6.60", "<now>"]
    assert lines[5].split() == ["bob@example.org", "1500.00", "1000.00", "0", "0.10", "0+01:06", "2.00", "10.00"]
    assert lines[6] == lines[3]
    assert lines[7].split() == ["Number", "of", "users:", "2", "2", "6.70", "1+00:00"]
    assert len(lines) == 8


def test_all_adds_real_priority_and_usage_dates() -> None:
    lines = layout.table(USERS, NOW, layout.ALL).splitlines()
    assert lines[1].split() == ["Effective", "Real", "Priority", "Wghted", "Total", "Usage", "Usage", "Last",
                                "Time", "Since", "Submitter", "Submitter"]
    assert "   0.50 " in lines[4] and "11/30/2026 21:36 12/01/2026 21:30" in lines[4]


def test_usage_view_sorts_by_usage_and_allusers_shows_the_idle() -> None:
    lines = layout.table(USERS, NOW, layout.USAGE_VIEW, all_users=True).splitlines()
    assert lines[2].split() == ["User", "Name", "In", "Use", "(wghted-hrs)", "Start", "Time", "Usage", "Time"]
    assert [ln.split()[0] for ln in lines[4:7]] == ["bob@example.org", "alice@example.org", "old@example.org"]
    assert lines[-1].split() == ["Number", "of", "users:", "3", "2", "16.70"]


def test_options_choose_the_columns() -> None:
    assert parse(["-all"])["flags"] == layout.ALL
    assert parse(["-usage"])["flags"] == layout.USAGE_VIEW
    assert parse(["-prio"])["flags"] == layout.PRIOS
    assert parse(["-allusers"])["allusers"] and not parse(["-allusers"])["flags"]
