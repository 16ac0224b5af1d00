"""The startd's owner policy (roost.core.ownerpolicy) on HTCondor's Desktop policy.

The slot ads carry what the startd would publish (KeyboardIdle, loads,
State/Activity and their entry times); time() in the expressions reads the
real clock, so entry times are set relative to it.
"""

from __future__ import annotations

import time

import pytest

from roost.classad import ClassAd, Value
from roost.config import Config
from roost.core import ownerpolicy as op

DESKTOP = """
use POLICY : Desktop
StartIdleTime = 60
ContinueIdleTime = 30
MaxSuspendTime = 120
"""


def desktop(extra: str = "") -> op.PolicyExprs:
    cfg = Config.from_text(DESKTOP + extra)
    return op.exprs_from_config(cfg.get)


def slot_ad(state: str, activity: str, *, keyboard_idle: int, entered: float, load: float = 0.0) -> ClassAd:
    return ClassAd({
        "State": state, "Activity": activity, "KeyboardIdle": keyboard_idle, "ConsoleIdle": keyboard_idle,
        "LoadAvg": load, "CondorLoadAvg": load, "TotalLoadAvg": load,
        "EnteredCurrentState": int(entered), "EnteredCurrentActivity": int(entered),
        "Cpus": 1, "Memory": 1024,
    })


JOB = ClassAd({"JobUniverse": 5, "ImageSize": 100_000, "Owner": "alice", "JobMaxVacateTime": 10})


def view(state: str, activity: str, entered: float, job_start: float = 0.0, **kw: object) -> op.SlotView:
    return op.SlotView(state=state, activity=activity, entered_state=entered, entered_activity=entered,
                       claimed=state in ("Claimed", "Preempting"), job=True, job_start=job_start, **kw)  # type: ignore[arg-type]


def run_step(v: op.SlotView, idle: int, exprs: op.PolicyExprs, now: float, job: ClassAd | None = JOB) -> op.Step:
    return op.step(v, slot_ad(v.state, v.activity, keyboard_idle=idle, entered=v.entered_activity), job, exprs, now)


def test_busy_job_keeps_running_while_the_owner_is_away() -> None:
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 100, now - 100), 3600, desktop(), now)
    assert got == op.Step("Claimed", "Busy", ())


def test_owner_activity_suspends_then_evicts_then_the_slot_is_owner() -> None:
    exprs = desktop()
    now = time.time()
    # the owner touches the keyboard: a vanilla job is suspended
    got = run_step(view("Claimed", "Busy", now - 100, now - 100), 2, exprs, now)
    assert got == op.Step("Claimed", "Suspended", (op.SUSPEND,))
    # still at the keyboard, suspended for a while but under MaxSuspendTime: stays suspended
    got = run_step(view("Claimed", "Suspended", now - 60, now - 200), 1, exprs, now)
    assert got == op.Step("Claimed", "Suspended", ())
    # suspended longer than MaxSuspendTime: PREEMPT, vacated gracefully (resumed first to see SIGTERM)
    got = run_step(view("Claimed", "Suspended", now - 130, now - 300), 1, exprs, now)
    assert got == op.Step("Preempting", "Vacating", (op.CONTINUE, op.VACATE))
    # once the job has left, the claim is given up ...
    v = op.SlotView("Preempting", "Vacating", now - 5, now - 5, claimed=True, job=False)
    assert op.step(v, slot_ad("Preempting", "Vacating", keyboard_idle=1, entered=now - 5), None, exprs, now) \
        == op.Step("Preempting", "Vacating", (op.RELEASE,))
    # ... and the free slot belongs to its owner (START is False while the keyboard is busy)
    v = op.SlotView("Unclaimed", "Idle", now, now)
    got = op.step(v, slot_ad("Unclaimed", "Idle", keyboard_idle=1, entered=now), None, exprs, now)
    assert got == op.Step("Owner", "Idle", (op.OWNER_ACTION,))


def test_owner_leaves_and_the_suspended_job_continues() -> None:
    exprs = desktop()
    now = time.time()
    # CONTINUE needs KeyboardIdle > ContinueIdleTime and 10 s in Suspended
    got = run_step(view("Claimed", "Suspended", now - 20, now - 200), 40, exprs, now)
    assert got == op.Step("Claimed", "Busy", (op.CONTINUE,))
    got = run_step(view("Claimed", "Suspended", now - 20, now - 200), 20, exprs, now)
    assert got == op.Step("Claimed", "Suspended", ())


def test_owner_slot_returns_to_unclaimed_when_idle_long_enough() -> None:
    exprs = desktop()
    now = time.time()
    v = op.SlotView("Owner", "Idle", now - 100, now - 100)
    assert op.step(v, slot_ad("Owner", "Idle", keyboard_idle=30, entered=now - 100), None, exprs, now).state == "Owner"
    assert op.step(v, slot_ad("Owner", "Idle", keyboard_idle=61, entered=now - 100), None, exprs, now) \
        == op.Step("Unclaimed", "Idle", ())


def test_retirement_time_is_respected_before_vacating() -> None:
    # PREEMPT without suspension (WANT_SUSPEND false): the job retires until
    # MaxJobRetirementTime after its start, then is vacated.
    exprs = desktop("WANT_SUSPEND = False\nMAXJOBRETIREMENTTIME = 300\n")
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 100, now - 100), 1, exprs, now)
    assert got == op.Step("Claimed", "Retiring", (op.PREEMPTED,))  # the startd notes it
    got = run_step(view("Claimed", "Retiring", now - 50, now - 100, preempt_was_true=True), 1, exprs, now)
    assert got == op.Step("Claimed", "Retiring", ())
    got = run_step(view("Claimed", "Retiring", now - 50, now - 301, preempt_was_true=True), 1, exprs, now)
    assert got == op.Step("Preempting", "Vacating", (op.VACATE,))


def test_the_jobs_own_retirement_time_only_shortens_the_machines() -> None:
    exprs = desktop("WANT_SUSPEND = False\nMAXJOBRETIREMENTTIME = 300\n")
    now = time.time()
    short = ClassAd({**{k: JOB[k] for k in JOB}, "MaxJobRetirementTime": 50})
    got = run_step(view("Claimed", "Busy", now - 100, now - 100), 1, exprs, now, job=short)
    assert got == op.Step("Preempting", "Vacating", (op.VACATE,))
    long = ClassAd({**{k: JOB[k] for k in JOB}, "MaxJobRetirementTime": 10_000})
    assert op.retirement_time(ClassAd(), long, exprs) == 300


def test_kill_after_the_vacate_time() -> None:
    exprs = desktop()
    now = time.time()
    # JobMaxVacateTime = 10: after 5 s still vacating, after 11 s killed
    got = run_step(view("Preempting", "Vacating", now - 5, now - 100), 1, exprs, now)
    assert got == op.Step("Preempting", "Vacating", ())
    got = run_step(view("Preempting", "Vacating", now - 11, now - 100), 1, exprs, now)
    assert got == op.Step("Preempting", "Killing", (op.KILL,))
    # MachineMaxVacateTime caps the job's wish
    assert op.vacate_time(ClassAd(), JOB, desktop("MachineMaxVacateTime = 3\n")) == 3


def test_kill_expression_kills_at_once() -> None:
    exprs = desktop("KILL = KeyboardIdle < 5\n")
    now = time.time()
    got = run_step(view("Preempting", "Vacating", now - 1, now - 100), 1, exprs, now)
    assert got == op.Step("Preempting", "Killing", (op.KILL,))


def test_want_vacate_false_skips_the_soft_kill() -> None:
    exprs = op.PolicyExprs(preempt="True", want_vacate="False")
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 1, now - 100), 1, exprs, now)
    assert got == op.Step("Preempting", "Killing", (op.KILL,))


@pytest.mark.parametrize(("how", "expected"), [
    ("graceful", op.Step("Claimed", "Retiring", ())),
    ("quick", op.Step("Preempting", "Vacating", (op.VACATE,))),
    ("fast", op.Step("Preempting", "Killing", (op.KILL,))),
])
def test_drain_modes(how: str, expected: op.Step) -> None:
    exprs = op.PolicyExprs(max_job_retirement_time="3600")
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 1, now - 100, drain=how), 3600, exprs, now)
    assert got == expected


def test_drained_and_off_slots_are_not_offered() -> None:
    exprs = op.PolicyExprs()
    now = time.time()
    ad = slot_ad("Unclaimed", "Idle", keyboard_idle=3600, entered=now)
    v = op.SlotView("Unclaimed", "Idle", now, now, drain="graceful", children=1)
    assert op.step(v, ad, None, exprs, now) == op.Step("Drained", "Retiring", (op.OWNER_ACTION,))
    v = op.SlotView("Drained", "Retiring", now, now, drain="graceful")
    assert op.step(v, ad, None, exprs, now) == op.Step("Drained", "Idle", ())
    v = op.SlotView("Unclaimed", "Idle", now, now, off=True)
    assert op.step(v, ad, None, exprs, now) == op.Step("Owner", "Idle", (op.OWNER_ACTION,))
    v = op.SlotView("Owner", "Idle", now, now)
    assert op.step(v, ad, None, exprs, now) == op.Step("Unclaimed", "Idle", ())
    v = op.SlotView("Claimed", "Idle", now, now, claimed=True, off=True)
    assert op.step(v, ad, None, exprs, now) == op.Step("Claimed", "Idle", (op.RELEASE,))


def test_is_owner_and_a_plainly_false_start_mean_owner_state() -> None:
    now = time.time()
    ad = slot_ad("Unclaimed", "Idle", keyboard_idle=3600, entered=now)
    v = op.SlotView("Unclaimed", "Idle", now, now)
    assert op.step(v, ad, None, op.PolicyExprs(is_owner="True"), now).state == "Owner"
    assert op.step(v, ad, None, op.PolicyExprs(start="False"), now).state == "Owner"
    # START that needs a job to decide (undefined without one) keeps the slot offered
    assert op.step(v, ad, None, op.PolicyExprs(start="TARGET.Owner == \"alice\""), now).state == "Unclaimed"


def test_a_preempting_claim_retires_the_job() -> None:
    exprs = op.PolicyExprs(max_job_retirement_time="600")
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 1, now - 100, preempt=True), 3600, exprs, now)
    assert got == op.Step("Claimed", "Retiring", ())
    got = run_step(view("Claimed", "Busy", now - 1, now - 700, preempt=True), 3600, exprs, now)
    assert got == op.Step("Preempting", "Vacating", (op.VACATE,))


def test_retirement_ends_when_its_reason_goes_away_unless_preempt_started_it() -> None:
    # HTCondor's unretire: the preempting claim was released (or the drain cancelled)
    exprs = op.PolicyExprs(max_job_retirement_time="600")
    now = time.time()
    got = run_step(view("Claimed", "Retiring", now - 10, now - 100), 3600, exprs, now)
    assert got == op.Step("Claimed", "Busy", ())
    got = run_step(view("Claimed", "Retiring", now - 10, now - 100, drain="graceful"), 3600, exprs, now)
    assert got == op.Step("Claimed", "Retiring", ())
    # a retirement PREEMPT started is irreversible, even once PREEMPT is false again
    got = run_step(view("Claimed", "Retiring", now - 10, now - 100, preempt_was_true=True), 3600, exprs, now)
    assert got == op.Step("Claimed", "Retiring", ())
    # PREEMPT turning true during a preempting claim's retirement makes it irreversible too
    exprs = op.PolicyExprs(max_job_retirement_time="600", preempt="True")
    got = run_step(view("Claimed", "Retiring", now - 10, now - 100, preempt=True), 3600, exprs, now)
    assert got == op.Step("Claimed", "Retiring", (op.PREEMPTED,))


def test_an_unparsable_policy_expression_is_never_true() -> None:
    exprs = op.PolicyExprs(preempt="(((", suspend="KeyboardIdle <", want_suspend="True")
    now = time.time()
    got = run_step(view("Claimed", "Busy", now - 10, now - 100), 1, exprs, now)
    assert got == op.Step("Claimed", "Busy", ())
    assert op.evaluate("(((", ClassAd(), None) is Value.Error


def test_constant_policies_are_recognised():
    """HTCondor's defaults (including ``MaxVacateTime = 10 * 60``) read no ad, so the startd
    may skip rebuilding slot ads for them; anything naming an attribute or time() may not."""
    assert op.is_constant(op.PolicyExprs())
    assert op.is_constant(op.PolicyExprs(suspend="(1 + 2) > 4 ? false : false"))
    assert not op.is_constant(op.PolicyExprs(suspend="KeyboardIdle < 60"))
    assert not op.is_constant(op.PolicyExprs(preempt="time() > 5"))
    assert not op.is_constant(op.PolicyExprs(start="TARGET.Owner == \"alice\""))
