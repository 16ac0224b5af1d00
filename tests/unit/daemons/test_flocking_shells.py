"""The flocking shells' own logic over real queues and configurations: which idle jobs
the schedd offers another pool and under which Submitter ads, what a foreign
negotiator is answered, and how the lending negotiator admits, caps and keeps its ledger."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace

from roost.classad import ClassAd
from roost.config import Config
from roost.core.flock import FlockLevel, outbound_plan, parse_agreements
from roost.core.matchmaker import Request
from roost.daemons.negotiator_flock import (
    LEDGER_FILE,
    FlockLending,
    cap_requests,
    foreign_usage,
    received_from,
    slot_counts,
)
from roost.daemons.schedd.autocluster_ids import AutoClusters
from roost.daemons.schedd.flocking import (
    Flocking,
    accounting_groups,
    flock_submitter_ads,
    waiting_entries,
)
from roost.daemons.schedd.jobqueue import JobQueue
from roost.daemons.schedd.store import Store
from roost.net.auth import Identity
from roost.vocabulary import SlotState

AD = {"Cmd": "/bin/true", "JobStatus": 1, "Owner": "alice", "Requirements": "/Expr(true)/",
      "RequestMemory": 100, "QDate": 1000}
A_CONF = """UID_DOMAIN = a.example
FLOCK_AGREEMENTS = b
FLOCK_AGREEMENT_b = collector = 10.9.9.9; direction = send; domain = b.example; users = alice
FLOCK_AFTER = 30
"""
B_CONF = """UID_DOMAIN = b.example
FLOCK_AGREEMENTS = a
FLOCK_AGREEMENT_a = direction = take; domain = a.example; share = 2
"""


def _queue(tmp_path: Path) -> JobQueue:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()

    def add(owner: str, diffs: list[dict], **extra: object) -> None:
        cid = q.new_cluster_id()
        asyncio.run(q.store.commit(q.add_cluster(cid, owner, {**AD, "Owner": owner, **extra}, diffs,
                                                 (f"h#{cid}.", "#1"))))

    add("alice", [{"ProcId": i} for i in range(3)])  # cluster 1: may flock
    add("alice", [{"ProcId": 0}], WantFlocking=False, RequestMemory=300)  # cluster 2: stays
    add("bob", [{"ProcId": 0}, {"ProcId": 1}])  # cluster 3: bob is no user of the agreement
    return q


def _name(cluster) -> str:  # noqa: ANN001
    return f"{cluster.owner}@a.example"


def test_waiting_entries_group_idle_jobs_by_autocluster_with_their_wait(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    ac = AutoClusters(q, _name, lambda: None)
    waiting, flockable = waiting_entries(q, ac, _name, now=1100.0, by_default=True)
    by_user = sorted((w.user, w.idle, flockable[w.key], w.waited, w.want_flocking) for w in waiting)
    assert by_user == [("alice@a.example", 1, 0, 100.0, False), ("alice@a.example", 3, 3, 100.0, True),
                       ("bob@a.example", 2, 2, 100.0, True)]
    q.store.close()


def test_a_foreign_negotiator_is_answered_only_the_jobs_planned_for_its_pool(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    ac = AutoClusters(q, _name, lambda: None)
    cfg = Config.from_text(A_CONF)
    fl = Flocking(cfg, queue=q, autoclusters=ac, submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address),  # never called here
                  home_query=None, uid_domain="a.example", schedd_name="suba")
    waiting, fl.flockable = waiting_entries(q, ac, _name, now=1100.0, by_default=True)
    fl.plan = outbound_plan(waiting, fl.senders, FlockLevel(), now=1100.0, after=30.0)
    fl.users = {w.key: w.user for w in waiting}
    alice = [r for r in ac.requests("alice", None)]
    assert sorted(r["count"] for r in alice) == [1, 3]
    theirs = SimpleNamespace(identity=Identity("condor@b.example", "IDTOKENS"), host="10.9.9.9")
    ours = SimpleNamespace(identity=Identity("condor@a.example", "IDTOKENS"), host="10.9.9.9")
    stranger = SimpleNamespace(identity=Identity("condor@c.example", "IDTOKENS"), host="10.9.9.9")
    assert fl.foreign_pool(ours) is None and fl.foreign_pool(SimpleNamespace(identity=None, host="10.9.9.9")) is None
    assert fl.foreign_pool(stranger) == ""
    assert fl.foreign_pool(theirs) == "b"
    assert [r["count"] for r in fl.requests_for("b", alice)] == [3]  # WantFlocking = false stays
    assert fl.requests_for("b", ac.requests("bob", None)) == []  # not in the agreement
    assert fl.requests_for("", alice) == []
    # the Submitter ad pool b gets: alice's, counting only what may go there
    base = [{"Name": "alice@a.example", "IdleJobs": 4, "RunningJobs": 0, "HeldJobs": 1},
            {"Name": "bob@a.example", "IdleJobs": 2, "RunningJobs": 0, "HeldJobs": 0}]
    ads = flock_submitter_ads(base, fl.plan, fl.flockable, fl.users, pool="b", home_domain="a.example",
                              running={"alice@a.example": 1})
    assert [(a["Name"], a["IdleJobs"], a["RunningJobs"], a["FlockedFrom"]) for a in ads] == [
        ("alice@a.example", 3, 1, "a.example")]
    q.store.close()


def test_a_job_that_may_not_flock_is_skipped_by_a_foreign_match_and_kept(tmp_path: Path) -> None:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    asyncio.run(q.store.commit(q.add_cluster(1, "alice", AD, [{"ProcId": 0, "WantFlocking": False},
                                                              {"ProcId": 1}], ("h#1.", "#1"))))
    ac = AutoClusters(q, _name, lambda: None)
    (req,) = ac.requests("alice", None)
    job = ac.take(req["autocluster"], lambda j: j.get("WantFlocking") is not False)
    assert job is not None and job.proc == 1
    assert ac.take(req["autocluster"]).proc == 0  # still there for a match at home
    q.store.close()


def test_accounting_groups_of_a_submitter_name() -> None:
    assert accounting_groups("group_a.sub.alice@d") == ("group_a", "group_a.sub")
    assert accounting_groups("alice@d") == ()


def _slot(state: str, user: str | None = None, **kw: object) -> dict:
    return {"State": state, **({"RemoteUser": user} if user else {}), **kw}


def test_the_lender_counts_its_slots_and_who_holds_them() -> None:
    objs = [_slot(SlotState.UNCLAIMED, PartitionableSlot=True, Cpus=3, TotalSlotCpus=4),
            _slot(SlotState.CLAIMED, "x@a.example", DynamicSlot=True),
            _slot(SlotState.UNCLAIMED), _slot(SlotState.CLAIMED, "me@b.example"),
            _slot(SlotState.CLAIMED, "y@a.example"), _slot(SlotState.CLAIMED, "z@c.example")]
    assert slot_counts(objs) == (8, 4)  # 4 cores (the dynamic slot inside them) + 4 static slots
    agreements = parse_agreements(Config.from_text(B_CONF).get)
    assert foreign_usage(objs, agreements, "b.example") == {"a": 2}  # c.example: no agreement
    assert received_from([{"FlockRunning": "a=2, c=1"}, {"FlockRunning": "a=1"}, {}]) == {"a": 3, "c": 1}


def test_requests_are_cut_to_the_admitted_limit() -> None:
    reqs = [Request("s", 1, 3, ClassAd()), Request("s", 2, 2, ClassAd())]
    assert [r.count for r in cap_requests(reqs, 4)] == [3, 1]
    assert cap_requests(reqs, None) is reqs and cap_requests(reqs, 0) == []


def test_the_lender_serves_foreign_submitters_within_their_share_and_keeps_a_ledger(tmp_path: Path) -> None:
    import logging

    cfg = Config.from_text(B_CONF)
    lend = FlockLending(cfg, uid_domain="b.example", spool=tmp_path, log=logging.getLogger("test"))
    subs = [{"Name": "alice@a.example"}, {"Name": "me@b.example"}, {"Name": "eve@c.example"}]
    objs = [_slot(SlotState.CLAIMED, "alice@a.example"), _slot(SlotState.UNCLAIMED), _slot(SlotState.UNCLAIMED)]
    served = lend.admit(subs, objs, [], now=1000.0)
    assert [s["Name"] for s in served] == ["alice@a.example", "me@b.example"]
    assert lend.admitted["alice@a.example"].limit == 1  # share 2, one held already
    assert "no agreement" in lend.admitted["eve@c.example"].reason
    per_ad = [("alice@a.example", [Request("alice@a.example", 1, 5, ClassAd())]),
              ("me@b.example", [Request("me@b.example", 2, 5, ClassAd())])]
    assert [sum(r.count for r in rs) for _, rs in lend.cap(per_ad)] == [1, 5]
    lend.admit(subs, objs, [], now=1000.0 + 3600.0)
    lend.close()
    saved = json.loads((tmp_path / LEDGER_FILE).read_text())
    assert saved["given"] == {"a": 1.0}  # one slot for the hour between the two cycles
    again = FlockLending(cfg, uid_domain="b.example", spool=tmp_path, log=logging.getLogger("test"))
    (row,) = again.status()
    assert row["pool"] == "a" and row["direction"] == "take" and row["given_hours"] > 0.99
    assert row["reciprocity"] == 0.0


def test_a_claim_in_another_pool_is_reused_only_for_jobs_that_may_flock(tmp_path: Path) -> None:
    from roost.daemons.schedd.claimreuse import ClaimReuse

    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    asyncio.run(q.store.commit(q.add_cluster(1, "alice", AD, [{"ProcId": 0, "WantFlocking": False},
                                                              {"ProcId": 1, "WantFlocking": False},
                                                              {"ProcId": 2}], ("h#1.", "#1"))))
    ac = AutoClusters(q, _name, lambda: None)
    fl = Flocking(Config.from_text(A_CONF), queue=q, autoclusters=ac, submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address), home_query=None,
                  uid_domain="a.example", schedd_name="suba")
    reuse = ClaimReuse(q, ac, _name, None)
    reuse.accept = fl.reuse_guard

    class Claim:  # what a shadow lends ClaimReuse: its fits(job, signature)
        def fits(self, job: object, signature: object) -> bool:
            return True

    remote, home = Claim(), Claim()
    fl.matched("b", q.job(1, 2), remote)
    q.take_idle(q.job(1, 2))
    assert reuse.next_job("alice", "alice@a.example", 0.0, remote.fits) is None  # only WantFlocking = false left
    assert reuse.next_job("alice", "alice@a.example", 0.0, home.fits).proc == 0  # at home: anything
    q.store.close()


def test_a_foreign_match_counts_only_for_what_the_plan_offered_that_pool(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    ac = AutoClusters(q, _name, lambda: None)
    fl = Flocking(Config.from_text(A_CONF), queue=q, autoclusters=ac, submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address), home_query=None,
                  uid_domain="a.example", schedd_name="suba")
    waiting, fl.flockable = waiting_entries(q, ac, _name, now=1100.0, by_default=True)
    fl.plan = outbound_plan(waiting, fl.senders, FlockLevel(), now=1100.0, after=30.0)
    (alice_key,) = fl.plan.targets["b"]
    bob_key = next(w.key for w in waiting if w.user.startswith("bob"))
    assert fl.planned("b", int(alice_key)) and not fl.planned("b", int(bob_key)) and not fl.planned("c", alice_key)
    why = fl.why(q.job(3, 0))
    assert why["pool"] is None and "no agreement with b lets bob@a.example's jobs go" in why["why"]
    assert fl.why(q.job(1, 0))["why"].startswith("offered to pool b")
    assert fl.why(q.job(2, 0))["why"] == "WantFlocking is false"
    q.store.close()


def test_a_plain_flock_to_pool_s_negotiator_is_known_by_its_host(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    fl = Flocking(Config.from_text("UID_DOMAIN = a.example\nFLOCK_TO = 10.7.7.7:9618\n"), queue=q,
                  autoclusters=AutoClusters(q, _name, lambda: None), submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address), home_query=None,
                  uid_domain="a.example", schedd_name="suba")
    theirs = Identity("condor@b.example", "IDTOKENS")
    assert fl.foreign_pool(SimpleNamespace(identity=theirs, host="10.7.7.7")) == "10.7.7.7:9618"
    assert fl.foreign_pool(SimpleNamespace(identity=theirs, host="10.7.7.8")) == ""
    q.store.close()


def test_owner_consent_keeps_foreign_requests_to_slots_that_allow_them(tmp_path: Path) -> None:
    import logging

    from roost.classad import ExprTree
    from roost.core.matchmaker import Slot, negotiate

    cfg = Config.from_text("UID_DOMAIN = b.example\nFLOCK_AGREEMENTS = a\n"
                           "FLOCK_AGREEMENT_a = direction = take; domain = a.example; owner_consent = true\n")
    lend = FlockLending(cfg, uid_domain="b.example", spool=tmp_path, log=logging.getLogger("test"))
    lend.admit([{"Name": "alice@a.example"}], [], [], now=1000.0)
    ad = ClassAd({"Requirements": ExprTree("TARGET.Memory >= 10"), "RequestMemory": 10})
    (_, (req,)), = lend.cap([("alice@a.example", [Request("alice@a.example", 1, 2, ad)])])
    slots = [Slot(n, ClassAd({"Name": n, "Cpus": 1, "Memory": 100, "Disk": 1000, "State": SlotState.UNCLAIMED,
                              "PartitionableSlot": False, "Requirements": True, **extra}), claim_id=f"c-{n}",
                  address="127.0.0.1:1")
             for n, extra in (("mine", {}), ("lent", {"AllowForeignJobs": True}))]
    plan = negotiate(slots, {"alice@a.example": [req]}, ["alice@a.example"], 1000.0)
    assert [m.slot.name for m in plan.matches] == ["lent"]


def test_a_claim_taken_back_after_a_restart_is_known_by_its_slot_s_domain(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    fl = Flocking(Config.from_text(A_CONF), queue=q, autoclusters=AutoClusters(q, _name, lambda: None),
                  submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address), home_query=None,
                  uid_domain="a.example", schedd_name="suba")

    class Claim:
        def __init__(self, domain: str) -> None:
            self.slot_obj = {"UidDomain": domain}

        def fits(self, job: object, signature: object) -> bool:
            return True

    stays = q.job(2, 0)  # WantFlocking = false
    assert not fl.reuse_guard(stays, Claim("b.example").fits)
    assert fl.reuse_guard(stays, Claim("a.example").fits)
    q.store.close()


def test_work_no_home_machine_can_run_flocks_at_once_and_says_why(tmp_path: Path) -> None:
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    big = {**AD, "RequestCpus": 16, "Requirements": "/Expr(TARGET.Cpus >= RequestCpus)/"}
    small = {**AD, "RequestCpus": 1, "Requirements": "/Expr(TARGET.Cpus >= RequestCpus)/"}
    for cid, ad in ((1, big), (2, small)):
        asyncio.run(q.store.commit(q.add_cluster(cid, "alice", ad, [{"ProcId": 0}], (f"h#{cid}.", "#1"))))
    asked: list[str] = []

    async def home_query(command: str, **kw: object) -> dict:
        asked.append(str(kw.get("constraint")))
        if kw.get("constraint") == "DynamicSlot =!= true":  # the never-home analysis: every machine
            return {"ads": [{"Name": "slot1@exa", "Machine": "exa", "PartitionableSlot": True, "Cpus": 0,
                             "TotalSlotCpus": 8, "Memory": 0, "TotalSlotMemory": 4000,
                             "Requirements": "/Expr(START)/", "START": True}]}
        return {"ads": []}  # nobody else's jobs hold our slots

    fl = Flocking(Config.from_text(A_CONF.replace("FLOCK_AFTER = 30", "FLOCK_AFTER = 3600")), queue=q,
                  autoclusters=AutoClusters(q, _name, lambda: None), submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: None, home_query=home_query,
                  uid_domain="a.example", schedd_name="suba")
    plan = asyncio.run(fl.round(now=1010.0))
    big_key = str(fl.autoclusters.autocluster_of(q.job(1, 0), fl.autoclusters.signature(q.job(1, 0))))
    assert plan.targets == {"b": [big_key]} and plan.at_once == {big_key}
    assert fl.why(q.job(1, 0))["why"] == ("offered to pool b (flock level 1 of 1): no machine at home could "
                                          "ever run it, so it did not wait FLOCK_AFTER")
    assert fl.why(q.job(2, 0))["why"] == "home first: waited 10 s of FLOCK_AFTER 3600 s"
    n = asked.count("DynamicSlot =!= true")
    asyncio.run(fl.round(now=1011.0))
    assert asked.count("DynamicSlot =!= true") == n, "verdicts are kept: the home slots are not asked each round"
    q.store.close()


def test_a_flocked_start_names_its_pool_even_after_a_round_dropped_the_match(tmp_path: Path) -> None:
    q = _queue(tmp_path)
    fl = Flocking(Config.from_text(A_CONF), queue=q, autoclusters=AutoClusters(q, _name, lambda: None),
                  submitter_of=_name, base_ads=lambda: [],
                  connect=lambda address, timeout: SimpleNamespace(address=address), home_query=None,
                  uid_domain="a.example", schedd_name="suba")
    job = q.job(1, 0)
    fl.matched("b", job)
    fl.where = {}  # a decision round ran between the match and the start (it keeps running jobs only)
    assert fl.pool_of_run(job, SimpleNamespace(slot_obj={"UidDomain": "b.example"})) == "b"
    assert fl.where[job.key] == "b"
    assert fl.pool_of_run(q.job(1, 1), SimpleNamespace(slot_obj={"UidDomain": "a.example"})) is None
    q.store.close()


def _plain_queue(tmp_path: Path, n: int) -> tuple[JobQueue, int]:
    """A queue whose idle lists exist (a schedd that negotiated) and then one ``queue n``
    cluster: its procs stay plain ranges, one block in the idle list."""
    q = JobQueue(Store(str(tmp_path / "q.db"), fsync=False))
    q.load()
    q.idle  # noqa: B018 -- the idle lists made before the submit
    cid = q.new_cluster_id()
    asyncio.run(q.store.commit(q.add_cluster(cid, "alice", dict(AD), [{"ProcId": i} for i in range(n)],
                                             (f"h#{cid}.", "#1"))))
    return q, cid


def test_a_plain_block_is_counted_for_flocking_not_made_into_jobs(tmp_path: Path) -> None:
    """A million-job ``queue N`` waiting to flock is looked at every FLOCK_INTERVAL: its
    untouched procs are counted, one made as the sample, and the answer is what looking
    at every job gives, also once some procs were made and changed since."""
    q, cid = _plain_queue(tmp_path, 20000)
    ac = AutoClusters(q, _name, lambda: None)
    waiting, flockable = waiting_entries(q, ac, _name, now=1100.0, by_default=True)
    assert [(w.idle, flockable[w.key], w.waited) for w in waiting] == [(20000, 20000, 100.0)]
    assert len(q.clusters[cid]._procs) == 1  # the sample only
    # procs made since: one changed in what the matchmaker reads, one that may not flock,
    # one taken by a claim (busy), one removed
    asyncio.run(q.store.commit(q.set(q.job(cid, 10), {"RequestMemory": 999})))
    asyncio.run(q.store.commit(q.set(q.job(cid, 11), {"WantFlocking": False})))
    q.take_idle(q.job(cid, 12))
    asyncio.run(q.store.commit(q.finish_many([(q.job(cid, 13), {"RemoveReason": "gone"})], 3, 1100)))
    waiting, flockable = waiting_entries(q, ac, _name, now=1100.0, by_default=True)
    got = sorted((w.idle, flockable[w.key]) for w in waiting)
    # the same from every job, made (the per-job path over the whole cluster)
    per_job: dict[int, list[int]] = {}
    for job in list(q.idle_jobs("alice")):
        if not job.busy:
            e = per_job.setdefault(ac.autocluster_of(job, ac.signature(job)), [0, 0])
            e[0] += 1
            e[1] += job.get("WantFlocking") is not False
    assert got == sorted((a, b) for a, b in per_job.values())
    assert got == [(1, 1), (19997, 19996)]  # 10 on its own; 11 stays home; 12 busy; 13 gone
    q.store.close()
