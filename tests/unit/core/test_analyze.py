"""``roost q -analyze``'s pure core: hand-built job and slot ads, no pool."""

from __future__ import annotations

from roost.classad import ClassAd, ExprTree
from roost.core.analyze import analyze, render, slot_refusal
from roost.core.concurrency import ConcurrencyLimits

REQ = ('(TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk)'
       ' && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)')


def job(memory: int = 1024, requirements: str = REQ, status: int = 1, **extra: object) -> ClassAd:
    ad = ClassAd({"ClusterId": 7, "ProcId": 0, "Owner": "alice", "User": "alice@pool", "JobStatus": status,
                  "RequestCpus": 1, "RequestMemory": memory, "RequestDisk": 1000, **extra})
    ad["Requirements"] = ExprTree(requirements)
    return ad


def slot(name: str, memory: int = 32000, state: str = "Unclaimed", start: str = "True",
         partitionable: bool = False, **extra: object) -> ClassAd:
    ad = ClassAd({"Name": name, "Arch": "X86_64", "OpSys": "LINUX", "Disk": 100000, "Cpus": 4,
                  "Memory": memory, "HasFileTransfer": True, "State": state,
                  "PartitionableSlot": partitionable, **extra})
    ad["Start"] = ExprTree(start)
    ad["Requirements"] = ExprTree("START")
    return ad


def pool(n: int = 40, **kw: object) -> list[ClassAd]:
    return [slot(f"slot{i}@m", **kw) for i in range(n)]  # type: ignore[arg-type]


def test_impossible_memory_names_the_clause_and_the_largest_value() -> None:
    slots = pool(30) + pool(10, memory=16000)
    a = analyze(job(memory=64000), slots)
    assert a.slots == 40 and a.job_rejects == 40 and a.matching == 0
    mem = next(c for c in a.clauses if "Memory" in c.text)
    assert mem.rejects == 40 and mem.alone == 40
    assert a.key_clause is mem
    assert all(c.rejects == 0 for c in a.clauses if c is not mem)
    assert "0 of 40 slots" in a.suggestion and "largest Memory is 32000" in a.suggestion
    assert "request_memory to at most 32000" in a.suggestion
    assert mem.values["Memory"] == [(32000, 30), (16000, 10)]


def test_impossible_arch_suggests_a_value_the_pool_has() -> None:
    a = analyze(job(requirements='TARGET.Arch == "SPARC" && TARGET.Memory >= RequestMemory'), pool(5))
    assert a.key_clause is not None and "SPARC" in a.key_clause.text
    assert 'change the clause to `Arch == "X86_64"`' in a.suggestion
    assert 'Arch in the pool: "X86_64" (5)' in a.suggestion


def test_the_clause_that_alone_rejects_most_is_chosen() -> None:
    # 10 slots lack memory only; 5 lack both memory and the right OpSys: Memory matters most.
    slots = pool(10, memory=512) + pool(5, memory=512, OpSys="WINDOWS") + pool(5)
    a = analyze(job(memory=1024), slots)
    mem = next(c for c in a.clauses if "Memory" in c.text)
    opsys = next(c for c in a.clauses if "OpSys" in c.text)
    assert (mem.rejects, mem.alone, opsys.rejects, opsys.alone) == (15, 10, 5, 0)
    assert a.key_clause is mem
    assert a.job_rejects == 15 and a.matching == 5 and a.available == 5
    assert "5 matching slot(s) are free" in a.suggestion


def test_slot_side_start_clause_is_reported() -> None:
    slots = pool(3, start='TARGET.Owner != "alice" && KeyboardIdle > 60', KeyboardIdle=600)
    a = analyze(job(), slots)
    assert a.job_rejects == 0 and a.slot_rejects == 3 and a.matching == 0
    assert a.slot_clauses == [('TARGET.Owner != "alice" is false', 3)]
    assert "refuse it by their own policy" in a.suggestion
    assert slot_refusal(slots[0], job()) == ("START", "false", 'TARGET.Owner != "alice" is false')


def test_busy_pool_says_wait_with_priority() -> None:
    slots = (pool(4, state="Claimed", RemoteUser="bob@pool") + pool(1, state="Owner")
             + pool(1, state="Drained") + pool(1, state="Claimed", RemoteUser="alice@pool"))
    users = [{"name": "bob@pool", "effective": 500.0}, {"name": "alice@pool", "effective": 2000.0},
             {"name": "carol@pool", "effective": 100.0}, {"name": "group_a", "effective": 1.0}]
    a = analyze(job(), slots, users)
    assert (a.matching, a.claimed_by_others, a.claimed_by_me, a.owner_state, a.drained, a.available) == \
        (7, 4, 1, 1, 1, 0)
    assert (a.priority_rank, a.priority_of) == (3, 3)
    assert a.suggestion.startswith("wait: 7 matching slot(s) are busy (4 claimed by others")
    assert "your priority is 3 of 3" in a.suggestion


def test_without_a_priority_table_the_wait_still_works() -> None:
    a = analyze(job(), pool(2, state="Claimed", RemoteUser="bob@pool"), None)
    assert a.priority_rank is None and a.suggestion.startswith("wait: 2 matching slot(s) are busy")
    assert "priority" not in a.suggestion


def test_partitionable_slot_judged_by_its_size_and_what_is_left() -> None:
    full = slot("slot1@big", memory=1000, partitionable=True, TotalSlotMemory=64000, TotalSlotCpus=4,
                TotalSlotDisk=100000)
    a = analyze(job(memory=8000), [full])
    assert a.job_rejects == 0 and a.matching == 1 and a.too_full == 1 and a.available == 0
    assert "Memory 8000 wanted, 1000 left" in a.too_full_detail[0]
    assert "partitionable with too little left" in a.suggestion
    # A request larger than the whole machine is the job's own Requirements' fault.
    a = analyze(job(memory=128000), [full])
    assert a.job_rejects == 1 and "largest Memory is 64000" in a.suggestion


def test_held_running_and_done_jobs_say_so() -> None:
    a = analyze(job(status=5, HoldReason="input file missing"), pool(2))
    assert a.suggestion.startswith("the job is held: input file missing")
    assert "roost release 7.0" in a.suggestion
    assert analyze(job(status=2, RemoteHost="slot1@m"), pool(2)).suggestion.startswith("it is running on slot1@m")
    assert analyze(job(status=4), pool(2)).suggestion.startswith("it is completed")
    assert "held" in render(analyze(job(status=5, HoldReason="x"), []))


def test_empty_pool() -> None:
    a = analyze(job(), [])
    assert a.slots == 0 and "no slots" in a.suggestion


def test_render_better_has_the_clause_table_and_values() -> None:
    j = job(memory=64000)
    text = render(analyze(j, pool(40)), j, better=True)
    assert "40 slots in the pool:" in text
    assert "rejected by your job's Requirements" in text
    assert "TARGET.Memory >= RequestMemory  <- matters most" in text
    assert "Memory in the pool: 32000 (40)" in text
    assert text.rstrip().splitlines()[-1].startswith("Suggestion: Memory >= 64000: 0 of 40 slots")
    short = render(analyze(j, pool(40)), j)
    assert "clause by clause" not in short and "Suggestion:" in short


def test_attribute_no_slot_has_is_named_not_offered_as_a_value() -> None:
    j = job(requirements=REQ + " && (TARGET.HasFooBar == true)")
    a = analyze(j, pool(5))
    assert a.key_clause is not None and "HasFooBar" in a.key_clause.text
    assert a.suggestion.startswith("no slot has HasFooBar (undefined on all 5 slots)")
    assert '"undefined"' not in a.suggestion and "STARTD_ATTRS" in a.suggestion
    text = render(a, j, better=True)
    assert "HasFooBar in the pool: undefined (5)" in text  # the value, not the string "undefined"
    # Numeric comparisons and bare names too.
    a = analyze(job(requirements=REQ + " && GPUMemory >= 8000"), pool(3))
    assert a.suggestion.startswith("no slot has GPUMemory")


def test_attribute_some_slots_have_suggests_only_real_values() -> None:
    slots = pool(3) + [slot("gpu@m", Site="north")]
    a = analyze(job(requirements=REQ + ' && (TARGET.Site == "south")'), slots)
    assert "Site in the pool: " in a.suggestion and 'change the clause to `Site == "north"`' in a.suggestion
    a = analyze(job(requirements=REQ + " && (TARGET.Gpus2 >= 2)"), pool(3) + [slot("g@m", Gpus2=1)])
    assert "the largest Gpus2 is 1" in a.suggestion and "undefined" not in a.suggestion


def test_partitionable_slot_policy_judged_by_its_whole_size() -> None:
    # START reads the slot's Cpus: a full partitionable slot is busy, not refusing the job.
    full = slot("slot1@big", partitionable=True, start="MY.Cpus >= TARGET.RequestCpus", Cpus=0,
                TotalSlotCpus=4, TotalSlotMemory=32000, TotalSlotDisk=100000)
    a = analyze(job(), [full])
    assert a.slot_rejects == 0 and a.too_full == 1 and "Cpus 1 wanted, 0 left" in a.too_full_detail[0]


def test_many_partitionable_slots_listing_is_capped() -> None:
    slots = [slot(f"p{i}@m", partitionable=True, memory=100, TotalSlotMemory=32000, TotalSlotCpus=4,
                  TotalSlotDisk=100000) for i in range(25)]
    j = job(memory=8000)
    text = render(analyze(j, slots), j, better=True)
    assert "  ... and 15 more" in text
    assert sum(ln.startswith("  p") for ln in text.splitlines()) == 10
    one = render(analyze(j, slots[:1]), j, better=True)
    assert "1 slot in the pool:" in one and "more" not in one


# -- concurrency limits and accounting groups (the negotiator's LIMITS) --------------


def _limits(**kw: object) -> ConcurrencyLimits:
    return ConcurrencyLimits(**kw)  # type: ignore[arg-type]


def test_a_full_concurrency_limit_is_the_reason_even_with_free_slots() -> None:
    j = job(ConcurrencyLimits="license:2, db")
    a = analyze(j, pool(3), limits=_limits(limits={"license": 4}, in_use={"license": 3}))
    assert a.available == 3
    assert [(s.name, s.need, s.limit, s.in_use, s.full) for s in a.limits] == \
        [("db", 1.0, 2308032.0, 0.0, False), ("license", 2.0, 4.0, 3.0, True)]
    assert a.suggestion == ("wait: concurrency limit LICENSE: 3 of 4 in use, the job needs 2; "
                            "it starts when jobs holding LICENSE end")
    text = render(a, j)
    assert "Concurrency limits:\n  DB: 0 of 2308032 in use, the job needs 1\n" in text
    assert "  LICENSE: 3 of 4 in use, the job needs 2  <- full" in text
    # With room left, the limit is no reason: the free slots are.
    a = analyze(j, pool(3), limits=_limits(limits={"license": 5}, in_use={"license": 3}))
    assert a.suggestion.startswith("3 matching slot(s) are free")


def test_a_limit_smaller_than_the_need_can_never_run_whatever_the_slots() -> None:
    j = job(memory=999999, ConcurrencyLimits="LICENSE:3")
    a = analyze(j, pool(2), limits=_limits(limits={"license": 2}))
    assert a.limits[0].never
    assert a.suggestion.startswith("the job needs 3 of concurrency limit LICENSE, which allows 2 at once: "
                                   "it can never run; ask for at most 2")
    assert "LICENSE_LIMIT" in a.suggestion
    # Group defaults apply to dotted names (CONCURRENCY_LIMIT_DEFAULT_<PREFIX>).
    cl = _limits(limits={}, group_defaults={"sw": 1.0}, default=10.0)
    a = analyze(job(ConcurrencyLimits="sw.matlab:2"), pool(1), limits=cl)
    assert a.limits[0].limit == 1.0 and a.limits[0].never


def test_a_malformed_limit_text_is_named_without_the_negotiator() -> None:
    a = analyze(job(ConcurrencyLimits="license:lots"), pool(2))
    assert a.bad_limits == "license:lots" and a.limits == []
    assert a.suggestion.startswith("ConcurrencyLimits = 'license:lots' is malformed")
    # Unknown to the negotiator: no limits shown, the slots decide.
    a = analyze(job(ConcurrencyLimits="license"), pool(2))
    assert a.limits == [] and a.suggestion.startswith("2 matching slot(s) are free")


def test_a_group_at_its_allocation_waits_and_says_why() -> None:
    groups = [{"name": "physics", "quota": 4, "dynamic": None, "accept_surplus": False,
               "allocation": 4.0, "held": 4.0},
              {"name": "physics.theory", "quota": 2, "dynamic": None, "accept_surplus": True,
               "allocation": 3.0, "held": 1.0}]
    j = job(RequestCpus=2)
    a = analyze(j, pool(3), submitter="physics.alice@pool", groups=groups)
    assert a.group is not None and a.group.name == "physics" and a.group.full
    assert a.suggestion == ("wait: group physics holds 4 of the 4 it may hold now (quota 4, no surplus); it "
                            "starts when the group's running jobs end; ask the pool's administrator for a "
                            "larger quota or GROUP_ACCEPT_SURPLUS")
    assert "Accounting group: group physics holds 4 of the 4" in render(a, j)
    # The longest matching group is the submitter's; this one has room for 2 CPUs.
    a = analyze(j, pool(3), submitter="physics.theory.bob@pool", groups=groups)
    assert a.group is not None and a.group.name == "physics.theory" and not a.group.full
    assert a.suggestion.startswith("3 matching slot(s) are free")
    # 3 CPUs would not fit in what is left of its allocation.
    a = analyze(job(RequestCpus=3), pool(3), submitter="physics.theory.bob@pool", groups=groups)
    assert a.group is not None and a.group.full and "accepts surplus" in a.suggestion
    # Before any cycle with groups: what it holds, without a verdict.
    fresh = [dict(groups[0], allocation=None)]
    a = analyze(j, pool(3), submitter="physics.alice@pool", groups=fresh)
    assert a.group is not None and not a.group.full
    assert "Accounting group: group physics holds 4; what it may hold is not computed yet (quota 4" in render(a, j)
    # Not in any group: nothing about groups.
    assert analyze(j, pool(3), submitter="alice@pool", groups=groups).group is None


def test_a_container_or_java_job_on_a_pool_without_runtimes_says_where_to_look() -> None:
    a = analyze(job(requirements='(TARGET.Arch == "X86_64") && TARGET.HasContainer&& TARGET.HasDockerURL'), pool(4))
    assert a.suggestion.startswith("no slot has HasContainer (undefined on all 4 slots): no execute host has a "
                                   "container runtime")
    assert "docs/universes.md" in a.suggestion and "STARTD_ATTRS" not in a.suggestion
    a = analyze(job(requirements="TARGET.HasJava && (TARGET.Memory >= RequestMemory)"), pool(2))
    assert "no execute host has a Java runtime" in a.suggestion
