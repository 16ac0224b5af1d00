"""The ``use CATEGORY : Template`` metaknobs.

Each template is a body of ordinary configuration text, read as if it
were written where the ``use`` line is.  Arguments (``use POLICY :
Limit_Job_Runtimes(3600)``) are substituted into the body before it is
read: ``$(1)`` is the first argument, ``$(1:dflt)`` has a default,
``$(1?)`` is 1 when given and 0 when not, ``$(2+)`` is the second and
later arguments joined by ", ".  The policies follow HTCondor's meaning
(they speak of the same slot attributes) so HTCondor admins meet no
surprises; the roles list roost's daemons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Template:
    category: str
    name: str
    description: str
    body: str


def _t(category: str, name: str, description: str, body: str) -> Template:
    return Template(category, name, description, body)


_ALL = [
    # ---- roles: which daemons this host runs -----------------------------
    _t("ROLE", "Personal", "a whole pool on this one host, reachable only over loopback", """
        CONDOR_HOST = 127.0.0.1
        COLLECTOR_HOST = $(CONDOR_HOST):0
        BIND_ADDRESS = 127.0.0.1
        DAEMON_LIST = MASTER COLLECTOR NEGOTIATOR SCHEDD STARTD WEB
        RunBenchmarks = 0
        MASTER_BACKOFF_CONSTANT = 1
        MASTER_BACKOFF_CEILING = 60
        MASTER_RECOVER_FACTOR = 60
    """),
    _t("ROLE", "Submit", "this host runs a schedd", """
        DAEMON_LIST = $(DAEMON_LIST) SCHEDD
    """),
    _t("ROLE", "Execute", "this host runs a startd", """
        DAEMON_LIST = $(DAEMON_LIST) STARTD
    """),
    _t("ROLE", "CentralManager", "this host runs the collector and negotiator", """
        DAEMON_LIST = $(DAEMON_LIST) COLLECTOR NEGOTIATOR
    """),
    # ---- building blocks --------------------------------------------------
    _t("FEATURE", "Policy_Expr_Fragments", "named pieces of desktop policy expressions", """
        PolicyExprFragments = 1
        KeyboardBusy = (KeyboardIdle < $(MINUTE))
        ConsoleBusy = (ConsoleIdle < $(MINUTE))
        KeyboardNotBusy = ($(KeyboardBusy) == False)
        JustCPU = ($(CPUBusy) && ($(KeyboardBusy) == False))
        MachineBusy = ($(CPUBusy) || $(KeyboardBusy))
        NonCondorLoadAvg = (LoadAvg - CondorLoadAvg)
        CpuIdle = ($(NonCondorLoadAvg) <= $(BackgroundLoad))
        CpuBusy = ($(NonCondorLoadAvg) >= $(HighLoad))
        ActivationTimer = ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0)
        LastCkpt = (time() - LastPeriodicCheckpoint)
    """),
    _t("FEATURE", "PartitionableSlot", "one partitionable slot holding the whole machine (args: [type], [resources])", """
        SLOT_TYPE_$(1:1) = $(2:100%)
        SLOT_TYPE_$(1:1)_PARTITIONABLE = True
        NUM_SLOTS_TYPE_$(1:1) = 1
    """),
    _t("FEATURE", "StaticSlots", "one static slot per CPU (args: [type], [count])", """
        SLOT_TYPE_$(1:1) = cpus=1
        SLOT_TYPE_$(1:1)_PARTITIONABLE = False
        NUM_SLOTS_TYPE_$(1:1) = $(2:$(NUM_CPUS))
    """),
    # ---- startd policies -----------------------------------------------------
    _t("POLICY", "Desktop", "scavenge idle desktop cycles: start when idle, suspend then evict on owner activity", """
        if ! defined PolicyExprFragments
            use FEATURE : Policy_Expr_Fragments
        endif
        STARTD_LATCH_EXPRS = $(STARTD_LATCH_EXPRS) CpuBusy
        CpuBusyTimer = IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0)
        WANT_SUSPEND = ($(SmallJob) || $(KeyboardNotBusy) || $(IsVanilla)) && ($(SUSPEND))
        WANT_VACATE = $(ActivationTimer) > 600 || $(IsVanilla)
        SUSPEND = ($(KeyboardBusy) || (($(CpuBusyTimer) > 120) && $(ActivationTimer) > 90))
        CONTINUE = ($(CPUIdle) && ($(ActivityTimer) > 10) && (KeyboardIdle > $(ContinueIdleTime)))
        PREEMPT = (((Activity == "Suspended") && ($(ActivityTimer) > $(MaxSuspendTime))) || (SUSPEND && (WANT_SUSPEND == False)))
        START = ((KeyboardIdle > $(StartIdleTime)) && ($(CPUIdle) || (State != "Unclaimed" && State != "Owner")))
        KILL = False
        MaxJobRetirementTime = 0
        CLAIM_WORKLIFE =
        SLOTS_CONNECTED_TO_KEYBOARD = 1000000
        SLOTS_CONNECTED_TO_CONSOLE = 1000000
        IS_OWNER = (START =?= False)
    """),
    _t("POLICY", "Always_Run_Jobs", "run jobs whenever a slot is free and never preempt them", """
        WANT_SUSPEND = False
        WANT_VACATE = True
        SUSPEND = False
        CONTINUE = True
        PREEMPT = False
        START = True
        KILL = False
        PREEMPTION_REQUIREMENTS = False
        NEGOTIATOR_CONSIDER_PREEMPTION = False
        MaxJobRetirementTime = 2147483647
        CLAIM_WORKLIFE = 1200
    """),
    _t("POLICY", "Dedicated", "roost's: a dedicated resource of one schedd's dedicated scheduler (args: [schedd name]); "
       "its jobs first, never suspended or evicted; opportunistic jobs meanwhile, vacated for them", """
        DedicatedScheduler = "DedicatedScheduler@$(1:$(FULL_HOSTNAME))"
        STARTD_ATTRS = $(STARTD_ATTRS) DedicatedScheduler
        START = True
        RANK_FACTOR = 1000000
        RANK = (TARGET.Scheduler =?= $(DedicatedScheduler)) * $(RANK_FACTOR)
        WANT_SUSPEND = False
        SUSPEND = False
        CONTINUE = True
        PREEMPT = False
        KILL = False
        WANT_VACATE = True
        MaxJobRetirementTime = ifThenElse(TARGET.Scheduler =?= $(DedicatedScheduler), 2147483647, 0)
    """),
    _t("POLICY", "Limit_Job_Runtimes", "evict jobs that run longer than a limit (args: [seconds], default 24 hours)", """
        MAX_JOB_RUNTIME = $(1:24*3600)
        MaxJobRetirementTime = $(MAX_JOB_RUNTIME)+120
        PREEMPT = (Activity == "Busy") && ((time() - EnteredCurrentActivity) > $(MAX_JOB_RUNTIME))
    """),
    _t("POLICY", "Preempt_If", "add a trigger to PREEMPT (args: knob holding the trigger expression)", """
        if ! $(1?)
            error : use POLICY : Preempt_If needs the name of a knob holding the trigger expression
        endif
        if defined PREEMPT
            PREEMPT = $($(1)) || $(PREEMPT)
        else
            PREEMPT = $($(1))
        endif
        MAXJOBRETIREMENTTIME = ifthenelse($($(1)), -1, $(MAXJOBRETIREMENTTIME:0))
        if defined WANT_SUSPEND
            WANT_SUSPEND = $($(1)) =!= true && $(WANT_SUSPEND)
        else
            WANT_SUSPEND = $($(1)) =!= true
        endif
    """),
    _t("POLICY", "Want_Hold_If", "put evicted jobs on hold when a trigger fires (args: knob, subcode, reason)", """
        use POLICY : Preempt_If($(1))
        if ! $(3?)
            error : use POLICY : Want_Hold_If needs 3 arguments: knob, subcode, reason text
        endif
        if defined WANT_HOLD
            WANT_HOLD = (JobUniverse != 1 && $($(1))) || $(WANT_HOLD)
        else
            WANT_HOLD = (JobUniverse != 1 && $($(1)))
        endif
        WANT_HOLD_SUBCODE = ifThenElse($($(1)), $(2), $(WANT_HOLD_SUBCODE:UNDEFINED))
        WANT_HOLD_REASON = ifThenElse($($(1)), "$(3+)", $(WANT_HOLD_REASON:UNDEFINED))
    """),
    _t("POLICY", "Preempt_If_Memory_Exceeded", "evict a job at once when it uses more memory than its slot has", """
        MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
        use POLICY : Preempt_If(MEMORY_EXCEEDED)
    """),
    _t("POLICY", "Hold_If_Memory_Exceeded", "evict and hold a job that uses more memory than its slot has", """
        MEMORY_EXCEEDED = (JobUniverse != 13 && MemoryUsage =!= UNDEFINED && MemoryUsage > Memory)
        HOLD_REASON_MEMORY_EXCEEDED = memory usage exceeded request_memory
        use POLICY : Want_Hold_If(MEMORY_EXCEEDED, $(HOLD_SUBCODE_MEMORY_EXCEEDED:102), $(HOLD_REASON_MEMORY_EXCEEDED))
    """),
    _t("POLICY", "Preempt_If_Runtime_Exceeds", "evict jobs running longer than a limit (args: [seconds])", """
        MAX_JOB_RUNTIME = $(1:24*3600)
        PREEMPT_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
        use POLICY : Preempt_If(PREEMPT_RUNTIME_EXCEEDS)
    """),
    _t("POLICY", "Hold_If_Runtime_Exceeds", "evict and hold jobs running longer than a limit (args: [seconds])", """
        MAX_JOB_RUNTIME = $(1:24*3600)
        HOLD_REASON_RUNTIME_EXCEEDS = runtime exceeded maximum ($(MAX_JOB_RUNTIME) seconds)
        HOLD_RUNTIME_EXCEEDS = (JobState == "Running") && ((time() - JobCurrentStartDate) > $(MAX_JOB_RUNTIME))
        use POLICY : Want_Hold_If(HOLD_RUNTIME_EXCEEDS, $(HOLD_SUBCODE_RUNTIME_EXCEEDS:103), $(HOLD_REASON_RUNTIME_EXCEEDS))
    """),
]

TEMPLATES: dict[tuple[str, str], Template] = {
    (t.category.upper(), t.name.upper()): t for t in _ALL
}
CATEGORIES = frozenset(t.category.upper() for t in _ALL)

_ARG_REF = re.compile(r"\$\((\d+)(\?|\+|:[^()]*(?:\([^()]*\)[^()]*)*)?\)")


def lookup(category: str, name: str) -> Template | None:
    """The template ``CATEGORY : name``, matched without regard to case."""
    return TEMPLATES.get((category.upper(), name.upper()))


def names(category: str) -> list[str]:
    """Template names in a category, for the error that lists what exists."""
    return sorted(t.name for t in _ALL if t.category.upper() == category.upper())


def instantiate(template: Template, args: list[str]) -> str:
    """The template's body with its ``$(N)`` argument references filled in."""

    def fill(m: re.Match[str]) -> str:
        index = int(m.group(1))
        mod = m.group(2) or ""
        given = 0 < index <= len(args) and args[index - 1] != ""
        if mod == "?":
            return "1" if given else "0"
        if mod == "+":
            return ", ".join(args[index - 1 :]) if given else ""
        if given:
            return args[index - 1]
        return mod[1:] if mod.startswith(":") else ""

    lines = [line.strip() for line in template.body.strip("\n").splitlines()]
    return "\n".join(_ARG_REF.sub(fill, line) for line in lines) + "\n"
