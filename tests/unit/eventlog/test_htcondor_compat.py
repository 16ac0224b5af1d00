"""Differential tests against HTCondor itself.

* roost's text for each event is byte-identical to HTCondor's own formatter
  (libcondor_utils, called through ctypes: see htcondor_oracle.py);
* htcondor2.JobEventLog reads roost's logs and sees the same types, ids,
  times and attributes;
* roost reads logs whose text HTCondor produced and sees what htcondor2 sees.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

htcondor2 = pytest.importorskip("htcondor2")

from roost.eventlog import (  # noqa: E402
    AttributeUpdateEvent,
    Event,
    EventLogWriter,
    EvictedEvent,
    JobAdInformationEvent,
    RemoteErrorEvent,
    TerminatedEvent,
    format_event,
    read_events,
)

from . import htcondor_oracle as oracle  # noqa: E402
from .samples import all_samples  # noqa: E402

needs_oracle = pytest.mark.skipif(not oracle.available(), reason="HTCondor's formatter not loadable")


def same_value(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, dict):
        return {k: v for k, v in dict(theirs).items()} == ours
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return type(ours) is type(theirs) and ours == theirs
    if isinstance(ours, float) or isinstance(theirs, float):
        return math.isclose(float(ours), float(theirs))
    return ours == theirs


# HTCondor's reader loses these; roost keeps them (see the event classes' docstrings).
KNOWN_READER_LOSSES = {
    ("RemoteErrorEvent", "CriticalError"),  # "Message from" is not read back as non-critical
}


def htcondor_reader_quirk(event: Event, key: str) -> bool:
    if (type(event).__name__, key) in KNOWN_READER_LOSSES:
        return True
    # HTCondor's reader drops both fields of a "Setting job attribute X to V" line.
    return isinstance(event, AttributeUpdateEvent) and event.old_value is None


def oracle_can_express(event: Event) -> bool:
    """Whether HTCondor's formatter can be driven to this text from the event's attributes."""
    if isinstance(event, JobAdInformationEvent):
        return False  # HTCondor writes the ad it is given, sorted, with the event attributes
    if isinstance(event, AttributeUpdateEvent) and event.old_value is not None:
        return False  # its ad form has no OldValue
    if isinstance(event, EvictedEvent) and event.resources:
        return False  # its ad form has no resource table
    if isinstance(event, TerminatedEvent):
        # HTCondor rebuilds the table only from resources with both Request<R> and <R>.
        return all(r.request is not None and r.allocated is not None for r in event.resources)
    return True


@needs_oracle
def test_text_is_byte_identical_to_htcondors_formatter() -> None:
    compared = 0
    for event in all_samples():
        if not oracle_can_express(event):
            continue
        attrs = event.attrs()
        attrs.pop("StructuredNotes", None)  # given it, HTCondor writes the new "[...]" note form
        if "Warnings" in attrs:
            # HTCondor's reader keeps the whole "WARNING: Committed ..." line, its writer
            # wants only the text after that prefix.
            attrs["Warnings"] = event.warnings
        assert format_event(event) == oracle.format_attrs(attrs) + "...\n", type(event).__name__
        compared += 1
    assert compared >= 38


@needs_oracle
def test_resource_table_text_matches_htcondor() -> None:
    from roost.eventlog import Resource

    event = TerminatedEvent(
        5, 0, 1704164645, return_value=0,
        resources=(Resource("Cpus", 1.5, 2, 2), Resource("Memory", 700, 1024, 1024),
                   Resource("Disk", 10, 100, 120), Resource("Gpus", 0.25, 1, 1, '"GPU-1"')),
    )
    assert format_event(event) == oracle.format_attrs(event.attrs()) + "...\n"


def test_htcondor2_reads_what_roost_writes(tmp_path) -> None:
    events = all_samples()
    path = tmp_path / "job.log"
    with EventLogWriter(path) as writer:
        for e in events:
            writer.write(e)
    theirs = list(htcondor2.JobEventLog(str(path)).events(stop_after=0))
    assert len(theirs) == len(events)
    for ours, h in zip(events, theirs):
        name = type(ours).__name__
        assert int(h.type) == int(ours.type), name
        assert (h.cluster, h.proc, h.timestamp) == (ours.cluster, ours.proc, int(ours.timestamp)), name
        for key, value in ours.attrs().items():
            if htcondor_reader_quirk(ours, key):
                continue
            assert key in h, (name, key)
            assert same_value(value, h[key]), (name, key, value, h[key])


@needs_oracle
def test_roost_reads_what_htcondor_writes(tmp_path) -> None:
    path = tmp_path / "htcondor.log"
    path.write_text("".join(oracle.format_attrs(e.attrs()) + "...\n" for e in all_samples()))
    ours = list(read_events(path))
    theirs = list(htcondor2.JobEventLog(str(path)).events(stop_after=0))
    assert len(ours) == len(theirs) == len(all_samples())
    for o, h in zip(ours, theirs):
        name = type(o).__name__
        assert (int(o.type), o.cluster, o.proc, int(o.timestamp)) == (int(h.type), h.cluster, h.proc, h.timestamp)
        attrs = o.attrs()
        for key in h:
            if key in ("cluster", "proc") or htcondor_reader_quirk(o, key):
                continue
            assert key in attrs, (name, key)
            assert same_value(attrs[key], h[key]), (name, key, attrs[key], h[key])


@needs_oracle
def test_roost_reads_htcondor_utc_and_legacy_dates(tmp_path) -> None:
    ad = '[EventTypeNumber = 12; Cluster = 7; Proc = 2; EventTime = "2024-06-30T23:59:58Z"; HoldReason = "x"; HoldReasonCode = 3; HoldReasonSubCode = 4]'
    text = oracle.format_ad_text(ad, utc=True) + "...\n"
    assert "2024-06-30 23:59:58Z" in text
    (event,) = read_events_from(tmp_path, text)
    assert event.timestamp == 1719791998
    assert (event["HoldReasonCode"], event["HoldReasonSubCode"]) == (3, 4)


def read_events_from(tmp_path, text: str) -> list[Event]:
    path = tmp_path / "x.log"
    path.write_text(text)
    return list(read_events(path))


def test_remote_error_keeps_non_critical_flag() -> None:
    event = RemoteErrorEvent(1, 0, 0, daemon="starter", execute_host="h", error_msg="m", critical=False)
    (back,) = read_events_from_text(format_event(event))
    assert back == event


def read_events_from_text(text: str) -> list[Event]:
    from roost.eventlog import parse_events

    return parse_events(text)


# Written by hand in the layout older HTCondor releases used: MM/DD dates, a
# resource table with no "Assigned" column or trailing blanks and an empty
# usage cell, image-size lines without the proportional set size.
OLDER_LAYOUT = """\
000 (207.000.000) 03/14 15:09:26 Job submitted from host: <192.168.1.20:9618>
...
001 (207.000.000) 03/14 15:09:31 Job executing on host: <192.168.1.31:40123>
...
006 (207.000.000) 03/14 15:09:40 Image size of job updated: 2512
\t3  -  MemoryUsage of job (MB)
\t2404  -  ResidentSetSize of job (KB)
...
005 (207.000.000) 03/14 15:10:02 Job terminated.
\t(1) Normal termination (return value 2)
\t\tUsr 0 00:00:12, Sys 0 00:00:01  -  Run Remote Usage
\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage
\t\tUsr 0 00:00:12, Sys 0 00:00:01  -  Total Remote Usage
\t\tUsr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage
\t88213  -  Run Bytes Sent By Job
\t1290  -  Run Bytes Received By Job
\t88213  -  Total Bytes Sent By Job
\t1290  -  Total Bytes Received By Job
\tPartitionable Resources :    Usage  Request Allocated
\t   Cpus                 :                 1         1
\t   Disk (KB)            :      512       40   9001234
\t   Memory (MB)          :        3       16      2048
...
"""


def test_roost_reads_older_layouts_like_htcondor2(tmp_path) -> None:
    path = tmp_path / "older.log"
    path.write_text(OLDER_LAYOUT)
    ours = list(read_events(path))
    theirs = list(htcondor2.JobEventLog(str(path)).events(stop_after=0))
    assert [int(e.type) for e in ours] == [int(h.type) for h in theirs] == [0, 1, 6, 5]
    for o, h in zip(ours, theirs):
        assert int(o.timestamp) == h.timestamp
        attrs = o.attrs()
        for key in h:
            if key in ("cluster", "proc"):
                continue
            assert same_value(attrs[key], h[key]), (key, attrs.get(key), h[key])
    term = ours[3]
    assert term["CpusUsage" if "CpusUsage" in term else "RequestCpus"] == 1
    assert "CpusUsage" not in term and term["DiskUsage"] == 512 and term["Memory"] == 2048


def test_local_time_with_daylight_saving_matches_htcondor(tmp_path) -> None:
    """Local-time headers must mean the same instant to roost and HTCondor, across DST."""
    import os
    import time

    saved = os.environ.get("TZ")
    os.environ["TZ"] = "America/Chicago"
    time.tzset()
    try:
        # Either side of both 2024 transitions, plus the repeated hour of the
        # fall one (01:00-02:00 happens twice): the format cannot tell those
        # apart, so there roost must only agree with HTCondor.
        clear = [1710054000, 1710057600, 1730610000, 1730620800, 1704164645]
        ambiguous = [1730613600, 1730617200]
        events = [HeldEventAt(ts) for ts in clear + ambiguous]
        path = tmp_path / "tz.log"
        with EventLogWriter(path) as w:
            w.write_many(events)
        theirs = [h.timestamp for h in htcondor2.JobEventLog(str(path)).events(stop_after=0)]
        ours = [int(e.timestamp) for e in read_events(path)]
        assert ours == theirs
        assert ours[: len(clear)] == clear
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()


def HeldEventAt(ts: int):  # noqa: N802 - reads like a constructor in the test above
    from roost.eventlog import HeldEvent

    return HeldEvent(1, 0, ts, reason="r", code=1, subcode=0)


resource_names = st.sampled_from(["Cpus", "Disk", "Memory", "Gpus", "GpusMemory", "Swap", "VeryLongCustomResourceName"])
cell = st.one_of(st.integers(0, 10**9), st.floats(0, 10**6, allow_nan=False).map(lambda f: round(f, 2)))


@needs_oracle
@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(resource_names, st.one_of(st.none(), cell), cell, cell), min_size=1, max_size=5,
                     unique_by=lambda r: r[0]))
def test_random_resource_tables_match_htcondor(rows) -> None:
    from roost.eventlog import Resource, parse_events

    resources = tuple(Resource(name, use, req, alloc) for name, use, req, alloc in rows)
    event = TerminatedEvent(5, 0, 1704164645, return_value=0, resources=resources)
    text = format_event(event)
    assert text == oracle.format_attrs(event.attrs()) + "...\n"
    (back,) = parse_events(text)
    got = {r.name: r for r in back.resources}
    for r in resources:
        for field in ("usage", "request", "allocated"):
            want = getattr(r, field)
            have = getattr(got[r.name], field)
            if want is None:
                assert have is None
            else:
                assert math.isclose(float(have), round(float(want), 2), abs_tol=0.006), (r, field, have)
