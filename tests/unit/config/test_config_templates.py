"""``use CATEGORY : Template`` metaknobs, as adapted for roost."""

from __future__ import annotations

import pytest

from roost.config import Config
from roost.config.templates import TEMPLATES, instantiate, lookup


def cfg(text: str) -> Config:
    return Config.from_text(text, file="t.conf", facts={"DETECTED_CPUS": "4"})


def test_role_personal_is_a_loopback_pool_of_all_daemons() -> None:
    c = cfg("use ROLE : Personal\n")
    assert c.get("DAEMON_LIST") == "MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD WEB"
    assert c.get("BIND_ADDRESS") == "127.0.0.1"
    assert c.get("COLLECTOR_HOST") == "127.0.0.1:0"
    # identities, not the loopback address: every local user is on 127.0.0.1
    assert c.get("ALLOW_ADMINISTRATOR", "").startswith("condor@")
    assert "127.0.0.1" not in (c.get("ALLOW_DAEMON") or "127.0.0.1")


@pytest.mark.parametrize(
    ("roles", "daemons"),
    [
        ("Submit", "MASTER SCHEDD"),
        ("Execute", "MASTER STARTD"),
        ("CentralManager", "MASTER COLLECTOR NEGOTIATOR"),
        ("CentralManager, Submit Execute", "MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD"),
    ],
)
def test_roles_add_daemons(roles: str, daemons: str) -> None:
    assert cfg(f"use role : {roles}\n").get("DAEMON_LIST") == daemons


def test_template_names_and_categories_ignore_case() -> None:
    assert cfg("USE policy : always_run_jobs\n").get("PREEMPT") == "False"


def test_policy_desktop_speaks_of_keyboard_and_load() -> None:
    c = cfg("use POLICY : Desktop\n")
    start = c.get("START")
    assert "KeyboardIdle > 15 * 60" in start and "LoadAvg - CondorLoadAvg" in start
    assert "KeyboardIdle < 60" in c.get("SUSPEND")
    assert "KeyboardIdle > 5 * 60" in c.get("CONTINUE")
    assert 'Activity == "Suspended"' in c.get("PREEMPT")
    assert c.get("KILL") == "False"
    assert c.get_list("STARTD_LATCH_EXPRS") == ["CpuBusy"]


def test_policy_always_run_jobs_never_preempts() -> None:
    c = cfg("use POLICY : Always_Run_Jobs\n")
    assert (c.get_bool("START"), c.get_bool("PREEMPT"), c.get_bool("SUSPEND")) == (True, False, False)
    assert c.get_int("MaxJobRetirementTime") == 2147483647


def test_policy_dedicated_names_its_scheduler_and_ranks_its_jobs_first() -> None:
    c = cfg("use POLICY : Dedicated(schedd@cm.example)\n")
    assert c.get("DedicatedScheduler") == '"DedicatedScheduler@schedd@cm.example"'
    assert "DedicatedScheduler" in c.get("STARTD_ATTRS").split()
    assert c.get("RANK") == '(TARGET.Scheduler =?= "DedicatedScheduler@schedd@cm.example") * 1000000'
    assert (c.get_bool("START"), c.get_bool("PREEMPT"), c.get_bool("SUSPEND")) == (True, False, False)
    host = Config.from_text("use POLICY : Dedicated\n", file="t.conf", facts={"FULL_HOSTNAME": "cm.example"})
    assert host.get("DedicatedScheduler") == '"DedicatedScheduler@cm.example"'  # this host's schedd
    assert host.get("MaxJobRetirementTime").startswith("ifThenElse(TARGET.Scheduler =?= ")


def test_limit_job_runtimes_argument_and_default() -> None:
    c = cfg("use POLICY : Limit_Job_Runtimes(3600)\n")
    assert c.get_int("MAX_JOB_RUNTIME") == 3600
    assert c.get_int("MaxJobRetirementTime") == 3720
    assert c.get("PREEMPT").endswith("> 3600)")
    assert cfg("use POLICY : Limit_Job_Runtimes\n").get_int("MAX_JOB_RUNTIME") == 86400


def test_memory_policies_compose_with_existing_preempt() -> None:
    c = cfg("PREEMPT = MyOwnRule\nuse POLICY : Preempt_If_Memory_Exceeded\n")
    assert c.get("PREEMPT") == f"{c.get('MEMORY_EXCEEDED')} || MyOwnRule"
    h = cfg("use POLICY : Hold_If_Memory_Exceeded\n")
    assert h.get("WANT_HOLD") == f"(JobUniverse != 1 && {h.get('MEMORY_EXCEEDED')})"
    assert '"memory usage exceeded request_memory"' in h.get("WANT_HOLD_REASON")
    assert h.get("WANT_HOLD_SUBCODE").endswith(", 102, UNDEFINED)")


def test_source_of_template_knob_is_the_use_line() -> None:
    c = cfg("A = 1\nuse POLICY : Hold_If_Memory_Exceeded\n")
    entry = c.entry("WANT_HOLD")
    assert (entry.file, entry.line) == ("t.conf", 2)
    assert entry.via == "use POLICY:Hold_If_Memory_Exceeded > use POLICY:Want_Hold_If"


def test_partitionable_slot_feature() -> None:
    c = cfg("use FEATURE : PartitionableSlot\n")
    assert c.get("SLOT_TYPE_1") == "100%"
    assert c.get_bool("SLOT_TYPE_1_PARTITIONABLE") is True
    s = cfg("use FEATURE : StaticSlots\n")
    assert s.get_bool("SLOT_TYPE_1_PARTITIONABLE") is False
    assert s.get_int("NUM_SLOTS_TYPE_1") == 4


def test_argument_forms() -> None:
    t = lookup("POLICY", "want_hold_if")
    body = instantiate(t, ["TRIG", "7", "too big", "really"])
    assert "ifThenElse($(TRIG), 7, $(WANT_HOLD_SUBCODE:UNDEFINED))" in body
    assert '"too big, really"' in body
    assert "if ! 1" in body


def test_every_template_reads_cleanly_on_its_own() -> None:
    needs_args = {("POLICY", "PREEMPT_IF"): "(TRIG)", ("POLICY", "WANT_HOLD_IF"): "(TRIG, 1, why)"}
    for (cat, name), t in TEMPLATES.items():
        args = needs_args.get((cat, name), "")
        c = cfg(f"TRIG = x\nuse {cat} : {t.name}{args}\n")
        for knob in c.names(defaults=False):
            c.get(knob)  # every value expands without a loop


def test_role_personal_restarts_daemons_quickly_and_others_keep_htcondor_backoff() -> None:
    # A personal pool brings a killed daemon back after 1 s (doubling to 60 s), not HTCondor's 9 s.
    personal = cfg("use ROLE : Personal\n")
    assert personal.get_float("MASTER_BACKOFF_CONSTANT") == 1
    assert personal.get_float("MASTER_BACKOFF_CEILING") == 60
    assert personal.get_float("MASTER_RECOVER_FACTOR") == 60
    assert personal.get_float("MASTER_BACKOFF_FACTOR") == 2
    for text in ("", "use ROLE : Submit\n", "use ROLE : CentralManager, Execute\n"):
        c = cfg(text)
        assert c.get_float("MASTER_BACKOFF_CONSTANT") == 9
        assert c.get_float("MASTER_BACKOFF_CEILING") == 3600
        assert c.get_float("MASTER_RECOVER_FACTOR") == 300
