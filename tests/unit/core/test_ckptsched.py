"""Checkpoint traffic scheduling (pure; time passed in): admission, fairness across users,
the bandwidth budget and the staggered signal phases."""

from __future__ import annotations

import heapq

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.core.ckptsched import UploadScheduler, next_signal, stagger_offset

MB = 1 << 20


def test_at_most_max_concurrent_uploads_and_fifo_within_a_user() -> None:
    s = UploadScheduler(max_concurrent=2)
    ids = [s.request(f"1.{i}", "u", MB, now=0.0) for i in range(5)]
    assert s.admit(0.0) == ids[:2]
    assert s.admit(0.0) == []  # full
    assert s.running == 2 and s.queued == 3
    s.release(ids[1], 1.0)
    assert s.admit(1.0) == [ids[2]]
    s.release(ids[0], 2.0)
    s.release(ids[2], 2.0)
    assert s.admit(2.0) == ids[3:]
    assert s.peak_running == 2


def test_no_limit_admits_everything_at_once() -> None:
    s = UploadScheduler()
    ids = [s.request(f"1.{i}", "u", MB, now=0.0) for i in range(50)]
    assert s.admit(0.0) == ids
    assert s.peak_running == 50


def test_a_small_user_is_not_held_behind_a_big_one() -> None:
    """A thousand queued uploads of one user and three of another: with one upload at a
    time, the second user's go in turn with the first's, not after them."""
    s = UploadScheduler(max_concurrent=1)
    big = [s.request(f"1.{i}", "alice", MB, now=0.0) for i in range(1000)]
    small = [s.request(f"2.{i}", "bob", MB, now=1.0) for i in range(3)]
    order: list[int] = []
    t = 2.0
    while s.uploads:
        got = s.admit(t)
        assert len(got) == 1
        order.append(got[0])
        s.release(got[0], t)
        t += 1
    assert order[:6] == [big[0], small[0], big[1], small[1], big[2], small[2]]
    assert order[6:] == big[3:]


def test_the_user_with_fewest_uploads_in_flight_goes_first() -> None:
    s = UploadScheduler(max_concurrent=3)
    a = [s.request(f"1.{i}", "a", MB, now=0.0) for i in range(3)]
    assert s.admit(0.0) == a  # only a is waiting: a takes every place
    b = s.request("2.0", "b", MB, now=1.0)
    a4 = s.request("1.3", "a", MB, now=1.0)
    s.release(a[0], 2.0)
    assert s.admit(2.0) == [b]  # a has two in flight, b none (a's upload queued first)
    s.release(b, 3.0)
    assert s.admit(3.0) == [a4]


def test_a_queued_upload_whose_starter_went_is_released() -> None:
    s = UploadScheduler(max_concurrent=1)
    first, gone, third = (s.request(f"1.{i}", "u", MB, now=0.0) for i in range(3))
    assert s.admit(0.0) == [first]
    assert s.release(gone, 0.5) is not None  # cut while it waited
    assert s.release(gone, 0.6) is None  # released twice: nothing happens
    s.release(first, 1.0)
    assert s.admit(1.0) == [third]
    assert s.queued == 0


def test_reconfigure_to_a_lower_limit_applies_as_uploads_finish() -> None:
    s = UploadScheduler(max_concurrent=4)
    ids = [s.request(f"1.{i}", "u", MB, now=0.0) for i in range(6)]
    assert len(s.admit(0.0)) == 4
    s.configure(max_concurrent=2, bandwidth=0)
    s.release(ids[0], 1.0)
    assert s.admit(1.0) == []  # three still in flight, over the new limit of two
    s.release(ids[1], 1.0)
    s.release(ids[2], 1.0)
    assert s.admit(1.0) == [ids[4]]


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(0, 4),
    arrivals=st.lists(
        st.tuples(st.floats(0, 50), st.sampled_from(["a", "b", "c", "d"]), st.floats(0.01, 10)),
        min_size=1, max_size=60,
    ),
)
def test_nothing_starves_the_limit_holds_and_no_place_stays_empty(
        limit: int, arrivals: list[tuple[float, str, float]]) -> None:
    """A random stream of uploads of random lengths, simulated: at no time more than the
    limit in flight, never a free place while one waits, every upload done in the end,
    and a user waiting with nothing in flight sees no other user admitted twice before it."""
    s = UploadScheduler(max_concurrent=limit)
    arrivals = sorted(arrivals, key=lambda a: a[0])
    duration: dict[int, float] = {}
    ends: list[tuple[float, int]] = []
    admitted: set[int] = set()
    # per user waiting with nothing in flight: the users admitted since
    passed_over: dict[str, list[str]] = {}

    def track() -> None:
        running = {u.user for u in s.uploads.values() if u.started_at is not None}
        for up in s.uploads.values():
            if up.started_at is None and up.user not in running:
                passed_over.setdefault(up.user, [])

    i = 0
    while i < len(arrivals) or s.uploads:
        next_arrival = arrivals[i][0] if i < len(arrivals) else float("inf")
        next_end = ends[0][0] if ends else float("inf")
        t = min(next_arrival, next_end)
        while ends and ends[0][0] <= t:
            _, uid = heapq.heappop(ends)
            s.release(uid, t)
        while i < len(arrivals) and arrivals[i][0] <= t:
            at, user, length = arrivals[i]
            uid = s.request(f"1.{i}", user, MB, now=at)
            duration[uid] = length
            i += 1
        track()
        for uid in s.admit(t):
            user = s.uploads[uid].user
            admitted.add(uid)
            heapq.heappush(ends, (t + duration[uid], uid))
            passed_over.pop(user, None)
            for other, seen in passed_over.items():
                assert user not in seen, f"{user} went twice while {other} waited"
                seen.append(user)
        track()
        assert limit == 0 or s.running <= limit
        assert s.queued == 0 or (limit and s.running == limit)
    assert admitted == set(duration)
    assert s.running == 0 and s.queued == 0


def test_a_passed_over_user_is_never_passed_twice_by_the_same_user() -> None:
    """The bound above, directly: c waits with nothing in flight while a and b, each
    with nothing in flight and admitted longer ago, go; then c goes before either again."""
    s = UploadScheduler(max_concurrent=1)
    for user in ("a", "b", "c"):
        s.request(f"{user}.0", user, MB, now=0.0)
    first = s.admit(0.0)
    s.release(first[0], 0.0)  # a went; the scheduler is not idle (b and c wait)
    a2 = s.request("a.1", "a", MB, now=0.5)
    got = s.admit(1.0)
    assert s.uploads[got[0]].user == "b"
    s.release(got[0], 1.0)
    got = s.admit(1.0)
    assert s.uploads[got[0]].user == "c"
    s.release(got[0], 2.0)
    assert s.admit(2.0) == [a2]


# -- bandwidth ---------------------------------------------------------------------------------
def test_pace_holds_one_reader_to_the_rate() -> None:
    s = UploadScheduler(bandwidth=10 * MB)
    t = 0.0
    for _ in range(100):  # 100 MB in 1 MB chunks
        t += s.pace(MB, t)
    assert t == pytest.approx((100 * MB - s.burst) / (10 * MB), rel=1e-6)


def test_pace_shares_the_rate_between_readers() -> None:
    s = UploadScheduler(bandwidth=10 * MB)
    clocks = [0.0, 0.0, 0.0, 0.0]
    for _ in range(25):
        for r in range(4):  # four readers, each 25 MB
            clocks[r] += s.pace(MB, clocks[r])
    assert max(clocks) == pytest.approx((100 * MB - s.burst) / (10 * MB), rel=0.05)


def test_no_budget_never_waits() -> None:
    s = UploadScheduler()
    assert all(s.pace(100 * MB, float(t)) == 0.0 for t in range(10))


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(1e3, 1e9),
    reads=st.lists(st.tuples(st.floats(0, 5), st.integers(1, 8 * MB)), min_size=1, max_size=80),
)
def test_no_window_carries_more_than_the_rate_plus_one_burst(rate: float, reads: list[tuple[float, int]]) -> None:
    """Readers ask at random times for random chunks and read when told: over any window
    starting at the first ask, the bytes read stay within rate x time + burst."""
    s = UploadScheduler(bandwidth=rate)
    t = 0.0
    reads_at: list[tuple[float, int]] = []
    for gap, n in reads:
        t += gap
        reads_at.append((t + s.pace(n, t), n))
    reads_at.sort()
    total = 0
    for go, n in reads_at:
        total += n
        assert total <= s.burst + rate * go + 1e-6 * total + 1


# -- stagger -------------------------------------------------------------------------------------
def test_offsets_of_jobs_added_one_by_one_halve_the_gaps() -> None:
    taken: list[float] = []
    for _ in range(8):
        taken.append(stagger_offset(taken, 60.0))
    assert taken == [0.0, 30.0, 15.0, 45.0, 7.5, 22.5, 37.5, 52.5]


def test_a_finished_job_leaves_its_gap_to_the_next() -> None:
    taken = [0.0, 15.0, 30.0, 45.0]
    taken.remove(30.0)
    assert stagger_offset(taken, 60.0) == 30.0


@settings(max_examples=300, deadline=None)
@given(
    interval=st.floats(1, 3600),
    ops=st.lists(st.one_of(st.just("add"), st.integers(0, 30)), max_size=60),
)
def test_a_new_offset_is_the_middle_of_a_widest_gap(interval: float, ops: list[object]) -> None:
    taken: list[float] = []
    for op in ops:
        if op == "add" or not taken:
            new = stagger_offset(taken, interval)
            assert 0 <= new < interval
            if taken:
                pts = sorted(taken)
                gaps = [b - a for a, b in zip(pts, pts[1:], strict=False)] + [pts[0] + interval - pts[-1]]
                nearest = min(min(abs(new - p), interval - abs(new - p)) for p in pts)
                assert nearest == pytest.approx(max(gaps) / 2, abs=1e-6 * interval)
            taken.append(new)
        else:
            taken.pop(int(op) % len(taken))  # type: ignore[call-overload]


@settings(max_examples=300, deadline=None)
@given(since=st.floats(0, 2e9), interval=st.floats(1, 86400), phase=st.floats(0, 1, exclude_max=True))
def test_the_next_signal_is_on_the_phase_and_between_half_and_one_and_a_half_intervals(
        since: float, interval: float, phase: float) -> None:
    offset = phase * interval
    at = next_signal(since, interval, offset)
    tol = 1e-9 * max(since, 1.0) + 1e-6
    assert since + interval / 2 - tol <= at <= since + 1.5 * interval + tol
    k = (at - offset) / interval
    assert k == pytest.approx(round(k), abs=1e-6 * max(1.0, abs(k)))


def test_without_an_offset_the_signal_comes_one_interval_later() -> None:
    assert next_signal(1000.0, 60.0, None) == 1060.0
    assert next_signal(1000.0, 0.0, None) == float("inf")


def test_a_steady_job_is_signalled_every_interval_on_its_phase() -> None:
    at = next_signal(1000.0, 60.0, 25.0)
    assert at == 1045.0  # the first phase point at least half an interval in
    assert next_signal(at, 60.0, 25.0) == 1105.0
