"""Event log speed: write 100,000 events, read them back, against HTCondor in the same run.

Run: ``.venv/bin/python bench/eventlog_bench.py [--events N] [--runs R]``.
Prints one line per figure, ``figure: value unit (reference: value, ratio: x.xx)``,
each the median of R runs (ratio = roost / reference; above 1 means roost is faster).

References, measured here in the same run:
* read: ``htcondor2.JobEventLog(path).events(0)`` over the same file;
* XML and JSON forms (``log_xml``, ``EVENT_LOG_FORMAT_OPTIONS = JSON``): roost writes
  and reads them; the reference is htcondor2 reading roost's file (no C++ writer of
  these forms is reachable from the wheel);
* write: HTCondor's own C++ formatter (``ULogEvent::formatEvent`` from the
  wheel's libcondor_utils, driven through ctypes, see
  tests/unit/eventlog/htcondor_oracle.py) plus one ``os.write`` per event with
  O_APPEND, the way HTCondor's WriteUserLog appends.  The C++ event objects are
  built before the clock starts, so the reference pays only formatting and the
  write; roost's figure includes building its Python event objects.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from roost.eventlog import (
    EventLogWriter,
    ExecuteEvent,
    ImageSizeEvent,
    JsonEventFormatter,
    SubmitEvent,
    TerminatedEvent,
    Usage,
    XmlEventFormatter,
    read_events,
)

HOST = "<10.0.0.1:9618?addrs=10.0.0.1-9618&alias=ap.example.org&noUDP&sock=schedd_123_abcd>"
EP = "<10.0.0.{n}:9618?addrs=10.0.0.{n}-9618&alias=ep{n}.example.org&noUDP&sock=startd_99_beef>"
T0 = 1704164645


def make_events(n: int) -> list:
    """A realistic mix: each job submits, executes, reports its size and terminates."""
    events = []
    jobs = n // 4
    for j in range(jobs):
        cluster, proc = 1000 + j // 100, j % 100
        t = T0 + j // 10
        ep = EP.format(n=j % 200 + 1)
        events.append(SubmitEvent(cluster, proc, t, submit_host=HOST, log_notes=f"DAG Node: node_{j}" if j % 3 == 0 else ""))
        events.append(ExecuteEvent(cluster, proc, t + 2, execute_host=ep, slot_name=f"slot1_{j % 32}@ep{j % 200 + 1}.example.org"))
        events.append(ImageSizeEvent(cluster, proc, t + 7, size=20000 + j % 5000, memory_usage=20 + j % 50,
                                     resident_set_size=19000 + j % 5000))
        events.append(TerminatedEvent(cluster, proc, t + 60, return_value=j % 3, run_remote_usage=Usage(50 + j % 10, 1),
                                      total_remote_usage=Usage(50 + j % 10, 1), sent_bytes=1024 * (j % 7),
                                      received_bytes=4096, total_sent_bytes=1024 * (j % 7), total_received_bytes=4096))
    return events


def _oracle():
    path = Path(__file__).resolve().parent.parent / "tests" / "unit" / "eventlog" / "htcondor_oracle.py"
    spec = importlib.util.spec_from_file_location("htcondor_oracle", path)
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod if mod.available() else None


def _median(fn: Callable[[], float], runs: int) -> float:
    return statistics.median(fn() for _ in range(runs))


def line(figure: str, value: float, unit: str, ref: float | None = None) -> str:
    if ref:
        return f"{figure}: {value:,.0f} {unit} (reference: {ref:,.0f}, ratio: {value / ref:.2f})"
    return f"{figure}: {value:,.0f} {unit}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    n = args.events - args.events % 4
    events = make_events(n)
    tmp = tempfile.mkdtemp(prefix="roost-eventlog-bench-")
    path = os.path.join(tmp, "bench.log")

    def roost_write() -> float:
        if os.path.exists(path):
            os.unlink(path)
        start = time.perf_counter()
        writer = EventLogWriter(path)
        for e in make_events(n):  # building the events is part of what the schedd pays
            writer.write(e)
        writer.close()
        return n / (time.perf_counter() - start)

    def roost_write_prebuilt() -> float:
        if os.path.exists(path):
            os.unlink(path)
        start = time.perf_counter()
        writer = EventLogWriter(path)
        for e in events:
            writer.write(e)
        writer.close()
        return n / (time.perf_counter() - start)

    def roost_read() -> float:
        start = time.perf_counter()
        got = sum(1 for _ in read_events(path))
        elapsed = time.perf_counter() - start
        assert got == n, got
        return n / elapsed

    def roost_write_fsync() -> float:
        # fsync per event costs the disk's flush latency; a smaller sample says enough.
        few = events[:500]
        if os.path.exists(path):
            os.unlink(path)
        start = time.perf_counter()
        with EventLogWriter(path, fsync=True) as writer:
            for e in few:
                writer.write(e)
        return len(few) / (time.perf_counter() - start)

    fsync_rate = _median(roost_write_fsync, args.runs)
    write_rate = _median(roost_write, args.runs)
    write_pre_rate = _median(roost_write_prebuilt, args.runs)
    read_rate = _median(roost_read, args.runs)
    size = os.path.getsize(path)

    ref_read = ref_write = None
    same: bool | None = None
    try:
        import htcondor2

        def htc_read() -> float:
            start = time.perf_counter()
            got = sum(1 for _ in htcondor2.JobEventLog(path).events(stop_after=0))
            elapsed = time.perf_counter() - start
            assert got == n, got
            return n / elapsed

        ref_read = _median(htc_read, args.runs)
    except ImportError:
        print("htcondor2 not installed: no read reference", file=sys.stderr)

    oracle = _oracle()
    if oracle is not None:
        import classad2

        cxx_events = []
        for e in events:
            ad = classad2.ClassAd()
            for k, v in e.attrs().items():
                if k != "StructuredNotes":
                    ad[k] = v
            cxx_events.append(oracle.instantiate(str(ad)))
        ref_path = os.path.join(tmp, "htcondor.log")

        def htc_write() -> float:
            if os.path.exists(ref_path):
                os.unlink(ref_path)
            fmt = oracle.Formatter()
            start = time.perf_counter()
            fd = os.open(ref_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            for ev in cxx_events:
                os.write(fd, fmt.format(ev) + b"...\n")
            os.close(fd)
            return n / (time.perf_counter() - start)

        ref_write = _median(htc_write, args.runs)
        same = Path(ref_path).read_bytes() == Path(path).read_bytes()
    else:
        print("HTCondor's formatter not loadable: no write reference", file=sys.stderr)

    forms = []
    for form, fmt in (("XML", XmlEventFormatter), ("JSON", JsonEventFormatter)):
        fpath = os.path.join(tmp, f"bench.{form.lower()}")

        def form_write(fpath: str = fpath, fmt: type = fmt) -> float:
            if os.path.exists(fpath):
                os.unlink(fpath)
            start = time.perf_counter()
            with EventLogWriter(fpath, formatter=fmt()) as writer:
                for e in events:
                    writer.write(e)
            return n / (time.perf_counter() - start)

        def form_read(fpath: str = fpath) -> float:
            start = time.perf_counter()
            got = sum(1 for _ in read_events(fpath))
            assert got == n, got
            return n / (time.perf_counter() - start)

        def form_ref(fpath: str = fpath) -> float:
            import htcondor2  # lazy: only with the wheel

            start = time.perf_counter()
            got = sum(1 for _ in htcondor2.JobEventLog(fpath).events(stop_after=0))
            assert got == n, got
            return n / (time.perf_counter() - start)

        w, r = _median(form_write, args.runs), _median(form_read, args.runs)
        ref = _median(form_ref, args.runs) if ref_read is not None else None
        forms.append((form, w, r, ref, os.path.getsize(fpath)))
        os.unlink(fpath)

    print(line("eventlog write, one append per event, events built in the loop", write_rate, "events/s", ref_write))
    print(line("eventlog write, one append per event, events prebuilt", write_pre_rate, "events/s", ref_write))
    print(line("eventlog write, fsync after every event (500 events)", fsync_rate, "events/s"))
    print(line("eventlog read (read_events, whole file)", read_rate, "events/s", ref_read))
    print(f"eventlog file size: {size / n:.0f} bytes/event ({n:,} events)")
    for form, w, r, ref, fsize in forms:
        print(line(f"eventlog {form} write, events prebuilt", w, "events/s"))
        print(line(f"eventlog {form} read (read_events)", r, "events/s", ref))
        print(f"eventlog {form} file size: {fsize / n:.0f} bytes/event")
    if same is not None:
        print(f"eventlog text identical to HTCondor's formatter: {'yes' if same else 'NO'} ({n:,} events)")
    for p in (path, os.path.join(tmp, "htcondor.log")):
        if os.path.exists(p):
            os.unlink(p)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
