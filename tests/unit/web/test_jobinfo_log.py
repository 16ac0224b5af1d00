"""A job's user log on the dashboard's job page: shown only when anybody on the host
may read it, reached without opening anything else, and refused in the same words
whatever the reason (the path is the job owner's to choose; the dashboard runs as
root and its visitors are anonymous)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from roost.web.jobinfo import NOT_SHOWN, event_log

EVENTS = ("000 (007.000.000) 2026-01-01 00:00:00 Job submitted from host: <127.0.0.1:1>\n...\n"
          "000 (008.000.000) 2026-01-01 00:00:01 Job submitted from host: <127.0.0.1:1>\n...\n")


@pytest.fixture
def public() -> Iterator[Path]:
    """A directory everybody may search (pytest's own are private to root)."""
    d = Path(tempfile.mkdtemp(prefix="roost-weblog-", dir="/tmp"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ad(path: str | Path, iwd: str = "/") -> dict:
    return {"UserLog": str(path), "Iwd": iwd, "ClusterId": 7, "ProcId": 0, "Owner": "root"}


def test_a_world_readable_log_is_shown(public: Path) -> None:
    log = public / "job.log"
    log.write_text(EVENTS)
    log.chmod(0o644)
    got = event_log(ad(log))
    assert len(got["events"]) == 1 and got["events"][0].startswith("000 (007.000.000)")
    # relative to the job's Iwd, through a link, through ..
    (public / "sub").mkdir(mode=0o755)
    (public / "link").symlink_to("sub/../job.log")
    assert event_log(ad("link", str(public)))["events"] == got["events"]


def test_a_private_log_is_not_shown_and_says_nothing_of_why(public: Path) -> None:
    log = public / "job.log"
    log.write_text(EVENTS)
    log.chmod(0o600)  # the owner's (root's) own, readable by its owner only
    private = public / "private"
    private.mkdir(mode=0o700)
    (private / "job.log").write_text(EVENTS)
    (private / "job.log").chmod(0o644)
    (public / "into-private").symlink_to(private / "job.log")
    (public / "loop").symlink_to("loop")
    notes = {str(p): event_log(ad(p))["note"] for p in (
        log, private / "job.log", public / "into-private", public / "missing.log", "/nonexistent/x.log",
        public / "loop", public, "/dev/null", public / "job.log" / "x")}
    for path, note in notes.items():
        assert note == NOT_SHOWN, path
    assert all(not event_log(ad(p))["events"] for p in notes)


def _waits_for_a_reader(t: threading.Thread) -> bool:
    """Whether thread ``t`` is blocked in its open of the FIFO (the kernel's wait for the
    other end, as /proc says where the thread sleeps)."""
    try:
        with open(f"/proc/self/task/{t.native_id}/wchan") as f:
            return f.read().strip() in ("wait_for_partner", "fifo_open")
    except FileNotFoundError:
        return False


def test_a_fifo_is_never_opened(public: Path) -> None:
    """Opening a device or a FIFO can have effects (a FIFO's writer is let through; some
    devices act on open): the log is looked at, never opened, unless a regular file."""
    fifo = public / "job.log"
    os.mkfifo(fifo, 0o666)
    writer_opened = threading.Event()

    def writer() -> None:
        fd = os.open(fifo, os.O_WRONLY)  # blocks until someone opens the FIFO for reading
        writer_opened.set()
        os.close(fd)

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while not _waits_for_a_reader(t):
        assert time.monotonic() < deadline, "the writer never reached its open"
        time.sleep(0.01)
    assert event_log(ad(fifo))["note"] == NOT_SHOWN
    assert not writer_opened.wait(0.5), "the dashboard opened the FIFO"
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # let the writer go
    t.join(5)
    os.close(fd)
