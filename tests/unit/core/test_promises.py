"""The negotiator's memory of promised slots (pure; time passed in)."""

from roost.core.promises import OFFER, WITHHOLD, PromiseBook

ONE = {"Cpus": 1.0, "Memory": 1000.0}


def test_static_slot_withheld_until_its_startd_answers_or_the_hold_ends():
    book = PromiseBook(hold=10)
    assert book.check("s", 0, now=0) == OFFER
    book.note("s", 0, {}, now=0)
    assert book.check("s", 0, now=5) == WITHHOLD
    assert book.check("s", 1, now=5) == OFFER  # the startd answered the claim request
    assert len(book) == 0
    book.note("s", 1, {}, now=5)
    assert book.check("s", 1, now=15.1) == OFFER  # never claimed: offered again
    assert book.next_expiry() is None


def test_partitionable_slot_offers_what_is_left():
    book = PromiseBook(hold=10)
    for _ in range(3):
        book.note("p", 7, ONE, now=0)
    assert book.check("p", 7, now=1) == {"Cpus": 3.0, "Memory": 3000.0}
    assert book.check("p", 8, now=2) == {"Cpus": 2.0, "Memory": 2000.0}  # one answered
    assert book.check("p", 10, now=3) == OFFER  # then the other two
    assert len(book) == 0


def test_claim_run_and_release_between_cycles_still_settles_the_promise():
    # The ABA case: the ad after the job is identical to the one matched against,
    # except for the count of answered requests. Matching again must see the slot whole.
    book = PromiseBook(hold=20)
    book.note("p", 0, ONE, now=0)
    book.note("p", 0, ONE, now=0)
    assert book.check("p", 2, now=0.3) == OFFER


def test_a_match_noted_after_some_were_answered_counts_from_there():
    book = PromiseBook(hold=10)
    book.note("p", 0, ONE, now=0)
    book.note("p", 0, ONE, now=0)
    book.note("p", 1, ONE, now=1)  # one of the first two answered meanwhile
    assert book.check("p", 1, now=1) == {"Cpus": 2.0, "Memory": 2000.0}
    assert book.next_expiry() == 11


def test_a_restarted_startd_counting_from_zero_drops_old_promises():
    book = PromiseBook(hold=10)
    book.note("p", 5, ONE, now=0)
    assert book.check("p", 0, now=1) == OFFER


def test_forget_and_keep_only():
    book = PromiseBook(hold=10)
    book.note("a", 1, {}, now=0)
    book.note("b", 1, {}, now=0)
    book.forget("a")
    book.keep_only({"c"})
    assert book.check("a", 1, now=1) == OFFER and book.check("b", 1, now=1) == OFFER


def test_outstanding_matches_charge_their_submitter_and_limits_until_answered():
    from roost.core.promises import Charge

    book = PromiseBook(hold=10)
    a, b = Charge("alice@h", 2.0, {"license": 1.0}), Charge("bob@h", 1.0)
    book.note("p", 4, ONE, now=0, charge=a)
    book.note("p", 4, ONE, now=0, charge=b)
    book.note("s", 0, {}, now=0)  # a match noted without a charge holds nothing
    assert book.charges({"p": 4, "s": 0}, now=1) == [a, b]
    assert book.charges({"p": 5, "s": 0}, now=1) == [b]  # the oldest answered: its slot ad counts now
    assert book.check("p", 5, now=1) == ONE  # the same settling as check()'s
    assert book.charges({"s": 0}, now=1) == []  # the slot is gone from the collector
    assert book.charges({"p": 5}, now=10.5) == []  # lapsed
    book.note("q", 3, ONE, now=0, charge=a)
    assert book.charges({"q": 0}, now=1) == []  # the startd restarted: nothing is promised


def test_lapsed_promises_on_slots_no_cycle_checks_are_dropped():
    # A slot claimed right after its match is never check()ed again; its lapsed promise
    # kept next_expiry in the past, and the negotiator woke for it 20 times a second.
    book = PromiseBook(hold=10)
    book.note("claimed", 0, {}, now=0)
    book.note("fresh", 0, {}, now=8)
    assert book.next_expiry() == 10
    book.drop_lapsed(now=12)
    assert len(book) == 1 and book.next_expiry() == 18
    assert book.check("fresh", 0, now=12) == WITHHOLD
    book.drop_lapsed(now=18)
    assert book.next_expiry() is None


def test_a_match_whose_request_never_came_lapses_on_its_own_time_not_a_later_ones():
    """A schedd cut off from the startd never sends the claim request: that promise lapses
    after its own hold. A later match on the slot must not extend it, and the later
    match's answered request must settle the later match, not the lapsed one (issue 27's
    four-host faults test: the slot was withheld 20 s more and a job waited for nothing)."""
    book = PromiseBook(hold=20)
    book.note("p", 3, ONE, now=0)  # its schedd never reaches the startd
    assert book.check("p", 3, now=19.8) == ONE  # still promised: one CPU of two left
    book.note("p", 3, ONE, now=19.8)  # the one CPU left, to another job
    assert book.check("p", 3, now=20.1) == ONE  # the first lapsed; the second is outstanding
    assert book.check("p", 4, now=22) == OFFER  # the second's request answered: nothing promised
    assert book.charges({"p": 4}, now=22) == []


def test_a_match_its_schedd_could_not_connect_for_ends_once_the_slot_is_heard_from_again():
    """A schedd that could not connect to the startd (the host cut off) says so: that
    match stays promised while the host's ad is the old one (else the slot would be
    matched and refused again and again), and ends as soon as the slot's ad is heard
    after the report (the host is back), not when its whole hold passes. The other
    matches of a partitionable slot stay promised until the startd's count moves."""
    book = PromiseBook(hold=20)
    book.note("s", 3, {}, now=0)
    book.unreachable("s", wall=1000.5)
    assert book.check("s", 3, now=1, heard=1000) == WITHHOLD  # heard before the report
    assert book.check("s", 3, now=2, heard=None) == WITHHOLD
    assert book.check("s", 3, now=3, heard=1003) == OFFER and len(book) == 0  # back
    for _ in range(2):
        book.note("p", 5, ONE, now=0)
    book.unreachable("p", wall=1000.5)
    assert book.check("p", 5, now=1, heard=1000) == {"Cpus": 2.0, "Memory": 2000.0}
    assert book.check("p", 5, now=2, heard=1002) == {"Cpus": 1.0, "Memory": 1000.0}
    assert book.check("p", 6, now=3, heard=1003) == OFFER  # the other one answered
    book.unreachable("p", wall=1004)  # nothing promised: nothing to mark
    book.unreachable("nobody", wall=1004)
    assert len(book) == 0
