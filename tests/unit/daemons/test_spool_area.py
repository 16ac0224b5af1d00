"""A spooled job's directory: input lands whole or not at all, never through a link;
output is read without following anything the owner planted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roost.core.spooling import SpoolError
from roost.daemons.schedd.spool_area import Incoming, open_output, output_files, sweep_partial
from roost.daemons.userfiles import User

ROOT = User(0, 0, frozenset())
NOBODY = User(65534, 65534, frozenset({65534}))


def _write(inc: Incoming, name: str, data: bytes, mode: int = 0o644) -> None:
    fd = inc.open(name, mode)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_input_appears_only_once_committed(tmp_path: Path) -> None:
    final = tmp_path / "7" / "0" / "cluster7.proc0.subproc0"
    inc = Incoming(str(final))
    _write(inc, "run.sh", b"#!/bin/sh\n", 0o755)
    _write(inc, "dir/sub/data", b"x")
    assert not final.exists()  # half-received input is under a name of its own
    ids = (65534, 65534) if os.geteuid() == 0 else None
    inc.commit(ids)
    assert (final / "run.sh").read_bytes() == b"#!/bin/sh\n" and (final / "dir" / "sub" / "data").read_bytes() == b"x"
    assert oct(final.stat().st_mode & 0o777) == "0o700"
    assert (final / "run.sh").stat().st_mode & 0o777 == 0o700  # the owner's bits only, x kept
    if ids is not None:
        assert {p.stat().st_uid for p in [final, *final.rglob("*")]} == {65534}
    assert [p.name for p in final.parent.iterdir()] == [final.name]


def test_an_aborted_or_killed_transfer_leaves_nothing(tmp_path: Path) -> None:
    inc = Incoming(str(tmp_path / "1" / "0" / "cluster1.proc0.subproc0"))
    _write(inc, "a", b"half")
    inc.abort()
    assert list((tmp_path / "1" / "0").iterdir()) == []
    left = Incoming(str(tmp_path / "2" / "0" / "cluster2.proc0.subproc0"))  # a schedd killed mid-transfer
    _write(left, "a", b"half")
    left.close()
    assert sweep_partial(str(tmp_path)) == 1 and list((tmp_path / "2" / "0").iterdir()) == []


def test_names_that_escape_or_collide_are_refused(tmp_path: Path) -> None:
    inc = Incoming(str(tmp_path / "1" / "0" / "cluster1.proc0.subproc0"))
    try:
        for bad in ("../x", "/tmp/x", "a/../../x", ""):
            with pytest.raises(SpoolError):
                inc.open(bad, 0o644)
        _write(inc, "a", b"1")
        with pytest.raises(SpoolError):
            inc.open("a", 0o644)  # twice
        with pytest.raises(SpoolError):
            inc.open("a/b", 0o644)  # inside a file
        os.symlink(str(tmp_path), os.path.join(inc.tmp, "link"))
        with pytest.raises((OSError, SpoolError)):
            inc.open("link/x", 0o644)  # never through a link
        assert not (tmp_path / "x").exists()
    finally:
        inc.abort()


def test_output_skips_links_hard_links_fifos_input_and_what_the_owner_cannot_read(tmp_path: Path) -> None:
    top = tmp_path / "job"
    (top / "sub").mkdir(parents=True)
    (top / "out.txt").write_text("out")
    (top / "sub" / "made.txt").write_text("made")
    (top / "in.txt").write_text("input")
    (tmp_path / "secret").write_text("secret")
    os.symlink(tmp_path / "secret", top / "link")
    os.symlink(tmp_path, top / "dirlink")
    os.link(tmp_path / "secret", top / "hard")
    os.mkfifo(top / "fifo")
    (top / "private").write_text("p")
    (top / "private").chmod(0o600)
    got = [n for n, _, _ in output_files(str(top), ROOT, {"in.txt"})]
    assert got == ["out.txt", "private", "sub/made.txt"]
    if os.geteuid() == 0:  # by nobody's rights, a root-owned 0600 file is not theirs to fetch
        for p in (top, top / "sub", top / "out.txt", top / "sub" / "made.txt"):
            os.chown(p, 65534, 65534)
        assert [n for n, _, _ in output_files(str(top), NOBODY, {"in.txt"})] == ["out.txt", "sub/made.txt"]
    fd = open_output(str(top), "sub/made.txt", ROOT)
    try:
        assert os.read(fd, 10) == b"made"
    finally:
        os.close(fd)
    (top / "out.txt").unlink()
    os.symlink(tmp_path / "secret", top / "out.txt")  # swapped for a link after the listing
    for name in ("out.txt", "hard", "dirlink/secret", "fifo", "../secret"):
        with pytest.raises((OSError, SpoolError)):
            os.close(open_output(str(top), name, ROOT))


def test_output_deeper_or_bigger_than_the_bounds_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner shapes the spooled tree: the walk holds a descriptor per level and the
    answer lists every file, so both are bounded (an error, not a silent part)."""
    from roost.daemons.schedd import spool_area

    monkeypatch.setattr(spool_area, "MAX_OUTPUT_DEPTH", 3)
    monkeypatch.setattr(spool_area, "MAX_OUTPUT_FILES", 5)
    top = tmp_path / "job"
    (top / "a" / "b" / "c").mkdir(parents=True)
    (top / "a" / "b" / "c" / "f").write_text("x")
    assert [n for n, _, _ in output_files(str(top), ROOT, set())] == ["a/b/c/f"]
    (top / "a" / "b" / "c" / "d").mkdir()
    with pytest.raises(spool_area.OutputTooBig, match="more than 3 directories deep"):
        output_files(str(top), ROOT, set())
    (top / "a" / "b" / "c" / "d").rmdir()
    for i in range(5):
        (top / f"f{i}").write_text("x")
    with pytest.raises(spool_area.OutputTooBig, match="more than 5 files"):
        output_files(str(top), ROOT, set())
