"""The submitter's job policy as pure tables: exit decisions and periodic decisions."""

from __future__ import annotations

import pytest

from roost.classad import ClassAd
from roost.core import jobpolicy as jp
from roost.submit import parse_submit


def job(extra: str = "", proc: int = 0) -> ClassAd:
    desc = parse_submit(f"executable = /bin/true\n{extra}\nqueue 1\n", cwd="/tmp")
    return desc.expand(1, 1000, "alice")[0].proc_classad(proc)


@pytest.mark.parametrize(
    "extra, code, signal, action",
    [
        ("", 0, None, "complete"),
        ("", 1, None, "complete"),  # default OnExitRemove is true
        ("", None, 9, "complete"),
        ("on_exit_remove = ExitCode == 0", 1, None, "requeue"),
        ("on_exit_remove = ExitCode == 0", 0, None, "complete"),
        ("on_exit_remove = ExitBySignal == false", None, 11, "requeue"),
        ("on_exit_hold = ExitCode == 5", 5, None, "hold"),
        ("on_exit_hold = ExitCode == 5", 4, None, "complete"),
        ("on_exit_hold = ExitBySignal\non_exit_remove = false", None, 9, "hold"),  # hold first
        ("max_retries = 2", 1, None, "requeue"),
        ("max_retries = 2", 0, None, "complete"),
        ("max_retries = 2\nsuccess_exit_code = 3", 3, None, "complete"),
        ("on_exit_remove = NoSuchAttr", 1, None, "complete"),  # undefined: remove, as HTCondor
    ],
)
def test_on_exit_table(extra, code, signal, action):
    d = jp.on_exit(job(extra), code, signal, now=5000)
    assert d.action == action
    assert d.attrs["NumJobCompletions"] == 1
    assert d.attrs["ExitBySignal"] is (signal is not None)
    if signal is None:
        assert d.attrs["ExitCode"] == code
    else:
        assert d.attrs["ExitSignal"] == signal


def test_max_retries_counts_runs():
    ad = job("max_retries = 2")
    actions = [jp.on_exit(ad, 1, None, 100).action for _ in range(3)]
    assert actions == ["requeue", "requeue", "complete"]
    assert ad["NumJobCompletions"] == 3


def test_on_exit_hold_reason_and_subcode():
    d = jp.on_exit(job('on_exit_hold = true\non_exit_hold_reason = "bad"\non_exit_hold_subcode = 7'), 0, None, 1)
    assert (d.action, d.reason, d.code, d.subcode) == ("hold", "bad", jp.HOLD_JOB_POLICY, 7)
    d = jp.on_exit(job("on_exit_hold = ExitCode > 0"), 2, None, 1)
    assert d.reason == "The job attribute OnExitHold expression 'ExitCode > 0' evaluated to TRUE"
    assert d.attrs["CompletionDate"] == 1


@pytest.mark.parametrize(
    "extra, status, action",
    [
        ("", jp.IDLE, None),
        ("periodic_hold = true", jp.IDLE, "hold"),
        ("periodic_hold = true", jp.RUNNING, "hold"),
        ("periodic_hold = true", jp.HELD, None),
        ("periodic_release = true", jp.HELD, "release"),
        ("periodic_release = true", jp.IDLE, None),
        ("periodic_remove = true", jp.HELD, "remove"),
        ("periodic_remove = true\nperiodic_hold = true", jp.IDLE, "remove"),  # remove wins
        ("periodic_remove = true", jp.COMPLETED, None),
        ("periodic_hold = NumJobStarts > 2", jp.IDLE, None),
        ("periodic_hold = QDate == 1000", jp.IDLE, "hold"),
    ],
)
def test_periodic_table(extra, status, action):
    d = jp.periodic(job(extra), status)
    assert (d.action if d else None) == action


def test_periodic_reasons_and_system_policy():
    d = jp.periodic(job('periodic_hold = true\nperiodic_hold_reason = "too long"\nperiodic_hold_subcode = 4'), jp.IDLE)
    assert (d.reason, d.code, d.subcode) == ("too long", jp.HOLD_JOB_POLICY, 4)
    d = jp.periodic(job("periodic_remove = JobStatus == 1"), jp.IDLE)
    assert d.reason == "The job attribute PeriodicRemove expression 'JobStatus == 1' evaluated to TRUE"
    system = jp.SystemPolicy(hold="RequestMemory > 100")
    d = jp.periodic(job("request_memory = 200"), jp.IDLE, system)
    assert d.action == "hold" and d.code == jp.HOLD_SYSTEM_POLICY and "SYSTEM_PERIODIC_HOLD" in d.reason
    assert jp.periodic(job("request_memory = 50"), jp.IDLE, system) is None
    assert jp.periodic(job(), jp.HELD, jp.SystemPolicy(release="true")).action == "release"


def test_has_periodic_skips_literal_false():
    assert not jp.has_periodic({"PeriodicHold": False, "PeriodicRemove": False})
    assert jp.has_periodic({"PeriodicHold": "/Expr(NumJobStarts > 3)/"})
    assert not jp.has_periodic({})


def test_start_and_usage_attrs():
    ad = job()
    a = jp.start_attrs(ad, "slot1@h", 200)
    assert a == {"NumJobStarts": 1, "NumShadowStarts": 1, "JobRunCount": 1, "JobCurrentStartDate": 200,
                 "RemoteHost": "slot1@h", "JobStartDate": 200}
    ad.update(a)
    assert "JobStartDate" not in jp.start_attrs(ad, "slot1@h", 300)
    u = jp.usage_attrs(ad, {"user": 2.5, "system": 0.5}, 200, 210)
    assert u["RemoteWallClockTime"] == 10 and u["RemoteUserCpu"] == 2.5 and u["CumulativeRemoteSysCpu"] == 0.5
    assert jp.transition_attrs(1, 2, 7.9) == {"LastJobStatus": 1, "JobStatus": 2, "EnteredCurrentStatus": 7}


def test_hold_counts_by_reason_as_htcondor_names_them():
    from roost.core.jobpolicy import hold_count_attrs

    first = hold_count_attrs(None, None, 1)
    assert first == {"NumHolds": 1, "NumHoldsByReason": {"UserRequest": 1}}
    before = {"UserRequest": 1}
    second = hold_count_attrs(1, before, 3)
    assert second == {"NumHolds": 2, "NumHoldsByReason": {"UserRequest": 1, "JobPolicy": 1}}
    assert before == {"UserRequest": 1}  # the job's old value is not changed in place
    assert hold_count_attrs(2, second["NumHoldsByReason"], 3)["NumHoldsByReason"]["JobPolicy"] == 2


def test_an_undefined_periodic_expression_is_not_true() -> None:
    """UNDEFINED (an attribute the job does not have yet) never holds, releases or
    removes a job: its enum is an int, which once passed for a non-zero number."""
    from roost.classad import ClassAd
    from roost.classad.parser import parse_expr
    from roost.core import jobpolicy as jp

    ad = ClassAd()
    ad["PeriodicHold"] = parse_expr("MemoryUsage > 100")
    ad["PeriodicRemove"] = parse_expr("NoSuchAttr")
    assert jp.periodic(ad, jp.RUNNING) is None
    ad["MemoryUsage"] = 150
    assert jp.periodic(ad, jp.RUNNING).action == "hold"


def test_usage_accumulates_over_runs_committed_and_slot_time() -> None:
    from roost.classad import ClassAd
    from roost.core import jobpolicy as jp

    ad = ClassAd()
    ad["RequestCpus"] = 2
    first = jp.usage_attrs(ad, {"RemoteWallClockTime": 10.0, "RemoteUserCpu": 3.0}, 0, 0)
    for k, v in first.items():
        ad[k] = v
    second = jp.usage_attrs(ad, {"RemoteWallClockTime": 5.0, "RemoteUserCpu": 1.0}, 0, 0)
    assert second["RemoteWallClockTime"] == 15.0 and second["CommittedTime"] == 15
    assert second["CumulativeSlotTime"] == 30.0 and second["CommittedSlotTime"] == 30.0
    assert second["CumulativeRemoteUserCpu"] == 4.0 and second["RemoteUserCpu"] == 1.0
