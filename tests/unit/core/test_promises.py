"""The negotiator's memory of promised slots (pure; time passed in)."""

from roost.core.promises import OFFER, WITHHOLD, PromiseBook

RES = {"Cpus": 4.0, "Memory": 4096.0}


def test_static_slot_withheld_until_its_ad_changes_or_the_hold_ends():
    book = PromiseBook(hold=10)
    assert book.check("s", "v1", RES, now=0) == OFFER
    book.note("s", "v1", RES, {}, now=0)
    assert book.check("s", "v1", RES, now=5) == WITHHOLD
    assert book.check("s", "v2", RES, now=5) == OFFER  # the startd acted
    assert len(book) == 0
    book.note("s", "v2", RES, {}, now=5)
    assert book.check("s", "v2", RES, now=15.1) == OFFER  # never claimed: offered again


def test_partitionable_slot_offers_what_is_left():
    book = PromiseBook(hold=10)
    for _ in range(3):
        book.note("p", "v1", RES, {"Cpus": 1.0, "Memory": 1000.0}, now=0)
    assert book.check("p", "v1", RES, now=1) == {"Cpus": 3.0, "Memory": 3000.0}
    # the startd carved one dynamic slot so far: two promises still outstanding
    after_one = {"Cpus": 3.0, "Memory": 3096.0}
    assert book.check("p", "v2", after_one, now=2) == {"Cpus": 2.0, "Memory": 2000.0}
    # then the other two
    after_three = {"Cpus": 1.0, "Memory": 1096.0}
    assert book.check("p", "v3", after_three, now=3) == OFFER
    assert len(book) == 0


def test_forget_and_keep_only():
    book = PromiseBook(hold=10)
    book.note("a", 1, RES, {}, now=0)
    book.note("b", 1, RES, {}, now=0)
    book.forget("a")
    book.keep_only({"c"})
    assert book.check("a", 1, RES, now=1) == OFFER and book.check("b", 1, RES, now=1) == OFFER
