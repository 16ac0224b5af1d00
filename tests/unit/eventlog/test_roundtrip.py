"""roost writes, roost reads: every event comes back equal, in every date form."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roost.eventlog import (
    EVENT_CLASSES,
    EventFormatter,
    EventLogError,
    EventType,
    GenericEvent,
    HeldEvent,
    JobAdInformationEvent,
    SubmitEvent,
    TerminatedEvent,
    UnknownEvent,
    Usage,
    format_event,
    parse_events,
)

from .samples import T0, all_samples


def test_every_sample_round_trips() -> None:
    events = all_samples()
    text = "".join(format_event(e) for e in events)
    assert parse_events(text) == events


def test_every_event_type_is_covered() -> None:
    """Every event roost writes or reads has a sample (the numbers are htcondor2's whole
    list; the log holds the ones with a class)."""
    assert {e.type for e in all_samples()} == set(EVENT_CLASSES)
    assert set(EVENT_CLASSES) <= set(EventType)


@pytest.mark.parametrize("opts", [{"utc": True}, {"iso": False}, {"utc": True, "sub_second": True}])
def test_other_date_forms_round_trip(opts) -> None:
    fmt = EventFormatter(**opts)
    event = HeldEvent(3, 1, T0 + 0.25 if opts.get("sub_second") else T0, reason="r", code=1, subcode=2)
    text = fmt.format(event)
    (back,) = parse_events(text)
    if opts.get("iso") is False:
        # MM/DD carries no year: the reader assumes the current one, as HTCondor does.
        assert time.localtime(back.timestamp)[1:6] == time.localtime(T0)[1:6]
    else:
        assert back == event


def test_header_layout() -> None:
    text = format_event(SubmitEvent(1234, 5, T0, submit_host="<h>"), utc=True)
    assert text == "000 (1234.005.000) 2024-01-02 03:04:05Z Job submitted from host: <h>\n...\n"


def test_event_is_a_mapping_like_htcondor2() -> None:
    e = TerminatedEvent(9, 2, T0, signal=9, run_remote_usage=Usage(61, 1))
    assert e["TerminatedNormally"] is False
    assert e["TerminatedBySignal"] == 9
    assert e["terminatedbysignal"] == 9  # ClassAd names are case-insensitive
    assert e["RunRemoteUsage"] == "Usr 0 00:01:01, Sys 0 00:00:01"
    assert "ReturnValue" not in e
    assert e.get("Missing") is None
    assert e.type == EventType.JOB_TERMINATED


def test_terminated_needs_one_way_to_end() -> None:
    with pytest.raises(ValueError):
        TerminatedEvent(1, 0, T0, return_value=0, signal=9)
    assert TerminatedEvent(1, 0, T0).return_value == 0


def test_newlines_in_reasons_are_folded_like_htcondor() -> None:
    text = format_event(HeldEvent(1, 0, T0, reason="line one\nline two\r", code=1))
    (back,) = parse_events(text)
    assert back.reason == "line one|line two"


def test_unknown_event_numbers_are_kept() -> None:
    text = "045 (001.000.000) 2024-01-02 03:04:05 Something new\n\tdetail\n...\n"
    (event,) = parse_events(text)
    assert isinstance(event, UnknownEvent)
    assert event.event_number == 45 and event.lines == ["Something new", "\tdetail"]
    assert format_event(event) == text.replace("03:04:05", time.strftime("%H:%M:%S", time.localtime(event.timestamp)))


def test_crlf_logs_are_read() -> None:
    text = format_event(GenericEvent(1, 0, T0, info="hello")).replace("\n", "\r\n")
    assert parse_events(text) == [GenericEvent(1, 0, T0, info="hello")]


def test_malformed_event_names_its_line(tmp_path) -> None:
    good = format_event(GenericEvent(1, 0, T0, info="x"))
    bad = "005 (001.000.000) 2024-01-02 03:04:05 Job terminated.\n\tgarbage\n...\n"
    path = tmp_path / "bad.log"
    path.write_text(good + bad)
    from roost.eventlog import read_events

    with pytest.raises(EventLogError) as info:
        list(read_events(path))
    assert info.value.line == 3 and info.value.file == os.fspath(path)
    assert list(read_events(path, strict=False)) == [GenericEvent(1, 0, T0, info="x")]


def test_job_ad_information_keeps_expression_text() -> None:
    e = JobAdInformationEvent(1, 0, T0, attributes={"Requirements": "(TARGET.Arch == \"X86_64\") && (Memory > 1024)", "Owner": '"bob"'})
    (back,) = parse_events(format_event(e))
    assert back.attributes == e.attributes
    assert back["Owner"] == "bob"


def test_job_ad_information_builds_a_roost_classad() -> None:
    pytest.importorskip("roost.classad.classad")  # written in parallel; skip until it lands
    e = JobAdInformationEvent(1, 0, T0, attributes={"Owner": '"bob"', "ExitCode": "3"})
    ad = e.classad()
    assert ad["ExitCode"] == 3


text_st = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x85\u2028\u2029"),
    max_size=40,
).map(str.strip)


@settings(max_examples=150, deadline=None)
@given(
    cluster=st.integers(0, 10**7),
    proc=st.integers(0, 10**5),
    ts=st.integers(0, 2**31 - 1),
    host=text_st,
    reason=text_st,
    code=st.integers(-5, 10**4),
    rv=st.one_of(st.none(), st.integers(0, 255)),
    sig=st.integers(1, 64),
    usage=st.tuples(st.integers(0, 10**7), st.integers(0, 10**7)),
    sent=st.integers(0, 10**12),
)
def test_property_round_trip(cluster, proc, ts, host, reason, code, rv, sig, usage, sent) -> None:
    events = [
        SubmitEvent(cluster, proc, ts, submit_host=host),
        HeldEvent(cluster, proc, ts, reason=reason, code=code, subcode=code // 2),
        TerminatedEvent(cluster, proc, ts, return_value=rv, signal=None if rv is not None else sig,
                        run_remote_usage=Usage(*usage), sent_bytes=sent),
    ]
    assert parse_events("".join(format_event(e) for e in events)) == events
