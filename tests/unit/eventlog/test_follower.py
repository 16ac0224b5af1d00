"""Following a growing log: whole events only, each once, resumable from an offset."""

from __future__ import annotations

from roost.eventlog import EventLogFollower, EventLogWriter, format_event, parse_events, read_events

from .samples import all_samples


def test_partial_event_is_returned_only_once_complete(tmp_path) -> None:
    path = tmp_path / "grow.log"
    events = all_samples()[:6]
    text = "".join(format_event(e) for e in events).encode()
    follower = EventLogFollower(path)
    assert follower.poll() == []  # no file yet
    seen = []
    # Feed the file a few bytes at a time, as a slow writer would.
    for start in range(0, len(text), 37):
        with open(path, "ab") as f:
            f.write(text[start : start + 37])
        seen += follower.poll()
    assert seen == events
    assert follower.offset == len(text)
    assert follower.poll() == []


def test_resume_from_saved_offset(tmp_path) -> None:
    path = tmp_path / "resume.log"
    events = all_samples()
    w = EventLogWriter(path)
    w.write_many(events[:10])
    first = EventLogFollower(path)
    assert first.poll() == events[:10]
    w.write_many(events[10:])
    w.close()
    second = EventLogFollower(path, offset=first.offset)
    assert second.poll() == events[10:]


def test_truncated_file_is_read_again(tmp_path) -> None:
    path = tmp_path / "rot.log"
    events = all_samples()
    with EventLogWriter(path) as w:
        w.write_many(events[:5])
    f = EventLogFollower(path)
    assert len(f.poll()) == 5
    path.write_text(format_event(events[7]))
    assert f.poll() == [events[7]]


def test_read_events_ignores_torn_tail(tmp_path) -> None:
    path = tmp_path / "torn.log"
    events = all_samples()[:3]
    text = "".join(format_event(e) for e in events)
    path.write_text(text + format_event(events[0])[:-6])
    assert list(read_events(path)) == events
    assert parse_events(text + "000 (001.000.000) 2024-") == events


def test_torn_write_is_skipped_and_the_next_event_kept(tmp_path) -> None:
    path = tmp_path / "torn.log"
    events = all_samples()
    torn = format_event(events[11])[:120]  # a writer died mid-event
    path.write_text(format_event(events[0]) + torn + format_event(events[1]) + format_event(events[2]))
    follower = EventLogFollower(path)
    assert follower.poll() == [events[0], events[1], events[2]]
    assert list(read_events(path, strict=False)) == [events[0], events[1], events[2]]


def test_strict_reader_refuses_a_torn_write(tmp_path) -> None:
    import pytest

    from roost.eventlog import EventLogError

    path = tmp_path / "torn.log"
    events = all_samples()
    path.write_text(format_event(events[0]) + format_event(events[11])[:120] + format_event(events[1]))
    with pytest.raises(EventLogError) as info:
        list(read_events(path))
    assert info.value.line == 3


def test_read_events_in_small_blocks_matches_whole_file(tmp_path) -> None:
    path = tmp_path / "blocks.log"
    events = all_samples()
    path.write_text("".join(format_event(e) for e in events) + "001 (1.0.0) 2024-01-02 03:")
    for block in (1, 7, 64, 4096):
        assert list(read_events(path, block_size=block)) == events
