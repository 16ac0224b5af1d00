"""Which Chirp requests a job gets (HTCondor's starter and shadow rules)."""

from __future__ import annotations

from roost.core.chirp import Wants, may_write_attr, prefix_matches, prefix_words, starter_wants


def test_the_starter_serves_what_the_ad_asks_and_the_machine_allows() -> None:
    # every job gets delayed updates unless it or the machine says no
    assert starter_wants() == Wants(io=False, updates=False, delayed=True)
    assert starter_wants(want_io_proxy=True) == Wants(io=True, updates=True, delayed=True)
    assert starter_wants(want_remote_updates=True, want_delayed_updates=False) == Wants(False, True, False)
    assert starter_wants(want_io_proxy=True, want_remote_updates=False) == Wants(True, False, True)
    assert starter_wants(want_io_proxy=True, enable_io=False) == Wants(False, False, True)
    assert starter_wants(want_io_proxy=True, enable_updates=False) == Wants(True, False, True)
    assert not starter_wants(want_io_proxy=True, enable=False).any
    assert not starter_wants(want_io_proxy=True, enable_io=False, enable_updates=False, enable_delayed=False).any


def test_delayed_update_names_match_the_prefix_without_regard_to_case() -> None:
    words = prefix_words(None)
    assert words == ["Chirp*"]
    assert prefix_matches(words, "ChirpFoo") and prefix_matches(words, "chirpfoo")
    assert not prefix_matches(words, "NotChirp")
    assert prefix_words("Foo*, *Bar  Exact") == ["Foo*", "*Bar", "Exact"]
    assert prefix_matches(["*Bar"], "xbar") and prefix_matches(["Exact"], "exact")
    assert not prefix_matches(["Exact"], "Exactly") and not prefix_matches(["A*Z"], "AZ_")


def test_the_submit_side_lets_a_delayed_only_job_set_only_delayed_names() -> None:
    assert may_write_attr(False, False, True, ["Chirp*"], "ChirpX")
    assert not may_write_attr(False, False, True, ["Chirp*"], "Requirements")
    assert not may_write_attr(False, False, False, ["Chirp*"], "ChirpX")
    assert may_write_attr(False, True, False, ["Chirp*"], "Requirements")
