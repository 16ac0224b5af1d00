"""The dedicated scheduler's plans (roost.core.dedicated), against hand-checked cases:
the head job served by claimed idle then unclaimed then backfilled resources, a big job
waited for (nothing passes it), a job too big skipped with its reason, EASY backfill,
per-user order, reservations, release of unused claims."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.core.dedicated import INF, ParallelJob, Reservation, Resource, order_jobs, plan

NOW = 1000.0


def idle(name: str, claimed: bool = True, host: str = "h", since: float = NOW) -> Resource:
    return Resource(name, host=host, claimed=claimed, idle_since=since)


def busy(name: str, until: float, job: str = "x") -> Resource:
    return Resource(name, claimed=True, running=job, busy_until=until)


def job(jid: str, nodes: int, user: str = "ann", at: float = 0.0, estimate: float | None = None,
        kind: object = None) -> ParallelJob:
    return ParallelJob(jid, user, nodes, submitted=at, estimate=estimate, kind=kind)


def test_the_head_job_starts_on_claimed_idle_resources() -> None:
    p = plan([job("1", 2)], [idle("a"), idle("b"), idle("c", claimed=False)], NOW)
    assert p.start == [("1", ["a", "b"])] and not p.claim and not p.gather
    assert p.backfill == {"c": INF}  # the rest may run opportunistic jobs


def test_unclaimed_and_backfilled_resources_are_claimed_and_vacated_for_it() -> None:
    res = [idle("a"), idle("b", claimed=False), Resource("c", claimed=True, backfill=True)]
    p = plan([job("1", 3)], res, NOW)
    assert p.gather == [("1", ["a", "b", "c"])] and not p.start
    assert p.claim == ["b"] and p.reclaim == ["c"]


def test_a_big_job_waits_and_nothing_passes_it() -> None:
    res = [idle("a"), busy("b", NOW + 50), busy("c", NOW + 80), idle("d")]
    p = plan([job("big", 4, at=1), job("small", 1, at=2)], res, NOW)
    assert p.waiting == {"big": NOW + 80, "small": INF}
    assert not p.start and not p.gather
    # it starts within the margin (300 s): its idle resources take no opportunistic work
    assert p.backfill == {}
    assert not p.release  # its claims are kept for it


def test_idle_resources_of_a_waiting_job_are_backfilled_until_its_start() -> None:
    res = [idle("a"), busy("b", NOW + 3600)]
    p = plan([job("big", 2)], res, NOW, margin=60)
    assert p.waiting == {"big": NOW + 3600} and p.backfill == {"a": NOW + 3600 - 60}


def test_a_job_that_can_never_fit_is_skipped_with_its_reason() -> None:
    p = plan([job("huge", 5, at=1), job("ok", 1, at=2)], [idle("a"), idle("b")], NOW)
    assert "needs 5 dedicated nodes; 2 match it" in p.never["huge"]
    assert p.start == [("ok", ["a"])]


def test_easy_backfill_lets_short_jobs_pass_and_protects_the_heads_start() -> None:
    res = [idle("a"), idle("b"), busy("c", NOW + 100), busy("d", NOW + 100)]
    jobs = [job("big", 4, at=1), job("short", 2, at=2, estimate=50), job("long", 1, at=3, estimate=500)]
    p = plan(jobs, res, NOW, backfill="easy")
    assert p.waiting["big"] == NOW + 100
    assert p.start == [("short", ["a", "b"])]  # ends before the big job can start
    assert p.waiting["long"] == INF  # would delay it
    # without EASY, the original: nothing passes the big job
    assert not plan(jobs, res, NOW).start


def test_easy_backfill_may_use_nodes_the_head_will_not_need() -> None:
    res = [idle("a"), idle("b"), busy("c", NOW + 100), busy("d", NOW + 100), busy("e", NOW + 100)]
    p = plan([job("big", 4, at=1), job("long", 1, at=2)], res, NOW, backfill="easy")
    # at NOW+100 five nodes are free and the big job needs four: one may run past it
    assert p.start == [("long", ["a"])]
    p = plan([job("big", 4, at=1), job("l1", 1, at=2), job("l2", 1, at=3)], res, NOW, backfill="easy")
    assert p.start == [("l1", ["a"])] and p.waiting["l2"] == INF


def test_per_user_order_interleaves_users_by_priority() -> None:
    jobs = [job("a1", 1, "ann", 1), job("a2", 1, "ann", 2), job("a3", 1, "ann", 3), job("b1", 1, "bob", 4)]
    assert [j.id for j in order_jobs(jobs)] == ["a1", "a2", "a3", "b1"]
    assert [j.id for j in order_jobs(jobs, "user", {"ann": 10.0, "bob": 0.5})] == ["b1", "a1", "a2", "a3"]
    assert [j.id for j in order_jobs(jobs, "user", {"ann": 0.5, "bob": 0.5})] == ["a1", "b1", "a2", "a3"]
    p = plan(jobs, [idle("x"), idle("y")], NOW, order="user", priorities={"ann": 10.0, "bob": 0.5})
    assert [jid for jid, _ in p.start] == ["b1", "a1"]
    with pytest.raises(ValueError):
        order_jobs(jobs, "random")


def test_a_reservation_holds_its_nodes_and_lets_opportunistic_work_until_shortly_before() -> None:
    res = [idle("a"), idle("b"), idle("c")]
    rv = Reservation("r1", 2, start=NOW + 3600, end=NOW + 7200)
    p = plan([job("long", 1, estimate=7200), job("short", 1, at=1, estimate=600)], res, NOW,
             reservations=[rv], margin=300)
    assert p.reserved == {"r1": ["a", "b"]}
    # "long" would run into the window: only the unreserved node; "short" ends before it
    assert p.start == [("long", ["c"]), ("short", ["a"])]
    assert p.backfill == {"b": NOW + 3600 - 300}
    # a job that needs the reserved nodes past the window's start waits
    p = plan([job("wide", 3, estimate=7200)], res, NOW, reservations=[rv])
    assert p.waiting == {"wide": INF} and not p.start
    # in its window nothing else runs there, opportunistic work included
    p = plan([job("any", 1)], res, NOW + 4000, reservations=[rv])
    assert p.start == [("any", ["c"])] and "a" not in p.backfill and "b" not in p.backfill


def test_unused_claims_are_released_after_the_timeout() -> None:
    res = [idle("old", since=NOW - 700), idle("new", since=NOW - 10), idle("free", claimed=False)]
    p = plan([], res, NOW, unused_claim_timeout=600)
    assert p.release == ["old"] and set(p.backfill) == {"new", "free"}


def test_compatibility_is_asked_once_per_kind_and_resource() -> None:
    asked: list[tuple[object, str]] = []

    def compatible(j, r) -> bool:  # type: ignore[no-untyped-def]
        asked.append((j.kind, r.name))
        return (j.kind == "gpu") == r.name.startswith("g")

    res = [idle("g1"), idle("g2"), idle("c1"), idle("c2")]
    jobs = [job(str(i), 1, at=i, kind="gpu" if i % 2 else "cpu") for i in range(4)]
    p = plan(jobs, res, NOW, compatible=compatible)
    assert sorted(p.start) == [("0", ["c1"]), ("1", ["g1"]), ("2", ["c2"]), ("3", ["g2"])]
    assert len(asked) == 8


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=12), st.lists(st.sampled_from(["idle", "free", "busy", "bf"]),
                                                             min_size=1, max_size=16),
       st.sampled_from(["none", "easy"]))
def test_a_plan_never_gives_a_resource_twice_nor_a_busy_one(sizes: list[int], kinds: list[str], bf: str) -> None:
    res = []
    for i, k in enumerate(kinds):
        if k == "busy":
            res.append(busy(f"r{i}", NOW + 10 * i))
        else:
            res.append(Resource(f"r{i}", claimed=k != "free", backfill=k == "bf"))
    jobs = [job(f"j{i}", n, at=i, estimate=5.0 * i) for i, n in enumerate(sizes)]
    p = plan(jobs, res, NOW, backfill=bf)
    given_out = [r for _j, rs in p.start + p.gather for r in rs]
    assert len(given_out) == len(set(given_out))
    assert not {r.name for r in res if r.running} & set(given_out)
    assert not set(given_out) & set(p.backfill) and not set(given_out) & set(p.release)
    decided = {j for j, _ in p.start + p.gather} | set(p.waiting) | set(p.never)
    assert decided == {j.id for j in jobs}
    for jid, rs in p.start + p.gather:
        assert len(rs) == dict((j.id, j.nodes) for j in jobs)[jid]
