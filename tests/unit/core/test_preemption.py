"""Preemption: which claimed slots a job may take, and in what order."""

from roost.classad import ClassAd, ExprTree
from roost.core.matchmaker import Request, Slot, negotiate
from roost.core.preemption import (
    PRIORITY_PREEMPTION,
    RANK_PREEMPTION,
    PreemptionPolicy,
    preemption_kind,
    preemption_rank,
)

PRIO_REQ = "MY.RemoteUserPrio > TARGET.SubmitterUserPrio * 1.2"


def claimed(name, user="bob@x", prio=100.0, current_rank=0, rank="0", **extra):
    ad = ClassAd({"Name": name, "Cpus": 1, "Memory": 1024, "State": "Claimed",
                  "RemoteUser": user, "RemoteUserPrio": prio, "CurrentRank": current_rank,
                  "Requirements": True, **extra})
    ad["Rank"] = ExprTree(rank).node
    return Slot(name, ad, claim_id=f"preempt-{name}")


def idle(name):
    return Slot(name, ClassAd({"Name": name, "Cpus": 1, "Memory": 1024, "State": "Unclaimed",
                               "Requirements": True}), claim_id=f"claim-{name}")


def job(owner="alice", prio=1.0, **extra):
    ad = ClassAd({"Owner": owner, "RequestCpus": 1, "RequestMemory": 10,
                  "SubmitterUserPrio": prio, **extra})
    ad["Requirements"] = ExprTree("TARGET.Memory >= RequestMemory").node
    return ad


def run(slots, count=5, submitter="alice@x", policy=None, **kw):
    r = {submitter: [Request(submitter, 1, count, job(**kw))]}
    return negotiate(slots, r, [submitter], 0.0, preemption=policy)


def test_no_policy_no_preemption_and_default_requirements_is_false():
    slots = [claimed("c1")]
    assert run(slots).matches == []
    # HTCondor's default PREEMPTION_REQUIREMENTS is False: no priority preemption
    assert run(slots, policy=PreemptionPolicy.from_config()).matches == []


def test_priority_preemption_when_allowed():
    policy = PreemptionPolicy.from_config(PRIO_REQ)
    plan = run([claimed("c1", prio=100.0)], policy=policy, prio=1.0)
    assert [(m.slot.name, m.preempts) for m in plan.matches] == [("c1", True)]
    # not better enough: RemoteUserPrio 1.1 is not > 1.0 * 1.2
    assert run([claimed("c1", prio=1.1)], policy=policy, prio=1.0).matches == []
    # worse priority than the running user: never
    assert run([claimed("c1", prio=5.0)], policy=PreemptionPolicy.from_config("true"),
               prio=10.0).matches == []
    # NEGOTIATOR_CONSIDER_PREEMPTION = False
    off = PreemptionPolicy.from_config(PRIO_REQ, consider=False)
    assert run([claimed("c1")], policy=off).matches == []


def test_unclaimed_first_then_rank_then_priority_by_preemption_rank():
    policy = PreemptionPolicy.from_config(PRIO_REQ, "MY.RemoteUserPrio")
    slots = [
        claimed("prio_low", prio=50.0),
        claimed("prio_high", prio=500.0),
        claimed("ranked", rank='TARGET.Owner == "alice" ? 10 : 0', current_rank=1),
        idle("free"),
    ]
    plan = run(slots, count=10, policy=policy)
    assert [m.slot.name for m in plan.matches] == ["free", "ranked", "prio_high", "prio_low"]
    assert [m.preempts for m in plan.matches] == [False, True, True, True]
    assert plan.matches[1].slot.claim_id == "preempt-ranked"


def test_rank_preemption_without_priority_preemption():
    policy = PreemptionPolicy.from_config()  # requirements False: rank only
    slots = [claimed("r", rank='TARGET.Owner == "alice" ? 10 : 0', current_rank=5, prio=0.5)]
    plan = run(slots, policy=policy, prio=1000.0)  # far worse priority: rank still wins
    assert [m.slot.name for m in plan.matches] == ["r"] and plan.matches[0].preempts
    # the machine prefers what runs now: no preemption, not even by priority
    slots = [claimed("r", rank="1", current_rank=5, prio=500.0)]
    assert run(slots, policy=PreemptionPolicy.from_config("true"), prio=1.0).matches == []


def test_never_preempt_yourself_and_at_most_once_per_cycle():
    policy = PreemptionPolicy.from_config("true")
    slots = [claimed("mine", user="alice@x", rank="10", current_rank=0)]
    assert run(slots, policy=policy).matches == []
    slots = [claimed("c", prio=100.0)]
    r = {"alice@x": [Request("alice@x", 1, 3, job())], "carol@x": [Request("carol@x", 2, 3, job())]}
    plan = negotiate(slots, r, ["alice@x", "carol@x"], 0.0, preemption=policy)
    assert [(m.submitter, m.slot.name) for m in plan.matches] == [("alice@x", "c")]


def test_preemption_kind_direct():
    policy = PreemptionPolicy.from_config(PRIO_REQ)
    s = claimed("c", prio=100.0).ad
    assert preemption_kind(policy, s, job(), "alice@x", 1.0) == PRIORITY_PREEMPTION
    assert preemption_kind(policy, s, job(), "bob@x", 1.0) is None
    s2 = claimed("c", rank="3", current_rank=2).ad
    assert preemption_kind(policy, s2, job(), "alice@x", None) == RANK_PREEMPTION
    assert preemption_kind(None, s2, job(), "alice@x", 1.0) is None


def test_submitter_prio_mapping_overrides_job_attribute():
    policy = PreemptionPolicy.from_config("true")
    slots = [claimed("c", prio=10.0)]
    r = {"alice@x": [Request("alice@x", 1, 1, job(prio=50.0))]}
    assert negotiate(slots, r, ["alice@x"], 0.0, preemption=policy).matches == []
    plan = negotiate(slots, r, ["alice@x"], 0.0, preemption=policy,
                     submitter_prio={"alice@x": 2.0})
    assert len(plan.matches) == 1


def test_default_preemption_rank_takes_worst_user_then_shortest_run():
    # HTCondor's default: (RemoteUserPrio * 1000000) - ifThenElse(isUndefined(TotalJobRunTime), 0, TotalJobRunTime)
    policy = PreemptionPolicy.from_config()
    j = job()
    worse = claimed("w", prio=600.0, TotalJobRunTime=10).ad
    better_new = claimed("b", prio=500.0, TotalJobRunTime=0).ad
    short = claimed("s", prio=600.0, TotalJobRunTime=5).ad
    unknown = claimed("u", prio=600.0).ad
    ranks = {n: preemption_rank(policy, ad, j) for n, ad in
             (("w", worse), ("b", better_new), ("s", short), ("u", unknown))}
    assert ranks["w"] > ranks["b"]  # the worse-priority user goes first
    assert ranks["u"] > ranks["s"] > ranks["w"]  # among its jobs, the one run least
    assert ranks["u"] == 600.0 * 1000000


def test_priority_preemption_needs_a_strictly_better_priority():
    policy = PreemptionPolicy.from_config("true")
    s = claimed("c", prio=100.0).ad
    assert preemption_kind(policy, s, job(), "alice@x", 100.0) is None
    assert preemption_kind(policy, s, job(), "alice@x", 99.0) == PRIORITY_PREEMPTION
