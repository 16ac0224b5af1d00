"""Several processes appending to one log never interleave their events."""

from __future__ import annotations

import multiprocessing as mp
import os

from roost.eventlog import (
    EventLogWriter,
    JobAdInformationEvent,
    TerminatedEvent,
    Usage,
    format_event,
    read_events,
)

from .samples import T0

WRITERS = 4
EVENTS_EACH = 1000
BIG_EVERY = 100  # every 100th event is a ~70 KB job ad: far above PIPE_BUF and one page


def _event(cluster: int, proc: int):
    if proc % BIG_EVERY == 0:
        attrs = {f"Attr{i}": f'"{cluster}-{proc}-{i}-' + "x" * 64 + '"' for i in range(900)}
        return JobAdInformationEvent(cluster, proc, T0 + proc, attributes=attrs)
    # Multi-line events make a torn or interleaved write easy to see.
    return TerminatedEvent(cluster, proc, T0 + proc, return_value=proc % 256,
                           run_remote_usage=Usage(proc, cluster), sent_bytes=proc * 1000)


def _write(path: str, cluster: int, fsync: bool, barrier) -> None:
    writer = EventLogWriter(path, fsync=fsync)
    events = [_event(cluster, proc) for proc in range(EVENTS_EACH)]
    barrier.wait()  # start together so the appends really race
    for e in events:
        writer.write(e)
    writer.close()


def test_concurrent_processes_do_not_interleave(tmp_path) -> None:
    path = os.fspath(tmp_path / "shared.log")
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(WRITERS)
    procs = [ctx.Process(target=_write, args=(path, c, False, barrier)) for c in range(1, WRITERS + 1)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    events = list(read_events(path))  # strict: any torn or mixed event raises
    assert len(events) == WRITERS * EVENTS_EACH
    for cluster in range(1, WRITERS + 1):
        mine = [e for e in events if e.cluster == cluster]
        assert mine == [_event(cluster, proc) for proc in range(EVENTS_EACH)]  # whole and in order
    expected_size = sum(len(format_event(_event(c, p)).encode()) for c in range(1, WRITERS + 1) for p in range(EVENTS_EACH))
    assert os.path.getsize(path) == expected_size


def test_write_many_is_one_append(tmp_path) -> None:
    path = tmp_path / "batch.log"
    events = [TerminatedEvent(1, p, T0, return_value=0) for p in range(5)]
    with EventLogWriter(path, fsync=True) as w:
        w.write_many(events)
        w.write_many([])
    assert list(read_events(path)) == events


def test_writer_appends_to_existing_file(tmp_path) -> None:
    path = tmp_path / "a.log"
    first = TerminatedEvent(1, 0, T0, return_value=0)
    second = TerminatedEvent(1, 1, T0, return_value=1)
    with EventLogWriter(path) as w:
        w.write(first)
    with EventLogWriter(path) as w:
        w.write(second)
    assert list(read_events(path)) == [first, second]
