"""What `roost tail` may read in a job's sandbox (the startd reads it as root): plain
names only, never through a link, only what the job's user could read itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roost.daemons.startd.peek import PeekError, entry_name, open_entry, read_tail
from roost.daemons.userfiles import User, allowed
from roost.net import relay


@pytest.mark.parametrize("name", ["..", ".", "", "../etc/shadow", "/etc/shadow", "sub/file", "a\x00b", None, 3])
def test_names_that_could_leave_the_sandbox_are_refused(name: object) -> None:
    with pytest.raises(PeekError):
        entry_name(name)


def test_a_plain_name_is_kept() -> None:
    assert entry_name("out.txt") == "out.txt"
    assert entry_name("..hidden") == "..hidden"


def test_a_symlink_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    box = tmp_path / "box"
    box.mkdir()
    (box / "shadow").symlink_to(secret)
    with pytest.raises(PeekError, match="symbolic link"):
        open_entry(str(box), "shadow", None)


def test_dotdot_is_refused_even_where_it_would_resolve(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("x")
    box = tmp_path / "box"
    box.mkdir()
    for name in ("../secret", "..", str(tmp_path / "secret")):
        with pytest.raises(PeekError):
            open_entry(str(box), name, None)


def test_only_regular_files(tmp_path: Path) -> None:
    box = tmp_path / "box"
    (box / "dir").mkdir(parents=True)
    os.mkfifo(box / "fifo")  # opening it must not block: O_NONBLOCK, then refused
    for name in ("dir", "fifo"):
        with pytest.raises(PeekError, match="not a regular file"):
            open_entry(str(box), name, None)
    with pytest.raises(PeekError, match="no such file"):
        open_entry(str(box), "missing", None)


def test_only_what_the_job_user_may_read(tmp_path: Path) -> None:
    """A hard link to a file the job's user cannot read (made while it could, say) is
    refused by its permission bits, whoever the startd is."""
    box = tmp_path / "box"
    box.mkdir()
    f = box / "private"
    f.write_text("x")
    os.chmod(f, 0o600)
    st = f.stat()
    other_uid = st.st_uid + 12345
    with pytest.raises(PeekError, match="not readable by the job's user"):
        fd = open_entry(str(box), "private", User(other_uid, -1, frozenset({st.st_gid + 12345})))
    fd = open_entry(str(box), "private", User(st.st_uid, -1, frozenset()))
    os.close(fd)
    os.chmod(f, 0o640)
    assert allowed(f.stat(), User(other_uid, -1, frozenset({st.st_gid})), "r")
    assert not allowed(f.stat(), User(other_uid, -1, frozenset()), "r")


def test_read_tail_and_follow(tmp_path: Path) -> None:
    f = tmp_path / "out"
    f.write_bytes(b"0123456789")
    fd = os.open(f, os.O_RDONLY)
    try:
        assert read_tail(fd, None, 4) == (b"6789", 6, 10)
        assert read_tail(fd, None, 100) == (b"0123456789", 0, 10)
        assert read_tail(fd, 10, 4) == (b"", 10, 10)  # nothing new
        with open(f, "ab") as g:
            g.write(b"abcdef")
        assert read_tail(fd, 10, 4) == (b"abcd", 10, 16)  # what came since, maxbytes at a time
        assert read_tail(fd, 14, 4) == (b"ef", 14, 16)
        os.truncate(f, 3)
        assert read_tail(fd, 16, 4) == (b"012", 0, 3)  # truncated: its tail again
    finally:
        os.close(fd)


def test_relay_packets_round_trip() -> None:
    p = relay.Parser()
    stream = relay.pack(relay.STDOUT, b"hello") + relay.window(40, 120) + relay.exit_packet(exit_signal=9)
    got = []
    for i in range(len(stream)):  # fed a byte at a time, as a network may cut it
        got += p.feed(stream[i:i + 1])
    assert got[0] == (relay.STDOUT, b"hello")
    assert relay.parse_window(got[1][1]) == (40, 120)
    assert relay.parse_exit(got[2][1]) == (None, 9)
    assert relay.parse_exit(relay.exit_packet(3)[relay.HEADER_SIZE:]) == (3, None)
    with pytest.raises(relay.RelayError):
        relay.Parser().feed(relay.HEADER.pack(b"o", relay.MAX_PACKET + 1))
