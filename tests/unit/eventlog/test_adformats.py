"""The XML (``log_xml``) and JSON event-log forms: roost reads back what it writes,
htcondor2.JobEventLog reads them and sees what it sees in the text form, and the
form's layout is HTCondor's unparser's (one ad per event closed at column 0)."""

from __future__ import annotations

import pytest

from roost.eventlog import (
    ClassAdEvent,
    EventFormatter,
    EventLogFollower,
    EventLogWriter,
    JsonEventFormatter,
    SubmitEvent,
    TerminatedEvent,
    XmlEventFormatter,
    parse_events,
    parse_format_options,
    read_events,
)

from .samples import all_samples
from .test_htcondor_compat import htcondor_reader_quirk, same_value

FORMS = {"xml": XmlEventFormatter, "json": JsonEventFormatter}
# HTCondor's reader rebuilds a terminated event's resource table from the ad's
# Request<R>/<R>/Assigned<R> only; these two usage rows it reads from text alone.
AD_READER_LOSSES = {"TimeExecuteUsage", "TimeSlotBusyUsage"}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_round_trip_keeps_every_attribute(tmp_path, form: str) -> None:
    events = all_samples()
    path = tmp_path / f"job.{form}"
    with EventLogWriter(path, formatter=FORMS[form]()) as w:
        w.write_many(events)
    back = list(read_events(path))
    assert len(back) == len(events)
    for ours, got in zip(events, back):
        assert isinstance(got, ClassAdEvent)
        assert int(got.type) == int(ours.type)
        assert (got.cluster, got.proc, int(got.timestamp)) == (ours.cluster, ours.proc, int(ours.timestamp))
        assert got.attrs() == ours.attrs(), type(ours).__name__


@pytest.mark.parametrize("form", sorted(FORMS))
def test_htcondor2_reads_roosts_xml_and_json(tmp_path, form: str) -> None:
    htcondor2 = pytest.importorskip("htcondor2")
    events = all_samples()
    path = tmp_path / f"job.{form}"
    with EventLogWriter(path, formatter=FORMS[form]()) as w:
        for e in events:
            w.write(e)
    theirs = list(htcondor2.JobEventLog(str(path)).events(stop_after=0))
    assert len(theirs) == len(events)
    for ours, h in zip(events, theirs):
        name = type(ours).__name__
        assert int(h.type) == int(ours.type), name
        assert (h.cluster, h.proc, h.timestamp) == (ours.cluster, ours.proc, int(ours.timestamp)), name
        for key, value in ours.attrs().items():
            if htcondor_reader_quirk(ours, key) or key in AD_READER_LOSSES:
                continue
            assert key in h, (name, key)
            assert same_value(value, h[key]), (name, key, value, h[key])


def test_layout_is_htcondors_unparser() -> None:
    e = SubmitEvent(12, 3, 1704164645.0, submit_host="<1.2.3.4:9618?a&b>", log_notes="x\ty")
    xml = XmlEventFormatter().format(e)
    assert xml.startswith('<c>\n    <a n="MyType"><s>SubmitEvent</s></a>\n    <a n="EventTypeNumber"><i>0</i></a>\n')
    assert '<a n="SubmitHost"><s>&lt;1.2.3.4:9618?a&amp;b&gt;</s></a>\n' in xml
    assert '<a n="LogNotes"><s>x\\ty</s></a>' in xml
    assert xml.endswith("\n</c>\n")
    js = JsonEventFormatter().format(TerminatedEvent(12, 3, 1704164645.0, return_value=2))
    assert js.startswith('{\n  "MyType": "JobTerminatedEvent",\n  "EventTypeNumber": 5,\n')
    assert '\n  "ReturnValue": 2,\n' in js and '\n  "TerminatedNormally": true,\n' in js
    assert js.endswith("\n}\n")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_follower_reads_ad_forms_as_they_grow(tmp_path, form: str) -> None:
    path = tmp_path / "grow.log"
    fmt = FORMS[form]()
    f = EventLogFollower(path)
    assert f.poll() == []
    one = fmt.format(SubmitEvent(1, 0, 1704164645.0, submit_host="<h>"))
    two = fmt.format(TerminatedEvent(1, 0, 1704164650.0, return_value=0))
    with open(path, "w") as out:
        out.write(one + two[: len(two) // 2])
    got = f.poll()
    assert [int(e.type) for e in got] == [0]
    with open(path, "a") as out:
        out.write(two[len(two) // 2 :])
    got = f.poll()
    assert [(int(e.type), e["ReturnValue"]) for e in got] == [(5, 0)]


def test_malformed_ad_event_names_file_and_line(tmp_path) -> None:
    path = tmp_path / "bad.xml"
    good = XmlEventFormatter().format(SubmitEvent(1, 0, 0.0))
    path.write_text(good + "<c>\n    <a n=\"EventTypeNumber\"><i>zz</i></a>\n</c>\n")
    with pytest.raises(Exception) as info:
        list(read_events(path))
    assert "bad.xml" in str(info.value) and str(len(good.splitlines()) + 1) in str(info.value)
    assert [int(e.type) for e in read_events(path, strict=False)] == [0]


def test_format_options_pick_the_form() -> None:
    assert isinstance(parse_format_options("JSON"), JsonEventFormatter)
    assert isinstance(parse_format_options("xml, utc"), XmlEventFormatter)
    text = parse_format_options("UTC SUB_SECOND")
    assert isinstance(text, EventFormatter)
    e = SubmitEvent(1, 0, 1704164645.25)
    assert " 2024-01-02 03:04:05.250Z " in text.format(e)
    assert " 01/02 " in parse_format_options("LEGACY UTC").format(e)
    assert isinstance(parse_format_options("JSON", form="text"), EventFormatter)
    assert parse_events(JsonEventFormatter().format(e))[0]["EventTypeNumber"] == 0
